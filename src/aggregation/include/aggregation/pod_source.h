// Where a snapshot's samples come from, behind one interface: the Pods' own /metrics (direct
// scraping, scrape_source.h) or a Prometheus-compatible store that scrapes them
// (prometheus_source.h). The aggregator owns discovery, ownership, coverage and the merge; a
// source turns a list of owned Pods into one read (or one error) per Pod.
//
// Thread-safety: Read() may be called concurrently.
#ifndef MODELMETRICS_AGGREGATION_POD_SOURCE_H_
#define MODELMETRICS_AGGREGATION_POD_SOURCE_H_

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "aggregation/baseline_store.h"
#include "aggregation/pod_metrics.h"
#include "aggregation/snapshot.h"
#include "kube/objects.h"

namespace modelmetrics::deployment {

// The two kinds of source, as `--source` and the serve configuration's `source:` name them.
enum class SampleSource { kScrape, kPrometheus };
inline constexpr std::string_view kSampleSourceScrape = "scrape";
inline constexpr std::string_view kSampleSourcePrometheus = "prometheus";

struct PodRead {
  std::optional<PodMetrics> metrics;  // none: `error` says why (a missing[] "scrape" entry)
  Reason error;
  // Why, as a bounded snake_case class for the server's own metrics (`ok` when `metrics` is
  // set): no_endpoint, parse_error, a net::FetchErrorName (timeout, too_large, http_status, ...)
  // for a failed scrape; store_error, no_sample, stale, down, copies for a store. Empty: `error`.
  std::string_view outcome;
  ReadTime at;
  // What the read's windows are computed against; null: the aggregator's baseline store.
  std::unique_ptr<Baselines> baselines;
};

class PodMetricsSource {
 public:
  virtual ~PodMetricsSource() = default;

  // The most Pods one snapshot reads; the rest are dropped with the Pod-limit entry.
  virtual size_t pod_limit() const = 0;

  // One PodRead per Pod of `pods` (owned Pods of `md`, in name order), finishing by `deadline`.
  virtual std::vector<PodRead> Read(const ModelDeployment& md, std::span<const Pod> pods,
                                    SteadyTime deadline) = 0;
};

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_AGGREGATION_POD_SOURCE_H_
