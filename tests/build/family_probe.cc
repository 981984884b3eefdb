// Planted for build.FamiliesAreTyped: a vllm_omni family is named by its id, and its handle has
// the family's instrument type. PROBE_RIGHT compiles; PROBE_MISSPELT names an id that does not
// exist; PROBE_WRONG_TYPE takes a counter family as a gauge. Both must fail to compile.
#include "pipeline/catalog.h"

namespace modelmetrics::pipeline {

void ProbeFamilies(Registry& registry) {
  const FamilySet<OmniFamily> families(registry);
#if defined(PROBE_RIGHT)
  Family<Counter>* images = families.Get<OmniFamily::kImageCount>();
#elif defined(PROBE_MISSPELT)
  Family<Counter>* images = families.Get<OmniFamily::kImageCont>();
#elif defined(PROBE_WRONG_TYPE)
  Family<Gauge>* images = families.Get<OmniFamily::kImageCount>();
#endif
}

}  // namespace modelmetrics::pipeline
