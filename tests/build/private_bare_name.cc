// Planted: another module including mm_aggregation's private merge.h by its bare name.
#include "merge.h"

int ProbePrivateBareName() { return 0; }
