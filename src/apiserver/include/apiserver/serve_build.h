// The pieces `modelmetrics serve` builds from its configuration (serve_config.h): the
// authenticator, the authoriser and the API server's options.
//
// Thread-safety: pure functions; what they build documents its own.
#ifndef MODELMETRICS_APISERVER_SERVE_BUILD_H_
#define MODELMETRICS_APISERVER_SERVE_BUILD_H_

#include <memory>
#include <string>

#include "apiserver/api_server.h"
#include "apiserver/auth.h"
#include "apiserver/delegated_auth.h"
#include "apiserver/serve_config.h"
#include "apiserver/server_metrics.h"
#include "kube/kube_api.h"

namespace modelmetrics::deployment {

// The pieces the configuration names, into `*out`; an error when a file does not load. With
// delegated authentication, `watcher` (started by the caller) and `kube` are needed; token
// review cache hits and misses go to `metrics` when given.
Status BuildAuthenticator(const ServeConfig& config, std::unique_ptr<Authenticator>* out,
                          KubeApiClient* kube = nullptr,
                          std::shared_ptr<const AuthenticationConfigWatcher> watcher = nullptr,
                          std::shared_ptr<ServerMetrics> metrics = nullptr);
// `kube` is needed (not null) for subjectaccessreview and must outlive the authoriser; the
// review cache's hits and misses go to `metrics` when given.
Status BuildAuthorizer(const ServeConfig& config, KubeApiClient* kube,
                       std::unique_ptr<Authorizer>* out,
                       std::shared_ptr<ServerMetrics> metrics = nullptr);
// With `watcher` (delegated authentication), TLS takes its CAs from it and /readyz waits for its
// first read (`authentication-configmap`).
ApiServerOptions BuildApiServerOptions(
    const ServeConfig& config,
    std::shared_ptr<const AuthenticationConfigWatcher> watcher = nullptr);

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_APISERVER_SERVE_BUILD_H_
