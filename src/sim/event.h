/* The simulator's event list: a priority queue of (time, handler, object,
 * arg) ordered by time, ties broken by insertion order.
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
 * process. It is a calendar queue (event.c) ordered by (time, seq), seq
 * being an insertion counter: equal times pop in the order they were
 * scheduled, which makes every run deterministic. An event scheduled with
 * mroce_sim_ev_at has a handle that cancels it in O(1) (lazily: the dead
 * entry is dropped when it is reached); a handle of a fired or cancelled
 * event is stale and cancelling it is a harmless no-op (slots carry a
 * generation). mroce_sim_ev_post schedules without a handle, cheaper.
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
 * clamped to now (the event runs after those already due now). Returns
 * the handle, or 0 if the list could not grow (out of memory). */
mroce_sim_ev_handle mroce_sim_ev_at(struct mroce_sim_evlist *l, uint64_t t_ps,
                                    mroce_sim_ev_fn fn, void *obj,
                                    uint64_t arg);
/* The same without a handle (the event cannot be cancelled): cheaper,
 * and what every object that never cancels uses. False if the list could
 * not grow. */
bool mroce_sim_ev_post(struct mroce_sim_evlist *l, uint64_t t_ps,
                       mroce_sim_ev_fn fn, void *obj, uint64_t arg);
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

/* Events run since creation (for events/s reports). */
uint64_t mroce_sim_ev_count(const struct mroce_sim_evlist *l);

#endif
