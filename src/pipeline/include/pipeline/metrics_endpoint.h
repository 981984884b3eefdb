// Serves a Registry as Prometheus `/metrics` on the project's HTTP server.
//
// GET (and HEAD) `path`: the format follows the request's Accept header (OpenMetrics when it
// names application/openmetrics-text, text 0.0.4 otherwise) and the reply carries that format's
// exact Content-Type. Rendering happens on the endpoint's own worker thread, not on the server's
// IO thread: a registry collector may take its time (federation fetches engines), and other
// connections keep being served meanwhile. Observers are never blocked by a scrape beyond the
// copy of their counts (see metrics.h).
//
// Thread-safety: Install() before the server starts. The registry and the endpoint must outlive
// the server's serving (stop the server first, then destroy the endpoint).
#ifndef MODELMETRICS_PIPELINE_METRICS_ENDPOINT_H_
#define MODELMETRICS_PIPELINE_METRICS_ENDPOINT_H_

#include <memory>
#include <string>

#include "modelmetrics/metrics.h"
#include "net/http_server.h"

namespace modelmetrics::pipeline {

class MetricsEndpoint {
 public:
  explicit MetricsEndpoint(const Registry& registry);
  ~MetricsEndpoint();  // finishes queued scrapes, then joins the worker
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  void Install(net::HttpServer& server, const std::string& path = "/metrics");

  // The response to one scrape with this Accept header (what the route answers).
  net::HttpResponse Scrape(std::string_view accept) const;

 private:
  struct Worker;
  const Registry& registry_;
  std::unique_ptr<Worker> worker_;
};

}  // namespace modelmetrics::pipeline

#endif  // MODELMETRICS_PIPELINE_METRICS_ENDPOINT_H_
