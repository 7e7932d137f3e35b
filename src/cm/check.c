/* R-CM-7..R-CM-9: checks of a peer's HELLO (see check.h). */
#include "cm/check.h"
#include "engine/fault.h"

#include <stdlib.h>
#include <string.h>

#include <mroce/mroce_crypto.h>
#include <mroce/mroce_dp.h>

uint8_t cm_check_our_modes(const struct cm_policy *pol)
{
    uint8_t m = pol->attr->modes;
    if (!m)
        m = pol->psk
                ? MROCE_CM_MODE_NONE | MROCE_CM_MODE_AUTH | MROCE_CM_MODE_ENC
                : MROCE_CM_MODE_NONE;
    return pol->can ? m & pol->can : m;
}

/* mroce's policy (R-CM-10): a side with a key requires the peer to
 * prove it has it, so that an attacker cannot strip the feature. */
void cm_check_fill_ours(const struct cm_policy *pol, struct cm_hello *h)
{
    h->proto_min = CM_PROTO_VERSION;
    h->proto_max = CM_PROTO_VERSION;
    h->modes = cm_check_our_modes(pol);
    h->features = pol->psk ? CM_FEAT_PSK : 0;
    h->required = h->features;
    /* R-VER-5: what the connection's engine announces (h->p), never
     * required: a peer without it speaks plain ACKs */
    h->features |= h->p.features & CM_FEAT_ACKM;
    if (pol->psk)
        memcpy(h->psk_id, pol->psk->psk_id, CM_PSK_ID_LEN);
}

static int check_fail(struct cm_verdict *v, int reason, uint32_t detail,
                      const char *why)
{
    v->reason = reason;
    v->detail = detail;
    v->why = why;
    return reason;
}

static bool check_pow2(uint32_t v)
{
    return v && !(v & (v - 1));
}

bool cm_check_params(const struct mroce_conn_params *p, const char **why)
{
    static const char *const what[] = {"conn_id is 0",
                                       "udp_port is 0",
                                       "n_paths out of range",
                                       "n_streams is 0",
                                       "mtu out of range",
                                       "dsn_window out of range",
                                       "msg_window is 0",
                                       "max_rd is 0",
                                       "path_window out of range",
                                       "ack_every is 0",
                                       "RTO bounds out of range",
                                       "retry_cnt above 15",
                                       "rnr_retry above 7",
                                       "rnr_max out of range"};
    bool ok[] = {p->conn_id != 0,
                 p->udp_port != 0,
                 p->n_paths >= 1 && p->n_paths <= 256,
                 p->n_streams >= 1,
                 p->mtu >= 256 && p->mtu <= 9000,
                 check_pow2(p->dsn_window) && p->dsn_window <= (1u << 20),
                 p->msg_window >= 1,
                 p->max_rd >= 1,
                 check_pow2(p->path_window) && p->path_window <= 256,
                 p->ack_every >= 1,
                 p->min_rto_ns >= 1000 && p->min_rto_ns <= p->max_rto_ns &&
                     p->max_rto_ns <= MROCE_MAX_RTO_NS,
                 p->retry_cnt <= 15,
                 p->rnr_retry <= 7,
                 p->rnr_max_us >= 1 && p->rnr_max_us <= MROCE_MAX_RNR_US};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        if (!ok[i]) {
            *why = what[i];
            return false;
        }
    return true;
}

static bool check_addr_eq(const struct mroce_addr *a,
                          const struct mroce_addr *b)
{
    size_t n = a->family == MROCE_AF_INET ? 4 : 16;
    return a->family == b->family && memcmp(a->ip, b->ip, n) == 0;
}

static bool check_in_prefix(const struct mroce_cm_prefix *p,
                            const struct mroce_addr *a)
{
    if (p->addr.family != a->family)
        return false;
    uint32_t bits = p->len, full = bits / 8, rest = bits % 8;
    if (memcmp(p->addr.ip, a->ip, full))
        return false;
    uint8_t mask = (uint8_t)(0xFF00u >> rest);
    return !rest || (p->addr.ip[full] & mask) == (a->ip[full] & mask);
}

bool cm_check_addr(const struct cm_policy *pol, const struct mroce_addr *a)
{
    const struct mroce_cm_attr *at = pol->attr;
    if (at->allow_any || check_addr_eq(a, &pol->tcp_peer))
        return true;
    for (uint32_t i = 0; i < at->n_allow && i < MROCE_CM_MAX_ALLOW; i++)
        if (check_in_prefix(&at->allow[i], a))
            return true;
    return false;
}

int mroce_cm_prefix_parse(const char *s, struct mroce_cm_prefix *out)
{
    char buf[64];
    const char *slash = strchr(s, '/');
    size_t n = slash ? (size_t)(slash - s) : strlen(s);
    if (n >= sizeof(buf))
        return MROCE_EINVAL;
    memcpy(buf, s, n);
    buf[n] = 0;
    if (mroce_addr_parse(buf, &out->addr))
        return MROCE_EINVAL;
    int max = out->addr.family == MROCE_AF_INET ? 32 : 128;
    char *end = NULL;
    long len = slash ? strtol(slash + 1, &end, 10) : max;
    if ((slash && (!slash[1] || *end)) || len < 0 || len > max)
        return MROCE_EINVAL;
    out->len = (uint8_t)len;
    return 0;
}

/* R-CM-7: versions, then features and critical extensions. */
static int check_versions(const struct cm_policy *pol, const struct cm_hello *h,
                          struct cm_agreed *ag, struct cm_verdict *v)
{
    if (h->proto_min > h->proto_max)
        return check_fail(v, MROCE_CM_REJ_MALFORMED, 0,
                          "HELLO: version range inverted");
    if (h->proto_min > CM_PROTO_VERSION || h->proto_max < CM_PROTO_VERSION)
        return check_fail(v, MROCE_CM_REJ_PROTO_VERSION, CM_PROTO_VERSION,
                          "no common MetaRoCE version");
    ag->proto = CM_PROTO_VERSION;
    uint32_t ours = pol->psk ? CM_FEAT_PSK : 0;
    /* what we support: the key if we have one, and ACKM, which every
     * engine of ours speaks (R-ACKM-1; mroce never requires it) */
    uint32_t can = ours | CM_FEAT_ACKM;
    if ((h->required & ~can) && !MROCE_PFAULT(CM_FEATURE_UNCHECKED))
        return check_fail(v, MROCE_CM_REJ_FEATURE, h->required & ~can,
                          "peer requires a feature we lack");
    if (ours & ~h->features) /* we require what we support */
        return check_fail(v, MROCE_CM_REJ_FEATURE, ours & ~h->features,
                          "peer lacks a feature we require (a key?)");
    uint16_t crit = cm_hello_unknown_critical(h);
    if (crit)
        return check_fail(v, MROCE_CM_REJ_FEATURE, crit,
                          "unknown critical extension");
    return 0;
}

/* R-CM-10: the same key (by id), then the HELLO's tag. */
static int check_key(const struct cm_policy *pol, const struct cm_hello *h,
                     const uint8_t *prefix, size_t plen, const uint8_t *msg,
                     size_t len, struct cm_agreed *ag, struct cm_verdict *v)
{
    ag->psk = pol->psk && (h->features & CM_FEAT_PSK);
    if (!ag->psk)
        return 0;
    if (!cm_auth_equal(h->psk_id, pol->psk->psk_id, CM_PSK_ID_LEN))
        return check_fail(v, MROCE_CM_REJ_AUTH, 0,
                          "peer holds another pre-shared key");
    uint8_t tag[CM_TAG_LEN];
    if (cm_auth_hello_tag(pol->psk, prefix, plen, msg, len - CM_TAG_LEN, tag))
        return check_fail(v, MROCE_CM_REJ_INTERNAL, 0, "HMAC failed");
    if (!cm_auth_equal(tag, msg + len - CM_TAG_LEN, CM_TAG_LEN) &&
        !MROCE_PFAULT(CM_TAG_UNCHECKED))
        return check_fail(v, MROCE_CM_REJ_AUTH, 0, "HELLO tag wrong");
    return 0;
}

/* R-CM-9: the strongest mode both accept; AUTH and ENC need a key. */
int cm_check_mode(const struct cm_policy *pol, const struct cm_hello *h,
                  struct cm_agreed *ag, struct cm_verdict *v)
{
    uint8_t common = cm_check_our_modes(pol) & h->modes;
    if (!ag->psk)
        common &= MROCE_CM_MODE_NONE;
    if (MROCE_PFAULT(CM_MODE_WEAKEST) && (common & (common - 1)))
        common &= (uint8_t)-common; /* its lowest bit: the weakest */
    for (uint8_t m = MROCE_CM_MODE_ENC; m; m >>= 1)
        if (common & m) {
            ag->mode = m;
            return 0;
        }
    return check_fail(v, MROCE_CM_REJ_SECURITY, h->modes,
                      "no common packet protection mode");
}

/* R-CM-8: every data address is the TCP peer's or allowed. */
static int check_addrs(const struct cm_policy *pol, const struct cm_hello *h,
                       struct cm_verdict *v)
{
    for (uint32_t i = 0; i < h->p.n_planes; i++)
        if (!cm_check_addr(pol, &h->p.plane_addr[i]) &&
            !MROCE_PFAULT(CM_ADDR_UNCHECKED))
            return check_fail(v, MROCE_CM_REJ_ADDRESS, i,
                              "data address is not the TCP peer's");
    return 0;
}

int cm_check_hello(const struct cm_policy *pol, const struct cm_hello *h,
                   const uint8_t *prefix, size_t prefix_len, const uint8_t *msg,
                   size_t len, struct cm_agreed *ag, struct cm_verdict *v)
{
    memset(ag, 0, sizeof(*ag));
    int rc = check_versions(pol, h, ag, v);
    if (!rc)
        rc = check_key(pol, h, prefix, prefix_len, msg, len, ag, v);
    if (!rc)
        rc = cm_check_mode(pol, h, ag, v);
    if (!rc)
        rc = check_addrs(pol, h, v);
    const char *why = "";
    if (!rc && h->transport == MROCE_TRANSPORT_METAROCE &&
        !cm_check_params(&h->p, &why) && !MROCE_PFAULT(CM_PARAMS_UNCHECKED))
        rc = check_fail(v, MROCE_CM_REJ_PARAMS, 0, why);
    uint32_t max =
        pol->attr->max_blob ? pol->attr->max_blob : MROCE_CM_MAX_BLOB;
    if (!rc && h->blob_len > max)
        rc = check_fail(v, MROCE_CM_REJ_LIMIT, max,
                        "application blob above the limit");
    return rc;
}
