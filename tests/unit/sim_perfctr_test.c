/* The instruction counter (src/sim/perfctr.c): where the machine has one
 * (perf_event_open), a loop of a known length counts at least its
 * iterations and stops counting when stopped; where it has none (this
 * kind of VM: `perf stat -e instructions` says not supported), every
 * call is harmless and the count is -1, which the reports print as
 * null. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>

#include "sim/perfctr.h"

static volatile uint64_t sink;

static void spin(uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        sink += i;
}

static void test_counter(void **state)
{
    (void)state;
    struct mroce_sim_perfctr p;
    bool have = mroce_sim_perfctr_open(&p);
    mroce_sim_perfctr_start(&p);
    spin(1000000);
    mroce_sim_perfctr_stop(&p);
    int64_t a = mroce_sim_perfctr_read(&p);
    spin(1000000); /* stopped: not counted */
    int64_t b = mroce_sim_perfctr_read(&p);
    printf("[ perfctr  ] counter %s: %lld, then %lld\n",
           have ? "present" : "absent", (long long)a, (long long)b);
    if (have) {
        assert_true(a >= 1000000);
        assert_true(b == a);
    } else {
        assert_int_equal(a, -1);
        assert_int_equal(b, -1);
    }
    mroce_sim_perfctr_close(&p);
    assert_int_equal(mroce_sim_perfctr_read(&p), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_counter)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
