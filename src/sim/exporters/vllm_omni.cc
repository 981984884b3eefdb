// vLLM-Omni's server: each Pod runs one whole pipeline simulation (sim/pipeline_sim.h), whose
// registry is the body, as a vLLM-Omni server serves its orchestrator's. Its model only keeps the
// clock.
#include <string>

#include "builtin.h"
#include "common.h"
#include "sim/deployment_sim.h"

namespace modelmetrics::sim::exporters {
namespace {

class ClockOnly : public ExporterModelOf<ClockOnly, NoCounters, NoGauges> {
 public:
  using ExporterModelOf::ExporterModelOf;
  void Record(const RequestDraw&, Rng&) override {}
  void SetGauges(const TickLoad&, Rng&) override {}
  std::string Render() const override { return ""; }
};

void Container(const SimPodContext& pod, SimContainer* c, ExporterConfig*) {
  c->name = "engine";
  c->image = "vllm/vllm-omni:v0.11.0";
  c->command = {"vllm", "serve"};
  c->args = {pod.options.model, "--omni", "--host", "0.0.0.0", "--port", pod.port};
  AppendRoleArgs(pod, c);
}

std::unique_ptr<ExporterModel> Fresh(const ExporterConfig& config) {
  return std::make_unique<ClockOnly>(config);
}

// A Pod runs its whole pipeline: no P/D halves, no router, and its counters live in a real
// registry, which cannot be halved.
std::string Check(const DeploymentSimOptions& o) {
  if (!o.router.empty()) return "a vllm-omni deployment has no router here";
  for (const SimRole& role : o.roles) {
    if (role.kind != RoleKind::kServer) {
      return "role " + role.name + ": a vllm-omni role is of kind server";
    }
  }
  for (const auto& [name, fault] : o.faults) {
    if (fault == PodFault::kCounterReset) {
      return "fault counter-reset: not available on vllm-omni Pods (use restart)";
    }
  }
  return "";
}

}  // namespace

const SimExporter kVllmOmni{
    .name = deployment::kEngineVllmOmni,
    .version = "0.11.0",
    .kv_connector = "lmcache",
    .container = Container,
    .fresh = Fresh,
    .padding = kPythonServerPadding,
    .pipeline = true,
    .check = Check,
};

}  // namespace modelmetrics::sim::exporters
