// The pieces `modelmetrics serve` builds from its configuration (see serve_build.h).
#include "apiserver/serve_build.h"

#include <algorithm>
#include <utility>

namespace modelmetrics::deployment {

Status BuildAuthenticator(const ServeConfig& config, std::unique_ptr<Authenticator>* out,
                          KubeApiClient* kube,
                          std::shared_ptr<const AuthenticationConfigWatcher> watcher,
                          std::shared_ptr<ServerMetrics> metrics) {
  auto authenticator = std::make_unique<UnionAuthenticator>();
  if (config.authn.delegated && (kube == nullptr || watcher == nullptr)) {
    return Status::InvalidArgument(
        "delegated authentication needs a Kubernetes API client and the ConfigMap watcher");
  }
  // Kubernetes' order: front proxy, client certificate, bearer token (file, then TokenReview).
  if (config.authn.delegated) {
    authenticator->Add(std::make_unique<DelegatedRequestHeaderAuthenticator>(watcher));
    authenticator->Add(std::make_unique<ClientCertAuthenticator>());
  }
  if (!config.authn.requestheader_ca_file.empty()) {
    RequestHeaderOptions options;
    options.allowed_names = config.authn.requestheader_allowed_names;
    authenticator->Add(std::make_unique<RequestHeaderAuthenticator>(std::move(options)));
  }
  if (!config.authn.client_ca_file.empty()) {
    authenticator->Add(std::make_unique<ClientCertAuthenticator>());
  }
  if (!config.authn.token_file.empty()) {
    std::unique_ptr<TokenFileAuthenticator> tokens;
    if (Status loaded = TokenFileAuthenticator::Load(config.authn.token_file, &tokens);
        !loaded.ok()) {
      return loaded;
    }
    authenticator->Add(std::move(tokens));
  }
  if (config.authn.delegated) {
    TokenReviewAuthenticator::Options options{.ttl = config.authn.token_review_cache_ttl};
    if (metrics) options.on_cache = [metrics](bool hit) { metrics->TokenReviewCache(hit); };
    authenticator->Add(std::make_unique<TokenReviewAuthenticator>(kube, std::move(options)));
  }
  if (authenticator->empty()) return Status::InvalidArgument("no authentication method configured");
  *out = std::move(authenticator);
  return Status::Ok();
}

Status BuildAuthorizer(const ServeConfig& config, KubeApiClient* kube,
                       std::unique_ptr<Authorizer>* out, std::shared_ptr<ServerMetrics> metrics) {
  if (config.authz.mode == ServeConfig::Authorization::kPolicy) {
    std::unique_ptr<PolicyAuthorizer> policy;
    if (Status loaded = PolicyAuthorizer::Load(config.authz.policy_file, &policy); !loaded.ok()) {
      return loaded;
    }
    *out = std::move(policy);
    return Status::Ok();
  }
  if (kube == nullptr) {
    return Status::InvalidArgument("subjectaccessreview needs a Kubernetes API client");
  }
  SubjectAccessReviewAuthorizer::Options options;
  if (metrics) options.on_cache = [metrics](bool hit) { metrics->AccessReviewCache(hit); };
  *out = std::make_unique<SubjectAccessReviewAuthorizer>(kube, std::move(options));
  return Status::Ok();
}

ApiServerOptions BuildApiServerOptions(const ServeConfig& config,
                                       std::shared_ptr<const AuthenticationConfigWatcher> watcher) {
  ApiServerOptions options;  // keeps the small body cap
  options.api = config.api;
  options.http.address = config.server.address;
  options.http.port = config.server.port;
  options.http.threads = 2;
  net::TlsOptions tls;
  tls.cert_file = config.tls.cert_file;
  tls.key_file = config.tls.key_file;
  tls.client_ca_file = config.authn.client_ca_file;
  tls.requestheader_ca_file = config.authn.requestheader_ca_file;
  tls.require_client_cert = false;  // tokens authenticate too
  if (watcher) {
    tls.dynamic_client_cas = watcher;
    options.readiness_checks.emplace_back("authentication-configmap",
                                          [watcher] { return watcher->Ready(); });
  }
  options.http.tls = std::move(tls);
  options.max_in_flight = config.server.max_in_flight;
  options.reuse_for = std::chrono::milliseconds(config.server.snapshot_reuse_ms);
  options.custom_metrics = config.autoscaling.custom_metrics;
  options.metrics_reuse_for = std::chrono::milliseconds(config.autoscaling.metrics_reuse_ms);
  options.http.max_connections_per_address = config.server.max_connections_per_address;
  options.worker_threads = config.server.workers;
  options.request_timeout = config.reads.request_timeout;
  // A read may start with a quarter of the budget left (2 s of the default 8 s), never less.
  options.min_read_budget = std::min(options.min_read_budget, config.reads.request_timeout / 4);
  return options;
}

}  // namespace modelmetrics::deployment
