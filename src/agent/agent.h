/* mroce-agent: the target adapter of the compliance suite. A small server
 * that drives one mroce engine per context over a real datapath (UDP
 * sockets or DPDK) on behalf of a remote test driver, speaking the
 * line-delimited JSON control protocol of docs/conformance.md.
 *
 * Layout: server.c (listening socket, one request line in, one reply line
 * out), store.c (handle tables: contexts, connections, memory regions),
 * cmd_ctx.c (hello, contexts, memory, faults), cmd_conn.c (connections,
 * work requests, completions, counters, paths), json.c (field readers). */
#ifndef MROCE_AGENT_AGENT_H
#define MROCE_AGENT_AGENT_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include <mroce/mroce.h>
#include <mroce/mroce_dp.h>

#define AGENT_PROTOCOL 1
#define AGENT_MAX_CTX 16
#define AGENT_MAX_CONN 1024
#define AGENT_MAX_MR 1024
#define AGENT_MAX_MR_LEN (64u << 20) /* bytes one region may have */
#define AGENT_MAX_LINE (4u << 20)    /* longest request line */

struct agent_opts {
    const char *listen;    /* "HOST:PORT" (TCP) or "unix:PATH" */
    const char *port_file; /* where the bound TCP port is written */
    int dp_kind;           /* MROCE_DP_UDP or MROCE_DP_DPDK */
    const char *ip;        /* local address of every context [127.0.0.1] */
    const char *fault;     /* a fault of the engine's table, set on every
                              context (mutation runs), or NULL */
    const char *dpdk_port; /* DPDK: ethdev name, or NULL for the first */
    struct mroce_dp_neigh neigh[8]; /* DPDK: static neighbours (--neigh) */
    int n_neigh;
    int eal_argc; /* DPDK: EAL arguments, argv[0] included */
    char **eal_argv;
    bool once;    /* serve one client, then exit */
    bool verbose; /* log every request and reply to stderr */
};

struct agent_ctx {
    bool used;
    struct mroce_dp *dp;
    struct mroce_ctx *ctx;
    struct mroce_pd *pd;
    char addr[64];
    uint16_t port;
};

struct agent_conn {
    bool used;
    int ctx;
    struct mroce_conn *conn;
    struct mroce_cq *scq, *rcq;
};

struct agent_mr {
    bool used;
    int ctx;
    uint8_t *buf; /* the agent's memory, freed with its context */
    uint64_t len;
    struct mroce_mr *mr; /* NULL once deregistered */
};

struct agent {
    struct agent_opts o;
    int fault_id; /* engine fault set on every context; 0: none */
    struct agent_ctx ctx[AGENT_MAX_CTX];
    struct agent_conn conn[AGENT_MAX_CONN];
    struct agent_mr mr[AGENT_MAX_MR];
    bool quit;
};

/* Serves clients until a "quit" request (or, with o->once, the end of
 * the first client). Returns a process exit status. */
int agent_run(const struct agent_opts *o);

/* Handles one request object; returns the reply (never NULL). */
json_t *agent_handle(struct agent *a, json_t *req);

/* ---- errors: the protocol's codes (docs/conformance.md) ---- */

json_t *agent_err(const char *code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The code of a negative MROCE_E* value. */
const char *agent_err_code(int rc);
json_t *agent_err_rc(int rc, const char *what);
json_t *agent_ok(void);

/* ---- request fields (json.c) ---- */

/* Integer field `key`, or `def` when absent; false if present but not an
 * integer or outside [lo, hi]. */
bool agent_get_int(json_t *req, const char *key, int64_t def, int64_t lo,
                   int64_t hi, int64_t *out);
/* Unsigned 64-bit field (JSON integer, or "0x..." string). */
bool agent_get_u64(json_t *req, const char *key, uint64_t def, uint64_t *out);
const char *agent_get_str(json_t *req, const char *key, const char *def);
/* Hex <-> bytes; agent_unhex returns the length or -1. */
char *agent_hex(const uint8_t *p, size_t n);
long agent_unhex(const char *s, uint8_t *out, size_t cap);

/* ---- handles (store.c) ---- */

struct agent_ctx *agent_ctx_get(struct agent *a, json_t *req, json_t **err);
struct agent_conn *agent_conn_get(struct agent *a, json_t *req, json_t **err);
struct agent_mr *agent_mr_get(struct agent *a, json_t *req, json_t **err);
int agent_ctx_new(struct agent *a);
int agent_conn_new(struct agent *a);
int agent_mr_new(struct agent *a);
/* Destroys a context with its connections and regions. */
void agent_ctx_free(struct agent *a, int h);
void agent_conn_free(struct agent *a, int h);
void agent_free_all(struct agent *a);
static inline struct mroce_dp *agent_dp_of_conn(struct agent *a,
                                                const struct agent_conn *c)
{
    return a->ctx[c->ctx].dp;
}

/* ---- command handlers ---- */

typedef json_t *(*agent_cmd_fn)(struct agent *a, json_t *req);
json_t *agent_cmd_hello(struct agent *a, json_t *req);
json_t *agent_cmd_ctx_open(struct agent *a, json_t *req);
json_t *agent_cmd_ctx_close(struct agent *a, json_t *req);
json_t *agent_cmd_ctx_counters(struct agent *a, json_t *req);
json_t *agent_cmd_mr_reg(struct agent *a, json_t *req);
json_t *agent_cmd_mr_dereg(struct agent *a, json_t *req);
json_t *agent_cmd_mem_write(struct agent *a, json_t *req);
json_t *agent_cmd_mem_read(struct agent *a, json_t *req);
/* Why an agent linked with libmroce alone refuses a "fault" request
 * (unsupported) and lists no faults in its hello: only the fault variant of
 * the engine has the fault table (src/engine/fault.h). */
#define AGENT_NO_FAULTS                                                        \
    "this agent's engine carries no fault checks (linked with libmroce, "      \
    "not the fault variant mroce_engine_faults)"
json_t *agent_cmd_fault(struct agent *a, json_t *req);
json_t *agent_cmd_conn_create(struct agent *a, json_t *req);
json_t *agent_cmd_conn_connect(struct agent *a, json_t *req);
json_t *agent_cmd_conn_state(struct agent *a, json_t *req);
json_t *agent_cmd_conn_disconnect(struct agent *a, json_t *req);
json_t *agent_cmd_conn_destroy(struct agent *a, json_t *req);
json_t *agent_cmd_conn_counters(struct agent *a, json_t *req);
json_t *agent_cmd_post(struct agent *a, json_t *req);
json_t *agent_cmd_poll(struct agent *a, json_t *req);
json_t *agent_cmd_path_info(struct agent *a, json_t *req);
json_t *agent_cmd_path_repath(struct agent *a, json_t *req);
json_t *agent_cmd_path_enable(struct agent *a, json_t *req);
json_t *agent_cmd_conn_secret(struct agent *a, json_t *req);
json_t *agent_cmd_cm_listen(struct agent *a, json_t *req);
json_t *agent_cmd_cm_dial(struct agent *a, json_t *req);
json_t *agent_cmd_cm_result(struct agent *a, json_t *req);
json_t *agent_cmd_cm_close(struct agent *a, json_t *req);
/* Stops a set-up exchange in progress (before its connection goes). */
void agent_cm_stop_all(void);

/* Parameter blocks <-> JSON (cmd_conn.c). */
json_t *agent_params_json(const struct mroce_conn_params *p);
bool agent_params_parse(json_t *j, struct mroce_conn_params *p);

#endif
