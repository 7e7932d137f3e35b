/* CM channel: framing over the TCP socket, the HELLO/READY exchange,
 * application messages and liveness (see mroce_cm.h, docs/cm.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cm/msg.h"
#include "cm/sock.h"

struct mroce_cm_listener {
    int fd;
};

struct mroce_cm {
    int fd;
    int eof;    /* the peer's side of the stream ended */
    int broken; /* a malformed message: the stream is out of step */
    size_t rx_len;
    struct mroce_cm_counters cnt;
    uint8_t rx[CM_MSG_MAX];
};

/* One decoded message at the head of the receive buffer. */
struct cm_msg {
    struct cm_hdr h;
    const uint8_t *body;
};

int mroce_cm_listen(const char *host, uint16_t port,
                    struct mroce_cm_listener **out)
{
    if (!out)
        return MROCE_EINVAL;
    *out = NULL;
    struct mroce_cm_listener *l = calloc(1, sizeof(*l));
    if (!l)
        return MROCE_ENOMEM;
    l->fd = cm_sock_listen(host, port);
    if (l->fd < 0) {
        int err = l->fd;
        free(l);
        return err;
    }
    *out = l;
    return 0;
}

uint16_t mroce_cm_listener_port(const struct mroce_cm_listener *l)
{
    return l ? cm_sock_port(l->fd) : 0;
}

void mroce_cm_listener_close(struct mroce_cm_listener *l)
{
    if (!l)
        return;
    close(l->fd);
    free(l);
}

static int cm_wrap(int fd, struct mroce_cm **out)
{
    if (fd < 0)
        return fd;
    struct mroce_cm *cm = calloc(1, sizeof(*cm));
    if (!cm) {
        close(fd);
        return MROCE_ENOMEM;
    }
    cm->fd = fd;
    *out = cm;
    return 0;
}

int mroce_cm_accept(struct mroce_cm_listener *l, int timeout_ms,
                    struct mroce_cm **out)
{
    if (!l || !out)
        return MROCE_EINVAL;
    *out = NULL;
    return cm_wrap(cm_sock_accept(l->fd, timeout_ms), out);
}

int mroce_cm_dial(const char *host, uint16_t port, int timeout_ms,
                  struct mroce_cm **out)
{
    if (!out)
        return MROCE_EINVAL;
    *out = NULL;
    return cm_wrap(cm_sock_dial(host, port, timeout_ms), out);
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

/* ---- Framing ---- */

static int cm_send_raw(struct mroce_cm *cm, const uint8_t *buf, int len,
                       int64_t dl)
{
    if (len < 0)
        return len;
    int err = cm_sock_send_all(cm->fd, buf, (size_t)len, dl);
    if (!err)
        cm->cnt.tx_msgs++;
    return err;
}

static int cm_send_simple(struct mroce_cm *cm, int type, const void *body,
                          size_t len, int64_t dl)
{
    uint8_t buf[CM_HDR_LEN + MROCE_CM_MAX_APP];
    return cm_send_raw(cm, buf,
                       cm_encode_simple(type, body, len, buf, sizeof(buf)), dl);
}

/* Reads what the socket has without blocking: 1 if bytes came, 0 if
 * none (or the buffer is full), and sets eof at end of stream. */
static int cm_read_some(struct mroce_cm *cm)
{
    size_t room = sizeof(cm->rx) - cm->rx_len;
    if (!room || cm->eof)
        return 0;
    ssize_t n = recv(cm->fd, cm->rx + cm->rx_len, room, MSG_DONTWAIT);
    if (n > 0) {
        cm->rx_len += (size_t)n;
        return 1;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
        cm->eof = 1; /* orderly close or reset: the peer is gone */
    return 0;
}

/* The message at offset off of the buffer: 1 complete, 0 not yet, EPROTO
 * if malformed (counted; the stream is out of step from then on). */
static int cm_peek_at(struct mroce_cm *cm, size_t off, struct cm_msg *m)
{
    if (cm->broken)
        return cm_fail(MROCE_EPROTO, "CM stream out of step");
    const char *why = "";
    int rc = cm_hdr_decode(cm->rx + off, cm->rx_len - off, &m->h, &why);
    if (rc == MROCE_EAGAIN)
        return 0;
    if (rc) {
        cm->broken = 1;
        cm->cnt.rx_bad++;
        return cm_fail(MROCE_EPROTO, "CM message: %s", why);
    }
    if (cm->rx_len - off < CM_HDR_LEN + m->h.len)
        return 0;
    m->body = cm->rx + off + CM_HDR_LEN;
    return 1;
}

static void cm_consume(struct mroce_cm *cm, const struct cm_msg *m)
{
    size_t n = CM_HDR_LEN + m->h.len;
    memmove(cm->rx, cm->rx + n, cm->rx_len - n);
    cm->rx_len -= n;
    cm->cnt.rx_msgs++;
}

/* Waits for the next whole message (left at the head of the buffer).
 * ESTATE once the stream ended; a truncated last message is EPROTO. */
static int cm_next(struct mroce_cm *cm, int64_t dl, struct cm_msg *m)
{
    for (;;) {
        int rc = cm_peek_at(cm, 0, m);
        if (rc)
            return rc < 0 ? rc : 0;
        if (cm_read_some(cm))
            continue;
        if (cm->eof && cm->rx_len) {
            cm->cnt.rx_bad++;
            return cm_fail(MROCE_EPROTO, "CM message truncated by close");
        }
        if (cm->eof)
            return cm_fail(MROCE_ESTATE, "CM peer closed the connection");
        if (!cm_sock_wait(cm->fd, dl))
            return cm_fail(MROCE_EAGAIN, "CM: timed out waiting for peer");
    }
}

/* A message that is not the one expected. BYE means the peer left. */
static int cm_unexpected(struct mroce_cm *cm, const struct cm_msg *m,
                         const char *want)
{
    int type = m->h.type;
    cm_consume(cm, m);
    if (type == CM_BYE) {
        cm->eof = 1;
        return cm_fail(MROCE_ESTATE, "CM peer closed (BYE) awaiting %s", want);
    }
    cm->cnt.rx_bad++;
    return cm_fail(MROCE_EPROTO, "CM: got %s, expected %s", cm_type_name(type),
                   want);
}

/* ---- Establishment ---- */

static int cm_reject(struct mroce_cm *cm, int err, const char *reason,
                     int64_t dl)
{
    uint8_t buf[CM_HDR_LEN + 300];
    cm_send_raw(cm, buf, cm_encode_reject(err, reason, buf, sizeof(buf)), dl);
    return err;
}

static int cm_got_reject(struct mroce_cm *cm, const struct cm_msg *m)
{
    int32_t code = 0;
    char text[260] = "";
    cm_decode_reject(m->body, m->h.len, &code, text, sizeof(text));
    cm_consume(cm, m);
    return cm_fail(MROCE_EPROTO, "CM peer rejected: %s (%s)", text,
                   mroce_strerror(code));
}

/* The next message, which must be of `type` (a REJECT says why not). */
static int cm_expect(struct mroce_cm *cm, int64_t dl, int type,
                     const char *name, struct cm_msg *m)
{
    int err = cm_next(cm, dl, m);
    if (err)
        return err;
    if (m->h.type == CM_REJECT)
        return cm_got_reject(cm, m);
    if (m->h.type != type)
        return cm_unexpected(cm, m, name);
    return 0;
}

static int cm_recv_hello(struct mroce_cm *cm, int64_t dl,
                         struct mroce_conn_params *p, void *blob, size_t cap,
                         size_t *blob_len)
{
    struct cm_msg m;
    int err = cm_expect(cm, dl, CM_HELLO, "HELLO", &m);
    if (err)
        return err;
    const uint8_t *b;
    size_t bl = 0;
    const char *why = "";
    err = cm_decode_hello(m.body, m.h.len, p, &b, &bl, &why);
    if (!err && bl > cap)
        err = MROCE_ENOBUFS;
    if (!err && bl)
        memcpy(blob, b, bl);
    cm_consume(cm, &m);
    if (err == MROCE_ENOBUFS)
        return cm_reject(cm, err, "application blob too large", dl);
    if (err) {
        cm->cnt.rx_bad++;
        cm_reject(cm, err, why, dl);
        return cm_fail(err, "CM message: %s", why);
    }
    if (blob_len)
        *blob_len = bl;
    return 0;
}

static int cm_wait_ready(struct mroce_cm *cm, int64_t dl)
{
    struct cm_msg m;
    int err = cm_expect(cm, dl, CM_READY, "READY", &m);
    if (!err)
        cm_consume(cm, &m);
    return err;
}

int mroce_cm_establish(struct mroce_cm *cm, struct mroce_conn *conn,
                       const void *blob, size_t blob_len, void *peer_blob,
                       size_t cap, size_t *peer_len, int timeout_ms)
{
    if (!cm || !conn || blob_len > MROCE_CM_MAX_BLOB || (blob_len && !blob) ||
        (cap && !peer_blob))
        return cm_fail(MROCE_EINVAL, "CM establish: bad argument");
    int64_t dl = cm_deadline(timeout_ms);
    /* ~2 KiB each (QP arrays): [0] ours, [1] the peer's. */
    struct mroce_conn_params *pm = calloc(2, sizeof(*pm));
    if (!pm)
        return MROCE_ENOMEM;
    mroce_conn_get_params(conn, &pm[0]);
    uint8_t *buf = malloc(CM_MSG_MAX);
    int err = buf ? 0 : MROCE_ENOMEM;
    if (!err)
        err = cm_send_raw(
            cm, buf, cm_encode_hello(&pm[0], blob, blob_len, buf, CM_MSG_MAX),
            dl);
    free(buf);
    if (!err)
        err = cm_recv_hello(cm, dl, &pm[1], peer_blob, cap, peer_len);
    if (!err && (err = mroce_conn_connect(conn, &pm[1])))
        cm_reject(cm, err, "peer parameters refused by mroce_conn_connect", dl);
    else if (!err)
        err = cm_send_simple(cm, CM_READY, NULL, 0, dl);
    if (!err)
        err = cm_wait_ready(cm, dl);
    free(pm);
    return err;
}

/* ---- After establishment ---- */

int mroce_cm_send(struct mroce_cm *cm, const void *buf, size_t len)
{
    if (!cm || len > MROCE_CM_MAX_APP || (len && !buf))
        return MROCE_EINVAL;
    return cm_send_simple(cm, CM_APP, buf, len, cm_deadline(5000));
}

int mroce_cm_recv(struct mroce_cm *cm, void *buf, size_t cap, int timeout_ms)
{
    if (!cm || (cap && !buf))
        return MROCE_EINVAL;
    struct cm_msg m;
    int err = cm_next(cm, cm_deadline(timeout_ms), &m);
    if (err)
        return err;
    if (m.h.type != CM_APP)
        return cm_unexpected(cm, &m, "APP");
    int n = (int)m.h.len;
    if (m.h.len > cap)
        n = cm_fail(MROCE_ENOBUFS, "CM: %u-byte message, buffer %zu", m.h.len,
                    cap);
    else if (n)
        memcpy(buf, m.body, (size_t)n);
    cm_consume(cm, &m);
    return n;
}

/* Whether a BYE is among the whole messages buffered. */
static int cm_bye_queued(struct mroce_cm *cm)
{
    struct cm_msg m;
    size_t off = 0;
    int rc;
    while ((rc = cm_peek_at(cm, off, &m)) == 1) {
        if (m.h.type == CM_BYE)
            return 1;
        off += CM_HDR_LEN + m.h.len;
    }
    return rc;
}

int mroce_cm_poll(struct mroce_cm *cm, struct mroce_conn *conn)
{
    if (!cm)
        return MROCE_EINVAL;
    while (cm_read_some(cm))
        ;
    int rc = cm_bye_queued(cm);
    if (rc < 0)
        return rc;
    if (!rc && !cm->eof)
        return 0;
    if (conn && mroce_conn_state(conn) == MROCE_CONN_CONNECTED)
        mroce_conn_disconnect(conn);
    return 1;
}

void mroce_cm_close(struct mroce_cm *cm)
{
    if (!cm)
        return;
    if (!cm->eof)
        cm_send_simple(cm, CM_BYE, NULL, 0, cm_deadline(100));
    shutdown(cm->fd, SHUT_WR);
    close(cm->fd);
    free(cm);
}
