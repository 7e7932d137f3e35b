/* The compliance suite's own codec and key schedule of the set-up
 * exchange (src/conform/cm.c: HELLO layout of R-CM-6, PSK schedule of
 * R-CM-10 with OpenSSL), independent of src/cm, against the vectors of
 * docs/spec.md section 4.6. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "conform/cm.h"

/* The hex dump of vector `name` in docs/spec.md: its length, or -1. */
static int spec_vector(const char *name, uint8_t *out, size_t cap)
{
    FILE *f = fopen(MROCE_SOURCE_DIR "/docs/spec.md", "r");
    assert_non_null(f);
    char line[512], want[128];
    snprintf(want, sizeof(want), "Vector `%s` (", name);
    int state = 0;
    size_t n = 0;
    while (fgets(line, sizeof(line), f)) {
        if (state == 0 && !strncmp(line, want, strlen(want)))
            state = 1;
        else if (state == 1 && !strncmp(line, "```", 3))
            state = 2;
        else if (state == 2 && !strncmp(line, "```", 3))
            break;
        else if (state == 2) {
            unsigned v;
            int used;
            for (char *p = line + 4;
                 n < cap && sscanf(p, " %2x%n", &v, &used) == 1; p += used)
                out[n++] = (uint8_t)v;
        }
    }
    fclose(f);
    return state == 2 ? (int)n : -1;
}

static void expect_vector(const char *name, const uint8_t *got, size_t len)
{
    static uint8_t want[12 + CF_CM_MAX_BODY];
    int n = spec_vector(name, want, sizeof(want));
    if (n != (int)len)
        fail_msg("vector %s: spec has %d bytes, the suite made %zu", name, n,
                 len);
    assert_memory_equal(want, got, len);
}

/* The example of section 4.6, as the spec's table gives it. */
static void example(struct cf_hello *h, int server, int psk)
{
    memset(h, 0, sizeof(*h));
    h->proto_min = h->proto_max = 1;
    h->modes = psk ? 7 : 1;
    for (int i = 0; i < 32; i++)
        h->nonce[i] = (uint8_t)(i + (server ? 0x20 : 0));
    h->conn_id = server ? 0x1A2B3C4D : 0x00C0FFEE;
    h->udp_port = server ? 4797 : 4798;
    h->af = 4;
    h->n_planes = 2;
    for (int i = 0; i < 2; i++) {
        uint8_t ip[4] = {10, (uint8_t)i, 0, (uint8_t)(server ? 2 : 1)};
        memcpy(h->addr[i], ip, 4);
    }
    h->n_paths = server ? 32 : 16;
    h->n_streams = server ? 1 : 2;
    h->mtu = 4096;
    h->dsn_window = server ? 8192 : 4096;
    h->msg_window = server ? 128 : 64;
    h->max_rd = 16;
    h->path_window = 256;
    h->ack_every = 1;
    h->ack_delay = 2000;
    h->min_rto = 1000000;
    h->max_rto = 100000000;
    h->retry_cnt = 15;
    h->rnr_retry = 7;
    h->keepalive = server ? 2000 : 1000;
    h->rnr_max = 100;
    h->init_psn = server ? 0x6C078965 : 0x9E3779B9;
    h->init_dsn = server ? 0x5851F42D : 0x7F4A7C15;
    h->init_msn = server ? 0x4C957F2D : 0x2545F491;
    if (!server) {
        memcpy(h->blob, "demo", 4);
        h->blob_len = 4;
    }
}

static void test_hello_plain(void **state)
{
    (void)state;
    static uint8_t b[12 + CF_CM_MAX_BODY];
    struct cf_hello h, back;
    for (int server = 0; server < 2; server++) {
        example(&h, server, 0);
        size_t n = cf_cm_hello_build(&h, b, sizeof(b));
        expect_vector(server ? "cm-hello-s" : "cm-hello-c", b, n);
        /* and it parses back to the same fields */
        static struct cf_cm_msg m;
        memcpy(m.raw, b, n);
        m.type = CF_CM_HELLO;
        m.len = (uint32_t)(n - 12);
        m.body = m.raw + 12;
        m.total = n;
        assert_true(cf_cm_hello_parse(&m, &back));
        assert_int_equal(back.conn_id, h.conn_id);
        assert_int_equal(back.init_msn, h.init_msn);
        assert_int_equal(back.max_rto, h.max_rto);
        assert_int_equal(back.n_planes, 2);
        assert_memory_equal(back.addr[1], h.addr[1], 16);
    }
}

static void test_psk_schedule(void **state)
{
    (void)state;
    static uint8_t hc[12 + CF_CM_MAX_BODY], hs[12 + CF_CM_MAX_BODY];
    uint8_t key[32], r[44];
    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)(0x40 + i);
    struct cf_psk k;
    assert_true(cf_psk_init(&k, key, sizeof(key)));
    struct cf_hello c, s;
    example(&c, 0, 1);
    example(&s, 1, 1);
    c.features = c.required = s.features = s.required = CF_CM_FEAT_PSK;
    memcpy(c.psk_id, k.psk_id, 8);
    memcpy(s.psk_id, k.psk_id, 8);
    c.tag_len = s.tag_len = 32;
    size_t lc = cf_cm_hello_build(&c, hc, sizeof(hc));
    cf_hmac(k.k_hello, 32, hc, lc - 32, NULL, 0, hc + lc - 32);
    expect_vector("cm-hello-c-psk", hc, lc);
    size_t ls = cf_cm_hello_build(&s, hs, sizeof(hs));
    cf_hmac(k.k_hello, 32, hc, lc, hs, ls - 32, hs + ls - 32);
    expect_vector("cm-hello-s-psk", hs, ls);
    assert_true(cf_psk_finish(&k, hc, lc, hs, ls, c.nonce, s.nonce));
    for (int side = 0; side < 2; side++) {
        cf_cm_header(r, 2, CF_CM_READY, 32);
        memcpy(r + 12, k.ready[side], 32);
        expect_vector(side ? "cm-ready-s-psk" : "cm-ready-c-psk", r, sizeof(r));
    }
    /* a wrong key gives another psk_id and other MACs */
    struct cf_psk k2;
    key[0] ^= 1;
    assert_true(cf_psk_init(&k2, key, sizeof(key)));
    assert_memory_not_equal(k.psk_id, k2.psk_id, 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hello_plain),
        cmocka_unit_test(test_psk_schedule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
