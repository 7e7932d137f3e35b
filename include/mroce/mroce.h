/* mroce public API -- see docs/spec.md for the protocol. */
#ifndef MROCE_MROCE_H
#define MROCE_MROCE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Addressing and packet metadata (the sans-I/O boundary) ---- */

#define MROCE_AF_NONE 0
#define MROCE_AF_INET 4
#define MROCE_AF_INET6 6

/* An IP address: family MROCE_AF_INET uses ip[0..3], MROCE_AF_INET6 all 16. */
struct mroce_addr {
    uint8_t family;
    uint8_t ip[16];
};

/* IP ECN codepoints (RFC 3168). */
#define MROCE_ECN_NOT_ECT 0
#define MROCE_ECN_ECT1 1
#define MROCE_ECN_ECT0 2
#define MROCE_ECN_CE 3

/* What a datapath tells the engine about a received UDP datagram, and what
 * the engine tells the datapath about one to send. The UDP payload itself
 * travels separately as (buf, len). */
struct mroce_pkt_meta {
    struct mroce_addr src;
    struct mroce_addr dst;
    uint16_t src_port; /* path entropy (R-ENC-3) */
    uint16_t dst_port;
    uint8_t ecn; /* MROCE_ECN_* */
    /* tx: the plane the packet belongs on (R-ENC-10), below
     * mroce_ctx_attr.n_planes; a multi-port datapath sends it from that
     * port. rx: ignored. */
    uint8_t plane;
};

/* ---- Errors ---- */

/* Every function returning int returns 0 (or a count) on success and one
 * of these on failure. */
enum mroce_err {
    MROCE_OK = 0,
    MROCE_EINVAL = -1,  /* bad argument */
    MROCE_ENOMEM = -2,  /* allocation failed */
    MROCE_EAGAIN = -3,  /* queue or window full; retry after progress */
    MROCE_ENOENT = -4,  /* unknown key, path or stream */
    MROCE_ESTATE = -5,  /* object in the wrong state for this call */
    MROCE_ERANGE = -6,  /* buffer outside its memory region */
    MROCE_EACCES = -7,  /* key lacks the access right */
    MROCE_EBUSY = -8,   /* object still in use */
    MROCE_ENOBUFS = -9, /* caller's buffer too small */
    MROCE_EPROTO = -10, /* packet dropped: malformed or not for us */
};

/* Static English text for an error code; never NULL. Thread-safe. */
const char *mroce_strerror(int err);

/* ---- Hooks: how the engine gets memory, randomness and logging ---- */

#define MROCE_LOG_ERR 0
#define MROCE_LOG_INFO 1
#define MROCE_LOG_DEBUG 2

/* Any NULL member gets a default (malloc/free, a splitmix64 generator
 * seeded from mroce_ctx_attr.seed, no logging). The engine calls alloc
 * only when objects are created, never per packet. */
struct mroce_hooks {
    void *ud;
    void *(*alloc)(void *ud, size_t size); /* zeroed memory or NULL */
    void (*free)(void *ud, void *p);
    uint64_t (*rand64)(void *ud);
    void (*log)(void *ud, int level, const char *msg);
};

/* ---- Context (one endpoint: an address and a UDP port) ---- */

struct mroce_ctx;
struct mroce_pd;
struct mroce_mr;
struct mroce_cq;
struct mroce_conn;

struct mroce_ctx_attr {
    struct mroce_hooks hooks;
    uint64_t seed;           /* for the default rand64 */
    struct mroce_addr addr;  /* this endpoint's IP address */
    uint16_t udp_port;       /* 0: MROCE_UDP_PORT (4797) */
    uint32_t mtu;            /* payload bytes per packet; 0: 4096 */
    uint32_t link_mbps;      /* line rate for the fair-share hint;
                                0: 100000 */
    uint8_t transport;       /* MROCE_TRANSPORT_* [METAROCE] */
    uint8_t rocev2_no_dcqcn; /* RoCEv2 only: 1 turns DCQCN off [on] */
    uint8_t no_icrc;         /* RoCEv2 only: send and accept packets without
                                computing the ICRC (simulation speed; the
                                packets are not valid RoCEv2 on a wire) */
    /* MetaRoCE only: the UDP source ports paths may use (R-ENC-3), for a
     * datapath that can send from a fixed set of ports only (one socket
     * per port). Copied at open. NULL/0: any port in 49152-65535. A
     * connection may then have at most n_src_ports paths. */
    const uint16_t *src_ports;
    uint32_t n_src_ports; /* at most MROCE_MAX_SRC_PORTS */
    /* MetaRoCE only: the fabric's base RTT. The fair-share window (R-CC-3)
     * uses the smaller of it and the measured min RTT, so a connection
     * whose first RTT sample already waited in a queue does not keep that
     * queue. 0: the measured min RTT alone. */
    uint32_t base_rtt_ns;
    /* Planes the endpoint's NIC attaches to, one port each (R-ENC-10):
     * MetaRoCE path p is on plane p mod n_planes, a RoCEv2 QP on its source
     * port mod n_planes. 1..MROCE_MAX_PLANES; 0: 1. */
    uint32_t n_planes;
    /* MetaRoCE only: how many data packets in a row one path may take
     * before the round-robin moves on (R-PATH-17), while it stays the
     * best-ranked path with room. 0 or 1: one packet per path turn, a
     * different path for every packet (R-PATH-13). Larger runs let a UDP
     * datapath send a run as one GSO message (15 fill 64 KiB at mtu 4096)
     * but put more packets of a path in flight at once, which weakens
     * loss detection across paths (R-LOSS-8). 1..MROCE_MAX_SPRAY_RUN. */
    uint32_t spray_run;
};

#define MROCE_MAX_PLANES 64
#define MROCE_MAX_SPRAY_RUN 256

#define MROCE_MAX_SRC_PORTS 256

/* The wire protocol a context speaks. Every call of this API works with
 * both; the path extensions (mroce_path_*) are MetaRoCE only. RoCEv2 is
 * the IBTA RC baseline of src/roce (UDP port 4791, go-back-N, DCQCN),
 * kept for side-by-side comparisons. */
#define MROCE_TRANSPORT_METAROCE 0
#define MROCE_TRANSPORT_ROCEV2 1

#define MROCE_UDP_PORT 4797

/* Creates an endpoint. Errors: EINVAL (mtu outside 256..9000, more than
 * MROCE_MAX_SRC_PORTS source ports or a port 0 among them, spray_run above
 * MROCE_MAX_SPRAY_RUN), ENOMEM.
 * Not thread-safe: one thread drives a context at a time. */
int mroce_ctx_open(const struct mroce_ctx_attr *attr, struct mroce_ctx **out);
/* Destroys the context and everything created from it. */
void mroce_ctx_close(struct mroce_ctx *ctx);

/* ---- Sans-I/O driving: the datapath calls these ---- */

/* Largest UDP payload this context emits (size of tx buffers). */
size_t mroce_ctx_max_pkt(const struct mroce_ctx *ctx);

/* Feeds one received UDP payload. buf stays the caller's. Returns 0 if
 * accepted, or MROCE_EPROTO if dropped (counted by reason in
 * mroce_ctx_counters). Never writes outside registered memory. */
int mroce_ctx_rx(struct mroce_ctx *ctx, uint64_t now_ns,
                 const struct mroce_pkt_meta *meta, const uint8_t *buf,
                 size_t len);

/* Writes the next packet to send into buf (cap bytes, at least
 * mroce_ctx_max_pkt) and its addressing into *meta. Returns its length,
 * 0 if there is nothing to send now, or ENOBUFS if cap is too small. */
int mroce_ctx_tx(struct mroce_ctx *ctx, uint64_t now_ns, uint8_t *buf,
                 size_t cap, struct mroce_pkt_meta *meta);

#define MROCE_TX_ICRC_LEN 4

/* Where the parts of a packet from mroce_ctx_tx_ref lie. On the wire the
 * packet is buf[0, hdr_len), then payload[0, payload_len), then icrc.
 * payload_len 0 (ACK, NACK, PROBE, CLOSE, a zero-length message, every
 * RoCEv2 packet): the whole packet is buf[0, hdr_len), ICRC included;
 * payload is NULL and icrc unused. */
struct mroce_tx_ref {
    const uint8_t *payload; /* in a registered memory region */
    uint32_t payload_len;
    uint32_t hdr_len; /* bytes the engine wrote into buf */
    /* the packet's ICRC (R-CRC-1), computed over the headers and the
     * payload where it lies, big-endian */
    uint8_t icrc[MROCE_TX_ICRC_LEN];
};

/* Zero-copy transmit: the same packet mroce_ctx_tx would write, byte for
 * byte, with the same effect on the engine, but a data packet's payload
 * is not copied: the engine writes its headers into buf and says in *ref
 * where the payload lies (the sender's registered memory for WRITE and
 * SEND, the responder's for a READ response) and what ICRC follows it.
 * Returns the packet's length on the wire (hdr_len + payload_len +
 * MROCE_TX_ICRC_LEN, or hdr_len when payload_len is 0), 0 if there is
 * nothing to send now, or ENOBUFS if cap is below mroce_ctx_max_pkt.
 *
 * Lifetime: ref->payload is valid, and still holds the bytes the ICRC
 * covers, only until the next call into the engine for this context
 * (mroce_ctx_rx, mroce_ctx_tx, mroce_ctx_tx_ref, mroce_ctx_on_expiry,
 * any post, mroce_poll_cq, any connection or memory region call): such a
 * call may complete the work request and hand the memory back to the
 * application. The datapath must have handed the payload to the kernel
 * or device (which copies it, as sendmsg does) before it calls the engine
 * again, or copy it. A device that reads the memory asynchronously (DMA,
 * a DPDK external buffer) would need a hold on the memory region until
 * it has read it; this call provides none.
 *
 * The RoCEv2 baseline context returns every packet whole in buf
 * (payload_len 0). Not thread-safe, as mroce_ctx_tx. */
int mroce_ctx_tx_ref(struct mroce_ctx *ctx, uint64_t now_ns, uint8_t *buf,
                     size_t cap, struct mroce_pkt_meta *meta,
                     struct mroce_tx_ref *ref);

/* R-PATH-14: the planes whose port can take a packet now (bit i = plane
 * i), for a datapath with a queue per port: until the next call,
 * mroce_ctx_tx returns data packets (MetaRoCE) or any packet of a QP
 * (RoCEv2) only for those planes, so one full port does not hold back
 * the others. MetaRoCE ACKs, PROBEs and control packets (small) may
 * still go to any plane. Default: every plane. */
void mroce_ctx_set_tx_planes(struct mroce_ctx *ctx, uint64_t planes);

/* Earliest time on_expiry must be called; UINT64_MAX if none. */
uint64_t mroce_ctx_next_expiry(const struct mroce_ctx *ctx);
/* Runs due timers (retransmission, probes, delayed ACKs). */
void mroce_ctx_on_expiry(struct mroce_ctx *ctx, uint64_t now_ns);

/* Drops at the endpoint, by reason (R-RX-1, R-RX-2, R-RX-5). */
struct mroce_ctx_counters {
    uint64_t rx_pkts;
    uint64_t tx_pkts;
    uint64_t drop_truncated;
    uint64_t drop_bad_version;
    uint64_t drop_bad_opcode;
    uint64_t drop_bad_crc;
    uint64_t drop_bad_payload;
    uint64_t drop_unknown_conn;
    uint64_t drop_bad_src;
    uint64_t planes_down; /* R-PATH-15: a plane marked down (MetaRoCE) */
};
void mroce_ctx_get_counters(const struct mroce_ctx *ctx,
                            struct mroce_ctx_counters *out);

/* Engine memory of a MetaRoCE context, in bytes, as allocated now (not
 * counting the allocator's own overhead). A connection's DSN ring and
 * retransmit FIFO and each path's PSN ring start small at connect and
 * double while what is in flight fills them, up to dsn_window and
 * path_window; paths are allocated at connect for the negotiated count.
 * A RoCEv2 context reports its context tables only. Cost O(connections
 * + paths). Not thread-safe (reads the context's state). */
struct mroce_state_bytes {
    uint64_t conns, paths; /* connections; paths over all of them */
    /* unit sizes */
    uint64_t per_conn;     /* a connection's fixed object */
    uint64_t per_path;     /* a path's fixed state, both directions */
    uint64_t per_dsn_slot; /* a DSN ring slot plus a retransmit slot */
    uint64_t per_psn_slot; /* a slot of a path's PSN ring */
    /* totals over the context's connections */
    uint64_t conn_bytes; /* fixed objects, DSN dedup bitmaps, READ slots,
                            send/receive queues (sq_depth, rq_depth) */
    uint64_t path_bytes; /* paths' fixed state */
    uint64_t dsn_bytes;  /* DSN rings and retransmit FIFOs */
    uint64_t psn_bytes;  /* PSN rings */
    uint64_t ctx_bytes;  /* the context object and its tables */
    uint64_t total;      /* the sum of the five above */
};
void mroce_ctx_state_bytes(const struct mroce_ctx *ctx,
                           struct mroce_state_bytes *out);

/* ---- Protection domains and memory regions ---- */

int mroce_pd_alloc(struct mroce_ctx *ctx, struct mroce_pd **out);
/* Errors: EBUSY while memory regions or connections use it. */
int mroce_pd_free(struct mroce_pd *pd);

#define MROCE_ACCESS_LOCAL_WRITE 0x1
#define MROCE_ACCESS_REMOTE_WRITE 0x2
#define MROCE_ACCESS_REMOTE_READ 0x4

/* Registers [addr, addr+len). The memory stays the caller's and must stay
 * valid until mroce_dereg_mr. Keys are 32-bit random values, unique in
 * the context (R-SEC-2). The local and remote key are the same value.
 * Errors: EINVAL (len 0, unknown flags, remote write without local
 * write), ENOMEM. */
int mroce_reg_mr(struct mroce_pd *pd, void *addr, size_t len, unsigned access,
                 struct mroce_mr **out);
uint32_t mroce_mr_lkey(const struct mroce_mr *mr);
uint32_t mroce_mr_rkey(const struct mroce_mr *mr);
/* Errors: EBUSY while a posted work request refers to it. */
int mroce_dereg_mr(struct mroce_mr *mr);

/* ---- Completion queues ---- */

enum mroce_wc_status {
    MROCE_WC_SUCCESS = 0,
    MROCE_WC_LOC_LEN_ERR,       /* message longer than the receive */
    MROCE_WC_LOC_PROT_ERR,      /* local key or bounds */
    MROCE_WC_REM_ACCESS_ERR,    /* peer refused key/bounds/permission */
    MROCE_WC_REM_INV_REQ_ERR,   /* peer found the request invalid */
    MROCE_WC_REM_OP_ERR,        /* peer could not execute */
    MROCE_WC_RETRY_EXC_ERR,     /* retry limit: peer or paths gone */
    MROCE_WC_RNR_RETRY_EXC_ERR, /* peer never posted a receive */
    MROCE_WC_WR_FLUSH_ERR,      /* flushed: connection in error/closed */
};
const char *mroce_wc_status_str(int status);

enum mroce_wc_opcode {
    MROCE_WC_SEND,
    MROCE_WC_RDMA_WRITE,
    MROCE_WC_RDMA_READ,
    MROCE_WC_RECV,               /* a SEND or SEND_IMM arrived */
    MROCE_WC_RECV_RDMA_WITH_IMM, /* a WRITE_IMM arrived */
};

struct mroce_wc {
    uint64_t wr_id;
    struct mroce_conn *conn;
    uint16_t stream;
    uint8_t status; /* mroce_wc_status */
    uint8_t opcode; /* mroce_wc_opcode */
    uint8_t has_imm;
    uint32_t byte_len; /* receives: bytes placed */
    uint32_t imm;
};

/* A CQ holds `depth` completions; connections reserve room for every work
 * request they can have outstanding, so a CQ never overflows.
 * Errors: EINVAL (depth 0), ENOMEM. */
int mroce_cq_create(struct mroce_ctx *ctx, uint32_t depth,
                    struct mroce_cq **out);
/* Errors: EBUSY while a connection uses it. */
int mroce_cq_destroy(struct mroce_cq *cq);
/* Moves up to n completions into wc[]; returns how many (>= 0). */
int mroce_poll_cq(struct mroce_cq *cq, int n, struct mroce_wc *wc);

/* ---- Connections (the queue pair of MetaRoCE) ---- */

/* Zero fields take the default in brackets. */
struct mroce_conn_attr {
    struct mroce_cq *send_cq;    /* required */
    struct mroce_cq *recv_cq;    /* required (may equal send_cq) */
    uint16_t n_streams;          /* ordered message streams [1] */
    uint16_t n_paths;            /* 1..256 [16] */
    uint32_t sq_depth;           /* send WRs per stream [64] */
    uint32_t rq_depth;           /* receive WRs per stream [64] */
    uint32_t dsn_window;         /* packets in flight, power of 2 [4096] */
    uint32_t path_window;        /* PSNs in flight per path, pow2<=256 [256]*/
    uint32_t max_rd;             /* outstanding READs [16] */
    uint8_t retry_cnt;           /* timeout rounds before ERROR [7] */
    uint8_t rnr_retry;           /* RNR retries, 7 = unlimited [7] */
    uint64_t min_rto_ns;         /* [100000] */
    uint64_t max_rto_ns;         /* [100000000] */
    uint32_t ack_every;          /* ACK every n packets per path [1] */
    uint64_t ack_delay_ns;       /* delayed-ACK bound [2000] */
    uint32_t init_cwnd_pkts;     /* per connection, split over the paths
                                    (at least 1 each) [128] */
    uint32_t max_conn_cwnd_pkts; /* connection window cap [dsn_window] */
    uint8_t tail_copies;         /* copies of a retransmission sent when
                                    nothing new waits: 1 or 2 [2]
                                    (R-LOSS-7) */
    uint16_t qps_per_stream;     /* RoCEv2: QPs per stream, k [1] */
    uint8_t rocev2_timeout;      /* RoCEv2: ACK timeout 4.096us*2^t [14] */
    uint32_t rocev2_window;      /* RoCEv2: PSNs in flight per QP [1024] */
    /* MetaRoCE: the connection's id, which the peer puts in every packet
     * for it; 0: a fresh random id [0] (R-CONN-1). A caller that picks it
     * (the drop-in libibverbs: the QP number, R-SOFT-2) must pick it
     * unpredictably; EBUSY if the context already has it. */
    uint32_t conn_id;
};

#define MROCE_MAX_QPS 256 /* RoCEv2 QPs per connection */

/* What the two sides exchange out of band before connecting (R-CONN-3). */
struct mroce_conn_params {
    uint32_t conn_id;
    struct mroce_addr addr;
    uint16_t udp_port;
    uint16_t n_paths;
    uint16_t n_streams;
    uint32_t mtu;
    uint32_t dsn_window;
    uint32_t msg_window; /* messages in flight per stream it accepts */
    uint32_t max_rd;
    uint8_t transport; /* MROCE_TRANSPORT_*; both sides must agree */
    uint16_t n_qps;    /* RoCEv2: QP numbers and first PSNs */
    uint32_t qpn[MROCE_MAX_QPS];
    uint32_t psn[MROCE_MAX_QPS];
};

enum mroce_conn_state {
    MROCE_CONN_INIT,      /* created, not connected */
    MROCE_CONN_CONNECTED, /* sending and receiving */
    MROCE_CONN_CLOSING,   /* disconnect called, waiting for CLOSE_ACK */
    MROCE_CONN_CLOSED,
    MROCE_CONN_ERROR, /* retry limit or fatal NACK; WRs flushed */
};
const char *mroce_conn_state_str(int state);

/* Errors: EINVAL (bad attr, pd/cq of another context), EBUSY (attr
 * conn_id in use), ENOMEM. */
int mroce_conn_create(struct mroce_pd *pd, const struct mroce_conn_attr *attr,
                      struct mroce_conn **out);
void mroce_conn_get_params(const struct mroce_conn *conn,
                           struct mroce_conn_params *out);
/* Errors: ESTATE (not INIT), EINVAL (params out of range), ENOMEM (paths
 * and send rings are allocated here, for the negotiated values). */
int mroce_conn_connect(struct mroce_conn *conn,
                       const struct mroce_conn_params *remote);
/* Abortive close: flushes every outstanding work request and posted
 * receive with WR_FLUSH_ERR, then sends CLOSE, with a doubling wait, until
 * CLOSE_ACK or 1 + retry_cnt copies (R-CONN-8).
 * Errors: ESTATE if not connected. */
int mroce_conn_disconnect(struct mroce_conn *conn);
/* Frees the connection; outstanding WRs are dropped without completion. */
void mroce_conn_destroy(struct mroce_conn *conn);
int mroce_conn_state(const struct mroce_conn *conn);

/* ---- Work requests ---- */

struct mroce_sge {
    uint64_t addr;
    uint32_t length;
    uint32_t lkey;
};

struct mroce_send_wr {
    uint64_t wr_id;
    uint16_t stream;
    struct mroce_sge sge; /* local buffer (READ: destination) */
    uint64_t remote_addr; /* WRITE, WRITE_IMM, READ */
    uint32_t rkey;        /* WRITE, WRITE_IMM, READ */
    uint32_t imm;         /* WRITE_IMM, SEND with post_send_imm */
};

struct mroce_recv_wr {
    uint64_t wr_id;
    uint16_t stream;
    struct mroce_sge sge;
};

/* Post calls copy the WR; the buffers stay the caller's and must stay
 * valid until the completion. Completions of a stream come in post order.
 * Errors: ENOENT (stream), EACCES/ERANGE (lkey or bounds), EINVAL
 * (length above 2^31), EAGAIN (queue full), ESTATE (not connected). */
int mroce_post_write(struct mroce_conn *conn, const struct mroce_send_wr *wr);
int mroce_post_write_imm(struct mroce_conn *conn,
                         const struct mroce_send_wr *wr);
int mroce_post_send(struct mroce_conn *conn, const struct mroce_send_wr *wr);
int mroce_post_send_imm(struct mroce_conn *conn,
                        const struct mroce_send_wr *wr);
int mroce_post_read(struct mroce_conn *conn, const struct mroce_send_wr *wr);
/* Receives may be posted before connect. */
int mroce_post_recv(struct mroce_conn *conn, const struct mroce_recv_wr *wr);

/* ---- Counters and path extensions ---- */

struct mroce_conn_counters {
    uint64_t tx_pkts, tx_bytes, rx_pkts, rx_bytes;
    uint64_t tx_data_pkts, rx_data_pkts;
    uint64_t retx_pkts; /* data packets sent again */
    uint64_t tlp_pkts;  /* tail-loss probes */
    uint64_t rto_events;
    uint64_t tx_acks, rx_acks, tx_nacks, rx_nacks;
    uint64_t rx_dup_pkts; /* DSN already received */
    uint64_t rx_ecn_ce;   /* CE-marked packets received */
    uint64_t rnr_naks;
    uint64_t drop_bad_path, drop_dsn_window, drop_msn_window;
    uint64_t drop_bad_key, drop_bad_bounds, drop_bad_access;
    uint64_t drop_bad_msg; /* inconsistent message fields */
    uint64_t drop_state;   /* data while closed/in error */
    uint64_t drop_stale;   /* NACK matching nothing, or reserved code */
    uint64_t drop_bad_ack; /* ACK for a PSN or DSN never sent (R-ACK-6) */
    uint64_t drop_ooo;     /* RoCEv2: out-of-order packet (go-back-N) */
    uint64_t repaths;
    uint64_t msgs_tx, msgs_rx;
    /* MetaRoCE: data transmissions declared lost, each once, by the rule
     * that declared it (a transmission a tail-loss probe already sent
     * again is not counted again when its path's SACK or RTO resolves
     * it); the sum is not retx_pkts (R-LOSS-5 copies, R-LOSS-7) */
    uint64_t lost_sack; /* R-LOSS-1: a hole below an ACK's sack_high */
    uint64_t lost_rack; /* R-LOSS-8: late by a later packet's ACK */
    uint64_t lost_pto;  /* R-RTT-7: tail-loss probe at the PTO */
    uint64_t lost_rto;  /* R-RTT-6: RTO expiry */
    uint64_t lost_rnr;  /* R-RETRY-4: refused by an RNR NACK */
};
void mroce_conn_get_counters(const struct mroce_conn *conn,
                             struct mroce_conn_counters *out);

enum mroce_path_state {
    MROCE_PATH_ACTIVE,
    MROCE_PATH_SUSPECT,
    MROCE_PATH_FAILED,
    MROCE_PATH_PROBING,
    MROCE_PATH_DISABLED, /* switched off by mroce_path_enable(.., 0) */
};
const char *mroce_path_state_str(int state);

struct mroce_path_info {
    uint8_t state;
    uint16_t src_port;
    uint64_t srtt_ns, min_rtt_ns, rto_ns;
    uint32_t cwnd_bytes, inflight_bytes;
    uint64_t tx_pkts, tx_bytes, retx_pkts, acked_pkts, lost_pkts;
    uint64_t ecn_marks, timeouts, repaths, probes;
};
/* Errors: ENOENT (path >= n_paths). */
int mroce_path_query(const struct mroce_conn *conn, uint16_t path,
                     struct mroce_path_info *out);
/* Moves a path to a fresh random UDP source port (R-PATH-5, R-PATH-12). */
int mroce_path_repath(struct mroce_conn *conn, uint16_t path);
/* Takes a path out of (0) or back into (1) use (R-PATH-12). Errors:
 * ENOENT, EINVAL (disabling the last enabled path). */
int mroce_path_enable(struct mroce_conn *conn, uint16_t path, int on);

#ifdef __cplusplus
}
#endif
#endif
