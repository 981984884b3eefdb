// See custom_metrics_api.h.
#include "custom_metrics_api.h"

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/text.h"
#include "json_dump.h"

namespace modelmetrics::deployment {
namespace {

using OrderedJson = nlohmann::ordered_json;

constexpr CustomMetricsVersion kVersions[] = {CustomMetricsVersion::kV1Beta2,
                                              CustomMetricsVersion::kV1Beta1};
constexpr std::string_view kListKind = "MetricValueList";

std::string GroupVersion(CustomMetricsVersion version) {
  return fmt::format("{}/{}", kCustomMetricsGroup, VersionName(version));
}

std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> out;
  while (!path.empty()) {
    const size_t slash = path.find('/');
    if (slash != 0) out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

std::optional<CustomMetricsVersion> ParseVersion(std::string_view name) {
  for (CustomMetricsVersion version : kVersions) {
    if (VersionName(version) == name) return version;
  }
  return std::nullopt;
}

// The resources a version lists: every snapshot metric of a deployment, and of a Pod where a Pod
// has its own value.
std::vector<std::pair<std::string_view, const SnapshotMetric*>> Resources() {
  std::vector<std::pair<std::string_view, const SnapshotMetric*>> out;
  for (const std::string_view resource : {kModelDeploymentResource, kPodsResource}) {
    for (const SnapshotMetric& metric : SnapshotMetrics()) {
      if (resource == kPodsResource && !metric.PerPod()) continue;
      out.emplace_back(resource, &metric);
    }
  }
  return out;
}

OrderedJson GroupVersionJson(CustomMetricsVersion version) {
  return {{"groupVersion", GroupVersion(version)}, {"version", VersionName(version)}};
}

OrderedJson GroupJson(bool with_type) {
  OrderedJson group;
  if (with_type) {
    group["kind"] = "APIGroup";
    group["apiVersion"] = "v1";
  }
  group["name"] = kCustomMetricsGroup;
  group["versions"] = OrderedJson::array();
  for (CustomMetricsVersion version : kVersions)
    group["versions"].push_back(GroupVersionJson(version));
  group["preferredVersion"] = GroupVersionJson(kVersions[0]);
  return group;
}

// Aggregated discovery splits `parent/metric` as k8s.io/apiserver does for a subresource whose
// parent it does not serve: the parent with no kind and no verbs, each metric a subresource.
OrderedJson AggregatedVersionJson(CustomMetricsVersion version) {
  const OrderedJson list_kind{
      {"group", kCustomMetricsGroup}, {"version", VersionName(version)}, {"kind", kListKind}};
  OrderedJson resources = OrderedJson::array();
  for (const std::string_view parent : {kModelDeploymentResource, kPodsResource}) {
    OrderedJson subresources = OrderedJson::array();
    for (const auto& [resource, metric] : Resources()) {
      if (resource != parent) continue;
      subresources.push_back({{"subresource", metric->name},
                              {"responseKind", list_kind},
                              {"verbs", OrderedJson::array({"get"})}});
    }
    resources.push_back({{"resource", parent},
                         {"responseKind", {{"group", ""}, {"version", ""}, {"kind", ""}}},
                         {"scope", "Namespaced"},
                         {"verbs", OrderedJson::array()},
                         {"subresources", std::move(subresources)}});
  }
  return {{"version", VersionName(version)},
          {"resources", std::move(resources)},
          {"freshness", "Current"}};
}

OrderedJson SelectorJson(const MetricScope& scope) {
  if (scope.label.empty()) return nullptr;
  return {{"matchLabels", {{scope.label, scope.value}}}};
}

OrderedJson ItemJson(CustomMetricsVersion version, const MetricItem& item) {
  const bool pod = item.kind == "Pod";
  OrderedJson out{{"describedObject",
                   {{"kind", item.kind},
                    {"namespace", item.ns},
                    {"name", item.name},
                    {"apiVersion", pod ? "/v1" : kModelDeploymentApiVersion}}}};
  if (version == CustomMetricsVersion::kV1Beta2) {
    out["metric"] = {{"name", item.metric}, {"selector", SelectorJson(item.scope)}};
  } else {
    out["metricName"] = item.metric;
  }
  out["timestamp"] = FormatTime(item.reading.observed_at);
  if (item.reading.window_seconds) {
    // A window shorter than a second is reported as one: the field counts whole seconds.
    const int64_t seconds = std::max<int64_t>(1, std::llround(*item.reading.window_seconds));
    out[version == CustomMetricsVersion::kV1Beta2 ? "windowSeconds" : "window"] = seconds;
  }
  out["value"] = FormatQuantity(item.reading.value);
  if (version == CustomMetricsVersion::kV1Beta1) out["selector"] = SelectorJson(item.scope);
  return out;
}

}  // namespace

std::string_view VersionName(CustomMetricsVersion version) {
  return version == CustomMetricsVersion::kV1Beta2 ? "v1beta2" : "v1beta1";
}

Status ParseCustomMetricsPath(std::string_view path, CustomMetricsRequest* out) {
  *out = CustomMetricsRequest{};
  const std::vector<std::string_view> s = Segments(path);
  if (s.size() < 2 || s[0] != "apis" || s[1] != kCustomMetricsGroup) return Status::Ok();
  if (s.size() == 2) {
    out->kind = CustomMetricsPath::kGroup;
    return Status::Ok();
  }
  const std::optional<CustomMetricsVersion> version = ParseVersion(s[2]);
  if (!version) return Status::NotFound("the server could not find the requested resource");
  out->version = *version;
  if (s.size() == 3) {
    out->kind = CustomMetricsPath::kResourceList;
    return Status::Ok();
  }
  // namespaces/NS/RESOURCE/NAME/METRIC; root-scoped objects and namespace metrics are not served.
  if (s.size() != 8 || s[3] != "namespaces") {
    return Status::NotFound("the server could not find the requested resource");
  }
  std::string name;
  if (!base::PercentDecode(s[6], &name)) return Status::BadRequest("invalid request path");
  out->ns = std::string(s[4]);
  out->resource = std::string(s[5]);
  out->name = std::move(name);
  out->metric = std::string(s[7]);
  if (out->resource == kPodsResource) {
    if (out->name != "*") {
      return Status::NotFound(
          fmt::format("the server could not find the metric {} for pods {}: one Pod's metric is "
                      "read as pods/*?labelSelector=...",
                      out->metric, out->name));
    }
    out->kind = CustomMetricsPath::kPodsMetric;
  } else if (out->resource == kModelDeploymentResource) {
    out->kind = CustomMetricsPath::kObjectMetric;
  } else {
    return Status::NotFound(
        fmt::format("the server could not find the metric {} for {}", out->metric, out->resource));
  }
  return Status::Ok();
}

Status MetricSelector(std::string_view text, MetricScope* out) {
  *out = MetricScope{};
  std::string_view term = text;
  while (!term.empty() && term.front() == ' ') term.remove_prefix(1);
  while (!term.empty() && term.back() == ' ') term.remove_suffix(1);
  if (term.empty()) return Status::Ok();
  const std::string bad =
      fmt::format("metricLabelSelector \"{}\": expected one term, role=<role> or scope=<scope>",
                  base::Excerpt(text, 100));
  const size_t eq = term.find('=');
  if (eq == std::string_view::npos || eq == 0 || term[eq - 1] == '!' ||
      term.find(',') != std::string_view::npos) {
    return Status::BadRequest(bad);
  }
  out->label = std::string(term.substr(0, eq));
  out->value = std::string(term.substr(term.compare(eq, 2, "==") == 0 ? eq + 2 : eq + 1));
  if (out->value.empty() || (out->label != "role" && out->label != "scope")) {
    return Status::BadRequest(bad);
  }
  out->scope = out->label == "role" ? "engine/" + out->value : out->value;
  return Status::Ok();
}

std::string CustomMetricsGroupJson() { return DumpJson(GroupJson(/*with_type=*/true)); }

OrderedJson CustomMetricsApisGroupJson(bool aggregated) {
  if (!aggregated) return GroupJson(/*with_type=*/false);
  OrderedJson versions = OrderedJson::array();
  for (CustomMetricsVersion version : kVersions) versions.push_back(AggregatedVersionJson(version));
  return OrderedJson{{"metadata", {{"name", kCustomMetricsGroup}, {"creationTimestamp", nullptr}}},
                     {"versions", std::move(versions)}};
}

std::string CustomMetricsResourceListJson(CustomMetricsVersion version) {
  OrderedJson resources = OrderedJson::array();
  for (const auto& [resource, metric] : Resources()) {
    resources.push_back({{"name", fmt::format("{}/{}", resource, metric->name)},
                         {"singularName", ""},
                         {"namespaced", true},
                         {"kind", kListKind},
                         {"verbs", OrderedJson::array({"get"})}});
  }
  return DumpJson(OrderedJson{{"kind", "APIResourceList"},
                              {"apiVersion", "v1"},
                              {"groupVersion", GroupVersion(version)},
                              {"resources", std::move(resources)}});
}

std::string MetricValueListJson(CustomMetricsVersion version,
                                const std::vector<MetricItem>& items) {
  OrderedJson list{{"kind", kListKind},
                   {"apiVersion", GroupVersion(version)},
                   {"metadata", OrderedJson::object()},
                   {"items", OrderedJson::array()}};
  for (const MetricItem& item : items) list["items"].push_back(ItemJson(version, item));
  return DumpJson(list);
}

std::string FormatQuantity(double value) {
  // Never reached (ReadMetric and ReadPodMetric refuse such values), and never a number: a
  // client fails to decode it rather than read one.
  if (!std::isfinite(value)) return "NaN";
  if (std::fabs(value) >= 1e12) return fmt::format("{:.0f}", value);  // past micro's int64 range
  int64_t micro = std::llround(value * 1e6);
  if (micro % 1000 != 0) return fmt::format("{}u", micro);
  const int64_t milli = micro / 1000;
  if (milli % 1000 != 0) return fmt::format("{}m", milli);
  return fmt::format("{}", milli / 1000);
}

}  // namespace modelmetrics::deployment
