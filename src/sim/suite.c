/* Placeholder until the suite runner lands: refuses clearly. */
#include <stdio.h>

#include "sim/suite.h"

int mroce_sim_suite_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "mroce-sim: --suite is not implemented yet\n");
    return 2;
}
