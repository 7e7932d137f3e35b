/* Memory for experiments; see vmem.h for the model. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */
#include "sim/vmem.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sim/pkt.h"
#include "sim/rng.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#define VMEM_TAG_STRIDE 512u
#define VMEM_MIN_GRANULE 64u
#define VMEM_PAGE 4096u
#define VMEM_LABEL_SEED 0x6c6162656cull /* "label" */

struct mroce_sim_vbuf {
    struct mroce_sim_vmem *vm;
    struct mroce_sim_vbuf *next; /* the vmem's list */
    uint8_t *addr;               /* real: the bytes; free: reserved */
    uint64_t len, n_gran;
    uint64_t map_len; /* free: the reservation */
    bool source;
    uint64_t id;     /* free sources: labels from it */
    uint64_t *label; /* free destinations: per granule */
    uint8_t *count;  /* placements per granule this epoch */
    uint8_t expect;  /* placements an epoch brings */
    int host;
    void *owner;
};

/* Granules a packet's payload touches at most to be squeezed (it is at
 * most 9 KiB, granules at least 64 B: beyond that it is not squeezed). */
#define VMEM_SQ_LABELS 20

/* The last fill of a payload-free region, which the packet being built
 * carries (squeeze): where in the packet, and what: the labels it wrote,
 * kept so the squeeze need not derive them again. */
struct vmem_fill {
    const uint8_t *dst;
    uint64_t len, off;
    const struct mroce_sim_vbuf *b;
    int n;            /* fills since the last squeeze: one per packet */
    uint32_t n_label; /* labels kept: 0 if more than VMEM_SQ_LABELS */
    uint64_t label[VMEM_SQ_LABELS];
};

/* The compact form: this head, the payload's labels, the bytes before
 * the payload (headers) and after it (pad, CRC). */
struct sq_head {
    uint16_t hdr, tail;
    uint32_t pay;
    uint64_t off, blen;
    uint32_t n; /* labels */
};

/* Whether len bytes at p are all zero. */
typedef bool (*vmem_zero_fn)(const uint8_t *p, uint64_t len);

struct mroce_sim_vmem {
    struct mroce_sim_vmem_cfg c;
    vmem_zero_fn is_zero; /* the fastest this CPU has */
    struct vmem_fill last;
    /* The pool buffer an endpoint writes now (pkt.h, open), and whether
     * the pool keeps it zero: its next fill then writes only tags. */
    uintptr_t open_lo, open_hi;
    bool open_zero;
    /* The payload of the packet expand rebuilt, until clean: bytes this
     * codec wrote from labels (at rebuilt_label, from the region's
     * offset rebuilt_off, of rebuilt_blen bytes), zeros and tags by
     * construction. */
    uintptr_t rebuilt_lo, rebuilt_hi;
    const uint8_t *rebuilt_label;
    uint64_t rebuilt_off, rebuilt_blen;
    /* The packet the rebuild buffer still holds (its non-zero bytes),
     * if held: the next one of its shape writes over them (vmem_expand). */
    bool holds;
    struct sq_head held;
    unsigned gshift;  /* log2 G */
    uint32_t n_tags;  /* tag positions in a full granule */
    unsigned tshift;  /* log2 of the distance between tags */
    uint64_t mix[64]; /* mix(position k) of tag k */
    uint64_t label_key;
    struct mroce_sim_vbuf *bufs;
    uint64_t bytes; /* what the regions hold */
    struct mroce_sim_vmem_counters n;
};

/* ---- Zero checks ---- */

/* Zeros to compare with: reading a buffer is cheaper than writing it. */
static const uint8_t vmem_zeros[4096];

/* Out of line: the AVX2 loop below calls it for a tail of under 32
 * bytes only, and inlined it would cost that loop a stack frame. */
__attribute__((noinline)) static bool vmem_zero_cmp(const uint8_t *p,
                                                    uint64_t len)
{
    while (len) {
        uint64_t n = len < sizeof(vmem_zeros) ? len : sizeof(vmem_zeros);
        if (memcmp(p, vmem_zeros, n))
            return false;
        p += n;
        len -= n;
    }
    return true;
}

#if defined(__x86_64__)
/* The same with AVX2: 32 bytes or'ed together per instruction, one
 * stream read where memcmp reads two; the answer once at the end (a
 * buffer that is not zero is the rare case). A third of memcmp's
 * instructions for a 4 KiB payload. */
__attribute__((target("avx2"))) static bool vmem_zero_avx2(const uint8_t *p,
                                                           uint64_t len)
{
    __m256i a = _mm256_setzero_si256();
    const __m256i *v = (const __m256i *)(const void *)p;
    const __m256i *end = v + (len / 256) * 8;
    for (; v < end; v += 8) {
        __m256i x =
            _mm256_or_si256(_mm256_loadu_si256(v), _mm256_loadu_si256(v + 1));
        __m256i y = _mm256_or_si256(_mm256_loadu_si256(v + 2),
                                    _mm256_loadu_si256(v + 3));
        x = _mm256_or_si256(x, _mm256_loadu_si256(v + 4));
        y = _mm256_or_si256(y, _mm256_loadu_si256(v + 5));
        x = _mm256_or_si256(x, _mm256_loadu_si256(v + 6));
        y = _mm256_or_si256(y, _mm256_loadu_si256(v + 7));
        a = _mm256_or_si256(a, _mm256_or_si256(x, y));
    }
    for (end += (len % 256) / 32; v < end; v++)
        a = _mm256_or_si256(a, _mm256_loadu_si256(v));
    uint64_t i = len & ~(uint64_t)31;
    return _mm256_testz_si256(a, a) &&
           (i == len || vmem_zero_cmp(p + i, len - i));
}
#endif

static vmem_zero_fn vmem_zero_pick(void)
{
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx2"))
        return vmem_zero_avx2;
#endif
    return vmem_zero_cmp;
}

static inline bool vmem_is_zero(const struct mroce_sim_vmem *vm,
                                const uint8_t *p, uint64_t len)
{
    return vm->is_zero(p, len);
}

/* ---- The vmem ---- */

struct mroce_sim_vmem *mroce_sim_vmem_create(const struct mroce_sim_vmem_cfg *c)
{
    uint64_t g = c->granule;
    bool free_mode = c->mode == MROCE_SIM_VMEM_FREE;
    if ((c->mode != MROCE_SIM_VMEM_REAL && !free_mode) || !g ||
        (free_mode && g < VMEM_MIN_GRANULE) || (g & (g - 1)) || g > (1u << 30))
        return NULL;
    struct mroce_sim_vmem *vm = calloc(1, sizeof(*vm));
    if (!vm)
        return NULL;
    vm->c = *c;
    vm->is_zero = vmem_zero_pick();
    vm->gshift = (unsigned)__builtin_ctzll(g);
    uint64_t stride = g < VMEM_TAG_STRIDE ? g : VMEM_TAG_STRIDE;
    vm->n_tags = (uint32_t)(g / stride);
    if (vm->n_tags > 64) /* granules above 32 KiB: tags further apart */
        vm->n_tags = 64;
    vm->tshift = vm->gshift - (unsigned)__builtin_ctz(vm->n_tags);
    for (uint32_t k = 0; k < 64; k++)
        vm->mix[k] = mroce_sim_mix64(0x746167ull << 32 | k); /* "tag" */
    vm->label_key = mroce_sim_seed(c->seed, VMEM_LABEL_SEED);
    return vm;
}

static void vbuf_free(struct mroce_sim_vbuf *b)
{
    if (b->vm->c.mode == MROCE_SIM_VMEM_FREE)
        munmap(b->addr, b->map_len);
    else
        free(b->addr);
    free(b->label);
    free(b->count);
    free(b);
}

void mroce_sim_vmem_destroy(struct mroce_sim_vmem *vm)
{
    if (!vm)
        return;
    while (vm->bufs) {
        struct mroce_sim_vbuf *b = vm->bufs;
        vm->bufs = b->next;
        vbuf_free(b);
    }
    free(vm);
}

int mroce_sim_vmem_mode(const struct mroce_sim_vmem *vm)
{
    return vm->c.mode;
}

uint64_t mroce_sim_vmem_granule(const struct mroce_sim_vmem *vm)
{
    return vm->c.granule;
}

void mroce_sim_vmem_get_counters(const struct mroce_sim_vmem *vm,
                                 struct mroce_sim_vmem_counters *out)
{
    *out = vm->n;
}

uint64_t mroce_sim_vmem_bytes(const struct mroce_sim_vmem *vm)
{
    return vm->bytes;
}

/* Tag position k of a granule: its byte offset in the granule. */
static inline uint64_t vmem_tag_pos(const struct mroce_sim_vmem *vm, uint32_t k)
{
    return (uint64_t)k << vm->tshift;
}

uint64_t mroce_sim_vbuf_label(const struct mroce_sim_vmem *vm, uint64_t id,
                              uint64_t g)
{
    uint64_t l = mroce_sim_mix64(vm->label_key ^ mroce_sim_mix64(id) ^
                                 (g * 0x9e3779b97f4a7c15ull));
    return l ? l : 1; /* 0 means "nothing placed" */
}

/* ---- Regions ---- */

static bool vbuf_alloc(struct mroce_sim_vmem *vm, struct mroce_sim_vbuf *b)
{
    b->count = calloc(b->n_gran, 1);
    if (!b->count)
        return false;
    if (vm->c.mode == MROCE_SIM_VMEM_REAL) {
        b->addr = calloc(1, b->len);
        vm->bytes += b->len;
        return b->addr != NULL;
    }
    b->map_len = (b->len + VMEM_PAGE - 1) / VMEM_PAGE * VMEM_PAGE;
    void *p = mmap(NULL, b->map_len, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return false;
    b->addr = p;
    if (!b->source) {
        b->label = calloc(b->n_gran, sizeof(*b->label));
        vm->bytes += b->n_gran * sizeof(*b->label);
    }
    vm->bytes += b->n_gran;
    return b->source || b->label;
}

struct mroce_sim_vbuf *mroce_sim_vbuf_new(struct mroce_sim_vmem *vm,
                                          uint64_t len, bool source,
                                          uint64_t id, int host, void *owner)
{
    struct mroce_sim_vbuf *b = calloc(1, sizeof(*b));
    if (!b || !len) {
        free(b);
        return NULL;
    }
    *b = (struct mroce_sim_vbuf){.vm = vm,
                                 .len = len,
                                 .n_gran =
                                     (len + vm->c.granule - 1) >> vm->gshift,
                                 .source = source,
                                 .id = id,
                                 .host = host,
                                 .owner = owner,
                                 .expect = 1};
    if (!vbuf_alloc(vm, b)) {
        if (vm->c.mode == MROCE_SIM_VMEM_FREE && b->addr)
            munmap(b->addr, b->map_len);
        else if (vm->c.mode == MROCE_SIM_VMEM_REAL)
            free(b->addr);
        free(b->label);
        free(b->count);
        free(b);
        return NULL;
    }
    b->next = vm->bufs;
    vm->bufs = b;
    return b;
}

uint8_t *mroce_sim_vbuf_addr(const struct mroce_sim_vbuf *b)
{
    return b->addr;
}

uint64_t mroce_sim_vbuf_len(const struct mroce_sim_vbuf *b)
{
    return b->len;
}

void *mroce_sim_vbuf_owner(const struct mroce_sim_vbuf *b)
{
    return b->owner;
}

int mroce_sim_vbuf_host(const struct mroce_sim_vbuf *b)
{
    return b->host;
}

uint8_t *mroce_sim_vbuf_bytes(const struct mroce_sim_vbuf *b)
{
    return b->vm->c.mode == MROCE_SIM_VMEM_REAL ? b->addr : NULL;
}

static uint64_t vbuf_label_of(const struct mroce_sim_vbuf *b, uint64_t g)
{
    return b->source ? mroce_sim_vbuf_label(b->vm, b->id, g) : b->label[g];
}

/* ---- Hooks: the engines' reads and writes ---- */

/* The tags of [off, +len) of a region of blen bytes lie at the multiples
 * p of the tag stride with off <= p and p + 8 <= min(off + len, blen);
 * the tag at p is the label of granule p / G XOR mix(its index there).
 * The payload's other bytes are zeros, so that it is a function of the
 * labels alone and a squeezed packet is rebuilt to the very bytes its
 * CRC covers. */
static inline uint64_t vmem_tag_first(const struct mroce_sim_vmem *vm,
                                      uint64_t off)
{
    uint64_t s = 1ull << vm->tshift;
    return (off + s - 1) & ~(s - 1);
}

static inline uint64_t vmem_tag_lim(uint64_t off, uint64_t len, uint64_t blen)
{
    return off + len < blen ? off + len : blen;
}

/* The tag loops: a granule at a time (its label, then its tags' mixes
 * in order), the vmem's fields in locals (stores through a byte pointer
 * could alias them: the compiler would load them at every tag). */
struct vmem_tag_walk {
    uint64_t p, lim, g0, s;
    unsigned gs, ts;
    uint64_t kmask;
};

static inline struct vmem_tag_walk vmem_walk(const struct mroce_sim_vmem *vm,
                                             uint64_t off, uint64_t len,
                                             uint64_t blen)
{
    return (struct vmem_tag_walk){.p = vmem_tag_first(vm, off),
                                  .lim = vmem_tag_lim(off, len, blen),
                                  .g0 = off >> vm->gshift,
                                  .s = 1ull << vm->tshift,
                                  .gs = vm->gshift,
                                  .ts = vm->tshift,
                                  .kmask = vm->n_tags - 1};
}

/* The next granule's tags: [*k0, *k1) of its mixes, its index from g0;
 * false when there are none left. */
static inline bool vmem_walk_next(struct vmem_tag_walk *w, uint64_t *gi,
                                  uint64_t *k0, uint64_t *k1)
{
    if (w->p + 8 > w->lim)
        return false;
    uint64_t g = w->p >> w->gs, gend = (g + 1) << w->gs;
    uint64_t stop = gend < w->lim - 7 ? gend : w->lim - 7; /* p < stop */
    uint64_t n = (stop - w->p + w->s - 1) >> w->ts;
    *gi = g - w->g0;
    *k0 = (w->p >> w->ts) & w->kmask;
    *k1 = *k0 + n;
    w->p += n << w->ts;
    return true;
}

/* [off, +len) is one whole granule (what most packets carry): its tags
 * are at every stride from dst, mixes 0 to n_tags - 1. */
static inline bool vmem_one_granule(const struct mroce_sim_vmem *vm,
                                    uint64_t off, uint64_t len, uint64_t blen)
{
    return len == vm->c.granule && !(off & (len - 1)) && off + len <= blen;
}

/* The tags of one whole granule of label l at dst. */
static inline void vmem_granule_put(const struct mroce_sim_vmem *vm,
                                    uint8_t *dst, uint64_t l)
{
    const uint64_t *mix = vm->mix;
    uint64_t s = 1ull << vm->tshift;
    for (uint32_t k = 0, n = vm->n_tags; k < n; k++, dst += s) {
        uint64_t t = l ^ mix[k];
        memcpy(dst, &t, 8);
    }
}

static void vmem_tags_walk_put(const struct mroce_sim_vmem *vm, uint64_t off,
                               uint8_t *dst, uint64_t len, uint64_t blen,
                               const uint64_t *labels)
{
    const uint64_t *mix = vm->mix;
    struct vmem_tag_walk w = vmem_walk(vm, off, len, blen);
    uint8_t *d = dst + (w.p - off);
    uint64_t gi, k0, k1;
    while (vmem_walk_next(&w, &gi, &k0, &k1)) {
        uint64_t l = labels[gi];
        for (uint64_t k = k0; k < k1; k++, d += w.s) {
            uint64_t t = l ^ mix[k];
            memcpy(d, &t, 8);
        }
    }
}

/* Writes the tags of [off, +len) at dst (labels[g - off / G] for
 * granule g). */
static inline void vmem_tags_put(const struct mroce_sim_vmem *vm, uint64_t off,
                                 uint8_t *dst, uint64_t len, uint64_t blen,
                                 const uint64_t *labels)
{
    if (vmem_one_granule(vm, off, len, blen))
        vmem_granule_put(vm, dst, labels[0]);
    else
        vmem_tags_walk_put(vm, off, dst, len, blen, labels);
}

/* Zeroes the tags of [off, +len) at dst. */
static void vmem_tags_clear(const struct mroce_sim_vmem *vm, uint64_t off,
                            uint8_t *dst, uint64_t len, uint64_t blen)
{
    uint64_t s = 1ull << vm->tshift, lim = vmem_tag_lim(off, len, blen);
    for (uint64_t p = vmem_tag_first(vm, off); p + 8 <= lim; p += s)
        memset(dst + (p - off), 0, 8);
}

/* Tags k0 to k1 - 1 of label l, from d on s bytes apart: each compared
 * and zeroed; where the first that differs is (left as it was), or NULL. */
static inline uint8_t *vmem_run_take(const uint64_t *mix, uint8_t *d,
                                     uint64_t l, uint64_t k0, uint64_t k1,
                                     uint64_t s)
{
    for (uint64_t k = k0; k < k1; k++, d += s) {
        uint64_t t;
        memcpy(&t, d, 8);
        if (t != (l ^ mix[k]))
            return d;
        memset(d, 0, 8);
    }
    return NULL;
}

/* The tags of [off, +len) at dst are those of labels: then they are
 * zeroed (true), else left as they were (false). */
static bool vmem_tags_take(const struct mroce_sim_vmem *vm, uint64_t off,
                           uint8_t *dst, uint64_t len, uint64_t blen,
                           const uint64_t *labels)
{
    uint8_t *bad = NULL;
    if (vmem_one_granule(vm, off, len, blen)) {
        bad = vmem_run_take(vm->mix, dst, labels[0], 0, vm->n_tags,
                            1ull << vm->tshift);
    } else {
        struct vmem_tag_walk w = vmem_walk(vm, off, len, blen);
        uint8_t *d = dst + (w.p - off);
        uint64_t gi, k0, k1;
        while (!bad && vmem_walk_next(&w, &gi, &k0, &k1)) {
            bad = vmem_run_take(vm->mix, d, labels[gi], k0, k1, w.s);
            d += (k1 - k0) * w.s;
        }
    }
    if (bad) /* what was zeroed before it goes back */
        vmem_tags_put(vm, off, dst, (uint64_t)(bad - dst), blen, labels);
    return !bad;
}

static uint64_t vmem_n_gran(const struct mroce_sim_vmem *vm, uint64_t off,
                            uint64_t len)
{
    return len ? ((off + len - 1) >> vm->gshift) - (off >> vm->gshift) + 1 : 0;
}

/* The pool's word that dst is zero holds for the first fill into the
 * buffer it opened (pkt.h): an endpoint that wrote there anyway makes a
 * packet that does not squeeze, and whose placement sees the bytes
 * (vbuf_read_tags). Anything else is checked, and zeroed if need be. */
static void vbuf_fill_zeros(struct mroce_sim_vmem *vm, uint8_t *dst, size_t len)
{
    uintptr_t a = (uintptr_t)dst;
    bool zero = vm->open_zero && a >= vm->open_lo && a + len <= vm->open_hi;
    vm->open_zero = false;
    if (!zero && !vmem_is_zero(vm, dst, len))
        memset(dst, 0, len);
}

/* Any range: VMEM_SQ_LABELS granules a go; the labels are kept if one
 * go took them all. */
static void vbuf_fill_walk(struct mroce_sim_vbuf *b, uint64_t off, uint8_t *dst,
                           size_t len)
{
    struct mroce_sim_vmem *vm = b->vm;
    struct vmem_fill *f = &vm->last;
    uint64_t end = off + len, ng = vmem_n_gran(vm, off, len);
    for (uint64_t at = off; at < end;) {
        uint64_t g0 = at >> vm->gshift, stop = (g0 + VMEM_SQ_LABELS)
                                               << vm->gshift;
        uint64_t n = (stop < end ? stop : end) - at;
        for (uint64_t i = 0, gn = vmem_n_gran(vm, at, n); i < gn; i++)
            f->label[i] = vbuf_label_of(b, g0 + i);
        vmem_tags_put(vm, at, dst + (at - off), n, b->len, f->label);
        at += n;
    }
    f->n_label = ng <= VMEM_SQ_LABELS ? (uint32_t)ng : 0;
}

static void vbuf_fill_tags(struct mroce_sim_vbuf *b, uint64_t off, uint8_t *dst,
                           size_t len)
{
    struct mroce_sim_vmem *vm = b->vm;
    struct vmem_fill *f = &vm->last;
    vbuf_fill_zeros(vm, dst, len);
    if (vmem_one_granule(vm, off, len, b->len)) { /* most packets */
        f->label[0] = vbuf_label_of(b, off >> vm->gshift);
        vmem_granule_put(vm, dst, f->label[0]);
        f->n_label = 1;
    } else {
        vbuf_fill_walk(b, off, dst, len);
    }
    f->dst = dst;
    f->len = len;
    f->off = off;
    f->b = b;
    f->n++;
}

void mroce_sim_vbuf_fill(struct mroce_sim_vbuf *b, uint64_t off, uint8_t *dst,
                         size_t len)
{
    b->vm->n.fills++;
    if (b->vm->c.mode == MROCE_SIM_VMEM_REAL)
        memcpy(dst, b->addr + off, len);
    else
        vbuf_fill_tags(b, off, dst, len);
}

static void vbuf_fill(void *ud, uint64_t off, uint8_t *dst, size_t len)
{
    mroce_sim_vbuf_fill(ud, off, dst, len);
}

/* ---- Squeezed packets (pkt.h) ---- */

/* The payload f wrote is, in place, what its labels rebuild: its tags,
 * and zeros everywhere else (the engine wrote nothing over it after the
 * fill, as an engine that seals payload would, and nothing was there
 * before). Read once: the tags are compared and zeroed, then the payload
 * must be all zeros; if it is not, the tags are put back. */
static bool vmem_rebuilds(const struct mroce_sim_vmem *vm,
                          const struct vmem_fill *f)
{
    uint8_t *pay = (uint8_t *)f->dst;
    if (!vmem_tags_take(vm, f->off, pay, f->len, f->b->len, f->label))
        return false;
    if (vmem_is_zero(vm, pay, f->len))
        return true;
    vmem_tags_put(vm, f->off, pay, f->len, f->b->len, f->label);
    return false;
}

/* Squeezes the packet whose payload is the last fill, and leaves it zero
 * (pkt.h): the check zeroed the payload, the headers and tail are copied
 * out, then zeroed. */
static uint32_t vmem_squeeze(void *ud, uint8_t *pkt, uint32_t len, uint8_t *out,
                             uint32_t cap)
{
    struct mroce_sim_vmem *vm = ud;
    struct vmem_fill *f = &vm->last;
    int n = f->n;
    f->n = 0; /* consumed, or stale: either way not for the next */
    if (!cap || n != 1 || !f->b || f->dst < pkt || f->dst + f->len > pkt + len)
        return 0;
    struct sq_head h = {.hdr = (uint16_t)(f->dst - pkt),
                        .tail = (uint16_t)(pkt + len - f->dst - f->len),
                        .pay = (uint32_t)f->len,
                        .off = f->off,
                        .blen = f->b->len,
                        .n = f->n_label};
    uint64_t need = sizeof(h) + (uint64_t)h.n * 8 + h.hdr + h.tail;
    if (!h.n || need > cap || !vmem_rebuilds(vm, f))
        return 0;
    memcpy(out, &h, sizeof(h));
    memcpy(out + sizeof(h), f->label, (size_t)h.n * 8);
    uint8_t *o = out + sizeof(h) + (size_t)h.n * 8;
    uint8_t *tail = pkt + h.hdr + h.pay;
    memcpy(o, pkt, h.hdr);
    memcpy(o + h.hdr, tail, h.tail);
    memset(pkt, 0, h.hdr);
    memset(tail, 0, h.tail);
    return (uint32_t)need;
}

/* The packet h describes (its labels and bytes at in), written whole
 * into pkt: headers, tags, tail. */
static void vmem_unsqueeze(const struct mroce_sim_vmem *vm,
                           const struct sq_head *h, const uint8_t *in,
                           uint8_t *pkt)
{
    uint64_t labels[VMEM_SQ_LABELS];
    const uint8_t *bytes = in + sizeof(*h) + (size_t)h->n * 8;
    memcpy(pkt, bytes, h->hdr);
    memcpy(pkt + h->hdr + h->pay, bytes + h->hdr, h->tail);
    if (vmem_one_granule(vm, h->off, h->pay, h->blen)) {
        memcpy(labels, in + sizeof(*h), 8);
        vmem_granule_put(vm, pkt + h->hdr, labels[0]);
        return;
    }
    memcpy(labels, in + sizeof(*h), (size_t)h->n * 8);
    vmem_tags_walk_put(vm, h->off, pkt + h->hdr, h->pay, h->blen, labels);
}

/* The packet h describes, in pkt, zeroed where it was. */
static void vmem_unsqueeze_clear(const struct mroce_sim_vmem *vm,
                                 const struct sq_head *h, uint8_t *pkt)
{
    memset(pkt, 0, h->hdr);
    memset(pkt + h->hdr + h->pay, 0, h->tail);
    vmem_tags_clear(vm, h->off, pkt + h->hdr, h->pay, h->blen);
}

/* Two packets whose non-zero bytes lie at the same places: the same
 * header and tail lengths, and tags at the same offsets. */
static bool vmem_same_shape(const struct mroce_sim_vmem *vm,
                            const struct sq_head *a, const struct sq_head *b)
{
    uint64_t s = (1ull << vm->tshift) - 1;
    uint64_t la = a->blen - a->off < a->pay ? a->blen - a->off : a->pay;
    uint64_t lb = b->blen - b->off < b->pay ? b->blen - b->off : b->pay;
    return a->hdr == b->hdr && a->tail == b->tail && a->pay == b->pay &&
           (a->off & s) == (b->off & s) && la == lb;
}

/* The rebuild buffer pkt (pkt.h) holds zeros, or the last packet this
 * codec rebuilt there: one of another shape is zeroed first, one of the
 * same shape is written over (every byte of it that is not zero). */
static void vmem_expand(void *ud, const uint8_t *in, uint32_t in_len,
                        uint8_t *pkt)
{
    (void)in_len;
    struct mroce_sim_vmem *vm = ud;
    struct sq_head h;
    memcpy(&h, in, sizeof(h));
    if (vm->holds && !vmem_same_shape(vm, &vm->held, &h))
        vmem_unsqueeze_clear(vm, &vm->held, pkt);
    vmem_unsqueeze(vm, &h, in, pkt);
    vm->holds = true;
    vm->held = h;
    vm->rebuilt_lo = (uintptr_t)pkt + h.hdr;
    vm->rebuilt_hi = vm->rebuilt_lo + h.pay;
    vm->rebuilt_label = in + sizeof(h);
    vm->rebuilt_off = h.off;
    vm->rebuilt_blen = h.blen;
}

/* The packet is read: the buffer keeps its bytes for the next (above). */
static void vmem_clean(void *ud, const uint8_t *in, uint32_t in_len,
                       uint8_t *pkt)
{
    (void)in;
    (void)in_len;
    (void)pkt;
    struct mroce_sim_vmem *vm = ud;
    vm->rebuilt_lo = vm->rebuilt_hi = 0;
}

static void vmem_open(void *ud, uint8_t *buf, uint32_t cap, bool zero)
{
    struct mroce_sim_vmem *vm = ud;
    vm->open_lo = (uintptr_t)buf;
    vm->open_hi = (uintptr_t)buf + cap;
    vm->open_zero = zero;
}

bool mroce_sim_vmem_squeezer(struct mroce_sim_vmem *vm,
                             struct mroce_sim_squeeze *out)
{
    if (vm->c.mode != MROCE_SIM_VMEM_FREE)
        return false;
    *out = (struct mroce_sim_squeeze){.squeeze = vmem_squeeze,
                                      .expand = vmem_expand,
                                      .clean = vmem_clean,
                                      .open = vmem_open,
                                      .ud = vm};
    return true;
}

/* Free mode: the label the tags of granule g (at src, glen bytes) name;
 * 0 if they disagree (content shifted, cut or mixed) or there are none
 * (a granule shorter than a tag). zeros: the bytes between the tags must
 * be zero too (bytes this codec did not rebuild itself: a whole packet,
 * or a payload an engine copied; what else it carries, a fill did not
 * write). */
static uint64_t vbuf_read_tags(const struct mroce_sim_vmem *vm,
                               const uint8_t *src, uint64_t glen, bool zeros)
{
    uint64_t l = 0, at = 0;
    for (uint32_t k = 0; k < vm->n_tags; k++) {
        uint64_t p = vmem_tag_pos(vm, k), t;
        if (p + 8 > glen)
            break;
        memcpy(&t, src + p, 8);
        t ^= vm->mix[k];
        if ((k > 0 && t != l) || (zeros && !vmem_is_zero(vm, src + at, p - at)))
            return 0;
        l = t;
        at = p + 8;
    }
    return zeros && !vmem_is_zero(vm, src + at, glen - at) ? 0 : l;
}

/* The label the tags of a rebuilt packet's granule at a (glen bytes)
 * name, known without reading them when they are one source granule's
 * (as vmem_expand wrote them: what vbuf_read_tags would find); else 0. */
static uint64_t vbuf_rebuilt_label(const struct mroce_sim_vmem *vm, uintptr_t a,
                                   uint64_t glen)
{
    uint64_t so = vm->rebuilt_off + (a - vm->rebuilt_lo), l;
    if ((so & (vm->c.granule - 1)) || so + glen > vm->rebuilt_blen)
        return 0;
    memcpy(&l,
           vm->rebuilt_label +
               ((so >> vm->gshift) - (vm->rebuilt_off >> vm->gshift)) * 8,
           8);
    return l;
}

/* One granule lands: counted, and its content kept. */
static void vbuf_land(struct mroce_sim_vbuf *b, uint64_t g, const uint8_t *src,
                      uint64_t glen)
{
    struct mroce_sim_vmem *vm = b->vm;
    if (b->count[g] >= b->expect && b->count[g] < UINT8_MAX)
        vm->n.duplicates++;
    if (b->count[g] < UINT8_MAX)
        b->count[g]++;
    if (vm->c.mode == MROCE_SIM_VMEM_REAL) {
        memcpy(b->addr + (g << vm->gshift), src, glen);
        return;
    }
    if (glen < 8)
        return; /* no tag fits: its count is all there is */
    uintptr_t a = (uintptr_t)src;
    bool rebuilt = a >= vm->rebuilt_lo && a + glen <= vm->rebuilt_hi;
    uint64_t l = rebuilt ? vbuf_rebuilt_label(vm, a, glen) : 0;
    if (!l)
        l = vbuf_read_tags(vm, src, glen, !rebuilt);
    vm->n.bad_tags += l == 0;
    if (b->label)
        b->label[g] = l;
}

/* Whole granules only: a short one only at the region's end. */
static bool vbuf_aligned(const struct mroce_sim_vbuf *b, uint64_t off,
                         uint64_t len)
{
    uint64_t m = b->vm->c.granule - 1;
    return !(off & m) && ((len & m) == 0 || off + len == b->len) &&
           off + len <= b->len && len > 0;
}

static void vbuf_place_at(struct mroce_sim_vbuf *b, uint64_t off,
                          const uint8_t *src, uint64_t len)
{
    struct mroce_sim_vmem *vm = b->vm;
    vm->n.placements++;
    vm->n.placed_bytes += len;
    if (!vbuf_aligned(b, off, len)) {
        vm->n.misaligned++;
        return;
    }
    for (uint64_t done = 0; done < len;) {
        uint64_t g = (off + done) >> vm->gshift;
        uint64_t glen = len - done < vm->c.granule ? len - done : vm->c.granule;
        vbuf_land(b, g, src + done, glen);
        done += glen;
    }
    if (vm->c.placed)
        vm->c.placed(vm->c.placed_ud, b, off, len);
}

/* The fault, if this is the placement it hits. */
static void vbuf_place(void *ud, uint64_t off, const uint8_t *src, size_t len)
{
    struct mroce_sim_vbuf *b = ud;
    struct mroce_sim_vmem *vm = b->vm;
    uint64_t nth = vm->n.placements + 1;
    if (!vm->c.fault || nth != vm->c.fault_at) {
        vbuf_place_at(b, off, src, len);
        return;
    }
    vm->n.faults++;
    if (vm->c.fault == MROCE_SIM_VMEM_FAULT_MISPLACE) {
        uint64_t g = vm->c.granule;
        vbuf_place_at(b, off + len + g <= b->len ? off + g : off - g, src, len);
    } else if (vm->c.fault == MROCE_SIM_VMEM_FAULT_SKIP) {
        vm->n.placements++; /* it "happened": the engine thinks so */
    } else {
        vbuf_place_at(b, off, src, len);
        vbuf_place_at(b, off, src, len);
    }
}

void mroce_sim_vbuf_place(struct mroce_sim_vbuf *b, uint64_t off,
                          const uint8_t *src, size_t len)
{
    vbuf_place(b, off, src, len);
}

int mroce_sim_vbuf_reg(struct mroce_sim_vbuf *b, struct mroce_pd *pd,
                       unsigned access, struct mroce_mr **out)
{
    struct mroce_mr_virt v = {.place = vbuf_place, .fill = vbuf_fill, .ud = b};
    return mroce_reg_mr_virt(pd, (uint64_t)(uintptr_t)b->addr, b->len, access,
                             &v, out);
}

/* ---- Local operations and checks ---- */

void mroce_sim_vbuf_epoch(struct mroce_sim_vbuf *b, bool clear)
{
    memset(b->count, 0, b->n_gran);
    if (!clear)
        return;
    if (b->vm->c.mode == MROCE_SIM_VMEM_REAL)
        memset(b->addr, 0, b->len);
    else if (b->label)
        memset(b->label, 0, b->n_gran * sizeof(*b->label));
}

void mroce_sim_vbuf_copy(struct mroce_sim_vbuf *dst, uint64_t doff,
                         const struct mroce_sim_vbuf *src, uint64_t soff,
                         uint64_t len)
{
    const struct mroce_sim_vmem *vm = dst->vm;
    if (vm->c.mode == MROCE_SIM_VMEM_REAL) {
        memcpy(dst->addr + doff, src->addr + soff, len);
        return;
    }
    uint64_t n = (len + vm->c.granule - 1) >> vm->gshift;
    for (uint64_t i = 0; i < n; i++)
        dst->label[(doff >> vm->gshift) + i] =
            vbuf_label_of(src, (soff >> vm->gshift) + i);
}

void mroce_sim_vbuf_add_f32(struct mroce_sim_vbuf *acc,
                            const struct mroce_sim_vbuf *in, uint64_t off,
                            uint64_t len)
{
    const struct mroce_sim_vmem *vm = acc->vm;
    if (vm->c.mode == MROCE_SIM_VMEM_REAL) {
        for (uint64_t i = 0; i + sizeof(float) <= len; i += sizeof(float)) {
            float a, b;
            memcpy(&a, acc->addr + off + i, sizeof(a));
            memcpy(&b, in->addr + off + i, sizeof(b));
            a += b;
            memcpy(acc->addr + off + i, &a, sizeof(a));
        }
        return;
    }
    uint64_t g0 = off >> vm->gshift,
             n = (len + vm->c.granule - 1) >> vm->gshift;
    for (uint64_t i = 0; i < n; i++)
        acc->label[g0 + i] += vbuf_label_of(in, g0 + i);
}

void mroce_sim_vbuf_set_expect(struct mroce_sim_vbuf *b, uint8_t n)
{
    b->expect = n ? n : 1;
}

int64_t mroce_sim_vbuf_check_count(const struct mroce_sim_vbuf *b, uint64_t off,
                                   uint64_t len, uint8_t lo, uint8_t hi)
{
    unsigned s = b->vm->gshift;
    uint64_t end = off + len;
    for (uint64_t g = off >> s; (g << s) < end; g++)
        if (b->count[g] < lo || b->count[g] > hi)
            return (int64_t)(g << s);
    return -1;
}

int64_t mroce_sim_vbuf_check_labels(const struct mroce_sim_vbuf *b,
                                    uint64_t off, uint64_t len,
                                    uint64_t (*want)(void *ud, uint64_t g),
                                    void *ud)
{
    unsigned s = b->vm->gshift;
    uint64_t g0 = off >> s, n = (len + b->vm->c.granule - 1) >> s;
    for (uint64_t i = 0; i < n; i++) {
        if (((g0 + i) << s) + 8 > b->len)
            break; /* a last granule too short for a tag */
        if (vbuf_label_of(b, g0 + i) != want(ud, i))
            return (int64_t)((g0 + i) << s);
    }
    return -1;
}
