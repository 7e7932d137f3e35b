/* How a soft endpoint is addressed (docs/spec.md, "Soft endpoints",
 * R-SOFT-*): what a verbs program exchanges (QPN, PSN, LID, GID) and
 * hands back in ibv_modify_qp becomes the MetaRoCE connection's peer
 * parameters.
 *
 * - GID (R-SOFT-1): the port's only GID is the address the soft NIC is
 *   bound to, IPv4-mapped (::ffff:a.b.c.d) or IPv6.
 * - LID (R-SOFT-1): the UDP port the soft NIC is bound to. A program that
 *   sends no GID (ibv_rc_pingpong without -g) still reaches the peer: a
 *   non-global address vector means "this host", the local address.
 * - QPN (R-SOFT-2): the MetaRoCE connection id, 24 random bits from the
 *   kernel's generator.
 * - Profile (R-SOFT-4): paths, streams, windows are not exchanged; both
 *   ends use the same profile, so the peer's values are ours. */
#include <string.h>

#include "ibverbs/sv.h"

#define ADDR_MSG_WINDOW 1024 /* R-SOFT-4: every soft QP accepts this many */

void sv_addr_gid(const struct mroce_addr *a, union ibv_gid *gid)
{
    memset(gid, 0, sizeof(*gid));
    if (a->family == MROCE_AF_INET6) {
        memcpy(gid->raw, a->ip, 16);
        return;
    }
    gid->raw[10] = gid->raw[11] = 0xff;
    memcpy(gid->raw + 12, a->ip, 4);
}

static bool addr_v4_mapped(const uint8_t *g)
{
    static const uint8_t pre[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return !memcmp(g, pre, sizeof(pre));
}

/* Errors: EINVAL (the zero GID). */
int sv_addr_of_gid(const union ibv_gid *gid, struct mroce_addr *out)
{
    static const uint8_t zero[16];
    memset(out, 0, sizeof(*out));
    if (!memcmp(gid->raw, zero, 16))
        return -1;
    if (addr_v4_mapped(gid->raw)) {
        out->family = MROCE_AF_INET;
        memcpy(out->ip, gid->raw + 12, 4);
    } else {
        out->family = MROCE_AF_INET6;
        memcpy(out->ip, gid->raw, 16);
    }
    return 0;
}

/* R-SOFT-2: unpredictable, never 0 or 1 (special QPNs in IB). The caller
 * retries when the engine already has it (EBUSY). */
uint32_t sv_addr_qpn(struct sv_ctx *c)
{
    (void)c;
    uint32_t q;
    do {
        uint64_t r;
        sv_random(&r, sizeof(r));
        q = (uint32_t)r & 0xFFFFFFu;
    } while (q < 2);
    return q;
}

static uint32_t addr_mtu_bytes(enum ibv_mtu m)
{
    return 128u << m; /* IBV_MTU_256 = 1 ... IBV_MTU_4096 = 5 */
}

/* R-SOFT-3: the peer's parameters from the RTR attributes. Errors
 * (EINVAL): no LID, a GID of the other address family. */
int sv_addr_remote(const struct sv_qp *q, const struct ibv_ah_attr *ah,
                   struct mroce_conn_params *out)
{
    const struct sv_ctx *c = q->ctx;
    memset(out, 0, sizeof(*out));
    if (!ah->dlid)
        return -1;
    out->addr = c->addr;
    if (ah->is_global && sv_addr_of_gid(&ah->grh.dgid, &out->addr) == 0 &&
        out->addr.family != c->addr.family)
        return -1;
    out->transport = MROCE_TRANSPORT_METAROCE;
    out->conn_id = q->attr.dest_qp_num;
    out->udp_port = ah->dlid;
    out->n_paths = q->n_paths;
    out->n_streams = q->n_streams;
    out->mtu = addr_mtu_bytes(q->attr.path_mtu);
    out->dsn_window = 4096; /* the engine's default, on both ends */
    out->msg_window = ADDR_MSG_WINDOW;
    out->max_rd = SV_MAX_RD;
    return 0;
}

uint32_t sv_addr_msg_window(void)
{
    return ADDR_MSG_WINDOW;
}
