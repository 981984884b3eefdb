// The Prometheus source against what real stores do: an error text of megabytes answered to every
// query, HA replicas and duplicates of a Pod's series, sample times out of range, samples out of
// order, nesting without end, a `result` that is not a list, and values that are not numbers a
// snapshot can hold. Each case is a fake store answering what a hostile or misconfigured store
// answered in a probe; every one of them failed on the code before these checks.
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "aggregation/fake_store.h"
#include "aggregation/prometheus_query.h"
#include "aggregation/prometheus_source.h"
#include "aggregation/reason.h"
#include "aggregation/test_builders.h"
#include "status_matchers.h"

namespace modelmetrics::deployment {

using ::modelmetrics::testing::Ok;
namespace {

using namespace std::chrono_literals;
using testing::FakeStore;
using testing::Fixture;
using testing::FromStore;
using testing::MetricsEnginePod;
using testing::MetricsModelDeployment;
using testing::StoreOptions;
using testing::T0;

std::vector<Pod> EnginePods(size_t n) {
  std::vector<Pod> pods;
  for (size_t i = 0; i < n; ++i) {
    const std::string name = fmt::format("chat-{:03}", i);
    pods.push_back(MetricsEnginePod(name, name + "-uid"));
  }
  return pods;
}

// The `scrape` reason of each Pod.
std::map<std::string, std::string> ScrapeReasons(const Snapshot& snapshot) {
  std::map<std::string, std::string> out;
  for (const Missing& m : snapshot.missing) {
    if (m.source == "scrape") out[m.pod] = m.reason;
  }
  return out;
}

// ---- item 1: a store's error text is bounded, and held once per query ----

TEST(StoreHostile, AHugeErrorTextIsCutOnceAndSharedByItsQuerysPods) {
  FakeStore store;
  const std::string huge(size_t{2} << 20, 'x');
  store.Fail(422, R"({"status":"error","errorType":"execution","error":")" + huge + "\"}");
  const std::vector<Pod> pods = EnginePods(250);
  PrometheusSourceOptions options = StoreOptions(store, T0());
  options.pods_per_query = 100;  // three queries
  PrometheusSource source(options);
  const std::vector<PodRead> reads =
      source.Read(MetricsModelDeployment(), pods, SteadyClock::now() + 5s);
  ASSERT_EQ(reads.size(), pods.size());
  for (const PodRead& read : reads) {
    EXPECT_FALSE(read.metrics);
    EXPECT_LE(read.error.str().size(), Reason::kMaxBytes + 32);
    EXPECT_TRUE(read.error.str().ends_with(" bytes]")) << read.error.str().substr(0, 200);
    EXPECT_NE(read.error.str().find("HTTP 422: the store answered execution: xxx"),
              std::string::npos);
  }
  // One text per query: the Pods of a query share it.
  EXPECT_EQ(&reads[0].error.str(), &reads[99].error.str());
  EXPECT_NE(&reads[0].error.str(), &reads[100].error.str());

  const Snapshot snapshot = FromStore(MetricsModelDeployment(), pods, options, T0());
  EXPECT_EQ(snapshot.missing.size(), pods.size());
  EXPECT_LT(SnapshotToJson(snapshot).size(), pods.size() * 1400);
}

TEST(StoreHostile, AnUnterminatedHugeStringInTheAnswerIsCutInTheReason) {
  FakeStore store;
  store.Fail(200,
             R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":")" +
                 std::string(size_t{2} << 20, 'y'));
  const Snapshot snapshot =
      FromStore(MetricsModelDeployment(), EnginePods(1), StoreOptions(store, T0()), T0());
  const std::string reason = ScrapeReasons(snapshot)["chat-000"];
  EXPECT_TRUE(reason.find("the answer is not JSON") != std::string::npos) << reason;
  EXPECT_LE(reason.size(), Reason::kMaxBytes + 32);
  EXPECT_TRUE(reason.ends_with(" bytes]")) << reason;
}

TEST(StoreHostile, AnAnswerAfterTheDeadlineIsNotDecoded) {
  FakeStore store;
  store.AddScrape("chat-000", T0(), Fixture("vllm_server_busy_first.prom"));
  PrometheusSource source(StoreOptions(store, T0() + 1s));
  const std::vector<PodRead> reads =
      source.Read(MetricsModelDeployment(), EnginePods(1), SteadyClock::now() - 1ms);
  ASSERT_EQ(reads.size(), 1u);
  EXPECT_FALSE(reads[0].metrics);
  EXPECT_NE(reads[0].error.str().find("deadline"), std::string::npos) << reads[0].error.str();
}

// ---- item 2: copies of a Pod's series ----

// The vLLM Pod "chat-000" scraped at `at` and 15 s later, by every replica named.
void AddTwoScrapes(FakeStore& store, WallTime at, const std::string& replica_label = "",
                   const std::string& replica = "") {
  std::map<std::string, std::string> extra;
  if (!replica_label.empty()) extra[replica_label] = replica;
  store.AddScrape("chat-000", at, Fixture("vllm_server_busy_first.prom"), "127.0.0.1:1", "team",
                  "pods", extra);
  store.AddScrape("chat-000", at + 15s, Fixture("vllm_server_busy_second.prom"), "127.0.0.1:1",
                  "team", "pods", extra);
}

TEST(StoreHostile, HaReplicasAreReadAsOneReplicaNeverSummed) {
  for (const std::string label : {"prometheus_replica", "replica", "__replica__"}) {
    FakeStore single, pair;
    AddTwoScrapes(single, T0() + 5s);
    AddTwoScrapes(pair, T0(), label, "a");
    AddTwoScrapes(pair, T0() + 5s, label, "b");  // b scraped last: b is read
    const WallTime now = T0() + 25s;
    const Snapshot expected =
        FromStore(MetricsModelDeployment(), EnginePods(1), StoreOptions(single, now), now);
    const Snapshot read =
        FromStore(MetricsModelDeployment(), EnginePods(1), StoreOptions(pair, now), now);
    EXPECT_EQ(SnapshotToJson(read), SnapshotToJson(expected)) << label;
    EXPECT_EQ(testing::FindGauge(read.processing, "running", "engine/server")->value,
              testing::FindGauge(expected.processing, "running", "engine/server")->value);
  }
}

TEST(StoreHostile, CopiesInALabelThatIsNoReplicaLabelAreAReasonNotASum) {
  FakeStore store;
  AddTwoScrapes(store, T0(), "cluster", "east");
  AddTwoScrapes(store, T0(), "cluster", "west");
  PrometheusSourceOptions options = StoreOptions(store, T0() + 16s);
  const Snapshot snapshot = FromStore(MetricsModelDeployment(), EnginePods(1), options, T0());
  EXPECT_TRUE(snapshot.processing.empty());
  const std::string reason = ScrapeReasons(snapshot)["chat-000"];
  EXPECT_EQ(reason,
            "the store holds the Pod's series from 2 targets (job \"pods\" instance "
            "\"127.0.0.1:1\" cluster \"east\" and job \"pods\" instance \"127.0.0.1:1\" cluster "
            "\"west\"); select one with the source's extra selector");

  // With replica labels turned off, HA copies are the same: a reason.
  FakeStore pair;
  AddTwoScrapes(pair, T0(), "prometheus_replica", "a");
  AddTwoScrapes(pair, T0(), "prometheus_replica", "b");
  options = StoreOptions(pair, T0() + 16s);
  options.replica_labels.clear();
  const std::string off =
      ScrapeReasons(FromStore(MetricsModelDeployment(), EnginePods(1), options, T0()))["chat-000"];
  EXPECT_TRUE(off.starts_with("the store holds the Pod's series from 2 targets")) << off;
  EXPECT_NE(off.find("prometheus_replica \"a\""), std::string::npos) << off;
}

TEST(StoreHostile, TheSameSeriesTwiceInOneAnswerIsAReason) {
  FakeStore store;
  const std::string series =
      R"({"metric":{"__name__":"vllm:num_requests_running","namespace":"team","pod":"chat-000",)"
      R"("model_name":"m"},"values":[[1764432800,"2"]]})";
  store.Fail(200, R"({"status":"success","data":{"resultType":"matrix","result":[)" + series + "," +
                      series + "]}}");
  const WallTime now = WallTime(std::chrono::seconds(1764432801));
  const Snapshot snapshot =
      FromStore(MetricsModelDeployment(), EnginePods(1), StoreOptions(store, now), now);
  EXPECT_TRUE(snapshot.processing.empty());
  const std::string reason = ScrapeReasons(snapshot)["chat-000"];
  EXPECT_TRUE(reason.starts_with("the store holds a series of the Pod twice at")) << reason;
  EXPECT_NE(reason.find("duplicate series vllm:num_requests_running"), std::string::npos) << reason;
}

// ---- items 3 and 4: sample times ----

TEST(StoreHostile, SampleTimesOutOfRangeAreAReasonWithoutOverflow) {
  for (const std::string time : {"9.3e15", "1e300", "-1e300", "-1"}) {
    FakeStore store;
    store.Fail(200,
               R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{)"
               R"("__name__":"vllm:num_requests_running","namespace":"team","pod":"chat-000"},)"
               R"("values":[[)" +
                   time + R"(,"4"]]}]}})");
    const Snapshot snapshot =
        FromStore(MetricsModelDeployment(), EnginePods(1), StoreOptions(store, T0()), T0());
    const std::string reason = ScrapeReasons(snapshot)["chat-000"];
    EXPECT_NE(reason.find("a sample time is out of range"), std::string::npos)
        << time << ": " << reason;
  }
}

TEST(StoreHostile, SamplesOutOfOrderReadAsInOrder) {
  FakeStore sorted, reversed;
  for (FakeStore* store : {&sorted, &reversed}) {
    store->AddScrape("chat-000", T0(), Fixture("vllm_server_busy_first.prom"));
    store->AddScrape("chat-000", T0() + 10s, Fixture("vllm_server_busy_second.prom"));
    store->AddScrape("chat-000", T0() + 20s, Fixture("vllm_server_busy_second.prom"));
  }
  reversed.ReverseSamples();
  const WallTime now = T0() + 21s;
  const Snapshot expected =
      FromStore(MetricsModelDeployment(), EnginePods(1), StoreOptions(sorted, now), now);
  const Snapshot read =
      FromStore(MetricsModelDeployment(), EnginePods(1), StoreOptions(reversed, now), now);
  EXPECT_EQ(SnapshotToJson(read), SnapshotToJson(expected));
  for (const Missing& m : read.missing) EXPECT_NE(m.reason, reason::kCounterReset) << m.source;
}

TEST(DecodeMatrixHostile, TwoSamplesAtOneTimeDeepNestingAndAResultObjectAreRefused) {
  std::vector<StoreSeries> series;
  std::string error;
  const std::string head = R"({"status":"success","data":{"resultType":"matrix","result":)";
  EXPECT_FALSE(
      Ok(DecodeMatrix(head + R"([{"metric":{"__name__":"x"},"values":[[2,"1"],[2,"3"]]}]}})",
                      MatrixLimits{}, &series),
         &error));
  EXPECT_EQ(error, "the series x has two samples at 2000 ms");
  EXPECT_FALSE(Ok(DecodeMatrix(head + "{}}}", MatrixLimits{}, &series), &error));
  EXPECT_EQ(error, "the answer's \"result\" is not a list");
  EXPECT_FALSE(Ok(DecodeMatrix(R"({"status":"success","data":{"resultType":"matrix"}})",
                               MatrixLimits{}, &series),
                  &error));
  EXPECT_EQ(error, "the answer has no \"result\" list");
  const std::string deep = head + std::string(1'000'000, '[');
  EXPECT_FALSE(Ok(DecodeMatrix(deep, MatrixLimits{}, &series), &error));
  EXPECT_EQ(error, "the answer nests deeper than 16");
  EXPECT_OK(DecodeMatrix(head + R"([{"metric":{"__name__":"x"},"values":[[3,"1"],[2,"3"]]}]}})",
                         MatrixLimits{}, &series));
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0].samples.front().ms, 2000);
  EXPECT_EQ(series[0].samples.back().ms, 3000);
}

// ---- item 5: values a snapshot cannot hold say what they are ----

TEST(StoreHostile, ANaNOrInfiniteGaugeSaysWhatItReads) {
  for (const auto& [text, spelled] :
       std::vector<std::pair<std::string, std::string>>{{"NaN", "NaN"}, {"+Inf", "+Inf"}}) {
    const std::string body =
        "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running " + text + "\n";
    FakeStore store;
    store.AddScrape("chat-000", T0(), body);
    const Snapshot snapshot =
        FromStore(MetricsModelDeployment(), EnginePods(1), StoreOptions(store, T0() + 1s), T0());
    bool found = false;
    for (const Missing& m : snapshot.missing) {
      if (m.source != "vllm:num_requests_running") continue;
      found = true;
      EXPECT_EQ(m.reason, fmt::format(fmt::runtime(reason::kInvalidValue), spelled));
    }
    EXPECT_TRUE(found) << text;
  }
}

}  // namespace
}  // namespace modelmetrics::deployment
