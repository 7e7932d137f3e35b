/* Agent commands on the set-up exchange (capability "cm", R-CM-*): the
 * agent runs mroce's connection manager for one of its connections, as
 * the server (cm_listen: the suite dials it) or the client (cm_dial: the
 * suite listens), in a thread of its own, so that the control channel
 * stays free while the suite plays the other side byte by byte; cm_result
 * reports how it ended; cm_close stops it. After a successful exchange
 * the thread keeps the channel alive (KEEPALIVE, BYE: R-CM-12). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mroce/mroce_cm.h>

#include "agent/agent.h"

struct agent_cm {
    bool used, client;
    struct agent *a;
    int conn;
    struct mroce_cm_attr attr;
    uint8_t psk[MROCE_CM_PSK_MAX];
    struct mroce_cm_listener *l;
    struct mroce_cm *cm;
    char host[64];
    uint16_t port;
    int timeout_ms;
    pthread_t th;
    atomic_bool stop, done, peer_gone;
    int rc, reject;
    char msg[160];
    uint8_t mode;
    int secret;
};

static struct agent_cm agent_cm_one; /* one exchange at a time */

static struct mroce_dp *cm_dp(struct agent_cm *s)
{
    return agent_dp_of_conn(s->a, &s->a->conn[s->conn]);
}

static void cm_sleep_ms(int ms)
{
    struct timespec ts = {0, (long)ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* R-CM-12: after READY, keep the channel: KEEPALIVEs, a BYE or a
 * silent peer disconnect the connection. */
static void cm_keep(struct agent_cm *s)
{
    struct mroce_conn *c = s->a->conn[s->conn].conn;
    uint8_t app[MROCE_CM_MAX_APP];
    while (!atomic_load(&s->stop)) {
        mroce_dp_lock(cm_dp(s));
        int r = mroce_cm_poll(s->cm, c);
        mroce_dp_unlock(cm_dp(s));
        /* an application reads its messages: drain them (the suite's APP
         * messages have no meaning here); one whose tag is wrong ends the
         * channel, as an application closes it on EACCES (R-CM-11) */
        int got;
        while (r == 0 && (got = mroce_cm_recv(s->cm, app, sizeof(app), 0)) >= 0)
            ;
        if (r == 0 && got == MROCE_EACCES)
            r = 1;
        if (r != 0) {
            mroce_cm_close(s->cm);
            s->cm = NULL;
            atomic_store(&s->peer_gone, true);
            return;
        }
        cm_sleep_ms(20);
    }
}

static int cm_accept(struct agent_cm *s)
{
    int rc = MROCE_EAGAIN;
    for (int waited = 0;
         rc == MROCE_EAGAIN && !atomic_load(&s->stop) && waited < s->timeout_ms;
         waited += 100)
        rc = mroce_cm_accept(s->l, 100, &s->cm);
    return rc;
}

static void *cm_main(void *arg)
{
    struct agent_cm *s = arg;
    int rc = s->client ? mroce_cm_dial(s->host, s->port, s->timeout_ms,
                                       &s->attr, &s->cm)
                       : cm_accept(s);
    if (rc == 0) {
        static uint8_t blob[MROCE_CM_MAX_BLOB];
        size_t blob_len;
        mroce_dp_lock(cm_dp(s));
        rc = mroce_cm_establish(s->cm, s->a->conn[s->conn].conn, NULL, 0, blob,
                                sizeof(blob), &blob_len, s->timeout_ms);
        mroce_dp_unlock(cm_dp(s));
    }
    s->rc = rc;
    s->reject = mroce_cm_reject_reason();
    snprintf(s->msg, sizeof(s->msg), "%s", mroce_cm_errmsg());
    if (rc == 0) {
        s->secret = mroce_cm_security(s->cm, &s->mode, NULL);
    } else { /* a failed set-up: the application closes the channel */
        mroce_cm_close(s->cm);
        s->cm = NULL;
    }
    atomic_store(&s->done, true);
    if (rc == 0)
        cm_keep(s);
    return NULL;
}

static void cm_stop(struct agent_cm *s)
{
    if (!s->used)
        return;
    atomic_store(&s->stop, true);
    pthread_join(s->th, NULL);
    mroce_cm_close(s->cm);
    mroce_cm_listener_close(s->l);
    memset(s, 0, sizeof(*s));
}

static bool cm_attr(json_t *req, struct agent_cm *s)
{
    int64_t hello, keep, to;
    const char *psk = agent_get_str(req, "psk", NULL);
    json_t *modes = json_object_get(req, "modes");
    if (!agent_get_int(req, "hello_timeout_ms", 0, 0, 60000, &hello) ||
        !agent_get_int(req, "keepalive_ms", 0, 0, 65535, &keep) ||
        !agent_get_int(req, "timeout_ms", 5000, 1, 60000, &to))
        return false;
    s->attr.hello_timeout_ms = (int)hello;
    s->attr.keepalive_ms = (uint16_t)keep;
    s->attr.no_keepalive = json_is_true(json_object_get(req, "no_keepalive"));
    s->attr.allow_any = json_is_true(json_object_get(req, "allow_any"));
    s->timeout_ms = (int)to;
    size_t i;
    json_t *v;
    json_array_foreach(modes, i, v)
    {
        const char *m = json_string_value(v);
        s->attr.modes |= !m                   ? 0
                         : !strcmp(m, "none") ? MROCE_CM_MODE_NONE
                         : !strcmp(m, "auth") ? MROCE_CM_MODE_AUTH
                         : !strcmp(m, "enc")  ? MROCE_CM_MODE_ENC
                                              : 0;
    }
    if (psk) {
        long n = agent_unhex(psk, s->psk, sizeof(s->psk));
        if (n < MROCE_CM_PSK_MIN)
            return false;
        s->attr.psk = s->psk;
        s->attr.psk_len = (size_t)n;
    }
    return true;
}

static json_t *cm_start(struct agent *a, json_t *req, bool client)
{
    json_t *err;
    struct agent_conn *c = agent_conn_get(a, req, &err);
    if (!c)
        return err;
    struct agent_cm *s = &agent_cm_one;
    cm_stop(s);
    *s = (struct agent_cm){
        .used = true, .client = client, .a = a, .conn = (int)(c - a->conn)};
    if (!cm_attr(req, s)) {
        s->used = false;
        return agent_err("invalid", "bad cm attributes");
    }
    int rc = 0;
    if (client) {
        int64_t port;
        const char *host = agent_get_str(req, "host", NULL);
        if (!host || !agent_get_int(req, "port", 0, 1, 65535, &port)) {
            s->used = false;
            return agent_err("invalid", "cm_dial needs host and port");
        }
        snprintf(s->host, sizeof(s->host), "%s", host);
        s->port = (uint16_t)port;
    } else {
        rc = mroce_cm_listen(a->o.ip, 0, &s->attr, &s->l);
    }
    if (rc == 0 && pthread_create(&s->th, NULL, cm_main, s) != 0)
        rc = MROCE_ENOMEM;
    if (rc < 0) {
        mroce_cm_listener_close(s->l);
        s->used = false;
        return agent_err_rc(rc, "cm");
    }
    return json_pack("{s:b, s:i}", "ok", 1, "port",
                     client ? 0 : mroce_cm_listener_port(s->l));
}

json_t *agent_cmd_cm_listen(struct agent *a, json_t *req)
{
    return cm_start(a, req, false);
}

json_t *agent_cmd_cm_dial(struct agent *a, json_t *req)
{
    return cm_start(a, req, true);
}

static const char *cm_mode_name(uint8_t m)
{
    return m == MROCE_CM_MODE_ENC    ? "enc"
           : m == MROCE_CM_MODE_AUTH ? "auth"
                                     : "none";
}

json_t *agent_cmd_cm_result(struct agent *a, json_t *req)
{
    (void)a;
    (void)req;
    struct agent_cm *s = &agent_cm_one;
    if (!s->used)
        return agent_err("state", "no exchange running");
    json_t *o =
        json_pack("{s:b, s:b, s:b}", "ok", 1, "done", atomic_load(&s->done),
                  "peer_gone", atomic_load(&s->peer_gone));
    if (s->l) {
        struct mroce_cm_listener_counters k;
        mroce_cm_listener_get_counters(s->l, &k);
        json_object_set_new(
            o, "listener",
            json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "accepted",
                      (json_int_t)k.accepted, "handed", (json_int_t)k.handed,
                      "rejected", (json_int_t)k.rejected, "dropped",
                      (json_int_t)k.dropped, "timeouts", (json_int_t)k.timeouts,
                      "evicted", (json_int_t)k.evicted, "closed",
                      (json_int_t)k.closed));
    }
    if (atomic_load(&s->done))
        json_object_update_new(
            o, json_pack("{s:s, s:i, s:s, s:s, s:b}", "result",
                         s->rc ? agent_err_code(s->rc) : "ok", "reject",
                         s->reject, "message", s->msg, "mode",
                         cm_mode_name(s->mode), "secret", s->secret == 1));
    return o;
}

json_t *agent_cmd_cm_close(struct agent *a, json_t *req)
{
    (void)a;
    (void)req;
    cm_stop(&agent_cm_one);
    return agent_ok();
}

void agent_cm_stop_all(void)
{
    cm_stop(&agent_cm_one);
}
