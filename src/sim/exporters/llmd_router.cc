// llm-d's inference scheduler, the endpoint picker (client_golang): pool averages, per-request
// latency and token histograms by model, error counters by code.
#include <string>

#include "builtin.h"
#include "common.h"
#include "exposition_writer.h"

namespace modelmetrics::sim::exporters {
namespace {

const std::vector<double> kLatencyBuckets = {0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8,
                                             1,     1.25,  1.5,  2,   3,   4,   5,   6,
                                             8,     10,    15,   20,  30,  45,  60,  120};
const std::vector<double> kDurationBuckets = {0.005, 0.025, 0.05, 0.1, 0.2,  0.4,  0.6,  0.8, 1,
                                              1.25,  1.5,   2,    3,   4,    5,    6,    8,   10,
                                              15,    20,    30,   45,  60,   120,  180,  240, 300,
                                              360,   480,   600,  900, 1200, 1800, 2700, 3600};
const std::vector<double> kTpotBuckets = {0.0005, 0.00205, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                          0.125,  0.15,    0.2,   0.3,  0.4,  0.5,  0.6,  0.8,  1,
                                          1.5,    2,       3,     4.5,  6,    12,   18,   24,   30,
                                          36,     48,      60,    90,   120,  180,  270,  360};
const std::vector<double> kNtpotBuckets = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1,
                                           0.2,   0.5,   1,     2,    5,    10};
const std::vector<double> kItlBuckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                         0.15,  0.2,   0.3,  0.5,  0.75, 1,    2};
const std::vector<double> kTokenBuckets = {1,     8,      16,     32,     64,     128,   256,
                                           512,   1024,   2048,   4096,   8192,   16384, 32778,
                                           65536, 131072, 262144, 524288, 1048576};
const std::vector<double> kSchedulerBuckets = {0.0001, 0.0002, 0.0005, 0.001, 0.002,
                                               0.005,  0.01,   0.02,   0.05,  0.1};

struct Counters {
  double requests = 0;
  std::map<std::string, double> errors;  // by error code
  SimHistogram ttft{kLatencyBuckets}, ttft_streaming{kLatencyBuckets};
  SimHistogram tpot{kTpotBuckets}, ntpot{kNtpotBuckets}, itl{kItlBuckets};
  SimHistogram duration{kDurationBuckets}, input_tokens{kTokenBuckets};
  SimHistogram output_tokens{kTokenBuckets}, scheduler{kSchedulerBuckets};

  void Halve() {
    HalveAll(requests, errors, ttft, ttft_streaming, tpot, ntpot, itl, duration, input_tokens,
             output_tokens, scheduler);
  }
};

struct Gauges {
  double running = 0, avg_kv = 0, avg_queue = 0, avg_running = 0;
};

class LlmdRouterModel : public ExporterModelOf<LlmdRouterModel, Counters, Gauges> {
 public:
  using ExporterModelOf::ExporterModelOf;

  void Record(const RequestDraw& q, Rng& rng) override {
    const double router_ttft = q.ttft + rng.Between(0.001, 0.004);
    if (rng.Chance(0.01)) {
      k_.errors[rng.Chance(0.5) ? "BadRequest" : "ServiceUnavailable"] += 1;
      return;
    }
    k_.requests += 1;
    if (q.streaming) {
      k_.ttft_streaming.Observe(router_ttft);
      k_.tpot.Observe(q.itl);
      k_.itl.Observe(q.itl, q.output - 1);
    } else {
      k_.ttft.Observe(q.e2e);  // a non-streaming request's first byte is its last
    }
    k_.ntpot.Observe(q.e2e / q.output);
    k_.duration.Observe(q.e2e + 0.002);
    k_.input_tokens.Observe(q.prompt);
    k_.output_tokens.Observe(q.output);
    k_.scheduler.Observe(rng.Between(0.00002, 0.0003));
  }

  void SetGauges(const TickLoad& load, Rng& rng) override {
    const auto workers = static_cast<double>(config_.workers.size());
    g_.running = load.running;
    g_.avg_running = workers == 0 ? 0 : load.running / workers;
    g_.avg_queue = load.waiting;
    g_.avg_kv = load.running * rng.Between(0.00001, 0.0001);
  }

  std::string Render() const override;

 private:
  void RenderPool(Writer* w) const;
};

std::string LlmdRouterModel::Render() const {
  Writer w(Style::kGo, false);
  const std::string& model = config_.model;
  const Labels request = {{"fairness_id", "default-flow"},
                          {"model_name", model},
                          {"priority", "0"},
                          {"target_model_name", model}};
  // Labeled vectors export nothing, not even HELP/TYPE, before their first observation.
  auto histogram = [&](const char* name, const char* help, const SimHistogram& h) {
    if (!h.observed || config_.Has(SimVariant::kOlderNames)) return;
    w.Family(name, "histogram", help);
    w.Histogram(name, request, h);
  };
  RenderPool(&w);
  // A router before the llm_d_epp_ names (pkg/epp/metrics/metrics.go): the families the
  // snapshot reads by their inference_objective_/inference_pool_ names, no TTFT or TPOT.
  const bool older = config_.Has(SimVariant::kOlderNames);
  auto name = [older](const char* current, const char* legacy) { return older ? legacy : current; };
  histogram("llm_d_epp_request_duration_seconds",
            "[ALPHA] End-to-end request latency distribution in seconds.", k_.duration);
  if (!k_.errors.empty()) {  // labeled: nothing before the first error
    const char* errors =
        name("llm_d_epp_request_error_total", "inference_objective_request_error_total");
    w.Family(errors, "counter",
             "[ALPHA] Counter of inference model requests errors broken out for each model and "
             "target model.");
    for (const auto& [code, value] : k_.errors) {
      w.Sample(errors,
               With(older ? Labels{{"model_name", model}, {"target_model_name", model}} : request,
                    {{"error_code", code}}),
               value);
    }
  }
  histogram("llm_d_epp_request_input_tokens", "[ALPHA] Input token count distribution per request.",
            k_.input_tokens);
  histogram("llm_d_epp_request_ntpot_seconds",
            "[ALPHA] Normalized time per output token in seconds (end-to-end latency divided by "
            "output token count).",
            k_.ntpot);
  histogram("llm_d_epp_request_output_tokens",
            "[ALPHA] Output token count distribution per request.", k_.output_tokens);
  const char* running = name("llm_d_epp_request_running", "inference_objective_running_requests");
  w.Family(running, "gauge", "[ALPHA] Current number of active running requests.");
  w.Sample(running, older ? Labels{{"model_name", model}} : request, g_.running);
  histogram("llm_d_epp_request_streaming_itl_seconds",
            "[ALPHA] Inter-token latency in seconds for streaming requests, measured as the time "
            "between consecutive response body chunks.",
            k_.itl);
  histogram("llm_d_epp_request_streaming_tpot_seconds",
            "[ALPHA] Time per output token in seconds for streaming requests.", k_.tpot);
  if (k_.requests > 0) {
    const char* requests = name("llm_d_epp_request_total", "inference_objective_request_total");
    w.Family(requests, "counter", "[ALPHA] Total number of processed requests.");
    w.Sample(requests, request, k_.requests);
  }
  if (older) return std::move(w.out());
  if (k_.ttft.observed || k_.ttft_streaming.observed) {
    w.Family("llm_d_epp_request_ttft_seconds", "histogram",
             "[ALPHA] Time to first token in seconds, measured from request received to first "
             "response byte. For non-streaming requests, this equals total request duration.");
  }
  if (k_.ttft.observed) {
    w.Histogram("llm_d_epp_request_ttft_seconds", With(request, {{"streaming", "false"}}), k_.ttft);
  }
  if (k_.ttft_streaming.observed) {
    w.Histogram("llm_d_epp_request_ttft_seconds", With(request, {{"streaming", "true"}}),
                k_.ttft_streaming);
  }
  w.Family("llm_d_epp_scheduler_e2e_duration_seconds", "histogram",
           "[ALPHA] End-to-end scheduling latency distribution in seconds.");
  w.Histogram("llm_d_epp_scheduler_e2e_duration_seconds", {}, k_.scheduler);
  return std::move(w.out());
}

// The inference pool's gauges, first in the scrape.
void LlmdRouterModel::RenderPool(Writer* out) const {
  Writer& w = *out;
  const Labels pool = {{"name", config_.pool_name}};
  const bool older = config_.Has(SimVariant::kOlderNames);
  const std::string prefix = older ? "inference_pool_" : "llm_d_epp_";
  auto gauge = [&](const std::string& name, const char* help, double value) {
    w.Family(name, "gauge", help);
    w.Sample(name, pool, value);
  };
  gauge(prefix + "average_kv_cache_utilization",
        "[ALPHA] The average kv cache utilization for an inference server pool.", g_.avg_kv);
  gauge(prefix + "average_queue_size",
        "[ALPHA] The average number of requests pending in the model server queue.", g_.avg_queue);
  gauge(prefix + "average_running_requests",
        "[ALPHA] The average number of running requests across model servers in the pool.",
        g_.avg_running);
  gauge(older ? "inference_pool_ready_pods" : "llm_d_epp_ready_endpoints",
        "[ALPHA] The number of ready endpoints in the inference server pool.",
        static_cast<double>(config_.workers.size()));
  if (older) return;
  w.Family("llm_d_epp_info", "gauge",
           "[ALPHA] General information of the current build of Inference Extension.");
  w.Sample("llm_d_epp_info", {{"build_ref", ""}, {"commit", "unknown"}}, 1);
  w.Family("llm_d_epp_per_endpoint_queue_size", "gauge",
           "[ALPHA] The total number of requests pending in the model server queue for each "
           "underlying endpoint.");
  for (const WorkerRef& worker : config_.workers) {
    w.Sample("llm_d_epp_per_endpoint_queue_size",
             With(pool, {{"model_server_endpoint", worker.url}}), 0);
  }
}

void Container(const SimPodContext& pod, SimContainer* c, ExporterConfig*) {
  const DeploymentSimOptions& o = pod.options;
  c->name = "epp";
  c->image = "ghcr.io/llm-d/llm-d-inference-scheduler:v0.3.0";
  c->args = {"--pool-name",    o.name + "-pool", "--pool-namespace", o.ns,
             "--metrics-port", pod.port,         "--grpc-port",      "9002"};
}

std::unique_ptr<ExporterModel> Fresh(const ExporterConfig& config) {
  return std::make_unique<LlmdRouterModel>(config);
}

}  // namespace

const SimExporter kLlmdRouter{
    .name = deployment::kRouterLlmd,
    .router = true,
    .container = Container,
    .fresh = Fresh,
    .padding = {Style::kGo, "llm_d_epp_http_request_duration_seconds", false},
};

}  // namespace modelmetrics::sim::exporters
