// What a family that waited to join a shared segment copies into its cells (CopyNew): only what
// is new since the last copy, NaN and infinities once, a gauge's value only when it changed.
#include <gtest/gtest.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "metrics/family_state.h"

namespace modelmetrics::metrics_internal {
namespace {

double Bits(const std::atomic<uint64_t>& cell) { return std::bit_cast<double>(cell.load()); }

TEST(CopyNew, ACounterAddsOnlyWhatIsNew) {
  std::atomic<uint64_t> cell[1] = {std::bit_cast<uint64_t>(2.0)};  // another copy's, before
  Recorded copied, now;
  now.counter = 5;
  CopyNew(MetricType::kCounter, false, now, &copied, cell);
  EXPECT_EQ(Bits(cell[0]), 7);
  CopyNew(MetricType::kCounter, false, now, &copied, cell);
  EXPECT_EQ(Bits(cell[0]), 7) << "nothing new, nothing added";
  now.counter = 5.5;
  CopyNew(MetricType::kCounter, false, now, &copied, cell);
  EXPECT_EQ(Bits(cell[0]), 7.5);
  now.counter = std::numeric_limits<double>::infinity();
  CopyNew(MetricType::kCounter, false, now, &copied, cell);
  CopyNew(MetricType::kCounter, false, now, &copied, cell);
  EXPECT_EQ(Bits(cell[0]), std::numeric_limits<double>::infinity()) << "+Inf once, not NaN";
  now.counter = std::nan("");
  CopyNew(MetricType::kCounter, false, now, &copied, cell);
  CopyNew(MetricType::kCounter, false, now, &copied, cell);
  EXPECT_TRUE(std::isnan(Bits(cell[0])));
}

TEST(CopyNew, AGaugeWritesItsValueWhenItChanged) {
  std::atomic<uint64_t> cell[2] = {0, 0};
  Recorded copied, now;
  now.gauge = 3;
  CopyNew(MetricType::kGauge, false, now, &copied, cell);
  EXPECT_EQ(Bits(cell[0]), 3);
  EXPECT_EQ(Bits(cell[1]), 1.0) << "stamped as set";
  cell[1].store(0);  // no rewrite while the value stays
  CopyNew(MetricType::kGauge, false, now, &copied, cell);
  EXPECT_EQ(cell[1].load(), 0u);
  now.gauge = std::nan("");
  CopyNew(MetricType::kGauge, true, now, &copied, cell);
  EXPECT_TRUE(std::isnan(Bits(cell[0])));
  EXPECT_GT(Bits(cell[1]), 1e9) << "most-recent gauges carry the wall time";
  cell[1].store(0);
  CopyNew(MetricType::kGauge, true, now, &copied, cell);
  EXPECT_EQ(cell[1].load(), 0u) << "a NaN copied once is not rewritten every time";
}

TEST(CopyNew, AHistogramAddsEachBucketsAndTheSumsNewPart) {
  std::atomic<uint64_t> cell[4] = {std::bit_cast<uint64_t>(1.0), 1, 0, 0};  // sum, 3 buckets
  Recorded copied, now;
  now.histogram.buckets = {2, 0, 1};
  now.histogram.sum = 4;
  CopyNew(MetricType::kHistogram, false, now, &copied, cell);
  EXPECT_EQ(cell[1].load(), 3u);
  EXPECT_EQ(cell[3].load(), 1u);
  EXPECT_EQ(Bits(cell[0]), 5);
  now.histogram.buckets = {2, 1, 1};
  now.histogram.sum = 4.5;
  CopyNew(MetricType::kHistogram, false, now, &copied, cell);
  CopyNew(MetricType::kHistogram, false, now, &copied, cell);
  EXPECT_EQ(cell[1].load(), 3u);
  EXPECT_EQ(cell[2].load(), 1u);
  EXPECT_EQ(cell[3].load(), 1u);
  EXPECT_EQ(Bits(cell[0]), 5.5);
}

}  // namespace
}  // namespace modelmetrics::metrics_internal
