/* The endpoints' own counters in a run's results (mroce_conn_counters of
 * every connection, both ends; mroce_ctx_counters of every context),
 * summed over the hosts and the ranks. Issue 18: a receiver bug that had
 * senders drop thousands of ACKs as forged showed only in a debug print;
 * with these in the run's JSON and report it shows in every run. */
#ifndef MROCE_SIM_EXP_COUNTERS_H
#define MROCE_SIM_EXP_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce.h>

/* A counter's name (the struct field's) and where it lies. */
struct mroce_sim_cnt_name {
    const char *name;
    size_t off;
};

/* Every field of struct mroce_conn_counters / mroce_ctx_counters, in
 * order; *n the count. */
const struct mroce_sim_cnt_name *mroce_sim_conn_cnt_names(size_t *n);
const struct mroce_sim_cnt_name *mroce_sim_ctx_cnt_names(size_t *n);

/* The value of the counter at off in a counters struct. */
uint64_t mroce_sim_cnt_get(const void *counters, size_t off);

/* Adds every field of b to a (both struct mroce_conn_counters, or both
 * struct mroce_ctx_counters: size says which). */
void mroce_sim_cnt_add(void *a, const void *b, size_t size);

struct mroce_sim_exp_result;

/* Calls fn for every drop counter (a field named drop_*) of the result's
 * connections and contexts that is not zero, with the name without its
 * prefix; returns their sum. */
uint64_t mroce_sim_cnt_drops(const struct mroce_sim_exp_result *r,
                             void (*fn)(void *ud, const char *name, uint64_t v),
                             void *ud);

#endif
