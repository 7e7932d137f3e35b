/* mroce-perf command line. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "perf/perf.h"

static const char *const test_names[PERF_N_TESTS] = {
    "write_bw", "write_lat", "read_bw",      "read_lat",
    "send_bw",  "send_lat",  "udp_pingpong", "coll"};

static const char *const coll_names[] = {"allreduce", "alltoall", "allgather"};

const char *perf_test_name(int test)
{
    return test >= 0 && test < PERF_N_TESTS ? test_names[test] : "?";
}

bool perf_test_is_lat(int test)
{
    return test == PERF_WRITE_LAT || test == PERF_READ_LAT ||
           test == PERF_SEND_LAT || test == PERF_UDP_PINGPONG;
}

void perf_usage(void)
{
    fprintf(stderr,
            "usage: mroce-perf [server | client HOST | --loopback] TEST "
            "[options] [-- EAL args]\n"
            "       mroce-perf TEST [HOST]            (perftest style)\n"
            "       mroce-perf coll allreduce|alltoall|allgather -N RANKS "
            "[options]\n"
            "tests: write_bw write_lat read_bw read_lat send_bw send_lat "
            "udp_pingpong\n"
            "  -s SIZE        message bytes (k/m suffix) [64k bw, 8 lat]\n"
            "  -a             all sizes 2 .. 8M\n"
            "  -n ITERS       iterations [1000; coll 20]\n"
            "  -D SECONDS     run for a time instead of -n\n"
            "  -t DEPTH       outstanding work requests [128 bw]\n"
            "  -p PORT        CM TCP port [18515]\n"
            "  --udp-port P   datapath UDP port [server 4797, client 4798]\n"
            "  --local-ip IP  datapath address [the CM socket's]\n"
            "  --paths N      paths per connection [16]\n"
            "  --streams N    streams per connection [1]\n"
            "  --mtu BYTES    payload per packet [4096]\n"
            "  --loss P       impairment-layer loss probability, both sides\n"
            "  --gso off|on   --gro off|on   UDP offloads [on]\n"
            "  --pace GBPS    sender pacing [off]\n"
            "  --batch N      packets per datapath burst [datapath's]\n"
            "  --spray-run N  data packets a path sends in a row before the\n"
            "                 next path (R-PATH-17); 15 fill one 64 KiB GSO\n"
            "                 message at MTU 4096, 1 sprays every packet [1]\n"
            "  --min-rto US   minimum retransmission timeout [1000]\n"
            "  --retry N      timeout rounds before error [15; RoCEv2 7]\n"
            "  --transport metaroce (RoCEv2: mroce-sim only)\n"
            "  --datapath udp|dpdk (dpdk: EAL args after --)\n"
            "  --check        verify the data byte for byte\n"
            "  --json FILE    write the results as JSON (server: its\n"
            "                 own counters of the last client's runs)\n"
            "  --timeout S    bound on the whole run [120]\n"
            "  --psk FILE     pre-shared key (hex, 32..128 digits, e.g.\n"
            "                 `openssl rand -hex 32`), both sides: the CM\n"
            "                 authenticates the peer and the exchange and\n"
            "                 derives the connection secret (spec R-CM-10)\n"
            "  --allow-addr A data address a peer may announce besides its\n"
            "                 TCP address: CIDR prefix or 'any'; repeatable\n"
            "  --keepalive MS CM keepalive interval, 0 off; a peer silent\n"
            "                 for 4 of its intervals is dropped [2000]\n"
            "  --max-size S   server: largest message a client may ask for\n"
            "                 [64m]\n"
            "  --clients N    server: serve N clients one after another,\n"
            "                 0 forever [1]\n"
            "  --hello-timeout MS  server: a connector's time to send its\n"
            "                 HELLO [5000]\n"
            "  --auth         authenticated mode: AES-128-GCM tag on every\n"
            "                 packet (spec 3.14); --encrypt: payloads\n"
            "                 encrypted too. --loopback: a random secret;\n"
            "                 two processes: from the CM's key (--psk),\n"
            "                 which alone already picks --encrypt\n"
            "  -N RANKS       coll: processes [4]\n"
            "  --channels C   coll: streams per connection (= --streams)\n"
            "  --flavour writeimm|send  coll all-reduce: how data moves\n"
            "coll: -s is S, the bytes of each rank's array; --udp-port is\n"
            "rank 0's, rank r uses PORT + r\n");
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0)
        return -1;
    if (*end == 'k' || *end == 'K')
        v *= 1024, end++;
    else if (*end == 'm' || *end == 'M')
        v *= 1024 * 1024, end++;
    else if (*end == 'g' || *end == 'G')
        v *= 1024.0 * 1024 * 1024, end++;
    if (*end || v > (double)(1u << 31))
        return -1;
    *out = (size_t)v;
    return 0;
}

/* --psk FILE: hex digits (whitespace ignored), MROCE_CM_PSK_MIN..MAX
 * bytes. A key others can read is no secret: warn. */
static int opt_psk(struct perf_opts *o, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return -1;
    }
    struct stat st;
    if (stat(path, &st) == 0 && (st.st_mode & 077))
        fprintf(stderr, "mroce-perf: warning: %s is readable by others\n",
                path);
    int c, hi = -1;
    size_t n = 0;
    bool bad = false;
    while ((c = fgetc(f)) != EOF && !bad) {
        if (isspace(c))
            continue;
        int v = isdigit(c) ? c - '0' : isxdigit(c) ? tolower(c) - 'a' + 10 : -1;
        bad = v < 0 || (hi >= 0 && n == MROCE_CM_PSK_MAX);
        if (!bad && hi < 0)
            hi = v;
        else if (!bad) {
            o->psk[n++] = (uint8_t)(hi << 4 | v);
            hi = -1;
        }
    }
    fclose(f);
    if (bad || hi >= 0 || n < MROCE_CM_PSK_MIN) {
        fprintf(stderr, "mroce-perf: %s: want %d..%d bytes as hex digits\n",
                path, MROCE_CM_PSK_MIN, MROCE_CM_PSK_MAX);
        return -1;
    }
    o->psk_len = n;
    return 0;
}

static int opt_allow(struct perf_opts *o, const char *v)
{
    if (!strcmp(v, "any"))
        return o->allow_any = true, 0;
    if (o->n_allow == MROCE_CM_MAX_ALLOW ||
        mroce_cm_prefix_parse(v, &o->allow[o->n_allow]))
        return -1;
    o->n_allow++;
    return 0;
}

/* The CM flags; 1: not one of them. */
static int opt_cm(struct perf_opts *o, const char *k, const char *v, bool num,
                  long n)
{
    if (!strcmp(k, "--psk"))
        return opt_psk(o, v);
    if (!strcmp(k, "--allow-addr"))
        return opt_allow(o, v);
    if (!strcmp(k, "--keepalive") && num && n >= 0 && n <= 60000)
        return o->keepalive_ms = (int)n, 0;
    if (!strcmp(k, "--hello-timeout") && num && n > 0 && n <= 600000)
        return o->hello_timeout_ms = (int)n, 0;
    if (!strcmp(k, "--clients") && num && n >= 0)
        return o->clients = (int)n, 0;
    if (!strcmp(k, "--max-size"))
        return parse_size(v, &o->max_size) || !o->max_size ? -1 : 0;
    return 1;
}

static int find_name(const char *const *t, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (strcmp(t[i], s) == 0)
            return i;
    return -1;
}

static int opt_onoff(const char *v, bool *off)
{
    if (strcmp(v, "off") && strcmp(v, "on"))
        return -1;
    *off = strcmp(v, "off") == 0;
    return 0;
}

/* A flag with a value: 0 ok, -1 bad, 1 not a known flag. */
static int opt_value(struct perf_opts *o, const char *k, const char *v)
{
    char *end;
    long n = strtol(v, &end, 10);
    bool num = *v && !*end;
    if (!strcmp(k, "-s"))
        return parse_size(v, &o->size) || !o->size ? -1 : 0;
    if (!strcmp(k, "-n") && num && n > 0)
        return o->iters = (uint64_t)n, 0;
    if (!strcmp(k, "-D"))
        return (o->duration = strtod(v, NULL)) > 0 ? 0 : -1;
    if (!strcmp(k, "-t") && num && n > 0 && n <= 65536)
        return o->tx_depth = (uint32_t)n, 0;
    if (!strcmp(k, "-p") && num && n > 0 && n < 65536)
        return o->port = (uint16_t)n, 0;
    if (!strcmp(k, "--udp-port") && num && n > 0 && n < 65536)
        return o->udp_port = (uint16_t)n, 0;
    if (!strcmp(k, "--local-ip"))
        return o->local_ip = v, 0;
    if (!strcmp(k, "--paths") && num && n >= 1 && n <= 256)
        return o->paths = (uint16_t)n, 0;
    if ((!strcmp(k, "--streams") || !strcmp(k, "--channels")) && num &&
        n >= 1 && n <= 256)
        return o->streams = (uint16_t)n, 0; /* coll: a channel per stream */
    if (!strcmp(k, "--flavour")) {
        if (strcmp(v, "writeimm") && strcmp(v, "send"))
            return -1;
        return o->coll_flavour = !strcmp(v, "send"), 0;
    }
    if (!strcmp(k, "--mtu") && num && n >= 256 && n <= 9000)
        return o->mtu = (uint32_t)n, 0;
    if (!strcmp(k, "--loss"))
        return (o->loss = strtod(v, NULL)) >= 0 && o->loss < 1 ? 0 : -1;
    if (!strcmp(k, "--gso"))
        return opt_onoff(v, &o->no_gso);
    if (!strcmp(k, "--gro"))
        return opt_onoff(v, &o->no_gro);
    if (!strcmp(k, "--pace"))
        return o->pace_bps = (uint64_t)(strtod(v, NULL) * 1e9), 0;
    if (!strcmp(k, "--batch") && num && n > 0 && n <= 1024)
        return o->batch = (uint32_t)n, 0;
    if (!strcmp(k, "--spray-run") && num && n > 0 && n <= MROCE_MAX_SPRAY_RUN)
        return o->spray_run = (uint32_t)n, 0;
    if (!strcmp(k, "--min-rto") && num && n > 0)
        return o->min_rto_ns = (uint64_t)n * 1000, 0;
    if (!strcmp(k, "--retry") && num && n > 0 && n < 256)
        return o->retry_cnt = (uint8_t)n, 0;
    if (!strcmp(k, "--json"))
        return o->json = v, 0;
    if (!strcmp(k, "--timeout") && num && n > 0)
        return o->timeout_s = (int)n, 0;
    if (!strcmp(k, "-N") && num && n >= 2 && n <= 64)
        return o->ranks = (int)n, 0;
    if (!strcmp(k, "--transport")) {
        if (strcmp(v, "metaroce") == 0)
            return 0;
        fprintf(stderr,
                "mroce-perf: --transport %s: the datapaths carry "
                "MetaRoCE only (the RoCEv2 baseline runs in "
                "mroce-sim)\n",
                v);
        return -1;
    }
    int rc = opt_cm(o, k, v, num, n);
    if (rc <= 0)
        return rc;
    if (!strcmp(k, "--datapath")) {
        if (strcmp(v, "udp") && strcmp(v, "dpdk"))
            return -1;
        o->datapath = strcmp(v, "dpdk") ? MROCE_DP_UDP : MROCE_DP_DPDK;
        return 0;
    }
    return 1;
}

/* Positional words: mode, test, host, collective name. */
static int opt_word(struct perf_opts *o, const char *w, bool *mode_set)
{
    int t = find_name(test_names, PERF_N_TESTS, w);
    int c = find_name(coll_names, 3, w);
    if (!strcmp(w, "server") || !strcmp(w, "client") ||
        !strcmp(w, "loopback")) {
        o->mode = !strcmp(w, "server")   ? PERF_SERVER
                  : !strcmp(w, "client") ? PERF_CLIENT
                                         : PERF_LOOPBACK;
        *mode_set = true;
    } else if (t >= 0 && o->test < 0) {
        o->test = t;
    } else if (c >= 0 && o->test == PERF_COLL) {
        o->coll_op = c;
    } else if (!o->host) {
        o->host = w; /* client HOST, or perftest's TEST HOST */
    } else {
        fprintf(stderr, "mroce-perf: unexpected argument '%s'\n", w);
        return -1;
    }
    return 0;
}

static void opt_defaults(struct perf_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->test = -1;
    o->port = 18515;
    o->paths = 16;
    o->streams = 1;
    o->mtu = 4096;
    o->spray_run = 1; /* R-PATH-17: off, no gain measured (datapath.md) */
    o->datapath = MROCE_DP_UDP;
    o->timeout_s = 120;
    o->max_size = PERF_MAX_SIZE_DEF;
    o->clients = 1;
    o->keepalive_ms = 2000;
    o->hello_timeout_ms = 5000;
    o->ranks = 4;
    o->eal_argv[o->eal_argc++] = "mroce-perf";
}

static int opt_finish(struct perf_opts *o, bool mode_set)
{
    if (o->test < 0 && mode_set && o->mode == PERF_SERVER)
        o->test = PERF_WRITE_BW; /* the client's choice wins anyway */
    if (o->test < 0) {
        fprintf(stderr, "mroce-perf: no test given\n");
        return -1;
    }
    if (!mode_set)
        o->mode = o->host ? PERF_CLIENT : PERF_SERVER;
    if (o->mode == PERF_CLIENT && !o->host) {
        fprintf(stderr, "mroce-perf: client needs a HOST\n");
        return -1;
    }
    bool lat = perf_test_is_lat(o->test);
    if (!o->size)
        o->size = lat ? 8 : 65536;
    if (!o->iters) /* coll: NCCL-tests' habit, -n 20 */
        o->iters = o->test == PERF_COLL ? 20 : 1000;
    if (!o->tx_depth)
        o->tx_depth = lat ? 1 : 128;
    if (!o->udp_port)
        o->udp_port = o->mode == PERF_CLIENT ? 4798 : 4797;
    if (o->sec_mode && o->mode != PERF_LOOPBACK && !o->psk_len) {
        fprintf(stderr, "mroce-perf: --auth/--encrypt between two "
                        "processes take their secret from the connection "
                        "manager: give both sides --psk FILE\n");
        return -1;
    }
    return 0;
}

int perf_opts_parse(struct perf_opts *o, int argc, char **argv)
{
    opt_defaults(o);
    bool mode_set = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help"))
            return 1;
        if (!strcmp(a, "--")) {
            for (i++; i < argc && o->eal_argc < PERF_MAX_EAL; i++)
                o->eal_argv[o->eal_argc++] = argv[i];
            break;
        }
        int rc = 0;
        if (!strcmp(a, "-a"))
            o->all_sizes = true;
        else if (!strcmp(a, "--check"))
            o->check = true;
        else if (!strcmp(a, "--quiet"))
            o->quiet = true;
        else if (!strcmp(a, "--loopback"))
            o->mode = PERF_LOOPBACK, mode_set = true;
        else if (!strcmp(a, "--auth"))
            o->sec_mode = MROCE_SEC_AUTH;
        else if (!strcmp(a, "--encrypt"))
            o->sec_mode = MROCE_SEC_ENCRYPT;
        else if (a[0] == '-' && i + 1 < argc)
            rc = opt_value(o, a, argv[++i]);
        else if (a[0] == '-')
            rc = 1;
        else
            rc = opt_word(o, a, &mode_set);
        if (rc) {
            fprintf(stderr, "mroce-perf: bad option '%s'%s%s\n", a,
                    rc < 0 && a[0] == '-' ? " value " : "",
                    rc < 0 && a[0] == '-' ? argv[i] : "");
            return -1;
        }
    }
    return opt_finish(o, mode_set);
}

bool perf_size_ok(const struct perf_opts *o, size_t size)
{
    size_t sizes[32];
    int n = perf_sizes(o, sizes, 32);
    for (int i = 0; i < n; i++)
        if (sizes[i] == size)
            return true;
    return false;
}

void perf_cm_attr(const struct perf_opts *o, struct mroce_cm_attr *a)
{
    memset(a, 0, sizeof(*a));
    a->psk = o->psk_len ? o->psk : NULL;
    a->psk_len = o->psk_len;
    memcpy(a->allow, o->allow, sizeof(a->allow));
    a->n_allow = o->n_allow;
    a->allow_any = o->allow_any;
    a->keepalive_ms = (uint16_t)o->keepalive_ms;
    a->no_keepalive = o->keepalive_ms == 0;
    a->hello_timeout_ms = o->hello_timeout_ms;
    /* R-CM-9: --auth/--encrypt require that mode; with a key alone the
     * strongest both sides accept (ENC with a crypto provider). */
    if (o->sec_mode)
        a->modes = o->sec_mode == MROCE_SEC_ENCRYPT ? MROCE_CM_MODE_ENC
                                                    : MROCE_CM_MODE_AUTH;
}

int perf_sizes(const struct perf_opts *o, size_t *sizes, int cap)
{
    if (!o->all_sizes) {
        sizes[0] = o->size;
        return 1;
    }
    int n = 0;
    for (size_t s = 2; s <= (8u << 20) && n < cap; s *= 2)
        sizes[n++] = s;
    return n;
}
