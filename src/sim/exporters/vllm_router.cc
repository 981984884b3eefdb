// vllm-router (the Rust metrics exporter: no HELP, blank lines between families): per-worker
// routing counters, per-route errors, and in P/D mode only its policy, per-worker and pd_*
// series.
#include <string>

#include "builtin.h"
#include "common.h"
#include "exposition_writer.h"

namespace modelmetrics::sim::exporters {
namespace {

constexpr std::string_view kRoute = "/v1/chat/completions";

using RouteError = std::pair<std::string, std::string>;  // route, error_type

struct Counters {
  std::map<std::string, double> policy, processed;  // by worker URL
  std::optional<double> requests, retries_exhausted;
  std::map<RouteError, double> errors;
  // P/D mode.
  std::map<std::string, double> pd_prefill, pd_decode;  // by worker URL
  std::optional<double> pd_requests;
  std::map<RouteError, double> pd_errors;
  SimHistogram duration{kRouterDurationBuckets};

  void Halve() {
    HalveAll(policy, processed, requests, retries_exhausted, errors, pd_prefill, pd_decode,
             pd_requests, pd_errors, duration);
  }
};

struct Gauges {
  std::vector<double> worker_running;  // by config.workers index
};

void Add(std::optional<double>& counter) { counter = counter.value_or(0) + 1; }

class VllmRouterModel : public ExporterModelOf<VllmRouterModel, Counters, Gauges> {
 public:
  explicit VllmRouterModel(const ExporterConfig& config) : ExporterModelOf(config) {
    g_.worker_running.assign(config_.workers.size(), 0);
  }

  void Record(const RequestDraw& q, Rng& rng) override {
    if (config_.workers.empty()) return;
    if (config_.prefill_decode ? RecordPrefillDecode(rng) : RecordOne(rng)) {
      k_.duration.Observe(q.e2e + 0.001);
    }
  }

  void SetGauges(const TickLoad& load, Rng& rng) override {
    g_.worker_running = WorkerRunning(load, config_, rng);
  }

  std::string Render() const override;

 private:
  // One routed request; false when it failed.
  bool RecordOne(Rng& rng) {
    const WorkerRef& w = config_.workers[rng.Pick(config_.workers.size())];
    k_.policy[w.url] += 1;
    k_.processed[w.url] += 1;
    if (rng.Chance(0.004)) {
      k_.errors[{std::string(kRoute), "upstream_error"}] += 1;
      if (rng.Chance(0.5)) Add(k_.retries_exhausted);
      return false;
    }
    Add(k_.requests);
    return true;
  }

  bool RecordPrefillDecode(Rng& rng) {
    std::vector<const WorkerRef*> prefills, decodes;
    for (const WorkerRef& w : config_.workers) {
      (w.role == RoleKind::kPrefill ? prefills : decodes).push_back(&w);
    }
    if (prefills.empty() || decodes.empty()) return false;
    const WorkerRef* p = prefills[rng.Pick(prefills.size())];
    const WorkerRef* d = decodes[rng.Pick(decodes.size())];
    k_.policy[p->url] += 1;
    k_.policy[d->url] += 1;
    k_.processed[p->url] += 1;
    k_.processed[d->url] += 1;
    k_.pd_prefill[p->url] += 1;
    k_.pd_decode[d->url] += 1;
    if (rng.Chance(0.004)) {
      k_.pd_errors[{std::string(kRoute), "decode_error"}] += 1;
      return false;
    }
    Add(k_.pd_requests);
    return true;
  }

  void RenderPrefillDecode(Writer* w) const;
};

// Labeled: nothing before the first increment.
void PerWorker(Writer* w, const char* family, const std::map<std::string, double>& series) {
  if (series.empty()) return;
  w->Family(family, "counter", "");
  for (const auto& [worker, value] : series) w->Sample(family, {{"worker", worker}}, value);
}

void PerRouteErrors(Writer* w, const char* family, const std::map<RouteError, double>& series) {
  if (series.empty()) return;
  w->Family(family, "counter", "");
  for (const auto& [key, value] : series) {
    w->Sample(family, {{"route", key.first}, {"error_type", key.second}}, value);
  }
}

void PerRoute(Writer* w, const char* family, const std::optional<double>& value) {
  if (!value) return;
  w->Family(family, "counter", "");
  w->Sample(family, {{"route", std::string(kRoute)}}, *value);
}

std::string VllmRouterModel::Render() const {
  Writer w(Style::kRust, /*blank_between_families=*/true);
  if (config_.prefill_decode) {
    RenderPrefillDecode(&w);
    return std::move(w.out());
  }
  PerRoute(&w, "vllm_router_requests_total", k_.requests);
  PerRouteErrors(&w, "vllm_router_request_errors_total", k_.errors);
  PerRoute(&w, "vllm_router_retries_exhausted_total", k_.retries_exhausted);
  w.Family("vllm_router_running_requests", "gauge", "");
  for (size_t i = 0; i < config_.workers.size(); ++i) {
    w.Sample("vllm_router_running_requests", {{"worker", config_.workers[i].url}},
             g_.worker_running[i]);
  }
  PerWorker(&w, "vllm_router_processed_requests_total", k_.processed);
  w.Family("vllm_router_active_workers", "gauge", "");
  w.Sample("vllm_router_active_workers", {}, static_cast<double>(config_.workers.size()));
  if (k_.duration.observed) {
    w.Family("vllm_router_request_duration_seconds", "histogram", "");
    w.Histogram("vllm_router_request_duration_seconds", {{"route", std::string(kRoute)}},
                k_.duration);
  }
  return std::move(w.out());
}

// P/D mode records only its policy, per-worker and pd_* series.
void VllmRouterModel::RenderPrefillDecode(Writer* out) const {
  Writer& w = *out;
  if (!k_.policy.empty()) {
    w.Family("vllm_router_policy_decisions_total", "counter", "");
    for (const auto& [worker, value] : k_.policy) {
      w.Sample("vllm_router_policy_decisions_total",
               {{"policy", "cache_aware"}, {"worker", worker}}, value);
    }
  }
  PerWorker(&w, "vllm_router_pd_decode_requests_total", k_.pd_decode);
  PerWorker(&w, "vllm_router_pd_prefill_requests_total", k_.pd_prefill);
  PerWorker(&w, "vllm_router_processed_requests_total", k_.processed);
  PerRoute(&w, "vllm_router_pd_requests_total", k_.pd_requests);
  PerRouteErrors(&w, "vllm_router_pd_errors_total", k_.pd_errors);
  if (k_.duration.observed) {
    w.Family("vllm_router_pd_request_duration_seconds", "histogram", "");
    w.Histogram("vllm_router_pd_request_duration_seconds", {{"route", std::string(kRoute)}},
                k_.duration);
  }
}

void Container(const SimPodContext& pod, SimContainer* c, ExporterConfig*) {
  c->name = "router";
  c->image = "vllm/vllm-router:v0.1.7";
  c->command = {"vllm-router"};
  c->args = RouterArgs(pod);
}

std::unique_ptr<ExporterModel> Fresh(const ExporterConfig& config) {
  return std::make_unique<VllmRouterModel>(config);
}

}  // namespace

const SimExporter kVllmRouter{
    .name = deployment::kRouterVllm,
    .router = true,
    .container = Container,
    .fresh = Fresh,
    .padding = kRustRouterPadding,
};

}  // namespace modelmetrics::sim::exporters
