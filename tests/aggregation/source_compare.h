// The two ways to a snapshot that the source tests hold against each other: a PodMetricsSource's
// reads merged as the aggregator merges them, and direct reads of the same bodies at given
// instants merged against a baseline store.
#ifndef MODELMETRICS_TESTS_DEPLOYMENT_SOURCE_COMPARE_H_
#define MODELMETRICS_TESTS_DEPLOYMENT_SOURCE_COMPARE_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "aggregation/baseline_store.h"
#include "aggregation/exporter_registry.h"
#include "aggregation/merge.h"
#include "aggregation/metrics_parse.h"
#include "aggregation/pod_source.h"
#include "aggregation/snapshot.h"
#include "status_matchers.h"

namespace modelmetrics::deployment::testing {

inline int64_t Ms(WallTime t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// `source`'s snapshot of `pods`, merged as Aggregator::Get merges (ownership aside).
inline Snapshot FromSource(PodMetricsSource& source, const ModelDeployment& md,
                           const std::vector<Pod>& pods, WallTime timestamp) {
  std::vector<PodRead> reads = source.Read(md, pods, SteadyClock::now() + std::chrono::seconds(5));
  BaselineStore unused;
  SnapshotBuilder builder(md, &unused);
  for (size_t i = 0; i < pods.size(); ++i) {
    if (!reads[i].metrics) {
      builder.AddMissing(pods[i].metadata.name, "scrape", reads[i].error);
      continue;
    }
    builder.MergePod(pods[i], *reads[i].metrics, reads[i].at, reads[i].baselines.get());
  }
  EXPECT_EQ(unused.size(), 0u);  // a store's windows never touch the process's baselines
  return builder.Finish(timestamp);
}

// Direct reads: Pod i answered first[i] at t0[i], then second[i] at t1[i].
inline Snapshot DirectReads(const ModelDeployment& md, const std::vector<Pod>& pods,
                            const std::vector<std::string>& first,
                            const std::vector<std::string>& second, const std::vector<WallTime>& t0,
                            const std::vector<WallTime>& t1, WallTime timestamp) {
  BaselineStore store;
  Snapshot snapshot;
  for (int round = 0; round < 2; ++round) {
    SnapshotBuilder builder(md, &store);
    for (size_t i = 0; i < pods.size(); ++i) {
      PodMetrics read;
      std::string error;
      const bool router = !pods[i].metadata.Label(kLabelRouter).empty();
      EXPECT_OK(ParsePodMetrics(round == 0 ? first[i] : second[i], SelectExporter(md, router),
                                &read, &pods[i]));
      builder.MergePod(pods[i], read, ReadTime::Replay(round == 0 ? t0[i] : t1[i]));
    }
    snapshot = builder.Finish(timestamp);
  }
  return snapshot;
}

}  // namespace modelmetrics::deployment::testing

#endif  // MODELMETRICS_TESTS_DEPLOYMENT_SOURCE_COMPARE_H_
