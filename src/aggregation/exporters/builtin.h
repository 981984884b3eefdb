// The built-in exporter profiles (one file each in this folder), for the registry and for code and
// tests that name one. The engine-specific Pod checks their rules use are declared here too.
//
// Thread-safety: immutable after static initialisation; the checks are pure functions.
#ifndef MODELMETRICS_AGGREGATION_EXPORTERS_BUILTIN_H_
#define MODELMETRICS_AGGREGATION_EXPORTERS_BUILTIN_H_

#include "../exporter_profile.h"  // relative: white-box tests include this header too

namespace modelmetrics::deployment::exporters {

extern const ExporterProfile kVllm;           // vllm.cc
extern const ExporterProfile kSglang;         // sglang.cc
extern const ExporterProfile kVllmOmni;       // vllm_omni.cc
extern const ExporterProfile kLlmdRouter;     // llmd_router.cc
extern const ExporterProfile kVllmRouter;     // vllm_router.cc
extern const ExporterProfile kVllmRouterPd;   // vllm_router_pd.cc
extern const ExporterProfile kSglangGateway;  // sglang_gateway.cc

}  // namespace modelmetrics::deployment::exporters

namespace modelmetrics::deployment {

// The tiers an SGLang Pod builds, from its containers' command and args (init containers are not
// read), resolved with argparse-style abbreviations.
struct SglangTiers {
  bool host = false;
  bool storage = false;
};
SglangTiers DetectSglangTiers(const Pod& pod);

// Some container's command or args renders `--kv-transfer-config` (exact name, `=value` allowed).
bool RendersKvConnector(const Pod& pod);

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_AGGREGATION_EXPORTERS_BUILTIN_H_
