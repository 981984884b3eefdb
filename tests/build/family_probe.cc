// Planted for build.FamiliesAreTyped: a vllm_omni family is named by its id, and its handle has
// the family's instrument type. PROBE_RIGHT compiles; PROBE_MISSPELT names an id that does not
// exist; PROBE_WRONG_TYPE takes a counter family as a gauge. Both must fail to compile.
#include "pipeline/catalog.h"

namespace modelmetrics::pipeline {

void ProbeFamilies(Registry& registry) {
#if defined(PROBE_RIGHT)
  Family<Counter>* images = RegisterOmni<OmniFamily::kImageCount>(registry);
#elif defined(PROBE_MISSPELT)
  Family<Counter>* images = RegisterOmni<OmniFamily::kImageCont>(registry);
#elif defined(PROBE_WRONG_TYPE)
  Family<Gauge>* images = RegisterOmni<OmniFamily::kImageCount>(registry);
#endif
  (void)images;
}

}  // namespace modelmetrics::pipeline
