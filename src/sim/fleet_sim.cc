// See fleet_sim.h.
#include "sim/fleet_sim.h"

#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/file.h"

namespace modelmetrics::sim {

FleetSim::FleetSim(FleetSimOptions options) : options_(std::move(options)) {}

FleetSim::~FleetSim() { Stop(); }

namespace {

// The upstream variants deployment `d` of the fleet writes, so that a fleet run reads each one
// through a real store: SGLang with priority scheduling and every scheduler logging, an llm-d
// router whose clients never stream, and the older names of vLLM and the llm-d router.
std::vector<SimVariant> VariantsOf(int d) {
  switch (d % 8) {
    case 1:
      return {SimVariant::kPriority, SimVariant::kAllSchedulers};
    case 2:
    case 7:
      return {SimVariant::kOlderNames};
    case 3:
      return {SimVariant::kNonStreaming};
    default:
      return {};
  }
}

}  // namespace

Status FleetSim::Start() {
  if (options_.deployments < 1 || options_.pods < 1) {
    return Status::InvalidArgument("a fleet needs at least one deployment of at least one Pod");
  }
  nlohmann::json items = nlohmann::json::array();
  nlohmann::json targets = nlohmann::json::array();
  const int total = options_.deployments + static_cast<int>(options_.extra_sizes.size());
  for (int d = 0; d < total; ++d) {
    const bool extra = d >= options_.deployments;
    const int pods = extra ? options_.extra_sizes[d - options_.deployments] : options_.pods;
    DeploymentSimOptions o;
    o.name = extra ? fmt::format("{}-{}pods", options_.name_prefix, pods)
                   : fmt::format("{}-{:02}", options_.name_prefix, d);
    o.ns = options_.ns;
    o.engine = extra || d % 2 == 0 ? "vllm" : "sglang";
    o.router = !extra && d % 4 == 3 && pods > 1 ? "llm-d-router" : "";
    const int engines = pods - (o.router.empty() ? 0 : 1);
    o.roles = {{.name = "server", .kind = deployment::RoleKind::kServer, .replicas = engines}};
    o.seed = options_.seed + static_cast<uint64_t>(d);
    if (!extra) o.variants = VariantsOf(d);
    o.requests_per_second = options_.requests_per_second;
    sims_.push_back(std::make_unique<DeploymentSim>(o));
    if (Status started = sims_.back()->Start(); !started.ok()) {
      return started.Prefixed(o.name + ": ");
    }
    nlohmann::json objects = nlohmann::json::parse(sims_.back()->ObjectsJson());
    for (auto& item : objects["items"]) items.push_back(std::move(item));
    nlohmann::json groups = nlohmann::json::parse(FileSdJson(o, sims_.back()->Pods()));
    for (auto& group : groups) targets.push_back(std::move(group));
  }
  if (!options_.objects_file.empty()) {
    const nlohmann::json list{{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
    if (Status written = base::WriteFileAtomically(options_.objects_file, list.dump() + "\n");
        !written.ok()) {
      return written;
    }
  }
  if (options_.file_sd_file.empty()) return Status::Ok();
  return base::WriteFileAtomically(options_.file_sd_file, targets.dump(1) + "\n");
}

void FleetSim::Stop() {
  for (auto& sim : sims_) sim->Stop();
}

size_t FleetSim::PodCount() const {
  size_t pods = 0;
  for (const auto& sim : sims_) pods += sim->PodNames().size();
  return pods;
}

int RunFleetSimulator(const FleetSimOptions& options, std::chrono::milliseconds duration,
                      std::ostream& out, std::ostream& err, const StopWait& wait) {
  FleetSim fleet(options);
  if (const base::Status started = fleet.Start(); !started.ok()) {
    err << "simulate fleet: " << started.message() << "\n";
    return 1;
  }
  out << "fleet " << options.ns << ": " << fleet.deployments().size() << " deployments, "
      << fleet.PodCount() << " Pods on 127.0.0.1\n";
  if (!options.objects_file.empty()) out << "objects: " << options.objects_file << "\n";
  if (!options.file_sd_file.empty()) out << "file_sd targets: " << options.file_sd_file << "\n";
  out.flush();
  WaitOut(wait, duration);
  fleet.Stop();
  RemoveOutputFiles(options.objects_file, options.file_sd_file);
  return 0;
}

}  // namespace modelmetrics::sim
