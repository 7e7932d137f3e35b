/* Memory for experiments: the regions the simulated hosts register for
 * the data they receive (and, for collectives, send), in one of two
 * modes, with the same accounting in both (docs/sim.md "Payload-free
 * runs").
 *
 * real  the region has bytes (allocated here); the engines' placements
 *       land in them through the region's hooks (mroce_reg_mr_virt with
 *       the bytes' own address), and a run compares them with what was
 *       sent, byte for byte;
 * free  the region has no bytes: an address range reserved without
 *       memory (PROT_NONE), and per granule of G bytes a 64-bit label
 *       naming its content. What a source region would hold is a
 *       function of its identity (mroce_sim_vbuf_label); fill writes
 *       zeros and, at every S-th byte of each granule of an outgoing
 *       packet (S = min(G, 512)), an 8-byte tag = label XOR
 *       mix(position), so a packet's payload is a function of its
 *       labels (it can travel squeezed: mroce_sim_vmem_squeezer); place
 *       reads the tags back, checks they agree with each other and with
 *       their position (content shifted, cut or mixed fails) and, for
 *       bytes the squeezer did not rebuild itself, that the others are
 *       zeros, and stores the label. Collectives' local operations work on
 * labels (a copy copies them, a float32 sum adds them: sums of random 64-bit
 *       labels are as distinct as the sets they sum). A run then checks
 *       every destination granule's label against what the workload
 *       should have put there.
 *
 * In both modes every placement is counted per granule: a placement
 * must start on a granule and cover whole granules (a region's last
 * granule may be short), and a granule placed twice within an epoch
 * (one flow, one collective iteration) is a duplicate. So a run proves
 * that every byte landed exactly once at its offset: a missing packet
 * leaves a granule unplaced, a duplicate places one twice, a misplaced
 * one lands off its granule or with the wrong label.
 *
 * Per host the memory is then the engine state and what the fabric
 * queues: 9 bytes per granule of a destination region (label and
 * count), nothing for a source.
 *
 * Faults (tests): the n-th placement of the whole vmem can be shifted by
 * one granule, dropped or done twice; the checks must catch each, in
 * either mode.
 *
 * Thread-safety: none; a vmem belongs to one experiment. */
#ifndef MROCE_SIM_VMEM_H
#define MROCE_SIM_VMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce.h>

#define MROCE_SIM_VMEM_REAL 0
#define MROCE_SIM_VMEM_FREE 1

#define MROCE_SIM_VMEM_FAULT_NONE 0
#define MROCE_SIM_VMEM_FAULT_MISPLACE 1 /* one granule further */
#define MROCE_SIM_VMEM_FAULT_SKIP 2     /* not placed at all */
#define MROCE_SIM_VMEM_FAULT_TWICE 3    /* placed, then placed again */

struct mroce_sim_vbuf;

/* Told every placement, after it is accounted (the meter). */
typedef void (*mroce_sim_vmem_placed_fn)(void *ud, struct mroce_sim_vbuf *b,
                                         uint64_t off, uint64_t len);

struct mroce_sim_vmem_cfg {
    int mode;         /* MROCE_SIM_VMEM_* */
    uint64_t granule; /* G: a power of two, >= 64 in free mode */
    uint64_t seed;    /* labels of sources derive from it */
    mroce_sim_vmem_placed_fn placed;
    void *placed_ud;
    int fault;         /* MROCE_SIM_VMEM_FAULT_* */
    uint64_t fault_at; /* the placement it hits, from 1 */
};

/* What went wrong, counted over the whole vmem. */
struct mroce_sim_vmem_counters {
    uint64_t placements, placed_bytes, fills;
    uint64_t misaligned; /* not on a granule, or not whole granules */
    uint64_t bad_tags;   /* free: tags that disagree or name no label */
    uint64_t duplicates; /* a granule placed twice in an epoch */
    uint64_t faults;     /* faults injected */
};

struct mroce_sim_vmem;

/* NULL on a bad config or out of memory. */
struct mroce_sim_vmem *
mroce_sim_vmem_create(const struct mroce_sim_vmem_cfg *c);
/* Frees every region's memory (deregister the regions first). */
void mroce_sim_vmem_destroy(struct mroce_sim_vmem *vm);
int mroce_sim_vmem_mode(const struct mroce_sim_vmem *vm);
uint64_t mroce_sim_vmem_granule(const struct mroce_sim_vmem *vm);
void mroce_sim_vmem_get_counters(const struct mroce_sim_vmem *vm,
                                 struct mroce_sim_vmem_counters *out);
/* Memory the vmem holds (bytes, labels, counts), for reports. */
uint64_t mroce_sim_vmem_bytes(const struct mroce_sim_vmem *vm);

/* Free mode: the codec that keeps payload-free packets squeezed in the
 * packet pool (pkt.h): a packet whose payload is one fill of a region is
 * kept as its headers, trailer and the payload's labels, and rebuilt to
 * the same bytes (fill writes zeros and tags). It serves one pool (it
 * keeps what that pool's rebuild buffer holds). With it, the fill takes
 * the pool's word that a buffer is zero and writes only the tags; the
 * squeeze checks every byte of the payload once, so a packet that is not
 * what its fill wrote (written over after the fill, as a sealing engine
 * would, or before it by an endpoint writing where it said it did not)
 * stays whole, and its placement is checked byte for byte (zeros and
 * tags). False in real mode. */
struct mroce_sim_squeeze;
bool mroce_sim_vmem_squeezer(struct mroce_sim_vmem *vm,
                             struct mroce_sim_squeeze *out);

/* A region of len bytes. A source's content is its identity's pattern
 * (real: bytes written now; free: labels computed on demand); a
 * destination starts zeroed (real) or with label 0 everywhere (free).
 * owner and host are the caller's, for the placed callback. NULL if out
 * of memory. */
struct mroce_sim_vbuf *mroce_sim_vbuf_new(struct mroce_sim_vmem *vm,
                                          uint64_t len, bool source,
                                          uint64_t id, int host, void *owner);

/* Registers the region on pd through its hooks (mroce_reg_mr_virt). */
int mroce_sim_vbuf_reg(struct mroce_sim_vbuf *b, struct mroce_pd *pd,
                       unsigned access, struct mroce_mr **out);

/* The address peers and work requests use, its length, owner, host. */
uint8_t *mroce_sim_vbuf_addr(const struct mroce_sim_vbuf *b);
uint64_t mroce_sim_vbuf_len(const struct mroce_sim_vbuf *b);
void *mroce_sim_vbuf_owner(const struct mroce_sim_vbuf *b);
int mroce_sim_vbuf_host(const struct mroce_sim_vbuf *b);
/* Real mode: the bytes (the address); NULL in free mode. */
uint8_t *mroce_sim_vbuf_bytes(const struct mroce_sim_vbuf *b);

/* What the region's fill hook does when an engine sends [off, +len)
 * of it into dst (a packet being built): the bytes (real), or zeros and
 * the granules' tags (free; a packet with one such fill can then travel
 * squeezed). Exported for tests. */
void mroce_sim_vbuf_fill(struct mroce_sim_vbuf *b, uint64_t off, uint8_t *dst,
                         size_t len);

/* What the region's place hook does when an engine places [off, +len)
 * of it from src: counted per granule, and the bytes kept (real) or the
 * label the tags name (free; checked against the zeros between the tags
 * too unless src is the packet the squeezer rebuilt last). Exported for
 * tests. */
void mroce_sim_vbuf_place(struct mroce_sim_vbuf *b, uint64_t off,
                          const uint8_t *src, size_t len);

/* Free mode: the label of granule g of a source of this identity. */
uint64_t mroce_sim_vbuf_label(const struct mroce_sim_vmem *vm, uint64_t id,
                              uint64_t g);

/* ---- Local operations and checks (granule-aligned ranges) ---- */

/* A new epoch: placement counts back to 0; clear also zeroes the
 * content (bytes or labels). */
void mroce_sim_vbuf_epoch(struct mroce_sim_vbuf *b, bool clear);
/* dst[doff, +len) = src[soff, +len). */
void mroce_sim_vbuf_copy(struct mroce_sim_vbuf *dst, uint64_t doff,
                         const struct mroce_sim_vbuf *src, uint64_t soff,
                         uint64_t len);
/* acc[off, +len) += in[off, +len) as float32 (real) or labels (free). */
void mroce_sim_vbuf_add_f32(struct mroce_sim_vbuf *acc,
                            const struct mroce_sim_vbuf *in, uint64_t off,
                            uint64_t len);

/* Placements per granule an epoch brings [1]: a region written over
 * several times by design (the incast's victim) says so; one more is a
 * duplicate. */
void mroce_sim_vbuf_set_expect(struct mroce_sim_vbuf *b, uint8_t n);

/* Granules of [off, +len) placed between lo and hi times this epoch;
 * the first offset that was not, or -1. */
int64_t mroce_sim_vbuf_check_count(const struct mroce_sim_vbuf *b, uint64_t off,
                                   uint64_t len, uint8_t lo, uint8_t hi);
/* Free mode: the labels of [off, +len) (granule g of it) equal
 * want(ud, g); the first offset that does not, or -1. A granule shorter
 * than a tag (8 bytes, at a region's end) has no label to check. */
int64_t mroce_sim_vbuf_check_labels(const struct mroce_sim_vbuf *b,
                                    uint64_t off, uint64_t len,
                                    uint64_t (*want)(void *ud, uint64_t g),
                                    void *ud);

#endif
