// See sample_source_flags.h.
#include "sample_source_flags.h"

#include <utility>

#include "base/duration.h"

namespace modelmetrics::cli {

void AddSampleSourceFlags(CLI::App* command, SampleSourceFlags* flags) {
  command
      ->add_option("--source", flags->samples,
                   "Where samples come from: scrape (the Pods) or prometheus (a "
                   "Prometheus-compatible store, --prometheus-url)")
      ->capture_default_str()
      ->check(CLI::IsMember({std::string(deployment::kSampleSourceScrape),
                             std::string(deployment::kSampleSourcePrometheus)}));
  command->add_option("--prometheus-url", flags->store.url,
                      "The store's API base, e.g. http://127.0.0.1:9090 or a VictoriaMetrics "
                      "cluster's http://vmselect:8481/select/0/prometheus");
  command
      ->add_option("--stale-after", flags->stale_after,
                   "With --source prometheus: a Pod whose newest sample is older is missing "
                   "(default 90s)")
      ->check(base::CheckDuration);
  command
      ->add_option("--settle", flags->settle,
                   "With --source prometheus: read the store as of this long ago, so a store fed "
                   "by remote write shows only complete scrapes (default 0s)")
      ->check(base::CheckDuration);
  command
      ->add_option("--prometheus-namespace-label", flags->store.namespace_label,
                   "The store's label holding the Pod's namespace")
      ->capture_default_str();
  command
      ->add_option("--prometheus-pod-label", flags->store.pod_label,
                   "The store's label holding the Pod's name")
      ->capture_default_str();
  command->add_option("--prometheus-selector", flags->store.selector,
                      "Extra label matchers for every query, e.g. 'job=\"vllm\"'");
  command
      ->add_option("--prometheus-replica-label", flags->store.replica_labels,
                   "A label telling HA replicas' copies of a series apart (one replica's are "
                   "read); repeat for several, '' for none")
      ->capture_default_str();
  command
      ->add_option("--prometheus-pod-limit", flags->store.pod_limit,
                   "The most Pods one snapshot reads from the store")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command->add_option("--prometheus-ca-file", flags->store.ca_file,
                      "PEM bundle to trust for an HTTPS store");
  command->add_option("--prometheus-bearer-token-file", flags->token_file,
                      "A file holding the store's bearer token");
  command->add_option("--prometheus-user", flags->store.basic_user,
                      "HTTP basic authentication user for the store");
  command->add_option("--prometheus-password-file", flags->password_file,
                      "A file holding that user's password");
}

std::shared_ptr<deployment::PodMetricsSource> OpenSampleSource(
    const SampleSourceFlags& flags, std::optional<std::chrono::milliseconds> window,
    std::string* error) {
  error->clear();
  if (!flags.from_store()) return nullptr;
  deployment::PrometheusSourceOptions store = flags.store;
  if (window) store.window = *window;
  if (!flags.stale_after.empty()) base::ParseDuration(flags.stale_after, &store.stale_after);
  if (!flags.settle.empty()) base::ParseDuration(flags.settle, &store.settle);
  *error = deployment::ValidatePrometheusSourceOptions(store);
  if (error->empty() && !deployment::LoadPrometheusCredentials(
                            flags.token_file, flags.password_file, &store, error)) {
    *error = "prometheus credentials: " + *error;
  }
  if (!error->empty()) return nullptr;
  return std::make_shared<deployment::PrometheusSource>(std::move(store));
}

}  // namespace modelmetrics::cli
