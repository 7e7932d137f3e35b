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
 * - Initial sequence numbers (R-SOFT-3): each direction's start (R-CONN-5)
 *   is derived from the two QPNs, the only secret values both ends hold
 *   when they enter RTR; the verbs PSNs are kept but not used on the
 *   wire (a passive perftest side never tells its own PSN: it stays in
 *   RTR).
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

/* splitmix64's finaliser: every input bit reaches every output bit. */
static uint64_t addr_mix(uint64_t x)
{
    uint64_t z = x + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* R-SOFT-3: where the direction from QP `from` to QP `to` starts. */
void sv_addr_init_seq(uint32_t from, uint32_t to, uint32_t *psn, uint32_t *dsn,
                      uint32_t *msn)
{
    uint64_t k = (uint64_t)from << 32 | to;
    *psn = (uint32_t)addr_mix(k ^ 1);
    *dsn = (uint32_t)addr_mix(k ^ 2);
    *msn = (uint32_t)addr_mix(k ^ 3);
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
    sv_addr_init_seq(out->conn_id, q->ibv.qp_num, &out->init_psn,
                     &out->init_dsn, &out->init_msn);
    return 0;
}

uint32_t sv_addr_msg_window(void)
{
    return ADDR_MSG_WINDOW;
}
