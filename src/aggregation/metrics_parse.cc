// See metrics_parse.h. The rows are §3, kept in exporters/.
// Section numbers (§n) cite docs/deployment-behaviour.md.
#include "metrics_parse.h"

#include <cmath>
#include <map>
#include <optional>

#include "modelmetrics/scrape.h"
#include "rank_copies.h"

namespace modelmetrics::deployment {
namespace {

// The name a row's value is read by: its family when the scrape has it, else the first older
// name it has (the family when it has none of them, so the absence is the family's).
std::string_view NameRead(const Scrape& scrape, std::string_view family,
                          const std::vector<OlderName>& older) {
  if (older.empty() || scrape.Find(family) != nullptr) return family;
  for (const OlderName& name : older) {
    if (scrape.Find(name.family) != nullptr) return name.family;
  }
  return family;
}

// A cache row's counters, by the names the scrape has (OlderCounters' rule).
std::optional<CounterPair> ReadCounters(const Scrape& scrape, const CacheRow& row) {
  std::string_view hits = row.hits;
  std::string_view queries = row.queries;
  if (scrape.Find(hits) == nullptr && scrape.Find(queries) == nullptr) {
    for (const OlderCounters& older : row.older) {
      if (scrape.Find(older.hits) != nullptr || scrape.Find(older.queries) != nullptr) {
        hits = older.hits;
        queries = older.queries;
        break;
      }
    }
  }
  const std::optional<double> hit_sum = scrape.Sum(hits);
  const std::optional<double> query_sum = scrape.Sum(queries);
  if (!hit_sum || !query_sum) return std::nullopt;
  return CounterPair{*hit_sum, *query_sum};
}

// The label of the row's series that its known labels do not cover (known_labels, exporter_
// profile.h), or nullopt; never for a row that knows no labels (it sums every one).
std::optional<std::string> UnknownSplit(const Scrape& scrape, const ExporterProfile& profile,
                                        std::string_view family, const Select& select,
                                        const KnownLabels& known_labels) {
  if (known_labels.empty()) return std::nullopt;
  std::vector<std::string_view> known = known_labels;
  for (const LabelMatch& match : select) known.push_back(match.name);
  if (profile.rank_copies) {
    known.insert(known.end(), profile.rank_copies->labels.begin(),
                 profile.rank_copies->labels.end());
  }
  return scrape.UnknownSplit(family, select, known);
}

void ReadGauges(const Scrape& scrape, const ExporterProfile& profile, PodMetrics* out) {
  for (const GaugeRow& gauge : profile.gauges) {
    if (gauge.split != Split::kNone) {
      const std::vector<std::string_view> by = ExporterProfile::SplitLabels(gauge.split, "");
      std::map<std::string, double> scoped;
      for (const auto& [values, sum] : scrape.SumBy(gauge.family, by)) {
        scoped[ExporterProfile::SplitScope(gauge.split, "", values)] += sum;
      }
      if (!scoped.empty()) out->scoped_gauges.emplace(gauge.key, std::move(scoped));
      continue;
    }
    const std::string_view family = NameRead(scrape, gauge.family, gauge.older);
    if (std::optional<std::string> label =
            UnknownSplit(scrape, profile, family, gauge.select, gauge.known_labels)) {
      out->unknown_split.emplace(gauge.key, std::move(*label));
    } else if (const std::optional<double> value = scrape.Sum(family, gauge.select)) {
      out->gauges.emplace(gauge.key, *value);
    } else if (const std::optional<double> bad = scrape.InvalidValue(family, gauge.select)) {
      out->invalid.emplace(gauge.key, *bad);
    }
  }
}

// A split window row: one value per group of its split labels.
void ReadScopedWindow(const Scrape& scrape, const WindowRow& window, PodMetrics* out) {
  const std::vector<std::string_view> by =
      ExporterProfile::SplitLabels(window.split, window.split_label);
  auto scope = [&window](const std::vector<std::string>& values) {
    return ExporterProfile::SplitScope(window.split, window.split_label, values);
  };
  std::map<std::string, WindowValue> scoped;
  if (window.kind == WindowKind::kHistogram) {
    for (const auto& [values, totals] : scrape.HistogramBy(window.family, by)) {
      WindowValue& value = scoped[scope(values)];
      value.sum += totals.sum;
      value.count += totals.count;
    }
  } else {
    for (const auto& [values, sum] : scrape.SumBy(window.family, by)) {
      scoped[scope(values)].count += sum;
    }
  }
  if (!scoped.empty()) out->scoped_windows.emplace(window.key, std::move(scoped));
}

void ReadWindows(const Scrape& scrape, const ExporterProfile& profile, PodMetrics* out) {
  for (const WindowRow& window : profile.windows) {
    if (window.from_reader) continue;
    if (window.split != Split::kNone) {
      ReadScopedWindow(scrape, window, out);
      continue;
    }
    const std::string_view family = NameRead(scrape, window.family, window.older);
    if (std::optional<std::string> label =
            UnknownSplit(scrape, profile, family, window.select, window.known_labels)) {
      out->unknown_split.emplace(window.key, std::move(*label));
      continue;
    }
    if (window.kind == WindowKind::kHistogram) {
      if (const std::optional<HistogramTotals> totals = scrape.Histogram(family, window.select)) {
        out->windows.emplace(window.key, WindowValue{totals->sum, totals->count});
      }
    } else if (const std::optional<double> value = scrape.Sum(family, window.select)) {
      out->windows.emplace(window.key, WindowValue{0, *value});
    }
    if (!out->windows.contains(window.key)) {
      if (const std::optional<double> bad = scrape.InvalidValue(family, window.select)) {
        out->invalid.emplace(window.key, *bad);
      }
    }
  }
}

void ReadUtilization(const Scrape& scrape, const ExporterProfile& profile, PodMetrics* out) {
  for (const UtilizationRow& row : profile.utilization) {
    const std::string_view family = NameRead(scrape, row.family, row.older);
    if (const std::optional<double> value = scrape.Mean(family)) {
      out->utilization.emplace(row.key, *value);
    } else if (const std::optional<double> bad = scrape.InvalidValue(family)) {
      out->invalid.emplace(row.key, *bad);
    }
  }
}

// Each sample is finite, but a sum of huge ones can overflow: such a key reads as absent.
void EraseOverflows(PodMetrics* out) {
  std::erase_if(out->gauges, [](const auto& g) { return !std::isfinite(g.second); });
  std::erase_if(out->utilization, [](const auto& g) { return !std::isfinite(g.second); });
  std::erase_if(out->cache, [](const auto& c) {
    return !std::isfinite(c.second.hits) || !std::isfinite(c.second.queries);
  });
  std::erase_if(out->windows, [](const auto& w) {
    return !std::isfinite(w.second.sum) || !std::isfinite(w.second.count);
  });
  for (auto& [key, scoped] : out->scoped_gauges) {
    std::erase_if(scoped, [](const auto& g) { return !std::isfinite(g.second); });
  }
  std::erase_if(out->scoped_gauges, [](const auto& g) { return g.second.empty(); });
  for (auto& [key, scoped] : out->scoped_windows) {
    std::erase_if(scoped, [](const auto& w) {
      return !std::isfinite(w.second.sum) || !std::isfinite(w.second.count);
    });
  }
  std::erase_if(out->scoped_windows, [](const auto& w) { return w.second.empty(); });
}

}  // namespace

void ReadPodMetrics(const Scrape& scrape, const ExporterProfile& profile, PodMetrics* out,
                    const Pod* pod) {
  if (pod != nullptr && profile.WritesRankCopies(*pod)) {
    ReadPodMetrics(OneCopyPerRank(scrape, *profile.rank_copies), profile, out);
    return;
  }
  *out = PodMetrics{};
  ReadGauges(scrape, profile, out);
  ReadUtilization(scrape, profile, out);
  for (const CacheRow& pair : profile.cache) {
    if (pair.from_reader) continue;
    if (const std::optional<CounterPair> counters = ReadCounters(scrape, pair)) {
      out->cache.emplace(pair.scope, *counters);
    }
  }
  ReadWindows(scrape, profile, out);
  if (profile.reader != nullptr) profile.reader(scrape, out);
  EraseOverflows(out);
}

Status ParsePodMetrics(std::string_view body, const ExporterProfile* profile, PodMetrics* out,
                       const Pod* pod) {
  *out = PodMetrics{};
  ScrapeOptions options;
  if (profile != nullptr) options.families = profile->Families();
  if (options.families.empty()) options.families.emplace_back("");  // read nothing, check all
  Scrape scrape;
  std::string parse_error;
  if (!scrape.Parse(body, options, &parse_error)) {
    return Status::InvalidArgument("parse Prometheus metrics: " + parse_error);
  }
  if (profile != nullptr) ReadPodMetrics(scrape, *profile, out, pod);
  return Status::Ok();
}

}  // namespace modelmetrics::deployment
