// Planted: another module including mm_deployment's private merge.h by its module path.
#include "deployment/merge.h"

int ProbePrivateHeader() { return 0; }
