// See merge.h. Section numbers refer to the reference (deployment-metrics-behaviour.md).
#include "deployment/merge.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "deployment/exporter_registry.h"

namespace modelmetrics::deployment {
namespace {

double Seconds(WallClock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

bool IsNotPartialReason(std::string_view reason) {
  return std::find(std::begin(reason::kNotPartialReasons), std::end(reason::kNotPartialReasons),
                   reason) != std::end(reason::kNotPartialReasons);
}

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

void SnapshotBuilder::AddMissing(std::string pod, std::string source, std::string reason) {
  snapshot_.missing.push_back({std::move(pod), std::move(source), std::move(reason)});
}

void SnapshotBuilder::MergePod(const Pod& pod, const PodMetrics& read, ReadTime at,
                               Baselines* baselines) {
  const bool router = !pod.metadata.Label(kLabelRouter).empty();
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
                     .scope = router ? "router" : "engine/" + std::string(component),
                     .at = at,
                     .pd = md_.IsPrefillDecode()};
  if (const Role* role = router ? nullptr : md_.FindRole(component)) {
    context.prefill = role->IsPrefill();
    context.decode = role->IsDecode();
  }
  context.key_prefix = md_.metadata.uid + "/" + pod.metadata.uid + "/";

  MergeGauges(context, read);
  const bool idle = MergeWindows(context, read);
  if (!profile->cache.empty()) MergeCacheHits(context, read, idle);
}

void SnapshotBuilder::MergeGauges(const PodContext& pod, const PodMetrics& read) {
  for (const FixedMissing& entry : pod.profile.unsupported) {
    AddMissing(pod.name, std::string(entry.source), std::string(entry.reason));
  }
  for (const GaugeRow& gauge : pod.profile.gauges) {
    if (!pod.Uses(gauge.applies)) continue;
    const auto value = read.gauges.find(gauge.key);
    if (value == read.gauges.end()) {
      AddMissing(pod.name, std::string(gauge.family), std::string(reason::kAbsent));
      continue;
    }
    // Merge key (name, source, scope): prefill and decode, routers and engines stay apart.
    auto key = std::make_tuple(std::string(gauge.key), std::string(gauge.family), pod.scope);
    std::vector<Gauge>& list = gauge.queueing ? snapshot_.queueing : snapshot_.processing;
    auto [it, inserted] = gauges_.try_emplace(std::move(key), gauge.queueing, list.size());
    if (inserted) {
      list.push_back({std::string(gauge.key), std::string(gauge.family), pod.scope,
                      std::string(gauge.unit), value->second, 1, pod.at.wall});
    } else {
      Gauge& merged = list[it->second.second];
      merged.value += value->second;
      merged.pod_count += 1;
      merged.observed_at = std::max(merged.observed_at, pod.at.wall);
    }
  }
}

bool SnapshotBuilder::MergeWindows(const PodContext& pod, const PodMetrics& read) {
  struct Delta {
    double count;
    double window_seconds;
    SteadyTime start;
  };
  std::map<std::string_view, Delta> deltas;
  const std::string_view idle_key = pod.profile.idle_key;
  for (const WindowRow& def : pod.profile.windows) {
    if (!pod.Uses(def.applies)) continue;  // a skip that leaves no missing[] entry

    const auto value = read.windows.find(def.key);
    if (value == read.windows.end()) {
      std::string_view why = reason::kAbsent;
      if (!def.pair.empty()) {
        if (def.kind == WindowKind::kHistogram) {
          const auto pair = deltas.find(def.pair);
          if (pair != deltas.end() && pair->second.count == 0) {
            why = reason::kLabeledHistogramUnexported;
          }
        } else if (read.windows.contains(def.pair)) {
          why = reason::kLabeledCounterUnexported;
        }
      }
      AddMissing(pod.name, std::string(def.family), std::string(why));
      continue;  // an absent series leaves its baseline untouched
    }
    const Baselines::Previous previous = pod.baselines->Window(
        pod.key_prefix, def.family, {value->second.sum, value->second.count, pod.at});
    if (previous.reset) {
      AddMissing(pod.name, std::string(def.family), std::string(reason::kCounterReset));
      continue;
    }
    if (!previous.sample) {
      AddMissing(pod.name, std::string(def.family), std::string(reason::kAwaiting));
      continue;
    }
    const double window_seconds = Seconds(pod.at.steady - previous.sample->at.steady);
    const double count = value->second.count - previous.sample->second;
    const double sum = value->second.sum - previous.sample->first;
    if (count < 0 || sum < 0) {
      AddMissing(pod.name, std::string(def.family), std::string(reason::kCounterReset));
      continue;
    }
    deltas[def.key] = {count, window_seconds, previous.sample->at.steady};
    if (def.kind == WindowKind::kHistogram && count == 0) {
      const auto idle = deltas.find(idle_key);
      const bool is_idle =
          def.area == Area::kLatency && idle != deltas.end() && idle->second.count == 0;
      AddMissing(pod.name, std::string(def.family),
                 std::string(is_idle ? reason::kIdleWindow : reason::kNoObservations));
      continue;
    }
    const double value_of_window =
        def.kind == WindowKind::kHistogram ? sum / count : count / window_seconds;
    if (!std::isfinite(value_of_window)) {
      AddMissing(pod.name, std::string(def.family), std::string(reason::kNotFinite));
      continue;
    }
    Window window{.name = std::string(def.key),
                  .pod = pod.name,
                  .source = std::string(def.family),
                  .scope = pod.scope,
                  .unit = std::string(def.unit),
                  .value = value_of_window,
                  .samples = count,
                  .window_seconds = window_seconds,
                  .observed_at = pod.at.wall};
    std::vector<Window>& area = def.area == Area::kLatency   ? snapshot_.latency
                                : def.area == Area::kTraffic ? snapshot_.traffic
                                                             : snapshot_.transfer;
    area.push_back(std::move(window));
  }

  // The error ratio needs an all-request denominator: only profiles that name one report it.
  if (const std::optional<ErrorRatio>& ratio = pod.profile.error_ratio) {
    const auto requests = deltas.find(ratio->requests);
    const auto errors = deltas.find(ratio->errors);
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
  const auto idle = deltas.find(idle_key);
  return idle != deltas.end() && idle->second.count == 0;
}

void SnapshotBuilder::MergeCacheHits(const PodContext& pod, const PodMetrics& read, bool idle) {
  if (!pod.profile.cache_on_pd_decode && pod.pd && pod.decode) return;
  if (read.cache.empty()) {
    AddMissing(pod.name, "cache-hit counters", std::string(reason::kAbsent));
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
  sort_by(snapshot_.cache_hits, [](const CacheHit& h) { return h.pod + h.scope; });
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
  gauges_.clear();
  return std::move(snapshot_);
}

}  // namespace modelmetrics::deployment
