/* CRC32C implementations (src/wire/crc32c.c): each one the CPU has
 * against a bit-at-a-time reference on lengths that take every path
 * (4 KiB and 1 KiB blocks, plain folding, the CRC32 instruction, the
 * table), at every alignment, chained at every split. Prints each one's
 * rate on a 4 KiB packet, and mroce_crc32c_cold's on data from memory
 * (numbers, not thresholds). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "wire/crc32c.h"

#define BUF_LEN 20000

static const char *const impl_name[] = {"table", "sse4.2", "fold"};

/* CRC32C one bit at a time: the definition (R-CRC-1), nothing shared
 * with the code under test. */
static uint32_t ref_crc(uint32_t crc, const uint8_t *p, size_t len)
{
    uint32_t c = ~crc;
    while (len--) {
        c ^= *p++;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
    }
    return ~c;
}

static uint8_t *rand_buf(void)
{
    uint8_t *b = malloc(BUF_LEN);
    assert_non_null(b);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < BUF_LEN; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        b[i] = (uint8_t)x;
    }
    return b;
}

/* Every implementation up to the best this CPU has agrees with ref. */
static void check_len(const uint8_t *b, size_t len, size_t off)
{
    uint32_t init = (uint32_t)(len * 2654435761u + off);
    uint32_t want = ref_crc(init, b + off, len);
    for (int impl = MROCE_CRC32C_TABLE; impl <= MROCE_CRC32C_FOLD; impl++) {
        int ran;
        uint32_t got = mroce_crc32c_impl(impl, init, b + off, len, &ran);
        if (got != want)
            fail_msg("%s: len %zu off %zu: %08x, want %08x", impl_name[ran],
                     len, off, got, want);
    }
    assert_int_equal(mroce_crc32c(init, b + off, len), want);
    assert_int_equal(mroce_crc32c_cold(init, b + off, len), want);
}

static void test_lengths(void **state)
{
    (void)state;
    uint8_t *b = rand_buf();
    /* all short lengths; then around 1 KiB and 4 KiB blocks, their
     * multiples and sums, and a jumbo packet */
    static const size_t edges[] = {
        1024, 1280, 2048, 4096, 4132, 5120, 8192, 9216, 12288 + 1024 + 384};
    for (size_t off = 0; off < 8; off++) {
        for (size_t len = 0; len <= 700; len++)
            check_len(b, len, off);
        for (size_t e = 0; e < sizeof(edges) / sizeof(edges[0]); e++)
            for (size_t len = edges[e] - 20; len <= edges[e] + 20; len++)
                check_len(b, len, off);
    }
    free(b);
}

/* crc32c(crc32c(0, a), b) == crc32c(0, a || b) at every split. */
static void test_chaining(void **state)
{
    (void)state;
    uint8_t *b = rand_buf();
    size_t len = 4132;
    uint32_t want = ref_crc(0, b, len);
    for (size_t k = 0; k <= len; k++) {
        uint32_t c = mroce_crc32c(0, b, k);
        assert_int_equal(mroce_crc32c(c, b + k, len - k), want);
    }
    free(b);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void test_rates(void **state)
{
    (void)state;
    uint8_t *b = rand_buf();
    for (int impl = MROCE_CRC32C_TABLE; impl <= MROCE_CRC32C_FOLD; impl++) {
        int ran, n = impl == MROCE_CRC32C_TABLE ? 2000 : 50000;
        uint32_t acc = 0;
        double t0 = now_s();
        for (int i = 0; i < n; i++)
            acc ^= mroce_crc32c_impl(impl, acc, b + (i & 7) * 64, 4132, &ran);
        double ns = (now_s() - t0) * 1e9 / n;
        if (ran == impl)
            printf("crc32c %-7s 4132 B: %7.1f ns (%.1f GB/s)\n",
                   impl_name[impl], ns, 4132 / ns);
    }
    free(b);
}

#define COLD_LEN (64u << 20) /* larger than any cache here */
#define COLD_PKT 4096

/* ns per packet for a CRC over 4 KiB packets walking through COLD_LEN:
 * in place (mode 0), in place after touching its lines (1), or copied
 * behind 48 header bytes in a hot buffer first (2, the copying path). */
static double cold_rate(const uint8_t *big, uint8_t *hot, int mode)
{
    uint32_t acc = 0;
    double t0 = now_s();
    for (size_t o = 0; o < COLD_LEN; o += COLD_PKT) {
        const uint8_t *p = big + o;
        if (mode == 2) {
            memcpy(hot + 48, p, COLD_PKT);
            acc ^= mroce_crc32c(0, hot, COLD_PKT + 48);
        } else {
            uint32_t h = mroce_crc32c(0, hot, 48);
            acc ^= mode ? mroce_crc32c_cold(h, p, COLD_PKT)
                        : mroce_crc32c(h, p, COLD_PKT);
        }
    }
    double ns = (now_s() - t0) * 1e9 / (COLD_LEN / COLD_PKT);
    return acc == 1 ? -ns : ns; /* acc used */
}

/* mroce_crc32c_cold on data from memory: the rates, printed. */
static void test_cold(void **state)
{
    (void)state;
    uint8_t *big = malloc(COLD_LEN), *hot = calloc(1, 2 * COLD_PKT);
    assert_non_null(big);
    assert_non_null(hot);
    memset(big, 0x5A, COLD_LEN);
    assert_int_equal(mroce_crc32c_cold(0, big, COLD_LEN),
                     mroce_crc32c(0, big, COLD_LEN));
    static const char *const what[] = {"in place", "cold, in place",
                                       "memcpy + hot"};
    for (int round = 0; round < 2; round++) /* the first warms up */
        for (int mode = 0; mode < 3; mode++) {
            double ns = cold_rate(big, hot, mode);
            if (round)
                printf("crc32c 4 KiB from memory, %-14s: %6.1f ns\n",
                       what[mode], ns);
        }
    free(big);
    free(hot);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lengths),
        cmocka_unit_test(test_chaining),
        cmocka_unit_test(test_rates),
        cmocka_unit_test(test_cold),
    };
    return cmocka_run_group_tests_name("crc32c", tests, NULL, NULL);
}
