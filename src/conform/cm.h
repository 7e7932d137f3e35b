/* The suite's codec of the set-up exchange (cm.c): spec 4.5. */
#ifndef MROCE_CONFORM_CM_H
#define MROCE_CONFORM_CM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CF_CM_MAGIC 0x4D52434Du
#define CF_CM_MAX_BODY 8192
#define CF_CM_FEAT_PSK 0x1u

enum {
    CF_CM_HELLO = 1,
    CF_CM_READY = 2,
    CF_CM_APP = 3,
    CF_CM_BYE = 4,
    CF_CM_REJECT = 5,
    CF_CM_KEEPALIVE = 6,
};

enum {
    CF_REJ_VERSION = 1,
    CF_REJ_PROTO_VERSION = 2,
    CF_REJ_MALFORMED = 3,
    CF_REJ_UNEXPECTED = 4,
    CF_REJ_FEATURE = 5,
    CF_REJ_SECURITY = 6,
    CF_REJ_AUTH = 7,
    CF_REJ_PARAMS = 8,
    CF_REJ_ADDRESS = 9,
};

struct cf_cm_msg {
    uint32_t magic, len;
    uint8_t version, type;
    uint16_t reserved;
    uint8_t *body;
    size_t total;
    uint8_t raw[12 + CF_CM_MAX_BODY];
};

struct cf_hello {
    uint8_t cm_version; /* header version [2] */
    int32_t len_delta;  /* added to the header's length (a lie) */
    uint8_t proto_min, proto_max, transport, modes;
    uint32_t features, required;
    uint8_t nonce[32], psk_id[8];
    uint32_t conn_id;
    uint16_t udp_port;
    uint8_t af, n_planes;
    uint16_t n_paths, n_streams;
    uint32_t mtu, dsn_window, msg_window, max_rd;
    uint16_t path_window, ack_every;
    uint32_t ack_delay;
    uint64_t min_rto, max_rto;
    uint8_t retry_cnt, rnr_retry;
    uint16_t keepalive;
    uint32_t rnr_max, init_psn, init_dsn, init_msn;
    uint16_t n_qps, blob_len, ext_len, reserved;
    uint8_t addr[64][16];
    uint8_t blob[256], ext[64];
    int tag_len; /* 32 when a PSK tag follows (filled by the caller) */
};

struct cf_psk {
    uint8_t key[64];
    size_t len;
    uint8_t early[32], psk_id[8], k_hello[32];
    uint8_t th[32], master[32], secret[32];
    uint8_t ready[2][32]; /* READY bodies: [0] client, [1] server */
    uint8_t k_msg[2][32];
};

int cf_cm_dial(const char *ip, uint16_t port);
bool cf_cm_write(int fd, const uint8_t *b, size_t n);
/* A whole message within ms: its length, 0 if the peer closed, -1 on a
 * timeout with nothing, -2 if it was cut or longer than 8192. */
int cf_cm_recv(int fd, struct cf_cm_msg *m, int ms);
size_t cf_cm_header(uint8_t *b, uint8_t version, uint8_t type, uint32_t len);
/* The whole message (header, body, room for a tag when tag_len). */
size_t cf_cm_hello_build(const struct cf_hello *h, uint8_t *b, size_t cap);
bool cf_cm_hello_parse(const struct cf_cm_msg *m, struct cf_hello *h);

bool cf_hkdf_extract(const uint8_t *salt, size_t salt_len, const uint8_t *ikm,
                     size_t ikm_len, uint8_t prk[32]);
bool cf_hkdf_expand(const uint8_t *prk, size_t prk_len, const uint8_t *info,
                    size_t info_len, uint8_t *out, size_t out_len);
void cf_hmac(const uint8_t *key, size_t key_len, const uint8_t *a, size_t a_len,
             const uint8_t *b, size_t b_len, uint8_t out[32]);
bool cf_psk_init(struct cf_psk *k, const uint8_t *key, size_t len);
bool cf_psk_finish(struct cf_psk *k, const uint8_t *hc, size_t hc_len,
                   const uint8_t *hs, size_t hs_len, const uint8_t *nonce_c,
                   const uint8_t *nonce_s);

#endif
