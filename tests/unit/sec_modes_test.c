/* mroce_ctx_sec_modes (R-CM-9, R-AEAD-12): the protection modes a
 * context's connections can apply, which the connection manager offers
 * its peer. It used to find them by setting a throw-away secret on the
 * connection and resetting it; the query must say exactly what
 * mroce_conn_set_secret then accepts: NONE always, AUTH and ENCRYPT only
 * with a crypto provider on a MetaRoCE context. The CM's use of it is
 * checked by cm_chan_test (test_establish_psk: no provider, mode NONE;
 * test_modes_keyed: providers on both sides, ENCRYPT). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <mroce/mroce.h>
#include <mroce/mroce_crypto.h>

static const uint8_t secret[MROCE_SECRET_LEN] = {1, 2, 3};

#define ALL                                                                    \
    (MROCE_SEC_BIT(MROCE_SEC_NONE) | MROCE_SEC_BIT(MROCE_SEC_AUTH) |           \
     MROCE_SEC_BIT(MROCE_SEC_ENCRYPT))

struct fix {
    struct mroce_ctx *ctx;
    struct mroce_pd *pd;
    struct mroce_cq *cq;
};

static void fix_open(struct fix *f, uint8_t transport,
                     const struct mroce_crypto *crypto)
{
    struct mroce_ctx_attr a = {.transport = transport, .crypto = crypto};
    a.addr.family = MROCE_AF_INET;
    assert_int_equal(mroce_ctx_open(&a, &f->ctx), 0);
    assert_int_equal(mroce_pd_alloc(f->ctx, &f->pd), 0);
    assert_int_equal(mroce_cq_create(f->ctx, 16, &f->cq), 0);
}

static struct mroce_conn *fix_conn(struct fix *f)
{
    struct mroce_conn_attr ca = {.send_cq = f->cq, .recv_cq = f->cq};
    struct mroce_conn *c;
    assert_int_equal(mroce_conn_create(f->pd, &ca, &c), 0);
    assert_ptr_equal(mroce_conn_ctx(c), f->ctx);
    return c;
}

/* Every mode of the mask is accepted by mroce_conn_set_secret, every
 * other refused with `refusal`, and trying leaves the mask as it was. */
static void check_agrees(struct fix *f, int refusal)
{
    int mask = mroce_ctx_sec_modes(f->ctx);
    struct mroce_conn *c = fix_conn(f);
    for (int m = MROCE_SEC_NONE; m <= MROCE_SEC_ENCRYPT; m++) {
        int rc = mroce_conn_set_secret(c, m, secret, sizeof(secret));
        if (mask & MROCE_SEC_BIT(m)) {
            assert_int_equal(rc, 0);
            assert_int_equal(mroce_conn_sec_mode(c), m);
        } else {
            assert_int_equal(rc, refusal);
            assert_int_equal(mroce_conn_sec_mode(c), MROCE_SEC_NONE);
        }
        assert_int_equal(mroce_conn_set_secret(c, MROCE_SEC_NONE, NULL, 0), 0);
    }
    assert_int_equal(mroce_ctx_sec_modes(f->ctx), mask);
    mroce_conn_destroy(c);
}

static void test_no_provider(void **state)
{
    (void)state;
    struct fix f;
    fix_open(&f, MROCE_TRANSPORT_METAROCE, NULL);
    assert_int_equal(mroce_ctx_sec_modes(f.ctx), MROCE_SEC_BIT(MROCE_SEC_NONE));
    check_agrees(&f, MROCE_ENOTSUP);
    mroce_ctx_close(f.ctx);
}

static void test_provider(void **state)
{
    (void)state;
    const struct mroce_crypto *cr = mroce_crypto_default();
    if (!cr)
        skip(); /* built without OpenSSL: no secure modes at all */
    struct fix f;
    fix_open(&f, MROCE_TRANSPORT_METAROCE, cr);
    assert_int_equal(mroce_ctx_sec_modes(f.ctx), ALL);
    check_agrees(&f, 0);
    /* the mask is the context's: a connection that uses a mode, or that
     * is gone, changes nothing */
    struct mroce_conn *c = fix_conn(&f);
    assert_int_equal(
        mroce_conn_set_secret(c, MROCE_SEC_ENCRYPT, secret, sizeof(secret)), 0);
    assert_int_equal(mroce_ctx_sec_modes(f.ctx), ALL);
    mroce_conn_destroy(c);
    assert_int_equal(mroce_ctx_sec_modes(f.ctx), ALL);
    mroce_ctx_close(f.ctx);
}

/* The secure modes are MetaRoCE's (R-AEAD-*): a RoCEv2 context applies
 * none, even with a provider, and set_secret refuses them (EINVAL). */
static void test_rocev2(void **state)
{
    (void)state;
    struct fix f;
    fix_open(&f, MROCE_TRANSPORT_ROCEV2, mroce_crypto_default());
    assert_int_equal(mroce_ctx_sec_modes(f.ctx), MROCE_SEC_BIT(MROCE_SEC_NONE));
    struct mroce_conn *c = fix_conn(&f);
    assert_int_equal(
        mroce_conn_set_secret(c, MROCE_SEC_AUTH, secret, sizeof(secret)),
        MROCE_EINVAL);
    mroce_conn_destroy(c);
    mroce_ctx_close(f.ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_provider),
        cmocka_unit_test(test_provider),
        cmocka_unit_test(test_rocev2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
