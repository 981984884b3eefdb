// Direct scraping (§2.2 step 8): each owned Pod's advertised endpoint, fetched through
// one net::HttpClient (32 in flight per read, 2 s per fetch, 1 MiB cap on decoded bytes, no
// redirects, no proxy, verified TLS), each body parsed by its exporter profile as soon as it
// arrives and timed right after its own parse, so a slow Pod does not shift a fast one's window.
// Windows are computed against the aggregator's baseline store. At most 64 Pods per read.
//
// Errors are the reference's texts: the endpoint checks' reasons, Go net/http's words for a failed
// fetch, "parse Prometheus metrics: ..." for a bad body.
//
// Thread-safety: Read() may be called concurrently.
// Section numbers (§n) cite docs/deployment-behaviour.md.
#ifndef MODELMETRICS_AGGREGATION_SCRAPE_SOURCE_H_
#define MODELMETRICS_AGGREGATION_SCRAPE_SOURCE_H_

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

#include "aggregation/pod_source.h"
#include "net/http_client.h"

namespace modelmetrics::deployment {

// What a direct scrape needs; the aggregator fills it from its own options (the spec's numbers
// are AggregatorOptions' defaults, kept there once).
struct ScrapeOptions {
  size_t pod_limit = 0;
  size_t max_in_flight = 0;  // per Read()
  std::chrono::milliseconds fetch_timeout{0};
  size_t max_body_bytes = 0;  // decoded
  std::string ca_file;        // trust for HTTPS Pods; empty: the system bundle
  std::function<WallTime()> now;
  std::function<SteadyTime()> steady_now;
};

class ScrapeSource : public PodMetricsSource {
 public:
  explicit ScrapeSource(ScrapeOptions options);

  size_t pod_limit() const override { return options_.pod_limit; }
  std::vector<PodRead> Read(const ModelDeployment& md, std::span<const Pod> pods,
                            SteadyTime deadline) override;

 private:
  ScrapeOptions options_;
  net::HttpClient client_;
};

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_AGGREGATION_SCRAPE_SOURCE_H_
