/* The soft NIC's profile: what a verbs program cannot say (paths, planes,
 * streams, the datapath, timers), read from MROCE_VERBS_* variables. Both
 * ends of a QP must run the same profile (R-SOFT-4): the verbs exchange
 * carries no room for it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mroce/mroce_verbs.h>

#include "ibverbs/sv.h"

static int prof_num(const char *name, uint64_t lo, uint64_t hi, uint64_t def,
                    uint64_t *out, char *err, size_t errlen)
{
    const char *s = getenv(name);
    *out = def;
    if (!s || !*s)
        return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end || v < lo || v > hi) {
        snprintf(err, errlen, "%s=%s: expected %llu..%llu", name, s,
                 (unsigned long long)lo, (unsigned long long)hi);
        return -1;
    }
    *out = v;
    return 0;
}

static int prof_str(const char *name, const char *def, char *out, size_t cap,
                    char *err, size_t errlen)
{
    const char *s = getenv(name);
    if (!s || !*s)
        s = def;
    if (strlen(s) >= cap) {
        snprintf(err, errlen, "%s: longer than %zu bytes", name, cap - 1);
        return -1;
    }
    strcpy(out, s);
    return 0;
}

static int prof_datapath(struct sv_profile *p, char *err, size_t errlen)
{
    const char *s = getenv("MROCE_VERBS_DATAPATH");
    p->datapath = MROCE_DP_UDP;
    if (!s || !*s || !strcmp(s, "udp"))
        return 0;
    if (!strcmp(s, "dpdk")) {
        p->datapath = MROCE_DP_DPDK;
        return prof_str("MROCE_VERBS_DPDK_ARGS", "", p->dpdk_args,
                        sizeof(p->dpdk_args), err, errlen);
    }
    snprintf(err, errlen, "MROCE_VERBS_DATAPATH=%s: expected udp or dpdk", s);
    return -1;
}

static int prof_loss(struct sv_profile *p, char *err, size_t errlen)
{
    const char *s = getenv("MROCE_VERBS_LOSS");
    p->loss = 0;
    if (!s || !*s)
        return 0;
    char *end;
    p->loss = strtod(s, &end);
    if (*end || p->loss < 0 || p->loss >= 1) {
        snprintf(err, errlen, "MROCE_VERBS_LOSS=%s: expected 0 <= p < 1", s);
        return -1;
    }
    return 0;
}

int sv_profile_load(struct sv_profile *p, char *err, size_t errlen)
{
    uint64_t port, paths, streams, planes, run, batch, rto, retry, gso, gro,
        spins, log, assist;
    memset(p, 0, sizeof(*p));
    if (prof_str("MROCE_VERBS_IP", "127.0.0.1", p->ip, sizeof(p->ip), err,
                 errlen) ||
        prof_num("MROCE_VERBS_PORT", 1, 65535, 0, &port, err, errlen) ||
        prof_num("MROCE_VERBS_PATHS", 1, 256, 16, &paths, err, errlen) ||
        prof_num("MROCE_VERBS_STREAMS", 1, 64, 1, &streams, err, errlen) ||
        prof_num("MROCE_VERBS_PLANES", 1, MROCE_MAX_PLANES, 1, &planes, err,
                 errlen) ||
        prof_num("MROCE_VERBS_SPRAY_RUN", 1, MROCE_MAX_SPRAY_RUN, 1, &run, err,
                 errlen) ||
        prof_num("MROCE_VERBS_BATCH", 0, 1024, 0, &batch, err, errlen) ||
        prof_num("MROCE_VERBS_MIN_RTO_US", 1, 10000000, 1000, &rto, err,
                 errlen) ||
        prof_num("MROCE_VERBS_RETRY", 1, 15, 15, &retry, err, errlen) ||
        prof_num("MROCE_VERBS_GSO", 0, 1, 1, &gso, err, errlen) ||
        prof_num("MROCE_VERBS_GRO", 0, 1, 1, &gro, err, errlen) ||
        prof_num("MROCE_VERBS_SPINS", 0, 1000000, 50, &spins, err, errlen) ||
        prof_num("MROCE_VERBS_LOG", 0, 2, 0, &log, err, errlen) ||
        prof_num("MROCE_VERBS_ASSIST", 0, 1, 1, &assist, err, errlen) ||
        prof_datapath(p, err, errlen) || prof_loss(p, err, errlen))
        return -1;
    p->port = (uint16_t)port;
    p->paths = (uint16_t)paths;
    p->streams = (uint16_t)streams;
    p->planes = (uint32_t)planes;
    p->spray_run = (uint32_t)run;
    p->batch = (uint32_t)batch;
    p->min_rto_ns = rto * 1000;
    p->retry_cnt = (uint8_t)retry;
    p->no_gso = !gso;
    p->no_gro = !gro;
    p->spins = (uint32_t)spins;
    p->log = (int)log;
    p->assist = assist != 0;
    return 0;
}

/* mroce_verbs_open_device: explicit values over the environment's. */
int sv_profile_override(struct sv_profile *p, const struct mroce_verbs_attr *a)
{
    if (a->datapath && a->datapath != MROCE_DP_UDP &&
        a->datapath != MROCE_DP_DPDK)
        return EINVAL;
    if (a->paths > 256 || a->streams > 64 || a->planes > MROCE_MAX_PLANES)
        return EINVAL;
    if ((a->ip && strlen(a->ip) >= sizeof(p->ip)) ||
        (a->dpdk_args && strlen(a->dpdk_args) >= sizeof(p->dpdk_args)))
        return EINVAL;
    if (a->datapath)
        p->datapath = a->datapath;
    if (a->ip)
        strcpy(p->ip, a->ip);
    if (a->dpdk_args)
        strcpy(p->dpdk_args, a->dpdk_args);
    p->port = a->port ? a->port : p->port;
    p->paths = a->paths ? a->paths : p->paths;
    p->streams = a->streams ? a->streams : p->streams;
    p->planes = a->planes ? a->planes : p->planes;
    return 0;
}
