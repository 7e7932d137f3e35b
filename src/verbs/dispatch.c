/* The public calls that depend on the transport: a context created with
 * MROCE_TRANSPORT_ROCEV2 routes them to the RoCEv2 engine (src/roce), any
 * other to the MetaRoCE engine (src/engine). PDs, MRs and CQs are shared
 * and live in the device (src/device), below both. */
#include <string.h>

#include "engine/eng.h"
#include "engine/seal.h"
#include "roce/roce.h"

/* ---- context ---- */

size_t mroce_ctx_max_pkt(const struct mroce_ctx *ctx)
{
    return ctx->roce ? roce_dev_max_pkt(ctx->roce) : eng_ctx_max_pkt(ctx);
}

int mroce_ctx_rx(struct mroce_ctx *ctx, uint64_t now,
                 const struct mroce_pkt_meta *meta, const uint8_t *buf,
                 size_t len)
{
    if (ctx->roce)
        return roce_dev_rx(ctx->roce, now, meta, buf, len);
    return eng_ctx_rx(ctx, now, meta, buf, len);
}

/* Drivers poll it several times per packet: a call with nothing to send
 * reads the buffer size and the busy flag, not which engine it is. A
 * RoCEv2 context keeps its own largest packet in max_pkt and the
 * engine's busy flag set (verbs_transport). */
int mroce_ctx_tx(struct mroce_ctx *ctx, uint64_t now, uint8_t *buf, size_t cap,
                 struct mroce_pkt_meta *meta)
{
    if (cap < ctx->max_pkt)
        return MROCE_ENOBUFS;
    if (!eng_sched_busy(ctx))
        return 0; /* no connection may send (sched.c) */
    if (ctx->roce)
        return roce_dev_tx(ctx->roce, now, buf, cap, meta);
    return eng_ctx_tx_busy(ctx, now, buf, cap, meta);
}

int mroce_ctx_tx_ref(struct mroce_ctx *ctx, uint64_t now, uint8_t *buf,
                     size_t cap, struct mroce_pkt_meta *meta,
                     struct mroce_tx_ref *ref)
{
    if (!ctx->roce)
        return eng_ctx_tx_ref(ctx, now, buf, cap, meta, ref);
    *ref = (struct mroce_tx_ref){0}; /* RoCEv2: always whole */
    return eng_txref_done(roce_dev_tx(ctx->roce, now, buf, cap, meta), ref);
}

void mroce_ctx_set_tx_planes(struct mroce_ctx *ctx, uint64_t planes)
{
    ctx->dev.tx_planes = planes; /* both engines read it (R-PATH-14) */
}

/* Drivers poll it several times per packet: one load for the engine. A
 * RoCEv2 context keeps the engine's deadline at 0 (verbs_transport), so
 * only a deadline of 0 asks which engine it is. */
uint64_t mroce_ctx_next_expiry(const struct mroce_ctx *ctx)
{
    uint64_t t = eng_ctx_next_expiry(ctx);
    if (t == 0 && ctx->roce)
        return roce_dev_next_expiry(ctx->roce);
    return t;
}

void mroce_ctx_on_expiry(struct mroce_ctx *ctx, uint64_t now)
{
    if (ctx->roce)
        roce_dev_on_expiry(ctx->roce, now);
    else
        eng_ctx_on_expiry(ctx, now);
}

void mroce_ctx_get_counters(const struct mroce_ctx *ctx,
                            struct mroce_ctx_counters *out)
{
    if (!ctx->roce) {
        eng_ctx_get_counters(ctx, out);
        return;
    }
    struct roce_dev_counters r;
    roce_dev_get_counters(ctx->roce, &r);
    *out = (struct mroce_ctx_counters){
        .rx_pkts = r.rx_pkts,
        .tx_pkts = r.tx_pkts,
        .drop_truncated = r.drop_truncated,
        .drop_bad_version = r.drop_bad_version,
        .drop_bad_opcode = r.drop_bad_opcode,
        .drop_bad_crc = r.drop_bad_icrc,
        .drop_bad_payload =
            r.drop_bad_payload + r.drop_bad_port + r.drop_bad_pkey,
        .drop_unknown_conn = r.drop_unknown_qp,
        .drop_bad_src = r.drop_bad_src,
    };
}

/* ---- the device's objects that are created on a context ---- */

int mroce_pd_alloc(struct mroce_ctx *ctx, struct mroce_pd **out)
{
    return dev_pd_alloc(&ctx->dev, out);
}

int mroce_cq_create(struct mroce_ctx *ctx, uint32_t depth,
                    struct mroce_cq **out)
{
    return dev_cq_create(&ctx->dev, depth, out);
}

/* ---- connections ---- */

/* Soft-RoCE limits a QP to 128 unacknowledged PSNs because it is software;
 * RoCE NICs are bound by their send queue, not by such a window, and 128
 * x 4 KiB is less than one 400G x 12 us BDP. The baseline must not lose
 * for a reason real RoCE does not have, so the default is 1024. */
static uint32_t dispatch_window(const struct mroce_conn_attr *a)
{
    return a->rocev2_window ? a->rocev2_window : 1024;
}

static int dispatch_roce_create(struct mroce_pd *pd,
                                const struct mroce_conn_attr *a,
                                struct mroce_conn **out)
{
    struct mroce_ctx *ctx = eng_ctx_of(pd->dev);
    struct mroce_conn *c = eng_alloc(ctx, sizeof(*c));
    if (!c)
        return MROCE_ENOMEM;
    struct roce_conn_attr ra = {.send_cq = a->send_cq,
                                .recv_cq = a->recv_cq,
                                .wc_conn = c,
                                .n_streams = a->n_streams,
                                .qps_per_stream = a->qps_per_stream,
                                .sq_depth = a->sq_depth,
                                .rq_depth = a->rq_depth,
                                .mtu = ctx->mtu,
                                .max_rd = a->max_rd,
                                .timeout = a->rocev2_timeout,
                                .retry_cnt = a->retry_cnt,
                                .rnr_retry = a->rnr_retry,
                                .max_unacked_psns = dispatch_window(a)};
    int err = roce_conn_create(ctx->roce, pd, &ra, &c->roce);
    if (err) {
        eng_free(ctx, c);
        return err;
    }
    c->ctx = ctx;
    c->roce_next = ctx->roce_conns;
    ctx->roce_conns = c;
    *out = c;
    return 0;
}

int mroce_conn_create(struct mroce_pd *pd, const struct mroce_conn_attr *attr,
                      struct mroce_conn **out)
{
    struct mroce_ctx *ctx = eng_ctx_of(pd->dev);
    if (ctx->roce)
        return dispatch_roce_create(pd, attr, out);
    return eng_conn_create(pd, attr, out);
}

static void dispatch_roce_params(const struct mroce_conn *c,
                                 struct mroce_conn_params *out)
{
    struct roce_conn_params r;
    roce_conn_get_params(c->roce, &r);
    memset(out, 0, sizeof(*out));
    out->transport = MROCE_TRANSPORT_ROCEV2;
    out->conn_id = r.qpn[0];
    out->addr = r.addr;
    out->udp_port = 4791;
    out->n_streams = r.n_streams;
    out->mtu = r.mtu;
    out->max_rd = r.max_rd;
    out->n_qps = r.n_qps;
    memcpy(out->qpn, r.qpn, sizeof(r.qpn));
    memcpy(out->psn, r.psn, sizeof(r.psn));
}

void mroce_conn_get_params(const struct mroce_conn *c,
                           struct mroce_conn_params *out)
{
    if (c->roce) {
        dispatch_roce_params(c, out);
        return;
    }
    eng_conn_get_params(c, out);
    out->transport = MROCE_TRANSPORT_METAROCE;
}

int mroce_conn_connect(struct mroce_conn *c,
                       const struct mroce_conn_params *remote)
{
    uint8_t mine = c->roce ? MROCE_TRANSPORT_ROCEV2 : MROCE_TRANSPORT_METAROCE;
    if (remote->transport != mine)
        return MROCE_EINVAL;
    if (!c->roce)
        return eng_conn_connect(c, remote);
    if (remote->n_qps > MROCE_MAX_QPS)
        return MROCE_EINVAL;
    struct roce_conn_params r = {.addr = remote->addr,
                                 .n_streams = remote->n_streams,
                                 .n_qps = remote->n_qps,
                                 .mtu = remote->mtu,
                                 .max_rd = remote->max_rd};
    memcpy(r.qpn, remote->qpn, sizeof(r.qpn));
    memcpy(r.psn, remote->psn, sizeof(r.psn));
    return roce_conn_connect(c->roce, &r);
}

/* The secure modes are MetaRoCE's (R-AEAD-*). */
int mroce_conn_set_secret(struct mroce_conn *c, int mode, const uint8_t *secret,
                          size_t len)
{
    return c->roce ? MROCE_EINVAL : eng_conn_set_secret(c, mode, secret, len);
}

int mroce_conn_sec_mode(const struct mroce_conn *c)
{
    return c->roce ? MROCE_SEC_NONE : eng_conn_sec_mode(c);
}

int mroce_ctx_sec_modes(const struct mroce_ctx *ctx)
{
    return ctx->roce ? MROCE_SEC_BIT(MROCE_SEC_NONE) : eng_ctx_sec_modes(ctx);
}

int mroce_conn_disconnect(struct mroce_conn *c)
{
    return c->roce ? MROCE_EINVAL : eng_conn_disconnect(c);
}

static void dispatch_roce_unlink(struct mroce_conn *c)
{
    struct mroce_conn **pp = &c->ctx->roce_conns;
    while (*pp != c)
        pp = &(*pp)->roce_next;
    *pp = c->roce_next;
}

void mroce_conn_destroy(struct mroce_conn *c)
{
    if (!c->roce) {
        eng_conn_destroy(c);
        return;
    }
    dispatch_roce_unlink(c);
    roce_conn_destroy(c->roce);
    eng_free(c->ctx, c);
}

int mroce_conn_state(const struct mroce_conn *c)
{
    return c->roce ? roce_conn_state(c->roce) : eng_conn_state(c);
}

struct mroce_ctx *mroce_conn_ctx(const struct mroce_conn *c)
{
    return c->ctx;
}

static void dispatch_roce_counters(const struct mroce_conn *c,
                                   struct mroce_conn_counters *out)
{
    struct roce_qp_counters r;
    roce_conn_get_counters(c->roce, &r);
    *out = (struct mroce_conn_counters){
        .tx_pkts = r.tx_pkts,
        .tx_bytes = r.tx_bytes,
        .rx_pkts = r.rx_pkts,
        .rx_bytes = r.rx_bytes,
        .tx_data_pkts = r.tx_data_pkts,
        .rx_data_pkts = r.rx_data_pkts,
        .retx_pkts = r.retx_pkts,
        .rto_events = r.timeouts,
        .tx_acks = r.tx_acks,
        .rx_acks = r.rx_acks,
        .tx_nacks = r.tx_naks + r.tx_rnr_naks + r.tx_fatal_naks,
        .rx_nacks = r.rx_naks + r.rx_rnr_naks + r.rx_fatal_naks,
        .rx_dup_pkts = r.rx_dup,
        .rx_ecn_ce = r.rx_ecn_ce,
        .rnr_naks = r.tx_rnr_naks,
        .drop_bad_ack = r.drop_bad_ack,
        .drop_ooo = r.rx_ooo,
        .msgs_tx = r.msgs_tx,
        .msgs_rx = r.msgs_rx,
    };
}

void mroce_conn_get_counters(const struct mroce_conn *c,
                             struct mroce_conn_counters *out)
{
    if (c->roce)
        dispatch_roce_counters(c, out);
    else
        eng_conn_get_counters(c, out);
}

/* ---- work requests ---- */

int mroce_post_write(struct mroce_conn *c, const struct mroce_send_wr *wr)
{
    return c->roce ? roce_post_write(c->roce, wr) : eng_post_write(c, wr);
}

int mroce_post_write_imm(struct mroce_conn *c, const struct mroce_send_wr *wr)
{
    return c->roce ? roce_post_write_imm(c->roce, wr)
                   : eng_post_write_imm(c, wr);
}

int mroce_post_send(struct mroce_conn *c, const struct mroce_send_wr *wr)
{
    return c->roce ? roce_post_send(c->roce, wr) : eng_post_send(c, wr);
}

int mroce_post_send_imm(struct mroce_conn *c, const struct mroce_send_wr *wr)
{
    return c->roce ? roce_post_send_imm(c->roce, wr) : eng_post_send_imm(c, wr);
}

int mroce_post_read(struct mroce_conn *c, const struct mroce_send_wr *wr)
{
    return c->roce ? roce_post_read(c->roce, wr) : eng_post_read(c, wr);
}

int mroce_post_recv(struct mroce_conn *c, const struct mroce_recv_wr *wr)
{
    return c->roce ? roce_post_recv(c->roce, wr) : eng_post_recv(c, wr);
}

/* ---- path extensions: MetaRoCE only ---- */

int mroce_path_query(const struct mroce_conn *c, uint16_t path,
                     struct mroce_path_info *out)
{
    return c->roce ? MROCE_ENOENT : eng_path_query(c, path, out);
}

int mroce_path_repath(struct mroce_conn *c, uint16_t path)
{
    return c->roce ? MROCE_ENOENT : eng_path_move(c, path);
}

int mroce_path_enable(struct mroce_conn *c, uint16_t path, int on)
{
    return c->roce ? MROCE_ENOENT : eng_path_enable(c, path, on);
}
