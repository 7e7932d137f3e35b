/* mroce-sim: one scenario on the packet-level fabric simulator, with the
 * real MetaRoCE or RoCEv2 engine on every host (docs/sim.md).
 *
 *   mroce-sim [--transport metaroce|rocev2] [--workload single|permutation
 *             |incast|allreduce|alltoall|allgather] [--size BYTES]
 *             [--hosts N] [--iters N] [--channels C] [--flavour
 *             writeimm|send] [--fail-plane P@US[:UP_US]] [--victim]
 *             [--sample-us US] [--json FILE [--json-samples]] ...
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

#include "sim/comm.h"
#include "sim/event.h"
#include "sim/exp.h"
#include "sim/link.h"
#ifdef MROCE_HAVE_MPI
#include "simmpi/comm_mpi.h"
#endif
#include "sim/report.h"
#include "sim/suite.h"

struct opts {
    struct mroce_sim_exp_cfg c;
    const char *json;
    bool quiet, json_samples, partition;
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
    for (int w = MROCE_SIM_EXP_SINGLE; w <= MROCE_SIM_EXP_ALLGATHER; w++)
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

static int o_fat_tree(struct opts *o, const char *v)
{
    return parse_int(v, 4, 64, &o->c.fat_k) || o->c.fat_k % 2 ? -1 : 0;
}

static int o_oversub(struct opts *o, const char *v)
{
    return parse_int(v, 1, 64, &o->c.oversub);
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

static int o_trim(struct opts *o, const char *v)
{
    return parse_onoff(v, &o->c.trim);
}

/* KB of shared switch buffer per port, 1 KB .. 1 GB */
static int o_buffer(struct opts *o, const char *v)
{
    uint64_t kb;
    if (parse_u64(v, &kb) || kb < 1 || kb > (1u << 20))
        return -1;
    o->c.buf_per_port = kb * 1024;
    return 0;
}

static int o_loss(struct opts *o, const char *v)
{
    return parse_double(v, &o->c.loss) || !(o->c.loss >= 0 && o->c.loss < 1)
               ? -1
               : 0;
}

/* Microseconds to picoseconds; -1 if not a time. */
static int parse_us(const char *s, uint64_t *ps)
{
    double us;
    if (parse_double(s, &us) || !(us >= 0 && us < 1e12))
        return -1;
    *ps = (uint64_t)(us * MROCE_SIM_PS_PER_US + 0.5);
    return 0;
}

/* LINK:FRACTION[@TIME_US] */
static int o_degrade(struct opts *o, const char *v)
{
    if (o->c.n_degrade >= MROCE_SIM_EXP_MAX_FAULTS)
        return -1;
    struct mroce_sim_exp_fault *f = &o->c.degrade[o->c.n_degrade];
    const char *frac = parse_link(v, ':', f);
    char num[64];
    if (!frac || strlen(frac) >= sizeof(num))
        return -1;
    strcpy(num, frac);
    char *at = strchr(num, '@');
    if (at && parse_us(at + 1, &f->t_ps))
        return -1;
    if (at)
        *at = '\0';
    if (parse_double(num, &f->fraction) ||
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
    if (!when || parse_us(when, &f->t_ps))
        return -1;
    o->c.n_fail++;
    return 0;
}

/* P@TIME_US[:UP_US] */
static int o_fail_plane(struct opts *o, const char *v)
{
    if (o->c.n_fail_plane >= MROCE_SIM_EXP_MAX_FAULTS)
        return -1;
    struct mroce_sim_exp_plane_fault *f = &o->c.fail_plane[o->c.n_fail_plane];
    char buf[96];
    if (strlen(v) >= sizeof(buf))
        return -1;
    strcpy(buf, v);
    char *at = strchr(buf, '@'), *up = strchr(buf, ':');
    if (!at || (up && up < at))
        return -1;
    *at = '\0';
    if (up)
        *up = '\0';
    if (parse_int(buf, 0, 15, &f->plane) || parse_us(at + 1, &f->t_ps) ||
        (up && parse_us(up + 1, &f->up_ps)) || (up && f->up_ps <= f->t_ps))
        return -1;
    o->c.n_fail_plane++;
    return 0;
}

static int o_sample(struct opts *o, const char *v)
{
    return parse_us(v, &o->c.sample_ps) || o->c.sample_ps == 0 ? -1 : 0;
}

static int o_reroute(struct opts *o, const char *v)
{
    return parse_us(v, &o->c.reroute_ps);
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

/* Nanoseconds of propagation delay on every link; 0: none. */
static int o_delay(struct opts *o, const char *v)
{
    double ns;
    if (parse_double(v, &ns) || !(ns >= 0 && ns < 1e9))
        return -1;
    uint64_t ps = (uint64_t)(ns * MROCE_SIM_PS_PER_NS + 0.5);
    o->c.delay_ps = ps ? ps : MROCE_SIM_ZERO_DELAY;
    return 0;
}

static int o_ranks(struct opts *o, const char *v)
{
    return parse_int(v, 1, 256, &o->c.ranks);
}

static int o_payload(struct opts *o, const char *v)
{
    if (strcmp(v, "auto") == 0)
        o->c.payload = MROCE_SIM_EXP_PAYLOAD_AUTO;
    else if (strcmp(v, "real") == 0)
        o->c.payload = MROCE_SIM_EXP_PAYLOAD_REAL;
    else if (strcmp(v, "free") == 0)
        o->c.payload = MROCE_SIM_EXP_PAYLOAD_FREE;
    else
        return -1;
    return 0;
}

static int o_squeeze(struct opts *o, const char *v)
{
    if (strcmp(v, "on") == 0)
        o->c.whole_pkts = false;
    else if (strcmp(v, "off") == 0)
        o->c.whole_pkts = true;
    else
        return -1;
    return 0;
}

static const struct {
    const char *name;
    opt_fn fn;
    const char *help;
} opt_tab[] = {
    {"--transport", o_transport, "metaroce|rocev2 [metaroce]"},
    {"--workload", o_workload,
     "single|permutation|incast|allreduce|alltoall|allgather [single]"},
    {"--size", o_size,
     "BYTES per flow or rank (all-gather: gathered array), k/M/G [1M]"},
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
    {"--fat-tree", o_fat_tree,
     "K: a 3-tier K-ary fat-tree (K even) instead of the leaf-spine; "
     "hosts, hosts-per-leaf and spines follow from K"},
    {"--oversub", o_oversub, "O: fat-tree leaf oversubscription [1]"},
    {"--link-gbps", o_gbps, "G, every link [400]"},
    {"--mtu", o_mtu, "payload BYTES per packet [4096]"},
    {"--link-delay-ns", o_delay,
     "NS of propagation delay on every link, 0: none [1000]"},
    {"--paths", o_paths, "MetaRoCE paths per connection [16]"},
    {"--qps", o_qps, "RoCEv2 QPs per connection [1]"},
    {"--pfc", o_pfc, "on|off [on for rocev2, off for metaroce]"},
    {"--dcqcn", o_dcqcn, "on|off, RoCEv2 only [on]"},
    {"--trim", o_trim,
     "on|off: switches trim data they cannot queue (NDP) [off]"},
    {"--buffer-kb", o_buffer, "KB of shared switch buffer per port [2048]"},
    {"--rocev2-timeout", o_timeout, "T: ACK timeout 4.096 us x 2^T [14]"},
    {"--loss", o_loss, "P end to end, on host uplinks [0]"},
    {"--degrade-link", o_degrade,
     "LINK:FRACTION[@TIME_US] (repeatable) [from time 0]"},
    {"--fail-link", o_fail, "LINK@TIME_US (repeatable)"},
    {"--fail-plane", o_fail_plane,
     "P@TIME_US[:UP_US]: every cable of plane P down (repeatable)"},
    {"--reroute-us", o_reroute, "US until switches reroute [never]"},
    {"--seed", o_seed, "S [0]"},
    {"--pcap", o_pcap, "FILE: host 0's links"},
    {"--json", o_json, "FILE ('-' for stdout)"},
    {"--deadline-us", o_deadline, "simulated time limit [2000000]"},
    {"--sample-us", o_sample, "US between time-series samples [1]"},
    {"--ranks", o_ranks,
     "N: the fabric cut into N partitions run as N threads (under "
     "mpirun: as the MPI ranks) with results identical to one [1]"},
    {"--payload", o_payload,
     "auto|real|free: buffers, or payload-free (every byte still "
     "accounted for) [auto: free above 256 MiB of buffers]"},
    {"--squeeze", o_squeeze,
     "on|off: payload-free packets travel squeezed in the packet pool "
     "(same results, less memory) [on]"},
};

static void f_victim(struct opts *o)
{
    o->c.victim = 1;
}

static void f_json_samples(struct opts *o)
{
    o->json_samples = true;
}

static void f_quiet(struct opts *o)
{
    o->quiet = true;
}

static void f_partition(struct opts *o)
{
    o->partition = true;
}

/* Options without a value. */
static const struct {
    const char *name;
    void (*set)(struct opts *o);
    const char *help;
} flag_tab[] = {
    {"--victim", f_victim,
     "incast: one more flow, last host -> host 1 (receiver's leaf)"},
    {"--json-samples", f_json_samples, "the time series in the JSON"},
    {"--quiet", f_quiet, "no progress on stderr"},
    {"--partition", f_partition,
     "print how --ranks N (or the MPI ranks) cut the fabric and the "
     "lookahead, and exit"},
};

#define N_FLAGS (sizeof(flag_tab) / sizeof(flag_tab[0]))

#define N_OPTS (sizeof(opt_tab) / sizeof(opt_tab[0]))

static void usage(FILE *f)
{
    fprintf(f, "usage: mroce-sim [options]   (docs/sim.md)\n");
    for (size_t i = 0; i < N_OPTS; i++)
        fprintf(f, "  %-17s %s\n", opt_tab[i].name, opt_tab[i].help);
    for (size_t i = 0; i < N_FLAGS; i++)
        fprintf(f, "  %-17s %s\n", flag_tab[i].name, flag_tab[i].help);
    fprintf(f, "LINK: a name such as leaf0-spine1, spine2-leaf1, "
               "host0-leaf0, p1.leaf0-spine0, or an id\n");
}

/* Sets a valueless option; false if arg is none. */
static bool parse_flag(struct opts *o, const char *arg)
{
    for (size_t k = 0; k < N_FLAGS; k++)
        if (strcmp(arg, flag_tab[k].name) == 0) {
            flag_tab[k].set(o);
            return true;
        }
    return false;
}

/* Returns 0, or -1 after printing what was wrong. */
static int parse_args(int argc, char **argv, struct opts *o)
{
    for (int i = 1; i < argc; i++) {
        if (parse_flag(o, argv[i]))
            continue;
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

static int write_json(const char *path, const struct mroce_sim_exp_result *r,
                      bool samples)
{
    bool out = strcmp(path, "-") == 0;
    FILE *f = out ? stdout : fopen(path, "w");
    if (!f) {
        fprintf(stderr, "mroce-sim: cannot write %s: %s\n", path,
                strerror(errno));
        return -1;
    }
    int rc = mroce_sim_report_json_flags(
        f, r, MROCE_SIM_REPORT_WALL | (samples ? MROCE_SIM_REPORT_SAMPLES : 0));
    if ((out ? fflush(f) : fclose(f)) != 0)
        rc = -1;
    if (rc)
        fprintf(stderr, "mroce-sim: writing %s failed\n", path);
    return rc;
}

/* --partition: rank 0 prints the cut for the ranks the run would have. */
static int show_partition(struct opts *o, const struct mroce_sim_comm *comm)
{
    int ranks = comm ? comm->size : o->c.ranks ? o->c.ranks : 1;
    struct mroce_sim_exp_result r;
    FILE *f = mroce_sim_comm_rank(comm) == 0 ? stdout : NULL;
    FILE *null = f ? NULL : fopen("/dev/null", "w");
    int err = mroce_sim_exp_partition(&o->c, ranks, f ? f : null, &r);
    if (null)
        fclose(null);
    if (err && f)
        fprintf(stderr, "mroce-sim: %s\n",
                r.error[0] ? r.error : mroce_strerror(err));
    mroce_sim_exp_result_free(&r);
    return err ? 2 : 0;
}

/* One process, threads (--ranks) or one MPI rank of many: the table, the
 * JSON and progress come from rank 0 only. */
static int run(struct opts *o, const struct mroce_sim_comm *comm)
{
    bool lead = mroce_sim_comm_rank(comm) == 0;
    if (comm && o->c.ranks && o->c.ranks != comm->size) {
        if (lead)
            fprintf(stderr,
                    "mroce-sim: --ranks %d but %d MPI ranks (mpirun -np)\n",
                    o->c.ranks, comm->size);
        return 2;
    }
    if (o->partition)
        return show_partition(o, comm);
    o->c.comm = comm;
    if (!o->quiet && lead)
        o->c.progress = progress;
    struct mroce_sim_exp_result r;
    int err = mroce_sim_exp_run(&o->c, &r);
    if (err) {
        if (lead)
            fprintf(stderr, "mroce-sim: %s\n",
                    r.error[0] ? r.error : mroce_strerror(err));
        mroce_sim_exp_result_free(&r);
        return 2;
    }
    int rc = 0;
    if (lead) {
        bool json_stdout = o->json && strcmp(o->json, "-") == 0;
        mroce_sim_report_table(json_stdout ? stderr : stdout, &r);
        rc = o->json && write_json(o->json, &r, o->json_samples) ? 2 : 0;
        if (r.flows_failed || r.flows_corrupt)
            rc = 1;
    }
    mroce_sim_exp_result_free(&r);
    return rc;
}

int main(int argc, char **argv)
{
    struct opts o = {0};
    if (argc > 1 && !strcmp(argv[1], "--suite")) {
#ifdef MROCE_HAVE_MPI
        if (mroce_simmpi_launched()) {
            fprintf(stderr, "mroce-sim: run a suite without mpirun; --ranks "
                            "N cuts each of its runs\n");
            return 2;
        }
#endif
        return mroce_sim_suite_main(argc, argv);
    }
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    const struct mroce_sim_comm *comm = NULL;
#ifdef MROCE_HAVE_MPI
    /* under mpirun: one rank of a parallel run (src/simmpi); a suite forks
     * its runs and cuts them with --ranks, never under mpirun */
    if (mroce_simmpi_launched() && !(comm = mroce_simmpi_init(&argc, &argv)))
        return 2;
#endif
    int rc = 2;
    if (parse_args(argc, argv, &o)) {
        if (mroce_sim_comm_rank(comm) == 0)
            usage(stderr);
    } else {
        rc = run(&o, comm);
    }
#ifdef MROCE_HAVE_MPI
    mroce_simmpi_finalize(comm);
#endif
    return rc;
}
