// Another module may include mm_deployment's public headers.
#include "deployment/aggregator.h"

int ProbePublicHeader() {
  return static_cast<int>(sizeof(modelmetrics::deployment::AggregatorOptions));
}
