#include "exporters.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <utility>

#include "exposition_writer.h"
#include "traffic.h"

namespace modelmetrics::sim {

namespace {

// ---------------------------------------------------------------------------------------------
// Upstream bucket lists.

const std::vector<double> kVllmTtftBuckets = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                              0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                              20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kVllmItlBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
                                             0.3,  0.4,   0.5,  0.75,  1.0, 2.5,  5.0,
                                             7.5,  10.0,  20.0, 40.0,  80.0};
const std::vector<double> kVllmRequestLatencyBuckets = {
    0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
    30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
const std::vector<double> kVllmTokenBuckets = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000};
const std::vector<double> kVllmIterationBuckets = {1,   8,    16,   32,   64,   128,  256,
                                                   512, 1024, 2048, 4096, 8192, 16384};
const std::vector<double> kSglangTtftBuckets = {0.1, 0.2, 0.4, 0.6, 0.8, 1,  2,   4,   6,
                                                8,   10,  20,  40,  60,  80, 100, 200, 400};
const std::vector<double> kSglangItlBuckets = {
    0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060,
    0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000};
const std::vector<double> kSglangE2eBuckets = {0.1, 0.2, 0.4, 0.6,  0.8,  1,   2,  4,
                                               6,   8,   10,  20,   40,   60,  80, 100,
                                               200, 400, 600, 1200, 1800, 2400};
// Not pinned upstream (the transfer series changed type across releases): plausible ranges.
const std::vector<double> kSglangTransferMsBuckets = {0.5, 1,   2,   5,    10,   20,  50,
                                                      100, 200, 500, 1000, 2000, 5000};
const std::vector<double> kSglangTransferGbsBuckets = {0.1, 0.5, 1, 2, 5, 10, 20, 50, 100};
const std::vector<double> kSglangTransferMbBuckets = {0.1, 0.5, 1,   2,   5,   10,
                                                      20,  50,  100, 200, 500, 1000};
const std::vector<double> kLlmdLatencyBuckets = {0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8,
                                                 1,     1.25,  1.5,  2,   3,   4,   5,   6,
                                                 8,     10,    15,   20,  30,  45,  60,  120};
const std::vector<double> kLlmdDurationBuckets = {
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8,  1,    1.25, 1.5, 2,
    3,     4,     5,    6,   8,   10,  15,  20,   30,   45,   60,  120,
    180,   240,   300,  360, 480, 600, 900, 1200, 1800, 2700, 3600};
const std::vector<double> kLlmdTpotBuckets = {
    0.0005, 0.00205, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.125, 0.15, 0.2,
    0.3,    0.4,     0.5,   0.6,  0.8,  1,    1.5,  2,    3,   4.5,   6,    12,
    18,     24,      30,    36,   48,   60,   90,   120,  180, 270,   360};
const std::vector<double> kLlmdItlBuckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                             0.15,  0.2,   0.3,  0.5,  0.75, 1,    2};
const std::vector<double> kLlmdTokenBuckets = {1,     8,      16,     32,     64,     128,   256,
                                               512,   1024,   2048,   4096,   8192,   16384, 32778,
                                               65536, 131072, 262144, 524288, 1048576};
const std::vector<double> kLlmdSchedulerBuckets = {0.0001, 0.0002, 0.0005, 0.001, 0.002,
                                                   0.005,  0.01,   0.02,   0.05,  0.1};
const std::vector<double> kRouterDurationBuckets = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                    0.5,   1,     2.5,  5,     10,   15,  30,
                                                    45,    60,    90,   120,   180,  240};

// Keys of labeled series: "<name>|<label value>[|<label value>]".
std::string Key(std::string_view name, std::string_view a, std::string_view b = {}) {
  std::string key(name);
  key += '|';
  key += a;
  if (!b.empty()) {
    key += '|';
    key += b;
  }
  return key;
}

// The label values of a key written by Key(); `index` 0 is the first value.
std::string KeyPart(std::string_view key, size_t index) {
  size_t start = key.find('|');
  for (size_t i = 0; i < index && start != std::string_view::npos; ++i) {
    start = key.find('|', start + 1);
  }
  if (start == std::string_view::npos) return "";
  size_t end = key.find('|', start + 1);
  return std::string(key.substr(start + 1, end == std::string_view::npos ? end : end - start - 1));
}

// Every counter whose key starts with "<name>|", in key order.
template <typename Map>
std::vector<std::pair<std::string, double>> Labeled(const Map& map, std::string_view name) {
  std::vector<std::pair<std::string, double>> out;
  std::string prefix = std::string(name) + "|";
  for (auto it = map.lower_bound(prefix); it != map.end() && it->first.starts_with(prefix); ++it) {
    out.emplace_back(it->first, it->second);
  }
  return out;
}

bool IsEngine(ExporterKind kind) {
  return kind == ExporterKind::kVllm || kind == ExporterKind::kSglang;
}

}  // namespace

SimHistogram::SimHistogram(std::vector<double> upper_bounds)
    : bounds(std::move(upper_bounds)), counts(bounds.size() + 1, 0) {}

void SimHistogram::Observe(double value, double n) {
  if (n <= 0) return;
  size_t i =
      static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), value) - bounds.begin());
  counts[i] += n;
  sum += value * n;
  count += n;
  observed = true;
}

void SimHistogram::Halve() {
  count = 0;
  for (double& c : counts) {
    c = std::floor(c / 2);
    count += c;
  }
  sum /= 2;
}

// -----------------------------------------------------------------------------------------------
// The model.

PodModel::PodModel(ExporterConfig config) : config_(std::move(config)) {
  FreshProcess();
  if (!config_.idle) {
    start_tick_ = static_cast<uint64_t>(config_.warm_seconds * 1000 / kTrafficTick.count());
    AdvanceTo(start_tick_);
  }
}

void PodModel::FreshProcess() {
  counters_.clear();
  gauges_.clear();
  histograms_.clear();
  auto hist = [&](const char* name, const std::vector<double>& bounds) {
    histograms_.emplace(name, SimHistogram(bounds));
  };
  switch (config_.kind) {
    case ExporterKind::kVllm:
      for (const char* name :
           {"prefix_queries", "prefix_hits", "external_queries", "external_hits", "prompt_tokens",
            "generation_tokens", "preemptions", "success|stop", "success|length", "success|abort",
            "http|/v1/chat/completions", "http|/v1/models", "http|/health"}) {
        counters_[name] = 0;
      }
      gauges_["running"] = gauges_["waiting"] = gauges_["kv_usage"] = 0;
      hist("ttft", kVllmTtftBuckets);
      hist("itl", kVllmItlBuckets);
      hist("tpot", kVllmItlBuckets);
      hist("e2e", kVllmRequestLatencyBuckets);
      hist("queue", kVllmRequestLatencyBuckets);
      hist("inference", kVllmRequestLatencyBuckets);
      hist("prefill", kVllmRequestLatencyBuckets);
      hist("decode", kVllmRequestLatencyBuckets);
      hist("prompt_tokens", kVllmTokenBuckets);
      hist("generation_tokens", kVllmTokenBuckets);
      hist("iteration_tokens", kVllmIterationBuckets);
      hist("kv_computed", kVllmTokenBuckets);
      break;
    case ExporterKind::kSglang: {
      for (const char* mode : {"input", "device_hit", "host_hit", "storage_hit"}) {
        counters_[Key("effective", mode)] = 0;
      }
      for (const char* name : {"prompt_tokens", "generation_tokens", "cached_tokens",
                               "num_requests", "aborted_requests"}) {
        counters_[name] = 0;
      }
      for (const char* name :
           {"running", "queue", "used_tokens", "token_usage", "gen_throughput", "cache_hit_rate",
            "prefill_prealloc", "prefill_inflight", "decode_prealloc", "decode_transfer"}) {
        gauges_[name] = 0;
      }
      hist(Key("ttft", "false").c_str(), kSglangTtftBuckets);
      hist(Key("ttft", "true").c_str(), kSglangTtftBuckets);
      hist("itl", kSglangItlBuckets);
      hist("e2e", kSglangE2eBuckets);
      hist("transfer_ms", kSglangTransferMsBuckets);
      hist("transfer_gbs", kSglangTransferGbsBuckets);
      hist("transfer_mb", kSglangTransferMbBuckets);
      // The warmup request every SGLang server sends itself before it reports ready: one
      // non-streaming generation of a short prompt, whose TTFT includes CUDA-graph capture.
      counters_[Key("effective", "input")] = 110;
      counters_["prompt_tokens"] = 110;
      counters_["generation_tokens"] = 1;
      counters_["num_requests"] = 1;
      histograms_[Key("ttft", "false")].Observe(8.331696819999706);
      histograms_["e2e"].Observe(8.35);
      break;
    }
    case ExporterKind::kLlmdRouter:
      counters_["requests"] = 0;
      gauges_["running"] = gauges_["avg_kv"] = gauges_["avg_queue"] = gauges_["avg_running"] = 0;
      hist(Key("ttft", "false").c_str(), kLlmdLatencyBuckets);
      hist(Key("ttft", "true").c_str(), kLlmdLatencyBuckets);
      hist("tpot", kLlmdTpotBuckets);
      hist("ntpot", {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10});
      hist("itl", kLlmdItlBuckets);
      hist("duration", kLlmdDurationBuckets);
      hist("input_tokens", kLlmdTokenBuckets);
      hist("output_tokens", kLlmdTokenBuckets);
      hist("scheduler", kLlmdSchedulerBuckets);
      break;
    case ExporterKind::kVllmRouter:
      hist("duration", kRouterDurationBuckets);
      break;
    case ExporterKind::kSglangGateway:
      hist("duration", kRouterDurationBuckets);
      hist("router_duration", kRouterDurationBuckets);
      break;
  }
  for (const WorkerRef& worker : config_.workers) gauges_[Key("worker_running", worker.url)] = 0;
}

void PodModel::AdvanceTo(uint64_t tick) {
  if (config_.idle) return;
  for (; tick_ < tick; ++tick_) Step(tick_);
}

void PodModel::Restart() {
  uint64_t now = tick_;
  FreshProcess();
  tick_ = now;
}

void PodModel::HalveCounters() {
  for (auto& [name, value] : counters_) value = std::floor(value / 2);
  for (auto& [name, histogram] : histograms_) histogram.Halve();
}

void PodModel::CopyGaugesFrom(const PodModel& other) { gauges_ = other.gauges_; }

void PodModel::Step(uint64_t tick) {
  Rng rng(config_.seed, config_.pod_key, tick);
  const double dt = kTrafficTick.count() / 1000.0;
  const int requests = rng.Poisson(config_.requests_per_second * dt);
  const bool prefill = config_.role_kind == "prefill" && config_.prefill_decode;
  const bool decode = config_.role_kind == "decode" && config_.prefill_decode;
  double busy_seconds = 0;  // request-seconds started this tick, for the running gauges

  for (int r = 0; r < requests; ++r) {
    const RequestDraw q = DrawRequest(rng, prefill, decode);
    busy_seconds += q.e2e;
    switch (config_.kind) {
      case ExporterKind::kVllm:
        RecordVllm(q, rng);
        break;
      case ExporterKind::kSglang:
        RecordSglang(q, rng);
        break;
      case ExporterKind::kLlmdRouter:
        RecordLlmdRouter(q, rng);
        break;
      case ExporterKind::kVllmRouter:
        RecordVllmRouter(q, rng);
        break;
      case ExporterKind::kSglangGateway:
        RecordSglangGateway(q, rng);
        break;
    }
  }
  SetGauges(rng, requests, busy_seconds, prefill, decode);
}

void PodModel::RecordVllm(const RequestDraw& q, Rng& rng) {
  const auto& [prompt, output, local_hits, streaming, itl, queue, prefill_time, transfer_wait, ttft,
               decode_time, e2e, prefill, decode] = q;
  counters_["prefix_queries"] += prompt;
  counters_["prefix_hits"] += local_hits;
  const double missing = prompt - local_hits;
  if (config_.kv_connector && decode) {
    // The point-to-point leg supplies every block decode lacks: hits equal queries.
    counters_["external_queries"] += missing;
    counters_["external_hits"] += missing;
  } else if (config_.kv_connector && config_.kv_pool) {
    counters_["external_queries"] += missing;
    counters_["external_hits"] += std::floor(missing * rng.Between(0.2, 0.6) / 16) * 16;
  }
  counters_["prompt_tokens"] += prompt;
  counters_["generation_tokens"] += output;
  counters_[output >= 1024 || rng.Chance(0.3) ? "success|length" : "success|stop"] += 1;
  counters_["http|/v1/chat/completions"] += 1;
  histograms_["ttft"].Observe(ttft);
  // A request with at most one output token records a zero TPOT; ITL only from token 2.
  histograms_["tpot"].Observe(output > 1 ? itl : 0);
  histograms_["itl"].Observe(itl, output - 1);
  histograms_["e2e"].Observe(e2e);
  histograms_["queue"].Observe(queue);
  histograms_["prefill"].Observe(prefill_time + transfer_wait);
  histograms_["decode"].Observe(decode_time);
  histograms_["inference"].Observe(prefill_time + transfer_wait + decode_time);
  histograms_["prompt_tokens"].Observe(prompt);
  histograms_["generation_tokens"].Observe(output);
  histograms_["iteration_tokens"].Observe(prompt - local_hits);
  histograms_["iteration_tokens"].Observe(1, output - 1);
  histograms_["kv_computed"].Observe(prompt - local_hits);
}

void PodModel::RecordSglang(const RequestDraw& q, Rng& rng) {
  const auto& [prompt, output, local_hits, streaming, itl, queue, prefill_time, transfer_wait, ttft,
               decode_time, e2e, prefill, decode] = q;
  if (!decode) {
    // The decode half never prefills: only the prefill half (or a server) counts tokens.
    double left = prompt - local_hits;
    double host = config_.host_tier ? std::floor(left * rng.Between(0.1, 0.3)) : 0;
    left -= host;
    double storage = config_.storage_tier ? std::floor(left * rng.Between(0.1, 0.3)) : 0;
    left -= storage;
    counters_[Key("effective", "input")] += left;
    counters_[Key("effective", "device_hit")] += local_hits;
    counters_[Key("effective", "host_hit")] += host;
    counters_[Key("effective", "storage_hit")] += storage;
    counters_["cached_tokens"] += prompt - left;
  }
  counters_["prompt_tokens"] += prompt;
  counters_["generation_tokens"] += output;
  counters_["num_requests"] += 1;
  if (prefill) {
    // SGLang records TTFT on the decode half; the prefill half sends the KV blocks.
    const double megabytes = prompt * 0.012;  // Qwen2.5-0.5B: ~12 KB of KV per token
    const double latency_ms = 1 + megabytes * rng.Between(0.05, 0.2);
    histograms_["transfer_ms"].Observe(latency_ms);
    histograms_["transfer_mb"].Observe(megabytes);
    histograms_["transfer_gbs"].Observe(megabytes / latency_ms);  // MB/ms == GB/s
    if (rng.Chance(0.003)) counters_["transfer_failed"] += 1;
  } else {
    histograms_[Key("ttft", streaming ? "true" : "false")].Observe(ttft);
    if (streaming) histograms_["itl"].Observe(itl, output - 1);
    histograms_["e2e"].Observe(e2e);
  }
}

void PodModel::RecordLlmdRouter(const RequestDraw& q, Rng& rng) {
  const auto& [prompt, output, local_hits, streaming, itl, queue, prefill_time, transfer_wait, ttft,
               decode_time, e2e, prefill, decode] = q;
  const double router_ttft = ttft + rng.Between(0.001, 0.004);
  if (rng.Chance(0.01)) {
    counters_[Key("errors", rng.Chance(0.5) ? "BadRequest" : "ServiceUnavailable")] += 1;
    return;
  }
  counters_["requests"] += 1;
  histograms_[Key("ttft", streaming ? "true" : "false")].Observe(streaming ? router_ttft : e2e);
  if (streaming) {
    histograms_["tpot"].Observe(itl);
    histograms_["itl"].Observe(itl, output - 1);
  }
  histograms_["ntpot"].Observe(e2e / output);
  histograms_["duration"].Observe(e2e + 0.002);
  histograms_["input_tokens"].Observe(prompt);
  histograms_["output_tokens"].Observe(output);
  histograms_["scheduler"].Observe(rng.Between(0.00002, 0.0003));
}

void PodModel::RecordVllmRouter(const RequestDraw& q, Rng& rng) {
  const auto& [prompt, output, local_hits, streaming, itl, queue, prefill_time, transfer_wait, ttft,
               decode_time, e2e, prefill, decode] = q;
  if (config_.workers.empty()) return;
  if (config_.prefill_decode) {
    std::vector<const WorkerRef*> prefills, decodes;
    for (const WorkerRef& w : config_.workers) {
      (w.role_kind == "prefill" ? prefills : decodes).push_back(&w);
    }
    if (prefills.empty() || decodes.empty()) return;
    const WorkerRef* p = prefills[rng.Pick(prefills.size())];
    const WorkerRef* d = decodes[rng.Pick(decodes.size())];
    counters_[Key("policy", p->url)] += 1;
    counters_[Key("policy", d->url)] += 1;
    counters_[Key("processed", p->url)] += 1;
    counters_[Key("processed", d->url)] += 1;
    counters_[Key("pd_prefill", p->url)] += 1;
    counters_[Key("pd_decode", d->url)] += 1;
    if (rng.Chance(0.004)) {
      counters_[Key("pd_errors", "/v1/chat/completions", "decode_error")] += 1;
      return;
    }
    counters_["pd_requests"] += 1;
  } else {
    const WorkerRef& w = config_.workers[rng.Pick(config_.workers.size())];
    counters_[Key("policy", w.url)] += 1;
    counters_[Key("processed", w.url)] += 1;
    if (rng.Chance(0.004)) {
      counters_[Key("errors", "/v1/chat/completions", "upstream_error")] += 1;
      if (rng.Chance(0.5)) counters_["retries_exhausted"] += 1;
      return;
    }
    counters_["requests"] += 1;
  }
  histograms_["duration"].Observe(e2e + 0.001);
}

void PodModel::RecordSglangGateway(const RequestDraw& q, Rng& rng) {
  const auto& [prompt, output, local_hits, streaming, itl, queue, prefill_time, transfer_wait, ttft,
               decode_time, e2e, prefill, decode] = q;
  const std::string stream = streaming ? "true" : "false";
  counters_[Key("requests", stream)] += 1;
  counters_[Key("http_requests", "POST", "/v1/chat/completions")] += 1;
  if (config_.workers.empty()) {
    counters_[Key("responses", "503", "no_available_workers")] += 1;
    return;
  }
  if (rng.Chance(0.004)) {
    counters_[Key("errors", stream, "upstream_error")] += 1;
    counters_[Key("responses", "502", "upstream_error")] += 1;
    return;
  }
  counters_[Key("responses", "200", "")] += 1;
  histograms_["duration"].Observe(e2e + 0.001);
  histograms_["router_duration"].Observe(e2e + 0.0005);
}

// Gauges: what is in flight at the end of the tick (Little's law around the busy time).
void PodModel::SetGauges(Rng& rng, int requests, double busy_seconds, bool prefill, bool decode) {
  const double mean_busy = requests > 0 ? busy_seconds / requests : 0.6;
  const double in_flight_mean = config_.requests_per_second * (prefill ? 0.03 : mean_busy);
  const double running = rng.Poisson(in_flight_mean);
  const double waiting = rng.Chance(0.1) ? rng.Poisson(1.0) : 0;
  switch (config_.kind) {
    case ExporterKind::kVllm:
      gauges_["running"] = running;
      gauges_["waiting"] = waiting;
      gauges_["kv_usage"] = std::min(1.0, running * rng.Between(0.004, 0.01));
      break;
    case ExporterKind::kSglang:
      gauges_["running"] = running;
      gauges_["queue"] = waiting;
      gauges_["used_tokens"] = running * rng.Between(400, 900);
      gauges_["token_usage"] = std::min(1.0, gauges_["used_tokens"] / 450000);
      gauges_["gen_throughput"] = prefill ? 0 : running * rng.Between(150, 200);
      gauges_["cache_hit_rate"] = rng.Between(0.5, 0.8);
      if (prefill) gauges_["prefill_inflight"] = rng.Poisson(config_.requests_per_second * 0.02);
      if (decode) gauges_["decode_transfer"] = rng.Poisson(config_.requests_per_second * 0.02);
      break;
    case ExporterKind::kLlmdRouter:
      gauges_["running"] = running;
      gauges_["avg_running"] =
          config_.workers.empty() ? 0 : running / static_cast<double>(config_.workers.size());
      gauges_["avg_queue"] = waiting;
      gauges_["avg_kv"] = running * rng.Between(0.00001, 0.0001);
      break;
    case ExporterKind::kVllmRouter:
    case ExporterKind::kSglangGateway:
      break;
  }
  if (!IsEngine(config_.kind)) {
    for (const WorkerRef& worker : config_.workers) {
      gauges_[Key("worker_running", worker.url)] =
          rng.Poisson(in_flight_mean / static_cast<double>(config_.workers.size()));
    }
  }
}

// -----------------------------------------------------------------------------------------------
// Rendering.

namespace {

// A vLLM Pod's last families: its cache configuration and the API server's HTTP counters.
void RenderVllmInfoAndHttp(const std::map<std::string, double, std::less<>>& k, Writer* out) {
  Writer& w = *out;
  w.Family("vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig");
  w.Sample("vllm:cache_config_info",
           {{"block_size", "16"},
            {"cache_dtype", "auto"},
            {"enable_prefix_caching", "True"},
            {"engine", "0"},
            {"gpu_memory_utilization", "0.9"},
            {"num_gpu_blocks", "112009"},
            {"prefix_caching_hash_algo", "sha256"}},
           1);
  w.Family("http_requests_total", "counter",
           "Total number of requests by method, status and handler.");
  for (const char* handler : {"/v1/chat/completions", "/v1/models", "/health"}) {
    w.Sample("http_requests_total",
             {{"handler", handler},
              {"method", std::string_view(handler) == "/v1/chat/completions" ? "POST" : "GET"},
              {"status", "2xx"}},
             k.at(std::string("http|") + handler));
  }
}

std::string RenderVllm(const ExporterConfig& c, const std::map<std::string, double, std::less<>>& k,
                       const std::map<std::string, double, std::less<>>& g,
                       const std::map<std::string, SimHistogram, std::less<>>& h) {
  Writer w(Style::kPython, false);
  const Labels base = {{"engine", "0"}, {"model_name", c.model}};
  auto labels = [&](Labels extra = {}) {
    Labels all = base;
    all.insert(all.end(), extra.begin(), extra.end());
    return all;
  };
  auto gauge = [&](const char* name, const char* help, double value) {
    w.Family(name, "gauge", help);
    w.Sample(name, labels(), value);
  };
  auto counter = [&](const char* name, const char* help, double value) {
    w.Family(name, "counter", help);
    w.Sample(name, labels(), value);
  };
  auto histogram = [&](const char* name, const char* help, const char* key) {
    w.Family(name, "histogram", help);
    w.Histogram(name, labels(), h.at(key));
  };
  gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
        g.at("running"));
  gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
        g.at("waiting"));
  w.Family(
      "vllm:engine_sleep_state", "gauge",
      "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is "
      "awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.");
  w.Sample("vllm:engine_sleep_state", labels({{"sleep_state", "awake"}}), 1);
  w.Sample("vllm:engine_sleep_state", labels({{"sleep_state", "weights_offloaded"}}), 0);
  w.Sample("vllm:engine_sleep_state", labels({{"sleep_state", "discard_all"}}), 0);
  gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", g.at("kv_usage"));
  counter("vllm:prefix_cache_queries_total",
          "Prefix cache queries, in terms of number of queried tokens.", k.at("prefix_queries"));
  counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.",
          k.at("prefix_hits"));
  counter("vllm:external_prefix_cache_queries_total",
          "External prefix cache queries from KV connector cross-instance cache sharing, in "
          "terms of number of queried tokens.",
          k.at("external_queries"));
  counter("vllm:external_prefix_cache_hits_total",
          "External prefix cache hits from KV connector cross-instance cache sharing, in terms "
          "of number of cached tokens.",
          k.at("external_hits"));
  counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.",
          k.at("preemptions"));
  counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", k.at("prompt_tokens"));
  counter("vllm:generation_tokens_total", "Number of generation tokens processed.",
          k.at("generation_tokens"));
  w.Family("vllm:request_success_total", "counter", "Count of successfully processed requests.");
  for (const char* reason : {"stop", "length", "abort"}) {
    w.Sample("vllm:request_success_total", labels({{"finished_reason", reason}}),
             k.at(std::string("success|") + reason));
  }
  histogram("vllm:request_prompt_tokens", "Number of prefill tokens processed.", "prompt_tokens");
  histogram("vllm:request_generation_tokens", "Number of generation tokens processed.",
            "generation_tokens");
  histogram("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.",
            "iteration_tokens");
  histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
            "ttft");
  histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
            "itl");
  histogram("vllm:request_time_per_output_token_seconds",
            "Histogram of time_per_output_token_seconds per request.", "tpot");
  histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
            "e2e");
  histogram("vllm:request_queue_time_seconds",
            "Histogram of time spent in WAITING phase for request.", "queue");
  histogram("vllm:request_inference_time_seconds",
            "Histogram of time spent in RUNNING phase for request.", "inference");
  histogram("vllm:request_prefill_time_seconds",
            "Histogram of time spent in PREFILL phase for request.", "prefill");
  histogram("vllm:request_decode_time_seconds",
            "Histogram of time spent in DECODE phase for request.", "decode");
  histogram("vllm:request_prefill_kv_computed_tokens",
            "Histogram of new KV tokens computed during prefill (excluding cached tokens).",
            "kv_computed");
  RenderVllmInfoAndHttp(k, &w);
  return std::move(w.out());
}

std::string RenderSglang(const ExporterConfig& c,
                         const std::map<std::string, double, std::less<>>& k,
                         const std::map<std::string, double, std::less<>>& g,
                         const std::map<std::string, SimHistogram, std::less<>>& h) {
  Writer w(Style::kPython, false);
  const bool prefill = c.role_kind == "prefill" && c.prefill_decode;
  const bool decode = c.role_kind == "decode" && c.prefill_decode;
  const std::string engine_type = prefill ? "prefill" : decode ? "decode" : "unified";
  // Scheduler series carry the parallel ranks; tokenizer series do not.
  const Labels scheduler = {{"engine_type", engine_type},
                            {"model_name", c.model},
                            {"moe_ep_rank", "0"},
                            {"pp_rank", "0"},
                            {"tp_rank", "0"}};
  const Labels tokenizer = {{"engine_type", engine_type}, {"model_name", c.model}};
  auto with = [](Labels labels, Labels extra) {
    labels.insert(labels.end(), extra.begin(), extra.end());
    return labels;
  };
  auto gauge = [&](const char* name, const char* help, const char* key) {
    w.Family(name, "gauge", help);
    w.Sample(name, scheduler, g.at(key));
  };
  gauge("sglang:num_running_reqs", "The number of running requests", "running");
  gauge("sglang:num_used_tokens", "The number of used tokens", "used_tokens");
  gauge("sglang:token_usage", "The token usage", "token_usage");
  gauge("sglang:gen_throughput", "The generation throughput (token/s)", "gen_throughput");
  gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue", "queue");
  gauge("sglang:cache_hit_rate", "The prefix cache hit rate", "cache_hit_rate");
  gauge("sglang:num_prefill_prealloc_queue_reqs",
        "The number of requests in the prefill prealloc queue.", "prefill_prealloc");
  gauge("sglang:num_prefill_inflight_queue_reqs",
        "The number of requests in the prefill inflight queue.", "prefill_inflight");
  gauge("sglang:num_decode_prealloc_queue_reqs",
        "The number of requests in the decode prealloc queue.", "decode_prealloc");
  gauge("sglang:num_decode_transfer_queue_reqs",
        "The number of requests in the decode transfer queue.", "decode_transfer");
  w.Family("sglang:prefill_effective_tokens_total", "counter",
           "Prefill tokens by where they came from: computed (input) or hit on the device, in "
           "host memory or in the storage backend.");
  for (const char* mode : {"input", "device_hit", "host_hit", "storage_hit"}) {
    w.Sample("sglang:prefill_effective_tokens_total", with(scheduler, {{"mode", mode}}),
             k.at(Key("effective", mode)));
  }
  if (prefill) {
    auto transfer = [&](const char* name, const char* help, const char* key) {
      if (!h.at(key).observed) return;  // labeled: nothing before the first transfer
      w.Family(name, "histogram", help);
      w.Histogram(name, scheduler, h.at(key));
    };
    transfer("sglang:kv_transfer_latency_ms", "The transfer latency of the KV cache in ms.",
             "transfer_ms");
    transfer("sglang:kv_transfer_speed_gb_s", "The transfer speed of the KV cache in GB/s.",
             "transfer_gbs");
    transfer("sglang:kv_transfer_total_mb", "The total size of the KV cache transferred in MB.",
             "transfer_mb");
    auto failed = k.find("transfer_failed");
    if (failed != k.end()) {
      w.Family("sglang:num_transfer_failed_reqs_total", "counter",
               "The number of transfer failed requests.");
      w.Sample("sglang:num_transfer_failed_reqs_total", scheduler, failed->second);
    }
  }
  auto counter = [&](const char* name, const char* help, const char* key) {
    w.Family(name, "counter", help);
    w.Sample(name, tokenizer, k.at(key));
  };
  counter("sglang:prompt_tokens_total", "Number of prefill tokens processed.", "prompt_tokens");
  counter("sglang:generation_tokens_total", "Number of generation tokens processed.",
          "generation_tokens");
  if (k.at("cached_tokens") > 0) {
    counter("sglang:cached_tokens_total", "Number of cached prompt tokens.", "cached_tokens");
  }
  counter("sglang:num_requests_total", "Number of requests processed.", "num_requests");
  w.Family("sglang:time_to_first_token_seconds", "histogram",
           "Histogram of time to first token in seconds.");
  for (const char* streaming : {"false", "true"}) {
    const SimHistogram& ttft = h.at(Key("ttft", streaming));
    if (ttft.observed)
      w.Histogram("sglang:time_to_first_token_seconds",
                  with(tokenizer, {{"is_streaming", streaming}}), ttft);
  }
  if (h.at("itl").observed) {  // labeled: nothing until a request streams
    w.Family("sglang:inter_token_latency_seconds", "histogram",
             "Histogram of inter-token latency in seconds.");
    w.Histogram("sglang:inter_token_latency_seconds", tokenizer, h.at("itl"));
  }
  w.Family("sglang:e2e_request_latency_seconds", "histogram",
           "Histogram of End-to-end request latency in seconds");
  if (h.at("e2e").observed)
    w.Histogram("sglang:e2e_request_latency_seconds", tokenizer, h.at("e2e"));
  return std::move(w.out());
}

std::string RenderLlmd(const ExporterConfig& c, const std::map<std::string, double, std::less<>>& k,
                       const std::map<std::string, double, std::less<>>& g,
                       const std::map<std::string, SimHistogram, std::less<>>& h) {
  Writer w(Style::kGo, false);
  const Labels pool = {{"name", c.pool_name}};
  const Labels request = {{"fairness_id", "default-flow"},
                          {"model_name", c.model},
                          {"priority", "0"},
                          {"target_model_name", c.model}};
  auto with = [](Labels labels, Labels extra) {
    labels.insert(labels.end(), extra.begin(), extra.end());
    return labels;
  };
  // Labeled vectors export nothing, not even HELP/TYPE, before their first observation.
  auto histogram = [&](const char* name, const char* help, const char* key) {
    if (!h.at(key).observed) return;
    w.Family(name, "histogram", help);
    w.Histogram(name, request, h.at(key));
  };
  w.Family("llm_d_epp_average_kv_cache_utilization", "gauge",
           "[ALPHA] The average kv cache utilization for an inference server pool.");
  w.Sample("llm_d_epp_average_kv_cache_utilization", pool, g.at("avg_kv"));
  w.Family("llm_d_epp_average_queue_size", "gauge",
           "[ALPHA] The average number of requests pending in the model server queue.");
  w.Sample("llm_d_epp_average_queue_size", pool, g.at("avg_queue"));
  w.Family("llm_d_epp_average_running_requests", "gauge",
           "[ALPHA] The average number of running requests across model servers in the pool.");
  w.Sample("llm_d_epp_average_running_requests", pool, g.at("avg_running"));
  w.Family("llm_d_epp_info", "gauge",
           "[ALPHA] General information of the current build of Inference Extension.");
  w.Sample("llm_d_epp_info", {{"build_ref", ""}, {"commit", "unknown"}}, 1);
  w.Family("llm_d_epp_per_endpoint_queue_size", "gauge",
           "[ALPHA] The total number of requests pending in the model server queue for each "
           "underlying endpoint.");
  for (const WorkerRef& worker : c.workers) {
    w.Sample("llm_d_epp_per_endpoint_queue_size",
             with(pool, {{"model_server_endpoint", worker.url}}), 0);
  }
  w.Family("llm_d_epp_ready_endpoints", "gauge",
           "[ALPHA] The number of ready endpoints in the inference server pool.");
  w.Sample("llm_d_epp_ready_endpoints", pool, static_cast<double>(c.workers.size()));
  histogram("llm_d_epp_request_duration_seconds",
            "[ALPHA] End-to-end request latency distribution in seconds.", "duration");
  auto errors = Labeled(k, "errors");
  if (!errors.empty()) {  // labeled: nothing before the first error
    w.Family("llm_d_epp_request_error_total", "counter",
             "[ALPHA] Counter of inference model requests errors broken out for each model and "
             "target model.");
    for (const auto& [key, value] : errors) {
      w.Sample("llm_d_epp_request_error_total",
               {{"error_code", KeyPart(key, 0)},
                {"model_name", c.model},
                {"target_model_name", c.model}},
               value);
    }
  }
  histogram("llm_d_epp_request_input_tokens", "[ALPHA] Input token count distribution per request.",
            "input_tokens");
  histogram("llm_d_epp_request_ntpot_seconds",
            "[ALPHA] Normalized time per output token in seconds (end-to-end latency divided by "
            "output token count).",
            "ntpot");
  histogram("llm_d_epp_request_output_tokens",
            "[ALPHA] Output token count distribution per request.", "output_tokens");
  w.Family("llm_d_epp_request_running", "gauge",
           "[ALPHA] Current number of active running requests.");
  w.Sample("llm_d_epp_request_running", request, g.at("running"));
  histogram("llm_d_epp_request_streaming_itl_seconds",
            "[ALPHA] Inter-token latency in seconds for streaming requests, measured as the time "
            "between consecutive response body chunks.",
            "itl");
  histogram("llm_d_epp_request_streaming_tpot_seconds",
            "[ALPHA] Time per output token in seconds for streaming requests.", "tpot");
  if (k.at("requests") > 0) {
    w.Family("llm_d_epp_request_total", "counter", "[ALPHA] Total number of processed requests.");
    w.Sample("llm_d_epp_request_total", request, k.at("requests"));
  }
  if (h.at(Key("ttft", "false")).observed || h.at(Key("ttft", "true")).observed) {
    w.Family("llm_d_epp_request_ttft_seconds", "histogram",
             "[ALPHA] Time to first token in seconds, measured from request received to first "
             "response byte. For non-streaming requests, this equals total request duration.");
  }
  for (const char* streaming : {"false", "true"}) {
    const SimHistogram& ttft = h.at(Key("ttft", streaming));
    if (ttft.observed) {
      w.Histogram("llm_d_epp_request_ttft_seconds", with(request, {{"streaming", streaming}}),
                  ttft);
    }
  }
  w.Family("llm_d_epp_scheduler_e2e_duration_seconds", "histogram",
           "[ALPHA] End-to-end scheduling latency distribution in seconds.");
  w.Histogram("llm_d_epp_scheduler_e2e_duration_seconds", {}, h.at("scheduler"));
  return std::move(w.out());
}

std::string RenderVllmRouter(const ExporterConfig& c,
                             const std::map<std::string, double, std::less<>>& k,
                             const std::map<std::string, double, std::less<>>& g,
                             const std::map<std::string, SimHistogram, std::less<>>& h) {
  Writer w(Style::kRust, /*blank_between_families=*/true);
  const std::string route = "/v1/chat/completions";
  auto per_worker = [&](const char* family, const char* key) {
    auto series = Labeled(k, key);
    if (series.empty()) return;
    w.Family(family, "counter", "");
    for (const auto& [name, value] : series) {
      w.Sample(family, {{"worker", KeyPart(name, 0)}}, value);
    }
  };
  auto per_route_errors = [&](const char* family, const char* key) {
    auto series = Labeled(k, key);
    if (series.empty()) return;  // labeled: nothing before the first increment
    w.Family(family, "counter", "");
    for (const auto& [name, value] : series) {
      w.Sample(family, {{"route", KeyPart(name, 0)}, {"error_type", KeyPart(name, 1)}}, value);
    }
  };
  if (c.prefill_decode) {
    // P/D mode records only its policy, per-worker and pd_* series.
    if (!Labeled(k, "policy").empty()) {
      w.Family("vllm_router_policy_decisions_total", "counter", "");
      for (const auto& [name, value] : Labeled(k, "policy")) {
        w.Sample("vllm_router_policy_decisions_total",
                 {{"policy", "cache_aware"}, {"worker", KeyPart(name, 0)}}, value);
      }
    }
    per_worker("vllm_router_pd_decode_requests_total", "pd_decode");
    per_worker("vllm_router_pd_prefill_requests_total", "pd_prefill");
    per_worker("vllm_router_processed_requests_total", "processed");
    if (k.contains("pd_requests")) {
      w.Family("vllm_router_pd_requests_total", "counter", "");
      w.Sample("vllm_router_pd_requests_total", {{"route", route}}, k.at("pd_requests"));
    }
    per_route_errors("vllm_router_pd_errors_total", "pd_errors");
    if (h.at("duration").observed) {
      w.Family("vllm_router_pd_request_duration_seconds", "histogram", "");
      w.Histogram("vllm_router_pd_request_duration_seconds", {{"route", route}}, h.at("duration"));
    }
    return std::move(w.out());
  }
  if (k.contains("requests")) {
    w.Family("vllm_router_requests_total", "counter", "");
    w.Sample("vllm_router_requests_total", {{"route", route}}, k.at("requests"));
  }
  per_route_errors("vllm_router_request_errors_total", "errors");
  if (k.contains("retries_exhausted")) {
    w.Family("vllm_router_retries_exhausted_total", "counter", "");
    w.Sample("vllm_router_retries_exhausted_total", {{"route", route}}, k.at("retries_exhausted"));
  }
  w.Family("vllm_router_running_requests", "gauge", "");
  for (const WorkerRef& worker : c.workers) {
    w.Sample("vllm_router_running_requests", {{"worker", worker.url}},
             g.at(Key("worker_running", worker.url)));
  }
  per_worker("vllm_router_processed_requests_total", "processed");
  w.Family("vllm_router_active_workers", "gauge", "");
  w.Sample("vllm_router_active_workers", {}, static_cast<double>(c.workers.size()));
  if (h.at("duration").observed) {
    w.Family("vllm_router_request_duration_seconds", "histogram", "");
    w.Histogram("vllm_router_request_duration_seconds", {{"route", route}}, h.at("duration"));
  }
  return std::move(w.out());
}

std::string RenderSmg(const ExporterConfig& c, const std::map<std::string, double, std::less<>>& k,
                      const std::map<std::string, double, std::less<>>& g,
                      const std::map<std::string, SimHistogram, std::less<>>& h) {
  Writer w(Style::kRust, false);
  const std::string backend = c.prefill_decode ? "pd" : "regular";
  auto router_labels = [&](const std::string& streaming) -> Labels {
    return {{"router_type", "http"}, {"backend_type", backend}, {"connection_mode", "http"},
            {"model", c.model},      {"endpoint", "chat"},      {"streaming", streaming}};
  };
  if (auto series = Labeled(k, "http_requests"); !series.empty()) {
    w.Family("smg_http_requests_total", "counter", "");
    for (const auto& [name, value] : series) {
      w.Sample("smg_http_requests_total",
               {{"method", KeyPart(name, 0)}, {"path", KeyPart(name, 1)}}, value);
    }
  }
  if (h.at("duration").observed) {
    w.Family("smg_http_request_duration_seconds", "histogram", "");
    w.Histogram("smg_http_request_duration_seconds",
                {{"method", "POST"}, {"path", "/v1/chat/completions"}}, h.at("duration"));
  }
  if (auto series = Labeled(k, "requests"); !series.empty()) {
    w.Family("smg_router_requests_total", "counter", "");
    for (const auto& [name, value] : series) {
      w.Sample("smg_router_requests_total", router_labels(KeyPart(name, 0)), value);
    }
  }
  if (auto series = Labeled(k, "errors"); !series.empty()) {  // nothing before the first error
    w.Family("smg_router_request_errors_total", "counter", "");
    for (const auto& [name, value] : series) {
      Labels labels = router_labels(KeyPart(name, 0));
      labels.emplace_back("error_type", KeyPart(name, 1));
      w.Sample("smg_router_request_errors_total", labels, value);
    }
  }
  if (h.at("router_duration").observed) {
    w.Family("smg_router_request_duration_seconds", "histogram", "");
    w.Histogram("smg_router_request_duration_seconds", router_labels("false"),
                h.at("router_duration"));
  }
  if (auto series = Labeled(k, "responses"); !series.empty()) {
    w.Family("smg_http_responses_total", "counter", "");
    for (const auto& [name, value] : series) {
      w.Sample("smg_http_responses_total",
               {{"status_code", KeyPart(name, 0)}, {"error_code", KeyPart(name, 1)}}, value);
    }
  }
  if (!c.workers.empty()) {
    w.Family("smg_worker_requests_active", "gauge", "");
    for (const WorkerRef& worker : c.workers) {
      w.Sample("smg_worker_requests_active", {{"worker", worker.url}},
               g.at(Key("worker_running", worker.url)));
    }
    w.Family("smg_worker_health", "gauge", "");
    for (const WorkerRef& worker : c.workers) {
      w.Sample("smg_worker_health", {{"worker", worker.url}}, 1);
    }
  }
  std::map<std::string, double> pool;
  for (const WorkerRef& worker : c.workers) {
    pool[worker.role_kind == "server" ? "regular" : worker.role_kind] += 1;
  }
  w.Family("smg_worker_pool_size", "gauge", "");
  if (pool.empty()) pool["regular"] = 0;
  for (const auto& [type, size] : pool) {
    w.Sample("smg_worker_pool_size", {{"worker_type", type}}, size);
  }
  return std::move(w.out());
}

}  // namespace

std::string PodModel::Render() const {
  switch (config_.kind) {
    case ExporterKind::kVllm:
      return RenderVllm(config_, counters_, gauges_, histograms_);
    case ExporterKind::kSglang:
      return RenderSglang(config_, counters_, gauges_, histograms_);
    case ExporterKind::kLlmdRouter:
      return RenderLlmd(config_, counters_, gauges_, histograms_);
    case ExporterKind::kVllmRouter:
      return RenderVllmRouter(config_, counters_, gauges_, histograms_);
    case ExporterKind::kSglangGateway:
      return RenderSmg(config_, counters_, gauges_, histograms_);
  }
  return "";
}

std::shared_ptr<const std::string> RenderPadding(ExporterKind kind, size_t bytes) {
  auto out = std::make_shared<std::string>();
  if (bytes == 0) return out;
  // The HTTP framework's per-handler latency histograms (FastAPI instrumentator for the Python
  // engines, the Go/Rust servers' own for routers), one handler per served LoRA adapter path.
  const bool python = IsEngine(kind);
  const Style style = python                              ? Style::kPython
                      : kind == ExporterKind::kLlmdRouter ? Style::kGo
                                                          : Style::kRust;
  const std::string family = python ? "http_request_duration_highr_seconds_by_handler"
                             : kind == ExporterKind::kLlmdRouter
                                 ? "llm_d_epp_http_request_duration_seconds"
                                 : "http_request_duration_seconds_by_handler";
  Writer w(style, kind == ExporterKind::kVllmRouter);
  w.Family(family, "histogram",
           "Latency with many buckets by handler. Made for more accurate percentile "
           "calculations.");
  SimHistogram h({0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0,  1.5, 2.0,
                  2.5,  3.0,   3.5,  4.0,   4.5, 5.0,  7.5, 10.0, 30.0, 60.0});
  Rng rng(0x5eed, 0, 0);
  for (int adapter = 0; w.out().size() < bytes; ++adapter) {
    for (int i = 0; i < 20; ++i) h.Observe(rng.LogNormal(0.4, 0.8), 1 + rng.Pick(50));
    char handler[64];
    std::snprintf(handler, sizeof(handler), "/v1/adapters/lora-%04d/chat/completions", adapter);
    w.Histogram(family, {{"handler", handler}, {"method", "POST"}}, h);
  }
  *out = std::move(w.out());
  return out;
}

}  // namespace modelmetrics::sim
