// The aggregated API over an object source, on loopback, readable with one bearer token in the
// namespaces given: what `modelmetrics demo` serves beside its simulators, and what the API load
// test and load benchmark put load on. An Aggregator (direct scraping) answers the reads.
//
// Thread-safety: Start() and Stop() from one thread; url()/token() after Start() from any.
#ifndef MODELMETRICS_SIM_LOOPBACK_API_H_
#define MODELMETRICS_SIM_LOOPBACK_API_H_

#include <memory>
#include <string>
#include <vector>

#include "aggregation/aggregator.h"
#include "apiserver/api_server.h"
#include "kube/objects.h"

namespace modelmetrics::sim {

using base::Status;

struct LoopbackApiOptions {
  std::vector<std::string> namespaces;  // the token may read ModelDeploymentMetrics in these
  std::string token;                    // empty: a random one
  // TLS when both are set (then the URL is https://); plain HTTP otherwise.
  std::string tls_cert_file;
  std::string tls_key_file;
  deployment::ApiServerOptions api;  // its `http.tls` is set from the two files above
  deployment::AggregatorOptions aggregator;
};

class LoopbackApi {
 public:
  // `source` must outlive the server.
  LoopbackApi(deployment::ObjectSource* source, LoopbackApiOptions options);
  ~LoopbackApi();

  Status Start();
  void Stop();

  std::string url() const;  // scheme://127.0.0.1:port
  uint16_t port() const;    // 0 before Start()
  const std::string& token() const { return token_; }
  // url() + the metrics path of ns/name.
  std::string MetricsUrl(const std::string& ns, const std::string& name) const;
  deployment::Aggregator& aggregator() { return *aggregator_; }

 private:
  deployment::ObjectSource* source_;
  LoopbackApiOptions options_;
  std::string token_;
  std::unique_ptr<deployment::Aggregator> aggregator_;
  std::unique_ptr<deployment::ApiServer> server_;
};

}  // namespace modelmetrics::sim

#endif  // MODELMETRICS_SIM_LOOPBACK_API_H_
