// See merge.h. Section numbers refer to the reference (deployment-metrics-behaviour.md).
#include "deployment/merge.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <span>

#include <fmt/format.h>

namespace modelmetrics::deployment {
namespace {

enum class Area { kLatency, kTraffic, kTransfer };
enum class Kind { kHistogram, kCounter };

// One row of §2.4's definitions table.
struct WindowDefinition {
  std::string_view name;
  std::string_view source;
  Kind kind;
  Area area;
  std::string_view unit;
  std::string_view pair;  // "" when unpaired
};

constexpr std::string_view kSeconds = "seconds";
constexpr std::string_view kRequestsPerSecond = "requests/second";
constexpr std::string_view kErrorsPerSecond = "errors/second";

// TTFT comes first in every list: later rules consult its delta.
const std::vector<WindowDefinition>& Definitions(Exporter exporter, bool pd) {
  static const std::vector<WindowDefinition> kLlmd = {
      {"ttft", "llm_d_epp_request_ttft_seconds", Kind::kHistogram, Area::kLatency, kSeconds, ""},
      {"tpot", "llm_d_epp_request_streaming_tpot_seconds", Kind::kHistogram, Area::kLatency,
       kSeconds, ""},
      {"requests", "llm_d_epp_request_total", Kind::kCounter, Area::kTraffic, kRequestsPerSecond,
       ""},
      {"request-errors", "llm_d_epp_request_error_total", Kind::kCounter, Area::kTraffic,
       kErrorsPerSecond, "requests"},
  };
  static const std::vector<WindowDefinition> kVllmRouterPd = {
      {"pd-requests", "vllm_router_pd_requests_total", Kind::kCounter, Area::kTraffic,
       kRequestsPerSecond, ""},
      {"pd-errors", "vllm_router_pd_errors_total", Kind::kCounter, Area::kTraffic, kErrorsPerSecond,
       "pd-requests"},
  };
  static const std::vector<WindowDefinition> kVllmRouter = {
      {"successful-requests", "vllm_router_requests_total", Kind::kCounter, Area::kTraffic,
       kRequestsPerSecond, ""},
      {"errors", "vllm_router_request_errors_total", Kind::kCounter, Area::kTraffic,
       kErrorsPerSecond, "successful-requests"},
      {"retries-exhausted", "vllm_router_retries_exhausted_total", Kind::kCounter, Area::kTraffic,
       "events/second", "successful-requests"},
  };
  static const std::vector<WindowDefinition> kGateway = {
      {"requests", "smg_router_requests_total", Kind::kCounter, Area::kTraffic, kRequestsPerSecond,
       ""},
      {"errors", "smg_router_request_errors_total", Kind::kCounter, Area::kTraffic,
       kErrorsPerSecond, "requests"},
      {"http-5xx-responses", "smg_http_responses_total", Kind::kCounter, Area::kTraffic,
       "responses/second", ""},
  };
  static const std::vector<WindowDefinition> kVllm = {
      {"ttft", "vllm:time_to_first_token_seconds", Kind::kHistogram, Area::kLatency, kSeconds, ""},
      {"tpot", "vllm:request_time_per_output_token_seconds", Kind::kHistogram, Area::kLatency,
       kSeconds, ""},
      {"itl", "vllm:inter_token_latency_seconds", Kind::kHistogram, Area::kLatency, kSeconds, ""},
  };
  static const std::vector<WindowDefinition> kSglang = {
      {"ttft", "sglang:time_to_first_token_seconds", Kind::kHistogram, Area::kLatency, kSeconds,
       ""},
      {"itl", "sglang:inter_token_latency_seconds", Kind::kHistogram, Area::kLatency, kSeconds,
       "ttft"},
  };
  static const std::vector<WindowDefinition> kSglangPd = [] {
    std::vector<WindowDefinition> definitions = kSglang;
    definitions.insert(definitions.end(),
                       {
                           {"transfer-latency", "sglang:kv_transfer_latency_ms", Kind::kHistogram,
                            Area::kTransfer, "milliseconds", ""},
                           {"transfer-speed", "sglang:kv_transfer_speed_gb_s", Kind::kHistogram,
                            Area::kTransfer, "GB/second", ""},
                           {"transfer-size", "sglang:kv_transfer_total_mb", Kind::kHistogram,
                            Area::kTransfer, "MB", ""},
                           {"transfer-failures", "sglang:num_transfer_failed_reqs_total",
                            Kind::kCounter, Area::kTransfer, kErrorsPerSecond, "transfer-size"},
                       });
    return definitions;
  }();
  static const std::vector<WindowDefinition> kNone;
  switch (exporter) {
    case Exporter::kLlmdRouter:
      return kLlmd;
    case Exporter::kVllmRouter:
      return pd ? kVllmRouterPd : kVllmRouter;
    case Exporter::kSglangGateway:
      return kGateway;
    case Exporter::kVllm:
      return kVllm;
    case Exporter::kSglang:
      return pd ? kSglangPd : kSglang;
    case Exporter::kUnknownRouter:
    case Exporter::kUnknownEngine:
      return kNone;
  }
  return kNone;
}

double Seconds(WallClock::duration d) { return std::chrono::duration<double>(d).count(); }

// The flag name of an argv entry: cut at the first '='.
std::string_view FlagName(std::string_view entry) {
  const size_t eq = entry.find('=');
  return eq == std::string_view::npos ? entry : entry.substr(0, eq);
}

// SGLang's argparse resolution of `name` against `key` (§2.3, tier detection).
bool ResolvesTo(std::string_view name, std::string_view key) {
  static constexpr std::string_view kOperatorOwned[] = {
      "--hicache-storage-backend", "--hicache-storage-backend-extra-config",
      "--disaggregation-mode", "--disaggregation-transfer-backend",
      "--disaggregation-bootstrap-port"};
  if (!name.starts_with("--") || name.size() <= 2) return false;
  if (name == key) return true;
  if (std::find(std::begin(kOperatorOwned), std::end(kOperatorOwned), name) !=
      std::end(kOperatorOwned)) {
    return false;
  }
  return key.starts_with(name);  // an abbreviation
}

}  // namespace

bool IsNotPartialReason(std::string_view reason) {
  return std::find(std::begin(reason::kNotPartialReasons), std::end(reason::kNotPartialReasons),
                   reason) != std::end(reason::kNotPartialReasons);
}

std::string UnsupportedEngineReason(std::string_view engine) {
  return fmt::format(
      "unsupported source: engine \"{}\" is not one the deployment metrics read ({}, {})", engine,
      kEngineVllm, kEngineSglang);
}

std::string UnsupportedRouterReason(std::string_view router) {
  return fmt::format(
      "unsupported source: router \"{}\" is not one the deployment metrics read ({}, {}, {})",
      router, kRouterLlmd, kRouterVllm, kRouterSglangGateway);
}

std::string CoverageReason(size_t found, size_t expected) {
  return fmt::format("{} of {} owned metrics Pods present", found, expected);
}

SglangTiers DetectSglangTiers(const Pod& pod) {
  SglangTiers tiers;
  for (const Container& container : pod.containers) {
    // One argv, command then args: a flag's value may be the first element of args.
    std::vector<std::string_view> argv(container.command.begin(), container.command.end());
    argv.insert(argv.end(), container.args.begin(), container.args.end());
    for (size_t i = 0; i < argv.size(); ++i) {
      const std::string_view entry = argv[i];
      const std::string_view name = FlagName(entry);
      for (std::string_view key :
           {"--enable-hierarchical-cache", "--enable-lmcache", "--enable-flexkv"}) {
        if (ResolvesTo(name, key)) tiers.host = true;
      }
      if (ResolvesTo(name, "--radix-cache-backend")) {
        std::optional<std::string_view> value;
        if (name.size() < entry.size()) {
          value = entry.substr(name.size() + 1);
        } else if (i + 1 < argv.size()) {
          value = argv[i + 1];
        }
        if (value == "flexkv") tiers.host = true;
      }
      if (ResolvesTo(name, "--hicache-storage-backend")) tiers.storage = true;
    }
  }
  return tiers;
}

bool RendersKvConnector(const Pod& pod) {
  for (const Container& container : pod.containers) {
    for (const std::vector<std::string>* argv : {&container.command, &container.args}) {
      for (const std::string& entry : *argv) {
        if (FlagName(entry) == "--kv-transfer-config") return true;
      }
    }
  }
  return false;
}

// What the merge needs to know about one Pod.
struct SnapshotBuilder::PodContext {
  const Pod& pod;
  std::string name;
  std::string scope;
  ReadTime at;
  bool router = false;
  Exporter exporter = Exporter::kVllm;
  bool pd = false;       // the deployment is a prefill/decode pair
  bool prefill = false;  // the Pod's role kind
  bool decode = false;
  std::string key_prefix;  // mdUID/podUID/
};

SnapshotBuilder::SnapshotBuilder(const ModelDeployment& md, BaselineStore* store)
    : md_(md), store_(store) {
  snapshot_.name = md.metadata.name;
  snapshot_.namespace_ = md.metadata.namespace_;
}

void SnapshotBuilder::AddMissing(std::string pod, std::string source, std::string reason) {
  snapshot_.missing.push_back({std::move(pod), std::move(source), std::move(reason)});
}

void SnapshotBuilder::MergePod(const Pod& pod, const PodMetrics& read, ReadTime at) {
  const std::string_view router_label = pod.metadata.Label(kLabelRouter);
  const std::string_view component = pod.metadata.Label(kLabelComponent);
  PodContext context{.pod = pod, .name = pod.metadata.name, .at = at};
  context.router = !router_label.empty();
  context.scope = context.router ? "router" : "engine/" + std::string(component);
  context.pd = md_.IsPrefillDecode();
  if (context.router) {
    context.exporter = RouterExporter(md_.router ? std::string_view(md_.router->name) : "");
  } else {
    context.exporter = EngineExporter(md_.engine);
    if (const Role* role = md_.FindRole(component)) {
      context.prefill = role->IsPrefill();
      context.decode = role->IsDecode();
    }
  }
  context.key_prefix = md_.metadata.uid + "/" + pod.metadata.uid + "/";

  if (context.exporter == Exporter::kUnknownRouter) {
    return AddMissing(context.name, "router",
                      UnsupportedRouterReason(md_.router ? md_.router->name : ""));
  }
  if (context.exporter == Exporter::kUnknownEngine) {
    return AddMissing(context.name, "engine", UnsupportedEngineReason(md_.engine));
  }
  MergeGauges(context, read);
  const bool idle = MergeWindows(context, read);
  if (context.router) return;
  MergeCacheHits(context, read, idle);
}

void SnapshotBuilder::MergeGauges(const PodContext& pod, const PodMetrics& read) {
  struct Wanted {
    std::string_view name;
    std::string_view source;
    std::string_view unit;
    bool queueing;
  };
  std::vector<Wanted> wanted;
  switch (pod.exporter) {
    case Exporter::kLlmdRouter:
      wanted = {{"router-running", "llm_d_epp_request_running", "requests", false},
                {"router-backends", "llm_d_epp_ready_endpoints", "backends", false}};
      break;
    case Exporter::kVllmRouter:
      if (pod.pd) {
        AddMissing(pod.name, "vllm_router_running_requests",
                   std::string(reason::kVllmRouterPdNoProcessing));
        AddMissing(pod.name, "vllm_router_active_workers",
                   std::string(reason::kVllmRouterPdNoProcessing));
      } else {
        wanted = {{"router-running", "vllm_router_running_requests", "requests", false},
                  {"router-reported-workers", "vllm_router_active_workers", "workers", false}};
      }
      break;
    case Exporter::kSglangGateway:
      wanted = {{"router-running", "smg_worker_requests_active", "requests", false},
                {"router-backends", "smg_worker_pool_size", "backends", false}};
      break;
    case Exporter::kVllm:
      wanted = {{"running", "vllm:num_requests_running", "requests", false},
                {"waiting", "vllm:num_requests_waiting", "requests", true}};
      break;
    case Exporter::kSglang:
      wanted = {{"running", "sglang:num_running_reqs", "requests", false},
                {"waiting", "sglang:num_queue_reqs", "requests", true}};
      if (pod.pd && pod.decode) {
        wanted.push_back(
            {"decode-transfer-waiting", "sglang:num_decode_transfer_queue_reqs", "requests", true});
      }
      break;
    case Exporter::kUnknownRouter:
    case Exporter::kUnknownEngine:
      break;
  }
  for (const Wanted& gauge : wanted) {
    const auto value = read.gauges.find(gauge.name);
    if (value == read.gauges.end()) {
      AddMissing(pod.name, std::string(gauge.source), std::string(reason::kAbsent));
      continue;
    }
    // Merge key (name, source, scope): prefill and decode, routers and engines stay apart.
    auto key = std::make_tuple(std::string(gauge.name), std::string(gauge.source), pod.scope);
    std::vector<Gauge>& list = gauge.queueing ? snapshot_.queueing : snapshot_.processing;
    auto [it, inserted] = gauges_.try_emplace(std::move(key), gauge.queueing, list.size());
    if (inserted) {
      list.push_back({std::string(gauge.name), std::string(gauge.source), pod.scope,
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
  const bool sglang = pod.exporter == Exporter::kSglang;
  for (const WindowDefinition& def : Definitions(pod.exporter, pod.pd)) {
    // Skips that leave no missing[] entry.
    if (def.area == Area::kTransfer && !pod.prefill) continue;
    if (pod.pd && pod.prefill && def.name == "ttft" && sglang) continue;
    if (pod.pd && pod.prefill && (def.name == "itl" || def.name == "tpot")) continue;

    const auto value = read.windows.find(def.name);
    if (value == read.windows.end()) {
      std::string_view why = reason::kAbsent;
      if (!def.pair.empty()) {
        if (def.kind == Kind::kHistogram) {
          const auto pair = deltas.find(def.pair);
          if (pair != deltas.end() && pair->second.count == 0) {
            why = reason::kLabeledHistogramUnexported;
          }
        } else if (read.windows.contains(def.pair)) {
          why = reason::kLabeledCounterUnexported;
        }
      }
      AddMissing(pod.name, std::string(def.source), std::string(why));
      continue;  // an absent series leaves its baseline untouched
    }
    const std::optional<BaselineStore::Sample> previous = store_->ReplaceWindow(
        pod.key_prefix + std::string(def.source), {value->second.sum, value->second.count, pod.at});
    if (!previous) {
      AddMissing(pod.name, std::string(def.source), std::string(reason::kAwaiting));
      continue;
    }
    const double window_seconds = Seconds(pod.at.steady - previous->at.steady);
    const double count = value->second.count - previous->second;
    const double sum = value->second.sum - previous->first;
    if (count < 0 || sum < 0) {
      AddMissing(pod.name, std::string(def.source), std::string(reason::kCounterReset));
      continue;
    }
    deltas[def.name] = {count, window_seconds, previous->at.steady};
    if (def.kind == Kind::kHistogram && count == 0) {
      const auto ttft = deltas.find("ttft");
      const bool idle =
          def.area == Area::kLatency && ttft != deltas.end() && ttft->second.count == 0;
      AddMissing(pod.name, std::string(def.source),
                 std::string(idle ? reason::kIdleWindow : reason::kNoObservations));
      continue;
    }
    const double value_of_window =
        def.kind == Kind::kHistogram ? sum / count : count / window_seconds;
    if (!std::isfinite(value_of_window)) {
      AddMissing(pod.name, std::string(def.source), std::string(reason::kNotFinite));
      continue;
    }
    Window window{.name = std::string(def.name),
                  .pod = pod.name,
                  .source = std::string(def.source),
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

  // The error ratio needs the literal names `requests` and `errors`: only the SGLang gateway
  // has both; the other routers' counters share no all-request denominator.
  const auto requests = deltas.find("requests");
  const auto errors = deltas.find("errors");
  if (requests != deltas.end() && errors != deltas.end()) {
    std::string_view request_source;
    std::string_view error_source;
    for (const WindowDefinition& def : Definitions(pod.exporter, pod.pd)) {
      if (def.name == "requests") request_source = def.source;
      if (def.name == "errors") error_source = def.source;
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
  const auto ttft = deltas.find("ttft");
  return ttft != deltas.end() && ttft->second.count == 0;
}

void SnapshotBuilder::MergeCacheHits(const PodContext& pod, const PodMetrics& read, bool idle) {
  const bool sglang = pod.exporter == Exporter::kSglang;
  // The decode half of an SGLang pair never prefills: its token counters hold no ratio.
  if (sglang && pod.pd && pod.decode) return;
  if (read.cache.empty()) {
    AddMissing(pod.name, "cache-hit counters", std::string(reason::kAbsent));
    return;
  }
  static constexpr std::string_view kVllmScopes[] = {"local-prefix", "external-store"};
  static constexpr std::string_view kSglangScopes[] = {"device-prefix", "host-prefix",
                                                       "storage-prefix"};
  const std::span<const std::string_view> scopes =
      sglang ? std::span<const std::string_view>(kSglangScopes)
             : std::span<const std::string_view>(kVllmScopes);
  std::optional<SglangTiers> tiers;
  for (std::string_view scope : scopes) {
    const auto pair = read.cache.find(scope);
    if (pair == read.cache.end()) continue;
    // Store first, so unsupported scopes keep a baseline too.
    const std::optional<BaselineStore::Sample> previous = store_->ReplaceCounter(
        pod.key_prefix + std::string(scope), {pair->second.hits, pair->second.queries, pod.at});
    std::optional<std::string_view> why;
    if (sglang && scope != "device-prefix") {
      if (!tiers) tiers = DetectSglangTiers(pod.pod);
      if (scope == "host-prefix" && !tiers->host) why = reason::kSglangNoHostTier;
      if (scope == "storage-prefix" && !tiers->storage) why = reason::kSglangNoStorageTier;
    } else if (scope == "external-store") {
      if (pair->second.queries == 0 && !RendersKvConnector(pod.pod)) {
        why = reason::kVllmNoKvConnector;
      } else if (!md_.kv_cache || (pod.pd && pod.decode)) {
        // A connector is proven here (rendered, or its queries moved), but its hits are not
        // the store's alone.
        why = reason::kVllmExternalNotStore;
      }
    }
    if (!why && !previous) why = reason::kAwaiting;
    double hits = 0;
    double queries = 0;
    if (!why) {
      hits = pair->second.hits - previous->first;
      queries = pair->second.queries - previous->second;
      if (!std::isfinite(hits) || !std::isfinite(queries)) {
        why = reason::kNotFinite;  // the Pod's sums overflowed
      } else if (hits < 0 || queries < 0 || hits > queries) {
        why = reason::kCacheReset;
      } else if (queries == 0) {
        why = idle ? reason::kIdleWindow : reason::kNoQueries;
      }
    }
    if (why) {
      AddMissing(pod.name, std::string(scope), std::string(*why));
      continue;
    }
    snapshot_.cache_hits.push_back({.pod = pod.name,
                                    .source = sglang ? "sglang:prefill_effective_tokens_total"
                                              : scope == "local-prefix"
                                                  ? "vllm:prefix_cache"
                                                  : "vllm:external_prefix_cache",
                                    .scope = std::string(scope),
                                    .unit = "tokens",
                                    .hits = hits,
                                    .queries = queries,
                                    .rate = hits / queries,
                                    .window_seconds = Seconds(pod.at.steady - previous->at.steady),
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
