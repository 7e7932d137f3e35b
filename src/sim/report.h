/* Reports of an experiment (exp.h): a human table and one JSON object.
 *
 * JSON fields (docs/sim.md lists them with units): the configuration
 * with defaults resolved, jct_us, ideal_us, fraction_of_ideal, fct_us
 * and fct_slowdown as {"p50","p99","max"}, packet and fabric counters,
 * conservation, events, the health metrics (retx_rate, ooo_rate,
 * ecn_fraction, mmr, jain, victim_fraction, p95_queue_bytes, fault_us,
 * recovery_us: null when never), optionally the time series, one record
 * per flow, and last the wall-clock
 * fields setup_s, wall_s, events_per_s, pkts_per_s and peak_rss_mb.
 * Times in microseconds with picosecond digits; every value but the
 * wall-clock fields is a function of the configuration alone.
 *
 * Thread-safety: none needed (no state).
 */
#ifndef MROCE_SIM_REPORT_H
#define MROCE_SIM_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "sim/exp.h"

/* The table of a finished run, several lines. */
void mroce_sim_report_table(FILE *f, const struct mroce_sim_exp_result *r);

/* One JSON object and a newline; without the wall-clock fields if
 * with_wall is false (for comparing runs). Returns 0, or -1 if writing
 * failed. */
int mroce_sim_report_json(FILE *f, const struct mroce_sim_exp_result *r,
                          bool with_wall);

/* The same with options: MROCE_SIM_REPORT_WALL adds the wall-clock
 * fields, MROCE_SIM_REPORT_SAMPLES the time series as "samples":
 * [[t_us, gbps, victim_gbps, qbytes, q_dst_bytes], ...] (up to
 * MROCE_SIM_EXP_MAX_SAMPLES rows; off by default to keep the JSON
 * small). */
#define MROCE_SIM_REPORT_WALL 1u
#define MROCE_SIM_REPORT_SAMPLES 2u
int mroce_sim_report_json_flags(FILE *f, const struct mroce_sim_exp_result *r,
                                unsigned flags);

const char *mroce_sim_report_transport_str(int transport);

#endif
