/* placeholder until the spec module lands: see spec.h */
#include "spec.h"
