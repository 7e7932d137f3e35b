/* Partitions: which rank of a parallel simulation (sim/prun.h) owns each
 * LP of a topology (topo.h "LPs"), which links the cut crosses, and the
 * lookahead that the cut allows.
 *
 * A rank owns whole LPs, so every object's state, random generator and
 * event order stay in one process; only cables between two LPs can be
 * cut, and they are cut by leaf group and pod:
 *
 *   leaf-spine  the leaf groups in R contiguous blocks of near-equal
 *               host counts, the spines of every plane in R contiguous
 *               blocks: the cut falls on leaf-spine cables;
 *   fat-tree    whole pods (their leaves and aggs) in R contiguous
 *               blocks and the cores in R blocks, so the cut falls on
 *               agg-core cables; with more ranks than pods, the leaf
 *               groups are split as in a leaf-spine and each agg goes
 *               with the leaves below it, so leaf-agg cables are cut too.
 *
 * LP 0 (the driver: faults, the sampler) belongs to every rank: its
 * events are replicated and change each rank's copy of what they touch.
 *
 * Lookahead: the smallest propagation delay of a cut link. A frame sent
 * at t arrives at the far end at t + serialization + delay or later and
 * a PFC signal at t + delay + a minimum frame, so no event of one rank
 * can cause an event of another sooner. A cut link without delay leaves
 * no lookahead: such a configuration is refused, as is one with more
 * ranks than leaf groups.
 *
 * Thread-safety: a partition is read-only once made.
 */
#ifndef MROCE_SIM_PART_H
#define MROCE_SIM_PART_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/topo.h"

struct mroce_sim_part_rank {
    int lps, leaf_groups, switches, hosts;
    int cut_out; /* cut links this rank sends on */
};

struct mroce_sim_part {
    int n_ranks;
    uint32_t n_lps;
    int *owner;                       /* [n_lps]; owner[0] = -1 (every rank) */
    uint64_t lookahead_ps;            /* MROCE_SIM_NEVER without a cut */
    int n_cut;                        /* cut links (one direction each) */
    int lookahead_link;               /* a cut link of that delay, -1 if none */
    struct mroce_sim_part_rank *rank; /* [n_ranks] */
};

/* Cuts t into n_ranks. Returns 0, MROCE_EINVAL with why[] filled (no
 * lookahead, too many ranks), or ENOMEM. */
int mroce_sim_part_create(struct mroce_sim_topo *t, int n_ranks,
                          struct mroce_sim_part **out, char *why, size_t n);
void mroce_sim_part_destroy(struct mroce_sim_part *p);

/* The rank owning lp; -1 for LP 0. */
static inline int mroce_sim_part_owner(const struct mroce_sim_part *p,
                                       uint32_t lp)
{
    return p->owner[lp];
}

/* Whether the link's two ends are owned by different ranks. */
bool mroce_sim_part_is_cut(const struct mroce_sim_part *p,
                           const struct mroce_sim_link *l);

/* The cut as text: per rank its leaf groups, switches, hosts and the
 * links it sends across the cut; the number of cut links and the
 * lookahead with the link that sets it (mroce-sim --partition). */
void mroce_sim_part_print(FILE *f, const struct mroce_sim_part *p,
                          struct mroce_sim_topo *t);

#endif
