// See exporter_catalog.h.
#include "aggregation/exporter_catalog.h"

#include <string>
#include <string_view>
#include <vector>

#include "exporter_profile.h"
#include "exporter_registry.h"

namespace modelmetrics::deployment {
namespace {

using nlohmann::json;

std::string SelectText(const Select& select) {
  std::string out = "{";
  for (const LabelMatch& match : select) {
    if (out.size() > 1) out += ",";
    out.append(match.name).append(match.negate ? "!=\"" : "=\"").append(match.value) += "\"";
  }
  return out + "}";
}

json Row(std::string_view key, std::string_view kind, std::string_view family,
         std::string_view type) {
  return {{"key", key}, {"kind", kind}, {"family", family}, {"type", type}};
}

// The fields every gauge and window row has beyond its name.
void AddDetails(json* row, const Select& select, Split split, std::string_view split_label,
                bool lazy, const std::vector<OlderName>& older, const KnownLabels& known) {
  if (!select.empty()) (*row)["select"] = SelectText(select);
  if (!known.empty()) (*row)["known_labels"] = known;
  if (split != Split::kNone) {
    (*row)["split"] = ExporterProfile::SplitLabels(split, split_label);
  }
  (*row)["lazy"] = lazy;
  json names = json::array();
  for (const OlderName& name : older)
    names.push_back({{"family", name.family}, {"until", name.until}});
  (*row)["older"] = std::move(names);
}

json Rows(const ExporterProfile& profile) {
  json rows = json::array();
  for (const GaugeRow& gauge : profile.gauges) {
    json row = Row(gauge.key, "gauge", gauge.family, "gauge");
    AddDetails(&row, gauge.select, gauge.split, "", gauge.lazy, gauge.older, gauge.known_labels);
    rows.push_back(std::move(row));
  }
  for (const UtilizationRow& used : profile.utilization) {
    json row = Row(used.key, "utilization", used.family, "gauge");
    AddDetails(&row, {}, Split::kNone, "", false, used.older, {});
    rows.push_back(std::move(row));
  }
  for (const WindowRow& window : profile.windows) {
    const std::string_view type = window.kind == WindowKind::kHistogram ? "histogram" : "counter";
    json row = Row(window.key, window.from_reader ? "reader" : "window", window.family, type);
    AddDetails(&row, window.select, window.split, window.split_label, window.lazy, window.older,
               window.known_labels);
    rows.push_back(std::move(row));
  }
  for (const CacheRow& cache : profile.cache) {
    for (const bool hits : {true, false}) {
      if (!hits && cache.queries == cache.hits) continue;  // one family (a reader's), listed once
      json row = Row(cache.scope, cache.from_reader ? "reader" : "cache",
                     hits ? cache.hits : cache.queries, "counter");
      json names = json::array();
      for (const OlderCounters& older : cache.older) {
        names.push_back({{"family", hits ? older.hits : older.queries}, {"until", older.until}});
      }
      row["lazy"] = false;
      row["older"] = std::move(names);
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

std::string_view ShapeName(DeploymentShape shape) {
  switch (shape) {
    case DeploymentShape::kAggregated:
      return "aggregated";
    case DeploymentShape::kPrefillDecode:
      return "prefill-decode";
    case DeploymentShape::kAny:
      break;
  }
  return "any";
}

}  // namespace

json ExporterCatalog() {
  json out = json::array();
  for (const ExporterProfile* profile : BuiltinExporters()) {
    json entry = {{"name", profile->name},
                  {"role", profile->role == PodRole::kEngine ? "engine" : "router"},
                  {"shape", ShapeName(profile->shape)},
                  {"rows", Rows(*profile)}};
    if (const std::optional<RankCopies>& copies = profile->rank_copies) {
      entry["rank_copies"] = {
          {"flag", copies->flag}, {"labels", copies->labels}, {"order", copies->order}};
    }
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace modelmetrics::deployment
