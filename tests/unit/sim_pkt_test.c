/* Unit tests for simulated packets and their pool (src/sim/pkt.c): size
 * classes, reuse, trimming, wire size, flow hash, conservation counters. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "sim/defaults.h"
#include "sim/pkt.h"

static struct mroce_pkt_meta meta_of(uint16_t sport)
{
    struct mroce_pkt_meta m;
    memset(&m, 0, sizeof(m));
    m.src.family = m.dst.family = MROCE_AF_INET;
    m.src.ip[0] = m.dst.ip[0] = 10;
    m.src.ip[3] = 1;
    m.dst.ip[3] = 2;
    m.src_port = sport;
    m.dst_port = MROCE_UDP_PORT;
    m.ecn = MROCE_ECN_ECT0;
    return m;
}

static void test_inject_copies_and_counts(void **state)
{
    (void)state;
    struct mroce_sim_pool *pool = mroce_sim_pool_create(9000, 4);
    assert_non_null(pool);
    uint8_t buf[9001];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)(i * 13);
    struct mroce_pkt_meta m = meta_of(1000);
    struct mroce_sim_pkt *big = mroce_sim_pkt_inject(pool, &m, buf, 4148, 77);
    struct mroce_sim_pkt *ack = mroce_sim_pkt_inject(pool, &m, buf, 72, 78);
    assert_non_null(big);
    assert_non_null(ack);
    assert_null(mroce_sim_pkt_inject(pool, &m, buf, 9001, 79)); /* too big */
    buf[0] ^= 0xff; /* the packet holds a copy */
    assert_int_equal(big->data[0], 0);
    assert_memory_equal(big->data + 1, buf + 1, 4147);
    assert_int_equal(big->len, 4148);
    assert_int_equal(big->wire_bytes, 4148 + MROCE_SIM_WIRE_OVERHEAD_V4);
    assert_int_equal(big->inject_ps, 77);
    assert_int_equal(big->meta.src_port, 1000);
    struct mroce_sim_pool_counters c;
    mroce_sim_pool_get_counters(pool, &c);
    assert_int_equal(c.injected, 2);
    assert_int_equal(c.in_flight, 2);
    assert_true(mroce_sim_pool_conserved(pool));
    mroce_sim_pkt_deliver(pool, big);
    mroce_sim_pkt_drop(pool, ack, MROCE_SIM_DROP_LOSS);
    mroce_sim_pool_get_counters(pool, &c);
    assert_int_equal(c.delivered, 1);
    assert_int_equal(c.dropped[MROCE_SIM_DROP_LOSS], 1);
    assert_int_equal(c.dropped_total, 1);
    assert_int_equal(c.in_flight, 0);
    assert_int_equal(c.peak_in_flight, 2);
    assert_true(mroce_sim_pool_conserved(pool));
    assert_string_equal(mroce_sim_drop_str(MROCE_SIM_DROP_HEADROOM),
                        "headroom");
    assert_string_equal(mroce_sim_drop_str(99), "unknown");
    mroce_sim_pool_destroy(pool);
}

/* Zero-copy injection: the endpoint writes into a taken buffer; a data
 * packet is committed in place, an ACK-sized one moves to the small class
 * and its big buffer goes back; taken buffers count in conservation. */
static void test_take_commit(void **state)
{
    (void)state;
    struct mroce_sim_pool *pool = mroce_sim_pool_create(9000, 4);
    struct mroce_pkt_meta m = meta_of(7);
    struct mroce_sim_pkt *t = mroce_sim_pkt_take(pool);
    assert_non_null(t);
    assert_true(mroce_sim_pool_conserved(pool));
    for (int i = 0; i < 4148; i++)
        t->data[i] = (uint8_t)(i * 5);
    struct mroce_sim_pkt *p = mroce_sim_pkt_commit(pool, t, &m, 4148, 9);
    assert_ptr_equal(p, t); /* in place */
    assert_int_equal(p->len, 4148);
    assert_int_equal(p->data[4147], (uint8_t)(4147 * 5));
    assert_int_equal(p->wire_bytes, 4148 + MROCE_SIM_WIRE_OVERHEAD_V4);
    struct mroce_sim_pkt *t2 = mroce_sim_pkt_take(pool);
    memset(t2->data, 0xab, 72);
    struct mroce_sim_pkt *a = mroce_sim_pkt_commit(pool, t2, &m, 72, 10);
    assert_non_null(a);
    assert_ptr_not_equal(a, t2); /* moved to the small class */
    assert_int_equal(a->data[71], 0xab);
    struct mroce_sim_pkt *t3 = mroce_sim_pkt_take(pool);
    assert_ptr_equal(t3, t2); /* the big buffer came back */
    assert_true(mroce_sim_pool_conserved(pool));
    assert_null(mroce_sim_pkt_commit(pool, t3, &m, 9001, 11)); /* too big */
    struct mroce_sim_pool_counters c;
    mroce_sim_pool_get_counters(pool, &c);
    assert_int_equal(c.injected, 2);
    assert_true(mroce_sim_pool_conserved(pool));
    mroce_sim_pkt_untake(pool, mroce_sim_pkt_take(pool));
    mroce_sim_pkt_deliver(pool, p);
    mroce_sim_pkt_deliver(pool, a);
    assert_true(mroce_sim_pool_conserved(pool));
    mroce_sim_pool_destroy(pool);
}

/* The pool grows in chunks and reuses what comes back: 10,000 cycles of
 * 100 live packets allocate a bounded number. */
static void test_reuse(void **state)
{
    (void)state;
    struct mroce_sim_pool *pool = mroce_sim_pool_create(4200, 64);
    struct mroce_pkt_meta m = meta_of(1);
    uint8_t buf[4200] = {0};
    struct mroce_sim_pkt *live[100];
    for (int round = 0; round < 100; round++) {
        for (int i = 0; i < 100; i++) {
            live[i] = mroce_sim_pkt_inject(pool, &m, buf,
                                           (uint32_t)(i % 2 ? 4200 : 64), 0);
            assert_non_null(live[i]);
        }
        for (int i = 0; i < 100; i++)
            mroce_sim_pkt_deliver(pool, live[i]);
    }
    struct mroce_sim_pool_counters c;
    mroce_sim_pool_get_counters(pool, &c);
    assert_int_equal(c.injected, 10000);
    assert_int_equal(c.allocated, 128); /* one chunk per size class */
    assert_true(mroce_sim_pool_conserved(pool));
    mroce_sim_pool_destroy(pool);
}

static void test_trim_and_wire_bytes(void **state)
{
    (void)state;
    struct mroce_sim_pool *pool = mroce_sim_pool_create(9000, 0);
    struct mroce_pkt_meta m = meta_of(1);
    uint8_t buf[4096] = {0};
    struct mroce_sim_pkt *p = mroce_sim_pkt_inject(pool, &m, buf, 4096, 0);
    mroce_sim_pkt_trim(p, 64);
    assert_int_equal(p->len, 64);
    assert_int_equal(p->wire_bytes, 64 + MROCE_SIM_WIRE_OVERHEAD_V4);
    assert_int_equal(p->trimmed, 1);
    mroce_sim_pkt_deliver(pool, p);
    assert_int_equal(mroce_sim_wire_bytes(100, MROCE_AF_INET6),
                     100 + MROCE_SIM_WIRE_OVERHEAD_V6);
    mroce_sim_pool_destroy(pool);
}

/* The source port alone must move the flow hash (it is the path entropy),
 * and the hash is a pure function of the 5-tuple. */
static void test_flow_hash(void **state)
{
    (void)state;
    struct mroce_pkt_meta a = meta_of(5000), b = meta_of(5001);
    assert_true(mroce_sim_flow_hash(&a) != mroce_sim_flow_hash(&b));
    struct mroce_pkt_meta a2 = meta_of(5000);
    a2.ecn = MROCE_ECN_CE; /* not part of the 5-tuple */
    assert_true(mroce_sim_flow_hash(&a) == mroce_sim_flow_hash(&a2));
    /* Low bits spread: 4096 consecutive ports over 8 buckets. */
    int bucket[8] = {0};
    for (uint16_t p = 0; p < 4096; p++) {
        struct mroce_pkt_meta x = meta_of(p);
        bucket[mroce_sim_flow_hash(&x) % 8]++;
    }
    for (int i = 0; i < 8; i++)
        assert_in_range(bucket[i], 512 - 120, 512 + 120);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inject_copies_and_counts),
        cmocka_unit_test(test_take_commit),
        cmocka_unit_test(test_reuse),
        cmocka_unit_test(test_trim_and_wire_bytes),
        cmocka_unit_test(test_flow_hash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
