// See exporter_profile.h.
#include "exporter_profile.h"

#include <algorithm>

namespace modelmetrics::deployment {

std::vector<std::string> ExporterProfile::Families() const {
  std::vector<std::string> names;
  auto add = [&names](std::string_view name) {
    if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end()) {
      names.emplace_back(name);
    }
  };
  for (const GaugeRow& row : gauges) add(row.family);
  for (const CacheRow& row : cache) {
    if (row.from_reader) continue;
    add(row.hits);
    add(row.queries);
  }
  for (const WindowRow& row : windows) {
    if (!row.from_reader) add(row.family);
  }
  for (const ReaderFamily& family : reader_families) add(family.name);
  return names;
}

std::vector<std::string_view> ExporterProfile::SplitLabelsOfRows() const {
  std::vector<std::string_view> out;
  const auto add = [&out](Split split, std::string_view split_label) {
    for (const std::string_view label : SplitLabels(split, split_label)) {
      if (std::find(out.begin(), out.end(), label) == out.end()) out.push_back(label);
    }
  };
  for (const GaugeRow& row : gauges) add(row.split, "");
  for (const WindowRow& row : windows) add(row.split, row.split_label);
  return out;
}

std::vector<std::string_view> ExporterProfile::SplitLabels(Split split,
                                                           std::string_view split_label) {
  switch (split) {
    case Split::kNone:
      return {};
    case Split::kStage:
      return {"stage"};
    case Split::kStageReplica:
      return {"stage", "replica"};
    case Split::kEdge:
      return {"from_stage", "from_replica", "to_stage", "to_replica"};
    case Split::kLabel:
      return {split_label};
  }
  return {};
}

std::string ExporterProfile::SplitScope(Split split, std::string_view split_label,
                                        const std::vector<std::string>& v) {
  switch (split) {
    case Split::kNone:
      return "";
    case Split::kStage:
      return "stage/" + v.at(0);
    case Split::kStageReplica:
      return "stage/" + v.at(0) + "." + v.at(1);
    case Split::kEdge:
      return "edge/" + v.at(0) + "." + v.at(1) + "->" + v.at(2) + "." + v.at(3);
    case Split::kLabel:
      return std::string(split_label) + "/" + v.at(0);
  }
  return "";
}

std::string_view FlagName(std::string_view entry) {
  const size_t eq = entry.find('=');
  return eq == std::string_view::npos ? entry : entry.substr(0, eq);
}

bool ExporterProfile::AppliesTo(Applies applies, bool pd, bool prefill, bool decode) {
  switch (applies) {
    case Applies::kAlways:
      return true;
    case Applies::kUnlessPdPrefill:
      return !(pd && prefill);
    case Applies::kPdPrefillOnly:
      return pd && prefill;
    case Applies::kPdDecodeOnly:
      return pd && decode;
  }
  return true;
}

}  // namespace modelmetrics::deployment
