/* The suite's receiver model (cf_rx_model, src/conform/peer.c), which
 * every SACK, ACK and PROBE test compares the IUT with: R-SACK-4/5's
 * bitmap and counts, and R-VAL-2's recording windows. Checked by hand
 * against the rules, then against the engine's own receiver
 * (eng_path_rx_next, eng_path_rx_record_any, as resp_record calls them)
 * over random arrivals: two independent readings of R-SACK-5 must agree. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conform/cf.h"
#include "engine/eng.h"

static bool bit(const struct cf_rxpath *r, uint32_t psn)
{
    uint32_t i = r->high - psn;
    return i < 256 && mroce_sack_test(r->bits, i);
}

static void test_by_hand(void **state)
{
    (void)state;
    struct cf_rxpath r = {.init_psn = 100};
    assert_int_equal(cf_rx_model(&r, 100, 1, 2, CF_REC_DATA), CF_RX_IN_ORDER);
    assert_int_equal(cf_rx_model(&r, 103, 2, 3, CF_REC_DATA), CF_RX_GAP);
    assert_int_equal(r.high, 103);
    assert_int_equal(r.echo, 2);
    assert_true(bit(&r, 103) && !bit(&r, 102) && !bit(&r, 101) && bit(&r, 100));
    assert_int_equal(cf_rx_model(&r, 101, 3, 2, CF_REC_DATA), CF_RX_LATE);
    assert_int_equal(r.echo, 2); /* echo(p) stays sack_high's ts */
    assert_int_equal(cf_rx_model(&r, 101, 4, 2, CF_REC_DATA), CF_RX_DUP_PSN);
    assert_int_equal(r.rx_count, 4);
    assert_int_equal(r.ce_count, 1);
    /* 300 ahead: everything shifts out */
    assert_int_equal(cf_rx_model(&r, 403, 5, 2, CF_REC_DATA), CF_RX_GAP);
    assert_true(bit(&r, 403) && !bit(&r, 103));
    assert_int_equal(cf_rx_model(&r, 100, 6, 2, CF_REC_DATA), CF_RX_TOO_OLD);
    /* R-VAL-2: a PROBE only at high + 1 */
    uint16_t n = r.rx_count;
    assert_int_equal(cf_rx_model(&r, 405, 7, 2, CF_REC_PROBE),
                     CF_RX_NOT_RECORDED);
    assert_int_equal(cf_rx_model(&r, 403, 7, 2, CF_REC_PROBE),
                     CF_RX_NOT_RECORDED);
    assert_int_equal(r.rx_count, n);
    assert_int_equal(cf_rx_model(&r, 404, 7, 2, CF_REC_PROBE), CF_RX_IN_ORDER);
    /* a duplicate: up to 255 back or 1024 ahead */
    assert_int_equal(cf_rx_model(&r, 404 + 1025, 8, 2, CF_REC_DUP),
                     CF_RX_NOT_RECORDED);
    assert_int_equal(cf_rx_model(&r, 404 - 256, 8, 2, CF_REC_DUP),
                     CF_RX_NOT_RECORDED);
    assert_int_equal(cf_rx_model(&r, 404 - 255, 8, 2, CF_REC_DUP), CF_RX_LATE);
    assert_int_equal(cf_rx_model(&r, 404 + 1024, 8, 2, CF_REC_DUP), CF_RX_GAP);
    /* before anything is recorded the PROBE at init_psn is the next PSN */
    struct cf_rxpath z = {.init_psn = 0xFFFFFFFFu};
    assert_int_equal(cf_rx_model(&z, 0xFFFFFFFFu, 1, 2, CF_REC_PROBE),
                     CF_RX_IN_ORDER);
    assert_int_equal(cf_rx_model(&z, 0, 1, 2, CF_REC_DATA), CF_RX_IN_ORDER);
    assert_true(bit(&z, 0xFFFFFFFFu) && bit(&z, 0));
}

/* Random arrivals within 600 PSNs of a moving front, through both. */
static void test_against_engine(void **state)
{
    (void)state;
    srand(7);
    for (int run = 0; run < 50; run++) {
        uint32_t init = (uint32_t)rand() * 2654435761u;
        struct cf_rxpath m = {.init_psn = init};
        struct path_rx e = {.high = init - 1};
        uint32_t front = init;
        for (int i = 0; i < 2000; i++) {
            uint32_t psn = front + (uint32_t)(rand() % 600) - 300;
            if (rand() % 3 == 0)
                front += (uint32_t)(rand() % 8);
            if ((int32_t)(psn - init) < 0)
                continue;
            bool dup = false, gap = false, stale = false;
            cf_rx_model(&m, psn, 0, 2, CF_REC_DATA);
            if (psn - e.high == 1)
                eng_path_rx_next(&e, psn);
            else
                eng_path_rx_record_any(&e, psn, &dup, &gap, &stale);
            assert_int_equal(m.high, e.high);
            assert_memory_equal(m.bits, e.bits, sizeof(m.bits));
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_by_hand),
        cmocka_unit_test(test_against_engine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
