// See sample_source_flags.h.
#include "sample_source_flags.h"

#include <utility>

#include "base/duration.h"

namespace modelmetrics::cli {

base::Status OpenSampleSource(const SampleSourceFlags& flags,
                              std::optional<std::chrono::milliseconds> window,
                              std::shared_ptr<deployment::PodMetricsSource>* out) {
  out->reset();
  if (!flags.from_store()) return base::Status::Ok();
  deployment::PrometheusSourceOptions store = flags.store;
  if (window) store.window = *window;
  if (!flags.stale_after.empty()) base::ParseDuration(flags.stale_after, &store.stale_after);
  if (!flags.settle.empty()) base::ParseDuration(flags.settle, &store.settle);
  if (std::string why = deployment::ValidatePrometheusSourceOptions(store); !why.empty()) {
    return base::Status::InvalidArgument(std::move(why));
  }
  if (base::Status loaded =
          deployment::LoadPrometheusCredentials(flags.token_file, flags.password_file, &store);
      !loaded.ok()) {
    return loaded.Prefixed("prometheus credentials: ");
  }
  *out = std::make_shared<deployment::PrometheusSource>(std::move(store));
  return base::Status::Ok();
}

}  // namespace modelmetrics::cli
