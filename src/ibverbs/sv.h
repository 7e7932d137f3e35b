/* The drop-in libibverbs and its software NIC: internal state.
 *
 * A verbs program sees one device, mroce0, with one Ethernet port. Each
 * opened context is one soft NIC: a MetaRoCE endpoint (struct mroce_ctx)
 * on a datapath (struct mroce_dp, UDP by default) driven by one progress
 * thread, the NIC thread (nic.c). The application's calls and the NIC
 * meet in two places only:
 *
 * - the data path: post_send/post_recv write work requests into per-QP
 *   rings and ring a doorbell; the NIC thread feeds them to the engine
 *   and writes work completions into per-CQ rings that ibv_poll_cq reads.
 *   Every ring has one producer and one consumer (a spinlock serialises
 *   concurrent application threads on their side), so no lock is taken
 *   between the two sides (ring.h);
 * - the control path (create, modify, destroy, reg_mr): under the
 *   context's lock `ctl`, which the NIC thread holds while it runs a
 *   pass, as a NIC's firmware serialises commands with its datapath.
 *
 * The verbs objects map one to one onto the device's objects (src/device):
 * ibv_pd -> mroce_pd, ibv_mr -> mroce_mr, ibv_cq -> mroce_cq, and an RC
 * ibv_qp -> one MetaRoCE connection (mroce_conn). Addressing: addr.c and
 * docs/spec.md section "Soft endpoints" (R-SOFT-*). */
#ifndef MROCE_IBVERBS_SV_H
#define MROCE_IBVERBS_SV_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <mroce/mroce.h>
#include <mroce/mroce_dp.h>

#define SV_DEV_NAME "mroce0"
#define SV_VENDOR_ID 0xFFFFFF /* no IEEE OUI: the software-device value */
#define SV_VENDOR_PART 0x4D52 /* "MR" */
#define SV_MAX_QP_WR 16384
#define SV_MAX_CQE (1 << 20)
#define SV_MAX_INLINE 256
#define SV_MAX_RD 64 /* READs in flight per QP, either direction */
#define SV_MAX_QP 4096
#define SV_MAX_MSG (1u << 31) /* the engine's message limit */
#define SV_PORT_BASE 4800     /* R-SOFT-1: first UDP port tried */
#define SV_PORT_TRIES 2048

/* ---- the profile: what verbs cannot say (profile.c, MROCE_VERBS_*) ---- */

struct sv_profile {
    char ip[64];         /* MROCE_VERBS_IP [127.0.0.1] */
    uint16_t port;       /* MROCE_VERBS_PORT [0: probe from SV_PORT_BASE] */
    uint16_t paths;      /* MROCE_VERBS_PATHS [16] */
    uint16_t streams;    /* MROCE_VERBS_STREAMS [1] */
    uint32_t planes;     /* MROCE_VERBS_PLANES [1] */
    uint32_t spray_run;  /* MROCE_VERBS_SPRAY_RUN [1] */
    uint32_t batch;      /* MROCE_VERBS_BATCH [datapath's] */
    uint64_t min_rto_ns; /* MROCE_VERBS_MIN_RTO_US [1000] */
    uint8_t retry_cnt;   /* MROCE_VERBS_RETRY [15] */
    int datapath;        /* MROCE_VERBS_DATAPATH udp|dpdk [udp] */
    char dpdk_args[512]; /* MROCE_VERBS_DPDK_ARGS (EAL, space separated) */
    double loss;         /* MROCE_VERBS_LOSS: impairment, tests only [0] */
    bool no_gso, no_gro; /* MROCE_VERBS_GSO=0, MROCE_VERBS_GRO=0 */
    uint32_t spins;      /* MROCE_VERBS_SPINS: idle passes before sleep */
    bool assist;         /* MROCE_VERBS_ASSIST: pollers run passes [1] */
    int log;             /* MROCE_VERBS_LOG [0] */
};

/* Reads the environment; on a bad value writes why into err and returns
 * -1. */
int sv_profile_load(struct sv_profile *p, char *err, size_t errlen);
struct mroce_verbs_attr;
/* Explicit values (mroce_verbs_open_device); EINVAL if out of range. */
int sv_profile_override(struct sv_profile *p, const struct mroce_verbs_attr *a);

/* ---- rings (ring.h has the index helpers) ---- */

#define SV_WR_SIGNALED 0x1
#define SV_WR_SOLICITED 0x2
#define SV_WR_INLINE 0x4

/* One send work request as the application posted it. */
struct sv_swqe {
    uint64_t wr_id;
    uint64_t laddr, raddr;
    uint32_t length, lkey, rkey, imm;
    uint8_t opcode; /* enum ibv_wr_opcode */
    uint8_t flags;  /* SV_WR_* */
    uint16_t stream;
};

struct sv_rwqe {
    uint64_t wr_id;
    uint64_t addr;
    uint32_t length, lkey;
    uint16_t stream;
};

/* A work queue: entries [retired, head) belong to the NIC, the rest to
 * the application. The application advances head (release) after writing
 * an entry; the NIC feeds [fed, head) to the engine and advances retired
 * (release) when an entry's completion has been delivered. */
struct sv_wq {
    _Atomic uint32_t head;    /* application: entries posted */
    _Atomic uint32_t retired; /* NIC: entries completed and free again */
    uint32_t fed;             /* NIC: entries handed to the engine */
    uint32_t mask;            /* ring size - 1 */
    uint32_t max_wr;          /* what the application may have posted */
    uint8_t *done;            /* NIC: completed, waiting to retire */
    atomic_flag lock;         /* application threads posting */
};

struct sv_cq;
struct sv_ctx;
struct sv_pd;

/* ---- QP ---- */

struct sv_qp {
    struct ibv_qp ibv;
    struct sv_ctx *ctx;
    uint32_t slot; /* index in ctx->qps: bits 32..47 of engine wr_ids */
    uint16_t gen;  /* bits 48..63: tells a reused slot's QPs apart */
    struct mroce_conn *conn;
    struct sv_cq *scq, *rcq;
    struct ibv_qp_attr attr; /* as set by modify (and queried) */
    struct ibv_qp_cap cap;
    int sq_sig_all;
    uint16_t stream; /* extension: stream of the next posts */
    uint16_t n_paths, n_streams;

    struct sv_wq sq, rq;
    struct sv_swqe *sqe;
    struct sv_rwqe *rqe;
    uint8_t *inl;              /* SV_MAX_INLINE bytes per send slot */
    struct mroce_mr *inl_mr;   /* the inline area, registered */
    uint32_t sq_fail;          /* NIC: first send the engine refused */
    int sq_fail_err;           /* NIC: and why (MROCE_E*) */
    bool sq_failed, rq_failed; /* NIC: a queue stopped at a refusal */
    bool errored;              /* NIC: moved to ERR, rings being flushed */
    bool conn_failed;          /* NIC: an error completion came back */
    bool async_sent;           /* NIC: QP_FATAL already reported */
    bool sqd_notify;           /* NIC: report SQ_DRAINED when drained */
    _Atomic int state;         /* enum ibv_qp_state, mirrored in ibv.state */
    uint32_t events_delivered; /* async events handed to the application */
};

/* ---- CQ ---- */

struct sv_chan {
    struct ibv_comp_channel ibv;
    pthread_mutex_t mu;
    struct sv_cq **ev; /* queued events (a CQ may appear several times) */
    uint32_t ev_head, ev_count, ev_cap;
};

struct sv_cq {
    struct ibv_cq ibv;
    struct sv_ctx *ctx;
    struct mroce_cq *cq; /* the device's CQ (one to one) */
    struct sv_chan *chan;
    struct ibv_wc *ring;
    uint32_t mask;
    _Atomic uint32_t tail; /* NIC: completions written */
    _Atomic uint32_t head; /* application: completions read */
    atomic_flag poll_lock;
    bool pushed;           /* NIC: wrote completions in this pass */
    atomic_int armed;      /* req_notify_cq: 1 any, 2 solicited only */
    atomic_bool nic_waits; /* the NIC found the ring full */
    uint32_t empty_polls;  /* application: polls in a row that found none */
    uint32_t users;        /* QPs using it */
    uint32_t events_delivered;
    struct sv_cq *next; /* ctx list */
};

/* ---- PD, MR ---- */

struct sv_pd {
    struct ibv_pd ibv;
    struct mroce_pd *pd;
};

struct sv_mr {
    struct ibv_mr ibv;
    struct mroce_mr *mr;
};

/* ---- async events (async.c) ---- */

struct sv_async {
    pthread_mutex_t mu;
    struct ibv_async_event *ev;
    uint32_t head, count, cap;
};

/* ---- the context: one soft NIC ---- */

struct sv_ctx {
    struct verbs_context vctx; /* the ibv_context is its last member */
    struct sv_profile prof;
    struct mroce_dp *dp;
    struct mroce_ctx *eng;
    struct mroce_addr addr; /* bound address: the GID (R-SOFT-1) */
    uint16_t port;          /* bound UDP port: the port's LID (R-SOFT-1) */

    pthread_mutex_t ctl;    /* control path and every NIC pass */
    atomic_int ctl_waiting; /* application threads waiting for ctl */
    pthread_t thread;
    atomic_bool stop, sleeping;
    atomic_int doorbell; /* something was posted or polled */
    bool running;

    struct sv_qp **qps; /* by slot; NULL: free */
    uint32_t n_qps;     /* slots ever used (a high-water mark) */
    uint32_t qps_cap;
    uint16_t qp_gen;
    struct sv_cq *cqs;
    struct sv_async async;
    uint64_t passes, sleeps, wakes; /* NIC counters (extension) */
    uint64_t assists;               /* passes run by polling threads */
    int pass_rx, pass_done; /* the last pass: packets in, completions out */
};

static inline struct sv_ctx *sv_ctx_of(struct ibv_context *c)
{
    return (struct sv_ctx *)(void *)((char *)c -
                                     offsetof(struct sv_ctx, vctx.context));
}

static inline struct sv_qp *sv_qp_of(struct ibv_qp *q)
{
    return (struct sv_qp *)(void *)q;
}

static inline struct sv_cq *sv_cq_of(struct ibv_cq *c)
{
    return (struct sv_cq *)(void *)c;
}

/* Engine wr_id of a ring entry: which QP (slot, generation) and which
 * entry (the ring sequence number); whether it is a send or a receive
 * the completion's opcode says. */
static inline uint64_t sv_wr_id(const struct sv_qp *q, uint32_t seq)
{
    return (uint64_t)q->gen << 48 | (uint64_t)q->slot << 32 | seq;
}

/* The definition of `name` at IBVERBS_1.1, the default version of a name
 * that also has an old-ABI IBVERBS_1.0 version (compat.c), as rdma-core
 * exports it: the implementation is name_1_1, checked against the
 * prototype of <infiniband/verbs.h>. */
#define SV_1_1(name)                                                           \
    __asm__(".symver " #name "_1_1," #name "@@IBVERBS_1.1");                   \
    _Static_assert(__builtin_types_compatible_p(__typeof__(name),              \
                                                __typeof__(name##_1_1)),       \
                   #name)

/* errno from an engine error (mroce.h). */
int sv_errno(int mroce_err);

/* devlist.c */
extern struct ibv_device *sv_device;
struct ibv_context *sv_open(struct ibv_device *dev,
                            const struct mroce_verbs_attr *a);

/* nic.c: the soft NIC of a context */
void sv_ctl_lock(struct sv_ctx *c); /* control path: the NIC gives way */
void sv_ctl_unlock(struct sv_ctx *c);
int sv_nic_open(struct sv_ctx *c); /* datapath + thread; errno value */
void sv_nic_close(struct sv_ctx *c);
void sv_nic_doorbell(struct sv_ctx *c); /* application side: wake it */
/* A poller runs one pass: what it moved (>= 0), or -1 if it ran none. */
int sv_nic_assist(struct sv_ctx *c);
/* One pass under ctl: rings -> engine, receive, completions, rings ->
 * engine again, send. Sets pass_rx and pass_done. */
int sv_nic_pass(struct sv_ctx *c);

/* nic_post.c: rings -> engine */
int sv_nic_feed(struct sv_ctx *c);
/* nic_comp.c: engine completions -> CQ rings, errors, flushes */
int sv_nic_complete(struct sv_ctx *c);
void sv_nic_qp_error(struct sv_qp *q, bool async);
void sv_nic_retire_send(struct sv_qp *q, uint32_t seq);
void sv_nic_retire_recv(struct sv_qp *q, uint32_t seq);
bool sv_cq_push(struct sv_cq *cq, const struct ibv_wc *wc);
bool sv_cq_room(const struct sv_cq *cq);

/* qp.c */
int sv_qp_table_add(struct sv_ctx *c, struct sv_qp *q);
void sv_qp_set_state(struct sv_qp *q, enum ibv_qp_state s);
int sv_qp_conn(struct sv_qp *q, struct mroce_pd *pd, uint32_t qpn);
void sv_qp_drop_engine(struct sv_qp *q);
void sv_wq_reset(struct sv_wq *w);

/* modify.c */
int sv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);

/* addr.c (R-SOFT-*) */
void sv_addr_gid(const struct mroce_addr *a, union ibv_gid *gid);
int sv_addr_of_gid(const union ibv_gid *gid, struct mroce_addr *out);
int sv_addr_remote(const struct sv_qp *q, const struct ibv_ah_attr *ah,
                   struct mroce_conn_params *out);
uint32_t sv_addr_qpn(struct sv_ctx *c);
uint32_t sv_addr_msg_window(void);
void sv_addr_init_seq(uint32_t from, uint32_t to, uint32_t *psn, uint32_t *dsn,
                      uint32_t *msn);

/* cq.c */
int sv_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int sv_req_notify_cq(struct ibv_cq *cq, int solicited_only);
void sv_chan_push(struct sv_cq *cq);

/* post.c */
int sv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
                 struct ibv_send_wr **bad);
int sv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
                 struct ibv_recv_wr **bad);
int sv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
                     struct ibv_recv_wr **bad);

/* query.c */
int sv_query_port(struct ibv_context *ctx, uint8_t port,
                  struct ibv_port_attr *attr, size_t len);
int sv_query_device_ex(struct ibv_context *ctx,
                       const struct ibv_query_device_ex_input *in,
                       struct ibv_device_attr_ex *attr, size_t len);

/* async.c */
int sv_async_init(struct sv_async *a);
void sv_async_fini(struct sv_async *a);
void sv_async_qp(struct sv_ctx *c, struct sv_qp *q, enum ibv_event_type t);
void sv_async_forget(struct sv_ctx *c, struct sv_qp *q);

/* The kernel's random bytes (getrandom); aborts if it has none. */
void sv_random(void *buf, size_t len);

/* Logging to stderr when MROCE_VERBS_LOG is set. */
void sv_log(const struct sv_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
