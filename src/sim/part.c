/* Partitions of a topology; see part.h. */
#include "sim/part.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <mroce/mroce.h>

#include "sim/event.h"
#include "sim/link.h"

/* Item x of n in the r-th of R contiguous, near-equal blocks. */
static int part_block(int x, int n, int R)
{
    return (int)((int64_t)x * R / n);
}

/* The shape the assignment needs, from the topology's configuration. */
struct part_shape {
    int L, P, NS, NC, pods, lpp, spp; /* spp: aggs per pod */
    bool by_pod;
};

static void part_shape(struct mroce_sim_topo *t, int R, struct part_shape *s)
{
    const struct mroce_sim_topo_cfg *c = mroce_sim_topo_cfg(t);
    bool fat = c->pods >= 2;
    s->L = c->leaves;
    s->P = c->planes;
    s->pods = fat ? c->pods : 1;
    s->lpp = c->leaves / s->pods;
    s->spp = c->spines;
    s->NS = fat ? c->pods * c->spines : c->spines;
    s->NC = fat ? c->spines * c->core_per_agg : 0;
    s->by_pod = fat && c->pods >= R;
}

static int part_leaf_rank(const struct part_shape *s, int l, int R)
{
    return s->by_pod ? part_block(l / s->lpp, s->pods, R)
                     : part_block(l, s->L, R);
}

/* A spine, or an agg: with its pod, or with the leaves below it. */
static int part_spine_rank(const struct part_shape *s, int a, int R)
{
    if (s->pods < 2)
        return part_block(a, s->NS, R);
    int pod = a / s->spp, i = a % s->spp;
    return part_leaf_rank(s, pod * s->lpp + i * s->lpp / s->spp, R);
}

static void part_assign(struct mroce_sim_part *p, struct mroce_sim_topo *t,
                        const struct part_shape *s)
{
    int R = p->n_ranks, nl = s->P * s->L, ns = s->P * s->NS;
    p->owner[0] = -1;
    for (int i = 0; i < mroce_sim_topo_n_switches(t); i++) {
        uint32_t lp = mroce_sim_topo_switch_lp(t, i);
        int r = i < nl        ? part_leaf_rank(s, i % s->L, R)
                : i < nl + ns ? part_spine_rank(s, (i - nl) % s->NS, R)
                              : part_block((i - nl - ns) % s->NC, s->NC, R);
        p->owner[lp] = r;
        p->rank[r].switches++;
        p->rank[r].leaf_groups += i < s->L;
    }
    for (uint32_t lp = 1; lp < p->n_lps; lp++)
        p->rank[p->owner[lp]].lps++;
    for (int h = 0; h < mroce_sim_topo_n_hosts(t); h++)
        p->rank[p->owner[mroce_sim_topo_host_lp(t, h)]].hosts++;
}

bool mroce_sim_part_is_cut(const struct mroce_sim_part *p,
                           const struct mroce_sim_link *l)
{
    uint32_t a, b;
    mroce_sim_link_get_lps(l, &a, &b);
    return p->owner[a] != p->owner[b];
}

/* Counts the cut and finds the lookahead; EINVAL if it is zero. */
static int part_cut(struct mroce_sim_part *p, struct mroce_sim_topo *t,
                    char *why, size_t n)
{
    p->lookahead_ps = MROCE_SIM_NEVER;
    p->lookahead_link = -1;
    for (int i = 0; i < mroce_sim_topo_n_links(t); i++) {
        const struct mroce_sim_link_info *li = mroce_sim_topo_link_info(t, i);
        if (!mroce_sim_part_is_cut(p, li->link))
            continue;
        uint32_t a, b;
        mroce_sim_link_get_lps(li->link, &a, &b);
        p->n_cut++;
        p->rank[p->owner[a]].cut_out++;
        uint64_t d = mroce_sim_link_delay_ps(li->link);
        if (d < p->lookahead_ps) {
            p->lookahead_ps = d;
            p->lookahead_link = i;
        }
    }
    if (p->lookahead_ps == 0) {
        snprintf(why, n,
                 "cannot partition over %d ranks: link %s crosses the cut "
                 "with no propagation delay, so there is no lookahead",
                 p->n_ranks,
                 mroce_sim_topo_link_info(t, p->lookahead_link)->name);
        return MROCE_EINVAL;
    }
    return 0;
}

int mroce_sim_part_create(struct mroce_sim_topo *t, int n_ranks,
                          struct mroce_sim_part **out, char *why, size_t n)
{
    *out = NULL;
    const struct mroce_sim_topo_cfg *c = mroce_sim_topo_cfg(t);
    if (n_ranks < 1 || n_ranks > c->leaves) {
        snprintf(why, n,
                 "cannot partition over %d ranks: the fabric has %d leaf "
                 "group(s) and a rank owns at least one",
                 n_ranks, c->leaves);
        return MROCE_EINVAL;
    }
    struct mroce_sim_part *p = calloc(1, sizeof(*p));
    if (!p)
        return MROCE_ENOMEM;
    p->n_ranks = n_ranks;
    p->n_lps = mroce_sim_topo_n_lps(t);
    p->owner = calloc(p->n_lps, sizeof(*p->owner));
    p->rank = calloc((size_t)n_ranks, sizeof(*p->rank));
    if (!p->owner || !p->rank) {
        mroce_sim_part_destroy(p);
        return MROCE_ENOMEM;
    }
    struct part_shape s;
    part_shape(t, n_ranks, &s);
    part_assign(p, t, &s);
    int err = part_cut(p, t, why, n);
    if (err) {
        mroce_sim_part_destroy(p);
        return err;
    }
    *out = p;
    return 0;
}

void mroce_sim_part_destroy(struct mroce_sim_part *p)
{
    if (!p)
        return;
    free(p->owner);
    free(p->rank);
    free(p);
}

void mroce_sim_part_print(FILE *f, const struct mroce_sim_part *p,
                          struct mroce_sim_topo *t)
{
    const struct mroce_sim_topo_cfg *c = mroce_sim_topo_cfg(t);
    fprintf(f, "partition: %d rank(s) over %u LPs (%d leaf groups%s)\n",
            p->n_ranks, p->n_lps - 1, c->leaves,
            c->pods >= 2 ? ", fat-tree" : ", leaf-spine");
    for (int r = 0; r < p->n_ranks; r++) {
        const struct mroce_sim_part_rank *k = &p->rank[r];
        int first = -1, last = -1;
        for (int l = 0; l < c->leaves; l++)
            if (p->owner[1 + l] == r) {
                first = first < 0 ? l : first;
                last = l;
            }
        fprintf(f,
                "  rank %d: %d hosts, leaf groups %d..%d, %d switches (%d "
                "LPs), sends on %d cut links\n",
                r, k->hosts, first, last, k->switches, k->lps, k->cut_out);
    }
    if (p->lookahead_link < 0) {
        fprintf(f, "  cut: none (one rank): no lookahead needed\n");
        return;
    }
    fprintf(f,
            "  cut: %d links (one direction each); lookahead %.3f us "
            "(link %s)\n",
            p->n_cut, (double)p->lookahead_ps / MROCE_SIM_PS_PER_US,
            mroce_sim_topo_link_info(t, p->lookahead_link)->name);
}
