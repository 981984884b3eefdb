// Counter, Gauge and Histogram semantics through handles of a live registry.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "modelmetrics/metrics.h"

namespace modelmetrics {
namespace {

TEST(Counter, IntegerAndFloatingPointAdds) {
  Registry registry;
  Counter c = registry.AddCounter({.name = "c"})->Labels({});
  ASSERT_TRUE(c.live());
  c.Inc();
  c.Add(uint64_t{41});
  c.Add(0.5);
  c.Add(0.25);
  EXPECT_EQ(c.Value(), 42.75);
}

TEST(Counter, NeverGoesDown) {
  Registry registry;
  Counter c = registry.AddCounter({.name = "c"})->Labels({});
  c.Add(2.0);
  c.Add(-1.0);
  c.Add(std::numeric_limits<double>::quiet_NaN());
  c.Add(std::numeric_limits<double>::infinity());
  c.Add(0.0);
  EXPECT_EQ(c.Value(), 2.0);
}

TEST(Counter, AddFloatKeepsNaNAndInfAsAFloatAccumulatorWould) {
  Registry registry;
  auto* family = registry.AddCounter({.name = "c", .labels = {"k"}});
  Counter inf = family->Labels({"inf"});
  inf.AddFloat(1.5);
  inf.AddFloat(std::numeric_limits<double>::infinity());
  inf.AddFloat(2.0);
  EXPECT_EQ(inf.Value(), std::numeric_limits<double>::infinity());
  Counter nan = family->Labels({"nan"});
  nan.AddFloat(std::numeric_limits<double>::infinity());
  nan.AddFloat(std::numeric_limits<double>::quiet_NaN());
  EXPECT_TRUE(std::isnan(nan.Value()));
  Counter plain = family->Labels({"plain"});
  plain.AddFloat(0.1);
  plain.AddFloat(0.2);
  plain.AddFloat(-1.0);  // refused by the caller in practice; never subtracted
  EXPECT_EQ(plain.Value(), 0.1 + 0.2);
}

TEST(Gauge, SetAddIncDec) {
  Registry registry;
  Gauge g = registry.AddGauge({.name = "g"})->Labels({});
  g.Set(10);
  g.Inc();
  g.Dec();
  g.Dec();
  g.Add(-2.5);
  EXPECT_EQ(g.Value(), 6.5);
  g.Set(-1);
  EXPECT_EQ(g.Value(), -1);
}

TEST(Histogram, BucketsAreInclusiveUpperBounds) {
  Registry registry;
  Histogram h = registry.AddHistogram({.name = "h", .buckets = {0.1, 1, 10}})->Labels({});
  for (double v : {0.0, 0.1, 0.10000000000000001, 0.2, 1.0, 9.99, 10.0, 10.01, 1e9, -5.0}) {
    h.Observe(v);
  }
  Histogram::Snapshot s = h.Read();
  // -5, 0, 0.1 (0.10000000000000001 is the same double) -> le=0.1; 0.2, 1 -> le=1;
  // 9.99, 10 -> le=10; 10.01, 1e9 -> +Inf.
  EXPECT_EQ(s.buckets, (std::vector<uint64_t>{4, 2, 2, 2}));
  EXPECT_EQ(s.count, 10u);
  EXPECT_DOUBLE_EQ(s.sum, 0.0 + 0.1 + 0.1 + 0.2 + 1 + 9.99 + 10 + 10.01 + 1e9 - 5);
}

TEST(Histogram, NaNGoesToInfAndPoisonsTheSum) {
  Registry registry;
  Histogram h = registry.AddHistogram({.name = "h", .buckets = {1}})->Labels({});
  h.Observe(0.5);
  h.Observe(std::numeric_limits<double>::quiet_NaN());
  Histogram::Snapshot s = h.Read();
  EXPECT_EQ(s.buckets, (std::vector<uint64_t>{1, 1}));
  EXPECT_TRUE(std::isnan(s.sum));
}

TEST(Histogram, ObserveFloatCountsNaNInTheSumOnly) {
  Registry registry;
  Histogram h = registry.AddHistogram({.name = "h", .buckets = {1, 2}})->Labels({});
  h.ObserveFloat(1.5);
  h.ObserveFloat(std::numeric_limits<double>::quiet_NaN());
  h.ObserveFloat(-std::numeric_limits<double>::infinity());
  Histogram::Snapshot snap = h.Read();
  EXPECT_EQ(snap.buckets, (std::vector<uint64_t>{1, 1, 0}));
  EXPECT_EQ(snap.count, 2u);
  EXPECT_TRUE(std::isnan(snap.sum));
}

TEST(Histogram, ManyBoundsUseTheSameRuleAsFew) {
  std::vector<double> bounds;
  for (int i = 1; i <= 40; ++i) bounds.push_back(i * 0.5);
  Registry registry;
  Histogram h = registry.AddHistogram({.name = "h", .buckets = bounds})->Labels({});
  std::vector<uint64_t> expected(bounds.size() + 1, 0);
  for (int k = -3; k <= 90; ++k) {
    const double v = k * 0.25;
    h.Observe(v);
    size_t i = 0;
    while (i < bounds.size() && v > bounds[i]) ++i;  // the definition, independently
    ++expected[i];
  }
  EXPECT_EQ(h.Read().buckets, expected);
}

TEST(Histogram, NoBoundsMeansOnlyInf) {
  Registry registry;
  Histogram h = registry.AddHistogram({.name = "h"})->Labels({});
  h.Observe(3);
  EXPECT_EQ(h.Read().buckets, (std::vector<uint64_t>{1}));
}

TEST(Handles, DefaultConstructedHandlesAreInert) {
  Counter c;
  Gauge g;
  Histogram h;
  c.Inc();
  c.Add(1.5);
  g.Set(3);
  h.Observe(1);
  EXPECT_FALSE(c.live());
  EXPECT_EQ(c.Value(), 0);
  EXPECT_EQ(g.Value(), 0);
  EXPECT_EQ(h.Read().count, 0u);
}

TEST(Handles, SameLabelsGiveTheSameSeries) {
  Registry registry;
  auto* family = registry.AddCounter({.name = "c", .labels = {"a", "b"}});
  family->Labels({"x", "y"}).Inc();
  family->Labels({"x", "y"}).Inc();
  family->Labels({"xy", ""}).Inc();  // not the same key as ("x", "y")
  EXPECT_EQ(family->Labels({"x", "y"}).Value(), 2);
  EXPECT_EQ(family->Labels({"xy", ""}).Value(), 1);
  EXPECT_FALSE(family->Labels({"only-one"}).live());  // wrong arity: inert
}

}  // namespace
}  // namespace modelmetrics
