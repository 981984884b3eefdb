// SGLang's model gateway, smg (the Rust metrics exporter, no HELP): HTTP and router request
// counters, per-worker activity and health, and the worker pool by type.
#include <string>

#include "builtin.h"
#include "common.h"
#include "exposition_writer.h"

namespace modelmetrics::sim::exporters {
namespace {

using LabelPair = std::pair<std::string, std::string>;

struct Counters {
  std::map<std::string, double> requests;     // by streaming ("true" | "false")
  std::map<LabelPair, double> http_requests;  // method, path
  std::map<LabelPair, double> responses;      // status code, error code
  std::map<LabelPair, double> errors;         // streaming, error type
  SimHistogram duration{kRouterDurationBuckets}, router_duration{kRouterDurationBuckets};

  void Halve() { HalveAll(requests, http_requests, responses, errors, duration, router_duration); }
};

struct Gauges {
  std::vector<double> worker_running;  // by config.workers index
};

class SglangGatewayModel : public ExporterModelOf<SglangGatewayModel, Counters, Gauges> {
 public:
  explicit SglangGatewayModel(const ExporterConfig& config) : ExporterModelOf(config) {
    g_.worker_running.assign(config_.workers.size(), 0);
  }

  void Record(const RequestDraw& q, Rng& rng) override {
    const std::string stream = q.streaming ? "true" : "false";
    k_.requests[stream] += 1;
    k_.http_requests[{"POST", "/v1/chat/completions"}] += 1;
    if (config_.workers.empty()) {
      k_.responses[{"503", "no_available_workers"}] += 1;
      return;
    }
    if (rng.Chance(0.004)) {
      k_.errors[{stream, "upstream_error"}] += 1;
      k_.responses[{"502", "upstream_error"}] += 1;
      return;
    }
    k_.responses[{"200", ""}] += 1;
    k_.duration.Observe(q.e2e + 0.001);
    k_.router_duration.Observe(q.e2e + 0.0005);
  }

  void SetGauges(const TickLoad& load, Rng& rng) override {
    g_.worker_running = WorkerRunning(load, config_, rng);
  }

  std::string Render() const override;

 private:
  Labels RouterLabels(const std::string& streaming) const {
    return {
        {"router_type", "http"},     {"backend_type", config_.prefill_decode ? "pd" : "regular"},
        {"connection_mode", "http"}, {"model", config_.model},
        {"endpoint", "chat"},        {"streaming", streaming}};
  }
  void RenderRouter(Writer* w) const;
  void RenderWorkers(Writer* w) const;
};

// A labeled counter of two labels, absent before its first increment.
void Pairs(Writer* w, const char* family, const char* first, const char* second,
           const std::map<LabelPair, double>& series) {
  if (series.empty()) return;
  w->Family(family, "counter", "");
  for (const auto& [key, value] : series) {
    w->Sample(family, {{first, key.first}, {second, key.second}}, value);
  }
}

std::string SglangGatewayModel::Render() const {
  Writer w(Style::kRust, false);
  Pairs(&w, "smg_http_requests_total", "method", "path", k_.http_requests);
  if (k_.duration.observed) {
    w.Family("smg_http_request_duration_seconds", "histogram", "");
    w.Histogram("smg_http_request_duration_seconds",
                {{"method", "POST"}, {"path", "/v1/chat/completions"}}, k_.duration);
  }
  RenderRouter(&w);
  Pairs(&w, "smg_http_responses_total", "status_code", "error_code", k_.responses);
  RenderWorkers(&w);
  return std::move(w.out());
}

void SglangGatewayModel::RenderRouter(Writer* out) const {
  Writer& w = *out;
  if (!k_.requests.empty()) {
    w.Family("smg_router_requests_total", "counter", "");
    for (const auto& [streaming, value] : k_.requests) {
      w.Sample("smg_router_requests_total", RouterLabels(streaming), value);
    }
  }
  if (!k_.errors.empty()) {  // nothing before the first error
    w.Family("smg_router_request_errors_total", "counter", "");
    for (const auto& [key, value] : k_.errors) {
      Labels labels = RouterLabels(key.first);
      labels.emplace_back("error_type", key.second);
      w.Sample("smg_router_request_errors_total", labels, value);
    }
  }
  if (k_.router_duration.observed) {
    w.Family("smg_router_request_duration_seconds", "histogram", "");
    w.Histogram("smg_router_request_duration_seconds", RouterLabels("false"), k_.router_duration);
  }
}

void SglangGatewayModel::RenderWorkers(Writer* out) const {
  Writer& w = *out;
  const std::vector<WorkerRef>& workers = config_.workers;
  if (!workers.empty()) {
    w.Family("smg_worker_requests_active", "gauge", "");
    for (size_t i = 0; i < workers.size(); ++i) {
      w.Sample("smg_worker_requests_active", {{"worker", workers[i].url}}, g_.worker_running[i]);
    }
    w.Family("smg_worker_health", "gauge", "");
    for (const WorkerRef& worker : workers) {
      w.Sample("smg_worker_health", {{"worker", worker.url}}, 1);
    }
  }
  std::map<std::string, double> pool;
  for (const WorkerRef& worker : workers) {
    pool[worker.role == RoleKind::kServer ? "regular"
                                          : std::string(deployment::RoleKindName(worker.role))] +=
        1;
  }
  w.Family("smg_worker_pool_size", "gauge", "");
  if (pool.empty()) pool["regular"] = 0;
  for (const auto& [type, size] : pool) {
    w.Sample("smg_worker_pool_size", {{"worker_type", type}}, size);
  }
}

void Container(const SimPodContext& pod, SimContainer* c, ExporterConfig*) {
  c->name = "router";
  c->image = "lmsysorg/sgl-model-gateway:v0.2.2";
  c->command = {"python3", "-m", "sglang_router.launch_router"};
  c->args = RouterArgs(pod);
}

std::unique_ptr<ExporterModel> Fresh(const ExporterConfig& config) {
  return std::make_unique<SglangGatewayModel>(config);
}

}  // namespace

const SimExporter kSglangGateway{
    .name = deployment::kRouterSglangGateway,
    .router = true,
    .container = Container,
    .fresh = Fresh,
    .padding = {Style::kRust, "http_request_duration_seconds_by_handler", false},
};

}  // namespace modelmetrics::sim::exporters
