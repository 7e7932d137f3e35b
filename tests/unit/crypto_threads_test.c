/* The crypto provider (src/crypto) used by several threads at once, as
 * the contract in mroce.h allows: any function from any thread, each key
 * object used by one thread at a time. The soft NIC of src/ibverbs runs
 * one progress thread per device context and collectives open several
 * contexts, so this is the normal case, not a corner.
 *
 * - provider: every backend; THREADS threads, each with its own key
 *   objects (made at the same moment), seal and open the same cases over
 *   and over, each result compared with one computed beforehand on a
 *   single thread. Shared mutable state in a backend (a manager, a
 *   scratch buffer, a context) would show as a wrong tag, text or
 *   refusal.
 * - connections: two secure connections, each between two UDP datapaths
 *   on 127.0.0.1 whose engines run on their own polling threads (four
 *   progress threads sealing and opening at once), driven by two
 *   application threads; every backend, both modes; every WRITE checked
 *   byte for byte and no packet refused (bad tag, replay, mode). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mroce/mroce.h>
#include <mroce/mroce_crypto.h>
#include <mroce/mroce_dp.h>

#define MS 1000000ull
#define THREADS 4
#define ROUNDS 1500
#define N_CASES 6
#define MAX_LEN 4096
#define HDR 48

static const char *const backends[] = {MROCE_CRYPTO_IPSECMB,
                                       MROCE_CRYPTO_OPENSSL};

/* ---- the provider alone ---- */

/* One seal/open shape: text length, AAD split, encrypted or GMAC only. */
struct kase {
    size_t len, cut;
    bool enc;
    uint8_t iv[MROCE_AEAD_IV_LEN];
    uint8_t tag[MROCE_AEAD_TAG_LEN];
    uint8_t out[MAX_LEN];
};

static const uint8_t key_bytes[MROCE_AEAD_KEY_LEN] = {1, 2, 3,  4,  5,  6,  7,
                                                      8, 9, 10, 11, 12, 13, 14};
static uint8_t hdr[HDR], text[MAX_LEN];

struct pt {
    const struct mroce_crypto *c;
    const struct kase *ref;
    pthread_barrier_t *go;
    int id, wrong;
};

/* seal (AAD hdr split at cut, the text as AAD too when !enc), into
 * out/tag; 0 or the provider's error. */
static int kase_seal(const struct mroce_crypto *c, void *k,
                     const struct kase *x, uint8_t *out, uint8_t *tag)
{
    if (x->enc)
        return c->seal(c->ud, k, x->iv, hdr, x->cut, hdr + x->cut, HDR - x->cut,
                       text, out, x->len, tag);
    return c->seal(c->ud, k, x->iv, hdr, HDR, text, x->len, NULL, NULL, 0, tag);
}

static int kase_open(const struct mroce_crypto *c, void *k,
                     const struct kase *x, uint8_t *out)
{
    if (x->enc)
        return c->open(c->ud, k, x->iv, hdr, x->cut, hdr + x->cut, HDR - x->cut,
                       x->out, out, x->len, x->tag);
    return c->open(c->ud, k, x->iv, hdr, HDR, text, x->len, NULL, NULL, 0,
                   x->tag);
}

static void cases_make(const struct mroce_crypto *c, struct kase *ks)
{
    static const size_t lens[N_CASES] = {0, 1, 60, 1024, 4000, 4096};
    for (int i = 0; i < N_CASES; i++) {
        struct kase *x = &ks[i];
        memset(x, 0, sizeof(*x));
        x->len = lens[i];
        x->cut = (size_t)(i * 7) % HDR;
        x->enc = i % 3 != 0;
        x->iv[0] = (uint8_t)i;
        x->iv[11] = 0x5a;
    }
    void *k = c->key_new(c->ud, key_bytes);
    assert_non_null(k);
    for (int i = 0; i < N_CASES; i++)
        assert_int_equal(kase_seal(c, k, &ks[i], ks[i].out, ks[i].tag), 0);
    c->key_free(c->ud, k);
}

/* One case through seal and open with key k; false on any difference. */
static bool kase_check(const struct mroce_crypto *c, void *k,
                       const struct kase *x, int round)
{
    uint8_t out[MAX_LEN], tag[MROCE_AEAD_TAG_LEN];
    if (kase_seal(c, k, x, out, tag) || memcmp(tag, x->tag, sizeof(tag)) != 0 ||
        (x->enc && memcmp(out, x->out, x->len) != 0))
        return false;
    if (kase_open(c, k, x, out) != 0 ||
        (x->enc && memcmp(out, text, x->len) != 0))
        return false;
    struct kase bad = *x; /* and a forgery is refused */
    bad.tag[round % MROCE_AEAD_TAG_LEN] ^= 1;
    return kase_open(c, k, &bad, out) != 0;
}

static void *pt_main(void *arg)
{
    struct pt *t = arg;
    const struct mroce_crypto *c = t->c;
    pthread_barrier_wait(t->go);
    void *k = c->key_new(c->ud, key_bytes);
    if (!k) {
        t->wrong++;
        return NULL;
    }
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < N_CASES; i++)
            t->wrong += !kase_check(c, k, &t->ref[(i + t->id) % N_CASES], r);
    c->key_free(c->ud, k);
    return NULL;
}

static void provider_threads(const struct mroce_crypto *c)
{
    static struct kase ref[N_CASES];
    cases_make(c, ref);
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, THREADS);
    pthread_t th[THREADS];
    struct pt t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        t[i] = (struct pt){.c = c, .ref = ref, .go = &go, .id = i};
        assert_int_equal(pthread_create(&th[i], NULL, pt_main, &t[i]), 0);
    }
    int wrong = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        wrong += t[i].wrong;
    }
    pthread_barrier_destroy(&go);
    assert_int_equal(wrong, 0);
}

static void test_provider(void **state)
{
    (void)state;
    for (size_t i = 0; i < HDR; i++)
        hdr[i] = (uint8_t)(i * 3 + 1);
    for (size_t i = 0; i < MAX_LEN; i++)
        text[i] = (uint8_t)(i * 131 + (i >> 8));
    int tried = 0;
    for (size_t b = 0; b < sizeof(backends) / sizeof(backends[0]); b++) {
        const struct mroce_crypto *c = mroce_crypto_get(backends[b]);
        if (!c)
            continue;
        provider_threads(c);
        tried++;
    }
    if (!tried)
        skip();
}

/* ---- two secure connections, each on its own threads ---- */

#define MEM (1024 * 1024)
#define MSG (64 * 1024)
#define N_MSG 48
#define ALL_ACCESS                                                             \
    (MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |                    \
     MROCE_ACCESS_REMOTE_READ)

struct side {
    struct mroce_dp *dp;
    struct mroce_pd *pd;
    struct mroce_cq *cq;
    struct mroce_conn *conn;
    struct mroce_mr *mr;
    uint8_t *mem;
};

struct world {
    struct side s[2];
    int mode, seed;
    pthread_barrier_t *go;
    int failed; /* what went wrong, 0: nothing */
    char why[128];
};

static int side_open(struct side *s, const struct mroce_crypto *c)
{
    struct mroce_dp_attr a;
    memset(&a, 0, sizeof(a));
    a.kind = MROCE_DP_UDP;
    a.local_ip = "127.0.0.1";
    a.ctx.mtu = 4096;
    a.ctx.crypto = c;
    int rc = MROCE_ESTATE;
    for (int t = 0; t < 50 && rc == MROCE_ESTATE; t++) {
        a.port = (uint16_t)(20000 + (unsigned)rand() % 12000);
        rc = mroce_dp_create(&a, &s->dp);
    }
    if (rc < 0)
        return rc;
    struct mroce_ctx *ctx = mroce_dp_ctx(s->dp);
    s->mem = calloc(1, MEM);
    if (!s->mem || mroce_pd_alloc(ctx, &s->pd) ||
        mroce_cq_create(ctx, 256, &s->cq) ||
        mroce_reg_mr(s->pd, s->mem, MEM, ALL_ACCESS, &s->mr))
        return MROCE_ENOMEM;
    /* generous timers: the test shares 2 vCPUs with other work */
    struct mroce_conn_attr ca = {.send_cq = s->cq,
                                 .recv_cq = s->cq,
                                 .n_paths = 8,
                                 .min_rto_ns = 10 * MS,
                                 .retry_cnt = 15};
    return mroce_conn_create(s->pd, &ca, &s->conn);
}

static void world_open(struct world *w, const struct mroce_crypto *c)
{
    uint8_t secret[MROCE_SECRET_LEN];
    for (int i = 0; i < MROCE_SECRET_LEN; i++)
        secret[i] = (uint8_t)(i * 13 + w->seed);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(side_open(&w->s[i], c), 0);
        assert_int_equal(mroce_conn_set_secret(w->s[i].conn, w->mode, secret,
                                               sizeof(secret)),
                         0);
    }
    struct mroce_conn_params p0, p1;
    mroce_conn_get_params(w->s[0].conn, &p0);
    mroce_conn_get_params(w->s[1].conn, &p1);
    assert_int_equal(mroce_conn_connect(w->s[0].conn, &p1), 0);
    assert_int_equal(mroce_conn_connect(w->s[1].conn, &p0), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(mroce_dp_thread_start(w->s[i].dp), 0);
}

static void world_close(struct world *w)
{
    for (int i = 0; i < 2; i++) {
        mroce_dp_destroy(w->s[i].dp); /* stops its thread first */
        free(w->s[i].mem);
    }
}

static void world_fail(struct world *w, const char *why, int n)
{
    if (!w->failed) {
        w->failed = 1;
        snprintf(w->why, sizeof(w->why), "%s (%d)", why, n);
    }
}

static uint8_t pat(size_t i, int k)
{
    return (uint8_t)(i * 131 + (size_t)k * 29 + (i >> 9));
}

/* One completion of side 0, polled under the datapath's lock while its
 * own thread runs the engine. */
static int world_wait_wc(struct world *w, struct mroce_wc *wc)
{
    struct side *a = &w->s[0];
    uint64_t end = mroce_dp_now_ns() + 30000 * MS;
    for (;;) {
        mroce_dp_lock(a->dp);
        int n = mroce_poll_cq(a->cq, 1, wc);
        mroce_dp_unlock(a->dp);
        if (n)
            return n;
        if (mroce_dp_now_ns() > end)
            return 0;
        sched_yield();
    }
}

/* The application thread of one world: N_MSG WRITEs of MSG bytes, one
 * at a time, each checked on arrival. */
static void *world_main(void *arg)
{
    struct world *w = arg;
    struct side *a = &w->s[0], *b = &w->s[1];
    pthread_barrier_wait(w->go);
    for (int k = 0; k < N_MSG && !w->failed; k++) {
        size_t off = (size_t)(k % (MEM / MSG)) * MSG;
        for (size_t i = 0; i < MSG; i++)
            a->mem[off + i] = pat(i, k + w->seed);
        struct mroce_send_wr wr = {.wr_id = (uint64_t)k,
                                   .sge = {(uint64_t)(uintptr_t)(a->mem + off),
                                           MSG, mroce_mr_lkey(a->mr)},
                                   .remote_addr =
                                       (uint64_t)(uintptr_t)(b->mem + off),
                                   .rkey = mroce_mr_rkey(b->mr)};
        mroce_dp_lock(a->dp);
        int rc = mroce_post_write(a->conn, &wr);
        mroce_dp_unlock(a->dp);
        struct mroce_wc wc;
        if (rc < 0 || world_wait_wc(w, &wc) != 1) {
            world_fail(w, "no completion for WRITE", k);
            break;
        }
        if (wc.status != MROCE_WC_SUCCESS)
            world_fail(w, "WRITE failed", wc.status);
        mroce_dp_lock(b->dp); /* placed before the ACK that completed it */
        for (size_t i = 0; i < MSG && !w->failed; i++)
            if (b->mem[off + i] != pat(i, k + w->seed))
                world_fail(w, "wrong byte in WRITE", k);
        mroce_dp_unlock(b->dp);
    }
    return NULL;
}

static void world_check_drops(struct world *w)
{
    for (int i = 0; i < 2; i++) {
        struct mroce_conn_counters k;
        mroce_dp_lock(w->s[i].dp);
        mroce_conn_get_counters(w->s[i].conn, &k);
        mroce_dp_unlock(w->s[i].dp);
        if (i == 1) /* the transfers happened */
            assert_true(k.rx_pkts >= (uint64_t)N_MSG * MSG / 4096);
        assert_int_equal(k.drop_bad_tag, 0);
        assert_int_equal(k.drop_sec_mode, 0);
        assert_int_equal(k.drop_replay, 0);
    }
}

static void two_worlds(const struct mroce_crypto *c, int mode)
{
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, 2);
    struct world w[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        memset(&w[i], 0, sizeof(w[i]));
        w[i].mode = mode;
        w[i].seed = 1 + i;
        w[i].go = &go;
        world_open(&w[i], c);
    }
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, world_main, &w[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++) {
        if (w[i].failed)
            fail_msg("%s, mode %d, world %d: %s", mroce_crypto_name(c), mode, i,
                     w[i].why);
        world_check_drops(&w[i]);
        world_close(&w[i]);
    }
    pthread_barrier_destroy(&go);
}

static void test_connections(void **state)
{
    (void)state;
    int tried = 0;
    for (size_t b = 0; b < sizeof(backends) / sizeof(backends[0]); b++) {
        const struct mroce_crypto *c = mroce_crypto_get(backends[b]);
        if (!c)
            continue;
        two_worlds(c, MROCE_SEC_ENCRYPT);
        two_worlds(c, MROCE_SEC_AUTH);
        tried++;
    }
    if (!tried)
        skip();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_provider),
        cmocka_unit_test(test_connections),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
