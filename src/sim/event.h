/* The simulator's event list: a priority queue of (time, handler, object,
 * arg) ordered by time, ties broken by an order key that does not depend
 * on how the simulation is split over processes.
 *
 * Time is an integer number of picoseconds (uint64_t). Nanoseconds are too
 * coarse for the fabric: serializing one byte at 400 Gb/s takes 20 ps and a
 * 4162-byte frame 83.24 ns, so nanosecond rounding per hop would make a
 * lone flow's completion time drift from the analytic ideal by a fraction
 * of a percent per thousand packets, and rates that are not divisors of
 * 8 Gb/s (e.g. a link degraded to 37%) would serialize at the wrong speed.
 * 2^64 ps is 213 days of simulated time. The engines keep nanoseconds;
 * hosts convert at the boundary (MROCE_SIM_PS_PER_NS).
 *
 * The list is an object with no globals, so two simulations can run in one
 * process. It is a calendar queue (event.c). An event scheduled with
 * mroce_sim_ev_at has a handle that cancels it in O(1) (lazily: the dead
 * entry is dropped when it is reached); a handle of a fired or cancelled
 * event is stale and cancelling it is a harmless no-op (slots carry a
 * generation). mroce_sim_ev_post schedules without a handle, cheaper.
 *
 * Order of equal times: logical processes (LPs). A simulation names its
 * parts LPs 1..n-1 (a topology: one per leaf group and per switch above,
 * topo.h); LP 0 is the driver and what every partition replicates
 * (faults, the sampler). The list has a context LP: the LP the running
 * event runs as, or what the driver set between runs. An event scheduled
 * gets the key (context LP, that LP's own sequence number), and equal
 * times pop in key order: LP first, then the order in which that LP
 * scheduled. By default an event runs as the LP that scheduled it; one
 * that crosses to another part (a packet arriving over a link) names the
 * LP it runs as. So the order depends only on what each LP did, never on
 * a process-wide counter: a simulation cut into partitions along LP
 * boundaries (sim/prun.h) pops every partition's events in exactly the
 * order one process pops them, provided each LP's events all live in one
 * partition (or, LP 0, are replicated in all). A list never told about
 * LPs has LP 0 only: insertion order.
 *
 * Thread-safety: none; a list and everything driven by it belong to one
 * thread. Handlers may schedule and cancel events, including on the list
 * that is running them.
 */
#ifndef MROCE_SIM_EVENT_H
#define MROCE_SIM_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MROCE_SIM_PS_PER_NS 1000ull
#define MROCE_SIM_PS_PER_US 1000000ull
#define MROCE_SIM_PS_PER_S 1000000000000ull
#define MROCE_SIM_NEVER UINT64_MAX

/* An order key is lp << MROCE_SIM_EV_SEQ_BITS | sequence. */
#define MROCE_SIM_EV_SEQ_BITS 44
#define MROCE_SIM_EV_MAX_LPS (1u << 20)

/* An event handler. obj and arg are what was passed to schedule; now_ps
 * is the event's time (the list's current time while it runs). */
typedef void (*mroce_sim_ev_fn)(void *obj, uint64_t arg, uint64_t now_ps);

/* Identifies one scheduled event; 0 is never a valid handle. */
typedef uint64_t mroce_sim_ev_handle;

struct mroce_sim_evlist;

/* Creates an empty list at time 0 with room for `hint` pending events
 * (it grows as needed; 0 picks a default). Returns NULL on allocation
 * failure. */
struct mroce_sim_evlist *mroce_sim_ev_create(size_t hint);
/* Frees the list; pending events are discarded without running. NULL is a
 * no-op. */
void mroce_sim_ev_destroy(struct mroce_sim_evlist *l);

/* Current simulated time: the time of the event running or last run. */
uint64_t mroce_sim_ev_now(const struct mroce_sim_evlist *l);

/* Schedules fn(obj, arg, t) at absolute time t_ps. A time in the past is
 * clamped to now (it runs among those due now, in key
 * order; with one LP: after them). Returns
 * the handle, or 0 if the list could not grow (out of memory). */
mroce_sim_ev_handle mroce_sim_ev_at(struct mroce_sim_evlist *l, uint64_t t_ps,
                                    mroce_sim_ev_fn fn, void *obj,
                                    uint64_t arg);
/* The same without a handle (the event cannot be cancelled): cheaper,
 * and what every object that never cancels uses. False if the list could
 * not grow. */
bool mroce_sim_ev_post(struct mroce_sim_evlist *l, uint64_t t_ps,
                       mroce_sim_ev_fn fn, void *obj, uint64_t arg);
/* The same, but the handler runs as LP run_lp (< mroce_sim_ev_n_lps): an
 * event for another part of the simulation (a link's far end). */
bool mroce_sim_ev_post_to(struct mroce_sim_evlist *l, uint64_t t_ps,
                          mroce_sim_ev_fn fn, void *obj, uint64_t arg,
                          uint32_t run_lp);
/* The order key the context LP would give its next event, consumed (its
 * counter advances): for an event another process will schedule with
 * mroce_sim_ev_post_key, as if it had been scheduled here. */
uint64_t mroce_sim_ev_take_key(struct mroce_sim_evlist *l);
/* Posts with a key from mroce_sim_ev_take_key (of this list or a
 * partition's). False if the list could not grow, the key is invalid or
 * run_lp is out of range. Keys must be unique among pending events. */
bool mroce_sim_ev_post_key(struct mroce_sim_evlist *l, uint64_t t_ps,
                           mroce_sim_ev_fn fn, void *obj, uint64_t arg,
                           uint64_t key, uint32_t run_lp);
/* The same, delay_ps after now. */
mroce_sim_ev_handle mroce_sim_ev_after(struct mroce_sim_evlist *l,
                                       uint64_t delay_ps, mroce_sim_ev_fn fn,
                                       void *obj, uint64_t arg);

/* Removes a pending event. Returns true if it was pending, false if the
 * handle is 0, stale (already fired or cancelled) or foreign. */
bool mroce_sim_ev_cancel(struct mroce_sim_evlist *l, mroce_sim_ev_handle h);

/* Time of the earliest pending event, MROCE_SIM_NEVER if none. */
uint64_t mroce_sim_ev_next_time(struct mroce_sim_evlist *l);
size_t mroce_sim_ev_pending(const struct mroce_sim_evlist *l);
/* Bytes of event nodes the list holds room for (wheel, bottom, spare
 * arrays, far heap): for memory reports and tests. O(wheel size). */
size_t mroce_sim_ev_node_bytes(const struct mroce_sim_evlist *l);

/* Runs the earliest event. Returns false if there was none. */
bool mroce_sim_ev_step(struct mroce_sim_evlist *l);

/* Runs events in order while their time is <= until_ps, until none is
 * left or a handler calls mroce_sim_ev_stop. Afterwards now is the time
 * of the last event run, or until_ps if the run ended by reaching it (an
 * idle simulation still advances its clock). Returns the number of
 * events run. */
uint64_t mroce_sim_ev_run(struct mroce_sim_evlist *l, uint64_t until_ps);

/* Makes the current mroce_sim_ev_run return after the running handler. */
void mroce_sim_ev_stop(struct mroce_sim_evlist *l);

/* Events run since creation (for events/s reports), and of them those
 * that ran as LP 0. */
uint64_t mroce_sim_ev_count(const struct mroce_sim_evlist *l);
uint64_t mroce_sim_ev_count_lp0(const struct mroce_sim_evlist *l);

/* ---- Logical processes ---- */

/* Makes room for LPs 0..n-1 (a list starts with LP 0 only); false if n
 * exceeds MROCE_SIM_EV_MAX_LPS or memory ran out. Never shrinks. */
bool mroce_sim_ev_set_lps(struct mroce_sim_evlist *l, uint32_t n);
uint32_t mroce_sim_ev_n_lps(const struct mroce_sim_evlist *l);
/* Sets the context LP (< n_lps) for what the caller schedules next, and
 * returns the previous one. A run (mroce_sim_ev_run, _step) keeps the
 * context it was called with: handlers run as their event's LP. */
uint32_t mroce_sim_ev_set_lp(struct mroce_sim_evlist *l, uint32_t lp);
uint32_t mroce_sim_ev_lp(const struct mroce_sim_evlist *l);

#endif
