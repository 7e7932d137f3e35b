/* A unidirectional link: a serializer at a rate, a propagation delay, and
 * faults (down/up, degraded rate, random loss).
 *
 * The link holds no queue: the sender (a switch or NIC port) keeps its
 * own queues and calls mroce_sim_link_send when it starts a frame; the
 * returned time is when the last bit has left, and the sender may start
 * the next frame then. The packet arrives at the far end one propagation
 * delay after its last bit left (store and forward: a receiver sees a
 * frame only when all of it is in), through a sink interface that a
 * switch port and a NIC port both implement.
 *
 * Faults: a link that is down when a frame starts, or goes down while the
 * frame is on the wire, drops it (reason link_down); the sender still
 * spends the serialization time, as a port that has not noticed the
 * failure keeps transmitting into it. Random loss is drawn per frame when
 * it starts, from the link's own generator (seeded in the config), and
 * also costs the serialization time. A degraded link serializes at
 * rate x fraction from the next frame on.
 *
 * PFC: the receiving end calls mroce_sim_link_pause to send a pause or
 * resume for one priority back to this link's sender; the signal arrives
 * one propagation delay plus one minimum frame time later, on the
 * reverse direction of the cable, modelled without contention (pause
 * frames are MAC control frames that go out between data frames; the
 * headroom covers the wait). Pause signals are not lost on a down link,
 * which stands for the pause timer that would release a real sender.
 *
 * Ownership: mroce_sim_link_send takes the packet; the link delivers it to
 * the sink (which then owns it) or drops it into the pool.
 * Thread-safety: none.
 */
#ifndef MROCE_SIM_LINK_H
#define MROCE_SIM_LINK_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/event.h"
#include "sim/pkt.h"

/* Where a link delivers: a switch port or a NIC port. recv owns p. */
struct mroce_sim_sink {
    void (*recv)(void *obj, int port, struct mroce_sim_pkt *p, uint64_t now_ps);
    void *obj;
    int port;
};

/* A link's sender, told to stop (on) or resume a priority by PFC. */
struct mroce_sim_pause_sink {
    void (*pause)(void *obj, int port, int prio, bool on, uint64_t now_ps);
    void *obj;
    int port;
};

/* Zero fields take defaults.h values; loss and seed default to 0. A link
 * without propagation delay says so with MROCE_SIM_ZERO_DELAY. */
#define MROCE_SIM_ZERO_DELAY UINT64_MAX
struct mroce_sim_link_cfg {
    uint64_t rate_bps;
    uint64_t delay_ps;
    double loss; /* probability a frame is lost, 0..1 */
    uint64_t seed;
};

struct mroce_sim_link_counters {
    uint64_t tx_pkts, tx_bytes; /* frames started (wire bytes) */
    uint64_t rx_pkts, rx_bytes; /* frames handed to the sink */
    uint64_t drop_down;
    uint64_t drop_loss;
    uint64_t pause_sent, resume_sent; /* PFC signals to the sender */
    uint64_t busy_ps;                 /* time spent serializing */
    uint64_t in_flight;               /* frames on the wire now */
};

struct mroce_sim_link;

/* The link schedules on ev and drops into pool; both must outlive it.
 * NULL on allocation failure or bad config (rate 0 after defaults). */
struct mroce_sim_link *
mroce_sim_link_create(struct mroce_sim_evlist *ev, struct mroce_sim_pool *pool,
                      const struct mroce_sim_link_cfg *c);
void mroce_sim_link_destroy(struct mroce_sim_link *l);

/* Sets where packets go (copied). */
void mroce_sim_link_set_dst(struct mroce_sim_link *l,
                            const struct mroce_sim_sink *dst);
/* Sets who receives pause signals (copied); without one, pauses are
 * ignored (a sender that does not honour PFC). */
void mroce_sim_link_set_src(struct mroce_sim_link *l,
                            const struct mroce_sim_pause_sink *src);

/* The LPs (event.h) of the sender and of the receiver: a frame's arrival
 * runs as dst_lp, a pause signal's as src_lp [both 0]. */
void mroce_sim_link_set_lps(struct mroce_sim_link *l, uint32_t src_lp,
                            uint32_t dst_lp);
void mroce_sim_link_get_lps(const struct mroce_sim_link *l, uint32_t *src_lp,
                            uint32_t *dst_lp);

/* A link cut by a partition (sim/prun.h): one rank holds the sending end
 * and another the receiving end, each with a copy of the link (faults
 * are replicated, so both copies agree on up/down and the down count).
 * On the sending rank, `arrive` takes each frame that would be scheduled
 * to arrive (p is lent for the call; the link then exports it from the
 * pool) with its arrival time and event key (event.h); on the receiving
 * rank, `pause` takes each PFC signal for the sender. NULL fields: local,
 * as by default. The receiving rank hands them back with
 * mroce_sim_link_arrive_at and mroce_sim_link_pause_at. */
struct mroce_sim_link_remote {
    void (*arrive)(void *ud, struct mroce_sim_link *l,
                   const struct mroce_sim_pkt *p, uint64_t t_ps, uint64_t key);
    void (*pause)(void *ud, struct mroce_sim_link *l, int prio, bool on,
                  uint64_t t_ps, uint64_t key);
    void *ud;
};
void mroce_sim_link_set_remote(struct mroce_sim_link *l,
                               const struct mroce_sim_link_remote *r);
/* A frame of this link arriving at t_ps with key (from the sending
 * rank): p (from mroce_sim_pkt_import) is now the link's. */
bool mroce_sim_link_arrive_at(struct mroce_sim_link *l, struct mroce_sim_pkt *p,
                              uint64_t t_ps, uint64_t key);
/* A pause signal of this link reaching the sender at t_ps. */
bool mroce_sim_link_pause_at(struct mroce_sim_link *l, int prio, bool on,
                             uint64_t t_ps, uint64_t key);

/* Starts serializing p at max(now, end of the previous frame). Returns
 * when its last bit leaves. Takes p. */
uint64_t mroce_sim_link_send(struct mroce_sim_link *l, struct mroce_sim_pkt *p,
                             uint64_t now_ps);

/* Time to serialize wire_bytes at the current (degraded) rate, rounded up
 * to a whole picosecond. */
uint64_t mroce_sim_link_ser_ps(const struct mroce_sim_link *l,
                               uint32_t wire_bytes);
/* When the frame being serialized ends (<= now if idle). */
uint64_t mroce_sim_link_busy_until(const struct mroce_sim_link *l);

/* PFC from the receiving end: tells the sender to pause (on) or resume
 * prio after the signal's travel time. */
void mroce_sim_link_pause(struct mroce_sim_link *l, int prio, bool on,
                          uint64_t now_ps);

/* ---- Faults (take effect at the call; topo.h schedules them) ---- */

void mroce_sim_link_set_up(struct mroce_sim_link *l, bool up);
bool mroce_sim_link_is_up(const struct mroce_sim_link *l);
/* Serializes at rate x f, 0 < f <= 1; other values are refused (false). */
bool mroce_sim_link_set_rate_fraction(struct mroce_sim_link *l, double f);
/* Frame loss probability 0..1; other values are refused (false). */
bool mroce_sim_link_set_loss(struct mroce_sim_link *l, double p);

uint64_t mroce_sim_link_rate_bps(const struct mroce_sim_link *l); /* now */
uint64_t mroce_sim_link_delay_ps(const struct mroce_sim_link *l);

void mroce_sim_link_get_counters(const struct mroce_sim_link *l,
                                 struct mroce_sim_link_counters *out);

/* Replaces the counters: a parallel run's totals (the sending and the
 * receiving rank each count their side), once it is over. */
void mroce_sim_link_load_counters(struct mroce_sim_link *l,
                                  const struct mroce_sim_link_counters *c);

/* Sees every frame a link starts (before loss and down drops), e.g. for a
 * pcap trace. p is only lent for the call. tap NULL switches it off. */
typedef void (*mroce_sim_link_tap)(void *ud, const struct mroce_sim_pkt *p,
                                   uint64_t now_ps);
void mroce_sim_link_set_tap(struct mroce_sim_link *l, mroce_sim_link_tap tap,
                            void *ud);

#endif
