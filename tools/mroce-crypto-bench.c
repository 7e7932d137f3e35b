/* mroce-crypto-bench: the crypto provider's AES-128-GCM, per backend, in
 * the shapes the secure modes use (docs/spec.md section 3.14), in GB/s of
 * payload on one core. Prints numbers only; never passes or fails on
 * speed (docs/datapath.md, "Secure modes", has a run).
 *
 *   mroce-crypto-bench [--json FILE] [--ms N]
 *
 * For payloads of 64, 1024 and 4096 bytes behind 48 bytes of headers (a
 * WRITE): encrypt = seal with the headers as AAD and the payload as
 * text, decrypt = its open; auth = seal with headers and payload as AAD
 * (GMAC: the authenticated mode), verify = its open. Each cell runs for
 * --ms milliseconds (default 200) after a warm-up; the backends
 * alternate cell by cell so that both see the same machine load. Also
 * prints the CRC32C the plain mode computes, for scale.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mroce/mroce_crypto.h>

#include "wire/crc32c.h"

#define HDR 48
#define N_SIZES 3
#define N_OPS 5

static const size_t sizes[N_SIZES] = {64, 1024, 4096};
static const char *const ops[N_OPS] = {"encrypt", "decrypt", "auth", "verify",
                                       "crc32c"};

struct cell {
    const struct mroce_crypto *c;
    void *key;
    int op;
    size_t len;
};

static uint8_t hdr[HDR], pay[4096], out[4096], tag[16];
static uint8_t ctag[N_SIZES][16], atag[N_SIZES][16], ct[N_SIZES][4096];
static volatile uint32_t sink;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void run_one(const struct cell *x, int si)
{
    const struct mroce_crypto *c = x->c;
    uint8_t iv[12] = {1, 2, 3};
    switch (x->op) {
    case 0:
        c->seal(c->ud, x->key, iv, hdr, HDR, NULL, 0, pay, out, x->len, tag);
        break;
    case 1:
        sink += (uint32_t)c->open(c->ud, x->key, iv, hdr, HDR, NULL, 0, ct[si],
                                  out, x->len, ctag[si]);
        break;
    case 2:
        c->seal(c->ud, x->key, iv, hdr, HDR, pay, x->len, NULL, NULL, 0, tag);
        break;
    case 3:
        sink += (uint32_t)c->open(c->ud, x->key, iv, hdr, HDR, pay, x->len,
                                  NULL, NULL, 0, atag[si]);
        break;
    default:
        sink += mroce_crc32c(mroce_crc32c(0, hdr, HDR), pay, x->len);
        break;
    }
}

/* GB/s of payload: as many calls as fit in ms milliseconds. */
static double measure(const struct cell *x, int si, double ms)
{
    for (int i = 0; i < 1000; i++)
        run_one(x, si);
    uint64_t n = 0;
    double t0 = now_s(), t;
    do {
        for (int i = 0; i < 256; i++)
            run_one(x, si);
        n += 256;
        t = now_s();
    } while (t - t0 < ms / 1000);
    return (double)n * (double)x->len / (t - t0) / 1e9;
}

/* Reference ciphertexts and tags, so decrypt and verify succeed. */
static void prepare(const struct mroce_crypto *c, void *key)
{
    uint8_t iv[12] = {1, 2, 3};
    for (int s = 0; s < N_SIZES; s++) {
        c->seal(c->ud, key, iv, hdr, HDR, NULL, 0, pay, ct[s], sizes[s],
                ctag[s]);
        c->seal(c->ud, key, iv, hdr, HDR, pay, sizes[s], NULL, NULL, 0,
                atag[s]);
    }
}

int main(int argc, char **argv)
{
    const char *json = NULL;
    double ms = 200;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else if (!strcmp(argv[i], "--ms") && i + 1 < argc)
            ms = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--json FILE] [--ms N]\n", argv[0]);
            return 2;
        }
    }
    const char *names[2] = {MROCE_CRYPTO_IPSECMB, MROCE_CRYPTO_OPENSSL};
    const struct mroce_crypto *be[2];
    void *keys[2] = {NULL, NULL};
    uint8_t key[16] = {7, 7, 7};
    memset(pay, 0x5a, sizeof(pay));
    for (int b = 0; b < 2; b++) {
        be[b] = mroce_crypto_get(names[b]);
        if (be[b]) {
            keys[b] = be[b]->key_new(be[b]->ud, key);
            prepare(be[b], keys[b]);
        }
    }
    double gbps[2][N_OPS][N_SIZES] = {{{0}}};
    for (int o = 0; o < N_OPS; o++)
        for (int s = 0; s < N_SIZES; s++)
            for (int b = 0; b < 2; b++) {
                if (!be[b] || (o == 4 && b == 1))
                    continue;
                struct cell x = {be[b], keys[b], o, sizes[s]};
                gbps[b][o][s] = measure(&x, s, ms);
            }
    printf("%-9s %-8s %9s %9s %9s   (GB/s of payload, one core)\n", "backend",
           "op", "64 B", "1 KiB", "4 KiB");
    for (int b = 0; b < 2; b++)
        for (int o = 0; o < N_OPS; o++) {
            if (o == 4 && b == 1)
                continue;
            const char *n = o == 4 ? "mroce" : be[b] ? names[b] : "-";
            printf("%-9s %-8s %9.2f %9.2f %9.2f\n", n, ops[o], gbps[b][o][0],
                   gbps[b][o][1], gbps[b][o][2]);
        }
    printf("default backend: %s\n", mroce_crypto_name(mroce_crypto_default()));
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            perror(json);
            return 1;
        }
        fprintf(f, "{\"default\":\"%s\"",
                mroce_crypto_name(mroce_crypto_default()));
        for (int b = 0; b < 2; b++) {
            fprintf(f, ",\"%s\":{\"available\":%s", names[b],
                    be[b] ? "true" : "false");
            for (int o = 0; o < 4; o++)
                fprintf(f, ",\"%s_gbps\":[%.3f,%.3f,%.3f]", ops[o],
                        gbps[b][o][0], gbps[b][o][1], gbps[b][o][2]);
            fprintf(f, "}");
        }
        fprintf(f,
                ",\"crc32c_gbps\":[%.3f,%.3f,%.3f],\"sizes\":[64,1024,4096]}\n",
                gbps[0][4][0], gbps[0][4][1], gbps[0][4][2]);
        fclose(f);
    }
    for (int b = 0; b < 2; b++)
        if (be[b])
            be[b]->key_free(be[b]->ud, keys[b]);
    return 0;
}
