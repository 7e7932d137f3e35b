/* mroce-sim: one scenario on the packet-level fabric simulator, with the
 * real MetaRoCE or RoCEv2 engine on every host (docs/sim.md).
 *
 *   mroce-sim [--transport metaroce|rocev2] [--workload single|permutation
 *             |incast|allreduce|alltoall] [--size BYTES] [--hosts N]
 *             [--iters N] [--channels C] [--flavour writeimm|send]
 *             [--json FILE] ...
 *
 * Prints a table (FCT percentiles next to the analytic ideal, packet and
 * fabric counters, simulator cost) and optionally writes the same as one
 * JSON object. Exit status: 0 if every flow (collective: every iteration)
 * completed with intact data (verified result), 1 if one failed or its
 * data differs, 2 on a usage or setup error.
 * The scenario itself is src/sim/exp.c, shared with the validation tests.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mroce/mroce.h>

#include "sim/event.h"
#include "sim/exp.h"
#include "sim/report.h"
#include "sim/suite.h"

struct opts {
    struct mroce_sim_exp_cfg c;
    const char *json;
    bool quiet;
};

typedef int (*opt_fn)(struct opts *o, const char *v);

/* ---- Value parsers: 0 on success, -1 on a bad value ---- */

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s || *s == '-')
        return -1;
    /* binary suffixes for sizes: 4k, 1M, 2G */
    int shift = *end == 'k' || *end == 'K'   ? 10
                : *end == 'm' || *end == 'M' ? 20
                : *end == 'g' || *end == 'G' ? 30
                                             : 0;
    end += shift != 0;
    if (*end || (shift && v > (UINT64_MAX >> shift)))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    uint64_t v;
    if (parse_u64(s, &v) || v < (uint64_t)lo || v > (uint64_t)hi)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end)
        return -1;
    *out = v;
    return 0;
}

static int parse_onoff(const char *s, int *out)
{
    if (strcmp(s, "on") == 0)
        *out = MROCE_SIM_EXP_ON;
    else if (strcmp(s, "off") == 0)
        *out = MROCE_SIM_EXP_OFF;
    else
        return -1;
    return 0;
}

/* Splits "NAME<sep>VALUE" into the fault's link name; returns VALUE. */
static const char *parse_link(const char *s, char sep,
                              struct mroce_sim_exp_fault *f)
{
    const char *at = strrchr(s, sep);
    size_t n = at ? (size_t)(at - s) : 0;
    if (!at || n == 0 || n >= sizeof(f->link))
        return NULL;
    memcpy(f->link, s, n);
    f->link[n] = '\0';
    return at + 1;
}

/* ---- Options ---- */

static int o_transport(struct opts *o, const char *v)
{
    if (strcmp(v, "metaroce") == 0)
        o->c.transport = MROCE_TRANSPORT_METAROCE;
    else if (strcmp(v, "rocev2") == 0)
        o->c.transport = MROCE_TRANSPORT_ROCEV2;
    else
        return -1;
    return 0;
}

static int o_workload(struct opts *o, const char *v)
{
    for (int w = MROCE_SIM_EXP_SINGLE; w <= MROCE_SIM_EXP_ALLTOALL; w++)
        if (strcmp(v, mroce_sim_exp_workload_str(w)) == 0) {
            o->c.workload = w;
            return 0;
        }
    return -1;
}

static int o_hosts(struct opts *o, const char *v)
{
    return parse_int(v, 2, 65536, &o->c.hosts);
}

static int o_hpl(struct opts *o, const char *v)
{
    return parse_int(v, 1, 254, &o->c.hosts_per_leaf);
}

static int o_spines(struct opts *o, const char *v)
{
    return parse_int(v, 1, 1024, &o->c.spines);
}

static int o_planes(struct opts *o, const char *v)
{
    return parse_int(v, 1, 16, &o->c.planes);
}

static int o_gbps(struct opts *o, const char *v)
{
    double g;
    if (parse_double(v, &g) || !(g >= 0.001 && g <= 100000))
        return -1;
    o->c.link_bps = (uint64_t)(g * 1e9 + 0.5);
    return 0;
}

static int o_mtu(struct opts *o, const char *v)
{
    int m;
    if (parse_int(v, 256, 9000, &m))
        return -1;
    o->c.mtu = (uint32_t)m;
    return 0;
}

static int o_paths(struct opts *o, const char *v)
{
    return parse_int(v, 1, 256, &o->c.paths);
}

static int o_qps(struct opts *o, const char *v)
{
    return parse_int(v, 1, MROCE_MAX_QPS, &o->c.qps);
}

static int o_pfc(struct opts *o, const char *v)
{
    return parse_onoff(v, &o->c.pfc);
}

static int o_dcqcn(struct opts *o, const char *v)
{
    return parse_onoff(v, &o->c.dcqcn);
}

static int o_loss(struct opts *o, const char *v)
{
    return parse_double(v, &o->c.loss) || !(o->c.loss >= 0 && o->c.loss < 1)
               ? -1
               : 0;
}

static int o_degrade(struct opts *o, const char *v)
{
    if (o->c.n_degrade >= MROCE_SIM_EXP_MAX_FAULTS)
        return -1;
    struct mroce_sim_exp_fault *f = &o->c.degrade[o->c.n_degrade];
    const char *frac = parse_link(v, ':', f);
    if (!frac || parse_double(frac, &f->fraction) ||
        !(f->fraction > 0 && f->fraction <= 1))
        return -1;
    o->c.n_degrade++;
    return 0;
}

static int o_fail(struct opts *o, const char *v)
{
    if (o->c.n_fail >= MROCE_SIM_EXP_MAX_FAULTS)
        return -1;
    struct mroce_sim_exp_fault *f = &o->c.fail[o->c.n_fail];
    const char *when = parse_link(v, '@', f);
    double us;
    if (!when || parse_double(when, &us) || !(us >= 0 && us < 1e12))
        return -1;
    f->t_ps = (uint64_t)(us * MROCE_SIM_PS_PER_US + 0.5);
    o->c.n_fail++;
    return 0;
}

static int o_reroute(struct opts *o, const char *v)
{
    double us;
    if (parse_double(v, &us) || !(us >= 0 && us < 1e12))
        return -1;
    o->c.reroute_ps = (uint64_t)(us * MROCE_SIM_PS_PER_US + 0.5);
    return 0;
}

static int o_seed(struct opts *o, const char *v)
{
    return parse_u64(v, &o->c.seed);
}

static int o_pcap(struct opts *o, const char *v)
{
    o->c.pcap = v;
    return 0;
}

static int o_json(struct opts *o, const char *v)
{
    o->json = v;
    return 0;
}

static int o_size(struct opts *o, const char *v)
{
    return parse_u64(v, &o->c.size) || o->c.size == 0 ? -1 : 0;
}

static int o_msg(struct opts *o, const char *v)
{
    uint64_t m;
    if (parse_u64(v, &m) || m == 0 || m > (1u << 30))
        return -1;
    o->c.msg_bytes = (uint32_t)m;
    return 0;
}

static int o_iters(struct opts *o, const char *v)
{
    return parse_int(v, 1, 1000000, &o->c.iters);
}

static int o_channels(struct opts *o, const char *v)
{
    return parse_int(v, 1, 64, &o->c.channels);
}

static int o_flavour(struct opts *o, const char *v)
{
    if (strcmp(v, "writeimm") == 0)
        o->c.flavour = MROCE_SIM_EXP_FLAVOUR_WRITE_IMM;
    else if (strcmp(v, "send") == 0)
        o->c.flavour = MROCE_SIM_EXP_FLAVOUR_SEND;
    else
        return -1;
    return 0;
}

static int o_schedule(struct opts *o, const char *v)
{
    if (strcmp(v, "concurrent") != 0 && strcmp(v, "shifted") != 0)
        return -1;
    o->c.shifted = strcmp(v, "shifted") == 0;
    return 0;
}

static int o_senders(struct opts *o, const char *v)
{
    return parse_int(v, 1, 65535, &o->c.senders);
}

static int o_timeout(struct opts *o, const char *v)
{
    int t;
    if (parse_int(v, 1, 31, &t))
        return -1;
    o->c.rocev2_timeout = (uint8_t)t;
    return 0;
}

static int o_deadline(struct opts *o, const char *v)
{
    double us;
    if (parse_double(v, &us) || !(us > 0 && us < 1.8e13))
        return -1;
    o->c.deadline_ps = (uint64_t)(us * MROCE_SIM_PS_PER_US + 0.5);
    return 0;
}

static const struct {
    const char *name;
    opt_fn fn;
    const char *help;
} opt_tab[] = {
    {"--transport", o_transport, "metaroce|rocev2 [metaroce]"},
    {"--workload", o_workload,
     "single|permutation|incast|allreduce|alltoall [single]"},
    {"--size", o_size,
     "BYTES per flow (collectives: per rank), k/M/G = 2^10/20/30 [1M]"},
    {"--iters", o_iters, "N collectives back to back [1]"},
    {"--channels", o_channels, "C collective channels (streams) [1]"},
    {"--flavour", o_flavour, "writeimm|send, all-reduce [writeimm]"},
    {"--schedule", o_schedule, "concurrent|shifted, all-to-all [concurrent]"},
    {"--msg", o_msg, "BYTES per WRITE [4M]"},
    {"--senders", o_senders, "K incast senders [4]"},
    {"--hosts", o_hosts, "N [16]"},
    {"--hosts-per-leaf", o_hpl, "H, divides N [min(8, N)]"},
    {"--spines", o_spines, "S [H: non-blocking]"},
    {"--planes", o_planes, "P [1]"},
    {"--link-gbps", o_gbps, "G, every link [400]"},
    {"--mtu", o_mtu, "payload BYTES per packet [4096]"},
    {"--paths", o_paths, "MetaRoCE paths per connection [16]"},
    {"--qps", o_qps, "RoCEv2 QPs per connection [1]"},
    {"--pfc", o_pfc, "on|off [on for rocev2, off for metaroce]"},
    {"--dcqcn", o_dcqcn, "on|off, RoCEv2 only [on]"},
    {"--rocev2-timeout", o_timeout, "T: ACK timeout 4.096 us x 2^T [14]"},
    {"--loss", o_loss, "P end to end, on host uplinks [0]"},
    {"--degrade-link", o_degrade, "LINK:FRACTION (repeatable)"},
    {"--fail-link", o_fail, "LINK@TIME_US (repeatable)"},
    {"--reroute-us", o_reroute, "US until switches reroute [never]"},
    {"--seed", o_seed, "S [0]"},
    {"--pcap", o_pcap, "FILE: host 0's links"},
    {"--json", o_json, "FILE ('-' for stdout)"},
    {"--deadline-us", o_deadline, "simulated time limit [2000000]"},
};

#define N_OPTS (sizeof(opt_tab) / sizeof(opt_tab[0]))

static void usage(FILE *f)
{
    fprintf(f, "usage: mroce-sim [options]   (docs/sim.md)\n");
    for (size_t i = 0; i < N_OPTS; i++)
        fprintf(f, "  %-17s %s\n", opt_tab[i].name, opt_tab[i].help);
    fprintf(f, "  %-17s %s\n", "--quiet", "no progress on stderr");
    fprintf(f, "LINK: a name such as leaf0-spine1, spine2-leaf1, "
               "host0-leaf0, p1.leaf0-spine0, or an id\n");
}

/* Returns 0, or -1 after printing what was wrong. */
static int parse_args(int argc, char **argv, struct opts *o)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quiet") == 0) {
            o->quiet = true;
            continue;
        }
        size_t k = 0;
        while (k < N_OPTS && strcmp(argv[i], opt_tab[k].name) != 0)
            k++;
        if (k == N_OPTS) {
            fprintf(stderr, "mroce-sim: unknown option '%s'\n", argv[i]);
            return -1;
        }
        if (i + 1 >= argc || opt_tab[k].fn(o, argv[i + 1])) {
            fprintf(stderr, "mroce-sim: %s needs %s\n", argv[i],
                    opt_tab[k].help);
            return -1;
        }
        i++;
    }
    return 0;
}

/* ---- Running ---- */

static void progress(void *ud, const struct mroce_sim_exp_progress *p)
{
    (void)ud;
    fprintf(stderr,
            "mroce-sim: %.1f us simulated, %d/%d flows/iters done, "
            "%.2f M events, "
            "%.2f M events/s\n",
            (double)p->now_ps / MROCE_SIM_PS_PER_US, p->flows_settled, p->flows,
            (double)p->events / 1e6,
            p->wall_s > 0 ? (double)p->events / p->wall_s / 1e6 : 0.0);
}

static int write_json(const char *path, const struct mroce_sim_exp_result *r)
{
    bool out = strcmp(path, "-") == 0;
    FILE *f = out ? stdout : fopen(path, "w");
    if (!f) {
        fprintf(stderr, "mroce-sim: cannot write %s: %s\n", path,
                strerror(errno));
        return -1;
    }
    int rc = mroce_sim_report_json(f, r, true);
    if ((out ? fflush(f) : fclose(f)) != 0)
        rc = -1;
    if (rc)
        fprintf(stderr, "mroce-sim: writing %s failed\n", path);
    return rc;
}

int main(int argc, char **argv)
{
    struct opts o = {0};
    if (argc > 1 && !strcmp(argv[1], "--suite"))
        return mroce_sim_suite_main(argc, argv);
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    if (parse_args(argc, argv, &o)) {
        usage(stderr);
        return 2;
    }
    if (!o.quiet)
        o.c.progress = progress;
    struct mroce_sim_exp_result r;
    int err = mroce_sim_exp_run(&o.c, &r);
    if (err) {
        fprintf(stderr, "mroce-sim: %s\n",
                r.error[0] ? r.error : mroce_strerror(err));
        mroce_sim_exp_result_free(&r);
        return 2;
    }
    bool json_stdout = o.json && strcmp(o.json, "-") == 0;
    mroce_sim_report_table(json_stdout ? stderr : stdout, &r);
    int rc = o.json && write_json(o.json, &r) ? 2 : 0;
    if (r.flows_failed || r.flows_corrupt)
        rc = 1;
    mroce_sim_exp_result_free(&r);
    return rc;
}
