// See metrics_api_reader.h.
#include "aggregation/metrics_api_reader.h"

#include <string>

#include <fmt/format.h>

namespace modelmetrics::deployment {

std::string MetricsApiPath(const MetricsApi& api, std::string_view ns, std::string_view name) {
  return fmt::format("{}/{}", NamespacePath(api.VersionPath(), ns, kMetricsResource, name),
                     kMetricsSubresource);
}

Status MetricsApiReader::Get(std::string_view ns, std::string_view name, Snapshot* out,
                             std::optional<SteadyTime> deadline) {
  std::string body;
  const std::string path = MetricsApiPath(api_, ns, name);
  Status status = client_->Request("GET", path, "", &body, deadline);
  if (!status.ok()) return status;
  if (const Status decoded = SnapshotFromJson(body, out, api_.GroupVersion()); !decoded.ok()) {
    return Status::Internal("decode GET " + path + ": " + decoded.message());
  }
  if (out->namespace_ != ns || out->name != name) {
    return Status::Internal("GET " + path + " answered for " + out->namespace_ + "/" + out->name);
  }
  return Status::Ok();
}

}  // namespace modelmetrics::deployment
