// See metrics_api_reader.h.
#include "aggregation/metrics_api_reader.h"

#include <string>

#include <fmt/format.h>

namespace modelmetrics::deployment {

std::string MetricsApiPath(const MetricsApi& api, std::string_view ns, std::string_view name) {
  return fmt::format("{}/{}", NamespacePath(api.VersionPath(), ns, kMetricsResource, name),
                     kMetricsSubresource);
}

ApiStatus MetricsApiReader::Get(std::string_view ns, std::string_view name, Snapshot* out,
                                std::optional<SteadyTime> deadline) {
  std::string body;
  const std::string path = MetricsApiPath(api_, ns, name);
  ApiStatus status = client_->Request("GET", path, "", &body, deadline);
  if (!status.ok()) return status;
  std::string error;
  if (!SnapshotFromJson(body, out, &error, api_.GroupVersion())) {
    return ApiStatus::Internal("decode GET " + path + ": " + error);
  }
  if (out->namespace_ != ns || out->name != name) {
    return ApiStatus::Internal("GET " + path + " answered for " + out->namespace_ + "/" +
                               out->name);
  }
  return ApiStatus::Ok();
}

}  // namespace modelmetrics::deployment
