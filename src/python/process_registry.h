// The one Registry a Python process records into, and the catalog families in it. Private to
// src/python.
//
// Contract. Families are registered by catalog group, when a module of the package that owns the
// group is imported (prometheus: pipeline + image; modality: diffusion + audio + speech; transfer;
// realtime) or an object of its class is built, as upstream registers each module's
// prometheus_client families at import. Registering a group again is a no-op. The registry is
// always enabled: gating is per object (`log_stats`), as upstream's. It lives for the process
// (never destroyed, so handles held by any object stay valid at interpreter exit).
//
// Thread-safety: RegisterGroup and OmniFamily are called with the GIL held; the Registry itself
// is thread-safe and is rendered with the GIL released.
#ifndef MODELMETRICS_PYTHON_PROCESS_REGISTRY_H_
#define MODELMETRICS_PYTHON_PROCESS_REGISTRY_H_

#include <cstddef>
#include <string>

#include "modelmetrics/metrics.h"
#include "pipeline/catalog.h"

namespace modelmetrics::python {

Registry& ProcessRegistry();

// Registers every catalog family of `group`; an error on a name collision.
base::Status RegisterGroup(pipeline::Group group);

// The registered family; monostate while its group is unregistered.
const pipeline::AnyFamily& RegisteredFamily(pipeline::OmniFamily family);

}  // namespace modelmetrics::python

#endif  // MODELMETRICS_PYTHON_PROCESS_REGISTRY_H_
