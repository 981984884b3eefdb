// Planted: another module including mm_aggregation's private merge.h by its module path.
#include "aggregation/merge.h"

int ProbePrivateHeader() { return 0; }
