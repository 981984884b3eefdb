// Planted: another module including mm_deployment's private merge.h by its bare name.
#include "merge.h"

int ProbePrivateBareName() { return 0; }
