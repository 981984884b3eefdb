// Direct scraping (reference §2.2 step 8): each owned Pod's advertised endpoint, fetched through
// one net::HttpClient (32 in flight per read, 2 s per fetch, 1 MiB cap on decoded bytes, no
// redirects, no proxy, verified TLS), each body parsed by its exporter profile as soon as it
// arrives and timed right after its own parse, so a slow Pod does not shift a fast one's window.
// Windows are computed against the aggregator's baseline store. At most 64 Pods per read.
//
// Errors are the reference's texts: the endpoint checks' reasons, Go net/http's words for a failed
// fetch, "parse Prometheus metrics: ..." for a bad body.
//
// Thread-safety: Read() may be called concurrently.
#ifndef MODELMETRICS_DEPLOYMENT_SCRAPE_SOURCE_H_
#define MODELMETRICS_DEPLOYMENT_SCRAPE_SOURCE_H_

#include "deployment/aggregator.h"
#include "deployment/pod_source.h"
#include "net/http_client.h"

namespace modelmetrics::deployment {

class ScrapeSource : public PodMetricsSource {
 public:
  // Uses the options' limits, trust and clocks.
  explicit ScrapeSource(const AggregatorOptions& options);

  size_t pod_limit() const override { return options_.pod_limit; }
  std::vector<PodRead> Read(const ModelDeployment& md, std::span<const Pod> pods,
                            SteadyTime deadline) override;

 private:
  AggregatorOptions options_;
  net::HttpClient client_;
};

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_DEPLOYMENT_SCRAPE_SOURCE_H_
