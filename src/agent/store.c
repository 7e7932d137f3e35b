/* Handle tables of the agent: contexts, connections and memory regions
 * are named on the wire by small integers (index + 1). */
#include <stdlib.h>

#include "agent/agent.h"

#define STORE_NEW(arr, n)                                                      \
    do {                                                                       \
        for (int i = 0; i < (n); i++)                                          \
            if (!(arr)[i].used) {                                              \
                (arr)[i] = (__typeof__((arr)[i])){.used = true};               \
                return i;                                                      \
            }                                                                  \
        return -1;                                                             \
    } while (0)

int agent_ctx_new(struct agent *a)
{
    STORE_NEW(a->ctx, AGENT_MAX_CTX);
}

int agent_conn_new(struct agent *a)
{
    STORE_NEW(a->conn, AGENT_MAX_CONN);
}

int agent_mr_new(struct agent *a)
{
    STORE_NEW(a->mr, AGENT_MAX_MR);
}

/* The handle in field `key`, as an index, or -1. */
static int store_index(json_t *req, const char *key, int n)
{
    int64_t h;
    if (!agent_get_int(req, key, 0, 1, n, &h) || h == 0)
        return -1;
    return (int)h - 1;
}

struct agent_ctx *agent_ctx_get(struct agent *a, json_t *req, json_t **err)
{
    int i = store_index(req, "ctx", AGENT_MAX_CTX);
    if (i < 0 || !a->ctx[i].used) {
        *err = agent_err("not_found", "no such context");
        return NULL;
    }
    return &a->ctx[i];
}

struct agent_conn *agent_conn_get(struct agent *a, json_t *req, json_t **err)
{
    int i = store_index(req, "conn", AGENT_MAX_CONN);
    if (i < 0 || !a->conn[i].used) {
        *err = agent_err("not_found", "no such connection");
        return NULL;
    }
    return &a->conn[i];
}

struct agent_mr *agent_mr_get(struct agent *a, json_t *req, json_t **err)
{
    int i = store_index(req, "mr", AGENT_MAX_MR);
    if (i < 0 || !a->mr[i].used) {
        *err = agent_err("not_found", "no such memory region");
        return NULL;
    }
    return &a->mr[i];
}

void agent_conn_free(struct agent *a, int h)
{
    agent_cm_stop_all();
    struct agent_conn *c = &a->conn[h];
    struct mroce_dp *dp = a->ctx[c->ctx].dp;
    mroce_dp_lock(dp);
    mroce_conn_destroy(c->conn);
    mroce_cq_destroy(c->scq);
    mroce_cq_destroy(c->rcq);
    mroce_dp_unlock(dp);
    c->used = false;
}

/* The datapath's destruction closes the context and everything in it;
 * the regions' memory is ours and goes last. */
void agent_ctx_free(struct agent *a, int h)
{
    agent_cm_stop_all(); /* its thread may use a connection of this ctx */
    for (int i = 0; i < AGENT_MAX_CONN; i++)
        if (a->conn[i].used && a->conn[i].ctx == h)
            a->conn[i].used = false;
    mroce_dp_destroy(a->ctx[h].dp);
    for (int i = 0; i < AGENT_MAX_MR; i++) {
        if (a->mr[i].used && a->mr[i].ctx == h) {
            free(a->mr[i].buf);
            a->mr[i].used = false;
        }
    }
    a->ctx[h].used = false;
}

void agent_free_all(struct agent *a)
{
    for (int i = 0; i < AGENT_MAX_CTX; i++)
        if (a->ctx[i].used)
            agent_ctx_free(a, i);
}
