/* The impairment layer: loss, Gilbert-Elliott burst loss, reordering,
 * duplication and delay applied to packets a datapath sends (struct
 * mroce_impair in mroce_dp.h), for tests. Off unless configured.
 *
 * The layer decides each packet's fate with its own seeded generator (the
 * same seed and packet sequence give the same fates) and keeps packets it
 * holds back in a delay queue of preallocated slots: packets are copied in
 * on mroce_impair_apply and copied out on mroce_impair_pop, so the caller's
 * buffers stay the caller's, and nothing is allocated per packet. When the
 * queue is full, a packet that should be held goes out at once (counted in
 * `overflow`).
 *
 * Thread-safety: none; one object belongs to one datapath loop.
 */
#ifndef MROCE_IO_IMPAIR_H
#define MROCE_IO_IMPAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce_dp.h>

/* What mroce_impair_apply did with a packet. */
enum mroce_impair_fate {
    MROCE_IMPAIR_PASS, /* send it now (a duplicate may be queued too) */
    MROCE_IMPAIR_DROP, /* lost */
    MROCE_IMPAIR_HELD, /* copied into the queue; comes out of _pop later */
};

struct mroce_impair_stats {
    uint64_t packets; /* seen by apply */
    uint64_t lost;    /* random or burst loss */
    uint64_t burst_lost;
    uint64_t bursts; /* good -> bad transitions */
    uint64_t dup;
    uint64_t reordered;
    uint64_t delayed;
    uint64_t overflow; /* should have been held, queue full: sent now */
};

struct mroce_impair_q;

/* True if cfg asks for any impairment. */
bool mroce_impair_active(const struct mroce_impair *cfg);

/* A queue of `slots` packets of up to `slot_size` bytes each. Errors:
 * EINVAL (a probability outside [0, 1], slots or slot_size 0), ENOMEM. */
int mroce_impair_new(const struct mroce_impair *cfg, uint32_t slots,
                     uint32_t slot_size, struct mroce_impair_q **out);
void mroce_impair_free(struct mroce_impair_q *q);

/* Decides the fate of one packet leaving at now_ns. buf stays the
 * caller's (copied if held or duplicated). A packet longer than a slot is
 * never held or duplicated. */
enum mroce_impair_fate mroce_impair_apply(struct mroce_impair_q *q,
                                          uint64_t now_ns, const uint8_t *buf,
                                          uint32_t len,
                                          const struct mroce_pkt_meta *meta);

/* When the first queued packet is due; UINT64_MAX if none. */
uint64_t mroce_impair_next_due(const struct mroce_impair_q *q);

/* Copies the first packet due at now_ns into buf (cap bytes) and *meta and
 * frees its slot. Returns its length, 0 if none is due, or ENOBUFS if cap
 * is too small (the packet stays queued). Equal due times leave in the
 * order they were queued. */
int mroce_impair_pop(struct mroce_impair_q *q, uint64_t now_ns, uint8_t *buf,
                     size_t cap, struct mroce_pkt_meta *meta);

void mroce_impair_get_stats(const struct mroce_impair_q *q,
                            struct mroce_impair_stats *out);

#endif
