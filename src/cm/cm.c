/* CM channel: framing over the TCP socket, the tags of messages after
 * set-up, application messages and liveness (R-CM-2, R-CM-11, R-CM-12;
 * see mroce_cm.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cm/chan.h"
#include "cm/sock.h"

/* ---- Channel objects ---- */

int cm_chan_new(int fd, int role, const struct mroce_cm_attr *attr,
                const struct cm_psk *psk, struct mroce_cm **out)
{
    if (fd < 0)
        return fd;
    struct mroce_cm *cm = calloc(1, sizeof(*cm));
    if (!cm) {
        close(fd);
        return MROCE_ENOMEM;
    }
    cm->fd = fd;
    cm->role = role;
    if (attr)
        cm->attr = *attr;
    cm->attr.psk = NULL; /* the caller's buffer; the key lives in psk */
    if (psk) {
        cm->psk = *psk;
        cm->has_psk = true;
    }
    cm_sock_peer_addr(fd, &cm->tcp_peer);
    cm->last_rx_ms = cm->last_tx_ms = cm_now_ms();
    *out = cm;
    return 0;
}

void cm_chan_free(struct mroce_cm *cm)
{
    if (!cm)
        return;
    close(cm->fd);
    free(cm->hello_peer);
    cm_auth_wipe(&cm->psk, sizeof(cm->psk));
    cm_auth_wipe(&cm->ses, sizeof(cm->ses));
    free(cm);
}

struct cm_policy cm_chan_policy(const struct mroce_cm *cm)
{
    return (struct cm_policy){.attr = &cm->attr,
                              .psk = cm->has_psk ? &cm->psk : NULL,
                              .tcp_peer = cm->tcp_peer,
                              .can = cm->can};
}

int mroce_cm_dial(const char *host, uint16_t port, int timeout_ms,
                  const struct mroce_cm_attr *attr, struct mroce_cm **out)
{
    if (!out)
        return MROCE_EINVAL;
    *out = NULL;
    struct cm_psk psk;
    if (attr && attr->psk) {
        int err = cm_auth_psk(attr->psk, attr->psk_len, &psk);
        if (err)
            return cm_fail(err, "CM: pre-shared key of %zu bytes refused",
                           attr->psk_len);
    }
    int err = cm_chan_new(cm_sock_dial(host, port, timeout_ms), CM_CLIENT, attr,
                          attr && attr->psk ? &psk : NULL, out);
    cm_auth_wipe(&psk, sizeof(psk));
    return err;
}

int mroce_cm_local_ip(const struct mroce_cm *cm, char *buf, size_t cap)
{
    return cm && buf ? cm_sock_ip(cm->fd, 0, buf, cap) : MROCE_EINVAL;
}

int mroce_cm_peer_ip(const struct mroce_cm *cm, char *buf, size_t cap)
{
    return cm && buf ? cm_sock_ip(cm->fd, 1, buf, cap) : MROCE_EINVAL;
}

int mroce_cm_fd(const struct mroce_cm *cm)
{
    return cm ? cm->fd : -1;
}

void mroce_cm_get_counters(const struct mroce_cm *cm,
                           struct mroce_cm_counters *out)
{
    if (cm && out)
        *out = cm->cnt;
}

int mroce_cm_security(const struct mroce_cm *cm, uint8_t *mode, uint8_t *secret)
{
    if (!cm)
        return MROCE_EINVAL;
    if (!cm->established)
        return MROCE_ESTATE;
    if (mode)
        *mode = cm->ag.mode;
    if (secret && cm->ag.psk)
        memcpy(secret, cm->ses.secret, MROCE_CM_SECRET_LEN);
    return cm->ag.psk ? 1 : 0;
}

/* ---- Framing ---- */

int cm_chan_send_raw(struct mroce_cm *cm, const uint8_t *buf, int len,
                     int64_t dl)
{
    if (len < 0)
        return len;
    int err = cm_sock_send_all(cm->fd, buf, (size_t)len, dl);
    if (!err) {
        cm->cnt.tx_msgs++;
        cm->last_tx_ms = cm_now_ms();
    }
    return err;
}

/* R-CM-11: after set-up with a key, every message ends with a tag over
 * its sequence number, header and payload. */
int cm_chan_send(struct mroce_cm *cm, int type, const void *body, size_t len,
                 int64_t dl)
{
    uint8_t buf[CM_HDR_LEN + MROCE_CM_MAX_APP + CM_TAG_LEN];
    bool tag = cm->established && cm->ag.psk;
    if (len > MROCE_CM_MAX_APP)
        return MROCE_EINVAL;
    size_t full = len + (tag ? CM_MSG_TAG_LEN : 0);
    cm_hdr_put(buf, type, full);
    if (len)
        memcpy(buf + CM_HDR_LEN, body, len);
    if (tag && cm_auth_msg_tag(&cm->ses, cm->role, cm->seq_tx++, buf,
                               buf + CM_HDR_LEN, len, buf + CM_HDR_LEN + len))
        return MROCE_ENOMEM;
    return cm_chan_send_raw(cm, buf, (int)(CM_HDR_LEN + full), dl);
}

int cm_chan_read(struct mroce_cm *cm)
{
    size_t room = sizeof(cm->rx) - cm->rx_len;
    if (!room || cm->eof)
        return 0;
    ssize_t n = recv(cm->fd, cm->rx + cm->rx_len, room, MSG_DONTWAIT);
    if (n > 0) {
        cm->rx_len += (size_t)n;
        cm->last_rx_ms = cm_now_ms(); /* R-CM-12: any byte shows life */
        return 1;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
        cm->eof = true; /* orderly close or reset: the peer is gone */
    return 0;
}

static int cm_peek_at(struct mroce_cm *cm, size_t off, struct cm_msg *m)
{
    m->rej = 0;
    if (cm->broken)
        return cm_fail(MROCE_EPROTO, "CM stream out of step");
    const char *why = "";
    int rc =
        cm_hdr_decode(cm->rx + off, cm->rx_len - off, &m->h, &why, &m->rej);
    if (rc == MROCE_EAGAIN)
        return 0;
    if (rc) {
        cm->broken = true;
        cm->cnt.rx_bad++;
        return cm_fail(MROCE_EPROTO, "CM message: %s", why);
    }
    if (cm->rx_len - off < CM_HDR_LEN + m->h.len)
        return 0;
    m->body = cm->rx + off + CM_HDR_LEN;
    m->len = m->h.len;
    return 1;
}

int cm_chan_peek(struct mroce_cm *cm, struct cm_msg *m)
{
    return cm_peek_at(cm, 0, m);
}

void cm_chan_consume(struct mroce_cm *cm, const struct cm_msg *m)
{
    size_t n = CM_HDR_LEN + m->h.len;
    memmove(cm->rx, cm->rx + n, cm->rx_len - n);
    cm->rx_len -= n;
    cm->cnt.rx_msgs++;
}

/* R-CM-11: checks and strips the tag of a message after set-up. */
static int cm_untag(struct mroce_cm *cm, struct cm_msg *m)
{
    bool tag = cm->established && cm->ag.psk;
    uint32_t want = tag ? CM_MSG_TAG_LEN : 0;
    if (m->h.len < want ||
        ((m->h.type == CM_BYE || m->h.type == CM_KEEPALIVE) &&
         m->h.len != want)) {
        cm->broken = true;
        cm->cnt.rx_bad++;
        return cm_fail(MROCE_EPROTO, "CM: %s of %u bytes",
                       cm_type_name(m->h.type), m->h.len);
    }
    m->len = m->h.len - want;
    if (!tag)
        return 0;
    uint8_t t[CM_MSG_TAG_LEN];
    if (cm_auth_msg_tag(&cm->ses, !cm->role, cm->seq_rx, m->body - CM_HDR_LEN,
                        m->body, m->len, t) ||
        !cm_auth_equal(t, m->body + m->len, CM_MSG_TAG_LEN)) {
        cm->broken = true;
        cm->cnt.rx_bad_mac++;
        shutdown(cm->fd, SHUT_RDWR); /* R-CM-11: no longer the peer's */
        return cm_fail(MROCE_EACCES, "CM: %s with a wrong MAC",
                       cm_type_name(m->h.type));
    }
    cm->seq_rx++;
    return 0;
}

/* ---- Liveness (R-CM-12) ---- */

static int cm_ka_ms(const struct mroce_cm *cm)
{
    if (cm->attr.no_keepalive)
        return 0;
    return cm->attr.keepalive_ms ? cm->attr.keepalive_ms : CM_KEEPALIVE_DEF_MS;
}

/* Sends our KEEPALIVE when due; 0, or ESTATE once the peer has been
 * silent for MROCE_CM_DEAD_FACTOR of its intervals. */
static int cm_tick(struct mroce_cm *cm)
{
    if (!cm->established || cm->eof)
        return 0;
    int64_t now = cm_now_ms();
    int ka = cm_ka_ms(cm);
    if (ka && now - cm->last_tx_ms >= ka &&
        !cm_chan_send(cm, CM_KEEPALIVE, NULL, 0, now + 100))
        cm->cnt.tx_keepalive++;
    if (cm->rx_len == sizeof(cm->rx)) /* unread messages: it is alive */
        cm->last_rx_ms = now;
    int64_t dead = (int64_t)cm->ka_peer_ms * MROCE_CM_DEAD_FACTOR;
    if (cm->ka_peer_ms && now - cm->last_rx_ms > dead)
        return cm_fail(MROCE_ESTATE, "CM peer silent for %lld ms",
                       (long long)(now - cm->last_rx_ms));
    return 0;
}

/* The deadline of one wait: the caller's, or our next KEEPALIVE. */
static int64_t cm_wait_until(const struct mroce_cm *cm, int64_t dl)
{
    int ka = cm_ka_ms(cm);
    if (!cm->established || !ka)
        return dl;
    int64_t due = cm->last_tx_ms + ka;
    if (cm->ka_peer_ms) {
        int64_t dead =
            cm->last_rx_ms + (int64_t)cm->ka_peer_ms * MROCE_CM_DEAD_FACTOR + 1;
        due = dead < due ? dead : due;
    }
    return dl < 0 || due < dl ? due : dl;
}

/* A whole message, KEEPALIVEs skipped: 1, 0 none buffered, or an error. */
static int cm_take(struct mroce_cm *cm, struct cm_msg *m)
{
    for (;;) {
        int rc = cm_chan_peek(cm, m);
        if (rc <= 0)
            return rc;
        if (cm->established && (rc = cm_untag(cm, m)))
            return rc;
        if (m->h.type != CM_KEEPALIVE)
            return 1;
        cm->cnt.rx_keepalive++;
        cm_chan_consume(cm, m);
    }
}

/* The KEEPALIVEs at the head of the buffer, taken without touching the
 * message behind them (poll leaves that for recv). */
static int cm_skip_keepalives(struct mroce_cm *cm)
{
    struct cm_msg m;
    int rc;
    while ((rc = cm_chan_peek(cm, &m)) == 1 && m.h.type == CM_KEEPALIVE) {
        if (cm->established && (rc = cm_untag(cm, &m)))
            return rc;
        cm->cnt.rx_keepalive++;
        cm_chan_consume(cm, &m);
    }
    return rc < 0 ? rc : 0;
}

int cm_chan_next(struct mroce_cm *cm, int64_t dl, struct cm_msg *m)
{
    for (;;) {
        int rc = cm_take(cm, m);
        if (rc)
            return rc < 0 ? rc : 0;
        if (cm_chan_read(cm))
            continue;
        if (cm->eof && cm->rx_len) {
            cm->cnt.rx_bad++;
            return cm_fail(MROCE_EPROTO, "CM message truncated by close");
        }
        if (cm->eof)
            return cm_fail(MROCE_ESTATE, "CM peer closed the connection");
        if ((rc = cm_tick(cm)))
            return rc;
        if (dl >= 0 && cm_now_ms() >= dl)
            return cm_fail(MROCE_EAGAIN, "CM: timed out waiting for peer");
        cm_sock_wait(cm->fd, cm_wait_until(cm, dl));
    }
}

int cm_chan_reject(struct mroce_cm *cm, int err, int reason, uint32_t detail,
                   const char *why, int64_t dl)
{
    uint8_t buf[CM_HDR_LEN + CM_REJECT_FIXED + CM_REJECT_MAX_TEXT];
    cm_chan_send_raw(
        cm, buf,
        cm_encode_reject((uint16_t)reason, detail, why, buf, sizeof(buf)), dl);
    cm->rejected = true;
    cm_set_reject(reason);
    return cm_fail(err, "CM: refused the peer (%s): %s",
                   mroce_cm_reject_str(reason), why);
}

int cm_chan_got_reject(struct mroce_cm *cm, const struct cm_msg *m)
{
    struct cm_reject r;
    memset(&r, 0, sizeof(r));
    cm_decode_reject(m->body, m->len, &r);
    cm_chan_consume(cm, m);
    cm->rejected = true;
    cm_set_reject(r.reason);
    return cm_fail(r.reason == MROCE_CM_REJ_AUTH ? MROCE_EACCES : MROCE_EPROTO,
                   "CM peer rejected us (%s, detail %u): %s",
                   mroce_cm_reject_str(r.reason), r.detail, r.text);
}

/* R-CM-4: a message out of sequence gets REJECT UNEXPECTED; a BYE after
 * set-up (R-CM-3) means the peer left. */
int cm_chan_unexpected(struct mroce_cm *cm, const struct cm_msg *m,
                       const char *want, int64_t dl)
{
    int type = m->h.type;
    cm_chan_consume(cm, m);
    if (type == CM_BYE && cm->established) {
        cm->eof = true;
        return cm_fail(MROCE_ESTATE, "CM peer closed (BYE) awaiting %s", want);
    }
    cm->cnt.rx_bad++;
    char why[64];
    snprintf(why, sizeof(why), "got %s, expected %s", cm_type_name(type), want);
    return cm_chan_reject(cm, MROCE_EPROTO, MROCE_CM_REJ_UNEXPECTED,
                          (uint32_t)type, why, dl);
}

/* ---- After set-up ---- */

int mroce_cm_send(struct mroce_cm *cm, const void *buf, size_t len)
{
    if (!cm || len > MROCE_CM_MAX_APP || (len && !buf))
        return MROCE_EINVAL;
    if (!cm->established)
        return cm_fail(MROCE_ESTATE, "CM: send before establish");
    return cm_chan_send(cm, CM_APP, buf, len, cm_deadline(5000));
}

int mroce_cm_recv(struct mroce_cm *cm, void *buf, size_t cap, int timeout_ms)
{
    if (!cm || (cap && !buf))
        return MROCE_EINVAL;
    if (!cm->established)
        return cm_fail(MROCE_ESTATE, "CM: recv before establish");
    struct cm_msg m;
    int err = cm_chan_next(cm, cm_deadline(timeout_ms), &m);
    if (err)
        return err;
    if (m.h.type != CM_APP)
        return cm_chan_unexpected(cm, &m, "APP", cm_deadline(100));
    int n = (int)m.len;
    if (m.len > cap)
        n = cm_fail(MROCE_ENOBUFS, "CM: %u-byte message, buffer %zu", m.len,
                    cap);
    else if (n)
        memcpy(buf, m.body, (size_t)n);
    cm_chan_consume(cm, &m);
    return n;
}

/* R-CM-11: a BYE counts only with the tag of its place in the sequence
 * (seq_rx + the messages buffered before it). */
static int cm_bye_ok(struct mroce_cm *cm, const struct cm_msg *m, uint64_t k)
{
    if (!cm->established || !cm->ag.psk)
        return m->h.len == 0 ? 1 : cm_fail(MROCE_EPROTO, "CM: BYE with a body");
    uint8_t t[CM_MSG_TAG_LEN];
    if (m->h.len == CM_MSG_TAG_LEN &&
        !cm_auth_msg_tag(&cm->ses, !cm->role, cm->seq_rx + k,
                         m->body - CM_HDR_LEN, m->body, 0, t) &&
        cm_auth_equal(t, m->body, CM_MSG_TAG_LEN))
        return 1;
    cm->broken = true;
    cm->cnt.rx_bad_mac++;
    return cm_fail(MROCE_EACCES, "CM: BYE with a wrong MAC");
}

/* Whether a BYE is among the whole messages buffered. Messages before it
 * stay for mroce_cm_recv; their tags are checked when it takes them. */
static int cm_bye_queued(struct mroce_cm *cm)
{
    struct cm_msg m;
    size_t off = 0;
    int rc;
    for (uint64_t k = 0; (rc = cm_peek_at(cm, off, &m)) == 1; k++) {
        if (m.h.type == CM_BYE)
            return cm_bye_ok(cm, &m, k);
        off += CM_HDR_LEN + m.h.len;
    }
    return rc;
}

int mroce_cm_poll(struct mroce_cm *cm, struct mroce_conn *conn)
{
    if (!cm)
        return MROCE_EINVAL;
    while (cm_chan_read(cm))
        ;
    int rc = cm_skip_keepalives(cm);
    if (!rc)
        rc = cm_bye_queued(cm);
    if (rc < 0)
        return rc;
    if (!rc && !cm->eof && cm_tick(cm) == 0)
        return 0;
    if (conn && mroce_conn_state(conn) == MROCE_CONN_CONNECTED)
        mroce_conn_disconnect(conn);
    return 1;
}

void mroce_cm_close(struct mroce_cm *cm)
{
    if (!cm)
        return;
    if (cm->established && !cm->eof && !cm->broken)
        cm_chan_send(cm, CM_BYE, NULL, 0, cm_deadline(100));
    shutdown(cm->fd, SHUT_WR);
    cm_chan_free(cm);
}
