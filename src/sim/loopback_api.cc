// See loopback_api.h.
#include "sim/loopback_api.h"

#include <utility>

#include <fmt/format.h>

#include "apiserver/auth.h"
#include "base/random_token.h"

namespace modelmetrics::sim {

LoopbackApi::LoopbackApi(deployment::ObjectSource* source, LoopbackApiOptions options)
    : source_(source),
      options_(std::move(options)),
      token_(options_.token.empty() ? base::RandomToken() : options_.token),
      aggregator_(std::make_unique<deployment::Aggregator>(source, options_.aggregator)) {}

LoopbackApi::~LoopbackApi() { Stop(); }

Status LoopbackApi::Start() {
  std::unique_ptr<deployment::TokenFileAuthenticator> authenticator;
  if (Status parsed = deployment::TokenFileAuthenticator::Parse(
          token_ + ",loopback,loopback-uid,\"loopback-readers\"", &authenticator);
      !parsed.ok()) {
    return parsed;
  }
  deployment::PolicyRule rule;
  rule.users = {"loopback"};
  rule.namespaces = options_.namespaces;
  rule.verbs = {"get"};
  rule.resources = {"modeldeployments/metrics", "modeldeploymentmetrics"};
  // The server's own /metrics, for a Prometheus scraping it with the same token.
  deployment::PolicyRule metrics_rule;
  metrics_rule.users = {"loopback"};
  metrics_rule.verbs = {"get"};
  metrics_rule.non_resource_urls = {"/metrics"};
  // The custom metrics API, when served: every metric of a deployment or of its Pods.
  deployment::PolicyRule custom_rule;
  custom_rule.users = {"loopback"};
  custom_rule.namespaces = options_.namespaces;
  custom_rule.verbs = {"get"};
  custom_rule.api_groups = {"custom.metrics.k8s.io"};
  custom_rule.resources = {"*"};
  deployment::ApiServerOptions api = options_.api;
  api.http.address = "127.0.0.1";
  if (api.objects == nullptr) api.objects = source_;
  if (!options_.tls_cert_file.empty() && !options_.tls_key_file.empty()) {
    net::TlsOptions tls;
    tls.cert_file = options_.tls_cert_file;
    tls.key_file = options_.tls_key_file;
    api.http.tls = std::move(tls);
  }
  deployment::Aggregator* aggregator = aggregator_.get();
  server_ = std::make_unique<deployment::ApiServer>(
      std::move(api),
      [aggregator](std::string_view ns, std::string_view name, deployment::SteadyTime deadline,
                   deployment::Snapshot* out) { return aggregator->Get(ns, name, out, deadline); },
      std::move(authenticator),
      std::make_unique<deployment::PolicyAuthorizer>(
          std::vector<deployment::PolicyRule>{rule, metrics_rule, custom_rule}));
  return server_->Start();
}

void LoopbackApi::Stop() {
  if (server_) server_->Stop();
}

std::string LoopbackApi::url() const { return server_ ? server_->url() : std::string(); }

uint16_t LoopbackApi::port() const { return server_ ? server_->port() : 0; }

std::string LoopbackApi::MetricsUrl(const std::string& ns, const std::string& name) const {
  return url() + deployment::MetricsApi().MetricsPath(ns, name);
}

}  // namespace modelmetrics::sim
