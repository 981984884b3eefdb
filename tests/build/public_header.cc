// Another module may include mm_aggregation's public headers.
#include "aggregation/aggregator.h"

int ProbePublicHeader() {
  return static_cast<int>(sizeof(modelmetrics::deployment::AggregatorOptions));
}
