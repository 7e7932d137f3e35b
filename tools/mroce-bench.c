/* mroce-bench: benchmarks that print numbers (never pass/fail on speed).
 *
 *   mroce-bench loss-sweep [--json FILE] [--bytes N] [--seed S]
 *                          [--msg N] [--streams N] [--paths N]
 *                          [--pcap FILE [--pcap-max N]]
 *
 * loss-sweep: two engines over the test wire (4096-byte MTU, 100 Gbit/s
 * egress per endpoint, 2 us one-way delay, 16 ECMP routes, 16 paths) move
 * N bytes as 4 MiB WRITEs at random loss 0, 0.01 and 0.1 (ACKs lose too,
 * as docs metrics.md "Loss" defines). Goodput is measured in virtual time:
 * payload bytes / time from the first post to the last completion. The
 * wall-clock cost is ns per data packet sent (retransmissions included),
 * timed around the engine loop only. Every WRITE's destination is compared
 * with its source before the slot is reused; any difference, failed work
 * request or stall exits non-zero.
 *
 * --pcap FILE writes the first N packets (--pcap-max, default 2000) that
 * the engines send in the 1% loss run to a pcap file, through the driver
 * loop's tap, so before the wire drops any (docs/wireshark.md). The time
 * spent writing is left out of ns/pkt like the verification time.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mroce/mroce.h>

#include "io/pcap/pcap.h"
#include "io/testwire/testwire.h"
#include "io/testwire/twloop.h"

#define MIB ((uint64_t)1024 * 1024)
#define N_LOSS 3
#define SLOTS 8 /* 4 MiB buffers per side, reused in turn */
#define RATE_BPS 100000000000ull
#define DELAY_NS 2000
#define N_ROUTES 16
#define MTU 4096
#define WIRE_OVERHEAD 66   /* UDP 8 + IPv4 20 + Ethernet 14+4+8+12 */
#define HDR_BYTES (48 + 4) /* MTH+DXH+RETH, ICRC: a WRITE data packet */
#define VIRT_LIMIT_NS 600000000000ull
#define CAPTURE_POINT 1 /* loss_points index captured by --pcap */
#define PCAP_MAX_DEFAULT 2000

static const double loss_points[N_LOSS] = {0.0, 0.01, 0.1};

struct opts {
    const char *json;
    uint64_t bytes;
    uint64_t seed;
    uint32_t msg;
    uint16_t streams;
    uint16_t paths;
    const char *pcap;
    uint64_t pcap_max;
};

struct result {
    double loss;
    double goodput_gbps;
    double ratio;
    double ns_per_pkt;
    double virt_s, wall_s;
    uint64_t data_pkts, retx_pkts, tlp_pkts, rto_events, repaths;
    uint64_t wire_sent, wire_lost, passes;
    uint64_t sum_src, sum_dst;
};

/* ---- Small helpers ---- */

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void fill_random(uint8_t *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i + 8 <= n; i += 8) {
        uint64_t v = splitmix(&seed);
        memcpy(p + i, &v, 8);
    }
}

/* A word-wise multiplicative hash: fast enough for 256 MiB, and any
 * single changed word changes it. n is a multiple of 8. */
static uint64_t checksum(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h;
}

/* The loss-free ceiling: the line rate times the payload share of every
 * frame on the wire. */
static double ideal_gbps(void)
{
    double frame = MTU + HDR_BYTES + WIRE_OVERHEAD;
    return (double)RATE_BPS / 1e9 * MTU / frame;
}

/* ---- Packet capture (--pcap) ---- */

struct capture {
    struct mroce_pcap *pcap; /* NULL: not capturing */
    struct mroce_twloop *loop;
    uint64_t max;
    int failed;
    double wall_s; /* time spent writing, not in ns_per_pkt */
};

/* Sees every packet an engine sends; switches itself off after max. */
static void capture_tap(void *ud, uint64_t now, int from_ep,
                        const struct mroce_pkt_meta *meta, const uint8_t *buf,
                        size_t len)
{
    struct capture *c = ud;
    double t0 = wall_now();
    (void)from_ep;
    if (mroce_pcap_write(c->pcap, now, meta, buf, len) < 0)
        c->failed = 1;
    if (c->failed || mroce_pcap_count(c->pcap) >= c->max)
        mroce_twloop_set_tap(c->loop, NULL, NULL);
    c->wall_s += wall_now() - t0;
}

static int capture_open(struct capture *c, const struct opts *o,
                        struct mroce_twloop *loop)
{
    int rc = mroce_pcap_open(o->pcap, &c->pcap);
    if (rc < 0) {
        perror(o->pcap);
        return rc;
    }
    c->loop = loop;
    c->max = o->pcap_max;
    mroce_twloop_set_tap(loop, capture_tap, c);
    return 0;
}

/* Returns -1 if any write failed. NULL pcap: nothing to do. */
static int capture_close(struct capture *c, const char *path)
{
    if (!c->pcap)
        return 0;
    uint64_t n = mroce_pcap_count(c->pcap);
    if (mroce_pcap_close(c->pcap) < 0 || c->failed) {
        fprintf(stderr, "pcap: writing %s failed\n", path);
        return -1;
    }
    fprintf(stderr, "pcap: %" PRIu64 " packets written to %s\n", n, path);
    return 0;
}

/* ---- One transfer ---- */

struct xfer {
    const struct opts *o;
    struct mroce_twloop_pair *p;
    uint8_t *src, *dst;
    struct mroce_mr *mr_src, *mr_dst;
    uint64_t n_msgs, posted, done;
    uint64_t slot_msg[SLOTS]; /* message in flight in each slot */
    int failed;
    double verify_s; /* wall time spent checking, not in ns_per_pkt */
    uint64_t sum_src, sum_dst;
    uint64_t next_report;
    struct capture cap;
};

static int xfer_post(struct xfer *x)
{
    uint64_t i = x->posted;
    size_t slot = i % SLOTS;
    size_t off = slot * x->o->msg;
    struct mroce_send_wr wr;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = i;
    wr.stream = (uint16_t)(i % x->o->streams);
    wr.sge.addr = (uint64_t)(uintptr_t)(x->src + off);
    wr.sge.length = x->o->msg;
    wr.sge.lkey = mroce_mr_lkey(x->mr_src);
    wr.remote_addr = (uint64_t)(uintptr_t)(x->dst + off);
    wr.rkey = mroce_mr_rkey(x->mr_dst);
    int rc = mroce_post_write(x->p->conn[0], &wr);
    if (rc < 0) {
        fprintf(stderr, "post_write %" PRIu64 ": %s\n", i, mroce_strerror(rc));
        x->failed = 1;
        return rc;
    }
    x->slot_msg[slot] = i;
    x->posted++;
    return 0;
}

/* The slot's WRITE is complete, so its bytes are final: compare, then
 * poison the destination so the next WRITE into it must really land. */
static void xfer_verify(struct xfer *x, uint64_t i)
{
    double t0 = wall_now();
    size_t off = (i % SLOTS) * x->o->msg;
    uint8_t *d = x->dst + off;
    const uint8_t *s = x->src + off;
    x->sum_src = checksum(x->sum_src, s, x->o->msg);
    x->sum_dst = checksum(x->sum_dst, d, x->o->msg);
    if (memcmp(d, s, x->o->msg) != 0) {
        fprintf(stderr, "message %" PRIu64 ": destination differs\n", i);
        x->failed = 1;
    }
    memset(d, 0, x->o->msg);
    x->verify_s += wall_now() - t0;
}

static void xfer_progress(struct xfer *x, uint64_t now)
{
    uint64_t bytes = x->done * x->o->msg;
    if (bytes < x->next_report)
        return;
    fprintf(stderr, "  %3" PRIu64 "%% %" PRIu64 " MiB, virtual %.2f ms\n",
            bytes * 100 / (x->n_msgs * x->o->msg), bytes / MIB,
            (double)now / 1e6);
    x->next_report += x->n_msgs * x->o->msg / 4;
}

static void xfer_complete(struct xfer *x, const struct mroce_wc *wc,
                          uint64_t now)
{
    if (wc->status != MROCE_WC_SUCCESS) {
        fprintf(stderr, "message %" PRIu64 ": %s\n", wc->wr_id,
                mroce_wc_status_str(wc->status));
        x->failed = 1;
        return;
    }
    xfer_verify(x, wc->wr_id);
    x->done++;
    xfer_progress(x, now);
    if (x->posted < x->n_msgs)
        xfer_post(x);
}

static int xfer_pred(struct mroce_twloop *loop, void *arg)
{
    struct xfer *x = arg;
    struct mroce_wc wc[SLOTS];
    int n = mroce_poll_cq(x->p->cq[0], SLOTS, wc);
    for (int i = 0; i < n && !x->failed; i++)
        xfer_complete(x, &wc[i], mroce_twloop_now(loop));
    return x->failed || x->done == x->n_msgs;
}

/* ---- Set-up ---- */

static void pair_cfg(const struct opts *o, double loss,
                     struct mroce_twloop_pair_cfg *c)
{
    memset(c, 0, sizeof(*c));
    c->wire.seed = o->seed;
    c->wire.n_routes = N_ROUTES;
    c->wire.rate_bps = RATE_BPS;
    c->wire.wire_overhead = WIRE_OVERHEAD;
    c->wire.delay_ns = DELAY_NS;
    c->wire.loss = loss;
    c->wire.capacity = 4096;
    for (int s = 0; s < 2; s++) {
        c->ctx[s].deterministic = 1; /* R-SEC-7: a benchmark repeats */
        c->ctx[s].seed = o->seed * 2 + (uint64_t)s + 1;
        c->ctx[s].mtu = MTU;
        c->ctx[s].link_mbps = (uint32_t)(RATE_BPS / 1000000);
        c->conn[s].n_paths = o->paths;
        c->conn[s].n_streams = o->streams;
        c->conn[s].sq_depth = SLOTS;
    }
}

static int xfer_open(struct xfer *x, const struct opts *o, double loss)
{
    memset(x, 0, sizeof(*x));
    x->o = o;
    x->n_msgs = o->bytes / o->msg;
    x->next_report = x->n_msgs * o->msg / 4;
    struct mroce_twloop_pair_cfg c;
    pair_cfg(o, loss, &c);
    int rc = mroce_twloop_pair_create(&c, &x->p);
    if (rc < 0)
        return rc;
    size_t len = (size_t)SLOTS * o->msg;
    x->src = malloc(len);
    x->dst = malloc(len);
    if (!x->src || !x->dst)
        return MROCE_ENOMEM;
    fill_random(x->src, len, o->seed);
    memset(x->dst, 0, len); /* fault the pages in before the clock runs */
    rc = mroce_reg_mr(x->p->pd[0], x->src, len, MROCE_ACCESS_LOCAL_WRITE,
                      &x->mr_src);
    if (rc == 0)
        rc = mroce_reg_mr(x->p->pd[1], x->dst, len,
                          MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE,
                          &x->mr_dst);
    return rc;
}

static void xfer_close(struct xfer *x)
{
    mroce_twloop_pair_destroy(x->p);
    free(x->src);
    free(x->dst);
}

/* ---- Measurement ---- */

static void collect(struct xfer *x, struct result *r, double wall)
{
    struct mroce_conn_counters c;
    mroce_conn_get_counters(x->p->conn[0], &c);
    struct mroce_tw_stats ws;
    mroce_tw_stats(x->p->tw, &ws);
    struct mroce_twloop_stats ls;
    mroce_twloop_get_stats(x->p->loop, &ls);
    r->virt_s = (double)ls.now / 1e9;
    r->goodput_gbps = (double)(x->done * x->o->msg) * 8 / (double)ls.now;
    r->wall_s = wall - x->verify_s - x->cap.wall_s;
    r->data_pkts = c.tx_data_pkts;
    r->retx_pkts = c.retx_pkts;
    r->tlp_pkts = c.tlp_pkts;
    r->rto_events = c.rto_events;
    r->repaths = c.repaths;
    r->ns_per_pkt =
        c.tx_data_pkts ? r->wall_s * 1e9 / (double)c.tx_data_pkts : 0.0;
    r->wire_sent = ws.sent;
    r->wire_lost = ws.lost_random + ws.lost_burst + ws.lost_overflow;
    r->passes = ls.passes;
    r->sum_src = x->sum_src;
    r->sum_dst = x->sum_dst;
}

static int run_point(const struct opts *o, double loss, int capture,
                     struct result *r)
{
    struct xfer x;
    memset(r, 0, sizeof(*r));
    r->loss = loss;
    int rc = xfer_open(&x, o, loss);
    if (rc == 0 && capture)
        rc = capture_open(&x.cap, o, x.p->loop);
    if (rc < 0) {
        fprintf(stderr, "set-up: %s\n", mroce_strerror(rc));
        xfer_close(&x);
        return -1;
    }
    fprintf(stderr, "loss %.3f: %" PRIu64 " x %u bytes\n", loss, x.n_msgs,
            o->msg);
    double t0 = wall_now();
    for (uint64_t i = 0; i < SLOTS && x.posted < x.n_msgs && !x.failed; i++)
        xfer_post(&x);
    rc = mroce_twloop_run_until(x.p->loop, xfer_pred, &x, VIRT_LIMIT_NS);
    collect(&x, r, wall_now() - t0);
    if (rc != MROCE_TWLOOP_DONE && !x.failed) {
        fprintf(stderr,
                "loss %.3f: stopped (%s) after %" PRIu64 " of %" PRIu64
                " messages\n",
                loss, rc < 0 ? mroce_strerror(rc) : "virtual time limit",
                x.done, x.n_msgs);
        x.failed = 1;
    }
    int bad = x.failed || r->sum_src != r->sum_dst;
    bad |= capture_close(&x.cap, o->pcap) < 0;
    xfer_close(&x);
    return bad ? -1 : 0;
}

/* ---- Output ---- */

static void print_table(const struct result *r, int n)
{
    printf("loss-sweep: %d-byte MTU, %.0f Gbit/s, %d ns delay, ideal "
           "%.2f Gbit/s\n",
           MTU, (double)RATE_BPS / 1e9, DELAY_NS, ideal_gbps());
    printf("%6s %9s %6s %8s %9s %9s %8s %6s %8s %7s\n", "loss", "Gbit/s",
           "ratio", "SR-bound", "ns/pkt", "data_pkt", "retx", "rto", "virt_ms",
           "wall_s");
    for (int i = 0; i < n; i++)
        printf("%6.3f %9.2f %6.3f %8.2f %9.1f %9" PRIu64 " %8" PRIu64
               " %6" PRIu64 " %8.3f %7.2f\n",
               r[i].loss, r[i].goodput_gbps, r[i].ratio,
               ideal_gbps() * (1 - r[i].loss), r[i].ns_per_pkt, r[i].data_pkts,
               r[i].retx_pkts, r[i].rto_events, r[i].virt_s * 1e3, r[i].wall_s);
}

typedef double (*field_fn)(const struct result *r);

static void json_array(FILE *f, const char *key, const struct result *r, int n,
                       field_fn get)
{
    fprintf(f, "\"%s\":[", key);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%.6g", i ? "," : "", get(&r[i]));
    fprintf(f, "]");
}

static double f_loss(const struct result *r)
{
    return r->loss;
}
static double f_gbps(const struct result *r)
{
    return r->goodput_gbps;
}
static double f_ratio(const struct result *r)
{
    return r->ratio;
}
static double f_nspp(const struct result *r)
{
    return r->ns_per_pkt;
}
static double f_data(const struct result *r)
{
    return (double)r->data_pkts;
}
static double f_retx(const struct result *r)
{
    return (double)r->retx_pkts;
}
static double f_rto(const struct result *r)
{
    return (double)r->rto_events;
}
static double f_tlp(const struct result *r)
{
    return (double)r->tlp_pkts;
}
static double f_virt(const struct result *r)
{
    return r->virt_s;
}
static double f_wall(const struct result *r)
{
    return r->wall_s;
}
static double f_lost(const struct result *r)
{
    return (double)r->wire_lost;
}
static double f_sent(const struct result *r)
{
    return (double)r->wire_sent;
}

static double f_retx_rate(const struct result *r)
{
    return r->data_pkts ? (double)r->retx_pkts / (double)r->data_pkts : 0;
}

static double f_bound(const struct result *r)
{
    return ideal_gbps() * (1 - r->loss);
}

static const struct {
    const char *key;
    field_fn get;
} json_fields[] = {
    {"loss", f_loss},
    {"goodput_gbps", f_gbps},
    {"ratio", f_ratio},
    {"ns_per_pkt", f_nspp},
    {"selective_repeat_bound_gbps", f_bound},
    {"data_pkts", f_data},
    {"retx_pkts", f_retx},
    {"retx_rate", f_retx_rate},
    {"tlp_pkts", f_tlp},
    {"rto_events", f_rto},
    {"wire_pkts", f_sent},
    {"wire_lost", f_lost},
    {"virtual_s", f_virt},
    {"wall_s", f_wall},
};

static int write_json(const char *path, const struct opts *o,
                      const struct result *r, int n)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return -1;
    }
    fprintf(f, "{");
    size_t nf = sizeof(json_fields) / sizeof(json_fields[0]);
    for (size_t i = 0; i < nf; i++) {
        json_array(f, json_fields[i].key, r, n, json_fields[i].get);
        fprintf(f, ",");
    }
    fprintf(f,
            "\"ideal_gbps\":%.6g,\"bytes\":%" PRIu64 ",\"msg_bytes\":%u,"
            "\"mtu\":%d,\"paths\":%u,\"streams\":%u,\"rate_gbps\":%.0f,"
            "\"delay_ns\":%d,\"acks_lossy\":true,\"seed\":%" PRIu64 "}\n",
            ideal_gbps(), o->bytes, o->msg, MTU, o->paths, o->streams,
            (double)RATE_BPS / 1e9, DELAY_NS, o->seed);
    return fclose(f) == 0 ? 0 : -1;
}

/* ---- Command line ---- */

static void usage(void)
{
    fprintf(stderr, "usage: mroce-bench loss-sweep [--json FILE] [--bytes N] "
                    "[--seed S]\n"
                    "                              [--msg N] [--streams N] "
                    "[--paths N]\n"
                    "                              [--pcap FILE [--pcap-max "
                    "N]]\n");
}

static int parse_num(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*s == '\0' || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

static int parse_opt(struct opts *o, const char *k, const char *v)
{
    uint64_t n = 0;
    if (strcmp(k, "--json") == 0) {
        o->json = v;
        return 0;
    }
    if (strcmp(k, "--pcap") == 0) {
        o->pcap = v;
        return 0;
    }
    if (parse_num(v, &n) < 0)
        return -1;
    if (strcmp(k, "--bytes") == 0)
        o->bytes = n;
    else if (strcmp(k, "--seed") == 0)
        o->seed = n;
    else if (strcmp(k, "--msg") == 0 && n >= 8 && n <= 1u << 30)
        o->msg = (uint32_t)(n & ~7ull);
    else if (strcmp(k, "--streams") == 0 && n >= 1 && n <= 64)
        o->streams = (uint16_t)n;
    else if (strcmp(k, "--paths") == 0 && n >= 1 && n <= 256)
        o->paths = (uint16_t)n;
    else if (strcmp(k, "--pcap-max") == 0 && n >= 1)
        o->pcap_max = n;
    else
        return -1;
    return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
    o->json = NULL;
    o->bytes = 256 * MIB;
    o->seed = 1;
    o->msg = 4 * MIB;
    o->streams = 4;
    o->paths = 16;
    o->pcap = NULL;
    o->pcap_max = PCAP_MAX_DEFAULT;
    if (argc < 2 || strcmp(argv[1], "loss-sweep") != 0)
        return -1;
    for (int i = 2; i < argc; i += 2)
        if (i + 1 >= argc || parse_opt(o, argv[i], argv[i + 1]) < 0)
            return -1;
    if (o->bytes < o->msg)
        o->msg = (uint32_t)(o->bytes < 8 ? 8 : o->bytes & ~7ull);
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o;
    if (parse_args(argc, argv, &o) < 0) {
        usage();
        return 2;
    }
    struct result r[N_LOSS];
    int bad = 0;
    for (int i = 0; i < N_LOSS; i++)
        bad |= run_point(&o, loss_points[i], o.pcap && i == CAPTURE_POINT,
                         &r[i]) < 0;
    for (int i = 0; i < N_LOSS; i++)
        r[i].ratio =
            r[0].goodput_gbps > 0 ? r[i].goodput_gbps / r[0].goodput_gbps : 0.0;
    print_table(r, N_LOSS);
    if (o.json && write_json(o.json, &o, r, N_LOSS) < 0)
        bad = 1;
    if (bad)
        fprintf(stderr, "loss-sweep: FAILED (see above)\n");
    return bad ? 1 : 0;
}
