// vLLM's OpenAI server (prometheus_client): the per-engine vllm:* families of one engine, its
// cache configuration and the API server's HTTP counters.
#include <algorithm>
#include <string>

#include "builtin.h"
#include "common.h"
#include "exposition_writer.h"

namespace modelmetrics::sim::exporters {
namespace {

const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                          0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                          20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kItlBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                         0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> kRequestLatencyBuckets = {
    0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
    30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
const std::vector<double> kTokenBuckets = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000};
const std::vector<double> kIterationBuckets = {1,   8,    16,   32,   64,   128,  256,
                                               512, 1024, 2048, 4096, 8192, 16384};

struct Counters {
  double prefix_queries = 0, prefix_hits = 0;
  double external_queries = 0, external_hits = 0;
  double prompt_tokens = 0, generation_tokens = 0, preemptions = 0;
  double success_stop = 0, success_length = 0, success_abort = 0;
  double http_chat = 0, http_models = 0, http_health = 0;
  SimHistogram ttft{kTtftBuckets}, itl{kItlBuckets}, tpot{kItlBuckets};
  SimHistogram e2e{kRequestLatencyBuckets}, queue{kRequestLatencyBuckets};
  SimHistogram inference{kRequestLatencyBuckets}, prefill{kRequestLatencyBuckets};
  SimHistogram decode{kRequestLatencyBuckets};
  SimHistogram prompt{kTokenBuckets}, generation{kTokenBuckets};
  SimHistogram iteration{kIterationBuckets}, kv_computed{kTokenBuckets};

  void Halve() {
    HalveAll(prefix_queries, prefix_hits, external_queries, external_hits, prompt_tokens,
             generation_tokens, preemptions, success_stop, success_length, success_abort, http_chat,
             http_models, http_health, ttft, itl, tpot, e2e, queue, inference, prefill, decode,
             prompt, generation, iteration, kv_computed);
  }
};

struct Gauges {
  double running = 0, waiting = 0, kv_usage = 0;
};

class VllmModel : public ExporterModelOf<VllmModel, Counters, Gauges> {
 public:
  using ExporterModelOf::ExporterModelOf;

  void Record(const RequestDraw& q, Rng& rng) override {
    k_.prefix_queries += q.prompt;
    k_.prefix_hits += q.local_hits;
    const double missing = q.prompt - q.local_hits;
    if (config_.kv_connector && q.decode) {
      // The point-to-point leg supplies every block decode lacks: hits equal queries.
      k_.external_queries += missing;
      k_.external_hits += missing;
    } else if (config_.kv_connector && config_.kv_pool) {
      k_.external_queries += missing;
      k_.external_hits += std::floor(missing * rng.Between(0.2, 0.6) / 16) * 16;
    }
    k_.prompt_tokens += q.prompt;
    k_.generation_tokens += q.output;
    (q.output >= 1024 || rng.Chance(0.3) ? k_.success_length : k_.success_stop) += 1;
    k_.http_chat += 1;
    k_.ttft.Observe(q.ttft);
    // A request with at most one output token records a zero TPOT; ITL only from token 2.
    k_.tpot.Observe(q.output > 1 ? q.itl : 0);
    k_.itl.Observe(q.itl, q.output - 1);
    k_.e2e.Observe(q.e2e);
    k_.queue.Observe(q.queue);
    k_.prefill.Observe(q.prefill_time + q.transfer_wait);
    k_.decode.Observe(q.decode_time);
    k_.inference.Observe(q.prefill_time + q.transfer_wait + q.decode_time);
    k_.prompt.Observe(q.prompt);
    k_.generation.Observe(q.output);
    k_.iteration.Observe(q.prompt - q.local_hits);
    k_.iteration.Observe(1, q.output - 1);
    k_.kv_computed.Observe(q.prompt - q.local_hits);
  }

  void SetGauges(const TickLoad& load, Rng& rng) override {
    g_.running = load.running;
    g_.waiting = load.waiting;
    g_.kv_usage = config_.KvFraction(load.running, rng);
  }

  std::string Render() const override;

 private:
  void RenderInfoAndHttp(Writer* out) const;
};

std::string VllmModel::Render() const {
  Writer w(Style::kPython, false);
  const Labels base = {{"engine", "0"}, {"model_name", config_.model}};
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
  auto histogram = [&](const char* name, const char* help, const SimHistogram& h) {
    w.Family(name, "histogram", help);
    w.Histogram(name, labels(), h);
  };
  gauge("vllm:num_requests_running", "Number of requests in model execution batches.", g_.running);
  gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", g_.waiting);
  w.Family(
      "vllm:engine_sleep_state", "gauge",
      "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is "
      "awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.");
  w.Sample("vllm:engine_sleep_state", labels({{"sleep_state", "awake"}}), 1);
  w.Sample("vllm:engine_sleep_state", labels({{"sleep_state", "weights_offloaded"}}), 0);
  w.Sample("vllm:engine_sleep_state", labels({{"sleep_state", "discard_all"}}), 0);
  gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", g_.kv_usage);
  // vLLM before 0.9.2 named the prefix cache counters with a gpu_ prefix, and before 0.11 the
  // inter-token latency histogram time_per_output_token_seconds (vllm/v1/metrics/loggers.py).
  const bool older = config_.Has(SimVariant::kOlderNames);
  counter(older ? "vllm:gpu_prefix_cache_queries_total" : "vllm:prefix_cache_queries_total",
          "Prefix cache queries, in terms of number of queried tokens.", k_.prefix_queries);
  counter(older ? "vllm:gpu_prefix_cache_hits_total" : "vllm:prefix_cache_hits_total",
          "Prefix cache hits, in terms of number of cached tokens.", k_.prefix_hits);
  counter("vllm:external_prefix_cache_queries_total",
          "External prefix cache queries from KV connector cross-instance cache sharing, in "
          "terms of number of queried tokens.",
          k_.external_queries);
  counter("vllm:external_prefix_cache_hits_total",
          "External prefix cache hits from KV connector cross-instance cache sharing, in terms "
          "of number of cached tokens.",
          k_.external_hits);
  counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.",
          k_.preemptions);
  counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", k_.prompt_tokens);
  counter("vllm:generation_tokens_total", "Number of generation tokens processed.",
          k_.generation_tokens);
  w.Family("vllm:request_success_total", "counter", "Count of successfully processed requests.");
  w.Sample("vllm:request_success_total", labels({{"finished_reason", "stop"}}), k_.success_stop);
  w.Sample("vllm:request_success_total", labels({{"finished_reason", "length"}}),
           k_.success_length);
  w.Sample("vllm:request_success_total", labels({{"finished_reason", "abort"}}), k_.success_abort);
  histogram("vllm:request_prompt_tokens", "Number of prefill tokens processed.", k_.prompt);
  histogram("vllm:request_generation_tokens", "Number of generation tokens processed.",
            k_.generation);
  histogram("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.",
            k_.iteration);
  histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
            k_.ttft);
  histogram(older ? "vllm:time_per_output_token_seconds" : "vllm:inter_token_latency_seconds",
            "Histogram of inter-token latency in seconds.", k_.itl);
  histogram("vllm:request_time_per_output_token_seconds",
            "Histogram of time_per_output_token_seconds per request.", k_.tpot);
  histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
            k_.e2e);
  histogram("vllm:request_queue_time_seconds",
            "Histogram of time spent in WAITING phase for request.", k_.queue);
  histogram("vllm:request_inference_time_seconds",
            "Histogram of time spent in RUNNING phase for request.", k_.inference);
  histogram("vllm:request_prefill_time_seconds",
            "Histogram of time spent in PREFILL phase for request.", k_.prefill);
  histogram("vllm:request_decode_time_seconds",
            "Histogram of time spent in DECODE phase for request.", k_.decode);
  histogram("vllm:request_prefill_kv_computed_tokens",
            "Histogram of new KV tokens computed during prefill (excluding cached tokens).",
            k_.kv_computed);
  RenderInfoAndHttp(&w);
  return std::move(w.out());
}

// The last families: the cache configuration and the API server's HTTP counters.
void VllmModel::RenderInfoAndHttp(Writer* out) const {
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
  const struct {
    const char* handler;
    const char* method;
    double value;
  } rows[] = {{"/v1/chat/completions", "POST", k_.http_chat},
              {"/v1/models", "GET", k_.http_models},
              {"/health", "GET", k_.http_health}};
  for (const auto& row : rows) {
    w.Sample("http_requests_total",
             {{"handler", row.handler}, {"method", row.method}, {"status", "2xx"}}, row.value);
  }
}

// The connector the operator renders: P/D pairs use NIXL, a pool LMCache, both a MultiConnector.
std::string ConnectorJson(const SimPodContext& pod) {
  if (pod.prefill_decode && pod.options.kv_cache) {
    return R"({"kv_connector":"MultiConnector","kv_role":"kv_both","kv_connector_extra_config":{"connectors":[{"kv_connector":"NixlConnector","kv_role":"kv_both"},{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}]}})";
  }
  if (pod.prefill_decode) return R"({"kv_connector":"NixlConnector","kv_role":"kv_both"})";
  return R"({"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"})";
}

void Container(const SimPodContext& pod, SimContainer* c, ExporterConfig* config) {
  const DeploymentSimOptions& o = pod.options;
  c->name = "engine";
  c->image = "vllm/vllm-openai:v0.11.0";
  c->command = {"vllm", "serve"};
  c->args = {o.model, "--host", "0.0.0.0", "--port", pod.port, "--served-model-name", o.model};
  if (o.kv_connector || o.kv_cache || pod.prefill_decode) {
    c->args.insert(c->args.end(), {"--kv-transfer-config", ConnectorJson(pod)});
  }
  AppendRoleArgs(pod, c);
  config->kv_connector = HasArg(c->args, "--kv-transfer-config");
}

std::unique_ptr<ExporterModel> Fresh(const ExporterConfig& config) {
  return std::make_unique<VllmModel>(config);
}

}  // namespace

const SimExporter kVllm{
    .name = deployment::kEngineVllm,
    .version = "0.11.0",
    .kv_connector = "lmcache",
    .container = Container,
    .fresh = Fresh,
    .padding = kPythonServerPadding,
};

}  // namespace modelmetrics::sim::exporters
