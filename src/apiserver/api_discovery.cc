// See api_discovery.h.
#include "api_discovery.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/text.h"
#include "custom_metrics_api.h"
#include "json_dump.h"

namespace modelmetrics::deployment {
namespace {

using OrderedJson = nlohmann::ordered_json;

constexpr std::string_view kDiscoveryGroup = "apidiscovery.k8s.io";
constexpr std::string_view kDiscoveryList = "APIGroupDiscoveryList";

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// One media range of an Accept header: its type and parameters (names lower-cased).
struct MediaRange {
  std::string type;
  std::vector<std::pair<std::string, std::string>> params;

  std::string_view Param(std::string_view name) const {
    for (const auto& [key, value] : params) {
      if (key == name) return value;
    }
    return {};
  }
};

MediaRange ParseMediaRange(std::string_view text) {
  MediaRange range;
  size_t semi = text.find(';');
  range.type = base::AsciiLower(Trim(text.substr(0, semi)));
  while (semi != std::string_view::npos) {
    text.remove_prefix(semi + 1);
    semi = text.find(';');
    const std::string_view param = text.substr(0, semi);
    const size_t eq = param.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view value = Trim(param.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    range.params.emplace_back(base::AsciiLower(Trim(param.substr(0, eq))), std::string(value));
  }
  return range;
}

std::string_view DiscoveryVersion(DiscoveryForm form) {
  return form == DiscoveryForm::kAggregatedV2 ? "v2" : "v2beta1";
}

OrderedJson GroupVersionJson(const MetricsApi& api) {
  return OrderedJson{{"groupVersion", api.GroupVersion()}, {"version", api.version}};
}

OrderedJson GroupJson(const MetricsApi& api, bool with_type) {
  OrderedJson group;
  if (with_type) {
    group["kind"] = "APIGroup";
    group["apiVersion"] = "v1";
  }
  group["name"] = api.group;
  group["versions"] = OrderedJson::array({GroupVersionJson(api)});
  group["preferredVersion"] = GroupVersionJson(api);
  return group;
}

OrderedJson AggregatedGroupJson(const MetricsApi& api) {
  const OrderedJson kind{{"group", api.group}, {"version", api.version}, {"kind", kMetricsKind}};
  OrderedJson subresource{{"subresource", kMetricsSubresource},
                          {"responseKind", kind},
                          {"verbs", OrderedJson::array({"get"})}};
  // Always an object: some client-go releases fail on a parent without one.
  OrderedJson parent{{"resource", kMetricsResource},
                     {"responseKind", {{"group", ""}, {"version", ""}, {"kind", ""}}},
                     {"scope", "Namespaced"},
                     {"singularResource", kMetricsSingularResource},
                     {"verbs", OrderedJson::array()},
                     {"subresources", OrderedJson::array({std::move(subresource)})}};
  OrderedJson object{{"resource", kMetricsObjectResource},
                     {"responseKind", kind},
                     {"scope", "Namespaced"},
                     {"singularResource", kMetricsObjectResource},
                     {"verbs", OrderedJson::array({"get"})},
                     {"shortNames", OrderedJson::array({kMetricsShortName})}};
  OrderedJson version{{"version", api.version},
                      {"resources", OrderedJson::array({std::move(object), std::move(parent)})},
                      {"freshness", "Current"}};
  return OrderedJson{{"metadata", {{"name", api.group}, {"creationTimestamp", nullptr}}},
                     {"versions", OrderedJson::array({std::move(version)})}};
}

}  // namespace

DiscoveryForm NegotiateDiscovery(std::string_view accept) {
  while (!accept.empty()) {
    const size_t comma = accept.find(',');
    const MediaRange range = ParseMediaRange(accept.substr(0, comma));
    accept = comma == std::string_view::npos ? std::string_view() : accept.substr(comma + 1);
    const std::string_view q = range.Param("q");
    if (!q.empty() &&
        std::all_of(q.begin(), q.end(), [](char c) { return c == '0' || c == '.'; })) {
      continue;  // q=0: not acceptable
    }
    const bool json = range.type == "application/json";
    const bool any = range.type == "*/*" || range.type == "application/*";
    if (json && range.Param("g") == kDiscoveryGroup && range.Param("as") == kDiscoveryList) {
      if (range.Param("v") == "v2") return DiscoveryForm::kAggregatedV2;
      if (range.Param("v") == "v2beta1") return DiscoveryForm::kAggregatedV2Beta1;
      continue;  // a version this server does not serve
    }
    if ((json || any) && range.Param("g").empty()) return DiscoveryForm::kLegacy;
  }
  return DiscoveryForm::kLegacy;
}

std::string DiscoveryContentType(DiscoveryForm form) {
  if (form == DiscoveryForm::kLegacy) return "application/json";
  return fmt::format("application/json;g={};v={};as={}", kDiscoveryGroup, DiscoveryVersion(form),
                     kDiscoveryList);
}

std::string ApisJson(const MetricsApi& api, DiscoveryForm form, bool custom_metrics) {
  const bool aggregated = form != DiscoveryForm::kLegacy;
  OrderedJson groups = OrderedJson::array(
      {aggregated ? AggregatedGroupJson(api) : GroupJson(api, /*with_type=*/false)});
  if (custom_metrics) groups.push_back(CustomMetricsApisGroupJson(aggregated));
  if (!aggregated) {
    OrderedJson list{{"kind", "APIGroupList"}, {"apiVersion", "v1"}};
    list["groups"] = std::move(groups);
    return DumpJson(list);
  }
  OrderedJson list{{"kind", kDiscoveryList},
                   {"apiVersion", fmt::format("{}/{}", kDiscoveryGroup, DiscoveryVersion(form))},
                   {"metadata", OrderedJson::object()}};
  list["items"] = std::move(groups);
  return DumpJson(list);
}

std::string ApiGroupJson(const MetricsApi& api) {
  return DumpJson(GroupJson(api, /*with_type=*/true));
}

std::string ApiResourceListJson(const MetricsApi& api) {
  OrderedJson object{{"name", kMetricsObjectResource},
                     {"singularName", kMetricsObjectResource},
                     {"namespaced", true},
                     {"kind", kMetricsKind},
                     {"verbs", OrderedJson::array({"get"})},
                     {"shortNames", OrderedJson::array({kMetricsShortName})}};
  OrderedJson subresource{{"name", fmt::format("{}/{}", kMetricsResource, kMetricsSubresource)},
                          {"singularName", ""},
                          {"namespaced", true},
                          {"kind", kMetricsKind},
                          {"verbs", OrderedJson::array({"get"})}};
  OrderedJson list{
      {"kind", "APIResourceList"}, {"apiVersion", "v1"}, {"groupVersion", api.GroupVersion()}};
  list["resources"] = OrderedJson::array({std::move(object), std::move(subresource)});
  return DumpJson(list);
}

}  // namespace modelmetrics::deployment
