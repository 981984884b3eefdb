// SGLang's engine metrics (§3): request gauges, the device/host/storage prefix tiers
// (one shared denominator, read by ReadTiers), TTFT/ITL, and on a P/D pair the KV transfer
// histograms and failures on the prefill half and the transfer queue on the decode half.
//
// TTFT is read over both its `is_streaming` series: SGLang now hands a non-streaming request's
// first token to the tokenizer as soon as it exists and records the same first-token latency as
// for a streaming one (its test TestNonstreamMetrics.test_first_payload_records_ttft_without_
// notifying_client). Older SGLang flushed a non-streaming request's output every 50 tokens, so
// its non-streaming TTFT was the time to 50 tokens; docs/deployment-metrics.md says so.
// Section numbers (§n) cite docs/deployment-behaviour.md.
#include <algorithm>
#include <iterator>

#include "exporters/builtin.h"
#include "kube/objects.h"
#include "modelmetrics/scrape.h"
#include "reasons.h"

namespace modelmetrics::deployment {
namespace {

constexpr std::string_view kEffectiveTokens = "sglang:prefill_effective_tokens_total";

// The tiers share one denominator, input plus every hit mode; all four modes must exist.
void ReadTiers(const Scrape& scrape, PodMetrics* out) {
  static constexpr std::string_view kModes[] = {"input", "device_hit", "host_hit", "storage_hit"};
  double values[4];
  for (int i = 0; i < 4; ++i) {
    const LabelMatch match[] = {{"mode", kModes[i]}};
    const std::optional<double> value = scrape.Sum(kEffectiveTokens, match);
    if (!value) return;
    values[i] = *value;
  }
  const double queries = values[0] + values[1] + values[2] + values[3];
  out->cache["device-prefix"] = {values[1], queries};
  out->cache["host-prefix"] = {values[2], queries};
  out->cache["storage-prefix"] = {values[3], queries};
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

// A host or storage tier counts no hit unless the Pod's arguments build that tier.
std::optional<std::string_view> CheckScope(std::string_view scope, const CounterPair&,
                                           const PodView& pod) {
  if (scope == "device-prefix") return std::nullopt;
  const SglangTiers tiers = DetectSglangTiers(pod.pod);
  if (scope == "host-prefix" && !tiers.host) return reason::kSglangNoHostTier;
  if (scope == "storage-prefix" && !tiers.storage) return reason::kSglangNoStorageTier;
  return std::nullopt;
}

}  // namespace

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

// With priority scheduling (--enable-priority-scheduling) SGLang writes each queue gauge's total
// under priority="" and one series per priority beside it, which a sum would count twice
// (_log_gauge_queue_count, python/sglang/srt/observability/metrics_collector.py). Without it no
// series carries the label, and this selects them all. The tokenizer's families (TTFT, ITL) carry
// one series per request priority, parts of the whole: those are summed.
const Select kPriorityTotal = {{.name = "priority", .value = ""}};

// The labels SchedulerMetricsCollector writes on the queue gauges (with DP, dp_rank; priority is
// the select's, tp_rank and moe_ep_rank the rank copies'). These gauges are where SGLang has put a
// total beside its parts, so a label it adds later is not summed until a row says what it is.
const KnownLabels kSchedulerLabels = {"model_name", "engine_type", "pp_rank", "dp_rank"};

// By default only each attention-TP group's rank 0 writes the scheduler's families; with
// --enable-metrics-for-all-schedulers every scheduler process does, each logging the batch its
// whole group runs, so a gauge or token counter comes out once per rank (init_new and
// SchedulerMetricsReporter, python/sglang/srt/observability/metrics_collector.py and
// metrics_reporter.py, sgl-project/sglang 016d8605). The copies differ in tp_rank and
// moe_ep_rank only; the lowest tp_rank of each group (dp_rank, pp_rank, priority and the rest
// kept apart) is the attention-TP rank 0 that writes alone without the flag. The tokenizer's
// families carry no rank label and are read whole.
const RankCopies kAllSchedulers{.flag = "--enable-metrics-for-all-schedulers",
                                .labels = {"tp_rank", "moe_ep_rank"},
                                .order = "tp_rank"};

const ExporterProfile exporters::kSglang{
    .name = kEngineSglang,
    .role = PodRole::kEngine,
    .gauges = {{.key = "running",
                .family = "sglang:num_running_reqs",
                .unit = kUnitRequests,
                .select = kPriorityTotal,
                .known_labels = kSchedulerLabels},
               {.key = "waiting",
                .family = "sglang:num_queue_reqs",
                .unit = kUnitRequests,
                .queueing = true,
                .select = kPriorityTotal,
                .known_labels = kSchedulerLabels},
               {.key = "decode-transfer-waiting",
                .family = "sglang:num_decode_transfer_queue_reqs",
                .unit = kUnitRequests,
                .queueing = true,
                .applies = Applies::kPdDecodeOnly,
                .select = kPriorityTotal,
                .known_labels = kSchedulerLabels}},
    // The share of the token pool in use (each DP rank's own pool; rank copies read once).
    .utilization = {{.key = kKvCacheUsage, .family = "sglang:token_usage"}},
    .windows =
        {
            {"ttft", "sglang:time_to_first_token_seconds", WindowKind::kHistogram, Area::kLatency,
             kUnitSeconds, "", Applies::kUnlessPdPrefill},
            {"itl", "sglang:inter_token_latency_seconds", WindowKind::kHistogram, Area::kLatency,
             kUnitSeconds, "ttft", Applies::kUnlessPdPrefill},
            {"transfer-latency", "sglang:kv_transfer_latency_ms", WindowKind::kHistogram,
             Area::kTransfer, "milliseconds", "", Applies::kPdPrefillOnly},
            {"transfer-speed", "sglang:kv_transfer_speed_gb_s", WindowKind::kHistogram,
             Area::kTransfer, "GB/second", "", Applies::kPdPrefillOnly},
            {"transfer-size", "sglang:kv_transfer_total_mb", WindowKind::kHistogram,
             Area::kTransfer, "MB", "", Applies::kPdPrefillOnly},
            {"transfer-failures", "sglang:num_transfer_failed_reqs_total", WindowKind::kCounter,
             Area::kTransfer, kUnitErrorsPerSecond, "transfer-size", Applies::kPdPrefillOnly},
        },
    .idle_key = "ttft",
    .cache = {{"device-prefix", kEffectiveTokens, kEffectiveTokens, kEffectiveTokens, true},
              {"host-prefix", kEffectiveTokens, kEffectiveTokens, kEffectiveTokens, true},
              {"storage-prefix", kEffectiveTokens, kEffectiveTokens, kEffectiveTokens, true}},
    // The decode half of a pair never prefills: its token counters hold no ratio.
    .cache_on_pd_decode = false,
    .scope_check = CheckScope,
    .reader = ReadTiers,
    .reader_families = {{kEffectiveTokens, MetricType::kCounter}},
    .rank_copies = kAllSchedulers,
};

}  // namespace modelmetrics::deployment
