// SGLang's server (prometheus_client): the scheduler's gauges with parallel ranks, the
// tokenizer's counters and histograms, the prefill half's KV transfer series, and the warmup
// request every server sends itself before it reports ready.
#include <algorithm>
#include <string>

#include "builtin.h"
#include "common.h"
#include "exposition_writer.h"

namespace modelmetrics::sim::exporters {
namespace {

const std::vector<double> kTtftBuckets = {0.1, 0.2, 0.4, 0.6, 0.8, 1,  2,   4,   6,
                                          8,   10,  20,  40,  60,  80, 100, 200, 400};
const std::vector<double> kItlBuckets = {0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025,
                                         0.030, 0.035, 0.040, 0.060, 0.080, 0.100, 0.200, 0.400,
                                         0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000};
const std::vector<double> kE2eBuckets = {0.1, 0.2, 0.4, 0.6, 0.8, 1,   2,   4,   6,    8,    10,
                                         20,  40,  60,  80,  100, 200, 400, 600, 1200, 1800, 2400};
// Not pinned upstream (the transfer series changed type across releases): plausible ranges.
const std::vector<double> kTransferMsBuckets = {0.5, 1,   2,   5,    10,   20,  50,
                                                100, 200, 500, 1000, 2000, 5000};
const std::vector<double> kTransferGbsBuckets = {0.1, 0.5, 1, 2, 5, 10, 20, 50, 100};
const std::vector<double> kTransferMbBuckets = {0.1, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000};

struct Counters {
  // prefill_effective_tokens_total by mode.
  double input = 0, device_hit = 0, host_hit = 0, storage_hit = 0;
  double prompt_tokens = 0, generation_tokens = 0, cached_tokens = 0, num_requests = 0;
  std::optional<double> transfer_failed;  // labeled: absent before the first failure
  SimHistogram ttft{kTtftBuckets}, ttft_streaming{kTtftBuckets};
  SimHistogram itl{kItlBuckets}, e2e{kE2eBuckets};
  SimHistogram transfer_ms{kTransferMsBuckets}, transfer_gbs{kTransferGbsBuckets};
  SimHistogram transfer_mb{kTransferMbBuckets};

  void Halve() {
    HalveAll(input, device_hit, host_hit, storage_hit, prompt_tokens, generation_tokens,
             cached_tokens, num_requests, transfer_failed, ttft, ttft_streaming, itl, e2e,
             transfer_ms, transfer_gbs, transfer_mb);
  }
};

struct Gauges {
  double running = 0, queue = 0, used_tokens = 0, token_usage = 0, gen_throughput = 0;
  double cache_hit_rate = 0, prefill_prealloc = 0, prefill_inflight = 0, decode_prealloc = 0;
  double decode_transfer = 0;
};

class SglangModel : public ExporterModelOf<SglangModel, Counters, Gauges> {
 public:
  explicit SglangModel(const ExporterConfig& config) : ExporterModelOf(config) {
    // The warmup request: one non-streaming generation of a short prompt, whose TTFT includes
    // CUDA-graph capture.
    k_.input = 110;
    k_.prompt_tokens = 110;
    k_.generation_tokens = 1;
    k_.num_requests = 1;
    k_.ttft.Observe(8.331696819999706);
    k_.e2e.Observe(8.35);
  }

  void Record(const RequestDraw& q, Rng& rng) override {
    if (!q.decode) {
      // The decode half never prefills: only the prefill half (or a server) counts tokens.
      double left = q.prompt - q.local_hits;
      double host = config_.host_tier ? std::floor(left * rng.Between(0.1, 0.3)) : 0;
      left -= host;
      double storage = config_.storage_tier ? std::floor(left * rng.Between(0.1, 0.3)) : 0;
      left -= storage;
      k_.input += left;
      k_.device_hit += q.local_hits;
      k_.host_hit += host;
      k_.storage_hit += storage;
      k_.cached_tokens += q.prompt - left;
    }
    k_.prompt_tokens += q.prompt;
    k_.generation_tokens += q.output;
    k_.num_requests += 1;
    if (q.prefill) {
      // SGLang records TTFT on the decode half; the prefill half sends the KV blocks.
      const double megabytes = q.prompt * 0.012;  // Qwen2.5-0.5B: ~12 KB of KV per token
      const double latency_ms = 1 + megabytes * rng.Between(0.05, 0.2);
      k_.transfer_ms.Observe(latency_ms);
      k_.transfer_mb.Observe(megabytes);
      k_.transfer_gbs.Observe(megabytes / latency_ms);  // MB/ms == GB/s
      if (rng.Chance(0.003)) k_.transfer_failed = k_.transfer_failed.value_or(0) + 1;
    } else {
      // The tokenizer records TTFT at a request's first output and ITL at every later one that
      // adds tokens, streaming or not (collect_metrics, tokenizer_manager.py; a non-streaming
      // request's first token is flushed at once, then every 50 tokens and at its end).
      (q.streaming ? k_.ttft_streaming : k_.ttft).Observe(q.ttft);
      if (q.output > 1) k_.itl.Observe(q.itl, q.output - 1);
      k_.e2e.Observe(q.e2e);
    }
  }

  void SetGauges(const TickLoad& load, Rng& rng) override {
    const bool prefill = config_.PrefillHalf();
    g_.running = load.running;
    g_.queue = load.waiting;
    g_.used_tokens = load.running * rng.Between(400, 900);
    g_.token_usage = config_.max_running > 0 ? config_.KvFraction(load.running, rng)
                                             : std::min(1.0, g_.used_tokens / 450000);
    g_.gen_throughput = prefill ? 0 : load.running * rng.Between(150, 200);
    g_.cache_hit_rate = rng.Between(0.5, 0.8);
    if (prefill) g_.prefill_inflight = rng.Poisson(config_.requests_per_second * 0.02);
    if (config_.DecodeHalf()) {
      g_.decode_transfer = rng.Poisson(config_.requests_per_second * 0.02);
    }
  }

  std::string Render() const override;

 private:
  // The labels of every scheduler process that writes the scheduler's families: attention-TP
  // rank 0 alone, or with --enable-metrics-for-all-schedulers each rank of a TP-2 group, every
  // one logging the batch the group runs (metrics_collector.py, sgl-project/sglang 016d8605).
  std::vector<Labels> SchedulerRanks(const std::string& engine_type) const;
  void RenderSchedulerGauges(Writer* w, const std::vector<Labels>& ranks) const;
  void RenderTransfer(Writer* w, const std::vector<Labels>& ranks) const;
};

std::vector<Labels> SglangModel::SchedulerRanks(const std::string& engine_type) const {
  const int ranks = config_.Has(SimVariant::kAllSchedulers) ? 2 : 1;
  std::vector<Labels> out;
  for (int rank = 0; rank < ranks; ++rank) {
    Labels labels = {{"engine_type", engine_type},
                     {"model_name", config_.model},
                     {"moe_ep_rank", std::to_string(rank)},
                     {"pp_rank", "0"}};
    // With priority scheduling every scheduler series carries the label, "" but on the parts.
    if (config_.Has(SimVariant::kPriority)) labels.emplace_back("priority", "");
    labels.emplace_back("tp_rank", std::to_string(rank));
    out.push_back(std::move(labels));
  }
  return out;
}

void SglangModel::RenderSchedulerGauges(Writer* out, const std::vector<Labels>& ranks) const {
  Writer& w = *out;
  auto gauge = [&](const char* name, const char* help, double value) {
    w.Family(name, "gauge", help);
    for (const Labels& rank : ranks) w.Sample(name, rank, value);
  };
  // A queue gauge: with priority scheduling, the total under priority="" and then one series
  // per priority seen (_log_gauge_queue_count): here priorities 0 and 5 share the queue.
  auto queue = [&](const char* name, const char* help, double value) {
    gauge(name, help, value);
    if (!config_.Has(SimVariant::kPriority)) return;
    const double high = std::floor(value / 3);
    for (const Labels& rank : ranks) {
      for (const auto& [priority, part] : {std::pair{"0", value - high}, std::pair{"5", high}}) {
        Labels labels = rank;
        for (auto& [label, v] : labels) {
          if (label == "priority") v = priority;
        }
        w.Sample(name, labels, part);
      }
    }
  };
  queue("sglang:num_running_reqs", "The number of running requests", g_.running);
  gauge("sglang:num_used_tokens", "The number of used tokens", g_.used_tokens);
  gauge("sglang:token_usage", "The token usage", g_.token_usage);
  gauge("sglang:gen_throughput", "The generation throughput (token/s)", g_.gen_throughput);
  queue("sglang:num_queue_reqs", "The number of requests in the waiting queue", g_.queue);
  gauge("sglang:cache_hit_rate", "The prefix cache hit rate", g_.cache_hit_rate);
  queue("sglang:num_prefill_prealloc_queue_reqs",
        "The number of requests in the prefill prealloc queue.", g_.prefill_prealloc);
  queue("sglang:num_prefill_inflight_queue_reqs",
        "The number of requests in the prefill inflight queue.", g_.prefill_inflight);
  queue("sglang:num_decode_prealloc_queue_reqs",
        "The number of requests in the decode prealloc queue.", g_.decode_prealloc);
  queue("sglang:num_decode_transfer_queue_reqs",
        "The number of requests in the decode transfer queue.", g_.decode_transfer);
}

std::string SglangModel::Render() const {
  Writer w(Style::kPython, false);
  const bool prefill = config_.PrefillHalf();
  const std::string engine_type = prefill ? "prefill" : config_.DecodeHalf() ? "decode" : "unified";
  // Scheduler series carry the parallel ranks; tokenizer series do not.
  const std::vector<Labels> ranks = SchedulerRanks(engine_type);
  const Labels tokenizer = {{"engine_type", engine_type}, {"model_name", config_.model}};
  RenderSchedulerGauges(&w, ranks);
  w.Family("sglang:prefill_effective_tokens_total", "counter",
           "Prefill tokens by where they came from: computed (input) or hit on the device, in "
           "host memory or in the storage backend.");
  const std::pair<const char*, double> modes[] = {{"input", k_.input},
                                                  {"device_hit", k_.device_hit},
                                                  {"host_hit", k_.host_hit},
                                                  {"storage_hit", k_.storage_hit}};
  for (const Labels& rank : ranks) {
    for (const auto& [mode, value] : modes) {
      w.Sample("sglang:prefill_effective_tokens_total", With(rank, {{"mode", mode}}), value);
    }
  }
  if (prefill) RenderTransfer(&w, ranks);
  auto counter = [&](const char* name, const char* help, double value) {
    w.Family(name, "counter", help);
    w.Sample(name, tokenizer, value);
  };
  counter("sglang:prompt_tokens_total", "Number of prefill tokens processed.", k_.prompt_tokens);
  counter("sglang:generation_tokens_total", "Number of generation tokens processed.",
          k_.generation_tokens);
  if (k_.cached_tokens > 0) {
    counter("sglang:cached_tokens_total", "Number of cached prompt tokens.", k_.cached_tokens);
  }
  counter("sglang:num_requests_total", "Number of requests processed.", k_.num_requests);
  w.Family("sglang:time_to_first_token_seconds", "histogram",
           "Histogram of time to first token in seconds.");
  if (k_.ttft.observed) {
    w.Histogram("sglang:time_to_first_token_seconds", With(tokenizer, {{"is_streaming", "false"}}),
                k_.ttft);
  }
  if (k_.ttft_streaming.observed) {
    w.Histogram("sglang:time_to_first_token_seconds", With(tokenizer, {{"is_streaming", "true"}}),
                k_.ttft_streaming);
  }
  if (k_.itl.observed) {  // labeled: nothing until a request's second output
    w.Family("sglang:inter_token_latency_seconds", "histogram",
             "Histogram of inter-token latency in seconds.");
    w.Histogram("sglang:inter_token_latency_seconds", tokenizer, k_.itl);
  }
  w.Family("sglang:e2e_request_latency_seconds", "histogram",
           "Histogram of End-to-end request latency in seconds");
  if (k_.e2e.observed) w.Histogram("sglang:e2e_request_latency_seconds", tokenizer, k_.e2e);
  return std::move(w.out());
}

// The prefill half's KV transfer series (labeled: nothing before the first transfer).
void SglangModel::RenderTransfer(Writer* out, const std::vector<Labels>& ranks) const {
  Writer& w = *out;
  auto transfer = [&](const char* name, const char* help, const SimHistogram& h) {
    if (!h.observed) return;
    w.Family(name, "histogram", help);
    for (const Labels& rank : ranks) w.Histogram(name, rank, h);
  };
  transfer("sglang:kv_transfer_latency_ms", "The transfer latency of the KV cache in ms.",
           k_.transfer_ms);
  transfer("sglang:kv_transfer_speed_gb_s", "The transfer speed of the KV cache in GB/s.",
           k_.transfer_gbs);
  transfer("sglang:kv_transfer_total_mb", "The total size of the KV cache transferred in MB.",
           k_.transfer_mb);
  if (k_.transfer_failed) {
    w.Family("sglang:num_transfer_failed_reqs_total", "counter",
             "The number of transfer failed requests.");
    for (const Labels& rank : ranks) {
      w.Sample("sglang:num_transfer_failed_reqs_total", rank, *k_.transfer_failed);
    }
  }
}

void Container(const SimPodContext& pod, SimContainer* c, ExporterConfig* config) {
  const DeploymentSimOptions& o = pod.options;
  c->name = "engine";
  c->image = "lmsysorg/sglang:v0.5.4";
  c->command = {"python3", "-m", "sglang.launch_server"};
  c->args = {"--model-path", o.model, "--host", "0.0.0.0", "--port", pod.port, "--enable-metrics"};
  if (pod.prefill_decode) {
    c->args.insert(c->args.end(),
                   {"--disaggregation-mode", std::string(deployment::RoleKindName(pod.role_kind)),
                    "--disaggregation-transfer-backend", "mooncake"});
  }
  if (o.kv_cache) {
    // The operator renders a host tier and the pool's storage backend.
    c->args.insert(c->args.end(),
                   {"--enable-hierarchical-cache", "--hicache-storage-backend", "mooncake"});
  }
  if (HasVariant(o.variants, SimVariant::kPriority)) {
    c->args.emplace_back("--enable-priority-scheduling");
  }
  if (HasVariant(o.variants, SimVariant::kAllSchedulers)) {
    c->args.insert(c->args.end(), {"--tp-size", "2", "--enable-metrics-for-all-schedulers"});
  }
  AppendRoleArgs(pod, c);
  config->host_tier = HasArg(c->args, "--enable-hierarchical-cache") ||
                      HasArg(c->args, "--enable-lmcache") || HasArg(c->args, "--enable-flexkv");
  config->storage_tier = HasArg(c->args, "--hicache-storage-backend");
}

std::unique_ptr<ExporterModel> Fresh(const ExporterConfig& config) {
  return std::make_unique<SglangModel>(config);
}

}  // namespace

const SimExporter kSglang{
    .name = deployment::kEngineSglang,
    .version = "0.5.4",
    .kv_connector = "mooncake",
    .container = Container,
    .fresh = Fresh,
    .padding = kPythonServerPadding,
};

}  // namespace modelmetrics::sim::exporters
