/* Internal state of the RoCEv2 baseline engine. Sans-I/O: libc basics
 * only. The roles follow Soft-RoCE: requester (req.c) turns send WQEs
 * into packets, responder (resp.c) checks PSNs, executes and answers,
 * completer (comp.c) consumes ACKs and READ responses and retires WQEs. */
#ifndef MROCE_ROCE_ROCE_INT_H
#define MROCE_ROCE_ROCE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce.h>

#include "device/dev.h"
#include "roce/roce.h"
#include "wire/roce.h"

#define ROCE_NEVER UINT64_MAX
#define ROCE_QP_HASH 1024
/* Bytes a frame adds to the UDP payload on Ethernet/IPv4: preamble and
 * inter-frame gap 20, Ethernet 14 + FCS 4, IPv4 20, UDP 8. Used to pace
 * whole frames at a DCQCN rate. */
#define ROCE_FRAME_OVERHEAD 66

enum roce_wr_op { RWR_WRITE, RWR_WRITE_IMM, RWR_SEND, RWR_SEND_IMM, RWR_READ };

/* Send WQE life (rxe's wqe_state): posted, being sent, all packets sent
 * and waiting for the answer. Completion retires it from the ring. */
enum wqe_state { WQE_POSTED, WQE_SENDING, WQE_PENDING, WQE_NSTATES };
extern const char *const roce_wqe_state_names[WQE_NSTATES];

struct roce_wqe {
    struct mroce_send_wr wr;
    uint8_t op; /* enum roce_wr_op */
    uint8_t state;
    bool rd_counted; /* READ: holds one of the max_rd initiator slots */
    bool fence;      /* wait for earlier WRs of the stream on other QPs */
    uint32_t npkts;
    uint32_t first_psn, last_psn; /* valid once state != WQE_POSTED */
    uint32_t ord;                 /* index in the stream's send order */
    uint8_t *laddr;               /* local buffer (READ: destination) */
    struct mroce_mr *mr;
};

struct roce_rqe {
    struct mroce_recv_wr wr;
    uint8_t *laddr;
    struct mroce_mr *mr;
    uint32_t ord;
};

/* READ being answered by the responder (rxe's "resources"). */
struct rd_job {
    uint32_t first_psn; /* PSN of the request */
    uint32_t npkts, sent;
    const uint8_t *src;
    uint32_t len;
};

/* The responder's next ACK or NAK; newer state replaces older. */
struct resp_ack {
    bool pending;
    uint8_t syndrome;
    uint32_t psn;
};

/* DCQCN reaction point, one per QP (flow). Rates in Mb/s. */
struct dcqcn_rp {
    double rc, rt, alpha;
    uint32_t t_stage, bc_stage;
    uint64_t bytes;
    uint64_t alpha_at, rate_at;
    bool limited; /* Rc below line rate: timers run, packets are paced */
};

/* In-message state of the responder (IBTA ch. 9 opcode sequence). */
enum resp_msg { RMSG_NONE, RMSG_SEND, RMSG_WRITE, RMSG_NSTATES };
extern const char *const roce_resp_msg_names[RMSG_NSTATES];

struct roce_qp {
    struct roce_conn *conn;
    struct roce_qp *hnext; /* device hash chain by QPN */
    uint32_t idx;          /* in conn->qps */
    uint32_t slot;         /* in dev->qps, and its bit in dev->ready */
    uint16_t stream;
    uint32_t qpn, dqpn;
    uint16_t sport;

    /* send queue: WQEs [sq_head, sq_tail), sq_head = oldest not retired */
    struct roce_wqe *sq;
    uint32_t sq_head, sq_tail;

    /* requester */
    uint32_t req_wqe; /* WQE being sent, in [sq_head, sq_tail] */
    uint32_t req_pkt; /* its packets already sent in this pass */
    uint32_t req_psn; /* next PSN to send */
    uint32_t psn_hi;  /* one past the highest PSN ever sent */
    uint32_t noack_pkts;
    uint32_t rd_out; /* READs holding initiator slots */

    /* completer */
    uint32_t comp_psn; /* oldest PSN not acknowledged */
    uint8_t retry_left, rnr_left;
    bool in_retry; /* a go-back-N pass runs: one per NAK (rxe started_retry) */
    uint64_t rto_at; /* local ACK timeout */
    uint64_t rnr_at; /* end of an RNR wait */

    /* receive queue */
    struct roce_rqe *rq;
    uint32_t rq_head, rq_tail;

    /* responder */
    uint32_t resp_psn; /* expected PSN (ePSN) */
    uint32_t resp_msn;
    bool nak_sent; /* one NAK sequence error per gap (rxe sent_psn_nak) */
    uint8_t msg;   /* enum resp_msg */
    uint8_t *wr_dst;
    uint32_t wr_left, wr_total; /* WRITE being placed */
    uint32_t recv_off;          /* SEND being placed in the RQ head */
    struct resp_ack ack;
    struct rd_job *rd; /* ring of 2 * max_rd */
    uint32_t rd_head, rd_count;

    /* DCQCN */
    bool cnp_due;
    uint64_t cnp_last; /* NP: last CNP sent (NEVER: none yet) */
    struct dcqcn_rp rp;
    uint64_t pace_at;

    uint64_t deadline; /* cached earliest timer of this QP */
    struct roce_qp_counters cnt;
};

/* Post-order of one stream's WRs across its QPs (R-ORD-4, R-ORD-7). */
struct ord_ent {
    bool done;
    uint16_t qp;
    struct mroce_wc wc;
};

struct roce_stream {
    struct ord_ent *sord, *rord;
    uint32_t s_head, s_tail, s_cap;
    uint32_t r_head, r_tail, r_cap;
    uint32_t n_msgs;    /* non-consuming WRs posted (round-robin) */
    uint32_t n_consume; /* receive-consuming WRs posted */
    uint32_t n_recv;    /* receives posted */
};

struct roce_conn {
    struct roce_dev *dev;
    struct mroce_pd *pd;
    struct mroce_cq *scq, *rcq;
    struct roce_conn_attr attr;
    struct roce_conn_params local, remote;
    uint8_t state; /* MROCE_CONN_INIT, CONNECTED, ERROR */
    uint32_t n_qps, k, mtu, peer_max_rd, rd_cap;
    uint64_t timeout_ns;
    struct roce_qp *qps;
    struct roce_stream *streams;
    struct roce_conn *next, *prev;
};

/* 64 QP slots' earliest deadline: exact, or low and dirty (a deadline in
 * it went up), so that on_expiry visits only blocks with a QP due. */
struct roce_blk {
    uint64_t min;
    bool dirty;
};

struct roce_dev {
    struct mroce_dev *mdev; /* PDs, MRs, CQs, hooks, address, planes */
    struct roce_dev_attr attr;
    struct roce_qp *qp_hash[ROCE_QP_HASH];
    struct roce_qp **qps; /* every QP, for tx round-robin and timers */
    uint64_t *ready;      /* per slot: may have a packet to send */
    uint64_t *paced;      /* per slot: left the ready set paced */
    uint64_t paced_min;   /* the earliest pace_at among those */
    struct roce_blk *blk; /* per 64 slots: their earliest deadline */
    uint32_t n_qps, qps_cap, tx_cursor;
    uint32_t next_qpn;
    struct roce_conn *conns;
    uint64_t deadline;
    struct roce_dev_counters cnt;
};

/* dev.c */
void roce_dev_arm(struct roce_dev *dev, uint64_t t);
int roce_dev_add_qps(struct roce_dev *dev, struct roce_conn *c);
void roce_dev_del_qps(struct roce_dev *dev, struct roce_conn *c);
void roce_qp_meta(const struct roce_qp *qp, struct mroce_pkt_meta *meta);
int roce_qp_finish(struct roce_qp *qp, const struct mroce_pkt_meta *meta,
                   uint8_t *buf, size_t hlen, const uint8_t *payload,
                   uint32_t plen);
void roce_qp_arm(struct roce_qp *qp, uint64_t t);
void roce_qp_update_deadline(struct roce_qp *qp);
void roce_conn_ready(struct roce_conn *c);

/* conn.c */
void roce_conn_error(struct roce_conn *c, struct roce_qp *qp,
                     struct roce_wqe *bad, uint8_t status);
void roce_complete_wqe(struct roce_qp *qp, struct roce_wqe *w, uint8_t status);
void roce_complete_recv(struct roce_qp *qp, uint8_t status, uint8_t opcode,
                        uint32_t byte_len, bool has_imm, uint32_t imm);
bool roce_fence_blocked(const struct roce_qp *qp, const struct roce_wqe *w);

/* req.c */
int roce_req_tx(struct roce_qp *qp, uint64_t now, uint8_t *buf, size_t cap,
                struct mroce_pkt_meta *meta);
bool roce_req_has_work(const struct roce_qp *qp);
void roce_req_rewind(struct roce_qp *qp, uint32_t psn);
static inline struct roce_wqe *roce_wqe_at(const struct roce_qp *qp, uint32_t i)
{
    return &qp->sq[i % qp->conn->attr.sq_depth];
}

/* resp.c */
void roce_resp_rx(struct roce_qp *qp, uint64_t now,
                  const struct mroce_pkt_meta *meta, const struct roce_hdr *h);
int roce_resp_tx_ctl(struct roce_qp *qp, uint8_t *buf, size_t cap,
                     struct mroce_pkt_meta *meta);
int roce_resp_tx_read(struct roce_qp *qp, uint8_t *buf, size_t cap,
                      struct mroce_pkt_meta *meta);
void roce_resp_queue_ack(struct roce_qp *qp, uint8_t syndrome, uint32_t psn);

/* comp.c */
void roce_comp_rx(struct roce_qp *qp, uint64_t now, const struct roce_hdr *h);
void roce_comp_timers(struct roce_qp *qp, uint64_t now);
bool roce_comp_outstanding(const struct roce_qp *qp);

/* dcqcn.c */
void roce_dcqcn_fill(struct roce_dcqcn_cfg *cfg);
void roce_rp_init(struct roce_qp *qp);
void roce_rp_on_cnp(struct roce_qp *qp, uint64_t now);
void roce_rp_on_sent(struct roce_qp *qp, uint64_t now, uint32_t bytes);
void roce_rp_timers(struct roce_qp *qp, uint64_t now);
uint64_t roce_rp_deadline(const struct roce_qp *qp);
bool roce_rp_may_send(const struct roce_qp *qp, uint64_t now);
void roce_np_on_ce(struct roce_qp *qp, uint64_t now);

#endif
