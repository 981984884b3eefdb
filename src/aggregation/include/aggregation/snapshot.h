// ModelDeploymentMetrics: the snapshot the aggregator serves, its three renderings (the API's
// JSON, YAML, and a `kubectl top`-like table), and the JSON read back (a client of the API).
//
// The JSON is the Kubernetes object exactly as the reference gives it: apiVersion
// worker.gpustack.ai/v1, kind ModelDeploymentMetrics, metadata {name, namespace,
// creationTimestamp: null}, times at second precision in RFC 3339 UTC, empty lists omitted,
// `partial` and each missing entry's `pod` always present, floats in shortest round-trip form.
// Values are never NaN or Inf (the aggregator does not produce them; the writer maps any to 0).
//
// Thread-safety: plain values and pure functions.
#ifndef MODELMETRICS_AGGREGATION_SNAPSHOT_H_
#define MODELMETRICS_AGGREGATION_SNAPSHOT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "aggregation/metrics_api.h"
#include "aggregation/reason.h"
#include "base/status.h"

namespace modelmetrics::deployment {

using base::Status;

using WallClock = std::chrono::system_clock;
using WallTime = WallClock::time_point;
using SteadyClock = std::chrono::steady_clock;
using SteadyTime = SteadyClock::time_point;

// When a Pod's body was read: wall time for `observedAt`, the monotonic clock for window lengths
// and baseline ages, so a wall-clock step cannot shorten, lengthen or invert a window.
struct ReadTime {
  WallTime wall;
  SteadyTime steady;

  static ReadTime Now() { return {WallClock::now(), SteadyClock::now()}; }
  // Both clocks from one wall time: replays and tests, where the wall time is the only clock.
  static ReadTime Replay(WallTime wall) {
    return {wall,
            SteadyTime(std::chrono::duration_cast<SteadyClock::duration>(wall.time_since_epoch()))};
  }
};

struct Gauge {
  std::string name;
  std::string source;
  std::string scope;  // "router" or "engine/<role>"
  std::string unit;
  double value = 0;
  int32_t pod_count = 0;
  WallTime observed_at;
};

struct Window {
  std::string name;
  std::string pod;
  std::string source;
  std::string scope;
  std::string unit;
  double value = 0;
  double samples = 0;
  double window_seconds = 0;
  WallTime observed_at;
};

struct CacheHit {
  std::string pod;
  std::string source;
  std::string scope;  // local-prefix, external-store, device-prefix, host-prefix, storage-prefix
  std::string unit = "tokens";
  double hits = 0;
  double queries = 0;
  double rate = 0;
  double window_seconds = 0;
  int32_t pod_count = 1;
  WallTime observed_at;
};

// A modelmetrics extension beside GPUStack's fields (clients of the GPUStack shape ignore it): the
// fraction of a per-Pod resource in use over one role's readable Pods (exporter_profile.h,
// UtilizationRow).
struct Utilization {
  std::string name;  // kv-cache-usage
  std::string source;
  std::string scope;  // "engine/<role>"
  std::string unit;   // fraction
  double mean = 0;
  double max = 0;
  int32_t pod_count = 0;
  WallTime observed_at;
};

struct Missing {
  std::string pod;  // "" for deployment-level entries
  std::string source;
  Reason reason;

  bool operator==(const Missing&) const = default;
};

// Not in the document (SnapshotToJson does not write it; SnapshotFromJson leaves it empty): a Pod
// the read covered, its scope, and its own values of the unsplit gauges and of utilization, for
// readers that need one Pod's value or the scope of a missing[] entry's Pod (the custom metrics
// API).
struct PodReport {
  std::string pod;
  std::string scope;  // "router" or "engine/<role>"
  std::map<std::string, double, std::less<>> values;
  WallTime observed_at;  // when its body was read (unset for a failed read)
};

struct Snapshot {
  std::string name;
  std::string namespace_;
  WallTime timestamp;
  std::vector<Gauge> processing;
  std::vector<Gauge> queueing;
  std::vector<CacheHit> cache_hits;
  std::vector<Missing> missing;
  bool partial = false;
  std::vector<Window> latency;
  std::vector<Window> traffic;
  std::vector<Window> transfer;
  std::vector<Utilization> utilization;  // ours: after GPUStack's fields
  std::vector<PodReport> pods;           // not in the document; sorted by Pod name
};

// RFC 3339 UTC at second precision, e.g. 2026-11-29T16:13:15Z.
std::string FormatTime(WallTime time);
// RFC 3339 as metav1.Time accepts it: `Z` or a `+hh:mm`/`-hh:mm` offset, optional fraction
// (dropped: the API's times are whole seconds). False for anything else.
bool ParseTime(std::string_view text, WallTime* out);

// One line, no trailing newline; `api_version` is the served API's group/version.
std::string SnapshotToJson(const Snapshot& snapshot,
                           std::string_view api_version = kDefaultMetricsApiVersion);
std::string SnapshotToYaml(const Snapshot& snapshot);
// `kubectl top`-like sections: processing, queueing, utilization, cache hits, latency, traffic,
// transfer, then missing and PARTIAL when set.
std::string SnapshotToTable(const Snapshot& snapshot);

// The API's JSON read back, as a Go client of the type would (snapshot_decode.cc): members it
// does not know are ignored (a newer server may add some), an absent member is its zero value,
// and a member of the wrong type, a bad time, a number outside its type, or another kind than
// ModelDeploymentMetrics is an error naming the member. SnapshotToJson(decoded) equals the
// input for any document SnapshotToJson wrote, but for the `\ufffd` it writes for a byte that is
// not UTF-8 (read back as U+FFFD, then written as itself) and a -0 (read back as 0).
// `api_version` is the group/version the document must carry.
Status SnapshotFromJson(std::string_view json, Snapshot* out,
                        std::string_view api_version = kDefaultMetricsApiVersion);

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_AGGREGATION_SNAPSHOT_H_
