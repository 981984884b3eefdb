// Which exporter profile reads a Pod: one selector over the registered profiles, by the Pod's role
// (engine or router), the ModelDeployment's engine or router name, and its shape (aggregated or
// prefill/decode).
//
// Engine names compare case-insensitively (`vllm`, `vLLM`); router names exactly (they are
// lowercase in every API revision). A name no profile carries selects none: its Pods are still
// scraped (so a broken one shows its scrape error) and reported `unsupported source` rather than
// read by another exporter's rules. (Upstream reads every unknown engine as SGLang.)
//
// Adding an exporter: write exporters/<name>.cc defining its ExporterProfile, and add it to
// kBuiltin in exporter_registry.cc. Register() adds one at run time (tests, extensions).
//
// Thread-safety: Select() and the name lists may be called concurrently with each other and with
// Register()/Unregister().
#ifndef MODELMETRICS_AGGREGATION_EXPORTER_REGISTRY_H_
#define MODELMETRICS_AGGREGATION_EXPORTER_REGISTRY_H_

#include <span>
#include <string>
#include <string_view>

#include "exporter_profile.h"

namespace modelmetrics::deployment {

// The profile for Pods of `role` in a deployment named `name` (its engine, or its router's
// name), of a P/D shape or not; null when none matches.
const ExporterProfile* SelectExporter(PodRole role, std::string_view name, bool prefill_decode);

// The profile for a Pod of `md` (a router Pod when `router`).
const ExporterProfile* SelectExporter(const ModelDeployment& md, bool router);

// The names profiles carry for `role`, each once, in registry order: "vllm, sglang, vllm-omni".
std::string ExporterNames(PodRole role);

// The built-in profiles, in registry order.
std::span<const ExporterProfile* const> BuiltinExporters();

// Adds `profile` (which must outlive its registration) ahead of the built-ins; Unregister()
// removes it again.
void RegisterExporter(const ExporterProfile* profile);
void UnregisterExporter(const ExporterProfile* profile);

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_AGGREGATION_EXPORTER_REGISTRY_H_
