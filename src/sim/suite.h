/* The comparison suites: named lists of experiments (exp.h) run for
 * several transports, written to DIR/results.json, DIR/report.md and
 * gnuplot SVGs. `mroce-sim --suite headline|quick --out DIR`. */
#ifndef MROCE_SIM_SUITE_H
#define MROCE_SIM_SUITE_H

/* The `mroce-sim --suite ...` command line (argv[1] is "--suite").
 * Returns the process exit status. */
int mroce_sim_suite_main(int argc, char **argv);

#endif
