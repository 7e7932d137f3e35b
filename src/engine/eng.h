/* Internal state of the MetaRoCE engine. Sans-I/O: libc basics only. */
#ifndef MROCE_ENGINE_ENG_H
#define MROCE_ENGINE_ENG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce.h>

#include "device/dev.h"
#include "engine/cc.h"
#include "engine/fault.h"
#include "wire/wire.h"

#define ENG_NEVER UINT64_MAX
#define ENG_MAX_PATHS 256
#define ENG_PSN_PROBE 0x8000 /* psn_len of a PSN carried by a PROBE */
/* psn_len flag: resent by a tail-loss probe, no longer counted in the
 * connection's in-flight bytes (R-RTT-7) */
#define ENG_PSN_RESENT 0x4000
#define ENG_DRAIN_UNKNOWN UINT32_MAX /* sent before any rate hint */
#define ENG_PSN_BYTES(len) ((uint32_t)(len)&0x3FFFu)
#define ENG_MAX_TX 64        /* transmissions of one packet (R-RETRY-1) */
#define ENG_MAX_BACKOFF 16   /* timeout rounds counted (R-RETRY-1) */
#define ENG_TLP_GENS 3       /* tail-loss copies of a DSN per epoch (R-RTT-7) */
#define ENG_RNR_DELAY_US 100 /* delay an RNR NACK asks for (R-RETRY-3) */
#define ENG_ACK_EVERY 16     /* in-order packets per coalesced ACK (R-ACK-1) */
/* packets at a message's end that ask for an ACK at once (R-ACK-1) */
#define ENG_ACKREQ_TAIL 3
#define ENG_ACK_HOLD_MAX 100000 /* ns: longest hold of an ACK (R-ACK-1) */
/* R-ACKM-4: a path's ACK waits for the connection's next one */
#define ENG_ACK_QUEUED 1 /* an ACK of its own is queued */
#define ENG_ACK_RECORD 2 /* it goes into the next ACK as a record */
/* R-VAL-2: how far after a path's highest recorded PSN a duplicate data
 * packet may still be recorded */
#define ENG_PSN_AHEAD 1024
/* R-VAL-4: how far past its own next PSN a sender moves a path whose
 * peer holds a PSN it never sent (a forged packet was recorded) */
#define ENG_RESYNC_MAX 65536

/* Packets of a message of len bytes (R-MSG-1): zero-length is one. */
static inline uint32_t eng_npkts(uint32_t len, uint32_t mtu)
{
    return len ? (len - 1) / mtu + 1 : 1;
}

/* Serial-number comparisons on 32-bit sequence spaces (spec section 1.4). */
static inline bool seq_lt(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) < 0;
}
static inline bool seq_le(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) <= 0;
}

/* One packet of data in flight, indexed by DSN (R-DSN-1); a new one has
 * every field set by req_new_txp (requester.c). */
enum txp_state { TXP_FREE, TXP_OUT, TXP_LOST, TXP_RNR, TXP_ACKED };
enum txp_kind { TXK_MSG, TXK_RESP };

struct txp {
    uint32_t dsn;
    uint8_t state, kind;
    uint8_t tx_count; /* transmissions but RNR-refused ones (R-RETRY-1) */
    uint8_t rnr_retries;
    uint8_t copies;  /* its transmissions still unresolved (R-LOSS-5) */
    uint8_t dup_due; /* R-LOSS-7: a second copy of this retransmission */
    uint16_t stream;
    uint16_t last_path; /* where it was last sent, to retransmit elsewhere */
    uint32_t last_psn;  /* ... and its PSN there (R-ACK-100) */
    uint8_t tlp_gens;   /* R-RTT-7: tail-loss probes that sent it again in */
    uint32_t tlp_epoch; /* ... this epoch: conn `alive` + 1, 0: never */
    uint32_t msn;       /* TXK_MSG: message; TXK_RESP: resp slot index */
    uint32_t offset, len;
    uint64_t rnr_at;
};

/* R-LOSS-8: send time and RTT of the latest-sent data transmission of a
 * plane known delivered with an RTT sample (planes queue independently). */
struct eng_rack {
    uint64_t sent, rtt;
    uint64_t hi; /* the recent highest data RTT of the plane */
    /* the plane's paths with data unresolved and no probe pending, oldest
     * newest-send first: the first of a circle (rack.c) */
    uint16_t head;
};

/* Sender side of one WR (send queue slot). */
struct sq_slot {
    struct mroce_send_wr wr;
    uint8_t op; /* MROCE_OP_* */
    uint8_t status;
    bool all_sent, fatal;
    uint32_t msn, ssn;
    uint32_t first_dsn, last_dsn; /* R-VAL-6: DSNs its packets took */
    uint32_t npkts, acked, sent_bytes;
    uint32_t read_got; /* READ: response packets placed */
    struct mroce_mr *mr;
};

/* Receiver side of one inbound message (R-MSG-3, R-ORD-3). */
struct in_msg {
    bool used, done;
    uint8_t op, status;
    uint32_t msn, len, imm, ssn;
    uint32_t npkts, got; /* packets in the message, packets accepted */
    uint32_t dsn;        /* first packet seen, for R-MSG-16..17 */
    uint64_t va;
    uint32_t rkey;
};

struct stream {
    /* send queue: WRs [sq_head, sq_tail) by msn; sq_next = next to send */
    struct sq_slot *sq;
    uint32_t sq_head, sq_next, sq_tail, msn_una, next_ssn;
    /* receive queue: posted receives [rq_head, rq_tail) by ssn */
    struct mroce_recv_wr *rq;
    struct mroce_mr **rq_mr;
    uint32_t rq_head, rq_tail;
    /* inbound messages, msn in [in_base, in_base + msg_window) */
    struct in_msg *in;
    uint32_t in_base;
    /* R-HDR-2: the header of the first packet of the message being cut
     * (a multi-packet one), which its next packets repeat but for the
     * fields of struct mroce_wire_pkt (requester.c) */
    uint8_t tx_hdr[MROCE_MAX_DATA_HDR_LEN];
    uint8_t tx_hdr_len;
};

/* READ response being served by the responder (R-MSG-10, R-MSG-13). */
struct rd_resp {
    bool used;
    uint16_t stream;
    uint32_t msn, len, sent_pkts, npkts, acked;
    uint8_t *src;
    struct mroce_mr *mr; /* referenced while the response is served */
};

enum path_state {
    PATH_ACTIVE = MROCE_PATH_ACTIVE,
    PATH_SUSPECT = MROCE_PATH_SUSPECT,
    PATH_FAILED = MROCE_PATH_FAILED,
    PATH_PROBING = MROCE_PATH_PROBING,
    PATH_DISABLED = MROCE_PATH_DISABLED,
};

/* A path's counters: the counting part of struct mroce_path_info, whose
 * other fields eng_path_query fills from the live state. */
struct path_cnt {
    uint64_t tx_pkts, tx_bytes, retx_pkts, acked_pkts, lost_pkts;
    uint64_t ecn_marks, timeouts, repaths, probes;
};

/* Sender half of a path (R-SACK-*, R-RTT-*, R-PATH-*). */
struct path_tx {
    uint16_t src_port;
    uint8_t state;
    uint8_t plane; /* R-ENC-10: p mod P */
    uint32_t next_psn, una;
    uint32_t ring_fill; /* PSNs sent, at most psn_mask + 1: ring slots
                           that hold a PSN's ts (R-VAL-1) */
    /* ring of psn_mask + 1 <= path_window entries, followed in the same
     * allocation by the ts each was sent with (R-VAL-1, eng_psn_ts) */
    uint32_t *psn_dsn;
    uint16_t *psn_len; /* bytes on the wire; 0 = resolved; or PROBE */
    uint32_t psn_mask; /* grows with what is in flight (mem.c) */
    uint32_t inflight; /* bytes outstanding */
    uint64_t srtt, rttvar, min_rtt, rto;
    uint64_t last_rtt;      /* R-TAIL-100: its latest sample */
    uint64_t last_progress; /* last send into an idle path or last ack */
    uint64_t last_send;
    uint32_t drain_ns;   /* R-RTT-7: fixed when its newest packet left */
    uint32_t ahead_mark; /* R-RTT-7: conn sent_bytes before its newest */
    uint64_t rto_at, probe_at;
    uint64_t pto_at; /* R-RTT-7: its tail-loss probe, as of its last data
                        sent or progress (rechecked when due) */
    uint64_t due;    /* the earliest of the three (ptimer.c) */
    uint16_t rk_prev, rk_next; /* in its plane's R-LOSS-8 order (rack.c) */
    bool rk_in;
    bool tlp_done, probe_due, probe_retx;
    bool newest_ackreq; /* its newest data transmission asked for an ACK:
                           the peer does not hold that ACK (R-ACK-1) */
    uint16_t ce_seen, rx_seen;
    struct cc_path cc;
    struct path_cnt st;
};

/* Receiver half of a path (R-SACK-4). */
struct path_rx {
    uint64_t bits[4];
    uint32_t high;
    uint32_t echo_ts;
    uint16_t ce_count, rx_count;
    uint16_t ack_via; /* our path that carried its last ACK (R-ACK-8) */
    uint8_t any : 1;
    uint8_t echo_due : 1; /* R-VAL-4: the next ACK answers PROBE echo_psn */
    uint8_t plane;        /* its packets last arrived on (R-ACK-3) */
    uint32_t echo_psn;
    uint64_t high_at; /* when the packet with PSN high arrived (R-ACKM-3) */
    uint8_t rec_held; /* its acknowledgement waited as a record (R-ACKM-4) */
};

struct nak_entry {
    uint16_t path, stream;
    uint8_t code;
    uint32_t psn, dsn, msn, info;
};

/* What MetaRoCE keeps of struct mroce_conn_params: the public struct
 * carries RoCEv2 QP tables (2 KB) a MetaRoCE connection never uses. */
struct eng_params {
    uint32_t conn_id;
    uint32_t init_psn, init_dsn, init_msn; /* R-CONN-5 */
    struct mroce_addr addr;
    uint16_t udp_port, n_paths, n_streams;
    uint32_t mtu, dsn_window, msg_window, max_rd;
};

/* R-PATH-13: the classes of a path for a packet, best first (path.c). */
enum path_rank {
    RANK_IDLE_KNOWN, /* nothing out, has delivered before, fast */
    RANK_IDLE,       /* nothing out, fast (or no sample yet) */
    RANK_PROVEN,     /* a retransmission's: proven and fast */
    RANK_FAST,
    RANK_SLOW,
    RANK_OWN, /* a retransmission's last path */
    RANK_NONE /* not ACTIVE, no room, or its plane is down or full */
};

/* A node of a connection's path timer tree (ptimer.c). */
struct eng_tent {
    uint64_t due;
    uint32_t p;
};

/* Bitmaps over a connection's paths (pathset.c). */
enum { PS_ACT, PS_IDLE, PS_ROOM, PS_KNOWN, PS_SLOW, PS_N };
struct eng_pmask {
    uint64_t b[ENG_MAX_PATHS / 64];
    uint64_t open;
    uint32_t ver;
    bool valid;
};
struct eng_pset {
    uint64_t b[PS_N][ENG_MAX_PATHS / 64];
    struct eng_pmask planes[2]; /* paths on planes up; up and open */
};

struct roce_conn;
struct roce_dev;
struct eng_aead;

struct mroce_conn {
    struct mroce_ctx *ctx;
    struct roce_conn *roce;       /* RoCEv2 transport: the rest is unused */
    struct mroce_conn *roce_next; /* ctx list of RoCEv2 connections */
    struct mroce_pd *pd;
    struct mroce_cq *scq, *rcq;
    struct mroce_conn_attr attr;
    struct eng_params local, remote;
    uint8_t state;
    /* R-VAL-7: an ACK resolved one of our transmissions as delivered, so
     * the peer at the announced address holds this connection's state */
    bool established;
    uint32_t ts_off; /* R-HDR-10: our ts = clock + ts_off (R-SEC-7) */
    uint32_t n_paths, n_streams, mtu, dsn_window, path_window;
    uint32_t peer_msg_window, peer_max_rd;
    /* Send, inbound-message and receive rings hold a power of two of
     * slots (at least sq_depth, rq_depth), indexed by MSN or SSN & mask:
     * 2^32 is a multiple of the ring size, so the index stays continuous
     * when the 32-bit number wraps (eng_sq, eng_in, eng_rq). */
    uint32_t sq_mask, rq_mask;
    uint64_t peer_ack_delay_ns; /* R-RTT-7: the peer's delayed-ACK bound */
    uint32_t peer_rnr_max_us;   /* R-RETRY-4: the longest RNR delay the
                                   peer said it asks for; 0: not said */
    uint32_t peer_ack_every;    /* R-ACK-101: its in-order packets per ACK */
    struct mroce_addr peer_addr[MROCE_MAX_PLANES]; /* R-ENC-10, by plane */
    struct mroce_conn *next, *prev;                /* ctx list */
    struct mroce_conn *hnext;                      /* id hash chain */

    struct stream *streams;
    uint32_t rr_stream;
    uint32_t reads_out;
    uint64_t read_watch; /* READs wait for data: check the peer then */

    /* sender: DSN space; rings grow with what is in flight (mem.c) */
    struct txp *txp; /* txp_mask + 1 <= dsn_window slots */
    uint32_t txp_mask;
    uint32_t snd_next, snd_una;
    uint32_t *retx; /* FIFO of DSNs to resend */
    uint32_t retx_head, retx_count, retx_mask;
    uint32_t n_rnr; /* packets waiting out an RNR delay */

    /* receiver: DSN dedup (R-DSN-2) */
    uint64_t *rcv_bits;
    uint32_t rcv_cum;
    uint64_t last_data_rx;

    struct path_tx *ptx; /* n_alloc_paths, allocated at connect */
    struct path_rx *prx;
    uint32_t n_alloc_paths;
    uint32_t rr_path, rr_ack;
    struct eng_pset pset; /* R-PATH-13 in O(1) (pathset.c) */
    /* R-PATH-17: the current run: its path, the data packets it carried
     * and the path's next PSN when it began (run_len 0: none) */
    uint32_t run_path, run_len, run_psn;
    uint32_t inflight; /* bytes in flight over all paths */
    uint64_t unsent;   /* R-TAIL-100: payload bytes posted, not yet sent */
    /* R-RTT-7: bytes ever charged to and taken off inflight (wrapping;
     * sent_bytes - done_bytes == inflight) */
    uint32_t sent_bytes, done_bytes;
    uint32_t n_probe_due; /* paths with a PROBE to send */
    bool plane_held;      /* R-PATH-14: data waits for a plane's port */
    bool turn_taken;      /* R-PATH-100: sent its round's packet early */
    uint8_t held_group;   /* its group in ctx->sched.held; ENG_HELD_NONE */
    /* held with nothing changed since: eng_sched_ready and every packet
     * sent count `ver` up; with the planes open and the plane version
     * when it was last held (the held set's key when it is in that set) */
    uint32_t ver, held_ver, held_plane_ver;
    uint64_t held_planes;
    uint64_t rtt_hint;  /* latest smoothed RTT of any path */
    uint8_t backoff;    /* timeout rounds since progress (R-RETRY-1) */
    uint32_t alive;     /* ACKs that resolved a PSN as delivered (R-RTT-7) */
    uint64_t round_end; /* timeouts before this are the same round */
    /* R-ACK-1: in-order data accepted since the connection's last ACK,
     * the path of the latest, when they must be acknowledged */
    uint32_t ack_count;
    uint16_t ack_path;
    uint64_t ack_at;
    uint32_t ack_mbps;  /* the rate hint our latest ACK carried */
    uint32_t ack_slack; /* bytes the peer may hold unacknowledged (R-ACK-101) */
    uint8_t *ack_pending; /* per path: ENG_ACK_QUEUED or ENG_ACK_RECORD */
    uint16_t *ack_queue;  /* paths with an ACK to send */
    uint32_t ack_q_head, ack_q_count;
    /* R-ACKM-4: paths to go into the next ACK as records (in the order
     * they became due; the ones later queued for an ACK of their own are
     * skipped), and when the oldest must go */
    bool ackm; /* the feature is in effect (R-VER-5) */
    uint32_t rec_count;
    uint16_t *rec_queue;

    struct rd_resp *resp;
    uint32_t rr_resp;
    uint32_t n_resp; /* responses in service (used slots) */

    struct nak_entry naks[16];
    uint32_t nak_head, nak_count;

    struct cc_conn cc;
    uint32_t rate_hint_mbps;
    /* eng_ack_hold at the peer's ack_every and ack_delay and the granted
     * rate, kept by eng_conn_hint; UINT32_MAX: too long to keep here */
    uint32_t peer_hold_ns;
    struct eng_aead *aead;  /* secure modes (seal.c); NULL: MROCE_SEC_NONE */
    uint64_t rtt_floor;     /* R-PATH-13: smallest RTT sample of any path */
    struct eng_rack *rack;  /* R-LOSS-8: per plane (ctx->n_planes) */
    struct eng_tent *ttree; /* path timer tree, tt_leaves nodes (ptimer.c) */
    uint32_t tt_leaves;

    bool close_pending, close_due;
    uint8_t close_acks; /* R-CONN-9: CLOSE copies not yet answered */
    uint8_t close_tries;
    uint64_t close_at;

    uint64_t deadline; /* cached earliest timer */
    /* the timers but the paths' and R-LOSS-8's, as of the last
     * eng_conn_update_deadline (eng_conn_arm lowers it), so that a data
     * packet updates the deadline without them (eng_conn_data_sent) */
    uint64_t dl_other;
    /* R-LOSS-8: the planes' earliest time, as of its last computation
     * (eng_rack_update) or change (eng_rack_sent). Room for these two made by
     * the order of the fields around rec_count and close_tries (the
     * struct's size is reported). */
    uint64_t rack_min;
    uint32_t rank;     /* creation order among the context's live ones */
    uint32_t heap_pos; /* in the deadline heap; UINT32_MAX: not in it */
    struct mroce_conn_counters cnt;
};

/* A bitmap over connection ranks with one summary bit per word (sched.c). */
struct eng_bits {
    uint64_t *w, *s;
};

/* R-PATH-15: what the context's paths say about one plane (plane.c). */
struct eng_plane {
    uint32_t fails; /* path failures since a path on it last delivered */
    bool down;
};

/* R-PATH-14: held connections that were held at one (tx_planes,
 * plane_ver) key; a few keys cover a flow control that opens and closes
 * ports per packet (sched.c). */
#define ENG_HELD_GROUPS 4
#define ENG_HELD_NONE 0xff
struct eng_held {
    struct eng_bits bits;
    uint64_t planes;
    uint32_t plane_ver, n;
};

/* Ready set and deadline heap of a context (sched.c). */
struct eng_sched {
    struct mroce_conn **by_rank;
    struct mroce_conn **heap; /* min-heap on deadline */
    uint32_t cap, heap_n;
    uint64_t top;     /* heap[0]'s deadline, ENG_NEVER when empty: drivers
                         poll it several times per packet */
    uint32_t tx_next; /* round-robin cursor: its rank + 1; 0: newest */
    /* false: no connection is ready and none owes an ACK (eng_sched_busy);
     * always true in a RoCEv2 context (verbs_transport) */
    bool busy;
    struct eng_bits ready; /* may have something to send */
    struct eng_bits due;   /* on_expiry: timers due, still to run */
    struct eng_bits acks;  /* R-ACK-9: an ACK or NACK waits to be sent */
    /* R-PATH-14: ready connections that found no port for their data,
     * by the open planes and plane version they were held at */
    struct eng_held held[ENG_HELD_GROUPS];
    uint32_t n_held; /* members of all groups */
    uint32_t excl;   /* the group of the current key; ENG_HELD_NONE */
};

struct mroce_ctx {
    /* hooks, address, planes, PDs, MRs, CQs: shared with src/roce */
    struct mroce_dev dev;
    struct roce_dev *roce;         /* set: the context runs RoCEv2 */
    struct mroce_conn *roce_conns; /* their public handles */
    uint16_t udp_port;
    uint32_t mtu, link_mbps;
    uint32_t base_rtt_ns; /* R-CC-3: caps the fair-share RTT; 0 none */
    uint32_t fault;
    uint16_t fault_id;  /* fault.h: the fault table's entry set, 0 none */
    uint8_t *fault_buf; /* eng_fault_redecode's copy */
    uint16_t src_ports[MROCE_MAX_SRC_PORTS]; /* R-ENC-3: the set paths draw
                                                from; n_src_ports 0: any */
    uint32_t n_src_ports;
    uint32_t spray_run;       /* R-PATH-17: data packets a path takes in a
                                 row; 1: a new path for every packet */
    struct eng_plane *planes; /* R-PATH-15: [dev.n_planes] when > 1 */
    uint32_t n_planes_down;
    uint32_t plane_ver; /* counts every plane going down or up */

    struct mroce_conn *conns; /* list of all connections */
    struct mroce_conn **conn_hash;
    uint32_t conn_hash_cap, n_conns;
    struct eng_sched sched;

    uint32_t active_senders;
    uint64_t share_at;

    /* set only during mroce_ctx_tx_ref: where the packet's payload lies */
    struct mroce_tx_ref *tx_ref;

    /* secure modes (seal.c): the provider, and where an encrypted
     * payload is opened to (mtu bytes) before it is placed */
    struct mroce_crypto crypto;
    bool has_crypto;
    /* mroce_ctx_attr.no_icrc: data packets leave with a zero ICRC and no
     * ICRC is checked (a fabric that cannot corrupt: the simulator) */
    bool no_icrc;
    uint32_t max_pkt; /* mroce_ctx_max_pkt, fixed at open: every transmit
                         call checks its buffer against it */
    uint8_t *aead_buf;

    struct mroce_ctx_counters cnt;
};

/* The context a device is embedded in (every device an engine or
 * src/verbs sees is). */
static inline struct mroce_ctx *eng_ctx_of(struct mroce_dev *d)
{
    return (struct mroce_ctx *)(void *)((char *)d -
                                        offsetof(struct mroce_ctx, dev));
}

/* plane.c (R-PATH-15, R-PATH-100) */
int eng_planes_init(struct mroce_ctx *ctx);
void eng_plane_fail(struct mroce_ctx *ctx, uint8_t plane);
void eng_plane_delivered(struct mroce_ctx *ctx, uint8_t plane);
/* R-PATH-100: the ready connections a port's turn looks at */
#define ENG_PLANE_LOOK 8
int64_t eng_plane_lag(const struct mroce_conn *c, uint32_t plane);
/* A path on `plane` delivered (every ACK that makes progress): nothing
 * to do with one plane (no table), so that case costs no call. */
static inline void eng_plane_good(struct mroce_ctx *ctx, uint8_t plane)
{
    if (ctx->planes)
        eng_plane_delivered(ctx, plane);
}

/* R-PATH-15: new data avoids a plane on which paths fail and none
 * delivers, unless every plane is in that state. */
static inline bool eng_plane_down(const struct mroce_ctx *ctx, uint8_t plane)
{
    return ctx->planes && ctx->planes[plane].down &&
           ctx->n_planes_down < ctx->dev.n_planes;
}

/* R-RTT-7: the time `bytes` take to drain at the receiver's granted rate
 * (a hint must be held), below ENG_DRAIN_UNKNOWN; 0 for none. */
static inline uint32_t eng_drain_ns(const struct mroce_conn *c, int64_t bytes)
{
    if (bytes <= 0)
        return 0;
    uint64_t ns = (uint64_t)bytes * 8000 / c->rate_hint_mbps;
    return ns < ENG_DRAIN_UNKNOWN ? (uint32_t)ns : ENG_DRAIN_UNKNOWN - 1;
}

/* Bytes a data packet of a full MTU is charged (headers included, as
 * windows count them). */
static inline uint32_t eng_pkt_charge(const struct mroce_conn *c)
{
    return MROCE_MAX_HDR_LEN + c->mtu + MROCE_ICRC_LEN;
}

/* R-ACK-1: how long a receiver granting `mbps` may hold the ACK of
 * in-order data: ack_delay, or the time ack_every full packets take at
 * that rate when longer (both ends assume the same two values). */
static inline uint64_t eng_ack_hold(const struct mroce_conn *c, uint32_t mbps,
                                    uint32_t every, uint64_t ack_delay)
{
    if (!mbps || every <= 1)
        return ack_delay;
    uint64_t n = (uint64_t)every * eng_pkt_charge(c) * 8000 / mbps;
    if (n > ENG_ACK_HOLD_MAX)
        n = ENG_ACK_HOLD_MAX;
    return n > ack_delay ? n : ack_delay;
}

/* R-ACK-1, R-RTT-7: how long the peer may hold the ACK of in-order data
 * it received from us (path PTOs and R-LOSS-8 after every packet ask). */
static inline uint64_t eng_peer_hold(const struct mroce_conn *c)
{
    if (c->peer_hold_ns != UINT32_MAX)
        return c->peer_hold_ns;
    return eng_ack_hold(c, c->rate_hint_mbps, c->peer_ack_every,
                        c->peer_ack_delay_ns);
}

/* The granted rate (R-CC-2) changed, or the peer's ACK parameters were
 * set (connect): the hold they give again. */
static inline void eng_conn_hint(struct mroce_conn *c, uint32_t mbps)
{
    c->rate_hint_mbps = mbps;
    uint64_t h = eng_ack_hold(c, mbps, c->peer_ack_every, c->peer_ack_delay_ns);
    c->peer_hold_ns = h < UINT32_MAX ? (uint32_t)h : UINT32_MAX;
}

/* Bytes leave the connection's in flight (resolved, or resent by a
 * tail-loss probe, R-RTT-7). */
static inline void eng_conn_uncharge(struct mroce_conn *c, uint32_t bytes)
{
    c->inflight -= bytes;
    c->done_bytes += bytes;
}

/* R-PATH-13: a path whose smoothed RTT is above this multiple of the
 * connection's smallest sample is queued behind others: skipped while a
 * faster path has room (data, R-PATH-13; ACKs, R-ACK-3). */
#define ENG_SLOW_K 2

static inline bool eng_path_fast(const struct mroce_conn *c,
                                 const struct path_tx *pt)
{
    return !pt->srtt || pt->srtt <= ENG_SLOW_K * c->rtt_floor;
}

/* R-PATH-14: every plane may take data now. */
/* Bit i for each plane i. */
static inline uint64_t eng_plane_bits(const struct mroce_ctx *ctx)
{
    return ctx->dev.n_planes >= 64 ? UINT64_MAX
                                   : (UINT64_C(1) << ctx->dev.n_planes) - 1;
}

static inline bool eng_planes_all_open(const struct mroce_ctx *ctx)
{
    uint64_t all = eng_plane_bits(ctx);
    return (ctx->dev.tx_planes & all) == all;
}

/* R-PATH-14: whether data may go to path p's plane now. */
static inline bool eng_plane_open(const struct mroce_conn *c, uint32_t p)
{
    return (c->ctx->dev.tx_planes >> c->ptx[p].plane) & 1u;
}

/* A stream's send-queue slot of MSN msn, inbound message slot of MSN
 * msn and receive slot of SSN ssn (power-of-two rings, see sq_mask). */
static inline struct sq_slot *eng_sq(const struct mroce_conn *c,
                                     const struct stream *s, uint32_t msn)
{
    return &s->sq[msn & c->sq_mask];
}
static inline struct in_msg *eng_in(const struct mroce_conn *c,
                                    const struct stream *s, uint32_t msn)
{
    return &s->in[msn & c->sq_mask];
}
static inline uint32_t eng_rq(const struct mroce_conn *c, uint32_t ssn)
{
    return ssn & c->rq_mask;
}

/* The sender's slot of a DSN (R-DSN-1) and a path's slot of a PSN. */
static inline struct txp *eng_txp(const struct mroce_conn *c, uint32_t dsn)
{
    return &c->txp[dsn & c->txp_mask];
}
static inline uint32_t eng_psn_slot(const struct path_tx *pt, uint32_t psn)
{
    return psn & pt->psn_mask;
}

/* R-HDR-10: ns mod 2^32 plus the connection's random offset, so that an
 * echo_ts cannot be guessed from the clock (R-VAL-1). */
static inline uint32_t eng_ts(const struct mroce_conn *c, uint64_t now)
{
    return (uint32_t)now + c->ts_off;
}

/* R-VAL-1: the ts ring slot i's PSN was sent with. */
static inline uint32_t *eng_psn_ts(const struct path_tx *pt, uint32_t i)
{
    return &pt->psn_dsn[pt->psn_mask + 1 + i];
}

/* R-VAL-1: ring slot i now holds a PSN sent with ts. */
static inline void eng_path_sent_ts(struct path_tx *pt, uint32_t i, uint32_t ts)
{
    *eng_psn_ts(pt, i) = ts;
    if (pt->ring_fill <= pt->psn_mask)
        pt->ring_fill++;
}

/* ctx.c: the device's memory and randomness (src/device) */
void *eng_alloc(struct mroce_ctx *ctx, size_t size);
void eng_free(struct mroce_ctx *ctx, void *p);
uint64_t eng_rand(struct mroce_ctx *ctx);
uint16_t eng_rand_port(struct mroce_ctx *ctx);
struct mroce_conn *eng_conn_find(struct mroce_ctx *ctx, uint32_t id);
int eng_conn_link(struct mroce_ctx *ctx, struct mroce_conn *c, uint32_t id);
void eng_conn_unlink(struct mroce_ctx *ctx, struct mroce_conn *c);
#define SHARE_WINDOW_NS 50000 /* R-CC-2: a sender counts this long */
/* R-CC-2: a connection that starts delivering counts at once, so the
 * first ACKs of an incast already carry the shared rate; the periodic
 * recount (eng_rate_hint) retires the idle ones. Inline: every data
 * packet received. */
static inline void eng_share_note(struct mroce_conn *c, uint64_t now)
{
    if (!c->last_data_rx || now - c->last_data_rx >= SHARE_WINDOW_NS)
        c->ctx->active_senders++;
    c->last_data_rx = now ? now : 1;
}
uint32_t eng_rate_hint(struct mroce_ctx *ctx, uint64_t now);

/* The engine's side of the public API (src/verbs dispatches to these or to
 * the RoCEv2 engine; same contracts as the mroce_* calls in mroce.h). */
size_t eng_ctx_max_pkt(const struct mroce_ctx *ctx);
void eng_ctx_get_counters(const struct mroce_ctx *ctx,
                          struct mroce_ctx_counters *out);
int eng_ctx_rx(struct mroce_ctx *ctx, uint64_t now,
               const struct mroce_pkt_meta *meta, const uint8_t *buf,
               size_t len);
/* eng_ctx_tx (below, inline) past its two tests */
int eng_ctx_tx_busy(struct mroce_ctx *ctx, uint64_t now, uint8_t *buf,
                    size_t cap, struct mroce_pkt_meta *meta);
void eng_ctx_on_expiry(struct mroce_ctx *ctx, uint64_t now);
int eng_conn_create(struct mroce_pd *pd, const struct mroce_conn_attr *attr,
                    struct mroce_conn **out);
void eng_conn_get_params(const struct mroce_conn *c,
                         struct mroce_conn_params *out);
int eng_conn_connect(struct mroce_conn *c, const struct mroce_conn_params *r);
int eng_conn_state(const struct mroce_conn *c);
void eng_conn_get_counters(const struct mroce_conn *c,
                           struct mroce_conn_counters *out);
int eng_conn_disconnect(struct mroce_conn *c);
void eng_conn_destroy(struct mroce_conn *c);
int eng_post_write(struct mroce_conn *c, const struct mroce_send_wr *wr);
int eng_post_write_imm(struct mroce_conn *c, const struct mroce_send_wr *wr);
int eng_post_send(struct mroce_conn *c, const struct mroce_send_wr *wr);
int eng_post_send_imm(struct mroce_conn *c, const struct mroce_send_wr *wr);
int eng_post_read(struct mroce_conn *c, const struct mroce_send_wr *wr);
int eng_post_recv(struct mroce_conn *c, const struct mroce_recv_wr *wr);
int eng_path_query(const struct mroce_conn *c, uint16_t path,
                   struct mroce_path_info *out);
int eng_path_move(struct mroce_conn *c, uint16_t path);
int eng_path_enable(struct mroce_conn *c, uint16_t path, int on);

/* sched.c: O(log n) transmit and timer scheduling over connections */
int eng_sched_add(struct mroce_ctx *ctx, struct mroce_conn *c);
void eng_sched_del(struct mroce_ctx *ctx, struct mroce_conn *c);
void eng_sched_release(struct mroce_ctx *ctx);
size_t eng_sched_bytes(const struct mroce_ctx *ctx);
struct mroce_conn *eng_sched_pick_ack_any(const struct mroce_ctx *ctx);
struct mroce_conn *eng_sched_pick(struct mroce_ctx *ctx);
struct mroce_conn *eng_sched_after(const struct mroce_conn *c);
/* The sets' bit of a rank and its summary bit (sched.c); inline, as
 * several change per packet. */
static inline void eng_bits_set(struct eng_bits *b, uint32_t i)
{
    b->w[i / 64] |= 1ull << (i % 64);
    b->s[i / 4096] |= 1ull << (i / 64 % 64);
}
static inline void eng_bits_clear(struct eng_bits *b, uint32_t i)
{
    b->w[i / 64] &= ~(1ull << (i % 64));
    if (!b->w[i / 64])
        b->s[i / 4096] &= ~(1ull << (i / 64 % 64));
}
void eng_sched_hold(struct mroce_conn *c);
void eng_sched_unhold(struct mroce_conn *c);
/* c may have something to send (it changed: its `ver` counts that, and
 * it is no longer held, R-PATH-14). */
static inline void eng_sched_ready(struct mroce_conn *c)
{
    c->ver++;
    eng_bits_set(&c->ctx->sched.ready, c->rank);
    c->ctx->sched.busy = true;
    if (c->held_group != ENG_HELD_NONE)
        eng_sched_unhold(c);
}
static inline void eng_sched_idle(struct mroce_conn *c)
{
    eng_bits_clear(&c->ctx->sched.ready, c->rank);
}
/* R-ACK-9: connections with an ACK or NACK to send go before any data. */
static inline void eng_sched_ack(struct mroce_conn *c)
{
    eng_bits_set(&c->ctx->sched.acks, c->rank);
    c->ctx->sched.busy = true;
}
static inline void eng_sched_ack_done(struct mroce_conn *c)
{
    eng_bits_clear(&c->ctx->sched.acks, c->rank);
}
/* Whether a connection may have an ACK to send: below 4,096 connections
 * the one summary word says "none" (most calls); true when unsure. */
static inline bool eng_sched_acks_maybe(const struct mroce_ctx *ctx)
{
    const struct eng_sched *s = &ctx->sched;
    return ctx->n_conns && (s->cap > 4096 || s->acks.s[0]);
}
/* Any connection with an ACK to send (the newest first). */
static inline struct mroce_conn *eng_sched_pick_ack(const struct mroce_ctx *ctx)
{
    return eng_sched_acks_maybe(ctx) ? eng_sched_pick_ack_any(ctx) : NULL;
}
/* c sent: the round-robin continues after it (the next older one). */
static inline void eng_sched_sent(struct mroce_conn *c)
{
    c->ctx->sched.tx_next = c->rank; /* rank - 1, plus one */
}
void eng_sched_timer(struct mroce_conn *c);
void eng_sched_held_begin(struct mroce_ctx *ctx);
struct mroce_conn *eng_sched_pick_held(struct mroce_ctx *ctx);
struct mroce_conn *eng_sched_after_held(const struct mroce_conn *c);
/* Whether a connection may be ready or have an ACK to send: one flag,
 * set with every bit of either set and cleared by a transmit call that
 * found nothing to send (eng_sched_settle), so that a call with nothing
 * to do costs little whatever the number of connections. No call here:
 * it would cost eng_ctx_tx a prologue. */
static inline bool eng_sched_busy(const struct mroce_ctx *ctx)
{
    return ctx->sched.busy;
}
void eng_sched_settle(struct mroce_ctx *ctx);

/* A call with nothing to send (drivers poll) stays this cheap: inline in
 * mroce_ctx_tx, so that such a call costs no second jump. */
static inline int eng_ctx_tx(struct mroce_ctx *ctx, uint64_t now, uint8_t *buf,
                             size_t cap, struct mroce_pkt_meta *meta)
{
    if (cap < ctx->max_pkt)
        return MROCE_ENOBUFS;
    if (!eng_sched_busy(ctx))
        return 0; /* no connection may send (sched.c) */
    return eng_ctx_tx_busy(ctx, now, buf, cap, meta);
}

/* The top of the deadline heap, kept by sched.c: O(1), and inline, as
 * drivers poll it several times per packet. No later than the earliest
 * timer; earlier when a connection's path timers moved later since
 * (ptimer.c), which costs one on_expiry call that finds nothing due. */
static inline uint64_t eng_ctx_next_expiry(const struct mroce_ctx *ctx)
{
    return ctx->sched.top;
}
void eng_sched_collect_due(struct mroce_ctx *ctx, uint64_t now);
struct mroce_conn *eng_sched_next_due(struct mroce_ctx *ctx);

/* ctx teardown: frees the connections and the engine's tables (the
 * device's objects are src/verbs' to free, dev_release). */
void eng_ctx_release(struct mroce_ctx *ctx);

/* mem.c: rings that grow with what is in flight; ENOMEM if they cannot */
int eng_mem_connect(struct mroce_conn *c, uint32_t n, uint32_t dsn_window,
                    uint32_t path_window);
void eng_mem_free(struct mroce_conn *c);
int eng_mem_txp_grow(struct mroce_conn *c);
/* Room for DSN snd_next; the caller has checked the DSN window. Inline:
 * every new packet asks, and the ring rarely has to grow. */
static inline int eng_mem_txp_room(struct mroce_conn *c)
{
    if (c->snd_next - c->snd_una <= c->txp_mask)
        return 0;
    return eng_mem_txp_grow(c);
}
int eng_mem_retx_room(struct mroce_conn *c);
int eng_mem_psn_grow(struct mroce_conn *c, struct path_tx *pt);
/* Room for the PSN after next_psn - 1: the ring doubles when every slot
 * holds an unresolved PSN (path_room keeps that below path_window). */
static inline int eng_mem_psn_room(struct mroce_conn *c, struct path_tx *pt)
{
    if (pt->next_psn - pt->una <= pt->psn_mask)
        return 0;
    return eng_mem_psn_grow(c, pt);
}

/* conn.c */
void eng_conn_error(struct mroce_conn *c, uint16_t stream, uint32_t msn,
                    uint8_t status);
void eng_conn_update_deadline(struct mroce_conn *c);
void eng_conn_data_sent(struct mroce_conn *c);
void eng_conn_ack_sent(struct mroce_conn *c);
void eng_conn_arm(struct mroce_conn *c, uint64_t t);
bool eng_conn_due(struct mroce_conn *c, uint64_t now);
void eng_conn_close(struct mroce_conn *c);

/* txref.c: mroce_ctx_tx_ref. eng_tx_payload puts a packet's payload
 * behind its headers buf[0, hl) and adds the ICRC, or seals it
 * (R-AEAD-3), or, during tx_ref, refers to it where it lies; returns the
 * wire length. eng_tx_ctl_pl encodes and finishes a control packet (and
 * a PROBE) the same way, with a payload the engine built (an ACKM's
 * records, copied: never referred to); eng_tx_ctl one without.
 * eng_txref_done fills in a packet that came back whole. */
int eng_ctx_tx_ref(struct mroce_ctx *ctx, uint64_t now, uint8_t *buf,
                   size_t cap, struct mroce_pkt_meta *meta,
                   struct mroce_tx_ref *ref);
size_t eng_tx_payload(struct mroce_conn *c, uint8_t *buf, size_t hl,
                      const uint8_t *payload, uint32_t len);
int eng_tx_ctl_pl(struct mroce_conn *c, const struct mroce_hdr *h,
                  const uint8_t *pl, uint32_t len, uint8_t *buf, size_t cap);
static inline int eng_tx_ctl(struct mroce_conn *c, const struct mroce_hdr *h,
                             uint8_t *buf, size_t cap)
{
    return eng_tx_ctl_pl(c, h, NULL, 0, buf, cap);
}
int eng_txref_done(int n, struct mroce_tx_ref *ref);

/* requester.c */
int eng_req_ctl_tx(struct mroce_conn *c, uint64_t now, uint8_t *buf, size_t cap,
                   struct mroce_pkt_meta *meta);
int eng_req_data_tx(struct mroce_conn *c, uint64_t now, uint8_t *buf,
                    struct mroce_pkt_meta *meta);
bool eng_req_spent(const struct mroce_conn *c);
void eng_req_meta(struct mroce_conn *c, uint16_t path,
                  struct mroce_pkt_meta *meta);

/* responder.c */
void eng_resp_rx(struct mroce_conn *c, uint64_t now,
                 const struct mroce_pkt_meta *meta, const struct mroce_hdr *h);
void eng_resp_retire(struct mroce_conn *c, struct stream *s);
void eng_resp_release(struct mroce_conn *c, struct rd_resp *r);
int eng_resp_ack_send(struct mroce_conn *c, uint64_t now, uint8_t *buf,
                      size_t cap, struct mroce_pkt_meta *meta);
/* R-ACK-9: the NACK or ACK c owes, if any; inline, as most calls (every
 * transmit attempt of the connection) find none. */
static inline int eng_resp_ack_tx(struct mroce_conn *c, uint64_t now,
                                  uint8_t *buf, size_t cap,
                                  struct mroce_pkt_meta *meta)
{
    if (!c->nak_count && !c->ack_q_count)
        return 0;
    return eng_resp_ack_send(c, now, buf, cap, meta);
}
void eng_resp_timers(struct mroce_conn *c, uint64_t now);
bool eng_resp_cut(const struct mroce_conn *c, const struct mroce_hdr *h);

/* completer.c */
void eng_comp_ack(struct mroce_conn *c, uint64_t now,
                  const struct mroce_hdr *h);
/* R-ACKM-5: an ACKM, its records and then its own path. */
void eng_comp_ackm(struct mroce_conn *c, uint64_t now,
                   const struct mroce_hdr *h);
void eng_comp_nak(struct mroce_conn *c, uint64_t now,
                  const struct mroce_hdr *h);
void eng_comp_dsn_acked(struct mroce_conn *c, uint32_t dsn);
void eng_comp_retire(struct mroce_conn *c, struct stream *s);
enum eng_fate { ENG_ACKED, ENG_LOST, ENG_TIMEOUT };
void eng_comp_resent(struct mroce_conn *c, struct path_tx *pt, uint32_t i);
void eng_comp_resolve_psn(struct mroce_conn *c, uint16_t p, uint32_t psn,
                          int fate);
void eng_comp_lost(struct mroce_conn *c, uint32_t dsn);
void eng_comp_fail_txp(struct mroce_conn *c, const struct txp *x,
                       uint8_t status);
void eng_comp_retry_exceeded(struct mroce_conn *c);
void eng_comp_timers(struct mroce_conn *c, uint64_t now);
void eng_comp_read_watch(struct mroce_conn *c, uint64_t now);
void eng_comp_prove(struct mroce_conn *c);

/* ptimer.c: the connection's path timers, a tournament tree */
uint32_t eng_ptimer_leaves(uint32_t n);
void eng_ptimer_reset(struct mroce_conn *c);
void eng_ptimer_init(struct mroce_conn *c, uint16_t p);
void eng_ptimer_lower(struct mroce_conn *c, uint32_t p);
/* p's RTO, probe or PROBE time changed: its key again. A move later only
 * writes the key (the tree keeps lower bounds); a move earlier walks.
 * Inline: a data packet and its ACK each re-key their path. */
static inline void eng_ptimer_set(struct mroce_conn *c, uint16_t p)
{
    struct path_tx *pt = &c->ptx[p];
    uint64_t due = pt->rto_at;
    if (pt->pto_at < due)
        due = pt->pto_at;
    if (pt->probe_at < due)
        due = pt->probe_at;
    uint64_t was = pt->due;
    pt->due = due;
    if (due < was)
        eng_ptimer_lower(c, p);
}
/* No later than the earliest path timer: the tree's root, a lower bound
 * (inline: read after every packet, eng_conn_update_deadline). */
static inline uint64_t eng_ptimer_next(const struct mroce_conn *c)
{
    return c->ttree[1].due;
}
int eng_ptimer_due(struct mroce_conn *c, uint64_t now);
uint64_t eng_ptimer_exact(struct mroce_conn *c);

/* rack.c: R-LOSS-8, the planes' paths in send order */
void eng_rack_init(struct mroce_conn *c);
void eng_rack_sent(struct mroce_conn *c, uint16_t p);
void eng_rack_move(struct mroce_conn *c, uint16_t p);
/* p's unresolved data or its probe state changed: it is in its plane's
 * order while it has data unresolved and no probe pending (always inline:
 * most calls, one per ACK and per DSN dsn_cum resolves, find it where it
 * belongs). */
static inline __attribute__((always_inline)) void
eng_rack_check(struct mroce_conn *c, uint16_t p)
{
    const struct path_tx *pt = &c->ptx[p];
    if ((pt->inflight && !pt->tlp_done) != pt->rk_in)
        eng_rack_move(c, p);
}
/* rack_min again (eng_conn_update_deadline) */
void eng_rack_update(struct mroce_conn *c);
void eng_rack_delivered(struct mroce_conn *c, uint32_t plane, uint64_t now,
                        uint64_t rtt, uint64_t held);
void eng_rack_fire(struct mroce_conn *c, uint64_t now);

/* pathset.c: R-PATH-13 path choice over bitmaps */
void eng_pset_update(struct mroce_conn *c, uint16_t p);
void eng_pset_sent(struct mroce_conn *c, uint16_t p);
void eng_pset_acked(struct mroce_conn *c, uint16_t p);
/* eng_pset_acked for each path set in a bitmap over the paths */
void eng_pset_acked_paths(struct mroce_conn *c, const uint64_t *paths);
void eng_pset_floor(struct mroce_conn *c);
int eng_pset_pick(struct mroce_conn *c, int avoid, uint32_t bytes,
                  uint64_t now);

/* path.c */
void eng_path_init(struct mroce_conn *c, uint16_t p);
bool eng_path_proven(const struct mroce_conn *c, const struct path_tx *pt,
                     uint64_t now);
/* R-PATH-17: whether the current run may take another packet. */
static inline bool eng_path_run_open(const struct mroce_conn *c)
{
    return c->run_len && c->run_len < c->ctx->spray_run;
}
int eng_path_rank(struct mroce_conn *c, uint32_t p, int avoid, uint32_t bytes,
                  uint64_t now);
void eng_path_tlp(struct mroce_conn *c, uint16_t p, bool rack);
void eng_path_pto_arm(struct mroce_conn *c, uint16_t p);
void eng_path_pto_sent(struct mroce_conn *c, uint16_t p);
void eng_path_rtt_sample(struct mroce_conn *c, struct path_tx *pt,
                         uint64_t rtt);
void eng_path_timers(struct mroce_conn *c, uint64_t now);
uint32_t eng_path_init_cwnd(const struct mroce_conn *c);
uint64_t eng_path_pto(const struct mroce_conn *c, const struct path_tx *pt);
uint64_t eng_path_rto(const struct mroce_conn *c, const struct path_tx *pt);
int eng_path_pick(struct mroce_conn *c, int avoid, uint32_t bytes,
                  uint64_t now);
void eng_path_run_sent(struct mroce_conn *c, uint16_t p);
void eng_path_repath(struct mroce_conn *c, uint16_t p);
/* How a packet may move its path's receive state (R-VAL-2). */
enum eng_rec { ENG_REC_DATA, ENG_REC_NEAR, ENG_REC_PROBE };
bool eng_path_rx_ok(const struct path_rx *pr, uint32_t psn, int kind);
/* R-SACK-5: records psn on the receiver's bitmap of its path; dup: it was
 * there, gap: it is not the next PSN, stale: too old to record. The usual
 * arrival, the path's next PSN, is eng_path_rx_next's. */
void eng_path_rx_record_any(struct path_rx *pr, uint32_t psn, bool *dup,
                            bool *gap, bool *stale);
/* lo shifted right by one, hi's lowest bit coming in: one SHRD where the
 * compiler has 128-bit integers (it does not find it in the shifts). */
static inline uint64_t eng_shr1(uint64_t hi, uint64_t lo)
{
#ifdef __SIZEOF_INT128__
    return (uint64_t)((((unsigned __int128)hi << 64) | lo) >> 1);
#else
    return (lo >> 1) | (hi << 63);
#endif
}
/* R-SACK-5 for psn, the path's next PSN (high + 1): a shift by one,
 * inline (nearly every data packet). */
static inline void eng_path_rx_next(struct path_rx *pr, uint32_t psn)
{
    uint64_t *b = pr->bits;
    b[3] = eng_shr1(b[2], b[3]);
    b[2] = eng_shr1(b[1], b[2]);
    b[1] = eng_shr1(b[0], b[1]);
    b[0] = (b[0] >> 1) | ((uint64_t)1 << 63); /* psn itself, bit 0 */
    pr->high = psn;
    pr->any = true;
}
int eng_path_probe_send(struct mroce_conn *c, uint64_t now, uint8_t *buf,
                        size_t cap, struct mroce_pkt_meta *meta);
/* R-PATH-8: a PROBE that is due, if any; inline, as nearly every
 * transmit attempt finds none. */
static inline int eng_path_probe_tx(struct mroce_conn *c, uint64_t now,
                                    uint8_t *buf, size_t cap,
                                    struct mroce_pkt_meta *meta)
{
    if (c->state != MROCE_CONN_CONNECTED || !c->n_probe_due)
        return 0;
    return eng_path_probe_send(c, now, buf, cap, meta);
}
/* Any acknowledged PSN on a suspect or probing path makes it active; a
 * path on a new source port starts again from the initial window (inline:
 * every ACK that makes progress). */
static inline void eng_path_alive(struct mroce_conn *c, struct path_tx *pt)
{
    if (pt->state == PATH_PROBING)
        pt->cc.cwnd = eng_path_init_cwnd(c);
    if (pt->state == PATH_SUSPECT || pt->state == PATH_PROBING)
        pt->state = PATH_ACTIVE; /* R-PATH-3 */
    pt->probe_at = ENG_NEVER;    /* the caller re-keys p's timers */
}
void eng_path_first_hint(struct mroce_conn *c);

#endif
