/* Static + learned neighbour table (see neigh.h). */
#include "io/dpdk/neigh.h"

#include <string.h>

static bool addr_eq(const struct mroce_addr *a, const struct mroce_addr *b)
{
    size_t n = a->family == MROCE_AF_INET6 ? 16 : 4;
    return a->family == b->family && memcmp(a->ip, b->ip, n) == 0;
}

void mroce_dpdk_neigh_init(struct mroce_dpdk_neigh *t)
{
    memset(t, 0, sizeof(*t));
}

static struct mroce_dpdk_neigh_ent *find(struct mroce_dpdk_neigh *t,
                                         const struct mroce_addr *ip)
{
    if (t->hint < t->n && addr_eq(&t->e[t->hint].ip, ip))
        return &t->e[t->hint];
    for (uint32_t i = 0; i < t->n; i++) {
        if (addr_eq(&t->e[i].ip, ip)) {
            t->hint = i;
            return &t->e[i];
        }
    }
    return NULL;
}

/* A free slot, or a dynamic one to reuse. */
static struct mroce_dpdk_neigh_ent *slot(struct mroce_dpdk_neigh *t)
{
    if (t->n < MROCE_DPDK_NEIGH_MAX)
        return &t->e[t->n++];
    for (uint32_t k = 0; k < MROCE_DPDK_NEIGH_MAX; k++) {
        uint32_t i = (t->victim + k) % MROCE_DPDK_NEIGH_MAX;
        if (!t->e[i].is_static) {
            t->victim = i + 1;
            return &t->e[i];
        }
    }
    return NULL;
}

static struct mroce_dpdk_neigh_ent *find_or_new(struct mroce_dpdk_neigh *t,
                                                const struct mroce_addr *ip)
{
    struct mroce_dpdk_neigh_ent *e = find(t, ip);
    if (e)
        return e;
    e = slot(t);
    if (e) {
        memset(e, 0, sizeof(*e));
        e->ip = *ip;
    }
    return e;
}

int mroce_dpdk_neigh_add(struct mroce_dpdk_neigh *t,
                         const struct mroce_addr *ip, const uint8_t mac[6],
                         bool is_static)
{
    struct mroce_dpdk_neigh_ent *e = find_or_new(t, ip);
    if (!e)
        return MROCE_ENOMEM;
    if (e->is_static && !is_static)
        return 0;
    memcpy(e->mac, mac, 6);
    e->resolved = true;
    e->is_static = is_static;
    return 0;
}

const uint8_t *mroce_dpdk_neigh_lookup(struct mroce_dpdk_neigh *t,
                                       const struct mroce_addr *ip)
{
    struct mroce_dpdk_neigh_ent *e = find(t, ip);
    return e && e->resolved ? e->mac : NULL;
}

bool mroce_dpdk_neigh_want_request(struct mroce_dpdk_neigh *t,
                                   const struct mroce_addr *ip, uint64_t now,
                                   uint64_t interval)
{
    struct mroce_dpdk_neigh_ent *e = find_or_new(t, ip);
    if (!e || (e->req_at && now - e->req_at < interval))
        return false;
    e->req_at = now ? now : 1;
    return true;
}
