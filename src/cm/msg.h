/* CM message codec (pure functions; layout in docs/cm.md).
 *
 * Every message is a 12-byte header and a body, all fields big-endian:
 * magic "MRCM", version, type, 2 reserved bytes, body length. Decoding
 * checks the header before the body is read, so an oversized length is
 * refused without reading (or allocating) anything. */
#ifndef MROCE_CM_MSG_H
#define MROCE_CM_MSG_H

#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce.h>
#include <mroce/mroce_cm.h>

#define CM_MAGIC 0x4D52434Du /* "MRCM" */
#define CM_HDR_LEN 12
#define CM_HELLO_FIXED 60 /* HELLO body before qpn/psn arrays and blob */

enum cm_type {
    CM_HELLO = 1,  /* conn params + blob */
    CM_READY = 2,  /* empty: sender is CONNECTED */
    CM_APP = 3,    /* application bytes */
    CM_BYE = 4,    /* empty: orderly close */
    CM_REJECT = 5, /* i32 error code + reason text */
};

struct cm_hdr {
    uint8_t version;
    uint8_t type;
    uint32_t len; /* body bytes */
};

/* Largest encoded message. */
#define CM_MSG_MAX (CM_HDR_LEN + MROCE_CM_MAX_BODY)

const char *cm_type_name(int type);

/* Header of buf[0..len): 0, or EAGAIN if len < CM_HDR_LEN, or EPROTO (bad
 * magic, version, unknown type, body length above MROCE_CM_MAX_BODY or
 * wrong for the type). *why (may be NULL) names the problem. */
int cm_hdr_decode(const uint8_t *buf, size_t len, struct cm_hdr *h,
                  const char **why);

/* Encoders write header and body into out (cap bytes) and return the
 * total length, or ENOBUFS / EINVAL. */
int cm_encode_hello(const struct mroce_conn_params *p, const void *blob,
                    size_t blob_len, uint8_t *out, size_t cap);
int cm_encode_simple(int type, const void *body, size_t len, uint8_t *out,
                     size_t cap);
int cm_encode_reject(int32_t code, const char *reason, uint8_t *out,
                     size_t cap);

/* HELLO body (len bytes, after the header): fills *p and points *blob at
 * the blob inside body. EPROTO if the lengths disagree, n_qps is above
 * MROCE_MAX_QPS, the blob above MROCE_CM_MAX_BLOB or the address family
 * unknown. Range checks of the values are mroce_conn_connect's. */
int cm_decode_hello(const uint8_t *body, size_t len,
                    struct mroce_conn_params *p, const uint8_t **blob,
                    size_t *blob_len, const char **why);
/* REJECT body: code and (truncated) reason copied into text[cap]. */
int cm_decode_reject(const uint8_t *body, size_t len, int32_t *code, char *text,
                     size_t cap);

#endif
