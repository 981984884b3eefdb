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

using base::Status;
using deployment::ServeConfig;

// With `tls_self_signed`: a certificate made at start, in private files removed at exit.
class ServingCertificate {
 public:
  ~ServingCertificate() {
    for (const std::string& path : {cert_, key_}) {
      if (!path.empty()) std::remove(path.c_str());
    }
  }
  Status Make(ServeConfig* config) {
    std::string cert_pem, key_pem;
    Status made = net::SelfSignedCertificate("modelmetrics", config->tls.self_signed_hosts,
                                             &cert_pem, &key_pem);
    if (made.ok()) made = base::WritePrivateTempFile("modelmetrics-serving-cert", cert_pem, &cert_);
    if (made.ok()) made = base::WritePrivateTempFile("modelmetrics-serving-key", key_pem, &key_);
    if (!made.ok()) return made;
    config->tls.cert_file = cert_;
    config->tls.key_file = key_;
    return Status::Ok();
  }

 private:
  std::string cert_, key_;
};

// Where objects come from: the objects file, list+watch caches of the Kubernetes API (the
// default with a kubeconfig or in-cluster), or the API read on every snapshot.
Status MakeObjectSource(const ServeConfig& config, deployment::KubeApiClient* kube,
                        const std::shared_ptr<deployment::ServerMetrics>& metrics,
                        deployment::WatchCache** watch_cache,
                        std::unique_ptr<deployment::ObjectSource>* out) {
  if (!config.kube.objects_file.empty()) {
    auto file = std::make_unique<deployment::FileObjectSource>();
    if (Status loaded = file->Load(config.kube.objects_file, config.kube.max_objects_bytes);
        !loaded.ok()) {
      return loaded.Prefixed("objects_file: ");
    }
    *out = std::move(file);
    return Status::Ok();
  }
  if (!config.kube.watch_objects) {
    *out = std::make_unique<deployment::KubeApiSource>(kube);
    return Status::Ok();
  }
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
  *out = std::move(cache);
  return Status::Ok();
}

Status OpenKubeApi(const ServeConfig& config, size_t max_config_bytes,
                   std::unique_ptr<deployment::KubeApiClient>* out) {
  deployment::KubeConfig kube_config;
  const Status loaded = config.kube.in_cluster ? deployment::LoadInClusterConfig(&kube_config)
                                               : deployment::LoadKubeconfig(
                                                     config.kube.kubeconfig, config.kube.context,
                                                     &kube_config, max_config_bytes);
  if (!loaded.ok()) return loaded;
  *out = std::make_unique<deployment::KubeApiClient>(std::move(kube_config));
  return Status::Ok();
}

// The aggregator's limits, trust and sample source from the configuration; its Pod reads counted
// in `metrics`. An error when the store's credential files do not load.
Status MakeAggregatorOptions(const ServeConfig& config,
                             const std::shared_ptr<deployment::ServerMetrics>& metrics,
                             deployment::AggregatorOptions* options) {
  config.ApplyReadLimits(options);
  options->ca_file = config.reads.pod_ca_file;
  options->on_pod_read = [metrics](std::string_view outcome) { metrics->PodRead(outcome); };
  if (config.reads.source != deployment::SampleSource::kPrometheus) return Status::Ok();
  deployment::PrometheusSourceOptions store = config.reads.prometheus;
  if (Status loaded = deployment::LoadPrometheusCredentials(
          config.reads.prometheus_bearer_token_file, config.reads.prometheus_basic_password_file,
          &store);
      !loaded.ok()) {
    return loaded.Prefixed("prometheus: ");
  }
  options->pod_source = std::make_shared<deployment::PrometheusSource>(store);
  return Status::Ok();
}

// Prints "serve: <message>" and gives `exit_code` (0 when `status` is ok).
int Report(const Status& status, int exit_code, const char* what = "") {
  if (status.ok()) return 0;
  std::fprintf(stderr, "serve: %s%s\n", what, status.message().c_str());
  return exit_code;
}

int Serve(const std::string& config_path, size_t max_config_bytes, const ReadLimitFlags& limits,
          std::optional<std::chrono::milliseconds> duration) {
  // Before anything starts a thread (the API client, the aggregator and the server all do).
  const ScopedStopSignals stop_signals;
  const sigset_t& signals = stop_signals.signals();

  ServeConfig config;
  Status status = deployment::LoadServeConfig(config_path, &config, max_config_bytes);
  if (status.ok()) status = ApplyReadLimitFlags(limits, &config);
  if (!status.ok()) return Report(status, 2);
  if (StopPending(signals, "serve")) return 0;
  ServingCertificate self_signed;
  if (config.tls.self_signed) {
    if (Status made = self_signed.Make(&config); !made.ok()) return Report(made, 1);
  }

  // The Kubernetes API client, when objects or reviews come from the cluster.
  std::unique_ptr<deployment::KubeApiClient> kube;
  if (config.UsesKubeApi()) {
    if (Status opened = OpenKubeApi(config, max_config_bytes, &kube); !opened.ok()) {
      return Report(opened, 2);
    }
    if (StopPending(signals, "serve")) return 0;
  }

  auto metrics = std::make_shared<deployment::ServerMetrics>();
  deployment::WatchCache* watch_cache = nullptr;
  std::unique_ptr<deployment::ObjectSource> source;
  if (Status made = MakeObjectSource(config, kube.get(), metrics, &watch_cache, &source);
      !made.ok()) {
    return Report(made, 2);
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
  std::unique_ptr<deployment::Authenticator> authenticator;
  std::unique_ptr<deployment::Authorizer> authorizer;
  status = deployment::BuildAuthenticator(config, &authenticator, kube.get(), trust, metrics);
  if (status.ok()) status = deployment::BuildAuthorizer(config, kube.get(), &authorizer, metrics);
  if (!status.ok()) return Report(status, 2);
  if (StopPending(signals, "serve")) return 0;

  deployment::AggregatorOptions aggregator_options;
  if (Status made = MakeAggregatorOptions(config, metrics, &aggregator_options); !made.ok()) {
    return Report(made, 2);
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
    server_options.objects = source.get();
    deployment::ApiServer server(
        std::move(server_options),
        [&aggregator](std::string_view ns, std::string_view name, deployment::SteadyTime deadline,
                      deployment::Snapshot* out) {
          return aggregator.Get(ns, name, out, deadline);
        },
        std::move(authenticator), std::move(authorizer));
    if (Status started = server.Start(); !started.ok()) {
      exit_code = Report(started, 1, "cannot start: ");
    } else if (!StopPending(signals, "serve")) {
      std::printf("serving ModelDeploymentMetrics on %s\n", server.url().c_str());
      std::printf("  GET %s%s\n", server.url().c_str(),
                  config.api.MetricsPath("NS", "NAME").c_str());
      if (config.autoscaling.custom_metrics) {
        std::printf(
            "  GET %s/apis/custom.metrics.k8s.io/v1beta2/namespaces/NS/"
            "modeldeployments.worker.gpustack.ai/NAME/METRIC\n",
            server.url().c_str());
      }
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
