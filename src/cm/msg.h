/* CM message codec (pure functions; layout in docs/spec.md 4.5).
 *
 * Every message is a 12-byte header and a body, all fields big-endian:
 * magic "MRCM", version, type, 2 reserved bytes, body length (R-CM-2).
 * Decoding checks the header before the body is read, so an oversized
 * length is refused without reading (or allocating) anything. The codec
 * checks layout only: lengths, counts, reserved fields, address families;
 * the policy (versions, features, modes, addresses, value ranges) is in
 * check.c. */
#ifndef MROCE_CM_MSG_H
#define MROCE_CM_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce.h>
#include <mroce/mroce_cm.h>

#define CM_MAGIC 0x4D52434Du /* "MRCM" */
#define CM_HDR_LEN 12
#define CM_HELLO_FIXED 132 /* HELLO body before the variable parts */
#define CM_ADDR_LEN 16     /* one plane address in a HELLO */
#define CM_NONCE_LEN 32
#define CM_PSK_ID_LEN 8
#define CM_TAG_LEN 32     /* HMAC-SHA256: HELLO tag, READY MAC */
#define CM_MSG_TAG_LEN 16 /* truncated tag of later messages */
#define CM_REJECT_FIXED 8
#define CM_REJECT_MAX_TEXT 256
#define CM_PROTO_VERSION 1 /* the MetaRoCE wire version we speak */

/* Feature bits (R-CM-7). */
#define CM_FEAT_PSK 0x1u /* PSK secret establishment, R-CM-10 */
/* ACKs with path records (R-ACKM-1): the engine's feature, announced as
 * the connection's parameters say, in effect when both announce it and
 * never required (R-VER-5) */
#define CM_FEAT_ACKM MROCE_FEAT_ACKM
#define CM_EXT_CRITICAL 0x8000u

enum cm_type {
    CM_HELLO = 1,     /* parameters, features, nonce, blob */
    CM_READY = 2,     /* sender is CONNECTED; MAC with a PSK */
    CM_APP = 3,       /* application bytes */
    CM_BYE = 4,       /* orderly close */
    CM_REJECT = 5,    /* reason, versions, detail, text */
    CM_KEEPALIVE = 6, /* liveness */
};
#define CM_TYPE_MAX CM_KEEPALIVE

struct cm_hdr {
    uint8_t version;
    uint8_t type;
    uint32_t len; /* body bytes */
};

/* A decoded HELLO. blob, ext and tag point into the body decoded. */
struct cm_hello {
    uint8_t proto_min, proto_max; /* MetaRoCE versions spoken */
    uint8_t transport;
    uint8_t modes; /* MROCE_CM_MODE_* accepted */
    uint32_t features, required;
    uint8_t nonce[CM_NONCE_LEN];
    uint8_t psk_id[CM_PSK_ID_LEN];
    uint16_t keepalive_ms;
    struct mroce_conn_params p;
    const uint8_t *blob;
    uint16_t blob_len;
    const uint8_t *ext;
    uint16_t ext_len;
    const uint8_t *tag; /* CM_TAG_LEN bytes iff features has CM_FEAT_PSK */
};

/* A decoded REJECT. */
struct cm_reject {
    uint16_t reason; /* MROCE_CM_REJ_* */
    uint8_t vmin, vmax;
    uint32_t detail;
    char text[CM_REJECT_MAX_TEXT + 1]; /* control characters masked */
};

/* Largest encoded message. */
#define CM_MSG_MAX (CM_HDR_LEN + MROCE_CM_MAX_BODY)

const char *cm_type_name(int type);

/* Header of buf[0..len): 0, EAGAIN if len < CM_HDR_LEN, or EPROTO with
 * *why naming the problem and *rej the REJECT reason to answer with (0:
 * not a CM peer, answer nothing). A version other than MROCE_CM_VERSION
 * is refused (REJ_VERSION) whatever follows. */
int cm_hdr_decode(const uint8_t *buf, size_t len, struct cm_hdr *h,
                  const char **why, int *rej);
/* Writes a header for a body of len bytes. */
void cm_hdr_put(uint8_t *out, int type, size_t len);

/* The HELLO's body length for its counts; the encoder's and the
 * decoder's agreement (R-CM-6). */
size_t cm_hello_len(const struct cm_hello *h);
/* Encodes a whole HELLO message (header included) into out; with
 * CM_FEAT_PSK the last CM_TAG_LEN bytes are left zero for the caller's
 * tag. Returns the length, EINVAL (a count or family out of range) or
 * ENOBUFS. */
int cm_encode_hello(const struct cm_hello *h, uint8_t *out, size_t cap);
/* HELLO body (len bytes, after the header). EPROTO with *why if the
 * lengths disagree, a count, family or reserved field is wrong, or an
 * extension is malformed. */
int cm_decode_hello(const uint8_t *body, size_t len, struct cm_hello *h,
                    const char **why);
/* The first critical extension type of h that we do not know, or 0. */
uint16_t cm_hello_unknown_critical(const struct cm_hello *h);

/* A message with a plain body (READY, APP, BYE, KEEPALIVE). */
int cm_encode_simple(int type, const void *body, size_t len, uint8_t *out,
                     size_t cap);
int cm_encode_reject(uint16_t reason, uint32_t detail, const char *text,
                     uint8_t *out, size_t cap);
/* EPROTO if the body is shorter than CM_REJECT_FIXED. */
int cm_decode_reject(const uint8_t *body, size_t len, struct cm_reject *r);

#endif
