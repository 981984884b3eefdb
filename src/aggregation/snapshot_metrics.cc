// See snapshot_metrics.h.
#include "aggregation/snapshot_metrics.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "exporter_profile.h"
#include "exporter_registry.h"
#include "reasons.h"

namespace modelmetrics::deployment {
namespace {

constexpr std::string_view kHitRateSuffix = "-hit-rate";
constexpr std::string_view kMaxSuffix = "-max";

// The family a window key of `profile` reads ("" when none).
std::string_view WindowFamily(const ExporterProfile& profile, std::string_view key) {
  for (const WindowRow& row : profile.windows) {
    if (row.key == key) return row.family;
  }
  return "";
}

class Catalog {
 public:
  void Add(std::string_view name, MetricKind kind, std::string source, std::string_view tier = "") {
    SnapshotMetric& metric = metrics_[std::string(name)];
    if (metric.name.empty()) {
      metric.name = std::string(name);
      metric.kind = kind;
      metric.tier = std::string(tier);
    }
    if (!source.empty() &&
        std::find(metric.sources.begin(), metric.sources.end(), source) == metric.sources.end()) {
      metric.sources.push_back(std::move(source));
    }
  }

  void AddProfile(const ExporterProfile& p) {
    for (const GaugeRow& row : p.gauges) Add(row.key, MetricKind::kGauge, std::string(row.family));
    for (const WindowRow& row : p.windows) {
      Add(row.key, MetricKind::kWindow, std::string(row.family));
    }
    if (p.error_ratio) {
      AddRatio(p, "error-ratio", p.error_ratio->requests, p.error_ratio->errors);
    }
    for (const RatioRow& row : p.ratios) AddRatio(p, row.key, row.numerator, row.denominator);
    for (const CacheRow& row : p.cache) {
      const std::string name = std::string(row.scope) + std::string(kHitRateSuffix);
      Add(name, MetricKind::kCacheHitRate, std::string(row.scope), row.scope);
      // A Pod without the counters at all is named by this source, not the tier's.
      Add(name, MetricKind::kCacheHitRate, std::string(source::kCacheCounters), row.scope);
    }
    for (const UtilizationRow& row : p.utilization) {
      Add(row.key, MetricKind::kUtilizationMean, std::string(row.family));
      Add(std::string(row.key) + std::string(kMaxSuffix), MetricKind::kUtilizationMax,
          std::string(row.family));
    }
  }

  // A ratio's own entries name "a+b"; a side that has no value names its own family.
  void AddRatio(const ExporterProfile& p, std::string_view name, std::string_view a,
                std::string_view b) {
    const std::string_view first = WindowFamily(p, a);
    const std::string_view second = WindowFamily(p, b);
    Add(name, MetricKind::kWindow, fmt::format("{}+{}", first, second));
    Add(name, MetricKind::kWindow, std::string(first));
    Add(name, MetricKind::kWindow, std::string(second));
  }

  std::vector<SnapshotMetric> Sorted() && {
    std::vector<SnapshotMetric> out;
    for (auto& [name, metric] : metrics_) out.push_back(std::move(metric));
    return out;  // std::map: by name
  }

 private:
  std::map<std::string, SnapshotMetric> metrics_;
};

// A missing[] source without a split row's " (<scope>)", and that scope ("" when none).
std::pair<std::string_view, std::string_view> SplitSource(std::string_view source) {
  if (source.ends_with(')')) {
    const size_t open = source.rfind(" (");
    if (open != std::string_view::npos) {
      return {source.substr(0, open), source.substr(open + 2, source.size() - open - 3)};
    }
  }
  return {source, ""};
}

const PodReport* FindPod(const Snapshot& snapshot, std::string_view pod) {
  const auto it =
      std::lower_bound(snapshot.pods.begin(), snapshot.pods.end(), pod,
                       [](const PodReport& p, std::string_view name) { return p.pod < name; });
  return it != snapshot.pods.end() && it->pod == pod ? &*it : nullptr;
}

// Whether `entry` takes part of `metric`'s value in `scope` (""; every scope) away, per the
// header's rule. `only_pod`: just that Pod's entries count.
bool Blocks(const Snapshot& snapshot, const SnapshotMetric& metric, std::string_view scope,
            const Missing& entry, std::string_view only_pod = "") {
  const std::string_view reason = entry.reason;
  if (IsNotPartialReason(reason) && reason != reason::kUtilizationAbsent) return false;
  if (!only_pod.empty() && entry.pod != only_pod) return false;
  const auto [from, entry_scope] = SplitSource(entry.source);
  const bool whole_pod = from == source::kScrape || from == "engine" || from == "router";
  const bool own =
      std::find(metric.sources.begin(), metric.sources.end(), from) != metric.sources.end();
  if (entry.pod.empty()) {
    // Deployment-level: a coverage entry names its scope; the Pod limit names none.
    if (own) return scope.empty() || entry_scope.empty() || entry_scope == scope;
    return scope.empty() || from == scope || from == source::kPodDiscovery;
  }
  if (!own && !whole_pod) return false;
  if (scope.empty()) return true;
  if (!entry_scope.empty()) return entry_scope == scope;
  const PodReport* pod = FindPod(snapshot, entry.pod);
  return pod == nullptr || pod->scope == scope;  // a Pod of unknown scope may be of this one
}

Status FirstBlock(const Snapshot& snapshot, const SnapshotMetric& metric, std::string_view scope,
                  std::string_view only_pod = "") {
  for (const Missing& entry : snapshot.missing) {
    if (!Blocks(snapshot, metric, scope, entry, only_pod)) continue;
    return Status::NotFound(fmt::format(
        "metric {} has no value: missing[] lists {}{} ({})", metric.name, entry.source,
        entry.pod.empty() ? std::string() : " of Pod " + entry.pod, entry.reason.str()));
  }
  return Status::Ok();
}

bool InScope(std::string_view entry_scope, std::string_view scope) {
  return scope.empty() || entry_scope == scope;
}

// Sums, or means weighted by samples, of the windows named `name`.
bool ReadWindows(const Snapshot& s, std::string_view name, std::string_view scope,
                 MetricReading* out) {
  double sum = 0, weighted = 0, samples = 0, plain = 0;
  int entries = 0;
  bool rate = false;
  for (const std::vector<Window>* list : {&s.latency, &s.traffic, &s.transfer}) {
    for (const Window& w : *list) {
      if (w.name != name || !InScope(w.scope, scope)) continue;
      rate = w.unit.ends_with("/second");
      sum += w.value;
      weighted += w.value * w.samples;
      samples += w.samples;
      plain += w.value;
      ++entries;
      out->window_seconds = std::max(out->window_seconds.value_or(0), w.window_seconds);
      out->observed_at = std::max(out->observed_at, w.observed_at);
    }
  }
  if (entries == 0) return false;
  out->value = rate ? sum : samples > 0 ? weighted / samples : plain / entries;
  return true;
}

bool ReadHitRate(const Snapshot& s, const SnapshotMetric& metric, std::string_view scope,
                 MetricReading* out) {
  double hits = 0, queries = 0;
  bool any = false;
  for (const CacheHit& h : s.cache_hits) {
    if (h.scope != metric.tier) continue;
    if (!scope.empty()) {
      const PodReport* pod = FindPod(s, h.pod);
      if (pod == nullptr || pod->scope != scope) continue;
    }
    hits += h.hits;
    queries += h.queries;
    any = true;
    out->window_seconds = std::max(out->window_seconds.value_or(0), h.window_seconds);
    out->observed_at = std::max(out->observed_at, h.observed_at);
  }
  if (!any || queries <= 0) return false;
  out->value = hits / queries;
  return true;
}

bool ReadEntries(const Snapshot& s, const SnapshotMetric& metric, std::string_view scope,
                 MetricReading* out) {
  switch (metric.kind) {
    case MetricKind::kGauge: {
      bool any = false;
      for (const std::vector<Gauge>* list : {&s.processing, &s.queueing}) {
        for (const Gauge& g : *list) {
          if (g.name != metric.name || !InScope(g.scope, scope)) continue;
          out->value += g.value;
          out->observed_at = std::max(out->observed_at, g.observed_at);
          any = true;
        }
      }
      return any;
    }
    case MetricKind::kWindow:
      return ReadWindows(s, metric.name, scope, out);
    case MetricKind::kCacheHitRate:
      return ReadHitRate(s, metric, scope, out);
    case MetricKind::kUtilizationMean:
    case MetricKind::kUtilizationMax: {
      const bool max = metric.kind == MetricKind::kUtilizationMax;
      const std::string_view base =
          max ? std::string_view(metric.name).substr(0, metric.name.size() - kMaxSuffix.size())
              : std::string_view(metric.name);
      double weighted = 0;
      int pods = 0;
      for (const Utilization& u : s.utilization) {
        if (u.name != base || !InScope(u.scope, scope)) continue;
        weighted += u.mean * u.pod_count;
        pods += u.pod_count;
        out->value = max ? std::max(out->value, u.max) : 0;
        out->observed_at = std::max(out->observed_at, u.observed_at);
      }
      if (pods == 0) return false;
      if (!max) out->value = weighted / pods;
      return true;
    }
  }
  return false;
}

}  // namespace

const std::vector<SnapshotMetric>& SnapshotMetrics() {
  static const std::vector<SnapshotMetric> metrics = [] {
    Catalog catalog;
    for (const ExporterProfile* profile : BuiltinExporters()) catalog.AddProfile(*profile);
    return std::move(catalog).Sorted();
  }();
  return metrics;
}

const SnapshotMetric* FindSnapshotMetric(std::string_view name) {
  const std::vector<SnapshotMetric>& metrics = SnapshotMetrics();
  const auto it =
      std::lower_bound(metrics.begin(), metrics.end(), name,
                       [](const SnapshotMetric& m, std::string_view n) { return m.name < n; });
  return it != metrics.end() && it->name == name ? &*it : nullptr;
}

Status ReadMetric(const Snapshot& snapshot, const SnapshotMetric& metric, std::string_view scope,
                  MetricReading* out) {
  *out = MetricReading{};
  if (Status blocked = FirstBlock(snapshot, metric, scope); !blocked.ok()) return blocked;
  if (!ReadEntries(snapshot, metric, scope, out)) {
    return Status::NotFound(fmt::format("metric {} has no value{}", metric.name,
                                        scope.empty() ? "" : fmt::format(" in scope {}", scope)));
  }
  // A sum over scopes can overflow where each scope's did not: never a number then.
  if (!std::isfinite(out->value)) {
    return Status::NotFound(fmt::format("metric {} is not a finite number", metric.name));
  }
  return Status::Ok();
}

Status ReadPodMetric(const Snapshot& snapshot, const SnapshotMetric& metric, std::string_view pod,
                     std::string_view scope, MetricReading* out) {
  *out = MetricReading{};
  if (Status blocked = FirstBlock(snapshot, metric, "", pod); !blocked.ok()) return blocked;
  const PodReport* report = FindPod(snapshot, pod);
  if (report == nullptr) {
    for (const Missing& entry : snapshot.missing) {
      if (entry.pod.empty() && entry.source == source::kPodDiscovery) {
        return Status::Unavailable(fmt::format("Pod {} was not read: {}", pod, entry.reason.str()));
      }
    }
  }
  if (metric.PerPod() && report != nullptr && InScope(report->scope, scope)) {
    if (const auto value = report->values.find(metric.name);
        value != report->values.end() && std::isfinite(value->second)) {
      out->value = value->second;
      out->observed_at = report->observed_at;
      return Status::Ok();
    }
  }
  return Status::NotFound(fmt::format("metric {} has no value for Pod {}", metric.name, pod));
}

}  // namespace modelmetrics::deployment
