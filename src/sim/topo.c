/* Leaf-spine and multiplane topologies; see topo.h. */
#include "sim/topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/defaults.h"
#include "sim/rng.h"

#define TOPO_MAX_PLANES 16
#define TOPO_MAX_HPL 254
#define TOPO_MAX_LEAVES 65536
#define TOPO_MAX_SPINES 1024
#define TOPO_MAX_PAYLOAD 9216u /* jumbo frame payload */
#define TOPO_NAME_LEN 64

/* Seed name spaces, so no two objects draw the same stream. */
#define TOPO_SEED_SWITCH 0x100000000ull
#define TOPO_SEED_LINK 0x200000000ull

enum topo_fault_kind { F_DOWN, F_UP, F_RATE, F_LOSS, F_ROUTABLE };

struct topo_fault {
    int kind;
    int link;
    double val;
};

struct topo_link {
    struct mroce_sim_link_info info;
    char name[TOPO_NAME_LEN];
    struct mroce_sim_switch *from_sw; /* sending switch, or NULL (a NIC) */
    int from_port;
};

struct mroce_sim_topo {
    struct mroce_sim_topo_cfg cfg;
    struct mroce_sim_evlist *ev;
    struct mroce_sim_pool *pool;
    int n_hosts;
    struct mroce_sim_host **hosts;
    struct mroce_sim_switch **leaves; /* [plane * L + leaf] */
    struct mroce_sim_switch **spines; /* [plane * S + spine]; fat-tree:
                                         [plane * pods * S + agg] */
    struct mroce_sim_switch **cores;  /* fat-tree: [plane * n_cores + c] */
    int n_spines;                     /* per plane (aggs: pods x S) */
    int n_cores;                      /* per plane */
    int lpp;                          /* leaves per pod (fat-tree) */
    uint32_t n_lps;                   /* event.h LPs: topo.h "LPs" */
    struct topo_link *links;
    int n_links;
    struct topo_fault *faults;
    int n_faults, cap_faults;
};

/* ---- Configuration ---- */

static void topo_defaults(struct mroce_sim_topo_cfg *c)
{
    c->hosts_per_leaf = c->hosts_per_leaf ? c->hosts_per_leaf : 8;
    c->leaves = c->leaves ? c->leaves : 2;
    c->spines = c->spines ? c->spines : c->hosts_per_leaf;
    c->planes = c->planes ? c->planes : 1;
    c->link_bps = c->link_bps ? c->link_bps : MROCE_SIM_LINK_BPS;
    c->host_bps = c->host_bps ? c->host_bps : c->link_bps;
    c->delay_ps = c->delay_ps == MROCE_SIM_ZERO_DELAY ? 0
                  : c->delay_ps                       ? c->delay_ps
                                                      : MROCE_SIM_LINK_DELAY_PS;
    c->mtu = c->mtu ? c->mtu : MROCE_SIM_MTU_PAYLOAD;
    c->max_payload = c->max_payload ? c->max_payload : TOPO_MAX_PAYLOAD;
    c->nic.n_ports = c->planes;
    if (c->pods >= 2 && !c->core_per_agg)
        c->core_per_agg = c->leaves / c->pods;
}

/* PFC thresholds from the fastest link, the delay and the MTU. */
static void topo_pfc_defaults(struct mroce_sim_topo_cfg *c)
{
    uint32_t mtu_wire =
        c->mtu + MROCE_SIM_TRANSPORT_HDR_MAX + MROCE_SIM_WIRE_OVERHEAD_V4;
    uint64_t rate = c->link_bps > c->host_bps ? c->link_bps : c->host_bps;
    struct mroce_sim_switch_cfg *s = &c->sw;
    if (s->pfc_headroom == 0)
        s->pfc_headroom = mroce_sim_pfc_headroom(rate, c->delay_ps, mtu_wire);
    if (s->pfc_xoff == 0)
        s->pfc_xoff = MROCE_SIM_PFC_XOFF_HEADROOMS * s->pfc_headroom;
    if (s->pfc_xon == 0) {
        uint32_t gap = MROCE_SIM_PFC_XON_GAP_MTUS * mtu_wire;
        s->pfc_xon = s->pfc_xoff > gap ? s->pfc_xoff - gap : 0;
    }
}

static bool topo_cfg_ok(const struct mroce_sim_topo_cfg *c)
{
    return c->hosts_per_leaf >= 1 && c->hosts_per_leaf <= TOPO_MAX_HPL &&
           c->leaves >= 1 && c->leaves <= TOPO_MAX_LEAVES && c->spines >= 1 &&
           c->spines <= TOPO_MAX_SPINES && c->planes >= 1 &&
           c->planes <= TOPO_MAX_PLANES &&
           (int64_t)c->leaves * c->hosts_per_leaf <= INT32_MAX / 2 &&
           (c->pods == 0 ||
            (c->pods >= 2 && c->leaves % c->pods == 0 && c->core_per_agg >= 1 &&
             c->core_per_agg <= TOPO_MAX_SPINES &&
             (int64_t)c->pods * c->spines <= TOPO_MAX_LEAVES));
}

static bool topo_fat(const struct mroce_sim_topo *t)
{
    return t->cfg.pods >= 2;
}

/* ---- Addressing ---- */

void mroce_sim_topo_host_addr(const struct mroce_sim_topo *t, int h,
                              struct mroce_addr *out)
{
    int hpl = t->cfg.hosts_per_leaf;
    int leaf = h / hpl;
    memset(out, 0, sizeof(*out));
    out->family = MROCE_AF_INET;
    out->ip[0] = 10;
    out->ip[1] = (uint8_t)(leaf >> 8);
    out->ip[2] = (uint8_t)leaf;
    out->ip[3] = (uint8_t)(h % hpl + 1);
}

int mroce_sim_topo_resolve(const struct mroce_sim_topo *t,
                           const struct mroce_addr *a)
{
    if (a->family != MROCE_AF_INET || a->ip[0] != 10)
        return -1;
    int leaf = a->ip[1] << 8 | a->ip[2];
    int pos = a->ip[3] - 1;
    if (leaf >= t->cfg.leaves || pos < 0 || pos >= t->cfg.hosts_per_leaf)
        return -1;
    return leaf * t->cfg.hosts_per_leaf + pos;
}

static int topo_resolve_cb(void *ud, const struct mroce_addr *a)
{
    return mroce_sim_topo_resolve(ud, a);
}

/* ---- Building ---- */

static int topo_build_hosts(struct mroce_sim_topo *t)
{
    t->hosts = calloc((size_t)t->n_hosts, sizeof(*t->hosts));
    if (!t->hosts)
        return MROCE_ENOMEM;
    for (int h = 0; h < t->n_hosts; h++) {
        struct mroce_sim_host_cfg hc = {
            .id = h,
            .lp = 1 + (uint32_t)(h / t->cfg.hosts_per_leaf),
            .nic = t->cfg.nic,
            .resolve = topo_resolve_cb,
            .resolve_ud = t,
            .classify = t->cfg.classify,
            .classify_ud = t->cfg.classify_ud,
        };
        t->hosts[h] = mroce_sim_host_create(t->ev, t->pool, &hc);
        if (!t->hosts[h])
            return MROCE_ENOMEM;
    }
    return 0;
}

static struct mroce_sim_switch *topo_new_switch(struct mroce_sim_topo *t,
                                                int n_ports, uint64_t id)
{
    struct mroce_sim_switch_cfg sc = t->cfg.sw;
    sc.n_ports = n_ports;
    sc.n_hosts = t->n_hosts;
    if (t->cfg.buf_per_port)
        sc.buffer_bytes = (uint64_t)n_ports * t->cfg.buf_per_port;
    sc.seed = mroce_sim_seed(t->cfg.seed, TOPO_SEED_SWITCH + id);
    return mroce_sim_switch_create(t->ev, t->pool, &sc);
}

/* Leaves, then spines (fat-tree: aggs), then cores; a switch's seed is
 * its index in that order, as it was before there were cores. */
static int topo_build_switches(struct mroce_sim_topo *t)
{
    const struct mroce_sim_topo_cfg *c = &t->cfg;
    bool fat = topo_fat(t);
    t->lpp = fat ? c->leaves / c->pods : c->leaves;
    t->n_spines = fat ? c->pods * c->spines : c->spines;
    t->n_cores = fat ? c->spines * c->core_per_agg : 0;
    int nl = c->planes * c->leaves, ns = c->planes * t->n_spines;
    int nc = c->planes * t->n_cores;
    t->leaves = calloc((size_t)nl, sizeof(*t->leaves));
    t->spines = calloc((size_t)ns, sizeof(*t->spines));
    t->cores = calloc((size_t)nc + 1, sizeof(*t->cores));
    if (!t->leaves || !t->spines || !t->cores)
        return MROCE_ENOMEM;
    for (int i = 0; i < nl; i++)
        if (!(t->leaves[i] = topo_new_switch(t, c->hosts_per_leaf + c->spines,
                                             (uint64_t)i)))
            return MROCE_EINVAL;
    int sp_ports = fat ? t->lpp + c->core_per_agg : c->leaves;
    for (int i = 0; i < ns; i++)
        if (!(t->spines[i] = topo_new_switch(t, sp_ports, (uint64_t)(nl + i))))
            return MROCE_EINVAL;
    for (int i = 0; i < nc; i++)
        if (!(t->cores[i] =
                  topo_new_switch(t, c->pods, (uint64_t)(nl + ns + i))))
            return MROCE_EINVAL;
    return 0;
}

/* ---- LPs (topo.h) ---- */

static uint32_t topo_spine_lp(const struct mroce_sim_topo *t, int plane, int s)
{
    return 1 + (uint32_t)t->cfg.leaves + (uint32_t)(plane * t->n_spines + s);
}

static uint32_t topo_core_lp(const struct mroce_sim_topo *t, int plane, int c)
{
    return 1 + (uint32_t)t->cfg.leaves +
           (uint32_t)(t->cfg.planes * t->n_spines + plane * t->n_cores + c);
}

/* The sending and receiving ends' LPs of a link of kind between a (the
 * lower end) and b. */
static void topo_link_lps(struct mroce_sim_topo *t, int kind, int plane, int a,
                          int b, struct mroce_sim_link *l)
{
    uint32_t lo = 1 + (uint32_t)a, hi = lo;
    if (kind == MROCE_SIM_LINK_SPINE_UP || kind == MROCE_SIM_LINK_SPINE_DOWN)
        hi = topo_spine_lp(t, plane, b);
    if (kind == MROCE_SIM_LINK_CORE_UP || kind == MROCE_SIM_LINK_CORE_DOWN) {
        lo = topo_spine_lp(t, plane, a);
        hi = topo_core_lp(t, plane, b);
    }
    bool up = kind == MROCE_SIM_LINK_HOST_UP ||
              kind == MROCE_SIM_LINK_SPINE_UP || kind == MROCE_SIM_LINK_CORE_UP;
    mroce_sim_link_set_lps(l, up ? lo : hi, up ? hi : lo);
}

/* Appends one link between a (the lower end: leaf, or agg for core
 * links) and b (host, spine/agg or core); fills its info and name. */
static int topo_new_link(struct mroce_sim_topo *t, int kind, int plane, int a,
                         int b, uint64_t bps)
{
    int id = t->n_links++;
    struct topo_link *tl = &t->links[id];
    struct mroce_sim_link_cfg lc = {
        .rate_bps = bps,
        .delay_ps = t->cfg.delay_ps ? t->cfg.delay_ps : MROCE_SIM_ZERO_DELAY,
        .seed = mroce_sim_seed(t->cfg.seed, TOPO_SEED_LINK + (uint64_t)id),
    };
    tl->info.link = mroce_sim_link_create(t->ev, t->pool, &lc);
    if (!tl->info.link)
        return -1;
    topo_link_lps(t, kind, plane, a, b, tl->info.link);
    tl->info.kind = kind;
    tl->info.plane = plane;
    tl->info.leaf = a;
    tl->info.spine = tl->info.host = tl->info.core = -1;
    const char *sp = topo_fat(t) ? "agg" : "spine";
    char base[TOPO_NAME_LEN - 16];
    switch (kind) {
    case MROCE_SIM_LINK_HOST_UP:
    case MROCE_SIM_LINK_HOST_DOWN:
        tl->info.host = b;
        snprintf(base, sizeof(base),
                 kind == MROCE_SIM_LINK_HOST_UP ? "host%d-leaf%d"
                                                : "leaf%d-host%d",
                 kind == MROCE_SIM_LINK_HOST_UP ? b : a,
                 kind == MROCE_SIM_LINK_HOST_UP ? a : b);
        break;
    case MROCE_SIM_LINK_SPINE_UP:
        tl->info.spine = b;
        snprintf(base, sizeof(base), "leaf%d-%s%d", a, sp, b);
        break;
    case MROCE_SIM_LINK_SPINE_DOWN:
        tl->info.spine = b;
        snprintf(base, sizeof(base), "%s%d-leaf%d", sp, b, a);
        break;
    default: /* core links: a is the agg */
        tl->info.leaf = -1;
        tl->info.spine = a;
        tl->info.core = b;
        snprintf(base, sizeof(base),
                 kind == MROCE_SIM_LINK_CORE_UP ? "agg%d-core%d"
                                                : "core%d-agg%d",
                 kind == MROCE_SIM_LINK_CORE_UP ? a : b,
                 kind == MROCE_SIM_LINK_CORE_UP ? b : a);
    }
    if (t->cfg.planes > 1)
        snprintf(tl->name, sizeof(tl->name), "p%d.%s", plane, base);
    else
        snprintf(tl->name, sizeof(tl->name), "%s", base);
    tl->info.name = tl->name;
    return id;
}

static void topo_pair(struct mroce_sim_topo *t, int up, int down)
{
    t->links[up].info.reverse = down;
    t->links[down].info.reverse = up;
}

/* Host h's port p to its leaf in plane p. */
static int topo_cable_host(struct mroce_sim_topo *t, int p, int h)
{
    const struct mroce_sim_topo_cfg *c = &t->cfg;
    int leaf = h / c->hosts_per_leaf, pos = h % c->hosts_per_leaf;
    int up = topo_new_link(t, MROCE_SIM_LINK_HOST_UP, p, leaf, h, c->host_bps);
    int dn =
        topo_new_link(t, MROCE_SIM_LINK_HOST_DOWN, p, leaf, h, c->host_bps);
    if (up < 0 || dn < 0)
        return MROCE_ENOMEM;
    topo_pair(t, up, dn);
    struct mroce_sim_switch *sw = t->leaves[p * c->leaves + leaf];
    mroce_sim_nic_attach(mroce_sim_host_nic(t->hosts[h]), p,
                         t->links[up].info.link, t->links[dn].info.link);
    mroce_sim_switch_attach(sw, pos, t->links[dn].info.link,
                            t->links[up].info.link);
    t->links[dn].from_sw = sw;
    t->links[dn].from_port = pos;
    return 0;
}

/* Leaf l's uplink to spine (fat-tree: its pod's agg) s in plane p. */
static int topo_cable_spine(struct mroce_sim_topo *t, int p, int l, int s)
{
    const struct mroce_sim_topo_cfg *c = &t->cfg;
    int sg = topo_fat(t) ? l / t->lpp * c->spines + s : s; /* global */
    int up = topo_new_link(t, MROCE_SIM_LINK_SPINE_UP, p, l, sg, c->link_bps);
    int dn = topo_new_link(t, MROCE_SIM_LINK_SPINE_DOWN, p, l, sg, c->link_bps);
    if (up < 0 || dn < 0)
        return MROCE_ENOMEM;
    topo_pair(t, up, dn);
    struct mroce_sim_switch *leaf = t->leaves[p * c->leaves + l];
    struct mroce_sim_switch *spine = t->spines[p * t->n_spines + sg];
    int lport = c->hosts_per_leaf + s, sport = topo_fat(t) ? l % t->lpp : l;
    mroce_sim_switch_attach(leaf, lport, t->links[up].info.link,
                            t->links[dn].info.link);
    mroce_sim_switch_attach(spine, sport, t->links[dn].info.link,
                            t->links[up].info.link);
    t->links[up].from_sw = leaf;
    t->links[up].from_port = lport;
    t->links[dn].from_sw = spine;
    t->links[dn].from_port = sport;
    return 0;
}

/* Fat-tree: agg a's uplink u to core (a % S) x C + u in plane p. */
static int topo_cable_core(struct mroce_sim_topo *t, int p, int a, int u)
{
    const struct mroce_sim_topo_cfg *c = &t->cfg;
    int core = a % c->spines * c->core_per_agg + u, pod = a / c->spines;
    int up = topo_new_link(t, MROCE_SIM_LINK_CORE_UP, p, a, core, c->link_bps);
    int dn =
        topo_new_link(t, MROCE_SIM_LINK_CORE_DOWN, p, a, core, c->link_bps);
    if (up < 0 || dn < 0)
        return MROCE_ENOMEM;
    topo_pair(t, up, dn);
    struct mroce_sim_switch *agg = t->spines[p * t->n_spines + a];
    struct mroce_sim_switch *cs = t->cores[p * t->n_cores + core];
    int aport = t->lpp + u;
    mroce_sim_switch_attach(agg, aport, t->links[up].info.link,
                            t->links[dn].info.link);
    mroce_sim_switch_attach(cs, pod, t->links[dn].info.link,
                            t->links[up].info.link);
    t->links[up].from_sw = agg;
    t->links[up].from_port = aport;
    t->links[dn].from_sw = cs;
    t->links[dn].from_port = pod;
    return 0;
}

static int topo_build_links(struct mroce_sim_topo *t)
{
    const struct mroce_sim_topo_cfg *c = &t->cfg;
    int per_plane = 2 * (t->n_hosts + c->leaves * c->spines +
                         t->n_cores * (topo_fat(t) ? c->pods : 0));
    t->links = calloc((size_t)per_plane * (size_t)c->planes, sizeof(*t->links));
    if (!t->links)
        return MROCE_ENOMEM;
    int rc = 0;
    for (int p = 0; p < c->planes && rc == 0; p++) {
        for (int h = 0; h < t->n_hosts && rc == 0; h++)
            rc = topo_cable_host(t, p, h);
        for (int l = 0; l < c->leaves && rc == 0; l++)
            for (int s = 0; s < c->spines && rc == 0; s++)
                rc = topo_cable_spine(t, p, l, s);
        for (int a = 0; topo_fat(t) && a < t->n_spines && rc == 0; a++)
            for (int u = 0; u < c->core_per_agg && rc == 0; u++)
                rc = topo_cable_core(t, p, a, u);
    }
    return rc;
}

static int topo_routes_leaf(struct mroce_sim_topo *t,
                            struct mroce_sim_switch *sw, int leaf,
                            const int *uplinks)
{
    const struct mroce_sim_topo_cfg *c = &t->cfg;
    for (int d = 0; d < t->n_hosts; d++) {
        int local = d % c->hosts_per_leaf;
        bool ok = d / c->hosts_per_leaf == leaf
                      ? mroce_sim_switch_set_route(sw, d, &local, 1)
                      : mroce_sim_switch_set_route(sw, d, uplinks, c->spines);
        if (!ok)
            return MROCE_ENOMEM;
    }
    return 0;
}

/* A leaf-spine spine: to the destination's leaf. A fat-tree agg (index
 * a): to a leaf of its pod directly, elsewhere over its core uplinks. */
static int topo_routes_spine(struct mroce_sim_topo *t,
                             struct mroce_sim_switch *sw, int a,
                             const int *core_up)
{
    const struct mroce_sim_topo_cfg *c = &t->cfg;
    for (int d = 0; d < t->n_hosts; d++) {
        int leaf = d / c->hosts_per_leaf;
        bool ok;
        if (!topo_fat(t)) {
            ok = mroce_sim_switch_set_route(sw, d, &leaf, 1);
        } else if (leaf / t->lpp == a / c->spines) {
            int port = leaf % t->lpp;
            ok = mroce_sim_switch_set_route(sw, d, &port, 1);
        } else {
            ok = mroce_sim_switch_set_route(sw, d, core_up, c->core_per_agg);
        }
        if (!ok)
            return MROCE_ENOMEM;
    }
    return 0;
}

/* A core: to the destination's pod. */
static int topo_routes_core(struct mroce_sim_topo *t,
                            struct mroce_sim_switch *sw)
{
    for (int d = 0; d < t->n_hosts; d++) {
        int pod = d / t->cfg.hosts_per_leaf / t->lpp;
        if (!mroce_sim_switch_set_route(sw, d, &pod, 1))
            return MROCE_ENOMEM;
    }
    return 0;
}

static int topo_build_routes(struct mroce_sim_topo *t)
{
    const struct mroce_sim_topo_cfg *c = &t->cfg;
    int n_up = c->spines > c->core_per_agg ? c->spines : c->core_per_agg;
    int *up = malloc((size_t)n_up * sizeof(*up));
    int *core_up = malloc((size_t)n_up * sizeof(*core_up));
    int rc = up && core_up ? 0 : MROCE_ENOMEM;
    for (int s = 0; !rc && s < c->spines; s++)
        up[s] = c->hosts_per_leaf + s;
    for (int u = 0; !rc && u < c->core_per_agg; u++)
        core_up[u] = t->lpp + u;
    for (int i = 0; i < c->planes * c->leaves && rc == 0; i++)
        rc = topo_routes_leaf(t, t->leaves[i], i % c->leaves, up);
    for (int i = 0; i < c->planes * t->n_spines && rc == 0; i++)
        rc = topo_routes_spine(t, t->spines[i], i % t->n_spines, core_up);
    for (int i = 0; i < c->planes * t->n_cores && rc == 0; i++)
        rc = topo_routes_core(t, t->cores[i]);
    free(up);
    free(core_up);
    return rc;
}

static int topo_build(struct mroce_sim_topo *t)
{
    t->ev = mroce_sim_ev_create(0);
    t->pool = mroce_sim_pool_create(t->cfg.max_payload, 0);
    if (!t->ev || !t->pool)
        return MROCE_ENOMEM;
    int rc = topo_build_hosts(t);
    if (rc == 0)
        rc = topo_build_switches(t);
    if (rc == 0) {
        t->n_lps = topo_core_lp(t, t->cfg.planes, 0);
        if (!mroce_sim_ev_set_lps(t->ev, t->n_lps))
            rc = MROCE_ENOMEM;
    }
    if (rc == 0)
        rc = topo_build_links(t);
    if (rc == 0)
        rc = topo_build_routes(t);
    return rc;
}

int mroce_sim_topo_create(const struct mroce_sim_topo_cfg *cfg,
                          struct mroce_sim_topo **out)
{
    if (!out)
        return MROCE_EINVAL;
    *out = NULL;
    struct mroce_sim_topo_cfg c = {0};
    if (cfg)
        c = *cfg;
    topo_defaults(&c);
    if (!topo_cfg_ok(&c))
        return MROCE_EINVAL;
    topo_pfc_defaults(&c);
    struct mroce_sim_topo *t = calloc(1, sizeof(*t));
    if (!t)
        return MROCE_ENOMEM;
    t->cfg = c;
    t->n_hosts = c.leaves * c.hosts_per_leaf;
    int rc = topo_build(t);
    if (rc < 0) {
        mroce_sim_topo_destroy(t);
        return rc;
    }
    *out = t;
    return 0;
}

void mroce_sim_topo_destroy(struct mroce_sim_topo *t)
{
    if (!t)
        return;
    const struct mroce_sim_topo_cfg *c = &t->cfg;
    for (int h = 0; t->hosts && h < t->n_hosts; h++)
        mroce_sim_host_destroy(t->hosts[h]);
    for (int i = 0; t->leaves && i < c->planes * c->leaves; i++)
        mroce_sim_switch_destroy(t->leaves[i]);
    for (int i = 0; t->spines && i < c->planes * t->n_spines; i++)
        mroce_sim_switch_destroy(t->spines[i]);
    for (int i = 0; t->cores && i < c->planes * t->n_cores; i++)
        mroce_sim_switch_destroy(t->cores[i]);
    for (int i = 0; i < t->n_links; i++)
        mroce_sim_link_destroy(t->links[i].info.link);
    free(t->hosts);
    free(t->leaves);
    free(t->spines);
    free(t->cores);
    free(t->links);
    free(t->faults);
    mroce_sim_pool_destroy(t->pool);
    mroce_sim_ev_destroy(t->ev);
    free(t);
}

/* ---- Accessors ---- */

const struct mroce_sim_topo_cfg *
mroce_sim_topo_cfg(const struct mroce_sim_topo *t)
{
    return &t->cfg;
}

struct mroce_sim_evlist *mroce_sim_topo_ev(struct mroce_sim_topo *t)
{
    return t->ev;
}

struct mroce_sim_pool *mroce_sim_topo_pool(struct mroce_sim_topo *t)
{
    return t->pool;
}

int mroce_sim_topo_n_hosts(const struct mroce_sim_topo *t)
{
    return t->n_hosts;
}

struct mroce_sim_host *mroce_sim_topo_host(struct mroce_sim_topo *t, int h)
{
    return h >= 0 && h < t->n_hosts ? t->hosts[h] : NULL;
}

struct mroce_sim_switch *mroce_sim_topo_leaf(struct mroce_sim_topo *t,
                                             int plane, int leaf)
{
    if (plane < 0 || plane >= t->cfg.planes || leaf < 0 ||
        leaf >= t->cfg.leaves)
        return NULL;
    return t->leaves[plane * t->cfg.leaves + leaf];
}

struct mroce_sim_switch *mroce_sim_topo_spine(struct mroce_sim_topo *t,
                                              int plane, int spine)
{
    if (plane < 0 || plane >= t->cfg.planes || spine < 0 ||
        spine >= t->n_spines)
        return NULL;
    return t->spines[plane * t->n_spines + spine];
}

int mroce_sim_topo_n_switches(const struct mroce_sim_topo *t)
{
    return t->cfg.planes * (t->cfg.leaves + t->n_spines + t->n_cores);
}

struct mroce_sim_switch *mroce_sim_topo_switch(struct mroce_sim_topo *t, int i)
{
    int nl = t->cfg.planes * t->cfg.leaves, ns = t->cfg.planes * t->n_spines;
    if (i < 0 || i >= mroce_sim_topo_n_switches(t))
        return NULL;
    return i < nl        ? t->leaves[i]
           : i < nl + ns ? t->spines[i - nl]
                         : t->cores[i - nl - ns];
}

uint32_t mroce_sim_topo_n_lps(const struct mroce_sim_topo *t)
{
    return t->n_lps;
}

uint32_t mroce_sim_topo_host_lp(const struct mroce_sim_topo *t, int h)
{
    return 1 + (uint32_t)(h / t->cfg.hosts_per_leaf);
}

uint32_t mroce_sim_topo_switch_lp(const struct mroce_sim_topo *t, int i)
{
    int nl = t->cfg.planes * t->cfg.leaves, ns = t->cfg.planes * t->n_spines;
    if (i < nl)
        return 1 + (uint32_t)(i % t->cfg.leaves);
    return i < nl + ns ? topo_spine_lp(t, 0, i - nl)
                       : topo_core_lp(t, 0, i - nl - ns);
}

int mroce_sim_topo_hops(const struct mroce_sim_topo *t, int src_host,
                        int dst_host)
{
    int hpl = t->cfg.hosts_per_leaf;
    int ls = src_host / hpl, ld = dst_host / hpl;
    if (ls == ld)
        return 2;
    return topo_fat(t) && ls / t->lpp != ld / t->lpp ? 6 : 4;
}

int mroce_sim_topo_n_links(const struct mroce_sim_topo *t)
{
    return t->n_links;
}

const struct mroce_sim_link_info *
mroce_sim_topo_link_info(const struct mroce_sim_topo *t, int id)
{
    return id >= 0 && id < t->n_links ? &t->links[id].info : NULL;
}

int mroce_sim_topo_link_find(const struct mroce_sim_topo *t, const char *name)
{
    if (!name)
        return -1;
    /* Plane 0 may be named without its prefix, and with one planes=1. */
    const char *bare = strncmp(name, "p0.", 3) == 0 ? name + 3 : name;
    for (int i = 0; i < t->n_links; i++) {
        const char *n = t->links[i].name;
        if (strcmp(n, name) == 0)
            return i;
        if (t->links[i].info.plane == 0) {
            const char *nb = strncmp(n, "p0.", 3) == 0 ? n + 3 : n;
            if (strcmp(nb, bare) == 0)
                return i;
        }
    }
    return -1;
}

int mroce_sim_topo_link_id(const struct mroce_sim_topo *t, int plane, int kind,
                           int a, int b)
{
    for (int i = 0; i < t->n_links; i++) {
        const struct mroce_sim_link_info *in = &t->links[i].info;
        int lower =
            kind == MROCE_SIM_LINK_CORE_UP || kind == MROCE_SIM_LINK_CORE_DOWN
                ? in->spine
                : in->leaf;
        if (in->plane != plane || in->kind != kind || lower != a)
            continue;
        int other =
            kind == MROCE_SIM_LINK_HOST_UP || kind == MROCE_SIM_LINK_HOST_DOWN
                ? in->host
            : kind == MROCE_SIM_LINK_CORE_UP || kind == MROCE_SIM_LINK_CORE_DOWN
                ? in->core
                : in->spine;
        if (other == b)
            return i;
    }
    return -1;
}

/* ---- Faults ---- */

static void topo_apply(struct mroce_sim_topo *t, const struct topo_fault *f);

static void topo_fault_ev(void *obj, uint64_t arg, uint64_t now)
{
    (void)now;
    struct mroce_sim_topo *t = obj;
    struct topo_fault f = t->faults[arg];
    topo_apply(t, &f);
}

static int topo_schedule(struct mroce_sim_topo *t, int kind, int link,
                         double val, uint64_t t_ps)
{
    if (t->n_faults == t->cap_faults) {
        int cap = t->cap_faults ? t->cap_faults * 2 : 16;
        struct topo_fault *nf = realloc(t->faults, (size_t)cap * sizeof(*nf));
        if (!nf)
            return MROCE_ENOMEM;
        t->faults = nf;
        t->cap_faults = cap;
    }
    t->faults[t->n_faults] = (struct topo_fault){kind, link, val};
    if (!mroce_sim_ev_post(t->ev, t_ps, topo_fault_ev, t,
                           (uint64_t)t->n_faults))
        return MROCE_ENOMEM;
    t->n_faults++;
    return 0;
}

/* A link's sending switch port leaves or rejoins ECMP. */
static void topo_set_routable(struct mroce_sim_topo *t, int link, bool on)
{
    struct topo_link *tl = &t->links[link];
    if (tl->from_sw)
        mroce_sim_switch_set_port_routable(tl->from_sw, tl->from_port, on);
}

static void topo_apply(struct mroce_sim_topo *t, const struct topo_fault *f)
{
    struct topo_link *tl = &t->links[f->link];
    struct mroce_sim_link *l = tl->info.link;
    switch (f->kind) {
    case F_DOWN:
        mroce_sim_link_set_up(l, false);
        if (t->cfg.reroute_ps && tl->from_sw)
            topo_schedule(t, F_ROUTABLE, f->link, 0.0,
                          mroce_sim_ev_now(t->ev) + t->cfg.reroute_ps);
        break;
    case F_UP:
        mroce_sim_link_set_up(l, true);
        topo_set_routable(t, f->link, true);
        break;
    case F_RATE:
        mroce_sim_link_set_rate_fraction(l, f->val);
        break;
    case F_LOSS:
        mroce_sim_link_set_loss(l, f->val);
        break;
    case F_ROUTABLE: /* only if the link is still down */
        if (!mroce_sim_link_is_up(l))
            topo_set_routable(t, f->link, false);
        break;
    }
}

static int topo_fault(struct mroce_sim_topo *t, int kind, int id, bool both,
                      double val, uint64_t t_ps)
{
    if (id < 0 || id >= t->n_links)
        return MROCE_EINVAL;
    int rc = topo_schedule(t, kind, id, val, t_ps);
    if (rc == 0 && both)
        rc = topo_schedule(t, kind, t->links[id].info.reverse, val, t_ps);
    return rc;
}

int mroce_sim_topo_link_down(struct mroce_sim_topo *t, int id, bool both,
                             uint64_t t_ps)
{
    return topo_fault(t, F_DOWN, id, both, 0.0, t_ps);
}

int mroce_sim_topo_link_up(struct mroce_sim_topo *t, int id, bool both,
                           uint64_t t_ps)
{
    return topo_fault(t, F_UP, id, both, 0.0, t_ps);
}

int mroce_sim_topo_link_degrade(struct mroce_sim_topo *t, int id, bool both,
                                double f, uint64_t t_ps)
{
    if (!(f > 0.0 && f <= 1.0))
        return MROCE_EINVAL;
    return topo_fault(t, F_RATE, id, both, f, t_ps);
}

int mroce_sim_topo_link_loss(struct mroce_sim_topo *t, int id, bool both,
                             double p, uint64_t t_ps)
{
    if (!(p >= 0.0 && p <= 1.0))
        return MROCE_EINVAL;
    return topo_fault(t, F_LOSS, id, both, p, t_ps);
}

int mroce_sim_topo_plane_set(struct mroce_sim_topo *t, int plane, bool up,
                             uint64_t t_ps)
{
    if (plane < 0 || plane >= t->cfg.planes)
        return MROCE_EINVAL;
    for (int i = 0; i < t->n_links; i++) {
        if (t->links[i].info.plane != plane)
            continue;
        int rc = topo_schedule(t, up ? F_UP : F_DOWN, i, 0.0, t_ps);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ---- Measurement ---- */

static void topo_add_switch(struct mroce_sim_topo_counters *o,
                            const struct mroce_sim_switch *sw)
{
    struct mroce_sim_port_counters c;
    mroce_sim_switch_get_counters(sw, &c);
    for (int i = 0; i < MROCE_SIM_DROP_N; i++)
        o->switch_drops[i] += c.drops[i];
    o->ecn_marks += c.ecn_marks;
    o->trimmed += c.trimmed;
    for (int q = 0; q < MROCE_SIM_NPRIO; q++) {
        o->pfc_pauses += c.pause_tx[q];
        o->pfc_pause_ps += c.pause_ps[q];
    }
    if (c.max_qbytes > o->max_qbytes)
        o->max_qbytes = c.max_qbytes;
}

/* Paused time of NIC ports counts too: a paused host is the incast's
 * first victim. */
static void topo_add_nic(struct mroce_sim_topo_counters *o,
                         const struct mroce_sim_nic *nic)
{
    for (int p = 0; p < mroce_sim_nic_n_ports(nic); p++) {
        struct mroce_sim_nic_port_counters c;
        mroce_sim_nic_get_port_counters(nic, p, &c);
        for (int q = 0; q < MROCE_SIM_NPRIO; q++)
            o->pfc_pause_ps += c.pause_ps[q];
    }
}

static void topo_add_kind(struct mroce_sim_topo_counters *o,
                          const struct topo_link *tl)
{
    if (!tl->from_sw)
        return;
    struct mroce_sim_port_counters c;
    mroce_sim_switch_get_port_counters(tl->from_sw, tl->from_port, &c);
    int k = tl->info.kind;
    o->kind_ecn[k] += c.ecn_marks;
    if (c.max_qbytes > o->kind_max_qbytes[k])
        o->kind_max_qbytes[k] = c.max_qbytes;
}

void mroce_sim_topo_get_counters(const struct mroce_sim_topo *t,
                                 struct mroce_sim_topo_counters *out)
{
    const struct mroce_sim_topo_cfg *c = &t->cfg;
    memset(out, 0, sizeof(*out));
    mroce_sim_pool_get_counters(t->pool, &out->pkts);
    (void)c;
    for (int i = 0; i < mroce_sim_topo_n_switches(t); i++)
        topo_add_switch(out,
                        mroce_sim_topo_switch((struct mroce_sim_topo *)t, i));
    for (int h = 0; h < t->n_hosts; h++)
        topo_add_nic(out, mroce_sim_host_nic(t->hosts[h]));
    for (int i = 0; i < t->n_links; i++) {
        struct mroce_sim_link_counters lc;
        mroce_sim_link_get_counters(t->links[i].info.link, &lc);
        out->link_drop_down += lc.drop_down;
        out->link_drop_loss += lc.drop_loss;
        topo_add_kind(out, &t->links[i]);
    }
    out->events = mroce_sim_ev_count(t->ev);
}

static uint64_t topo_ser(uint64_t bytes, uint64_t bps)
{
    return (bytes * 8u * MROCE_SIM_PS_PER_S + bps - 1) / bps;
}

/* Store-and-forward through a tandem of FIFO links, each idle at first:
 * frame k finishes link j at
 *   f[k][j] = max(f[k-1][j], f[k][j-1] + delay) + ser_j(k),
 * the exact analytic completion time of back-to-back frames. With equal
 * rates and full frames it reduces to the metrics.md formula
 *   bytes_on_wire / B + links x delay + (links - 1) x MTU_on_wire / B;
 * a shorter last frame does not shorten the pipeline (it queues behind
 * the full one before it), which a closed form on the last frame misses. */
/* With one rate on every link and n >= 2 frames the recurrence has a
 * closed form: full frames (s each) never wait beyond the pipeline,
 * f[k][j] = (k + 1) s + j (s + d), and the last (s' <= s) follows the
 * one before it, f[n-1][j] = (n - 1) s + j (s + d) + s'. The same
 * integers as the loop, in O(1) instead of O(n x links). */
static uint64_t topo_ideal_even(const struct mroce_sim_topo_cfg *c,
                                uint64_t bytes, uint32_t mtu, uint64_t over,
                                int links, uint64_t n)
{
    uint64_t s = topo_ser(mtu + over, c->link_bps);
    uint64_t last = topo_ser(bytes - (n - 1) * mtu + over, c->link_bps);
    return (n - 1) * s + (uint64_t)(links - 1) * (s + c->delay_ps) + last +
           c->delay_ps;
}

uint64_t mroce_sim_topo_ideal_fct_ps(const struct mroce_sim_topo *t,
                                     uint64_t bytes, uint32_t mtu,
                                     uint32_t hdr_bytes, int src_host,
                                     int dst_host)
{
    const struct mroce_sim_topo_cfg *c = &t->cfg;
    int links = mroce_sim_topo_hops(t, src_host, dst_host);
    uint64_t n = bytes ? (bytes + mtu - 1) / mtu : 1;
    uint64_t over = hdr_bytes + MROCE_SIM_WIRE_OVERHEAD_V4;
    if (c->host_bps == c->link_bps && n >= 2 && links >= 1)
        return topo_ideal_even(c, bytes, mtu, over, links, n);
    uint64_t bps[6];
    for (int j = 0; j < links; j++)
        bps[j] = j == 0 || j == links - 1 ? c->host_bps : c->link_bps;
    uint64_t f[6] = {0, 0, 0, 0, 0, 0};
    for (uint64_t k = 0; k < n; k++) {
        uint64_t pay = k + 1 < n ? mtu : bytes - (n - 1) * mtu;
        uint64_t ready = 0; /* when frame k is fully at link j's input */
        for (int j = 0; j < links; j++) {
            uint64_t start = f[j] > ready ? f[j] : ready;
            f[j] = start + topo_ser(pay + over, bps[j]);
            ready = f[j] + c->delay_ps;
        }
    }
    return f[links - 1] + c->delay_ps;
}
