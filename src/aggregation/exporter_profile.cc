// See exporter_profile.h.
#include "exporter_profile.h"

#include <algorithm>

#include <fmt/format.h>

#include "kube/objects.h"
#include "reasons.h"

namespace modelmetrics::deployment {

std::vector<std::string> ExporterProfile::Families() const {
  std::vector<std::string> names;
  auto add = [&names](std::string_view name) {
    if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end()) {
      names.emplace_back(name);
    }
  };
  for (const GaugeRow& row : gauges) {
    add(row.family);
    for (const OlderName& older : row.older) add(older.family);
  }
  for (const UtilizationRow& row : utilization) {
    add(row.family);
    for (const OlderName& older : row.older) add(older.family);
  }
  for (const CacheRow& row : cache) {
    if (row.from_reader) continue;
    add(row.hits);
    add(row.queries);
    for (const OlderCounters& older : row.older) {
      add(older.hits);
      add(older.queries);
    }
  }
  for (const WindowRow& row : windows) {
    if (row.from_reader) continue;
    add(row.family);
    for (const OlderName& older : row.older) add(older.family);
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

std::string AbsentUnderAnyName(std::string_view family, const std::vector<OlderName>& older) {
  std::string names(family);
  for (const OlderName& name : older) {
    names += fmt::format(", then {} ({})", name.family, name.until);
  }
  return fmt::format(fmt::runtime(reason::kAbsentUnderAnyName), names);
}

bool PassesFlag(const Pod& pod, std::string_view flag) {
  for (const Container& container : pod.containers) {
    for (const std::vector<std::string>* argv : {&container.command, &container.args}) {
      for (const std::string& entry : *argv) {
        if (FlagName(entry) == flag) return true;
      }
    }
  }
  return false;
}

bool ExporterProfile::WritesRankCopies(const Pod& pod) const {
  return rank_copies && PassesFlag(pod, rank_copies->flag);
}

std::vector<std::string> DanglingReferences(const ExporterProfile& profile) {
  std::vector<std::string> out;
  const auto window = [&](std::string_view where, std::string_view key) {
    const bool found = std::any_of(profile.windows.begin(), profile.windows.end(),
                                   [key](const WindowRow& w) { return w.key == key; });
    if (!found) out.push_back(fmt::format("{}: no window `{}`", where, key));
  };
  const auto not_partial = [&](std::string_view where, std::string_view reason) {
    if (!reason.empty() && !IsNotPartialReason(reason)) {
      out.push_back(fmt::format("{}: `{}` would set partial", where, reason));
    }
  };
  if (!profile.idle_key.empty()) window("idle_key", profile.idle_key);
  not_partial("idle_reason", profile.idle_reason);
  for (size_t i = 0; i < profile.windows.size(); ++i) {
    if (!profile.windows[i].pair.empty()) {
      window(fmt::format("windows[{}].pair", i), profile.windows[i].pair);
    }
    if (profile.windows[i].split != Split::kNone && !profile.windows[i].select.empty()) {
      out.push_back(fmt::format("windows[{}].select: a split row reads every series", i));
    }
    if (profile.windows[i].split != Split::kNone && !profile.windows[i].older.empty()) {
      out.push_back(fmt::format("windows[{}].older: a split row has one name", i));
    }
    if (profile.windows[i].split != Split::kNone && !profile.windows[i].known_labels.empty()) {
      out.push_back(fmt::format("windows[{}].known_labels: a split row sums its groups", i));
    }
    not_partial(fmt::format("windows[{}].lazy_reason", i), profile.windows[i].lazy_reason);
  }
  for (size_t i = 0; i < profile.gauges.size(); ++i) {
    if (profile.gauges[i].split != Split::kNone && !profile.gauges[i].select.empty()) {
      out.push_back(fmt::format("gauges[{}].select: a split row reads every series", i));
    }
    if (profile.gauges[i].split != Split::kNone && !profile.gauges[i].older.empty()) {
      out.push_back(fmt::format("gauges[{}].older: a split row has one name", i));
    }
    if (profile.gauges[i].split != Split::kNone && !profile.gauges[i].known_labels.empty()) {
      out.push_back(fmt::format("gauges[{}].known_labels: a split row sums its groups", i));
    }
  }
  if (profile.error_ratio) {
    window("error_ratio.requests", profile.error_ratio->requests);
    window("error_ratio.errors", profile.error_ratio->errors);
  }
  for (size_t i = 0; i < profile.ratios.size(); ++i) {
    window(fmt::format("ratios[{}].numerator", i), profile.ratios[i].numerator);
    window(fmt::format("ratios[{}].denominator", i), profile.ratios[i].denominator);
    not_partial(fmt::format("ratios[{}].no_denominator", i), profile.ratios[i].no_denominator);
  }
  if (profile.rank_copies &&
      std::find(profile.rank_copies->labels.begin(), profile.rank_copies->labels.end(),
                profile.rank_copies->order) == profile.rank_copies->labels.end()) {
    out.push_back(
        fmt::format("rank_copies.order: `{}` is not a copy label", profile.rank_copies->order));
  }
  return out;
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
