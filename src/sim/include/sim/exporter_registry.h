// Which simulated exporter plays a Pod: the built-ins (one file each under sim/exporters/) and
// any registered at run time, found by the name a ModelDeployment gives its engine (any case) or
// its router (exact). The deployment simulator resolves its options' names here once, at Start;
// the CLI lists the names it accepts from here.
//
// Adding an exporter: write sim/exporters/<name>.cc defining its SimExporter, and add it to
// kBuiltin in exporter_registry.cc. RegisterSimExporter() adds one at run time (tests).
//
// Thread-safety: every function may be called concurrently with the others.
#ifndef MODELMETRICS_SIM_EXPORTER_REGISTRY_H_
#define MODELMETRICS_SIM_EXPORTER_REGISTRY_H_

#include <string>
#include <string_view>
#include <vector>

namespace modelmetrics::sim {

struct SimExporter;  // sim_exporter.h

// The engine (router) exporter named `name`; null when there is none.
const SimExporter* FindSimEngine(std::string_view name);
const SimExporter* FindSimRouter(std::string_view name);

// The names of the engines (routers), each once, in registry order: {"vllm", "sglang", ...}.
std::vector<std::string> SimEngineNames();
std::vector<std::string> SimRouterNames();

// Adds `exporter` ahead of the built-ins; UnregisterSimExporter() removes it again. It must
// outlive every DeploymentSim started while it was registered (their Pods keep the pointer).
void RegisterSimExporter(const SimExporter* exporter);
void UnregisterSimExporter(const SimExporter* exporter);

}  // namespace modelmetrics::sim

#endif  // MODELMETRICS_SIM_EXPORTER_REGISTRY_H_
