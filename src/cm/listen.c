/* The listener (R-CM-8, R-CM-13): accepts connectors, holds up to
 * max_pending of them at once until each has sent a whole HELLO or its
 * time is up, checks every HELLO before anything is sent back, and hands
 * out only a client whose HELLO checked out. A connector that sends
 * something else is dropped (with a REJECT if it speaks the CM at all),
 * so garbage, oversized headers, silence or idle connections never keep
 * the real client out. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cm/chan.h"
#include "cm/sock.h"

struct mroce_cm_listener {
    int fd;
    struct mroce_cm_attr attr; /* attr.psk is NULL: the key is in psk */
    struct cm_psk psk;
    bool has_psk;
    struct mroce_cm **pend; /* connectors without a checked HELLO */
    uint32_t n_pend, max_pend;
    struct mroce_cm_listener_counters cnt;
};

static uint32_t lst_max_pending(const struct mroce_cm_attr *a)
{
    uint32_t n = a && a->max_pending ? a->max_pending : CM_PENDING_DEF;
    return n > CM_PENDING_MAX ? CM_PENDING_MAX : n;
}

static int lst_new(const struct mroce_cm_attr *attr,
                   struct mroce_cm_listener **out)
{
    struct mroce_cm_listener *l = calloc(1, sizeof(*l));
    if (!l)
        return MROCE_ENOMEM;
    l->fd = -1;
    *out = l;
    if (attr)
        l->attr = *attr;
    l->attr.psk = NULL;
    l->max_pend = lst_max_pending(attr);
    l->pend = calloc(l->max_pend, sizeof(*l->pend));
    if (!l->pend)
        return MROCE_ENOMEM;
    if (!attr || !attr->psk)
        return 0;
    l->has_psk = true;
    int err = cm_auth_psk(attr->psk, attr->psk_len, &l->psk);
    return err ? cm_fail(err, "CM: pre-shared key of %zu bytes refused",
                         attr->psk_len)
               : 0;
}

int mroce_cm_listen(const char *host, uint16_t port,
                    const struct mroce_cm_attr *attr,
                    struct mroce_cm_listener **out)
{
    if (!out)
        return MROCE_EINVAL;
    *out = NULL;
    struct mroce_cm_listener *l = NULL;
    int err = lst_new(attr, &l);
    if (!err && (l->fd = cm_sock_listen(host, port)) < 0)
        err = l->fd;
    if (err) {
        mroce_cm_listener_close(l);
        return err;
    }
    *out = l;
    return 0;
}

uint16_t mroce_cm_listener_port(const struct mroce_cm_listener *l)
{
    return l ? cm_sock_port(l->fd) : 0;
}

void mroce_cm_listener_get_counters(const struct mroce_cm_listener *l,
                                    struct mroce_cm_listener_counters *out)
{
    if (l && out)
        *out = l->cnt;
}

void mroce_cm_listener_close(struct mroce_cm_listener *l)
{
    if (!l)
        return;
    for (uint32_t i = 0; i < l->n_pend; i++)
        cm_chan_free(l->pend[i]);
    free(l->pend);
    if (l->fd >= 0)
        close(l->fd);
    cm_auth_wipe(&l->psk, sizeof(l->psk));
    free(l);
}

/* ---- Pending connectors ---- */

static void lst_drop(struct mroce_cm_listener *l, uint32_t i)
{
    cm_chan_free(l->pend[i]);
    l->pend[i] = l->pend[--l->n_pend];
}

/* Takes a new connection; the oldest pending one makes room (it had the
 * longest time to speak). */
static void lst_take(struct mroce_cm_listener *l, int fd)
{
    struct mroce_cm *cm;
    struct cm_psk *psk = l->has_psk ? &l->psk : NULL;
    if (cm_chan_new(fd, CM_SERVER, &l->attr, psk, &cm))
        return;
    l->cnt.accepted++;
    int t = l->attr.hello_timeout_ms ? l->attr.hello_timeout_ms
                                     : CM_HELLO_TIMEOUT_DEF_MS;
    cm->hello_deadline = cm_now_ms() + t;
    if (l->n_pend == l->max_pend) {
        uint32_t old = 0;
        for (uint32_t i = 1; i < l->n_pend; i++)
            if (l->pend[i]->hello_deadline < l->pend[old]->hello_deadline)
                old = i;
        lst_drop(l, old);
        l->cnt.evicted++;
    }
    l->pend[l->n_pend++] = cm;
}

static void lst_accept_all(struct mroce_cm_listener *l)
{
    for (;;) {
        int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0 && errno == EINTR)
            continue;
        if (fd < 0)
            return;
        cm_sock_tune(fd);
        lst_take(l, fd);
    }
}

/* R-CM-8: the checks of a whole first message; 0 if it is a HELLO that
 * passed (kept in the channel for establish), else the REJECT sent. */
static int lst_check_hello(struct mroce_cm *cm, const struct cm_msg *m)
{
    int64_t dl = cm_deadline(100);
    if (m->h.type != CM_HELLO)
        return cm_chan_unexpected(cm, m, "HELLO", dl);
    struct cm_hello h;
    struct cm_verdict v = {.reason = MROCE_CM_REJ_MALFORMED};
    struct cm_policy pol = cm_chan_policy(cm);
    const uint8_t *msg = m->body - CM_HDR_LEN;
    size_t len = CM_HDR_LEN + m->len;
    int reason = cm_decode_hello(m->body, m->len, &h, &v.why)
                     ? MROCE_CM_REJ_MALFORMED
                     : cm_check_hello(&pol, &h, NULL, 0, msg, len, &cm->ag, &v);
    if (reason) {
        cm->cnt.rx_bad++;
        v.reason = reason;
        return cm_chan_reject(cm, MROCE_EPROTO, reason, v.detail, v.why, dl);
    }
    cm->hello_peer = malloc(len);
    if (!cm->hello_peer)
        return MROCE_ENOMEM;
    memcpy(cm->hello_peer, msg, len);
    cm->hello_peer_len = len;
    cm_chan_consume(cm, m);
    return 0;
}

enum lst_verdict { LST_WAIT, LST_READY, LST_DROP };

/* Where pending connector cm stands: still waiting, its HELLO checked
 * out, or to be dropped (counted). */
static int lst_judge(struct mroce_cm_listener *l, struct mroce_cm *cm)
{
    while (cm_chan_read(cm))
        ;
    struct cm_msg m;
    int rc = cm_chan_peek(cm, &m);
    if (rc < 0 && m.rej) {
        char why[128];
        snprintf(why, sizeof(why), "%s", mroce_cm_errmsg());
        cm_chan_reject(cm, rc, m.rej, 0, why, cm_deadline(100));
        l->cnt.rejected++;
        return LST_DROP;
    }
    if (rc < 0) { /* not a CM peer: nothing is said to it */
        l->cnt.dropped++;
        return LST_DROP;
    }
    if (rc == 1) {
        if (lst_check_hello(cm, &m) == 0)
            return LST_READY;
        l->cnt.rejected++;
        return LST_DROP;
    }
    if (cm->eof) {
        l->cnt.closed++;
        return LST_DROP;
    }
    if (cm_now_ms() >= cm->hello_deadline) {
        l->cnt.timeouts++;
        return LST_DROP;
    }
    return LST_WAIT;
}

/* Judges every pending connector; hands out the first that is ready. */
static struct mroce_cm *lst_sweep(struct mroce_cm_listener *l)
{
    for (uint32_t i = 0; i < l->n_pend;) {
        struct mroce_cm *cm = l->pend[i];
        int v = lst_judge(l, cm);
        if (v == LST_WAIT) {
            i++;
            continue;
        }
        if (v == LST_READY) {
            l->pend[i] = l->pend[--l->n_pend];
            l->cnt.handed++;
            return cm;
        }
        lst_drop(l, i);
    }
    return NULL;
}

/* Sleeps until the listener or a pending connector is readable, or the
 * earlier of dl and the first pending deadline. */
static void lst_wait(struct mroce_cm_listener *l, int64_t dl)
{
    struct pollfd p[1 + CM_PENDING_MAX];
    int64_t until = dl;
    p[0] = (struct pollfd){.fd = l->fd, .events = POLLIN};
    for (uint32_t i = 0; i < l->n_pend; i++) {
        p[1 + i] = (struct pollfd){.fd = l->pend[i]->fd, .events = POLLIN};
        int64_t t = l->pend[i]->hello_deadline;
        until = until < 0 || t < until ? t : until;
    }
    int rc = poll(p, 1 + l->n_pend, cm_left_ms(until));
    (void)rc; /* EINTR or timeout: the caller sweeps again */
}

int mroce_cm_accept(struct mroce_cm_listener *l, int timeout_ms,
                    struct mroce_cm **out)
{
    if (!l || !out)
        return MROCE_EINVAL;
    *out = NULL;
    int64_t dl = cm_deadline(timeout_ms);
    for (;;) {
        lst_accept_all(l);
        struct mroce_cm *cm = lst_sweep(l);
        if (cm) {
            *out = cm;
            return 0;
        }
        if (dl >= 0 && cm_now_ms() >= dl)
            return cm_fail(MROCE_EAGAIN, "accept: no client in time");
        lst_wait(l, dl);
    }
}
