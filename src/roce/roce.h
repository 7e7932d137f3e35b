/* The RoCEv2 baseline engine: IBTA Reliable Connected (RC) transport over
 * UDP/4791, as Linux Soft-RoCE (drivers/infiniband/sw/rxe) implements it,
 * plus DCQCN. It exists so MetaRoCE can be compared with RoCEv2 behind the
 * same sans-I/O shape and the same verbs semantics (src/roce/README.md
 * says what is modelled, how and why).
 *
 * Shape: one device (struct roce_dev) on a struct mroce_dev (src/device),
 * which provides the PD, MR and CQ objects it shares with the MetaRoCE
 * engine (mroce_pd_alloc, mroce_reg_mr, mroce_cq_create, mroce_poll_cq
 * work unchanged); the RoCEv2 device owns the QPs.
 * Packets enter through roce_dev_rx, leave through roce_dev_tx into a
 * caller buffer, and time enters as a nanosecond argument; timers are one
 * roce_dev_next_expiry deadline plus roce_dev_on_expiry.
 *
 * A connection (struct roce_conn) is n_streams x qps_per_stream RC QPs.
 * Stream s owns QPs [s*k, s*k+k); its messages go round-robin over them,
 * whole messages, as NCCL stripes its transfers over the QPs of one
 * connection (NCCL_IB_QPS_PER_CONNECTION). Completions still come in post
 * order per stream (R-ORD-4/7), re-ordered across the stream's QPs.
 *
 * Errors are enum mroce_err codes. Thread-safety: none; a device and
 * everything on it belong to one thread at a time, like its mroce_dev.
 * Buffers passed to rx/tx are only lent for the call. */
#ifndef MROCE_ROCE_ROCE_H
#define MROCE_ROCE_ROCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce.h>

#include "device/dev.h"

#define ROCE_MAX_QPS 256 /* per connection: n_streams * qps_per_stream */

/* IB MTUs (IBTA ch. 7): the PMTU is one of these. */
#define ROCE_MTU_MIN 256
#define ROCE_MTU_MAX 4096

struct roce_dev;
struct roce_conn;

/* ---- DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA
 * Deployments", SIGCOMM 2015) ---- */

/* Zero fields take the default in brackets: the paper's values (section 5
 * as quoted in the brief of issue 3) unless said otherwise. */
struct roce_dcqcn_cfg {
    double g;                 /* alpha gain [1/256] */
    uint64_t alpha_timer_ns;  /* K: alpha decays without CNPs [55000] */
    uint64_t rate_timer_ns;   /* T: rate-increase timer [55000] */
    uint64_t byte_counter;    /* B: bytes per increase event [10 MB] */
    uint32_t f;               /* fast-recovery steps [5] */
    double rai_mbps;          /* additive increase [40, the paper's] */
    double rhai_mbps;         /* hyper increase [400 = 10 x R_AI, the
                                 mlx5 ratio 50:5; the paper's figure not
                                 verified here] */
    double min_rate_mbps;     /* floor [1, mlx5 rpg_min_rate] */
    double min_dec_factor;    /* a CNP cuts to at least this x Rc [0] */
    uint64_t cnp_interval_ns; /* N: at most one CNP per QP per N [50000] */
};

/* mlx5 firmware defaults as mlxconfig shows them (rpg_time_reset 300 us,
 * rpg_byte_reset 32767 B, rpg_threshold 1, rpg_ai_rate 5, rpg_hai_rate
 * 50, rpg_min_rate 1 Mb/s, rpg_min_dec_fac 50 %, dce_tcp_g 1019/1024);
 * alpha timer and CNP interval keep the paper's values. */
void roce_dcqcn_cfg_mlx5(struct roce_dcqcn_cfg *cfg);

/* ---- Device ---- */

struct roce_dev_attr {
    uint32_t link_mbps; /* line rate: DCQCN's start and ceiling [100000] */
    uint8_t dcqcn;      /* 1: CNPs at the receiver, rate machine and pacing
                           at the sender; 0: line rate, CNPs ignored */
    struct roce_dcqcn_cfg dcqcn_cfg;
    uint32_t first_qpn; /* QPNs are handed out from here [17, as rxe] */
    /* ICRC costs ~2.4 us of CPU per 4 KiB packet each way (byte-table
     * CRC-32). A simulated fabric that never flips bits may skip it: */
    uint8_t no_icrc_check; /* 1: skip ICRC verification on receive */
    uint8_t no_icrc_tx;    /* 1: send a zero ICRC (pair with a peer that
                              has no_icrc_check) */
};

/* Errors: EINVAL, ENOMEM. The device uses md's hooks, address and
 * planes, and its PDs, MRs and CQs. */
int roce_dev_create(struct mroce_dev *md, const struct roce_dev_attr *attr,
                    struct roce_dev **out);
/* Destroys the device and its connections (not the context); call it
 * before the PDs and CQs they use are freed (dev_release). */
void roce_dev_destroy(struct roce_dev *dev);

/* Largest UDP payload the device emits (size tx buffers with it). */
size_t roce_dev_max_pkt(const struct roce_dev *dev);

/* Feeds one received UDP payload. Returns 0 if accepted, MROCE_EPROTO if
 * dropped (counted by reason). Never writes outside registered memory. */
int roce_dev_rx(struct roce_dev *dev, uint64_t now_ns,
                const struct mroce_pkt_meta *meta, const uint8_t *buf,
                size_t len);
/* Writes the next packet into buf and its addressing into *meta. QPs take
 * turns (round-robin); a QP sends data only when its DCQCN rate allows.
 * Returns the length, 0 if nothing can go now, ENOBUFS if cap is below
 * roce_dev_max_pkt. */
int roce_dev_tx(struct roce_dev *dev, uint64_t now_ns, uint8_t *buf, size_t cap,
                struct mroce_pkt_meta *meta);
/* Earliest time on_expiry must run (timers and pacing); UINT64_MAX if
 * none. */
uint64_t roce_dev_next_expiry(const struct roce_dev *dev);
void roce_dev_on_expiry(struct roce_dev *dev, uint64_t now_ns);

struct roce_dev_counters {
    uint64_t rx_pkts, tx_pkts;
    uint64_t drop_truncated, drop_bad_version, drop_bad_opcode;
    uint64_t drop_bad_icrc, drop_bad_payload, drop_bad_port;
    uint64_t drop_unknown_qp, drop_bad_src, drop_bad_pkey;
};
void roce_dev_get_counters(const struct roce_dev *dev,
                           struct roce_dev_counters *out);

/* ---- Connections ---- */

/* Zero fields take the default in brackets. */
struct roce_conn_attr {
    struct mroce_cq *send_cq;   /* required */
    struct mroce_cq *recv_cq;   /* required (may equal send_cq) */
    struct mroce_conn *wc_conn; /* reported in mroce_wc.conn [NULL] */
    uint16_t n_streams;         /* [1] */
    uint16_t qps_per_stream;    /* k [1] */
    uint32_t sq_depth;          /* send WRs per QP [64] */
    uint32_t rq_depth;          /* receive WRs per QP [64] */
    uint32_t mtu;               /* PMTU, 256..4096, a power of 2 [4096] */
    uint32_t max_rd;            /* READs outstanding per QP, both as
                                   initiator and responder [16] */
    /* Local ACK timeout exponent: 4.096 us * 2^timeout, 1..31 (IBTA
     * ch. 9) [14 = 67.1 ms, ibv_rc_pingpong's value] */
    uint8_t timeout;
    uint8_t retry_cnt; /* transport retries, 1..7, 7 is 7 (IBTA) [7] */
    uint8_t rnr_retry; /* RNR retries, 1..7, 7 = infinite [7] */
    /* RNR NAK timer code this side sends (the IBTA RNR timer encoding) [12 =
     * 0.64 ms, ibv_rc_pingpong's value] */
    uint8_t min_rnr_timer;
    uint32_t max_unacked_psns; /* send window in PSNs [128, rxe] */
    uint32_t ack_req_every;    /* A bit at least every n packets [64,
                                  rxe RXE_MAX_PKT_PER_ACK] */
    uint8_t psn_fixed;         /* 1: start PSNs are start_psn (tests) */
    uint32_t start_psn;        /* else random 24-bit, as rdma_cm */
};

/* What the two sides exchange out of band (the CM REQ/REP of a real RC
 * connection): per QP its number and starting PSN. */
struct roce_conn_params {
    struct mroce_addr addr;
    uint16_t n_streams, n_qps;
    uint32_t mtu;
    uint32_t max_rd; /* READs this side will serve per QP */
    uint32_t qpn[ROCE_MAX_QPS];
    uint32_t psn[ROCE_MAX_QPS]; /* first PSN this side's QP sends */
};

/* Errors: EINVAL (bad attr, cq of another context), ENOMEM. */
int roce_conn_create(struct roce_dev *dev, struct mroce_pd *pd,
                     const struct roce_conn_attr *attr, struct roce_conn **out);
void roce_conn_get_params(const struct roce_conn *conn,
                          struct roce_conn_params *out);
/* INIT -> RTS (both directions). Errors: ESTATE (not INIT), EINVAL
 * (params out of range or another QP count). */
int roce_conn_connect(struct roce_conn *conn,
                      const struct roce_conn_params *remote);
/* Frees the connection; outstanding WRs are dropped without completion. */
void roce_conn_destroy(struct roce_conn *conn);
/* MROCE_CONN_INIT, CONNECTED or ERROR (all QPs flushed). */
int roce_conn_state(const struct roce_conn *conn);

/* Work requests: the semantics and errors of mroce_post_* (mroce.h);
 * wr->stream picks the stream. Errors: ENOENT (stream), EACCES/ERANGE
 * (lkey or bounds), EINVAL (length above 2^31), EAGAIN (queue full),
 * ESTATE (not connected; receives may be posted before connect). */
int roce_post_write(struct roce_conn *c, const struct mroce_send_wr *wr);
int roce_post_write_imm(struct roce_conn *c, const struct mroce_send_wr *wr);
int roce_post_send(struct roce_conn *c, const struct mroce_send_wr *wr);
int roce_post_send_imm(struct roce_conn *c, const struct mroce_send_wr *wr);
int roce_post_read(struct roce_conn *c, const struct mroce_send_wr *wr);
int roce_post_recv(struct roce_conn *c, const struct mroce_recv_wr *wr);

struct roce_qp_counters {
    uint64_t tx_pkts, tx_bytes, rx_pkts, rx_bytes;
    uint64_t tx_data_pkts, rx_data_pkts; /* requests and READ responses */
    uint64_t retx_pkts;                  /* packets sent again */
    uint64_t timeouts;                   /* local ACK timeouts */
    uint64_t retries;                    /* go-back-N restarts */
    uint64_t tx_acks, rx_acks;
    uint64_t tx_naks, rx_naks;         /* PSN sequence error NAKs */
    uint64_t tx_rnr_naks, rx_rnr_naks; /* RNR NAKs */
    uint64_t tx_fatal_naks, rx_fatal_naks;
    uint64_t rx_ooo; /* PSN ahead of the expected one: dropped */
    uint64_t rx_dup; /* PSN already received: re-ACKed or re-executed */
    uint64_t rx_ecn_ce;
    uint64_t tx_cnps, rx_cnps;
    uint64_t rate_decreases, rate_increases;
    uint64_t drop_bad_ack; /* ACK for a PSN never sent, or stale */
    uint64_t msgs_tx, msgs_rx;
};

/* Sum over the connection's QPs. */
void roce_conn_get_counters(const struct roce_conn *conn,
                            struct roce_qp_counters *out);

struct roce_qp_info {
    uint32_t qpn, dest_qpn;
    uint16_t src_port;  /* fixed per QP: one ECMP path */
    uint32_t sq_psn;    /* next PSN to send */
    uint32_t una_psn;   /* oldest unacknowledged PSN */
    uint32_t rq_psn;    /* next PSN expected */
    double rate_mbps;   /* DCQCN current rate Rc */
    double target_mbps; /* DCQCN target rate Rt */
    double alpha;
    struct roce_qp_counters cnt;
};
/* Errors: ENOENT (qp >= number of QPs). */
int roce_conn_qp_info(const struct roce_conn *conn, uint32_t qp,
                      struct roce_qp_info *out);
uint32_t roce_conn_n_qps(const struct roce_conn *conn);

/* Local ACK timeout of exponent t in ns (0 for t = 0: no timeout). */
uint64_t roce_timeout_ns(uint8_t t);
/* RNR NAK timer code -> ns (the IBTA RNR timer encoding). */
uint64_t roce_rnr_timer_ns(uint8_t code);

#endif
