/* The suite's side of the set-up exchange (spec 4.5, R-CM-*), written
 * from the spec's tables alone: message framing, the HELLO layout, and
 * the key schedule of a pre-shared key (OpenSSL's HKDF, HMAC and SHA-256).
 * It shares no code with mroce's connection manager (src/cm), which is
 * what it tests. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conform/cf.h"
#include "conform/cm.h"
#include "wire/be.h"

/* ---- TCP ---- */

int cf_cm_dial(const char *ip, uint16_t port)
{
    int fam;
    uint8_t a[16];
    if (!cf_parse_ip(ip, &fam, a))
        return -1;
    struct sockaddr_storage ss = {0};
    socklen_t len;
    if (fam == 4) {
        struct sockaddr_in *s = (struct sockaddr_in *)&ss;
        s->sin_family = AF_INET;
        s->sin_port = htons(port);
        memcpy(&s->sin_addr, a, 4);
        len = sizeof(*s);
    } else {
        struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;
        s->sin6_family = AF_INET6;
        s->sin6_port = htons(port);
        memcpy(&s->sin6_addr, a, 16);
        len = sizeof(*s);
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0)
        return -1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    for (int i = 0; i < 50; i++) {
        if (connect(fd, (struct sockaddr *)&ss, len) == 0)
            return fd;
        if (errno != ECONNREFUSED)
            break;
        cf_sleep_us(20000);
    }
    close(fd);
    return -1;
}

bool cf_cm_write(int fd, const uint8_t *b, size_t n)
{
    while (n) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        b += w;
        n -= (size_t)w;
    }
    return true;
}

/* Up to n bytes within ms; the count, 0 at end of stream, -1 on timeout
 * with nothing read. */
static int cm_read(int fd, uint8_t *b, size_t n, int ms)
{
    size_t got = 0;
    uint64_t end = cf_now() + (uint64_t)ms * 1000000ull;
    while (got < n) {
        uint64_t now = cf_now();
        if (now >= end)
            break;
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (poll(&pf, 1, (int)((end - now) / 1000000) + 1) <= 0)
            continue;
        ssize_t r = recv(fd, b + got, n - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return (int)got;
        got += (size_t)r;
    }
    return got ? (int)got : -1;
}

int cf_cm_recv(int fd, struct cf_cm_msg *m, int ms)
{
    memset(m, 0, sizeof(*m));
    int n = cm_read(fd, m->raw, 12, ms);
    if (n <= 0)
        return n; /* 0: closed; -1: nothing */
    if (n < 12)
        return -2;
    m->magic = mroce_be32_get(m->raw);
    m->version = m->raw[4];
    m->type = m->raw[5];
    m->reserved = mroce_be16_get(m->raw + 6);
    m->len = mroce_be32_get(m->raw + 8);
    if (m->len > CF_CM_MAX_BODY)
        return -2;
    if (m->len && cm_read(fd, m->raw + 12, m->len, ms) != (int)m->len)
        return -2;
    m->body = m->raw + 12;
    m->total = 12 + m->len;
    return (int)m->total;
}

size_t cf_cm_header(uint8_t *b, uint8_t version, uint8_t type, uint32_t len)
{
    mroce_be32_put(b, CF_CM_MAGIC);
    b[4] = version;
    b[5] = type;
    mroce_be16_put(b + 6, 0);
    mroce_be32_put(b + 8, len);
    return 12;
}

/* ---- HELLO (R-CM-6) ---- */

size_t cf_cm_hello_build(const struct cf_hello *h, uint8_t *b, size_t cap)
{
    size_t body = 132 + 16u * h->n_planes + h->blob_len + h->ext_len;
    size_t total = 12 + body + (h->tag_len ? 32 : 0);
    if (total > cap)
        return 0;
    memset(b, 0, total);
    cf_cm_header(b, h->cm_version ? h->cm_version : 2, CF_CM_HELLO,
                 (uint32_t)(total - 12) + h->len_delta);
    uint8_t *p = b + 12;
    p[0] = h->proto_min;
    p[1] = h->proto_max;
    p[2] = h->transport;
    p[3] = h->modes;
    mroce_be32_put(p + 4, h->features);
    mroce_be32_put(p + 8, h->required);
    memcpy(p + 12, h->nonce, 32);
    memcpy(p + 44, h->psk_id, 8);
    mroce_be32_put(p + 52, h->conn_id);
    mroce_be16_put(p + 56, h->udp_port);
    p[58] = h->af;
    p[59] = h->n_planes;
    mroce_be16_put(p + 60, h->n_paths);
    mroce_be16_put(p + 62, h->n_streams);
    mroce_be32_put(p + 64, h->mtu);
    mroce_be32_put(p + 68, h->dsn_window);
    mroce_be32_put(p + 72, h->msg_window);
    mroce_be32_put(p + 76, h->max_rd);
    mroce_be16_put(p + 80, h->path_window);
    mroce_be16_put(p + 82, h->ack_every);
    mroce_be32_put(p + 84, h->ack_delay);
    mroce_be64_put(p + 88, h->min_rto);
    mroce_be64_put(p + 96, h->max_rto);
    p[104] = h->retry_cnt;
    p[105] = h->rnr_retry;
    mroce_be16_put(p + 106, h->keepalive);
    mroce_be32_put(p + 108, h->rnr_max);
    mroce_be32_put(p + 112, h->init_psn);
    mroce_be32_put(p + 116, h->init_dsn);
    mroce_be32_put(p + 120, h->init_msn);
    mroce_be16_put(p + 124, 0);
    mroce_be16_put(p + 126, h->blob_len);
    mroce_be16_put(p + 128, h->ext_len);
    mroce_be16_put(p + 130, h->reserved);
    for (int i = 0; i < h->n_planes && i < 64; i++)
        memcpy(p + 132 + 16 * i, h->addr[i], 16);
    uint8_t *q = p + 132 + 16u * h->n_planes;
    memcpy(q, h->blob, h->blob_len);
    memcpy(q + h->blob_len, h->ext, h->ext_len);
    return total;
}

/* Reads the fixed fields; false if the body is shorter than the layout
 * says (the suite's own R-CM-6 check of the IUT's HELLO). */
bool cf_cm_hello_parse(const struct cf_cm_msg *m, struct cf_hello *h)
{
    memset(h, 0, sizeof(*h));
    const uint8_t *p = m->body;
    if (m->type != CF_CM_HELLO || m->len < 132)
        return false;
    h->proto_min = p[0];
    h->proto_max = p[1];
    h->transport = p[2];
    h->modes = p[3];
    h->features = mroce_be32_get(p + 4);
    h->required = mroce_be32_get(p + 8);
    memcpy(h->nonce, p + 12, 32);
    memcpy(h->psk_id, p + 44, 8);
    h->conn_id = mroce_be32_get(p + 52);
    h->udp_port = mroce_be16_get(p + 56);
    h->af = p[58];
    h->n_planes = p[59];
    h->n_paths = mroce_be16_get(p + 60);
    h->n_streams = mroce_be16_get(p + 62);
    h->mtu = mroce_be32_get(p + 64);
    h->dsn_window = mroce_be32_get(p + 68);
    h->msg_window = mroce_be32_get(p + 72);
    h->max_rd = mroce_be32_get(p + 76);
    h->path_window = mroce_be16_get(p + 80);
    h->ack_every = mroce_be16_get(p + 82);
    h->ack_delay = mroce_be32_get(p + 84);
    h->min_rto = mroce_be64_get(p + 88);
    h->max_rto = mroce_be64_get(p + 96);
    h->retry_cnt = p[104];
    h->rnr_retry = p[105];
    h->keepalive = mroce_be16_get(p + 106);
    h->rnr_max = mroce_be32_get(p + 108);
    h->init_psn = mroce_be32_get(p + 112);
    h->init_dsn = mroce_be32_get(p + 116);
    h->init_msn = mroce_be32_get(p + 120);
    h->n_qps = mroce_be16_get(p + 124);
    h->blob_len = mroce_be16_get(p + 126);
    h->ext_len = mroce_be16_get(p + 128);
    h->reserved = mroce_be16_get(p + 130);
    size_t want = 132 + 16u * h->n_planes + 8u * h->n_qps + h->blob_len +
                  h->ext_len + ((h->features & CF_CM_FEAT_PSK) ? 32 : 0);
    if (want != m->len || h->n_planes > 64)
        return false;
    for (int i = 0; i < h->n_planes; i++)
        memcpy(h->addr[i], p + 132 + 16 * i, 16);
    return true;
}

/* ---- the pre-shared key (R-CM-10) ---- */

static bool cm_hkdf(int mode, const uint8_t *salt, size_t salt_len,
                    const uint8_t *key, size_t key_len, const uint8_t *info,
                    size_t info_len, uint8_t *out, size_t out_len)
{
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
    bool ok =
        c && EVP_PKEY_derive_init(c) > 0 &&
        EVP_PKEY_CTX_set_hkdf_md(c, EVP_sha256()) > 0 &&
        EVP_PKEY_CTX_hkdf_mode(c, mode) > 0 &&
        (!salt || EVP_PKEY_CTX_set1_hkdf_salt(c, salt, (int)salt_len) > 0) &&
        EVP_PKEY_CTX_set1_hkdf_key(c, key, (int)key_len) > 0 &&
        (!info || EVP_PKEY_CTX_add1_hkdf_info(c, info, (int)info_len) > 0) &&
        EVP_PKEY_derive(c, out, &out_len) > 0;
    EVP_PKEY_CTX_free(c);
    return ok;
}

bool cf_hkdf_extract(const uint8_t *salt, size_t salt_len, const uint8_t *ikm,
                     size_t ikm_len, uint8_t prk[32])
{
    return cm_hkdf(EVP_PKEY_HKDEF_MODE_EXTRACT_ONLY, salt, salt_len, ikm,
                   ikm_len, NULL, 0, prk, 32);
}

bool cf_hkdf_expand(const uint8_t *prk, size_t prk_len, const uint8_t *info,
                    size_t info_len, uint8_t *out, size_t out_len)
{
    return cm_hkdf(EVP_PKEY_HKDEF_MODE_EXPAND_ONLY, NULL, 0, prk, prk_len, info,
                   info_len, out, out_len);
}

void cf_hmac(const uint8_t *key, size_t key_len, const uint8_t *a, size_t a_len,
             const uint8_t *b, size_t b_len, uint8_t out[32])
{
    static uint8_t buf[2 * CF_CM_MAX_BODY + 64];
    unsigned int n = 32;
    if (a_len + b_len > sizeof(buf)) {
        memset(out, 0, 32);
        return;
    }
    memcpy(buf, a, a_len);
    if (b_len)
        memcpy(buf + a_len, b, b_len);
    HMAC(EVP_sha256(), key, (int)key_len, buf, a_len + b_len, out, &n);
}

static void cm_label(uint8_t *buf, size_t *n, const char *label,
                     const uint8_t *th)
{
    size_t l = strlen(label);
    memcpy(buf, label, l);
    if (th)
        memcpy(buf + l, th, 32);
    *n = l + (th ? 32 : 0);
}

bool cf_psk_init(struct cf_psk *k, const uint8_t *key, size_t len)
{
    memset(k, 0, sizeof(*k));
    memcpy(k->key, key, len);
    k->len = len;
    size_t n;
    uint8_t info[64];
    if (!cf_hkdf_extract((const uint8_t *)"mroce-cm2", 9, key, len, k->early))
        return false;
    cm_label(info, &n, "mroce-cm2 psk id", NULL);
    if (!cf_hkdf_expand(k->early, 32, info, n, k->psk_id, 8))
        return false;
    cm_label(info, &n, "mroce-cm2 hello", NULL);
    return cf_hkdf_expand(k->early, 32, info, n, k->k_hello, 32);
}

/* After both HELLOs: th, master and the READY MACs of both sides. */
bool cf_psk_finish(struct cf_psk *k, const uint8_t *hc, size_t hc_len,
                   const uint8_t *hs, size_t hs_len, const uint8_t *nonce_c,
                   const uint8_t *nonce_s)
{
    EVP_MD_CTX *d = EVP_MD_CTX_new();
    unsigned int dl = 32;
    bool ok = d && EVP_DigestInit_ex(d, EVP_sha256(), NULL) &&
              EVP_DigestUpdate(d, hc, hc_len) &&
              EVP_DigestUpdate(d, hs, hs_len) &&
              EVP_DigestFinal_ex(d, k->th, &dl);
    EVP_MD_CTX_free(d);
    if (!ok)
        return false;
    uint8_t salt[64], info[64], kr[32];
    memcpy(salt, nonce_c, 32);
    memcpy(salt + 32, nonce_s, 32);
    if (!cf_hkdf_extract(salt, 64, k->key, k->len, k->master))
        return false;
    size_t n;
    static const char *const ready[2] = {"mroce-cm2 client ready",
                                         "mroce-cm2 server ready"};
    static const char *const msg[2] = {"mroce-cm2 client msg",
                                       "mroce-cm2 server msg"};
    for (int side = 0; side < 2; side++) {
        cm_label(info, &n, ready[side], k->th);
        if (!cf_hkdf_expand(k->master, 32, info, n, kr, 32))
            return false;
        cf_hmac(kr, 32, k->th, 32, NULL, 0, k->ready[side]);
        cm_label(info, &n, msg[side], k->th);
        if (!cf_hkdf_expand(k->master, 32, info, n, k->k_msg[side], 32))
            return false;
    }
    cm_label(info, &n, "mroce-cm2 secret", k->th);
    return cf_hkdf_expand(k->master, 32, info, n, k->secret, 32);
}
