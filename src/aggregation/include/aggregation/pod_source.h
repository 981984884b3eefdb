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
#include "net/http_client.h"

namespace modelmetrics::deployment {

// The two kinds of source, as `--source` and the serve configuration's `source:` name them.
enum class SampleSource { kScrape, kPrometheus };
inline constexpr std::string_view kSampleSourceScrape = "scrape";
inline constexpr std::string_view kSampleSourcePrometheus = "prometheus";

// How a Pod's read ended, as a bounded class for the server's own metrics (PodOutcomeName).
enum class PodOutcome : uint8_t {
  kUnset,  // the source said nothing: `ok` with metrics, else `error`
  kOk,
  // a direct scrape
  kNoEndpoint,  // the Pod has no address or port to scrape
  kFetch,       // the fetch failed: PodRead::fetch_error says how
  kParseError,
  // a Prometheus-compatible store
  kStoreError,
  kNoSample,
  kStale,
  kDown,
  kCopies,  // more than one copy of the Pod's series that disagree
};

struct PodRead {
  std::optional<PodMetrics> metrics;  // none: `error` says why (a missing[] "scrape" entry)
  Reason error;
  PodOutcome outcome = PodOutcome::kUnset;
  net::FetchError fetch_error = net::FetchError::kNone;  // with kFetch
  ReadTime at;
  // What the read's windows are computed against; null: the aggregator's baseline store.
  std::unique_ptr<Baselines> baselines;
};

// The outcome's snake_case name (a metric label value): ok, no_endpoint, parse_error, a
// net::FetchErrorName (timeout, too_large, http_status, ...), store_error, no_sample, stale,
// down, copies, or error.
std::string_view PodOutcomeName(const PodRead& read);

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
