// See metrics_api.h.
#include "aggregation/metrics_api.h"

#include <fmt/format.h>

#include "kube/kube_names.h"

namespace modelmetrics::deployment {

std::string MetricsApi::Validate() const {
  if (std::string why = ValidateApiGroup(group); !why.empty()) {
    return fmt::format("api_group `{}`: {}", group, why);
  }
  if (std::string why = ValidateApiVersion(version); !why.empty()) {
    return fmt::format("api_version `{}`: {}", version, why);
  }
  return "";
}

std::string MetricsApi::MetricsPath(std::string_view ns, std::string_view name) const {
  return fmt::format("{}/namespaces/{}/{}/{}/{}", VersionPath(), ns, kMetricsResource, name,
                     kMetricsSubresource);
}

std::string MetricsApi::ObjectPath(std::string_view ns, std::string_view name) const {
  return fmt::format("{}/namespaces/{}/{}/{}", VersionPath(), ns, kMetricsObjectResource, name);
}

}  // namespace modelmetrics::deployment
