// See exporter_profile.h.
#include "deployment/exporter_profile.h"

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
