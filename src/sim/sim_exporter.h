// A simulated exporter, as data: the name a ModelDeployment gives it (its engine, or its router's
// name), the container the operator renders for its Pods, a fresh process of its model
// (exporter_model.h), and how its HTTP framework's padding series look. One descriptor per file
// under exporters/, listed once in exporter_registry.cc; tests add their own at run time
// (sim/exporter_registry.h).
//
// Thread-safety: descriptors are immutable.
#ifndef MODELMETRICS_SIM_SIM_EXPORTER_H_
#define MODELMETRICS_SIM_SIM_EXPORTER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "exporter_model.h"
#include "exposition_writer.h"

namespace modelmetrics::sim {

struct DeploymentSimOptions;
struct SimRole;

// What the Pod's container says about it.
struct SimContainer {
  std::string name;
  std::string image;
  std::vector<std::string> command;
  std::vector<std::string> args;
};

// What a descriptor knows when it renders one Pod's container.
struct SimPodContext {
  const DeploymentSimOptions& options;
  const SimRole* role = nullptr;  // engines: the Pod's role
  RoleKind role_kind = RoleKind::kServer;
  bool prefill_decode = false;
  std::string port;                       // the Pod's metrics port
  const std::vector<WorkerRef>& workers;  // routers: the engine Pods
};

// An HTTP framework's per-handler histograms, which make a scrape as large as real ones.
struct PaddingStyle {
  Style style = Style::kPython;
  std::string_view family;
  bool blank_between_families = false;
};

struct SimExporter {
  std::string_view name;  // engines compare case-insensitively, routers exactly
  bool router = false;
  // The ModelDeployment's spec.engine.version and kvCache.connector (engines).
  std::string_view version;
  std::string_view kv_connector;
  // The Pod's container; may refine `config` from the arguments (e.g. which cache tiers exist).
  void (*container)(const SimPodContext& pod, SimContainer* container,
                    ExporterConfig* config) = nullptr;
  // A fresh process of the exporter.
  std::unique_ptr<ExporterModel> (*fresh)(const ExporterConfig& config) = nullptr;
  PaddingStyle padding;
  // The Pods run a pipeline simulation (sim/pipeline_sim.h) whose registry is the body.
  bool pipeline = false;
  // Extra rules on the options for this exporter: "" when they fit, else why not. May be null.
  std::string (*check)(const DeploymentSimOptions& options) = nullptr;
};

}  // namespace modelmetrics::sim

#endif  // MODELMETRICS_SIM_SIM_EXPORTER_H_
