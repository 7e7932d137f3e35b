/* ACK validation (R-ACK-6, R-VAL-1), checked against the engine:
 * drop_bad_ack counts each ACK with a bogus part once, also when both the
 * SACK part and dsn_cum are bogus; such an ACK is dropped whole, its
 * valid part included (a forged ACK must not act through the part it
 * got right). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "support/peer.h"

static int teardown(void **state)
{
    (void)state;
    peer_free_all();
    return 0;
}

/* One WRITE packet sent by the engine: its MTH and DXH. */
static struct mroce_hdr one_write(struct peer *p)
{
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 7, 0, 100), 0);
    peer_drain(p, NULL, 0);
    const struct peer_out *o = peer_find(p, MROCE_OP_WRITE, 0);
    assert_non_null(o);
    return o->h;
}

static int ack(struct peer *p, uint16_t path, uint32_t high, uint32_t cum)
{
    struct mroce_hdr a = peer_hdr(p, MROCE_OP_ACK, path, 0);
    a.sack_high = high;
    a.dsn_cum = cum;
    a.echo_ts = peer_sent_ts(p, path, high);
    mroce_sack_set(a.sack, 0);
    return peer_feed(p, &a, NULL, 0);
}

static void test_both_parts_bogus_count_once(void **state)
{
    (void)state;
    struct peer *p = peer_new(NULL);
    struct mroce_hdr w = one_write(p);
    /* sack_high 10 PSNs past the last sent, dsn_cum past snd_nxt */
    assert_int_equal(ack(p, w.path, w.psn + 10, w.dsn + 1000), 0);
    assert_int_equal(peer_cnt(p).drop_bad_ack, 1);
    /* each part alone counts 1 too */
    assert_int_equal(ack(p, w.path, w.psn + 10, w.dsn), 0);
    assert_int_equal(peer_cnt(p).drop_bad_ack, 2);
    struct mroce_wc wc;
    assert_int_equal(peer_poll(p->scq, &wc, 1), 0);
    /* a valid SACK part with a bogus dsn_cum: dropped whole */
    assert_int_equal(ack(p, w.path, w.psn, w.dsn + 1000), 0);
    assert_int_equal(peer_cnt(p).drop_bad_ack, 3);
    assert_int_equal(peer_poll(p->scq, &wc, 1), 0);
    assert_int_equal(ack(p, w.path, w.psn, w.dsn + 1), 0);
    assert_int_equal(peer_cnt(p).drop_bad_ack, 3);
    assert_int_equal(peer_poll(p->scq, &wc, 1), 1);
    assert_int_equal(wc.wr_id, 7);
    assert_int_equal(wc.status, MROCE_WC_SUCCESS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_both_parts_bogus_count_once, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
