/* mroce-perf output: a perftest-like table and JSON. */
#include <stdio.h>

#include "perf/perf.h"

#define RULE                                                                   \
    "---------------------------------------------------------------------"    \
    "------------------"

void perf_report_header(const struct perf_opts *o)
{
    printf("%s\n", RULE);
    printf("                mroce %s (%s, %u paths, %u streams, "
           "MTU %u, spray run %u%s)\n",
           perf_test_name(o->test),
           o->datapath == MROCE_DP_DPDK ? "dpdk" : "udp", o->paths, o->streams,
           o->mtu, o->spray_run, o->loss > 0 ? ", impaired" : "");
    if (o->loss > 0)
        printf(" impairment loss : %.4f (both directions)\n", o->loss);
    printf("%s\n", RULE);
    if (perf_test_is_lat(o->test))
        printf(" #bytes #iterations    t_min[usec]    t_max[usec]  "
               "t_typical[usec]    t_avg[usec]    99%% percentile[usec]\n");
    else
        printf(" #bytes     #iterations    BW peak[Gb/sec]    "
               "BW average[Gb/sec]   MsgRate[Mpps]\n");
}

static const char *check_str(int c)
{
    return c > 0 ? "verified" : c < 0 ? "MISMATCH" : "not checked";
}

void perf_report_line(const struct perf_opts *o, const struct perf_result *r)
{
    if (perf_test_is_lat(o->test))
        printf(" %-7zu %-10llu     %-10.2f     %-10.2f   %-10.2f"
               "         %-10.2f     %-10.2f\n",
               r->size, (unsigned long long)r->iters, r->t_min_us, r->t_max_us,
               r->t_typical_us, r->t_avg_us, r->t_p99_us);
    else
        printf(" %-10zu %-10llu     %-10.2f         %-10.2f           "
               "%-10.6f\n",
               r->size, (unsigned long long)r->iters, r->bw_peak_gbps,
               r->bw_avg_gbps, r->msg_rate_mpps);
    const struct mroce_conn_counters *c = &r->conn, *p = &r->peer;
    double rate = c->tx_data_pkts
                      ? 100.0 * (double)c->retx_pkts / (double)c->tx_data_pkts
                      : 0;
    printf("   retx %llu (%.3f%%) peer retx %llu  rto %llu  tlp %llu  "
           "nacks rx %llu  ecn_ce rx %llu peer %llu  lost(imp) %llu  "
           "data %s\n",
           (unsigned long long)c->retx_pkts, rate,
           (unsigned long long)p->retx_pkts, (unsigned long long)c->rto_events,
           (unsigned long long)c->tlp_pkts, (unsigned long long)c->rx_nacks,
           (unsigned long long)c->rx_ecn_ce, (unsigned long long)p->rx_ecn_ce,
           (unsigned long long)r->dp.imp_lost, check_str(r->check));
    fflush(stdout);
}

/* The datapath counters a throughput figure is read with: drops at
 * the socket (tx_dropped), burst sizes (pkts / bursts) and pacing. */
static void json_dp(FILE *f, const struct mroce_dp_counters *d)
{
    fprintf(f,
            "\"dp_tx_dropped\":%llu,\"dp_tx_bursts\":%llu,"
            "\"dp_rx_bursts\":%llu,\"dp_rx_bad_frame\":%llu,"
            "\"dp_pace_waits\":%llu}",
            (unsigned long long)d->tx_dropped, (unsigned long long)d->tx_bursts,
            (unsigned long long)d->rx_bursts,
            (unsigned long long)d->rx_bad_frame,
            (unsigned long long)d->pace_waits);
}

/* Every drop and validation counter of this side (docs/spec.md 10.2,
 * R-VAL, R-AEAD-11), so that a run under attack shows what was refused
 * and why (tests/net/dp_*.sh). */
static void json_drops(FILE *f, const struct perf_result *r)
{
    const struct mroce_conn_counters *c = &r->conn;
    const struct mroce_ctx_counters *x = &r->ctx;
    fprintf(
        f,
        "\"tx_pkts\":%llu,\"rx_pkts\":%llu,\"tx_acks\":%llu,"
        "\"rx_acks\":%llu,\"tx_ackm_recs\":%llu,\"rx_ackm_recs\":%llu,"
        "\"tx_nacks\":%llu,\"rnr_naks\":%llu,"
        "\"rx_dup_pkts\":%llu,\"drop_bad_path\":%llu,"
        "\"drop_dsn_window\":%llu,\"drop_msn_window\":%llu,"
        "\"drop_bad_key\":%llu,\"drop_bad_bounds\":%llu,"
        "\"drop_bad_access\":%llu,\"drop_bad_msg\":%llu,"
        "\"drop_state\":%llu,\"drop_stale\":%llu,\"drop_bad_ack\":%llu,"
        "\"drop_psn_window\":%llu,\"drop_bad_close\":%llu,"
        "\"psn_resyncs\":%llu,\"rnr_capped\":%llu,",
        (unsigned long long)c->tx_pkts, (unsigned long long)c->rx_pkts,
        (unsigned long long)c->tx_acks, (unsigned long long)c->rx_acks,
        (unsigned long long)c->tx_ackm_recs,
        (unsigned long long)c->rx_ackm_recs, (unsigned long long)c->tx_nacks,
        (unsigned long long)c->rnr_naks, (unsigned long long)c->rx_dup_pkts,
        (unsigned long long)c->drop_bad_path,
        (unsigned long long)c->drop_dsn_window,
        (unsigned long long)c->drop_msn_window,
        (unsigned long long)c->drop_bad_key,
        (unsigned long long)c->drop_bad_bounds,
        (unsigned long long)c->drop_bad_access,
        (unsigned long long)c->drop_bad_msg, (unsigned long long)c->drop_state,
        (unsigned long long)c->drop_stale, (unsigned long long)c->drop_bad_ack,
        (unsigned long long)c->drop_psn_window,
        (unsigned long long)c->drop_bad_close,
        (unsigned long long)c->psn_resyncs, (unsigned long long)c->rnr_capped);
    fprintf(f,
            "\"drop_truncated\":%llu,\"drop_bad_version\":%llu,"
            "\"drop_bad_opcode\":%llu,\"drop_bad_payload\":%llu,"
            "\"drop_unknown_conn\":%llu,\"drop_bad_src\":%llu,",
            (unsigned long long)x->drop_truncated,
            (unsigned long long)x->drop_bad_version,
            (unsigned long long)x->drop_bad_opcode,
            (unsigned long long)x->drop_bad_payload,
            (unsigned long long)x->drop_unknown_conn,
            (unsigned long long)x->drop_bad_src);
}

static void json_result(FILE *f, const struct perf_result *r)
{
    const struct mroce_conn_counters *c = &r->conn;
    fprintf(f,
            "{\"bytes\":%zu,\"iterations\":%llu,\"seconds\":%.6f,"
            "\"bw_peak_gbps\":%.4f,\"bw_avg_gbps\":%.4f,"
            "\"msg_rate_mpps\":%.6f,\"t_min_us\":%.3f,"
            "\"t_typical_us\":%.3f,\"t_p99_us\":%.3f,\"t_max_us\":%.3f,"
            "\"t_avg_us\":%.3f,\"check\":\"%s\",",
            r->size, (unsigned long long)r->iters, r->secs, r->bw_peak_gbps,
            r->bw_avg_gbps, r->msg_rate_mpps, r->t_min_us, r->t_typical_us,
            r->t_p99_us, r->t_max_us, r->t_avg_us, check_str(r->check));
    fprintf(
        f,
        "\"tx_data_pkts\":%llu,\"retx_pkts\":%llu,"
        "\"peer_retx_pkts\":%llu,\"rto_events\":%llu,\"tlp_pkts\":%llu,"
        "\"rx_nacks\":%llu,\"rx_ecn_ce\":%llu,\"peer_rx_ecn_ce\":%llu,"
        "\"dp_tx_pkts\":%llu,\"dp_rx_pkts\":%llu,\"gso_sends\":%llu,"
        "\"gro_merged\":%llu,\"imp_lost\":%llu,\"drop_bad_crc\":%llu,"
        "\"drop_bad_tag\":%llu,\"drop_replay\":%llu,\"drop_sec_mode\":%llu,",
        (unsigned long long)c->tx_data_pkts, (unsigned long long)c->retx_pkts,
        (unsigned long long)r->peer.retx_pkts,
        (unsigned long long)c->rto_events, (unsigned long long)c->tlp_pkts,
        (unsigned long long)c->rx_nacks, (unsigned long long)c->rx_ecn_ce,
        (unsigned long long)r->peer.rx_ecn_ce,
        (unsigned long long)r->dp.tx_pkts, (unsigned long long)r->dp.rx_pkts,
        (unsigned long long)r->dp.gso_sends,
        (unsigned long long)r->dp.gro_merged,
        (unsigned long long)r->dp.imp_lost,
        (unsigned long long)r->ctx.drop_bad_crc,
        (unsigned long long)c->drop_bad_tag, (unsigned long long)c->drop_replay,
        (unsigned long long)c->drop_sec_mode);
    json_drops(f, r);
    json_dp(f, &r->dp);
}

int perf_report_json(const struct perf_opts *o, const struct perf_result *r,
                     int n, const char *extra)
{
    if (!o->json)
        return 0;
    FILE *f = fopen(o->json, "w");
    if (!f) {
        perror(o->json);
        return -1;
    }
    static const char *const modes[] = {"client", "server", "loopback"};
    fprintf(f,
            "{\"tool\":\"mroce-perf\",\"test\":\"%s\",\"mode\":\"%s\","
            "\"datapath\":\"%s\",\"transport\":\"%s\",\"paths\":%u,"
            "\"streams\":%u,\"mtu\":%u,\"spray_run\":%u,\"loss\":%g,"
            "\"gso\":%s,\"min_rto_us\":%llu,\"retry\":%u,\"sec_mode\":\"%s\",",
            perf_test_name(o->test), modes[o->mode],
            o->datapath == MROCE_DP_DPDK ? "dpdk" : "udp",
            o->transport ? "rocev2" : "metaroce", o->paths, o->streams, o->mtu,
            o->spray_run, o->loss, o->no_gso ? "false" : "true",
            (unsigned long long)(perf_min_rto_ns(o) / 1000), perf_retry_cnt(o),
            o->sec_mode == MROCE_SEC_ENCRYPT ? "encrypt"
            : o->sec_mode == MROCE_SEC_AUTH  ? "auth"
                                             : "none");
    if (extra)
        fprintf(f, "%s,", extra);
    fprintf(f, "\"results\":[");
    for (int i = 0; i < n; i++) {
        if (i)
            fputc(',', f);
        json_result(f, &r[i]);
    }
    fprintf(f, "]}\n");
    return fclose(f) ? -1 : 0;
}

int perf_report_sizes(const struct perf_opts *o, const size_t *sizes, int n,
                      int (*run)(void *ud, size_t size, struct perf_result *r),
                      void *ud, struct perf_result *res, int *done)
{
    int err = 0;
    if (!o->quiet)
        perf_report_header(o);
    for (*done = 0; *done < n; ++*done) {
        err = run(ud, sizes[*done], &res[*done]);
        if (!err && !o->quiet)
            perf_report_line(o, &res[*done]);
        if (!err && res[*done].check < 0)
            err = MROCE_EPROTO;
        if (err)
            break;
    }
    return err;
}
