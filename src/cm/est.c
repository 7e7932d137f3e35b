/* The set-up exchange (R-CM-4, R-CM-8..R-CM-10): client HELLO, server
 * HELLO, client READY, server READY; each side checks before it answers
 * and connects before its READY. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm/chan.h"
#include "cm/sock.h"

/* What one establish call works with. */
struct est {
    struct mroce_cm *cm;
    struct mroce_conn *conn;
    int64_t dl;
    const void *blob;
    size_t blob_len;
    void *peer_blob;
    size_t cap;
    size_t *peer_len;
    struct cm_hello mine, peer;
    uint8_t *msg; /* our whole HELLO */
    int msg_len;
    uint8_t th[CM_HASH_LEN];
};

static int est_reject(struct est *e, int err, const struct cm_verdict *v)
{
    return cm_chan_reject(e->cm, err, v->reason, v->detail, v->why, e->dl);
}

static int est_refuse(struct est *e, int err, int reason, const char *why)
{
    struct cm_verdict v = {.reason = reason, .why = why};
    return est_reject(e, err, &v);
}

/* R-CM-9: the modes this connection's engine can apply (AUTH and ENC
 * need a crypto provider on its context, R-AEAD-12), as the CM's bits. */
static uint8_t est_engine_modes(struct mroce_conn *conn)
{
    int m = mroce_ctx_sec_modes(mroce_conn_ctx(conn));
    return (
        uint8_t)((m & MROCE_SEC_BIT(MROCE_SEC_NONE) ? MROCE_CM_MODE_NONE : 0) |
                 (m & MROCE_SEC_BIT(MROCE_SEC_AUTH) ? MROCE_CM_MODE_AUTH : 0) |
                 (m & MROCE_SEC_BIT(MROCE_SEC_ENCRYPT) ? MROCE_CM_MODE_ENC
                                                       : 0));
}

_Static_assert(MROCE_CM_SECRET_LEN == MROCE_SECRET_LEN,
               "the CM derives the engine's connection secret");

static int est_sec_mode(uint8_t mode)
{
    return mode == MROCE_CM_MODE_ENC    ? MROCE_SEC_ENCRYPT
           : mode == MROCE_CM_MODE_AUTH ? MROCE_SEC_AUTH
                                        : MROCE_SEC_NONE;
}

/* Our HELLO: the connection's parameters, our policy, a fresh nonce and
 * the blob; with a key, tagged over prefix || the message (R-CM-10). */
static int est_hello_build(struct est *e, const uint8_t *prefix, size_t plen)
{
    struct mroce_cm *cm = e->cm;
    struct cm_policy pol = cm_chan_policy(cm);
    struct cm_hello *h = &e->mine;
    memset(h, 0, sizeof(*h));
    mroce_conn_get_params(e->conn, &h->p);
    cm_check_fill_ours(&pol, h);
    if (!h->modes) /* R-CM-9: none we accept can be applied here */
        return cm_fail(MROCE_EINVAL, "CM: no accepted protection mode is "
                                     "available on this connection");
    h->transport = h->p.transport;
    h->keepalive_ms = cm->attr.no_keepalive   ? 0
                      : cm->attr.keepalive_ms ? cm->attr.keepalive_ms
                                              : CM_KEEPALIVE_DEF_MS;
    h->blob = e->blob;
    h->blob_len = (uint16_t)e->blob_len;
    int err = cm_auth_random(h->nonce, CM_NONCE_LEN);
    if (err)
        return cm_fail(err, "CM: no random bytes for the nonce");
    e->msg = malloc(CM_MSG_MAX);
    if (!e->msg)
        return MROCE_ENOMEM;
    e->msg_len = cm_encode_hello(h, e->msg, CM_MSG_MAX);
    if (e->msg_len < 0)
        return cm_fail(e->msg_len, "CM: our HELLO does not encode");
    if (cm->has_psk) {
        uint8_t *tag = e->msg + e->msg_len - CM_TAG_LEN;
        if (cm_auth_hello_tag(&cm->psk, prefix, plen, e->msg,
                              (size_t)e->msg_len - CM_TAG_LEN, tag))
            return MROCE_ENOMEM;
    }
    return 0;
}

/* The checks that need our connection and the application, after the
 * policy's: transport, blob room, the application's own check. */
static int est_check_local(struct est *e)
{
    const struct cm_hello *p = &e->peer;
    struct mroce_conn_params mine;
    mroce_conn_get_params(e->conn, &mine);
    if (p->transport != mine.transport)
        return est_refuse(e, MROCE_EPROTO, MROCE_CM_REJ_TRANSPORT,
                          "the peer speaks another transport");
    if (p->blob_len > e->cap)
        return est_refuse(e, MROCE_ENOBUFS, MROCE_CM_REJ_LIMIT,
                          "application blob larger than our buffer");
    const struct mroce_cm_attr *a = &e->cm->attr;
    if (a->check_blob && a->check_blob(a->ud, p->blob, p->blob_len))
        return est_refuse(e, MROCE_EPROTO, MROCE_CM_REJ_APP,
                          "the application refused the request");
    if (p->blob_len)
        memcpy(e->peer_blob, p->blob, p->blob_len);
    if (e->peer_len)
        *e->peer_len = p->blob_len;
    return 0;
}

/* The next message must be `type`; a REJECT says why not. */
static int est_expect(struct est *e, int type, struct cm_msg *m)
{
    int err = cm_chan_next(e->cm, e->dl, m);
    if (err && m->rej) { /* R-CM-2: a bad header is answered */
        char why[128];
        snprintf(why, sizeof(why), "%s", mroce_cm_errmsg());
        return cm_chan_reject(e->cm, err, m->rej, 0, why, e->dl);
    }
    if (err)
        return err;
    if (m->h.type == CM_REJECT)
        return cm_chan_got_reject(e->cm, m);
    if (m->h.type != type)
        return cm_chan_unexpected(e->cm, m, cm_type_name(type), e->dl);
    return 0;
}

/* Transcript and, with a key, the session keys (R-CM-10). */
static int est_keys(struct est *e, const uint8_t *hc, size_t lc,
                    const uint8_t *hs, size_t ls)
{
    struct mroce_cm *cm = e->cm;
    int err = cm_auth_transcript(hc, lc, hs, ls, e->th);
    if (!err && cm->ag.psk) {
        const struct cm_hello *c = cm->role ? &e->peer : &e->mine;
        const struct cm_hello *s = cm->role ? &e->mine : &e->peer;
        err = cm_auth_session(&cm->psk, c->nonce, s->nonce, e->th, &cm->ses);
    }
    return err ? est_refuse(e, err, MROCE_CM_REJ_INTERNAL, "key schedule") : 0;
}

/* R-CM-4, R-CM-9: the agreed mode keyed from the connection secret
 * (R-CM-10, R-AEAD-6), then connect with the peer's values; a refusal of
 * either is a REJECT. */
static int est_connect(struct est *e)
{
    struct mroce_cm *cm = e->cm;
    int mode = est_sec_mode(cm->ag.mode);
    int err = mode == MROCE_SEC_NONE
                  ? 0
                  : mroce_conn_set_secret(e->conn, mode, cm->ses.secret,
                                          MROCE_CM_SECRET_LEN);
    if (err)
        return est_refuse(e, err, MROCE_CM_REJ_INTERNAL,
                          "the connection refused the secret");
    err = mroce_conn_connect(e->conn, &e->peer.p);
    if (err)
        return est_refuse(e, err, MROCE_CM_REJ_PARAMS,
                          "mroce_conn_connect refused the values");
    return 0;
}

static int est_send_ready(struct est *e)
{
    struct mroce_cm *cm = e->cm;
    uint8_t mac[CM_TAG_LEN];
    if (cm->ag.psk && cm_auth_ready_mac(&cm->ses, cm->role, e->th, mac))
        return MROCE_ENOMEM;
    uint8_t buf[CM_HDR_LEN + CM_TAG_LEN];
    return cm_chan_send_raw(cm, buf,
                            cm_encode_simple(CM_READY, mac,
                                             cm->ag.psk ? CM_TAG_LEN : 0, buf,
                                             sizeof(buf)),
                            e->dl);
}

/* The peer's READY: empty, or the MAC of its side over the transcript. */
static int est_wait_ready(struct est *e)
{
    struct mroce_cm *cm = e->cm;
    struct cm_msg m;
    int err = est_expect(e, CM_READY, &m);
    if (err)
        return err;
    uint8_t mac[CM_TAG_LEN];
    bool ok = m.len == (cm->ag.psk ? CM_TAG_LEN : 0u);
    if (ok && cm->ag.psk)
        ok = !cm_auth_ready_mac(&cm->ses, !cm->role, e->th, mac) &&
             cm_auth_equal(mac, m.body, CM_TAG_LEN);
    cm_chan_consume(cm, &m);
    if (!ok) {
        cm->cnt.rx_bad_mac++;
        return est_refuse(e, MROCE_EACCES, MROCE_CM_REJ_AUTH,
                          "READY MAC wrong: the exchange was altered");
    }
    return 0;
}

/* Client: sends its HELLO, checks the server's, connects, READYs. */
static int est_client(struct est *e)
{
    struct mroce_cm *cm = e->cm;
    int err = est_hello_build(e, NULL, 0);
    if (!err)
        err = cm_chan_send_raw(cm, e->msg, e->msg_len, e->dl);
    struct cm_msg m;
    if (!err)
        err = est_expect(e, CM_HELLO, &m);
    if (err)
        return err;
    const char *why = "";
    struct cm_policy pol = cm_chan_policy(cm);
    struct cm_verdict v;
    int reason = cm_decode_hello(m.body, m.len, &e->peer, &why)
                     ? (v.why = why, v.detail = 0, MROCE_CM_REJ_MALFORMED)
                     : cm_check_hello(&pol, &e->peer, e->msg,
                                      (size_t)e->msg_len, m.body - CM_HDR_LEN,
                                      CM_HDR_LEN + m.len, &cm->ag, &v);
    if (reason) {
        cm->cnt.rx_bad++;
        v.reason = reason;
        return est_reject(
            e, reason == MROCE_CM_REJ_AUTH ? MROCE_EACCES : MROCE_EPROTO, &v);
    }
    cm->ka_peer_ms = e->peer.keepalive_ms;
    err = est_check_local(e);
    if (!err)
        err = est_keys(e, e->msg, (size_t)e->msg_len, m.body - CM_HDR_LEN,
                       CM_HDR_LEN + m.len);
    cm_chan_consume(cm, &m); /* e->peer's pointers are not used after */
    if (!err)
        err = est_connect(e);
    if (!err)
        err = est_send_ready(e);
    return err ? err : est_wait_ready(e);
}

/* Server: the client's HELLO passed the listener's checks; the local ones
 * run before anything is sent, then HELLO, READY, connect, READY. */
static int est_server(struct est *e)
{
    struct mroce_cm *cm = e->cm;
    const char *why = "";
    if (!cm->hello_peer ||
        cm_decode_hello(cm->hello_peer + CM_HDR_LEN,
                        cm->hello_peer_len - CM_HDR_LEN, &e->peer, &why))
        return cm_fail(MROCE_ESTATE, "CM: no checked HELLO to answer");
    cm->ka_peer_ms = e->peer.keepalive_ms;
    int err = est_check_local(e);
    struct cm_policy pol = cm_chan_policy(cm);
    struct cm_verdict v;
    if (!err && cm_check_mode(&pol, &e->peer, &cm->ag, &v))
        err = est_reject(e, MROCE_EPROTO, &v); /* what the engine can do */
    if (!err)
        err = est_hello_build(e, cm->hello_peer, cm->hello_peer_len);
    if (!err)
        err = cm_chan_send_raw(cm, e->msg, e->msg_len, e->dl);
    if (!err)
        err = est_keys(e, cm->hello_peer, cm->hello_peer_len, e->msg,
                       (size_t)e->msg_len);
    if (!err)
        err = est_wait_ready(e);
    if (!err)
        err = est_connect(e);
    return err ? err : est_send_ready(e);
}

int mroce_cm_establish(struct mroce_cm *cm, struct mroce_conn *conn,
                       const void *blob, size_t blob_len, void *peer_blob,
                       size_t cap, size_t *peer_len, int timeout_ms)
{
    if (!cm || !conn || blob_len > MROCE_CM_MAX_BLOB || (blob_len && !blob) ||
        (cap && !peer_blob))
        return cm_fail(MROCE_EINVAL, "CM establish: bad argument");
    if (cm->established || cm->rejected || cm->broken)
        return cm_fail(MROCE_ESTATE, "CM establish: channel already used");
    cm_set_reject(0);
    struct est *e = calloc(1, sizeof(*e));
    if (!e)
        return MROCE_ENOMEM;
    cm->can = est_engine_modes(conn);
    *e = (struct est){.cm = cm,
                      .conn = conn,
                      .dl = cm_deadline(timeout_ms),
                      .blob = blob,
                      .blob_len = blob_len,
                      .peer_blob = peer_blob,
                      .cap = cap,
                      .peer_len = peer_len};
    int err = cm->role == CM_SERVER ? est_server(e) : est_client(e);
    if (!err) {
        cm->established = true;
        cm->last_rx_ms = cm->last_tx_ms = cm_now_ms();
    }
    free(e->msg);
    cm_auth_wipe(e, sizeof(*e));
    free(e);
    return err;
}
