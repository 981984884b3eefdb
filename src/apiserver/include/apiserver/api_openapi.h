// The OpenAPI documents kube-apiserver's aggregator downloads from an aggregated server and
// merges into its own (`kubectl get --raw /openapi/v2`, `kubectl explain`, client generators):
//   GET /openapi/v2                        Swagger 2.0: the metrics path and its schemas
//   GET /openapi/v3                        the index: {"paths":{"apis/GROUP/VERSION":
//                                          {"serverRelativeURL":"/openapi/v3/apis/GROUP/VERSION?hash=H"}}}
//   GET /openapi/v3/apis/GROUP/VERSION     OpenAPI 3.0 for the group version
// Both carry `x-kubernetes-group-version-kind` on the kind and `x-kubernetes-action: get` on the
// operation; definition names are the group reversed, as Kubernetes names CRD types
// (`ai.gpustack.worker.v1.ModelDeploymentMetrics`). Each document is built once; its ETag is a
// hash of its bytes. ServeOpenApi answers If-None-Match with 304, and a v3 request whose `hash`
// is not the current one with a 301 to the current URL, as kube-openapi's handlers do; with the
// right hash the answer may be cached for ever.
//
// Thread-safety: immutable after construction.
#ifndef MODELMETRICS_APISERVER_API_OPENAPI_H_
#define MODELMETRICS_APISERVER_API_OPENAPI_H_

#include <optional>
#include <string>
#include <string_view>

#include "aggregation/metrics_api.h"
#include "net/http_server.h"

namespace modelmetrics::deployment {

// Uppercase hex SHA-512 of `bytes`: the ETag (quoted) kube-openapi and aggregated discovery send
// for a document, and the `hash` of an OpenAPI v3 URL.
std::string DocumentHash(std::string_view bytes);

class OpenApiDocuments {
 public:
  explicit OpenApiDocuments(const MetricsApi& api);

  const std::string& v2() const { return v2_; }
  const std::string& v3_index() const { return v3_index_; }
  const std::string& v3_group_version() const { return v3_group_version_; }
  // `/openapi/v3/apis/GROUP/VERSION`
  const std::string& v3_group_version_path() const { return v3_path_; }
  // Uppercase hex SHA-512 of v3_group_version(), as in the index's `hash`.
  const std::string& v3_hash() const { return v3_hash_; }

  // Answers `request` when its path is one of the three documents; nullopt otherwise.
  std::optional<net::HttpResponse> Serve(const net::HttpRequest& request) const;

 private:
  std::string v2_, v2_etag_;
  std::string v3_index_, v3_index_etag_;
  std::string v3_group_version_, v3_path_, v3_hash_;
};

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_APISERVER_API_OPENAPI_H_
