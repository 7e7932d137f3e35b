/* libFuzzer target for the CM message decoder (tier 5, docs/spec.md
 * section 4.5): what a server does with a connector's bytes before it
 * answers.
 *
 * The input is a byte stream cut into messages by their headers, as
 * src/cm/cm.c cuts its receive buffer. For each whole message:
 *  - the header check (R-CM-2) never reads past the bytes, and a length
 *    it accepts is at most MROCE_CM_MAX_BODY and allowed for the type;
 *  - a HELLO decodes or is refused; a decoded one lies inside the input
 *    (blob, extensions, tag), its counts are in range, and it re-encodes
 *    to exactly the same bytes (the layout is canonical: reserved fields
 *    of the body are refused, not ignored, R-CM-6) -- but for the tag,
 *    left to the caller, and the header's reserved bytes, ignored;
 *  - then the checks of R-CM-8 under three policies (no key; a key; a key
 *    and an allow list) give a verdict that is a known REJECT reason, and
 *    an accepted HELLO agrees on one mode the policy accepts;
 *  - a REJECT decodes with its text printable and NUL-terminated.
 * Any mismatch aborts. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mroce/mroce_cm.h>

#include "cm/auth.h"
#include "cm/check.h"
#include "cm/msg.h"
#include "wire/be.h"

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "cm_fuzz: %s:%d: check failed: %s\n", __FILE__,    \
                    __LINE__, #cond);                                          \
            abort();                                                           \
        }                                                                      \
    } while (0)

static bool inside(const uint8_t *p, size_t n, const uint8_t *lo,
                   const uint8_t *hi)
{
    return p >= lo && p + n <= hi;
}

static void fuzz_roundtrip(const struct cm_hello *h, const uint8_t *msg,
                           size_t len)
{
    static uint8_t out[CM_MSG_MAX];
    int n = cm_encode_hello(h, out, sizeof(out));
    CHECK(n == (int)len);
    size_t tag = h->tag ? CM_TAG_LEN : 0;
    CHECK(memcmp(out, msg, 6) == 0); /* bytes 6-7: ignored (R-CM-2) */
    CHECK(memcmp(out + 8, msg + 8, len - tag - 8) == 0);
}

static void fuzz_policies(const struct cm_hello *h, const uint8_t *msg,
                          size_t len)
{
    static const uint8_t key[32] = {0x40, 0x41, 0x42, 0x43};
    static struct cm_psk psk;
    static bool have;
    if (!have)
        CHECK(cm_auth_psk(key, sizeof(key), &psk) == 0);
    have = true;
    struct mroce_cm_attr attr = {0};
    struct cm_policy pol = {.attr = &attr};
    pol.tcp_peer = (struct mroce_addr){MROCE_AF_INET, {127, 0, 0, 1}};
    for (int k = 0; k < 3; k++) {
        pol.psk = k ? &psk : NULL;
        attr.n_allow = k == 2;
        mroce_cm_prefix_parse("10.0.0.0/8", &attr.allow[0]);
        struct cm_agreed ag;
        struct cm_verdict v;
        int r = cm_check_hello(&pol, h, NULL, 0, msg, len, &ag, &v);
        CHECK(r >= 0 && r <= MROCE_CM_REJ_INTERNAL);
        if (r) {
            CHECK(v.reason == r && v.why);
            continue;
        }
        CHECK(ag.mode && !(ag.mode & (ag.mode - 1)));
        CHECK(ag.mode & cm_check_our_modes(&pol) & h->modes);
        CHECK(ag.psk == (k != 0)); /* a key is required when held */
        CHECK(ag.proto == CM_PROTO_VERSION);
    }
}

static void fuzz_hello(const uint8_t *msg, size_t len)
{
    struct cm_hello h;
    const char *why = NULL;
    const uint8_t *body = msg + CM_HDR_LEN, *end = msg + len;
    if (cm_decode_hello(body, len - CM_HDR_LEN, &h, &why)) {
        CHECK(why != NULL);
        return;
    }
    CHECK(h.p.n_planes >= 1 && h.p.n_planes <= MROCE_MAX_PLANES);
    CHECK(h.p.n_qps <= MROCE_MAX_QPS && h.blob_len <= MROCE_CM_MAX_BLOB);
    CHECK(inside(h.blob, h.blob_len, body, end));
    CHECK(inside(h.ext, h.ext_len, body, end));
    CHECK(!h.tag || inside(h.tag, CM_TAG_LEN, body, end));
    CHECK((h.required & ~h.features) == 0);
    cm_hello_unknown_critical(&h);
    fuzz_roundtrip(&h, msg, len);
    fuzz_policies(&h, msg, len);
}

static void fuzz_reject(const uint8_t *body, size_t len)
{
    struct cm_reject r;
    if (cm_decode_reject(body, len, &r))
        return;
    size_t n = strlen(r.text);
    CHECK(n <= CM_REJECT_MAX_TEXT);
    for (size_t i = 0; i < n; i++)
        CHECK(r.text[i] >= 32 && r.text[i] < 127);
    mroce_cm_reject_str(r.reason);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    while (size) {
        struct cm_hdr h;
        const char *why = NULL;
        int rej = -1;
        int rc = cm_hdr_decode(data, size, &h, &why, &rej);
        if (rc == MROCE_EAGAIN) {
            CHECK(size < CM_HDR_LEN);
            return 0;
        }
        if (rc) {
            CHECK(rc == MROCE_EPROTO && why && rej >= 0);
            return 0; /* the stream is out of step: nothing more */
        }
        CHECK(h.len <= MROCE_CM_MAX_BODY && rej == 0);
        if (size - CM_HDR_LEN < h.len)
            return 0; /* not whole yet */
        if (h.type == CM_HELLO)
            fuzz_hello(data, CM_HDR_LEN + h.len);
        else if (h.type == CM_REJECT)
            fuzz_reject(data + CM_HDR_LEN, h.len);
        data += CM_HDR_LEN + h.len;
        size -= CM_HDR_LEN + h.len;
    }
    return 0;
}
