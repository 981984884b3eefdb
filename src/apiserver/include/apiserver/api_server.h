// The Kubernetes aggregated API server for the ModelDeploymentMetrics subresource. What
// `modelmetrics serve` configures is in serve_config.h, the pieces built from it in serve_build.h.
//
// Routes, with GROUP/VERSION from ApiServerOptions::api (metrics_api.h; default
// worker.gpustack.ai/v1). Every other path: 404 Status; any method but GET: 405 Status.
//   GET /apis, /apis/GROUP, /apis/GROUP/VERSION  discovery (api_discovery.h): legacy JSON, or
//                                               aggregated discovery by the Accept header
//   GET /apis/GROUP/VERSION/namespaces/{ns}/modeldeployments/{name}/metrics
//   GET /apis/GROUP/VERSION/namespaces/{ns}/modeldeploymentmetrics/{name}
//                                               200 application/json: SnapshotToJson; each
//                                               path authorised as its own resource
//   GET /openapi/v2, /openapi/v3, /openapi/v3/apis/GROUP/VERSION   (api_openapi.h)
//   GET /livez, /readyz, /healthz [/NAME] [?verbose] [?exclude=NAME]  named checks in
//                                               kube-apiserver's format (health_checks.h), no
//                                               authentication: livez `ping`; readyz `ping`,
//                                               the options' readiness checks, `shutdown`
//                                               (fails once Stop() begins); healthz both but
//                                               `shutdown`
//   GET /apis/custom.metrics.k8s.io[/VERSION][/namespaces/{ns}/{resource}/{name}/{metric}]
//                                               with options.custom_metrics only: the custom
//                                               metrics API (custom_metrics_api.h); its
//                                               discovery as the other documents, its metrics
//                                               authorised as `get` on {resource}/{metric} in
//                                               custom.metrics.k8s.io, then read through the same
//                                               SharedReads (custom_metric_reads.h)
//   GET /version                                a Kubernetes version.Info, no authentication
//   GET /metrics                                the server's own metrics (server_metrics.h),
//                                               text format
//
// Discovery, the OpenAPI documents and /metrics are authorised as non-resource GETs of their
// path (a PolicyAuthorizer allows discovery and documents to every user, as Kubernetes'
// system:discovery role; /metrics needs a rule), on the authorisation pool like the snapshot.
//
// Every other request is authenticated first (401 Status `Unauthorized`). For the metrics path,
// in this order: `ns` must be a DNS-1123 label (<= 63) and `name` a DNS-1123 subdomain (<= 253),
// else 400 BadRequest before anything is looked up; then, on an authorisation thread (or, when it
// must ask kube-apiserver, on a review thread: a SubjectAccessReview goes over the network, so it
// never runs on an IO thread nor delays requests decided alone, and it takes no snapshot slot),
// the Authorizer decides `get` on `modeldeployments/metrics` in `ns` (403 Forbidden
// with Kubernetes' message; an authoriser error is 500); then the read goes through SharedReads
// (deployment/shared_reads.h): one read per deployment at a time, shared by every request that
// arrives while it runs, its result reused for `reuse_for`. The snapshot function's Status
// becomes the Status code, reason and message (404 NotFound, 503 ServiceUnavailable, 500
// InternalError, ...).
//
// Admission: the time budget (`request_timeout`, 8 s) counts from the request's arrival
// (HttpRequest::received_at). Full queues answer 429 TooManyRequests with Retry-After: 1 at once;
// a request whose read cannot start with `min_read_budget` left answers 503 with Retry-After: 1
// at once; nothing is answered after its budget. Errors are Kubernetes Status objects:
//   {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":...,
//    "reason":...,"details":{"name":...,"group":GROUP,"kind":"modeldeployments"},
//    "code":N}
// with `details` naming the deployment on the metrics path, `{}` for an unknown path, and absent
// on 401 (as Kubernetes does).
//
// Thread-safety: Start(), Stop() and the destructor from one controlling thread, never from the
// snapshot function. The snapshot function, authenticator and authoriser are called concurrently
// (from IO and worker threads) and must be thread-safe. port()/url() are safe after Start().
#ifndef MODELMETRICS_APISERVER_API_SERVER_H_
#define MODELMETRICS_APISERVER_API_SERVER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "aggregation/metrics_api.h"
#include "aggregation/pod_source.h"
#include "aggregation/prometheus_source.h"
#include "aggregation/snapshot.h"
#include "apiserver/api_openapi.h"
#include "apiserver/auth.h"
#include "apiserver/delegated_auth.h"
#include "apiserver/health_checks.h"
#include "apiserver/server_metrics.h"
#include "apiserver/shared_reads.h"
#include "base/file.h"
#include "kube/objects.h"
#include "net/http_server.h"

namespace modelmetrics::deployment {

// Answers one ModelDeploymentMetrics read by `deadline`; e.g. Aggregator::Get bound to an
// aggregator.
using SnapshotFunction = std::function<Status(std::string_view ns, std::string_view name,
                                              SteadyTime deadline, Snapshot* out)>;

struct ApiServerOptions {
  // The API's group and version: every path, document, Status and authorisation request.
  MetricsApi api;
  // Named checks `/readyz` and `/healthz` add after `ping` (e.g. `informer-sync`); each returns
  // "" when ready, else why not.
  std::vector<std::pair<std::string, HealthChecks::Check>> readiness_checks;
  // Where the server counts its requests and reads (served on /metrics); null: its own. Shared
  // so the aggregator and authorisers feeding it can outlive or precede the server.
  std::shared_ptr<ServerMetrics> metrics;
  // Address, port, TLS (with client_ca_file / requestheader_ca_file for certificates) and the
  // HTTP limits. Defaults: 127.0.0.1, port 0 (any free one), no TLS.
  net::ServerOptions http = [] {
    net::ServerOptions o;
    // The API serves GETs only; a small body cap keeps unauthenticated clients (whose bodies
    // are read before they are turned away) from holding memory.
    o.max_body_bytes = 4096;
    return o;
  }();
  // Deployments being read or waiting for a reader; a request needing one more is 429.
  size_t max_in_flight = 32;
  // Threads reading deployments (one deployment per thread at a time).
  int worker_threads = 8;
  // Requests waiting for a read (joined to one, or queued); one more is 429.
  size_t max_waiting = 4096;
  // A finished read answers requests arriving this long after it (0: every request reads).
  std::chrono::milliseconds reuse_for{1000};
  // Serve the custom metrics API too (custom_metrics_api.h): discovery, object metrics of
  // ModelDeployments and pods metrics of their engine Pods, from the same shared reads. Off:
  // its paths are 404 like any unknown path.
  bool custom_metrics = false;
  // A metric call accepts a finished read this old (the snapshot path's reuse_for stays its own).
  std::chrono::milliseconds metrics_reuse_for{5000};
  // Where the custom metrics API lists a namespace's ModelDeployments (`*`) and selects Pods
  // (pods metrics); must outlive the server. Null: those requests answer 501.
  ObjectSource* objects = nullptr;
  // Each metrics request's budget, from its arrival.
  std::chrono::milliseconds request_timeout{8000};
  // A read does not start with less than this left of its earliest request's budget.
  std::chrono::milliseconds min_read_budget{2000};
  // Threads and queue (never shared with reads) for requests whose sender is known without
  // asking kube-apiserver (the front proxy, client certificates, cached tokens): they are routed
  // and, when the authoriser can decide alone (a policy, a cached SubjectAccessReview answer),
  // answered here.
  int authorizer_threads = 4;
  size_t max_authorizing = 1024;
  // Threads and queue for requests that need a TokenReview or a SubjectAccessReview (never
  // shared with the above, so a slow or flooded review never delays a request that needs none);
  // one client address may hold at most max_reviewing / kReviewShares of the queue.
  int review_threads = 4;
  size_t max_reviewing = 256;
};

// The parts of the review queue one client address may hold at most.
inline constexpr size_t kReviewShares = 8;

class ApiServer {
 public:
  // `authenticator` and `authorizer` must not be null.
  ApiServer(ApiServerOptions options, SnapshotFunction snapshot,
            std::unique_ptr<Authenticator> authenticator, std::unique_ptr<Authorizer> authorizer);
  ~ApiServer();  // Stop()s

  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Binds and serves; an error on failure (address, port, certificates). Once only.
  Status Start();
  uint16_t port() const;
  // `https://127.0.0.1:PORT` (`http://` without TLS; IPv6 addresses in brackets).
  std::string url() const;
  // Stops accepting, lets requests in flight finish (up to the HTTP shutdown timeout), then
  // waits for the workers (a running snapshot may take its full 8 s). Idempotent.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What a Status names in `details`: the deployment, the API's group and the resource requested
// (Kubernetes calls it `kind` there).
struct StatusDetails {
  std::string name;
  std::string group;
  std::string kind{kMetricsResource};
};

// A Kubernetes Status object (one line of JSON). `details` set: details name the deployment;
// null: details are `{}`; `with_details` false: no details at all. `retry_after_seconds` > 0
// (always 1 for a 429) sets details.retryAfterSeconds.
std::string StatusJson(const Status& status, const StatusDetails* details, bool with_details = true,
                       int retry_after_seconds = 0);

// ---------------------------------------------------------------------------------------------
// `modelmetrics serve --config FILE`
//
}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_APISERVER_API_SERVER_H_
