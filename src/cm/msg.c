/* R-CONN-15: CM message codec (see msg.h and docs/cm.md). */
#include "cm/msg.h"

#include <string.h>

#include "wire/be.h"

#define CM_REJECT_MAX_TEXT 256

const char *cm_type_name(int type)
{
    static const char *const t[] = {"?",   "HELLO", "READY",
                                    "APP", "BYE",   "REJECT"};
    return type >= CM_HELLO && type <= CM_REJECT ? t[type] : t[0];
}

/* Body length limits per type: [min, max]. */
static int msg_len_ok(int type, uint32_t len)
{
    switch (type) {
    case CM_HELLO:
        return len >= CM_HELLO_FIXED;
    case CM_READY:
    case CM_BYE:
        return len == 0;
    case CM_APP:
        return len <= MROCE_CM_MAX_APP;
    case CM_REJECT:
        return len >= 4 && len <= 4 + CM_REJECT_MAX_TEXT;
    default:
        return 0;
    }
}

static int msg_fail(const char **why, const char *text)
{
    if (why)
        *why = text;
    return MROCE_EPROTO;
}

int cm_hdr_decode(const uint8_t *buf, size_t len, struct cm_hdr *h,
                  const char **why)
{
    if (len < CM_HDR_LEN)
        return MROCE_EAGAIN;
    if (mroce_be32_get(buf) != CM_MAGIC)
        return msg_fail(why, "bad magic (not an mroce CM peer)");
    h->version = buf[4];
    h->type = buf[5];
    h->len = mroce_be32_get(buf + 8);
    if (h->version != MROCE_CM_VERSION)
        return msg_fail(why, "unsupported CM version");
    if (h->type < CM_HELLO || h->type > CM_REJECT)
        return msg_fail(why, "unknown message type");
    if (h->len > MROCE_CM_MAX_BODY)
        return msg_fail(why, "oversized message");
    if (!msg_len_ok(h->type, h->len))
        return msg_fail(why, "body length wrong for the message type");
    return 0;
}

static void msg_hdr_put(uint8_t *out, int type, size_t len)
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
    if (!msg_len_ok(type, (uint32_t)len) || len > MROCE_CM_MAX_BODY ||
        (len && !body))
        return MROCE_EINVAL;
    if (cap < CM_HDR_LEN + len)
        return MROCE_ENOBUFS;
    msg_hdr_put(out, type, len);
    if (len)
        memcpy(out + CM_HDR_LEN, body, len);
    return (int)(CM_HDR_LEN + len);
}

int cm_encode_reject(int32_t code, const char *reason, uint8_t *out, size_t cap)
{
    uint8_t body[4 + CM_REJECT_MAX_TEXT];
    size_t n = reason ? strlen(reason) : 0;
    if (n > CM_REJECT_MAX_TEXT)
        n = CM_REJECT_MAX_TEXT;
    mroce_be32_put(body, (uint32_t)code);
    if (n)
        memcpy(body + 4, reason, n);
    return cm_encode_simple(CM_REJECT, body, 4 + n, out, cap);
}

static void hello_put_params(uint8_t *b, const struct mroce_conn_params *p)
{
    mroce_be32_put(b + 0, p->conn_id);
    b[4] = p->transport;
    b[5] = p->addr.family;
    mroce_be16_put(b + 6, p->udp_port);
    memset(b + 8, 0, 16);
    memcpy(b + 8, p->addr.ip, p->addr.family == MROCE_AF_INET ? 4 : 16);
    mroce_be16_put(b + 24, p->n_paths);
    mroce_be16_put(b + 26, p->n_streams);
    mroce_be32_put(b + 28, p->mtu);
    mroce_be32_put(b + 32, p->dsn_window);
    mroce_be32_put(b + 36, p->msg_window);
    mroce_be32_put(b + 40, p->max_rd);
    mroce_be16_put(b + 44, p->n_qps);
    mroce_be32_put(b + 48, p->init_psn); /* R-CONN-5 */
    mroce_be32_put(b + 52, p->init_dsn);
    mroce_be32_put(b + 56, p->init_msn);
}

int cm_encode_hello(const struct mroce_conn_params *p, const void *blob,
                    size_t blob_len, uint8_t *out, size_t cap)
{
    if (!p || p->n_qps > MROCE_MAX_QPS || blob_len > MROCE_CM_MAX_BLOB ||
        (blob_len && !blob) ||
        (p->addr.family != MROCE_AF_INET && p->addr.family != MROCE_AF_INET6))
        return MROCE_EINVAL;
    size_t len = CM_HELLO_FIXED + 8 * (size_t)p->n_qps + blob_len;
    if (cap < CM_HDR_LEN + len)
        return MROCE_ENOBUFS;
    msg_hdr_put(out, CM_HELLO, len);
    uint8_t *b = out + CM_HDR_LEN;
    hello_put_params(b, p);
    mroce_be16_put(b + 46, (uint16_t)blob_len);
    uint8_t *q = b + CM_HELLO_FIXED;
    for (uint16_t i = 0; i < p->n_qps; i++, q += 4)
        mroce_be32_put(q, p->qpn[i]);
    for (uint16_t i = 0; i < p->n_qps; i++, q += 4)
        mroce_be32_put(q, p->psn[i]);
    if (blob_len)
        memcpy(q, blob, blob_len);
    return (int)(CM_HDR_LEN + len);
}

static void hello_get_params(const uint8_t *b, struct mroce_conn_params *p)
{
    memset(p, 0, sizeof(*p));
    p->conn_id = mroce_be32_get(b + 0);
    p->transport = b[4];
    p->addr.family = b[5];
    p->udp_port = mroce_be16_get(b + 6);
    memcpy(p->addr.ip, b + 8, 16);
    p->n_paths = mroce_be16_get(b + 24);
    p->n_streams = mroce_be16_get(b + 26);
    p->mtu = mroce_be32_get(b + 28);
    p->dsn_window = mroce_be32_get(b + 32);
    p->msg_window = mroce_be32_get(b + 36);
    p->max_rd = mroce_be32_get(b + 40);
    p->n_qps = mroce_be16_get(b + 44);
    p->init_psn = mroce_be32_get(b + 48);
    p->init_dsn = mroce_be32_get(b + 52);
    p->init_msn = mroce_be32_get(b + 56);
}

int cm_decode_hello(const uint8_t *body, size_t len,
                    struct mroce_conn_params *p, const uint8_t **blob,
                    size_t *blob_len, const char **why)
{
    if (len < CM_HELLO_FIXED)
        return msg_fail(why, "truncated HELLO");
    hello_get_params(body, p);
    size_t bl = mroce_be16_get(body + 46);
    if (p->n_qps > MROCE_MAX_QPS)
        return msg_fail(why, "HELLO: too many QPs");
    if (bl > MROCE_CM_MAX_BLOB)
        return msg_fail(why, "HELLO: oversized application blob");
    if (p->addr.family != MROCE_AF_INET && p->addr.family != MROCE_AF_INET6)
        return msg_fail(why, "HELLO: unknown address family");
    if (len != CM_HELLO_FIXED + 8 * (size_t)p->n_qps + bl)
        return msg_fail(why, "HELLO: lengths disagree");
    const uint8_t *q = body + CM_HELLO_FIXED;
    for (uint16_t i = 0; i < p->n_qps; i++, q += 4)
        p->qpn[i] = mroce_be32_get(q);
    for (uint16_t i = 0; i < p->n_qps; i++, q += 4)
        p->psn[i] = mroce_be32_get(q);
    *blob = q;
    *blob_len = bl;
    return 0;
}

int cm_decode_reject(const uint8_t *body, size_t len, int32_t *code, char *text,
                     size_t cap)
{
    if (len < 4)
        return MROCE_EPROTO;
    *code = (int32_t)mroce_be32_get(body);
    size_t n = len - 4;
    if (cap) {
        if (n >= cap)
            n = cap - 1;
        for (size_t i = 0; i < n; i++) /* printable only: it gets logged */
            text[i] = body[4 + i] >= 32 && body[4 + i] < 127 ? (char)body[4 + i]
                                                             : '?';
        text[n] = 0;
    }
    return 0;
}
