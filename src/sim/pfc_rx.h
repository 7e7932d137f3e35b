/* The receiving side of PFC on an egress port (a NIC port or a switch
 * port): which priorities the downstream neighbour has paused, since when,
 * and the bookkeeping of pause counts and paused time. */
#ifndef MROCE_SIM_PFC_RX_H
#define MROCE_SIM_PFC_RX_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/pkt.h" /* MROCE_SIM_NPRIO */

struct mroce_sim_pfc_rx {
    bool paused[MROCE_SIM_NPRIO];
    uint64_t since[MROCE_SIM_NPRIO];
};

/* Applies a pause (on) or resume for prio, counting into count[] and
 * held_ps[]. Returns true when a resume ended a pause: the port may
 * transmit again. */
static inline bool mroce_sim_pfc_rx_set(struct mroce_sim_pfc_rx *s, int prio,
                                        bool on, uint64_t now, uint64_t *count,
                                        uint64_t *held_ps)
{
    if (on == s->paused[prio])
        return false;
    s->paused[prio] = on;
    if (on) {
        s->since[prio] = now;
        count[prio]++;
        return false;
    }
    held_ps[prio] += now - s->since[prio];
    return true;
}

/* Adds the time of pauses still in progress to held_ps[]. */
static inline void mroce_sim_pfc_rx_ongoing(const struct mroce_sim_pfc_rx *s,
                                            uint64_t now, uint64_t *held_ps)
{
    for (int q = 0; q < MROCE_SIM_NPRIO; q++)
        if (s->paused[q])
            held_ps[q] += now - s->since[q];
}

/* Counts a pause in progress as if it began now: after counters were
 * replaced by totals that already include it (a parallel run's merge). */
static inline void mroce_sim_pfc_rx_restart(struct mroce_sim_pfc_rx *s,
                                            uint64_t now)
{
    for (int q = 0; q < MROCE_SIM_NPRIO; q++)
        if (s->paused[q])
            s->since[q] = now;
}

#endif
