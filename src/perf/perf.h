/* mroce-perf: perftest-style benchmarks over a real datapath (see
 * tools/mroce-perf.c for the command line, docs/cm.md for the set-up).
 *
 * A test of one message size on one side is a `perf_run`, a non-blocking
 * state machine: perf_run_step polls the CQ and posts what it may, and
 * returns 1 once that side is done. The drivers (run.c) interleave
 * mroce_progress() and steps: both sides in one thread (--loopback), or
 * one side per process with the CM's TCP socket carrying the control
 * messages (RUN, END, RESULT, QUIT). */
#ifndef MROCE_PERF_PERF_H
#define MROCE_PERF_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce.h>
#include <mroce/mroce_cm.h>
#include <mroce/mroce_dp.h>

enum perf_test {
    PERF_WRITE_BW,
    PERF_WRITE_LAT,
    PERF_READ_BW,
    PERF_READ_LAT,
    PERF_SEND_BW,
    PERF_SEND_LAT,
    PERF_UDP_PINGPONG, /* bare UDP reference, no mroce */
    PERF_COLL,         /* multi-process collectives (coll.c) */
    PERF_N_TESTS
};

enum perf_mode { PERF_CLIENT, PERF_SERVER, PERF_LOOPBACK };

#define PERF_MAX_EAL 32

struct perf_opts {
    int mode, test;
    const char *host;     /* client: server to dial */
    const char *local_ip; /* datapath address [the CM socket's] */
    size_t size;          /* -s [65536 bw, 8 lat] */
    bool all_sizes;       /* -a: 2 .. 8 MiB */
    uint64_t iters;       /* -n [1000 bw (5000 ... ), 1000 lat] */
    double duration;      /* -D seconds (0: iteration count) */
    uint16_t paths, streams;
    double loss;       /* --loss: impairment layer, both directions */
    uint32_t mtu;      /* --mtu [4096] */
    uint16_t port;     /* -p TCP port of the CM [18515] */
    uint16_t udp_port; /* --udp-port [server 4797, client 4798] */
    uint32_t tx_depth; /* -t outstanding WRs [128 bw, 1 lat] */
    const char *json;  /* --json FILE */
    int datapath;      /* MROCE_DP_* */
    bool no_gso, no_gro, check, quiet;
    uint8_t transport;
    uint64_t pace_bps;
    uint32_t batch;      /* --batch: mroce_dp_attr.batch [datapath's] */
    uint32_t spray_run;  /* --spray-run: ctx.spray_run [1] */
    uint64_t min_rto_ns; /* --min-rto US [perf_min_rto_ns] */
    uint8_t retry_cnt;   /* --retry N [perf_retry_cnt] */
    int timeout_s;       /* whole-run bound [120] */
    /* the CM (R-CM-*): key, address policy and limits */
    uint8_t psk[MROCE_CM_PSK_MAX]; /* --psk FILE (hex) */
    size_t psk_len;
    struct mroce_cm_prefix allow[MROCE_CM_MAX_ALLOW]; /* --allow-addr */
    uint32_t n_allow;
    bool allow_any;       /* --allow-addr any */
    size_t max_size;      /* server: --max-size [PERF_MAX_SIZE_DEF] */
    int clients;          /* server: --clients, 0 forever [1] */
    int keepalive_ms;     /* --keepalive MS, 0 off [2000] */
    int hello_timeout_ms; /* server: --hello-timeout MS [5000] */
    int sec_mode;         /* --auth, --encrypt: MROCE_SEC_* [NONE] */
    int eal_argc;
    char *eal_argv[PERF_MAX_EAL];
    /* collectives */
    int coll_op;      /* 0 allreduce, 1 alltoall, 2 allgather */
    int ranks;        /* -N */
    int coll_flavour; /* --flavour: MROCE_COLL_WRITE_IMM or _SEND */
};

#define PERF_MAX_SIZE_DEF (64u << 20) /* a client's largest message */

/* Parses argv; prints usage and returns -1 on error, 1 for --help. */
int perf_opts_parse(struct perf_opts *o, int argc, char **argv);
void perf_usage(void);
const char *perf_test_name(int test);
bool perf_test_is_lat(int test);

/* One endpoint: datapath, context, PD, CQ, connection and a buffer. */
struct perf_side {
    struct mroce_dp *dp;
    struct mroce_ctx *ctx;
    struct mroce_pd *pd;
    struct mroce_cq *cq;
    struct mroce_conn *conn;
    uint8_t *buf;
    size_t buf_len;
    struct mroce_mr *mr;
    uint32_t depth; /* WRs per stream */
};

/* Where the peer's buffer is (exchanged after the CM establish). */
struct perf_remote {
    uint64_t addr;
    uint32_t rkey;
    uint64_t len;
};

/* The datapath attributes every side uses (address, ports, offloads,
 * impairment, context seed, MTU, transport, log hook). */
void perf_dp_attr(struct mroce_dp_attr *a, const struct perf_opts *o,
                  const char *ip, uint16_t udp_port, uint64_t seed);
int perf_side_open(struct perf_side *s, const struct perf_opts *o,
                   const char *ip, uint16_t udp_port, uint64_t seed);
/* (Re)registers a buffer of at least len bytes filled with the pattern
 * of `who` (0 client, 1 server). */
int perf_side_buf(struct perf_side *s, size_t len, int who);
void perf_side_close(struct perf_side *s);
void perf_side_fill(struct perf_side *s, int who);
/* mroce_progress, yielding the CPU when idle. */
int perf_progress(struct mroce_dp *dp);
/* perf_progress for a process with one datapath: after PERF_IDLE_SPINS
 * idle passes in a row (*idle counts them) it sleeps in mroce_dp_wait
 * until a packet or a timer is due, at most PERF_IDLE_SLEEP_NS. A process
 * that spins with nothing to do takes CPU time (or, on a shared core, the
 * core's units) from its peer; a busy peer still sees no sleep, and a
 * ping-pong's gaps are shorter than the spins. */
#define PERF_IDLE_SPINS 64u
/* a sleep's bound, hence a control message's delay */
#define PERF_IDLE_SLEEP_NS 1000000u
int perf_progress_idle(struct mroce_dp *dp, unsigned *idle);
/* Connection defaults of mroce-perf (side.c): --min-rto, --retry. */
uint64_t perf_min_rto_ns(const struct perf_opts *o);
uint8_t perf_retry_cnt(const struct perf_opts *o);
void perf_side_remote(const struct perf_side *s, struct perf_remote *r);

/* Byte i of the verification pattern of side `who`. */
static inline uint8_t perf_pattern(int who, size_t i)
{
    return (uint8_t)((i * 131 + (i >> 12) * 7 + (size_t)who * 89) ^ 0x5a);
}

/* Message slots in the buffer for messages of `size` bytes. */
uint32_t perf_slots(size_t size);

struct perf_result {
    size_t size;
    uint64_t iters;
    double secs;
    double bw_peak_gbps, bw_avg_gbps, msg_rate_mpps;
    double t_min_us, t_typical_us, t_p99_us, t_max_us, t_avg_us;
    int check; /* 1 data verified, 0 not checked, -1 mismatch */
    struct mroce_conn_counters conn; /* this side, over the run */
    struct mroce_conn_counters peer; /* the other side's */
    struct mroce_ctx_counters ctx;
    struct mroce_dp_counters dp;
};

struct perf_run;

/* role 0: the active side (client), 1: the passive/echo side. */
int perf_run_create(struct perf_side *s, const struct perf_opts *o, int role,
                    size_t size, const struct perf_remote *peer,
                    struct perf_run **out);
/* 1 done, 0 not yet, negative on a failed completion or post. */
int perf_run_step(struct perf_run *r);
/* The passive side learns the active side finished (END). */
void perf_run_end(struct perf_run *r, uint64_t peer_msgs);
/* Fills times, rates and this side's counters; checks data if asked. */
void perf_run_result(struct perf_run *r, struct perf_result *res);
void perf_run_free(struct perf_run *r);
/* Sorts lat[0..n) (ns) and fills the t_* fields. */
void perf_lat_stats(uint64_t *lat, uint64_t n, struct perf_result *res);

/* Output (report.c). */
void perf_report_header(const struct perf_opts *o);
void perf_report_line(const struct perf_opts *o, const struct perf_result *r);
int perf_report_json(const struct perf_opts *o, const struct perf_result *r,
                     int n, const char *extra);
/* Runs one measurement per size with `run`, printing the header and a line
 * per result (unless quiet); stops at the first error or failed check
 * (EPROTO). *done counts the results filled. Returns 0 or the error. */
int perf_report_sizes(const struct perf_opts *o, const size_t *sizes, int n,
                      int (*run)(void *ud, size_t size, struct perf_result *r),
                      void *ud, struct perf_result *res, int *done);

/* Drivers (run.c, pingpong.c, coll.c): process exit codes. */
int perf_main_loopback(struct perf_opts *o);
int perf_main_server(struct perf_opts *o);
int perf_main_client(struct perf_opts *o);
int perf_main_pingpong(struct perf_opts *o);
int perf_main_coll(struct perf_opts *o);

/* Sizes for -a: 2, 4, ..., 8 MiB; or just o->size. */
int perf_sizes(const struct perf_opts *o, size_t *sizes, int cap);
/* Whether size is one of perf_sizes(o). */
bool perf_size_ok(const struct perf_opts *o, size_t size);
/* The CM policy of the options (key, allowed addresses, keepalive). */
void perf_cm_attr(const struct perf_opts *o, struct mroce_cm_attr *a);

#endif
