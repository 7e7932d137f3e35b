/* R-CM-2..R-CM-6: CM message codec (see msg.h and docs/spec.md 4.5). */
#include "cm/msg.h"

#include <string.h>

#include "wire/be.h"

const char *cm_type_name(int type)
{
    static const char *const t[] = {"?",   "HELLO",  "READY",    "APP",
                                    "BYE", "REJECT", "KEEPALIVE"};
    return type >= CM_HELLO && type <= CM_TYPE_MAX ? t[type] : t[0];
}

const char *mroce_cm_reject_str(int reason)
{
    static const char *const t[] = {
        "none",          "CM version",     "MetaRoCE version",
        "malformed",     "unexpected",     "feature",
        "security mode", "authentication", "parameters",
        "address",       "limit",          "transport",
        "application",   "internal error"};
    return reason >= 0 && reason <= MROCE_CM_REJ_INTERNAL ? t[reason]
                                                          : "unknown reason";
}

static int msg_fail(const char **why, const char *text)
{
    if (why)
        *why = text;
    return MROCE_EPROTO;
}

/* R-CM-3: body length limits per type. The exact length of READY and of
 * the messages after it depends on whether a key is in use; the channel
 * checks that. */
static int msg_len_ok(int type, uint32_t len)
{
    switch (type) {
    case CM_HELLO:
        return len >= CM_HELLO_FIXED + CM_ADDR_LEN;
    case CM_READY:
        return len == 0 || len == CM_TAG_LEN;
    case CM_APP:
        return len <= MROCE_CM_MAX_APP + CM_MSG_TAG_LEN;
    case CM_BYE:
    case CM_KEEPALIVE:
        return len == 0 || len == CM_MSG_TAG_LEN;
    case CM_REJECT:
        return len >= CM_REJECT_FIXED &&
               len <= CM_REJECT_FIXED + CM_REJECT_MAX_TEXT;
    default:
        return 0;
    }
}

/* R-CM-2: magic, then version (answered with REJECT VERSION whatever the
 * rest says), then type and length, before any body byte is read. */
int cm_hdr_decode(const uint8_t *buf, size_t len, struct cm_hdr *h,
                  const char **why, int *rej)
{
    *rej = 0;
    if (len < CM_HDR_LEN)
        return MROCE_EAGAIN;
    if (mroce_be32_get(buf) != CM_MAGIC)
        return msg_fail(why, "bad magic (not an mroce CM peer)");
    h->version = buf[4];
    h->type = buf[5];
    h->len = mroce_be32_get(buf + 8);
    *rej = MROCE_CM_REJ_MALFORMED;
    if (h->version != MROCE_CM_VERSION) {
        *rej = MROCE_CM_REJ_VERSION;
        return msg_fail(why, "unsupported CM version");
    }
    if (h->type < CM_HELLO || h->type > CM_TYPE_MAX)
        return msg_fail(why, "unknown message type");
    if (h->len > MROCE_CM_MAX_BODY)
        return msg_fail(why, "oversized message");
    if (!msg_len_ok(h->type, h->len))
        return msg_fail(why, "body length wrong for the message type");
    *rej = 0;
    return 0;
}

void cm_hdr_put(uint8_t *out, int type, size_t len)
{
    mroce_be32_put(out, CM_MAGIC);
    out[4] = MROCE_CM_VERSION;
    out[5] = (uint8_t)type;
    mroce_be16_put(out + 6, 0);
    mroce_be32_put(out + 8, (uint32_t)len);
}

int cm_encode_simple(int type, const void *body, size_t len, uint8_t *out,
                     size_t cap)
{
    if (len > MROCE_CM_MAX_BODY || !msg_len_ok(type, (uint32_t)len) ||
        type == CM_HELLO || type == CM_REJECT || (len && !body))
        return MROCE_EINVAL;
    if (cap < CM_HDR_LEN + len)
        return MROCE_ENOBUFS;
    cm_hdr_put(out, type, len);
    if (len)
        memcpy(out + CM_HDR_LEN, body, len);
    return (int)(CM_HDR_LEN + len);
}

/* ---- REJECT (R-CM-5) ---- */

int cm_encode_reject(uint16_t reason, uint32_t detail, const char *text,
                     uint8_t *out, size_t cap)
{
    size_t n = text ? strlen(text) : 0;
    if (n > CM_REJECT_MAX_TEXT)
        n = CM_REJECT_MAX_TEXT;
    size_t len = CM_REJECT_FIXED + n;
    if (cap < CM_HDR_LEN + len)
        return MROCE_ENOBUFS;
    cm_hdr_put(out, CM_REJECT, len);
    uint8_t *b = out + CM_HDR_LEN;
    mroce_be16_put(b, reason);
    b[2] = MROCE_CM_VERSION; /* the versions we speak */
    b[3] = MROCE_CM_VERSION;
    mroce_be32_put(b + 4, detail);
    if (n)
        memcpy(b + CM_REJECT_FIXED, text, n);
    return (int)(CM_HDR_LEN + len);
}

int cm_decode_reject(const uint8_t *body, size_t len, struct cm_reject *r)
{
    if (len < CM_REJECT_FIXED)
        return MROCE_EPROTO;
    r->reason = mroce_be16_get(body);
    r->vmin = body[2];
    r->vmax = body[3];
    r->detail = mroce_be32_get(body + 4);
    size_t n = len - CM_REJECT_FIXED;
    if (n > CM_REJECT_MAX_TEXT)
        n = CM_REJECT_MAX_TEXT;
    for (size_t i = 0; i < n; i++) { /* printable only: it gets logged */
        uint8_t c = body[CM_REJECT_FIXED + i];
        r->text[i] = c >= 32 && c < 127 ? (char)c : '?';
    }
    r->text[n] = 0;
    return 0;
}

/* ---- HELLO (R-CM-6) ---- */

static uint8_t hello_planes(const struct mroce_conn_params *p)
{
    return p->n_planes ? p->n_planes : 1;
}

static const struct mroce_addr *hello_addr(const struct mroce_conn_params *p,
                                           uint32_t i)
{
    return p->n_planes ? &p->plane_addr[i] : &p->addr;
}

size_t cm_hello_len(const struct cm_hello *h)
{
    return CM_HELLO_FIXED + CM_ADDR_LEN * (size_t)hello_planes(&h->p) +
           8 * (size_t)h->p.n_qps + h->blob_len + h->ext_len +
           (h->features & CM_FEAT_PSK ? CM_TAG_LEN : 0);
}

/* Body bytes 0..51: versions, transport, modes, features, nonce, key id. */
static void hello_put_head(uint8_t *b, const struct cm_hello *h)
{
    b[0] = h->proto_min;
    b[1] = h->proto_max;
    b[2] = h->transport;
    b[3] = h->modes;
    mroce_be32_put(b + 4, h->features);
    mroce_be32_put(b + 8, h->required);
    memcpy(b + 12, h->nonce, CM_NONCE_LEN);
    memcpy(b + 44, h->psk_id, CM_PSK_ID_LEN);
}

/* Body bytes 52..131: the connection parameters and the counts. */
static void hello_put_params(uint8_t *b, const struct cm_hello *h)
{
    const struct mroce_conn_params *p = &h->p;
    mroce_be32_put(b + 52, p->conn_id);
    mroce_be16_put(b + 56, p->udp_port);
    b[58] = hello_addr(p, 0)->family;
    b[59] = hello_planes(p);
    mroce_be16_put(b + 60, p->n_paths);
    mroce_be16_put(b + 62, p->n_streams);
    mroce_be32_put(b + 64, p->mtu);
    mroce_be32_put(b + 68, p->dsn_window);
    mroce_be32_put(b + 72, p->msg_window);
    mroce_be32_put(b + 76, p->max_rd);
    mroce_be16_put(b + 80, p->path_window);
    mroce_be16_put(b + 82, p->ack_every);
    mroce_be32_put(b + 84, p->ack_delay_ns);
    mroce_be64_put(b + 88, p->min_rto_ns);
    mroce_be64_put(b + 96, p->max_rto_ns);
    b[104] = p->retry_cnt;
    b[105] = p->rnr_retry;
    mroce_be16_put(b + 106, h->keepalive_ms);
    mroce_be32_put(b + 108, p->rnr_max_us);
    mroce_be32_put(b + 112, p->init_psn);
    mroce_be32_put(b + 116, p->init_dsn);
    mroce_be32_put(b + 120, p->init_msn);
    mroce_be16_put(b + 124, p->n_qps);
    mroce_be16_put(b + 126, h->blob_len);
    mroce_be16_put(b + 128, h->ext_len);
    mroce_be16_put(b + 130, 0); /* reserved */
}

static bool hello_af_ok(uint8_t af)
{
    return af == MROCE_AF_INET || af == MROCE_AF_INET6;
}

static bool hello_encodable(const struct cm_hello *h)
{
    const struct mroce_conn_params *p = &h->p;
    uint8_t n = hello_planes(p), af = hello_addr(p, 0)->family;
    if (n > MROCE_MAX_PLANES || p->n_qps > MROCE_MAX_QPS ||
        h->blob_len > MROCE_CM_MAX_BLOB || (h->blob_len && !h->blob) ||
        (h->ext_len && !h->ext) || !hello_af_ok(af))
        return false;
    for (uint32_t i = 0; i < n; i++)
        if (hello_addr(p, i)->family != af)
            return false;
    return true;
}

int cm_encode_hello(const struct cm_hello *h, uint8_t *out, size_t cap)
{
    if (!hello_encodable(h))
        return MROCE_EINVAL;
    size_t len = cm_hello_len(h);
    if (len > MROCE_CM_MAX_BODY)
        return MROCE_EINVAL;
    if (cap < CM_HDR_LEN + len)
        return MROCE_ENOBUFS;
    cm_hdr_put(out, CM_HELLO, len);
    uint8_t *b = out + CM_HDR_LEN;
    memset(b, 0, len);
    hello_put_head(b, h);
    hello_put_params(b, h);
    uint8_t *q = b + CM_HELLO_FIXED;
    const struct mroce_conn_params *p = &h->p;
    for (uint32_t i = 0; i < hello_planes(p); i++, q += CM_ADDR_LEN) {
        const struct mroce_addr *a = hello_addr(p, i);
        memcpy(q, a->ip, a->family == MROCE_AF_INET ? 4 : 16);
    }
    for (uint16_t i = 0; i < p->n_qps; i++, q += 4)
        mroce_be32_put(q, p->qpn[i]);
    for (uint16_t i = 0; i < p->n_qps; i++, q += 4)
        mroce_be32_put(q, p->psn[i]);
    if (h->blob_len)
        memcpy(q, h->blob, h->blob_len);
    q += h->blob_len;
    if (h->ext_len)
        memcpy(q, h->ext, h->ext_len);
    return (int)(CM_HDR_LEN + len);
}

static void hello_get_head(const uint8_t *b, struct cm_hello *h)
{
    h->proto_min = b[0];
    h->proto_max = b[1];
    h->transport = b[2];
    h->p.transport = b[2];
    h->modes = b[3];
    h->features = mroce_be32_get(b + 4);
    h->required = mroce_be32_get(b + 8);
    memcpy(h->nonce, b + 12, CM_NONCE_LEN);
    memcpy(h->psk_id, b + 44, CM_PSK_ID_LEN);
}

static void hello_get_params(const uint8_t *b, struct cm_hello *h)
{
    struct mroce_conn_params *p = &h->p;
    p->conn_id = mroce_be32_get(b + 52);
    p->udp_port = mroce_be16_get(b + 56);
    p->addr.family = b[58];
    p->n_planes = b[59];
    p->n_paths = mroce_be16_get(b + 60);
    p->n_streams = mroce_be16_get(b + 62);
    p->mtu = mroce_be32_get(b + 64);
    p->dsn_window = mroce_be32_get(b + 68);
    p->msg_window = mroce_be32_get(b + 72);
    p->max_rd = mroce_be32_get(b + 76);
    p->path_window = mroce_be16_get(b + 80);
    p->ack_every = mroce_be16_get(b + 82);
    p->ack_delay_ns = mroce_be32_get(b + 84);
    p->min_rto_ns = mroce_be64_get(b + 88);
    p->max_rto_ns = mroce_be64_get(b + 96);
    p->retry_cnt = b[104];
    p->rnr_retry = b[105];
    p->features = h->features & CM_FEAT_ACKM; /* R-VER-5: the peer's */
    h->keepalive_ms = mroce_be16_get(b + 106);
    p->rnr_max_us = mroce_be32_get(b + 108);
    p->init_psn = mroce_be32_get(b + 112);
    p->init_dsn = mroce_be32_get(b + 116);
    p->init_msn = mroce_be32_get(b + 120);
    p->n_qps = mroce_be16_get(b + 124);
    h->blob_len = mroce_be16_get(b + 126);
    h->ext_len = mroce_be16_get(b + 128);
}

/* The addresses; an IPv4 address fills 4 of its 16 bytes, the rest MUST
 * be zero (R-CM-6). */
static int hello_get_addrs(const uint8_t *q, struct mroce_conn_params *p,
                           const char **why)
{
    uint8_t af = p->addr.family;
    for (uint32_t i = 0; i < p->n_planes; i++, q += CM_ADDR_LEN) {
        struct mroce_addr *a = &p->plane_addr[i];
        a->family = af;
        memcpy(a->ip, q, 16);
        if (af == MROCE_AF_INET)
            for (int k = 4; k < 16; k++)
                if (q[k])
                    return msg_fail(why, "HELLO: IPv4 address padding set");
    }
    p->addr = p->plane_addr[0];
    return 0;
}

/* R-CM-6: extensions are type (bit 15: critical), length, value, and must
 * fill ext_len exactly. */
static int hello_ext_ok(const uint8_t *e, size_t n)
{
    while (n) {
        if (n < 4)
            return 0;
        size_t l = mroce_be16_get(e + 2);
        if (n - 4 < l)
            return 0;
        e += 4 + l;
        n -= 4 + l;
    }
    return 1;
}

uint16_t cm_hello_unknown_critical(const struct cm_hello *h)
{
    const uint8_t *e = h->ext;
    size_t n = h->ext_len;
    while (n >= 4) { /* no extension type is defined yet */
        uint16_t t = mroce_be16_get(e);
        size_t l = mroce_be16_get(e + 2);
        if (t & CM_EXT_CRITICAL)
            return t;
        e += 4 + l;
        n -= 4 + l;
    }
    return 0;
}

static int hello_check_counts(const uint8_t *body, const struct cm_hello *h,
                              const char **why)
{
    const struct mroce_conn_params *p = &h->p;
    if (!hello_af_ok(p->addr.family))
        return msg_fail(why, "HELLO: unknown address family");
    if (!p->n_planes || p->n_planes > MROCE_MAX_PLANES)
        return msg_fail(why, "HELLO: plane count out of range");
    if (p->n_qps > MROCE_MAX_QPS)
        return msg_fail(why, "HELLO: too many QPs");
    if (h->blob_len > MROCE_CM_MAX_BLOB)
        return msg_fail(why, "HELLO: oversized application blob");
    if (mroce_be16_get(body + 130))
        return msg_fail(why, "HELLO: reserved field set");
    if (h->required & ~h->features)
        return msg_fail(why, "HELLO: requires a feature it lacks");
    return 0;
}

int cm_decode_hello(const uint8_t *body, size_t len, struct cm_hello *h,
                    const char **why)
{
    memset(h, 0, sizeof(*h));
    if (len < CM_HELLO_FIXED)
        return msg_fail(why, "truncated HELLO");
    hello_get_head(body, h);
    hello_get_params(body, h);
    int err = hello_check_counts(body, h, why);
    if (err)
        return err;
    if (len != cm_hello_len(h))
        return msg_fail(why, "HELLO: lengths disagree");
    const uint8_t *q = body + CM_HELLO_FIXED;
    if ((err = hello_get_addrs(q, &h->p, why)))
        return err;
    q += CM_ADDR_LEN * (size_t)h->p.n_planes;
    for (uint16_t i = 0; i < h->p.n_qps; i++, q += 4)
        h->p.qpn[i] = mroce_be32_get(q);
    for (uint16_t i = 0; i < h->p.n_qps; i++, q += 4)
        h->p.psn[i] = mroce_be32_get(q);
    h->blob = q;
    h->ext = q + h->blob_len;
    if (!hello_ext_ok(h->ext, h->ext_len))
        return msg_fail(why, "HELLO: malformed extension");
    h->tag = h->features & CM_FEAT_PSK ? h->ext + h->ext_len : NULL;
    return 0;
}
