/* The comparison suites: named lists of experiments (exp.h) run for
 * several transports, written to DIR/results.json, DIR/report.md and
 * gnuplot SVGs. `mroce-sim --suite headline|quick --out DIR`; the
 * scenarios, fields and ideals are in docs/suite.md.
 *
 *   mroce-sim --suite headline|quick [--out DIR] [--jobs N] [--seed S]
 *             [--only ID,ID] [--transports ID,ID] [--timeout SECONDS]
 *             [--deadline-ms MS] [--ranks N] [--quiet]
 *   mroce-sim --suite report --out DIR  (report.md and plots again, from
 *                                        DIR/results.json)
 *   mroce-sim --suite check --out DIR   (mroce_sim_suite_check)
 *
 * Every run is a forked worker process (at most --jobs at a time, 2 by
 * default), so a run that crashes is a run with status "error". With
 * --ranks N each run is cut into N partitions that run as N threads of
 * its worker (docs/sim.md "Parallel runs"), with the same results.
 * Thread-safety: none; not reentrant (the workers are processes).
 */
#ifndef MROCE_SIM_SUITE_H
#define MROCE_SIM_SUITE_H

#include <stddef.h>

/* The `mroce-sim --suite ...` command line (argv[1] is "--suite").
 * Returns the process exit status: 0 when results.json and report.md
 * were written and no run had status "error", 1 otherwise, 2 on a usage
 * error. */
int mroce_sim_suite_main(int argc, char **argv);

/* Checks a suite's output folder: DIR/results.json parses as an array
 * of run objects (scenario, transport, status), DIR/report.md names
 * every scenario, and every number in report.md is a number of
 * results.json (a value, or a number inside a string value) at the
 * precision printed. Returns 0, or -1 with the first problem in why. */
int mroce_sim_suite_check(const char *dir, char *why, size_t n);

#endif
