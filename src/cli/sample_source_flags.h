// Where a command's samples come from: `--source scrape` (the Pods themselves, the default) or
// `--source prometheus` with `--prometheus-url` and the store's options (labels, selector, Pod
// limit, staleness, settle, TLS trust, bearer token or basic authentication).
//
// The flags themselves are declared in main.cc. Thread-safety: call from one thread.
#ifndef MODELMETRICS_CLI_SAMPLE_SOURCE_FLAGS_H_
#define MODELMETRICS_CLI_SAMPLE_SOURCE_FLAGS_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "aggregation/pod_source.h"
#include "aggregation/prometheus_source.h"

namespace modelmetrics::cli {

struct SampleSourceFlags {
  std::string samples{deployment::kSampleSourceScrape};
  deployment::PrometheusSourceOptions store;
  std::string stale_after;
  std::string settle;
  std::string token_file;
  std::string password_file;

  bool from_store() const { return samples == deployment::kSampleSourcePrometheus; }
};

// The store source the flags name, reading `window` of samples when given (else its default),
// into `*out`: null for direct scraping; an error when the flags are wrong.
base::Status OpenSampleSource(const SampleSourceFlags& flags,
                              std::optional<std::chrono::milliseconds> window,
                              std::shared_ptr<deployment::PodMetricsSource>* out);

}  // namespace modelmetrics::cli

#endif  // MODELMETRICS_CLI_SAMPLE_SOURCE_FLAGS_H_
