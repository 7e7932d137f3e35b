/* Payload-free runs (src/sim/vmem.c through mroce_sim_exp_run): the
 * same scenario gives the same results with real buffers and without
 * them, and a misplaced, a missing and a duplicated placement is caught
 * in both modes, for flows and for each collective, on both transports.
 * Payload-free packets travel squeezed (sim/pkt.h): rebuilt byte for
 * byte, and a run gives the same results with whole packets. */
#define _DEFAULT_SOURCE /* mkstemp */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/exp.h"
#include "sim/pkt.h"
#include "sim/vmem.h"

static struct mroce_sim_exp_cfg base_cfg(int workload, int transport)
{
    struct mroce_sim_exp_cfg c = {
        .transport = transport,
        .workload = workload,
        .hosts = 8,
        .hosts_per_leaf = 4,
        .size = 256 * 1024,
        .seed = 3,
        .loss = 0.003,
        .channels = workload == MROCE_SIM_EXP_ALLREDUCE ? 2 : 1,
        .deadline_ps = 2000000000000ull, /* 2 s: RoCEv2 may time out */
    };
    return c;
}

/* 0: ran, every flow or iteration verified; 1: ran, something wrong. */
static int run(struct mroce_sim_exp_cfg c, int payload, int fault,
               struct mroce_sim_exp_result *out)
{
    c.payload = payload;
    c.place_fault = fault;
    c.place_fault_at = 37;
    struct mroce_sim_exp_result r;
    assert_int_equal(mroce_sim_exp_run(&c, &r), 0);
    int bad = r.flows_corrupt + r.flows_failed > 0;
    if (bad && !fault)
        printf("[ error    ] %s %s payload %d: %d corrupt, %d failed\n",
               c.transport ? "rocev2" : "metaroce",
               mroce_sim_exp_workload_str(c.workload), payload, r.flows_corrupt,
               r.flows_failed);
    if (out)
        *out = r;
    else
        mroce_sim_exp_result_free(&r);
    return bad;
}

static const int workloads[] = {MROCE_SIM_EXP_PERMUTATION,
                                MROCE_SIM_EXP_ALLREDUCE, MROCE_SIM_EXP_ALLTOALL,
                                MROCE_SIM_EXP_ALLGATHER};

/* Same events, same times, same counters: only the payload fields
 * differ between the modes. */
static void test_modes_agree(void **state)
{
    (void)state;
    for (int t = 0; t < 2; t++)
        for (size_t w = 0; w < sizeof(workloads) / sizeof(*workloads); w++) {
            int tr = t ? MROCE_TRANSPORT_ROCEV2 : MROCE_TRANSPORT_METAROCE;
            struct mroce_sim_exp_cfg c = base_cfg(workloads[w], tr);
            struct mroce_sim_exp_result a, b;
            assert_int_equal(run(c, MROCE_SIM_EXP_PAYLOAD_REAL, 0, &a), 0);
            assert_int_equal(run(c, MROCE_SIM_EXP_PAYLOAD_FREE, 0, &b), 0);
            assert_false(a.payload_free);
            assert_true(b.payload_free);
            assert_int_equal(a.events, b.events);
            assert_int_equal(a.jct_ps, b.jct_ps);
            assert_int_equal(a.retx_pkts, b.retx_pkts);
            assert_int_equal(a.placed_bytes, b.placed_bytes);
            assert_int_equal(a.vmem.placements, b.vmem.placements);
            assert_int_equal(
                b.vmem.misaligned + b.vmem.bad_tags + b.vmem.duplicates, 0);
            assert_true(b.buffer_bytes * 50 < a.buffer_bytes);
            /* payload-free data packets travel squeezed (pkt.h) */
            assert_int_equal(a.pkts.squeezed, 0);
            assert_true(b.pkts.squeezed * 2 > b.data_pkts);
            mroce_sim_exp_result_free(&a);
            mroce_sim_exp_result_free(&b);
        }
}

/* Each fault on placement 37, in each mode: the run must say the data is
 * wrong. Without the fault (above) it is right, so the check can fail
 * only because of the fault. */
static void test_faults_caught(void **state)
{
    (void)state;
    static const int faults[] = {MROCE_SIM_VMEM_FAULT_MISPLACE,
                                 MROCE_SIM_VMEM_FAULT_SKIP,
                                 MROCE_SIM_VMEM_FAULT_TWICE};
    static const char *const fname[] = {"", "misplaced", "missing",
                                        "duplicated"};
    for (int t = 0; t < 2; t++)
        for (size_t w = 0; w < sizeof(workloads) / sizeof(*workloads); w++)
            for (int m = 0; m < 2; m++)
                for (int f = 0; f < 3; f++) {
                    int tr =
                        t ? MROCE_TRANSPORT_ROCEV2 : MROCE_TRANSPORT_METAROCE;
                    struct mroce_sim_exp_cfg c = base_cfg(workloads[w], tr);
                    int mode = m ? MROCE_SIM_EXP_PAYLOAD_FREE
                                 : MROCE_SIM_EXP_PAYLOAD_REAL;
                    struct mroce_sim_exp_result r;
                    int bad = run(c, mode, faults[f], &r);
                    printf("[ fault    ] %-9s %-11s %-4s %-10s: %s\n",
                           t ? "rocev2" : "metaroce",
                           mroce_sim_exp_workload_str(workloads[w]),
                           m ? "free" : "real", fname[faults[f]],
                           bad ? "caught" : "MISSED");
                    assert_int_equal(r.vmem.faults, 1);
                    assert_int_equal(bad, 1);
                    mroce_sim_exp_result_free(&r);
                }
}

/* auto picks payload-free above the threshold only. */
static void test_auto(void **state)
{
    (void)state;
    struct mroce_sim_exp_cfg c =
        base_cfg(MROCE_SIM_EXP_PERMUTATION, MROCE_TRANSPORT_METAROCE);
    c.loss = 0;
    struct mroce_sim_exp_result r;
    run(c, MROCE_SIM_EXP_PAYLOAD_AUTO, 0, &r);
    assert_false(r.payload_free);
    mroce_sim_exp_result_free(&r);
    c.size = 48ull << 20; /* 8 x 48 MiB > 256 MiB */
    c.hosts = 8;
    run(c, MROCE_SIM_EXP_PAYLOAD_AUTO, 0, &r);
    assert_true(r.payload_free);
    assert_int_equal(r.flows_completed, 8);
    mroce_sim_exp_result_free(&r);
    /* a granule below 64 bytes cannot carry tags: forced free refuses */
    c.size = 256 * 1024;
    c.mtu = 1000;
    c.payload = MROCE_SIM_EXP_PAYLOAD_FREE;
    assert_int_equal(mroce_sim_exp_run(&c, &r), MROCE_EINVAL);
    mroce_sim_exp_result_free(&r);
}

/* ---- Squeezed packets ---- */

#define SQ_MAX 4200u /* pool's max payload: headers + 4096 + tail */

struct sq_env {
    struct mroce_sim_vmem *vm;
    struct mroce_sim_vbuf *src;
    struct mroce_sim_pool *pool;
    uint8_t want[SQ_MAX];
};

static void sq_env_init(struct sq_env *e, uint64_t granule)
{
    struct mroce_sim_vmem_cfg vc = {
        .mode = MROCE_SIM_VMEM_FREE, .granule = granule, .seed = 9};
    assert_non_null(e->vm = mroce_sim_vmem_create(&vc));
    /* 3 packets of 4096 B and a short one, which ends mid-granule */
    e->src = mroce_sim_vbuf_new(e->vm, 3 * 4096 + 1000, true, 42, 0, NULL);
    assert_non_null(e->src);
    assert_non_null(e->pool = mroce_sim_pool_create(SQ_MAX, 0));
    struct mroce_sim_squeeze sq;
    assert_true(mroce_sim_vmem_squeezer(e->vm, &sq));
    assert_int_equal(mroce_sim_pool_set_squeeze(e->pool, &sq), 0);
}

static void sq_env_free(struct sq_env *e)
{
    mroce_sim_pool_destroy(e->pool);
    mroce_sim_vmem_destroy(e->vm);
}

/* Builds a packet as an engine does: hdr header bytes, a fill of
 * [off, +pay) of the source (fills: 0, 1 or 2 halves), tail bytes (the
 * header and tail a function of seed); after it, corrupt flips one
 * payload byte (what sealing the payload would do). Commits it; want
 * holds what the engine wrote. */
static struct mroce_sim_pkt *sq_build(struct sq_env *e, uint32_t hdr,
                                      uint64_t off, uint32_t pay, uint32_t tail,
                                      int fills, bool corrupt, uint8_t seed)
{
    struct mroce_sim_pkt *p = mroce_sim_pkt_take(e->pool);
    assert_non_null(p);
    uint32_t len = hdr + pay + tail;
    for (uint32_t i = 0; i < hdr; i++)
        p->data[i] = (uint8_t)(seed + i * 7);
    if (fills == 1)
        mroce_sim_vbuf_fill(e->src, off, p->data + hdr, pay);
    else if (fills == 2) {
        mroce_sim_vbuf_fill(e->src, off, p->data + hdr, pay / 2);
        mroce_sim_vbuf_fill(e->src, off + pay / 2, p->data + hdr + pay / 2,
                            pay - pay / 2);
    } else
        memset(p->data + hdr, 0x5a, pay);
    for (uint32_t i = 0; i < tail; i++)
        p->data[hdr + pay + i] = (uint8_t)(seed ^ (i * 13));
    if (corrupt)
        p->data[hdr + pay / 3] ^= 0x80;
    memcpy(e->want, p->data, len);
    struct mroce_pkt_meta meta = {0};
    struct mroce_sim_pkt *c = mroce_sim_pkt_commit(e->pool, p, &meta, len, 0);
    assert_non_null(c);
    assert_int_equal(c->len, len);
    return c;
}

/* The label granule g of the source has (check_labels' want). */
struct sq_want {
    struct sq_env *e;
    uint64_t g;
};

static uint64_t sq_label(void *ud, uint64_t i)
{
    const struct sq_want *w = ud;
    (void)i;
    return mroce_sim_vbuf_label(w->e->vm, 42, w->g);
}

/* The packet's bytes, squeezed or not, are what was written. */
static void sq_check(struct sq_env *e, struct mroce_sim_pkt *p)
{
    const uint8_t *b = mroce_sim_pkt_bytes(e->pool, p);
    assert_memory_equal(b, e->want, p->len);
    mroce_sim_pkt_bytes_done(e->pool, p);
}

/* Round trip: squeeze then expand gives the very bytes, for whole and
 * short granules, at several granule sizes; the squeezed form is small. */
static void test_squeeze_roundtrip(void **state)
{
    (void)state;
    static const uint64_t granules[] = {4096, 1024, 256};
    for (size_t gi = 0; gi < 3; gi++) {
        struct sq_env e;
        uint64_t g = granules[gi];
        sq_env_init(&e, g);
        uint64_t blen = mroce_sim_vbuf_len(e.src);
        for (uint64_t off = 0; off < blen; off += 4096) {
            uint32_t pay = (uint32_t)(blen - off < 4096 ? blen - off : 4096);
            struct mroce_sim_pkt *p =
                sq_build(&e, 58, off, pay, 4, 1, false, (uint8_t)off);
            assert_true(p->squeezed); /* 16 labels at 256 B granules */
            assert_true(p->clen <= 32 + 16 * 8 + 62);
            sq_check(&e, p);
            mroce_sim_pkt_deliver(e.pool, p);
        }
        struct mroce_sim_pool_counters pc;
        mroce_sim_pool_get_counters(e.pool, &pc);
        assert_int_equal(pc.squeezed, 4);
        assert_int_equal(pc.injected, 4);
        sq_env_free(&e);
    }
}

/* What the codec must leave whole: a payload written over after its
 * fill, two fills in one packet, a packet with no fill after a small
 * packet's fill (stale state), and an ACK-sized packet. Each still reads
 * back as written. */
static void test_squeeze_refuses(void **state)
{
    (void)state;
    struct sq_env e;
    sq_env_init(&e, 4096);
    struct mroce_sim_pkt *p = sq_build(&e, 58, 0, 4096, 4, 1, true, 1);
    assert_false(p->squeezed);
    sq_check(&e, p);
    mroce_sim_pkt_deliver(e.pool, p);
    p = sq_build(&e, 58, 0, 4096, 4, 2, false, 2);
    assert_false(p->squeezed);
    sq_check(&e, p);
    mroce_sim_pkt_deliver(e.pool, p);
    p = sq_build(&e, 58, 4096, 64, 4, 1, false, 3); /* small: not squeezed */
    assert_false(p->squeezed);
    sq_check(&e, p);
    mroce_sim_pkt_deliver(e.pool, p);
    p = sq_build(&e, 58, 0, 4096, 4, 0, false, 4); /* no fill of its own */
    assert_false(p->squeezed);
    sq_check(&e, p);
    mroce_sim_pkt_deliver(e.pool, p);
    p = sq_build(&e, 58, 0, 4096, 4, 1, false, 5); /* and a good one */
    assert_true(p->squeezed);
    sq_check(&e, p);
    mroce_sim_pkt_deliver(e.pool, p);
    sq_env_free(&e);
}

/* The zeros are not written (pkt.h): a buffer written all through and
 * untaken, and one whose packet was squeezed, return to the pool zero; the
 * one rebuild buffer keeps a packet's bytes only for the next of its
 * shape, so packets whose tags sit at other offsets (headers of 58, 61, 58
 * bytes) read back exactly. */
static void test_squeeze_clean(void **state)
{
    (void)state;
    struct sq_env e;
    sq_env_init(&e, 1024);
    struct mroce_sim_pkt *big = mroce_sim_pkt_take(e.pool);
    memset(big->data, 0xa5, SQ_MAX);
    uint8_t *buf = big->data;
    mroce_sim_pkt_untake(e.pool, big);
    static const uint32_t hdrs[] = {58, 61, 58};
    for (int i = 0; i < 3; i++) {
        struct mroce_sim_pkt *p =
            sq_build(&e, hdrs[i], 4096, 4096, 4, 1, false, (uint8_t)(7 + i));
        assert_true(p->squeezed);
        sq_check(&e, p);
        mroce_sim_pkt_deliver(e.pool, p);
        big = mroce_sim_pkt_take(e.pool); /* the buffer it was built in */
        assert_ptr_equal(big->data, buf);
        for (uint32_t k = 0; k < hdrs[i] + 4096 + 4; k++)
            assert_int_equal(big->data[k], 0);
        mroce_sim_pkt_untake(e.pool, big);
    }
    sq_env_free(&e);
}

/* The buffer the pool hands out next is buf, and zero all through. */
static void sq_next_zero(struct sq_env *e, const uint8_t *buf)
{
    struct mroce_sim_pkt *t = mroce_sim_pkt_take(e->pool);
    assert_ptr_equal(t->data, buf);
    for (uint32_t k = 0; k < SQ_MAX; k++)
        assert_int_equal(t->data[k], 0);
    mroce_sim_pkt_untake(e->pool, t);
}

/* The pool keeps its big buffers zero for the fills (pkt.h: the fill then
 * writes only tags): after a squeezed packet, an ACK-sized one, whole ones
 * delivered and dropped, and an untaken buffer written all through, the
 * buffer taken next is zero. So is one written before the codec was set,
 * once its packet (whose fill zeroed it) is committed. */
static void test_squeeze_pool_zero(void **state)
{
    (void)state;
    struct sq_env e;
    sq_env_init(&e, 4096);
    struct mroce_sim_pkt *t = mroce_sim_pkt_take(e.pool);
    uint8_t *buf = t->data;
    mroce_sim_pkt_untake(e.pool, t);
    struct mroce_sim_pkt *p = sq_build(&e, 58, 0, 4096, 4, 1, false, 1);
    assert_true(p->squeezed);
    sq_next_zero(&e, buf);
    mroce_sim_pkt_deliver(e.pool, p);
    p = sq_build(&e, 58, 4096, 64, 4, 1, false, 2); /* ACK-sized */
    assert_false(p->big);
    sq_next_zero(&e, buf);
    mroce_sim_pkt_deliver(e.pool, p);
    p = sq_build(&e, 58, 0, 4096, 4, 2, false, 3); /* whole */
    assert_ptr_equal(p->data, buf);
    mroce_sim_pkt_deliver(e.pool, p);
    sq_next_zero(&e, buf);
    p = sq_build(&e, 61, 0, 4096, 4, 0, false, 4); /* whole, no fill */
    mroce_sim_pkt_drop(e.pool, p, MROCE_SIM_DROP_LOSS);
    sq_next_zero(&e, buf);
    t = mroce_sim_pkt_take(e.pool);
    memset(t->data, 0xa5, SQ_MAX);
    mroce_sim_pkt_untake(e.pool, t);
    sq_next_zero(&e, buf);
    sq_env_free(&e);
    /* written before the pool had a codec: not zero as far as it knows */
    sq_env_init(&e, 4096);
    assert_int_equal(mroce_sim_pool_set_squeeze(e.pool, NULL), 0);
    t = mroce_sim_pkt_take(e.pool);
    buf = t->data;
    memset(t->data, 0xa5, SQ_MAX);
    mroce_sim_pkt_untake(e.pool, t);
    struct mroce_sim_squeeze sq;
    assert_true(mroce_sim_vmem_squeezer(e.vm, &sq));
    assert_int_equal(mroce_sim_pool_set_squeeze(e.pool, &sq), 0);
    p = sq_build(&e, 58, 0, 4096, 4, 1, false, 5);
    assert_true(p->squeezed);
    sq_check(&e, p);
    sq_next_zero(&e, buf);
    mroce_sim_pkt_deliver(e.pool, p);
    sq_env_free(&e);
}

/* An endpoint writes where it said it did not (into the payload before
 * its fill, which takes the pool's word that the buffer is zero, as it
 * would find the bytes a previous packet wrote past its length): the
 * packet does not squeeze, reads back as written, and placing it is
 * caught (bad_tags). Whole packets of a right fill and rebuilt ones
 * place clean, and the labels land. */
static void test_squeeze_stray(void **state)
{
    (void)state;
    struct sq_env e;
    sq_env_init(&e, 1024);
    struct mroce_sim_vbuf *dst =
        mroce_sim_vbuf_new(e.vm, mroce_sim_vbuf_len(e.src), false, 0, 0, NULL);
    assert_non_null(dst);
    struct mroce_sim_pkt *p = mroce_sim_pkt_take(e.pool);
    uint32_t len = 58 + 4096 + 4;
    memset(p->data, 0x11, 58);
    p->data[58 + 1500] = 0x80; /* stray, between two tags */
    mroce_sim_vbuf_fill(e.src, 0, p->data + 58, 4096);
    memset(p->data + 58 + 4096, 0, 4);
    memcpy(e.want, p->data, len);
    struct mroce_pkt_meta meta = {0};
    p = mroce_sim_pkt_commit(e.pool, p, &meta, len, 0);
    assert_false(p->squeezed);
    sq_check(&e, p);
    struct mroce_sim_vmem_counters vc;
    mroce_sim_vbuf_place(dst, 0, mroce_sim_pkt_bytes(e.pool, p) + 58, 4096);
    mroce_sim_pkt_bytes_done(e.pool, p);
    mroce_sim_vmem_get_counters(e.vm, &vc);
    assert_int_equal(vc.bad_tags, 1); /* the granule with the stray byte */
    mroce_sim_pkt_deliver(e.pool, p);
    p = sq_build(&e, 58, 4096, 4096, 4, 2, false, 1); /* whole, right */
    assert_false(p->squeezed);
    mroce_sim_vbuf_place(dst, 4096, mroce_sim_pkt_bytes(e.pool, p) + 58, 4096);
    mroce_sim_pkt_bytes_done(e.pool, p);
    mroce_sim_pkt_deliver(e.pool, p);
    p = sq_build(&e, 58, 8192, 4096, 4, 1, false, 2); /* squeezed */
    assert_true(p->squeezed);
    mroce_sim_vbuf_place(dst, 8192, mroce_sim_pkt_bytes(e.pool, p) + 58, 4096);
    mroce_sim_pkt_bytes_done(e.pool, p);
    mroce_sim_pkt_deliver(e.pool, p);
    mroce_sim_vmem_get_counters(e.vm, &vc);
    assert_int_equal(vc.bad_tags, 1);
    for (uint64_t g = 0; g < 12; g++)
        assert_true(mroce_sim_vbuf_check_labels(dst, g * 1024, 1024, sq_label,
                                                &(struct sq_want){&e, g}) ==
                    (g == 1 ? 1024 : -1));
    sq_env_free(&e);
}

/* A switch trims a squeezed packet: its first bytes read back. */
static void test_squeeze_trim(void **state)
{
    (void)state;
    struct sq_env e;
    sq_env_init(&e, 4096);
    struct mroce_sim_pkt *p = sq_build(&e, 58, 4096, 4096, 4, 1, false, 6);
    assert_true(p->squeezed);
    mroce_sim_pkt_trim(p, 64);
    assert_int_equal(p->len, 64);
    assert_true(p->trimmed);
    sq_check(&e, p);
    mroce_sim_pkt_deliver(e.pool, p);
    sq_env_free(&e);
}

/* Whole packets and squeezed ones: the same run, event for event, with
 * loss, with switches trimming, and over 2 ranks (squeezed packets
 * cross between partitions); a traced run keeps whole packets. */
static void sq_same(struct mroce_sim_exp_cfg c, const char *what)
{
    struct mroce_sim_exp_result a, b;
    c.payload = MROCE_SIM_EXP_PAYLOAD_FREE;
    c.whole_pkts = true;
    assert_int_equal(mroce_sim_exp_run(&c, &a), 0);
    c.whole_pkts = false;
    assert_int_equal(mroce_sim_exp_run(&c, &b), 0);
    printf("[ squeeze  ] %-30s %llu of %llu data packets squeezed\n", what,
           (unsigned long long)b.pkts.squeezed,
           (unsigned long long)b.data_pkts);
    assert_int_equal(a.pkts.squeezed, 0);
    assert_int_equal(b.flows_corrupt + b.flows_failed, 0);
    assert_int_equal(a.flows_completed, b.flows_completed);
    assert_int_equal(a.events, b.events);
    assert_int_equal(a.jct_ps, b.jct_ps);
    assert_int_equal(a.end_ps, b.end_ps);
    assert_int_equal(a.data_pkts, b.data_pkts);
    assert_int_equal(a.retx_pkts, b.retx_pkts);
    assert_int_equal(a.ooo_pkts, b.ooo_pkts);
    assert_int_equal(a.ecn_marks, b.ecn_marks);
    assert_int_equal(a.trimmed, b.trimmed);
    assert_int_equal(a.pkts.injected, b.pkts.injected);
    assert_int_equal(a.pkts.dropped_total, b.pkts.dropped_total);
    assert_int_equal(a.vmem.placements, b.vmem.placements);
    assert_int_equal(b.vmem.misaligned + b.vmem.bad_tags + b.vmem.duplicates,
                     0);
    for (int i = 0; i < a.n_flows; i++)
        assert_int_equal(a.flows[i].fct_ps, b.flows[i].fct_ps);
    if (c.trim == MROCE_SIM_EXP_ON) /* the case is about trimming */
        assert_true(b.trimmed > 0);
    if (c.ranks > 1) /* and this about packets crossing ranks */
        assert_true(b.pkts.exported > 0);
    if (c.pcap) {
        assert_int_equal(b.pkts.squeezed, 0);
        assert_int_equal(a.pcap_frames, b.pcap_frames);
    } else {
        assert_true(b.pkts.squeezed * 2 > b.data_pkts);
    }
    mroce_sim_exp_result_free(&a);
    mroce_sim_exp_result_free(&b);
}

static void test_squeeze_same_results(void **state)
{
    (void)state;
    for (int t = 0; t < 2; t++)
        for (size_t w = 0; w < sizeof(workloads) / sizeof(*workloads); w++) {
            int tr = t ? MROCE_TRANSPORT_ROCEV2 : MROCE_TRANSPORT_METAROCE;
            char what[64];
            snprintf(what, sizeof(what), "%s %s", t ? "rocev2" : "metaroce",
                     mroce_sim_exp_workload_str(workloads[w]));
            sq_same(base_cfg(workloads[w], tr), what);
        }
    struct mroce_sim_exp_cfg c =
        base_cfg(MROCE_SIM_EXP_PERMUTATION, MROCE_TRANSPORT_METAROCE);
    c.hosts = 16;
    c.loss = 0;
    c.workload = MROCE_SIM_EXP_INCAST;
    c.senders = 8;
    c.trim = MROCE_SIM_EXP_ON;
    c.buf_per_port = 64 * 1024;
    sq_same(c, "metaroce incast, trimming");
    c = base_cfg(MROCE_SIM_EXP_PERMUTATION, MROCE_TRANSPORT_METAROCE);
    c.hosts = 16;
    c.ranks = 2;
    sq_same(c, "metaroce permutation, 2 ranks");
    char path[] = "/tmp/sim_vmem_test_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    c.ranks = 0;
    c.pcap = path;
    sq_same(c, "metaroce permutation, traced");
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_modes_agree),
        cmocka_unit_test(test_faults_caught),
        cmocka_unit_test(test_auto),
        cmocka_unit_test(test_squeeze_roundtrip),
        cmocka_unit_test(test_squeeze_refuses),
        cmocka_unit_test(test_squeeze_trim),
        cmocka_unit_test(test_squeeze_clean),
        cmocka_unit_test(test_squeeze_pool_zero),
        cmocka_unit_test(test_squeeze_stray),
        cmocka_unit_test(test_squeeze_same_results),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
