/* The crypto provider (src/crypto, mroce_crypto.h): both backends pass
 * their known-answer tests, agree with each other byte for byte on
 * random inputs of every shape the engine uses (AAD in one or two
 * pieces of any length, empty or non-empty text, in place or not), and
 * refuse every single-bit change of AAD, text or tag. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <mroce/mroce_crypto.h>

#include "crypto/crypto_int.h"

#define MAXLEN 5000

static uint64_t rng = 0x1234567;

static uint32_t rnd(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 33);
}

static void fill(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)rnd();
}

static void test_selection(void **state)
{
    (void)state;
    const struct mroce_crypto *o = mroce_crypto_get(MROCE_CRYPTO_OPENSSL);
    assert_non_null(o);
    assert_int_equal(mroce_crypto_selftest(o), 0);
    assert_string_equal(mroce_crypto_name(o), MROCE_CRYPTO_OPENSSL);
    const struct mroce_crypto *d = mroce_crypto_default();
    assert_non_null(d);
    const struct mroce_crypto *i = mroce_crypto_get(MROCE_CRYPTO_IPSECMB);
    if (i) { /* built in and working: the default, being faster */
        assert_ptr_equal(d, i);
        assert_string_equal(mroce_crypto_name(i), MROCE_CRYPTO_IPSECMB);
    }
    assert_null(mroce_crypto_get("nonesuch"));
    assert_null(mroce_crypto_get(NULL));
    assert_string_equal(mroce_crypto_name(NULL), "none");
}

/* The known-answer test catches a broken backend: one whose seal
 * flips a ciphertext bit fails it. */
static const struct mroce_crypto *broken_base;
static int broken_seal(void *ud, void *key, const uint8_t *iv,
                       const uint8_t *aad, size_t aad_len, const uint8_t *aad2,
                       size_t aad2_len, const uint8_t *in, uint8_t *out,
                       size_t len, uint8_t *tag)
{
    int rc = broken_base->seal(ud, key, iv, aad, aad_len, aad2, aad2_len, in,
                               out, len, tag);
    if (len)
        out[len - 1] ^= 1;
    return rc;
}

static void test_selftest_fails_broken(void **state)
{
    (void)state;
    broken_base = mroce_crypto_get(MROCE_CRYPTO_OPENSSL);
    struct mroce_crypto b = *broken_base;
    b.seal = broken_seal;
    assert_int_not_equal(mroce_crypto_selftest(&b), 0);
}

struct shape {
    size_t aad, aad2, len;
};

/* One random case on provider x (seal) and y (open): same bytes both
 * ways, and y refuses a flipped bit anywhere. */
static void check_pair(const struct mroce_crypto *x,
                       const struct mroce_crypto *y, struct shape s, bool flips)
{
    static uint8_t key[16], iv[12], aad[200], aad2[MAXLEN], pt[MAXLEN],
        ct[MAXLEN], ct2[MAXLEN], back[MAXLEN];
    uint8_t tag[16], tag2[16];
    fill(key, 16);
    fill(iv, 12);
    fill(aad, s.aad);
    fill(aad2, s.aad2);
    fill(pt, s.len);
    void *kx = x->key_new(x->ud, key), *ky = y->key_new(y->ud, key);
    assert_non_null(kx);
    assert_non_null(ky);
    assert_int_equal(
        x->seal(x->ud, kx, iv, aad, s.aad, aad2, s.aad2, pt, ct, s.len, tag),
        0);
    assert_int_equal(
        y->seal(y->ud, ky, iv, aad, s.aad, aad2, s.aad2, pt, ct2, s.len, tag2),
        0);
    assert_memory_equal(tag, tag2, 16);
    if (s.len)
        assert_memory_equal(ct, ct2, s.len);
    assert_int_equal(
        y->open(y->ud, ky, iv, aad, s.aad, aad2, s.aad2, ct, back, s.len, tag),
        0);
    if (s.len)
        assert_memory_equal(back, pt, s.len);
    if (flips) {
        uint8_t *parts[4] = {aad, aad2, ct, tag};
        size_t lens[4] = {s.aad, s.aad2, s.len, 16};
        for (int p = 0; p < 4; p++)
            for (size_t i = 0; i < lens[p]; i += 1 + lens[p] / 37) {
                uint8_t bit = (uint8_t)(1u << (rnd() % 8));
                parts[p][i] ^= bit;
                assert_int_not_equal(y->open(y->ud, ky, iv, aad, s.aad, aad2,
                                             s.aad2, ct, back, s.len, tag),
                                     0);
                parts[p][i] ^= bit;
            }
        iv[5] ^= 0x10; /* another nonce */
        assert_int_not_equal(y->open(y->ud, ky, iv, aad, s.aad, aad2, s.aad2,
                                     ct, back, s.len, tag),
                             0);
    }
    x->key_free(x->ud, kx);
    y->key_free(y->ud, ky);
}

static void check_backends(const struct mroce_crypto *a,
                           const struct mroce_crypto *b)
{
    /* the engine's shapes: headers + payload as AAD in one piece (a
     * copied packet) or two (zero-copy, authenticated mode), headers as
     * AAD and the payload as text (encrypted mode), control packets */
    static const size_t hdrs[] = {16, 32, 36, 40, 44, 48, 56, 68};
    static const size_t pays[] = {0,   1,    15,   16,   17,   63,    64,
                                  255, 1024, 4095, 4096, 4097, MAXLEN};
    for (size_t i = 0; i < sizeof(hdrs) / sizeof(hdrs[0]); i++)
        for (size_t j = 0; j < sizeof(pays) / sizeof(pays[0]); j++) {
            size_t h = hdrs[i], p = pays[j];
            bool f = j % 3 == 0;
            check_pair(a, b, (struct shape){h + p > 200 ? h : h + p, 0, 0}, f);
            check_pair(b, a, (struct shape){h, p, 0}, f);
            check_pair(a, b, (struct shape){h, 0, p}, f);
            check_pair(b, a, (struct shape){h, p % 7, p}, f);
        }
    for (int k = 0; k < 200; k++) /* odd shapes */
        check_pair(k & 1 ? a : b, k & 1 ? b : a,
                   (struct shape){rnd() % 200, rnd() % 300, rnd() % 300},
                   k % 10 == 0);
}

static void test_cross_check(void **state)
{
    (void)state;
    const struct mroce_crypto *o = mroce_crypto_get(MROCE_CRYPTO_OPENSSL);
    const struct mroce_crypto *i = mroce_crypto_get(MROCE_CRYPTO_IPSECMB);
    check_backends(o, o);
    if (!i) {
        print_message("intel-ipsec-mb not available: OpenSSL only\n");
        return;
    }
    check_backends(i, i);
    check_backends(o, i);
    check_backends(i, o);
}

/* In place (in == out) seals and opens like out of place. */
static void test_in_place(void **state)
{
    (void)state;
    const struct mroce_crypto *cs[2] = {mroce_crypto_get(MROCE_CRYPTO_OPENSSL),
                                        mroce_crypto_get(MROCE_CRYPTO_IPSECMB)};
    for (int n = 0; n < 2; n++) {
        const struct mroce_crypto *c = cs[n];
        if (!c)
            continue;
        uint8_t key[16], iv[12], aad[40], pt[1000], buf[1000], out[1000];
        uint8_t tag[16], tag2[16];
        fill(key, 16);
        fill(iv, 12);
        fill(aad, 40);
        fill(pt, 1000);
        void *k = c->key_new(c->ud, key);
        memcpy(buf, pt, 1000);
        assert_int_equal(
            c->seal(c->ud, k, iv, aad, 40, NULL, 0, pt, out, 1000, tag), 0);
        assert_int_equal(
            c->seal(c->ud, k, iv, aad, 40, NULL, 0, buf, buf, 1000, tag2), 0);
        assert_memory_equal(out, buf, 1000);
        assert_memory_equal(tag, tag2, 16);
        assert_int_equal(
            c->open(c->ud, k, iv, aad, 40, NULL, 0, buf, buf, 1000, tag), 0);
        assert_memory_equal(buf, pt, 1000);
        c->key_free(c->ud, k);
    }
}

/* MROCE_CRYPTO picks the backend; an unknown name falls back. */
static void test_env_override(void **state)
{
    (void)state;
    setenv("MROCE_CRYPTO", MROCE_CRYPTO_OPENSSL, 1);
    assert_ptr_equal(mroce_crypto_default(),
                     mroce_crypto_get(MROCE_CRYPTO_OPENSSL));
    setenv("MROCE_CRYPTO", "bogus", 1);
    assert_non_null(mroce_crypto_default());
    unsetenv("MROCE_CRYPTO");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_selection),
        cmocka_unit_test(test_selftest_fails_broken),
        cmocka_unit_test(test_cross_check),
        cmocka_unit_test(test_in_place),
        cmocka_unit_test(test_env_override),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
