// See merge.h. Section numbers refer to the reference (deployment-metrics-behaviour.md).
// Section numbers (§n) cite docs/deployment-behaviour.md.
#include "merge.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "exporter_registry.h"
#include "modelmetrics/writer.h"

namespace modelmetrics::deployment {
namespace {

double Seconds(WallClock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

std::string UnsupportedEngineReason(std::string_view engine) {
  return fmt::format(
      "unsupported source: engine \"{}\" is not one the deployment metrics read ({})", engine,
      ExporterNames(PodRole::kEngine));
}

std::string UnsupportedRouterReason(std::string_view router) {
  return fmt::format(
      "unsupported source: router \"{}\" is not one the deployment metrics read ({})", router,
      ExporterNames(PodRole::kRouter));
}

std::string CoverageReason(size_t found, size_t expected) {
  return fmt::format("{} of {} owned metrics Pods present", found, expected);
}

// What the merge needs to know about one Pod.
struct SnapshotBuilder::PodContext {
  const Pod& pod;
  const ExporterProfile& profile;
  Baselines* baselines;
  std::string name;
  std::string scope;
  ReadTime at;
  bool pd = false;       // the deployment is a prefill/decode pair
  bool prefill = false;  // the Pod's role kind
  bool decode = false;
  std::string key_prefix;  // mdUID/podUID/

  bool Uses(Applies applies) const {
    return ExporterProfile::AppliesTo(applies, pd, prefill, decode);
  }
};

SnapshotBuilder::SnapshotBuilder(const ModelDeployment& md, Baselines* store)
    : md_(md), store_(store) {
  snapshot_.name = md.metadata.name;
  snapshot_.namespace_ = md.metadata.namespace_;
}

void SnapshotBuilder::AddMissing(std::string pod, std::string source, Reason reason) {
  snapshot_.missing.push_back({std::move(pod), std::move(source), std::move(reason)});
}

namespace {

// The scope a Pod's gauges report under: "router", or "engine/<component>".
std::string PodScope(const Pod& pod) {
  if (!pod.metadata.Label(kLabelRouter).empty()) return "router";
  return "engine/" + std::string(pod.metadata.Label(kLabelComponent));
}

}  // namespace

PodReport& SnapshotBuilder::Report(const Pod& pod) {
  auto [it, inserted] = pod_reports_.try_emplace(pod.metadata.name, snapshot_.pods.size());
  if (inserted) snapshot_.pods.push_back({pod.metadata.name, PodScope(pod), {}});
  return snapshot_.pods[it->second];
}

void SnapshotBuilder::AddFailedPod(const Pod& pod, Reason reason) {
  Report(pod);
  AddMissing(pod.metadata.name, std::string(source::kScrape), std::move(reason));
}

void SnapshotBuilder::MergePod(const Pod& pod, const PodMetrics& read, ReadTime at,
                               Baselines* baselines) {
  const bool router = !pod.metadata.Label(kLabelRouter).empty();
  Report(pod).observed_at = at.wall;
  const ExporterProfile* profile = SelectExporter(md_, router);
  if (profile == nullptr) {
    if (router) {
      return AddMissing(pod.metadata.name, "router",
                        UnsupportedRouterReason(md_.router ? md_.router->name : ""));
    }
    return AddMissing(pod.metadata.name, "engine", UnsupportedEngineReason(md_.engine));
  }
  const std::string_view component = pod.metadata.Label(kLabelComponent);
  PodContext context{.pod = pod,
                     .profile = *profile,
                     .baselines = baselines != nullptr ? baselines : store_,
                     .name = pod.metadata.name,
                     .scope = PodScope(pod),
                     .at = at,
                     .pd = md_.IsPrefillDecode()};
  if (const Role* role = router ? nullptr : md_.FindRole(component)) {
    context.prefill = role->IsPrefill();
    context.decode = role->IsDecode();
  }
  context.key_prefix = md_.metadata.uid + "/" + pod.metadata.uid + "/";

  MergeGauges(context, read);
  MergeUtilization(context, read);
  const bool idle = MergeWindows(context, read);
  if (!profile->cache.empty()) MergeCacheHits(context, read, idle);
}

namespace {

// Why an unsplit row's key is absent from the read: a label it does not know splits its series,
// or its series hold no valid value (say which), or else `absent` (the family, or the series the
// row selects, are not there).
Reason AbsentReason(const PodMetrics& read, std::string_view key, std::string_view absent) {
  if (const auto label = read.unknown_split.find(key); label != read.unknown_split.end()) {
    return fmt::format(fmt::runtime(reason::kUnknownSplit), label->second);
  }
  if (const auto bad = read.invalid.find(key); bad != read.invalid.end()) {
    std::string value;
    AppendDouble(&value, bad->second);  // as the exposition spells it: NaN, +Inf, -1
    return fmt::format(fmt::runtime(reason::kInvalidValue), value);
  }
  return absent;
}

// What an absent row reports when nothing else explains it: a lazy row's own reason (by default
// vLLM-Omni's), a plain absence, or, for a row with older names, every name looked for.
std::string Unexported(bool lazy, std::string_view lazy_reason, std::string_view family,
                       const std::vector<OlderName>& older) {
  if (lazy) return std::string(lazy_reason.empty() ? reason::kNotYetObserved : lazy_reason);
  return older.empty() ? std::string(reason::kAbsent) : AbsentUnderAnyName(family, older);
}
std::string Unexported(const WindowRow& def) {
  return Unexported(def.lazy, def.lazy_reason, def.family, def.older);
}

// Why no cache scope of the Pod has counters: a plain absence, or, when a scope's counters were
// renamed, every name looked for.
std::string NoCacheCounters(const ExporterProfile& profile) {
  for (const CacheRow& row : profile.cache) {
    if (row.older.empty()) continue;
    std::vector<OlderName> older;
    std::vector<std::string> names;  // keeps the joined names alive for `older`
    names.reserve(row.older.size());
    for (const OlderCounters& counters : row.older) {
      names.push_back(fmt::format("{} and {}", counters.hits, counters.queries));
      older.push_back({names.back(), counters.until});
    }
    return AbsentUnderAnyName(fmt::format("{} and {}", row.hits, row.queries), older);
  }
  return std::string(reason::kAbsent);
}

}  // namespace

void SnapshotBuilder::MergeGauges(const PodContext& pod, const PodMetrics& read) {
  for (const FixedMissing& entry : pod.profile.unsupported) {
    AddMissing(pod.name, std::string(entry.source), std::string(entry.reason));
  }
  for (const GaugeRow& gauge : pod.profile.gauges) {
    if (!pod.Uses(gauge.applies)) continue;
    if (gauge.split != Split::kNone) {
      const auto scoped = read.scoped_gauges.find(gauge.key);
      if (scoped == read.scoped_gauges.end()) {
        AddMissing(pod.name, std::string(gauge.family),
                   std::string(gauge.lazy ? reason::kNotYetObserved : reason::kAbsent));
        continue;
      }
      for (const auto& [scope, value] : scoped->second) AddGauge(pod, gauge, scope, value);
      continue;
    }
    const auto value = read.gauges.find(gauge.key);
    if (value == read.gauges.end()) {
      const std::string absent = Unexported(gauge.lazy, "", gauge.family, gauge.older);
      AddMissing(pod.name, std::string(gauge.family), AbsentReason(read, gauge.key, absent));
      continue;
    }
    AddGauge(pod, gauge, pod.scope, value->second);
    Report(pod.pod).values[std::string(gauge.key)] = value->second;
  }
}

void SnapshotBuilder::AddGauge(const PodContext& pod, const GaugeRow& gauge,
                               const std::string& scope, double value) {
  // Merge key (name, source, scope): prefill and decode, routers and engines, stages stay apart.
  auto key = std::make_tuple(std::string(gauge.key), std::string(gauge.family), scope);
  std::vector<Gauge>& list = gauge.queueing ? snapshot_.queueing : snapshot_.processing;
  auto [it, inserted] = gauges_.try_emplace(std::move(key), gauge.queueing, list.size());
  if (inserted) {
    list.push_back({std::string(gauge.key), std::string(gauge.family), scope,
                    std::string(gauge.unit), value, 1, pod.at.wall});
  } else {
    Gauge& merged = list[it->second.second];
    merged.value += value;
    merged.pod_count += 1;
    merged.observed_at = std::max(merged.observed_at, pod.at.wall);
  }
}

void SnapshotBuilder::MergeUtilization(const PodContext& pod, const PodMetrics& read) {
  for (const UtilizationRow& row : pod.profile.utilization) {
    const auto value = read.utilization.find(row.key);
    if (value == read.utilization.end()) {
      Reason why = AbsentReason(read, row.key, reason::kUtilizationAbsent);
      // Partial reasons (an invalid value) flag the snapshot; a plain absence would not, so it
      // takes the role's entry away instead (a KEDA location gated on `partial` finds nothing).
      if (why == reason::kUtilizationAbsent) utilization_absent_.emplace(row.key, pod.scope);
      AddMissing(pod.name, std::string(row.family), std::move(why));
      continue;
    }
    auto key = std::make_tuple(std::string(row.key), std::string(row.family), pod.scope);
    auto [it, inserted] =
        utilization_.try_emplace(std::move(key), snapshot_.utilization.size(), 0.0);
    if (inserted) {
      snapshot_.utilization.push_back({std::string(row.key), std::string(row.family), pod.scope,
                                       std::string(kUnitFraction), 0, value->second, 0,
                                       pod.at.wall});
    }
    Report(pod.pod).values[std::string(row.key)] = value->second;
    Utilization& merged = snapshot_.utilization[it->second.first];
    it->second.second += value->second;
    merged.pod_count += 1;
    merged.mean = it->second.second / merged.pod_count;
    merged.max = std::max(merged.max, value->second);
    merged.observed_at = std::max(merged.observed_at, pod.at.wall);
  }
}

struct SnapshotBuilder::Delta {
  double count;
  double window_seconds;
  SteadyTime start;
};

namespace {

// A split row's missing[] source and baseline id: the family and its group.
std::string ScopedSource(std::string_view family, std::string_view scope) {
  return scope.empty() ? std::string(family) : fmt::format("{} ({})", family, scope);
}
std::string ScopedId(std::string_view family, std::string_view scope) {
  return scope.empty() ? std::string(family) : fmt::format("{}{{{}}}", family, scope);
}

}  // namespace

bool SnapshotBuilder::MergeWindows(const PodContext& pod, const PodMetrics& read) {
  Deltas deltas;
  std::set<std::string> failed;  // window keys with a scope that has no delta
  for (const WindowRow& def : pod.profile.windows) {
    if (!pod.Uses(def.applies)) continue;  // a skip that leaves no missing[] entry

    if (def.split != Split::kNone) {
      const auto scoped = read.scoped_windows.find(def.key);
      if (scoped == read.scoped_windows.end()) {
        if (!def.lazy) failed.emplace(def.key);
        AddMissing(pod.name, std::string(def.family), Unexported(def));
        continue;
      }
      for (const auto& [scope, value] : scoped->second) {
        if (!MergeWindow(pod, def, scope, value, deltas)) failed.emplace(def.key);
      }
      continue;
    }
    const auto value = read.windows.find(def.key);
    if (value == read.windows.end()) {
      std::string why = Unexported(def);
      if (!def.pair.empty()) {
        if (def.kind == WindowKind::kHistogram) {
          const auto pair = deltas.find({std::string(def.pair), ""});
          if (pair != deltas.end() && pair->second.count == 0) {
            why = reason::kLabeledHistogramUnexported;
          }
        } else if (read.windows.contains(def.pair)) {
          why = reason::kLabeledCounterUnexported;
        }
      }
      if (!def.lazy) failed.emplace(def.key);
      AddMissing(pod.name, std::string(def.family), AbsentReason(read, def.key, why));
      continue;  // an absent series leaves its baseline untouched
    }
    if (!MergeWindow(pod, def, "", value->second, deltas)) failed.emplace(def.key);
  }

  // The error ratio needs an all-request denominator: only profiles that name one report it.
  if (const std::optional<ErrorRatio>& ratio = pod.profile.error_ratio) {
    const auto requests = deltas.find({std::string(ratio->requests), ""});
    const auto errors = deltas.find({std::string(ratio->errors), ""});
    if (requests != deltas.end() && errors != deltas.end()) {
      std::string_view request_source;
      std::string_view error_source;
      for (const WindowRow& def : pod.profile.windows) {
        if (def.key == ratio->requests) request_source = def.family;
        if (def.key == ratio->errors) error_source = def.family;
      }
      const std::string source = fmt::format("{}+{}", request_source, error_source);
      const double r = requests->second.count;
      const double e = errors->second.count;
      if (requests->second.start != errors->second.start) {
        AddMissing(pod.name, source, std::string(reason::kDifferentWindows));
      } else if (r > 0 && e <= r) {
        snapshot_.traffic.push_back({.name = "error-ratio",
                                     .pod = pod.name,
                                     .source = source,
                                     .scope = pod.scope,
                                     .unit = "fraction",
                                     .value = e / r,
                                     .samples = r,
                                     .window_seconds = requests->second.window_seconds,
                                     .observed_at = pod.at.wall});
      } else {
        AddMissing(pod.name, source,
                   std::string(e > r ? reason::kErrorsExceedRequests : reason::kNoRequests));
      }
    }
  }
  MergeRatios(pod, deltas, failed);
  const auto idle = deltas.find({std::string(pod.profile.idle_key), ""});
  return idle != deltas.end() && idle->second.count == 0;
}

// When the Pod's previous read of this process was, as a window delta of this read proves it: the
// idle key's, else the latest start among the windows merged so far; nullopt before any.
std::optional<SteadyTime> SnapshotBuilder::PreviousRead(const Deltas& deltas,
                                                        std::string_view idle_key) {
  if (const auto idle = deltas.find({std::string(idle_key), ""}); idle != deltas.end()) {
    return idle->second.start;
  }
  std::optional<SteadyTime> latest;
  for (const auto& [key, delta] : deltas) {
    if (!latest || delta.start > *latest) latest = delta.start;
  }
  return latest;
}

bool SnapshotBuilder::MergeWindow(const PodContext& pod, const WindowRow& def,
                                  const std::string& scope, const WindowValue& value,
                                  Deltas& deltas) {
  const std::string source = ScopedSource(def.family, scope);
  Baselines::Previous previous = pod.baselines->Window(pod.key_prefix, ScopedId(def.family, scope),
                                                       {value.sum, value.count, pod.at});
  if (previous.reset) {
    AddMissing(pod.name, source, std::string(reason::kCounterReset));
    return false;
  }
  if (const std::optional<SteadyTime> start = PreviousRead(deltas, pod.profile.idle_key);
      !previous.sample && def.lazy && start) {
    // A lazy family (or group) that appeared since the Pod's previous read was created at its
    // first observation: it was zero then (another window's delta proves that read exists and
    // is this process's).
    previous.sample = BaselineSample{0, 0, {pod.at.wall, *start}};
  }
  if (const auto pair = deltas.find({std::string(def.pair), ""});
      !previous.sample && def.kind == WindowKind::kCounter && !def.pair.empty() && scope.empty() &&
      pair != deltas.end()) {
    // A labelled counter first exported since the previous read (a process's first error): it
    // was unexported then beside its pair, which is zero (the labelled-counter rule), and the
    // pair's delta proves that read is this process's. Windowed from zero over the pair's window.
    previous.sample = BaselineSample{0, 0, {pod.at.wall, pair->second.start}};
  }
  if (!previous.sample) {
    AddMissing(pod.name, source, std::string(reason::kAwaiting));
    return false;
  }
  const double window_seconds = Seconds(pod.at.steady - previous.sample->at.steady);
  const double count = value.count - previous.sample->second;
  const double sum = value.sum - previous.sample->first;
  if (count < 0 || sum < 0) {
    AddMissing(pod.name, source, std::string(reason::kCounterReset));
    return false;
  }
  deltas[{std::string(def.key), scope}] = {count, window_seconds, previous.sample->at.steady};
  if (def.kind == WindowKind::kHistogram && count == 0) {
    const auto idle = deltas.find({std::string(pod.profile.idle_key), ""});
    const bool is_idle = (def.area == Area::kLatency || pod.profile.idle_all_areas) &&
                         idle != deltas.end() && idle->second.count == 0;
    const std::string_view idle_reason =
        pod.profile.idle_reason.empty() ? reason::kIdleWindow : pod.profile.idle_reason;
    AddMissing(pod.name, source, std::string(is_idle ? idle_reason : reason::kNoObservations));
    return true;  // a delta of zero, which a ratio may still use
  }
  const double value_of_window =
      def.kind == WindowKind::kHistogram ? sum / count : count / window_seconds;
  if (!std::isfinite(value_of_window)) {
    AddMissing(pod.name, source, std::string(reason::kNotFinite));
    return true;
  }
  Window window{.name = std::string(def.key),
                .pod = pod.name,
                .source = std::string(def.family),
                .scope = scope.empty() ? pod.scope : scope,
                .unit = std::string(def.unit),
                .value = value_of_window,
                .samples = count,
                .window_seconds = window_seconds,
                .observed_at = pod.at.wall};
  std::vector<Window>& area = def.area == Area::kLatency   ? snapshot_.latency
                              : def.area == Area::kTraffic ? snapshot_.traffic
                                                           : snapshot_.transfer;
  area.push_back(std::move(window));
  return true;
}

void SnapshotBuilder::MergeRatios(const PodContext& pod, const Deltas& deltas,
                                  const std::set<std::string>& failed) {
  auto family_of = [&pod](std::string_view key) {
    for (const WindowRow& def : pod.profile.windows) {
      if (def.key == key) return def.family;
    }
    return std::string_view();
  };
  // The scopes of one window key's deltas.
  auto scopes_of = [&deltas](std::string_view key) {
    std::vector<std::pair<std::string, const Delta*>> out;
    for (const auto& [k, delta] : deltas) {
      if (k.first == key) out.emplace_back(k.second, &delta);
    }
    return out;
  };
  const double idle_count = [&] {
    const auto idle = deltas.find({std::string(pod.profile.idle_key), ""});
    return idle == deltas.end() ? -1.0 : idle->second.count;
  }();
  const std::string_view idle_reason =
      pod.profile.idle_reason.empty() ? reason::kIdleWindow : pod.profile.idle_reason;

  for (const RatioRow& ratio : pod.profile.ratios) {
    const std::string source =
        fmt::format("{}+{}", family_of(ratio.numerator), family_of(ratio.denominator));
    auto report = [&](const std::string& scope, double numerator, double denominator,
                      const Delta& window) {
      const double whole = ratio.add_numerator ? numerator + denominator : denominator;
      if (whole == 0) {
        AddMissing(pod.name, ScopedSource(source, scope),
                   std::string(idle_count == 0 ? idle_reason : ratio.no_denominator));
        return;
      }
      snapshot_.traffic.push_back({.name = std::string(ratio.key),
                                   .pod = pod.name,
                                   .source = source,
                                   .scope = scope.empty() ? pod.scope : scope,
                                   .unit = "fraction",
                                   .value = numerator / whole,
                                   .samples = whole,
                                   .window_seconds = window.window_seconds,
                                   .observed_at = pod.at.wall});
    };
    const auto numerators = scopes_of(ratio.numerator);
    const auto denominators = scopes_of(ratio.denominator);
    if (ratio.per_scope) {
      // One ratio per denominator scope; a numerator scope that never appeared is zero.
      for (const auto& [scope, denominator] : denominators) {
        const auto numerator = deltas.find({std::string(ratio.numerator), scope});
        if (numerator == deltas.end() && failed.contains(std::string(ratio.numerator))) {
          AddMissing(pod.name, ScopedSource(source, scope), std::string(reason::kRatioIncomplete));
          continue;
        }
        if (numerator != deltas.end() && numerator->second.start != denominator->start) {
          AddMissing(pod.name, ScopedSource(source, scope), std::string(reason::kDifferentWindows));
          continue;
        }
        report(scope, numerator == deltas.end() ? 0 : numerator->second.count, denominator->count,
               *denominator);
      }
      continue;
    }
    if (denominators.empty() && numerators.empty()) continue;  // neither exported yet
    if (failed.contains(std::string(ratio.numerator)) ||
        failed.contains(std::string(ratio.denominator))) {
      AddMissing(pod.name, source, std::string(reason::kRatioIncomplete));
      continue;
    }
    double numerator = 0;
    double denominator = 0;
    const Delta* window = nullptr;
    bool same_window = true;
    for (const auto* list : {&numerators, &denominators}) {
      for (const auto& [scope, delta] : *list) {
        (list == &numerators ? numerator : denominator) += delta->count;
        if (window != nullptr && window->start != delta->start) same_window = false;
        window = delta;
      }
    }
    if (!same_window) {
      AddMissing(pod.name, source, std::string(reason::kDifferentWindows));
      continue;
    }
    report("", numerator, denominator, *window);
  }
}

void SnapshotBuilder::MergeCacheHits(const PodContext& pod, const PodMetrics& read, bool idle) {
  if (!pod.profile.cache_on_pd_decode && pod.pd && pod.decode) return;
  if (read.cache.empty()) {
    AddMissing(pod.name, std::string(source::kCacheCounters), NoCacheCounters(pod.profile));
    return;
  }
  const PodView view{
      .pod = pod.pod, .md = md_, .pd = pod.pd, .prefill = pod.prefill, .decode = pod.decode};
  for (const CacheRow& row : pod.profile.cache) {
    const auto pair = read.cache.find(row.scope);
    if (pair == read.cache.end()) continue;
    // Store first, so unsupported scopes keep a baseline too.
    const Baselines::Previous previous = pod.baselines->Counter(
        pod.key_prefix, row.scope, {pair->second.hits, pair->second.queries, pod.at});
    std::optional<std::string_view> why;
    if (pod.profile.scope_check != nullptr) {
      why = pod.profile.scope_check(row.scope, pair->second, view);
    }
    if (!why && previous.reset) why = reason::kCacheReset;
    if (!why && !previous.sample) why = reason::kAwaiting;
    double hits = 0;
    double queries = 0;
    if (!why) {
      hits = pair->second.hits - previous.sample->first;
      queries = pair->second.queries - previous.sample->second;
      if (!std::isfinite(hits) || !std::isfinite(queries)) {
        why = reason::kNotFinite;  // the Pod's sums overflowed
      } else if (hits < 0 || queries < 0 || hits > queries) {
        why = reason::kCacheReset;
      } else if (queries == 0) {
        why = idle ? reason::kIdleWindow : reason::kNoQueries;
      }
    }
    if (why) {
      AddMissing(pod.name, std::string(row.scope), std::string(*why));
      continue;
    }
    snapshot_.cache_hits.push_back(
        {.pod = pod.name,
         .source = std::string(row.source),
         .scope = std::string(row.scope),
         .unit = "tokens",
         .hits = hits,
         .queries = queries,
         .rate = hits / queries,
         .window_seconds = Seconds(pod.at.steady - previous.sample->at.steady),
         .pod_count = 1,
         .observed_at = pod.at.wall});
  }
}

Snapshot SnapshotBuilder::Finish(WallTime timestamp) {
  // Byte-wise order of concatenated keys (§2.2 step 11); stable for equal keys.
  auto sort_by = [](auto& list, auto key) {
    std::stable_sort(list.begin(), list.end(),
                     [&key](const auto& a, const auto& b) { return key(a) < key(b); });
  };
  auto gauge_key = [](const Gauge& g) { return g.name + g.scope; };
  sort_by(snapshot_.processing, gauge_key);
  sort_by(snapshot_.queueing, gauge_key);
  std::erase_if(snapshot_.utilization, [this](const Utilization& u) {
    return utilization_absent_.contains({u.name, u.scope});
  });
  sort_by(snapshot_.utilization, [](const Utilization& u) { return u.name + u.scope; });
  sort_by(snapshot_.cache_hits, [](const CacheHit& h) { return h.pod + h.scope; });
  // A split row's entries share pod and name; they stay in scope order (stable sort).
  auto window_key = [](const Window& w) { return w.pod + w.name; };
  sort_by(snapshot_.latency, window_key);
  sort_by(snapshot_.traffic, window_key);
  sort_by(snapshot_.transfer, window_key);
  // A sum of huge values can overflow; report it rather than send a false zero.
  for (std::vector<Gauge>* list : {&snapshot_.processing, &snapshot_.queueing}) {
    std::erase_if(*list, [this](const Gauge& g) {
      if (std::isfinite(g.value)) return false;
      AddMissing("", g.source + " (" + g.scope + ")", std::string(reason::kNotFinite));
      return true;
    });
  }
  sort_by(snapshot_.missing, [](const Missing& m) { return m.pod + m.source; });
  snapshot_.partial = forced_partial_ ||
                      std::any_of(snapshot_.missing.begin(), snapshot_.missing.end(),
                                  [](const Missing& m) { return !IsNotPartialReason(m.reason); });
  snapshot_.timestamp = timestamp;
  sort_by(snapshot_.pods, [](const PodReport& p) { return p.pod; });
  gauges_.clear();
  utilization_.clear();
  utilization_absent_.clear();
  pod_reports_.clear();
  return std::move(snapshot_);
}

}  // namespace modelmetrics::deployment
