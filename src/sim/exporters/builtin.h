// The built-in simulated exporters, one file each in this folder; exporter_registry.cc lists
// them.
//
// Thread-safety: immutable descriptors.
#ifndef MODELMETRICS_SIM_EXPORTERS_BUILTIN_H_
#define MODELMETRICS_SIM_EXPORTERS_BUILTIN_H_

#include "sim_exporter.h"

namespace modelmetrics::sim::exporters {

extern const SimExporter kVllm;
extern const SimExporter kSglang;
extern const SimExporter kVllmOmni;
extern const SimExporter kLlmdRouter;
extern const SimExporter kVllmRouter;
extern const SimExporter kSglangGateway;

}  // namespace modelmetrics::sim::exporters

#endif  // MODELMETRICS_SIM_EXPORTERS_BUILTIN_H_
