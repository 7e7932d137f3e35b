/* Test cases: placeholder. */
#include "conform/cf.h"

const struct cf_test cf_t_sack[] = {{0}};
