// See sample_source_flags.h.
#include "sample_source_flags.h"

#include <utility>

#include "base/duration.h"

namespace modelmetrics::cli {

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
