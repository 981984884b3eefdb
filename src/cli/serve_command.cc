// `modelmetrics serve --config FILE [--duration D] [--max-config-bytes N]`: the aggregated API
// server for ModelDeploymentMetrics. Wires the configuration (deployment/api_server.h) into an
// object source (a file, or the Kubernetes API), an Aggregator and an ApiServer, prints the URL it
// listens on, and serves until SIGINT, SIGTERM or SIGHUP (cli/stop_signals.h) or the duration ends.
//
// Exit codes: 0 after a clean stop (also when SIGINT/SIGTERM comes during start-up); 2 for a bad
// configuration (including files it names that do not load); 1 when the server cannot start
// (address in use, bad certificate).
//
// Thread-safety: runs on the main thread; SIGINT/SIGTERM are blocked in every thread and taken
// with sigtimedwait, so no handler runs asynchronously. Because they are blocked from the start, a
// stop signal during start-up stays pending: it is checked between the start-up steps (each one
// bounded: files are size-capped, YAML is bounded), so start-up ends at the next step.
#include "serve_command.h"

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "aggregation/aggregator.h"
#include "aggregation/prometheus_source.h"
#include "apiserver/api_server.h"
#include "apiserver/serve_build.h"
#include "apiserver/serve_config.h"
#include "base/duration.h"
#include "base/file.h"
#include "kube/kube_api.h"
#include "kube/object_file.h"
#include "kube/watch_cache.h"
#include "net/certificate.h"
#include "object_source_flags.h"
#include "read_limit_flags.h"
#include "stop_signals.h"

namespace modelmetrics::cli {
namespace {

using deployment::ServeConfig;

// With `tls_self_signed`: a certificate made at start, in private files removed at exit.
class ServingCertificate {
 public:
  ~ServingCertificate() {
    for (const std::string& path : {cert_, key_}) {
      if (!path.empty()) std::remove(path.c_str());
    }
  }
  bool Make(ServeConfig* config, std::string* error) {
    std::string cert_pem, key_pem;
    if (!net::SelfSignedCertificate("modelmetrics", config->tls.self_signed_hosts, &cert_pem,
                                    &key_pem, error) ||
        !base::WritePrivateTempFile("modelmetrics-serving-cert", cert_pem, &cert_, error) ||
        !base::WritePrivateTempFile("modelmetrics-serving-key", key_pem, &key_, error)) {
      return false;
    }
    config->tls.cert_file = cert_;
    config->tls.key_file = key_;
    return true;
  }

 private:
  std::string cert_, key_;
};

// Where objects come from: the objects file, list+watch caches of the Kubernetes API (the
// default with a kubeconfig or in-cluster), or the API read on every snapshot.
std::unique_ptr<deployment::ObjectSource> MakeObjectSource(
    const ServeConfig& config, deployment::KubeApiClient* kube,
    const std::shared_ptr<deployment::ServerMetrics>& metrics, deployment::WatchCache** watch_cache,
    std::string* error) {
  if (!config.kube.objects_file.empty()) {
    auto file = std::make_unique<deployment::FileObjectSource>();
    if (!file->Load(config.kube.objects_file, error, config.kube.max_objects_bytes)) {
      *error = "objects_file: " + *error;
      return nullptr;
    }
    return file;
  }
  if (!config.kube.watch_objects) return std::make_unique<deployment::KubeApiSource>(kube);
  deployment::WatchCache::Options options;
  options.on_objects = [metrics](std::string_view resource, size_t count) {
    metrics->WatchObjects(resource, count);
  };
  options.on_relist = [metrics](std::string_view resource, std::string_view reason) {
    metrics->WatchRelist(resource, reason);
  };
  auto cache = std::make_unique<deployment::WatchCache>(kube, std::move(options));
  cache->Start();
  *watch_cache = cache.get();
  return cache;
}

std::unique_ptr<deployment::KubeApiClient> OpenKubeApi(const ServeConfig& config,
                                                       size_t max_config_bytes,
                                                       std::string* error) {
  deployment::KubeConfig kube_config;
  const bool loaded = config.kube.in_cluster
                          ? deployment::LoadInClusterConfig(&kube_config, error)
                          : deployment::LoadKubeconfig(config.kube.kubeconfig, config.kube.context,
                                                       &kube_config, error, max_config_bytes);
  if (!loaded) return nullptr;
  return std::make_unique<deployment::KubeApiClient>(std::move(kube_config));
}

// The aggregator's limits, trust and sample source from the configuration; its Pod reads counted
// in `metrics`. False when the store's credential files do not load.
bool MakeAggregatorOptions(const ServeConfig& config,
                           const std::shared_ptr<deployment::ServerMetrics>& metrics,
                           deployment::AggregatorOptions* options, std::string* error) {
  config.ApplyReadLimits(options);
  options->ca_file = config.reads.pod_ca_file;
  options->on_pod_read = [metrics](std::string_view outcome) { metrics->PodRead(outcome); };
  if (config.reads.source != deployment::SampleSource::kPrometheus) return true;
  deployment::PrometheusSourceOptions store = config.reads.prometheus;
  if (!deployment::LoadPrometheusCredentials(config.reads.prometheus_bearer_token_file,
                                             config.reads.prometheus_basic_password_file, &store,
                                             error)) {
    *error = "prometheus: " + *error;
    return false;
  }
  options->pod_source = std::make_shared<deployment::PrometheusSource>(store);
  return true;
}

int Serve(const std::string& config_path, size_t max_config_bytes, const ReadLimitFlags& limits,
          std::optional<std::chrono::milliseconds> duration) {
  // Before anything starts a thread (the API client, the aggregator and the server all do).
  const ScopedStopSignals stop_signals;
  const sigset_t& signals = stop_signals.signals();

  ServeConfig config;
  std::string error;
  if (!deployment::LoadServeConfig(config_path, &config, &error, max_config_bytes) ||
      !ApplyReadLimitFlags(limits, &config, &error)) {
    std::fprintf(stderr, "serve: %s\n", error.c_str());
    return 2;
  }
  if (StopPending(signals, "serve")) return 0;
  ServingCertificate self_signed;
  if (config.tls.self_signed && !self_signed.Make(&config, &error)) {
    std::fprintf(stderr, "serve: %s\n", error.c_str());
    return 1;
  }

  // The Kubernetes API client, when objects or reviews come from the cluster.
  std::unique_ptr<deployment::KubeApiClient> kube;
  if (config.UsesKubeApi()) {
    kube = OpenKubeApi(config, max_config_bytes, &error);
    if (!kube) {
      std::fprintf(stderr, "serve: %s\n", error.c_str());
      return 2;
    }
    if (StopPending(signals, "serve")) return 0;
  }

  auto metrics = std::make_shared<deployment::ServerMetrics>();
  deployment::WatchCache* watch_cache = nullptr;
  std::unique_ptr<deployment::ObjectSource> source =
      MakeObjectSource(config, kube.get(), metrics, &watch_cache, &error);
  if (!source) {
    std::fprintf(stderr, "serve: %s\n", error.c_str());
    return 2;
  }
  if (StopPending(signals, "serve")) return 0;

  // Delegated authentication: the trust kube-apiserver publishes, read now and followed after.
  std::shared_ptr<deployment::AuthenticationConfigWatcher> trust;
  if (config.authn.delegated) {
    trust =
        std::make_shared<deployment::AuthenticationConfigWatcher>(kube.get(), config.authn.refresh);
    trust->Start();
    if (std::string why = trust->Ready(); !why.empty()) {
      std::fprintf(stderr, "serve: %s (not ready until it is read)\n", why.c_str());
    }
  }
  auto authenticator = deployment::BuildAuthenticator(config, &error, kube.get(), trust, metrics);
  if (!authenticator) {
    std::fprintf(stderr, "serve: %s\n", error.c_str());
    return 2;
  }
  auto authorizer = deployment::BuildAuthorizer(config, kube.get(), &error, metrics);
  if (!authorizer) {
    std::fprintf(stderr, "serve: %s\n", error.c_str());
    return 2;
  }
  if (StopPending(signals, "serve")) return 0;

  deployment::AggregatorOptions aggregator_options;
  if (!MakeAggregatorOptions(config, metrics, &aggregator_options, &error)) {
    std::fprintf(stderr, "serve: %s\n", error.c_str());
    return 2;
  }
  deployment::Aggregator aggregator(source.get(), aggregator_options);

  int exit_code = 0;
  {
    deployment::ApiServerOptions server_options = deployment::BuildApiServerOptions(config, trust);
    if (watch_cache != nullptr) {
      server_options.readiness_checks.emplace_back("informer-sync",
                                                   [watch_cache] { return watch_cache->Ready(); });
    }
    server_options.metrics = metrics;
    deployment::ApiServer server(
        std::move(server_options),
        [&aggregator](std::string_view ns, std::string_view name, deployment::SteadyTime deadline,
                      deployment::Snapshot* out) {
          return aggregator.Get(ns, name, out, deadline);
        },
        std::move(authenticator), std::move(authorizer));
    if (!server.Start(&error)) {
      std::fprintf(stderr, "serve: cannot start: %s\n", error.c_str());
      exit_code = 1;
    } else if (!StopPending(signals, "serve")) {
      std::printf("serving ModelDeploymentMetrics on %s\n", server.url().c_str());
      std::printf("  GET %s%s\n", server.url().c_str(),
                  config.api.MetricsPath("NS", "NAME").c_str());
      std::fflush(stdout);
      WaitForStop(signals, duration, "serve");
      server.Stop();
    }
  }
  return exit_code;
}

}  // namespace

int RunServe(const ServeArgs& args) {
  if (args.config_keys) {
    std::fputs(deployment::ServeConfigReference().c_str(), stdout);
    return 0;
  }
  std::optional<std::chrono::milliseconds> duration;
  if (!args.duration.empty()) {
    duration.emplace();
    base::ParseDuration(args.duration, &*duration);
  }
  return Serve(args.config, args.max_config_bytes, args.limits, duration);
}

}  // namespace modelmetrics::cli
