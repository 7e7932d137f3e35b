/* Experiment reports; see report.h. */
#include "sim/report.h"

#include <inttypes.h>

#include <mroce/mroce.h>

#include "sim/defaults.h"
#include "sim/event.h"
#include "sim/exp_counters.h"
#include "sim/link.h"

#define R_US(ps) ((double)(ps) / MROCE_SIM_PS_PER_US)

const char *mroce_sim_report_transport_str(int transport)
{
    return transport == MROCE_TRANSPORT_ROCEV2 ? "rocev2" : "metaroce";
}

static const char *onoff(int v)
{
    return v == MROCE_SIM_EXP_ON ? "on" : "off";
}

/* ---- Table ---- */

static void table_head(FILE *f, const struct mroce_sim_exp_result *r)
{
    const struct mroce_sim_exp_cfg *c = &r->cfg;
    bool roce = c->transport == MROCE_TRANSPORT_ROCEV2;
    if (c->workload >= MROCE_SIM_EXP_ALLREDUCE)
        fprintf(f, "mroce-sim: %s, %s, seed %" PRIu64 "\n",
                mroce_sim_report_transport_str(c->transport),
                mroce_sim_exp_workload_str(c->workload), c->seed);
    else
        fprintf(f,
                "mroce-sim: %s, %s, %d flow(s) x %" PRIu64 " B "
                "(WRITEs of <= %" PRIu32 " B), seed %" PRIu64 "\n",
                mroce_sim_report_transport_str(c->transport),
                mroce_sim_exp_workload_str(c->workload), r->n_flows, c->size,
                c->msg_bytes, c->seed);
    if (c->fat_k)
        fprintf(f,
                "  fabric     %d hosts: %d-ary fat-tree, %d pods x %d leaves x "
                "%d hosts, %d aggs per pod, %d cores, %d plane(s), %.0f Gb/s, "
                "MTU %" PRIu32 ", PFC %s\n",
                c->hosts, c->fat_k, c->fat_k, c->fat_k / 2, c->hosts_per_leaf,
                c->spines, c->fat_k * c->fat_k / 4, c->planes,
                (double)c->link_bps / 1e9, c->mtu, onoff(c->pfc));
    else
        fprintf(f,
                "  fabric     %d hosts = %d leaves x %d, %d spines, %d "
                "plane(s), %.0f Gb/s, MTU %" PRIu32 ", PFC %s\n",
                c->hosts, c->hosts / c->hosts_per_leaf, c->hosts_per_leaf,
                c->spines, c->planes, (double)c->link_bps / 1e9, c->mtu,
                onoff(c->pfc));
    if (c->trim == MROCE_SIM_EXP_ON ||
        c->buf_per_port != MROCE_SIM_BUF_PER_PORT)
        fprintf(f,
                "  switches   %" PRIu64 " KB of buffer per port, trimming %s\n",
                c->buf_per_port / 1024, onoff(c->trim));
    if (roce)
        fprintf(f, "  transport  %d QP(s)/connection, DCQCN %s, timeout %d\n",
                c->qps, onoff(c->dcqcn), c->rocev2_timeout);
    else
        fprintf(f, "  transport  %d paths/connection\n", c->paths);
    if (c->loss > 0 || c->n_degrade || c->n_fail || c->n_fail_plane)
        fprintf(f,
                "  faults     loss %g, %d degraded, %d failed link(s), %d "
                "failed plane(s)\n",
                c->loss, c->n_degrade, c->n_fail, c->n_fail_plane);
}

static void table_fct(FILE *f, const struct mroce_sim_exp_result *r)
{
    double ideal = R_US(r->ideal_ps);
    fprintf(f, "  flows      %d completed, %d failed, %d corrupt\n",
            r->flows_completed, r->flows_failed, r->flows_corrupt);
    fprintf(f, "  ideal      %.3f us (one flow alone, host 0 -> %d)\n", ideal,
            r->cfg.hosts - 1);
    fprintf(f, "  FCT        p50 %.3f  p99 %.3f  max %.3f us\n", r->fct_us.p50,
            r->fct_us.p99, r->fct_us.max);
    fprintf(f, "  FCT/ideal  p50 %.3f  p99 %.3f  max %.3f\n",
            r->fct_us.p50 / ideal, r->fct_us.p99 / ideal,
            r->fct_us.max / ideal);
    fprintf(f,
            "  slowdown   p50 %.3f  p99 %.3f  max %.3f (vs each flow alone)\n",
            r->slowdown.p50, r->slowdown.p99, r->slowdown.max);
    fprintf(f, "  JCT        %.3f us, fraction of ideal %.3f\n",
            R_US(r->jct_ps), r->fraction_of_ideal);
}

static bool is_coll(const struct mroce_sim_exp_result *r)
{
    return r->cfg.workload == MROCE_SIM_EXP_ALLREDUCE ||
           r->cfg.workload == MROCE_SIM_EXP_ALLTOALL ||
           r->cfg.workload == MROCE_SIM_EXP_ALLGATHER;
}

static const char *coll_variant(const struct mroce_sim_exp_cfg *c)
{
    if (c->workload == MROCE_SIM_EXP_ALLTOALL)
        return c->shifted ? "shifted" : "concurrent";
    if (c->workload == MROCE_SIM_EXP_ALLGATHER)
        return "writeimm";
    return c->flavour == MROCE_SIM_EXP_FLAVOUR_SEND ? "send" : "writeimm";
}

static void table_coll(FILE *f, const struct mroce_sim_exp_result *r)
{
    const struct mroce_sim_exp_cfg *c = &r->cfg;
    fprintf(f,
            "  collective %s (%s), %d ranks x %" PRIu64 " B, %d channel(s), "
            "%d/%d iteration(s) verified\n",
            mroce_sim_exp_workload_str(c->workload), coll_variant(c), c->hosts,
            r->coll_bytes, c->channels, r->iters_done, c->iters);
    fprintf(f,
            "  JCT        mean %.3f us, max %.3f us; ideal %.3f us "
            "(eta %.4f, alpha %.3f us), ratio %.3f\n",
            R_US(r->jct_ps), R_US(r->jct_max_ps), R_US(r->ideal_ps), r->eta,
            R_US(r->alpha_ps),
            r->ideal_ps ? (double)r->jct_ps / (double)r->ideal_ps : 0.0);
    fprintf(f,
            "  bandwidth  algbw %.2f Gb/s, busbw %.2f Gb/s, ideal busbw %.2f "
            "Gb/s, eta*B %.2f Gb/s\n",
            r->algbw_gbps, r->busbw_gbps, r->ideal_busbw_gbps,
            r->eta * r->line_gbps);
    fprintf(f, "  fraction   of ideal (busbw / eta*B) %.3f\n",
            r->fraction_of_ideal);
}

static const char *const where_names[3] = {"leaf->host", "leaf->spine",
                                           "spine->leaf"};

static const char *const json_where[3] = {"leaf_to_host", "leaf_to_spine",
                                          "spine_to_leaf"};

static int n_planes(const struct mroce_sim_exp_result *r)
{
    return r->cfg.planes < MROCE_SIM_EXP_MAX_PLANES ? r->cfg.planes
                                                    : MROCE_SIM_EXP_MAX_PLANES;
}

/* The share of the hosts' bytes each plane carried. */
static void table_planes(FILE *f, const struct mroce_sim_exp_result *r)
{
    uint64_t sum = 0;
    for (int p = 0; p < n_planes(r); p++)
        sum += r->plane_tx_bytes[p];
    if (n_planes(r) < 2 || !sum)
        return;
    fprintf(f, "  planes     share of host bytes:");
    for (int p = 0; p < n_planes(r); p++)
        fprintf(f, " %.3f", (double)r->plane_tx_bytes[p] / (double)sum);
    fprintf(f, "\n");
}

static void table_fabric(FILE *f, const struct mroce_sim_exp_result *r)
{
    double retx = r->data_pkts ? 100.0 * r->retx_pkts / r->data_pkts : 0;
    fprintf(f,
            "  packets    data %" PRIu64 ", retx %" PRIu64 " (%.2f%%), "
            "out of order %" PRIu64 ", timeouts %" PRIu64 "\n",
            r->data_pkts, r->retx_pkts, retx, r->ooo_pkts, r->timeouts);
    const struct mroce_sim_exp_lost *l = &r->lost_by;
    fprintf(f,
            "  lost by    sack %" PRIu64 ", rack %" PRIu64 ", pto %" PRIu64
            ", rto %" PRIu64 ", rnr %" PRIu64 "\n",
            l->sack, l->rack, l->pto, l->rto, l->rnr);
    fprintf(f, "  drops      %" PRIu64, r->drops);
    for (int i = 0; i < MROCE_SIM_DROP_N; i++)
        if (r->drop[i])
            fprintf(f, " %s %" PRIu64, mroce_sim_drop_str(i), r->drop[i]);
    fprintf(f,
            "\n  switches   ECN marks %" PRIu64 ", PFC pauses %" PRIu64
            " (%.3f us paused), max queue %" PRIu64 " B\n",
            r->ecn_marks, r->pfc_pauses, R_US(r->pfc_pause_ps), r->max_qbytes);
    fprintf(f, "  queues    ");
    for (int i = 0; i < 3; i++)
        fprintf(f, "%s %s ECN %" PRIu64 ", max %" PRIu64 " B", i ? ";" : "",
                where_names[i], r->where_ecn[i], r->where_max_qbytes[i]);
    fprintf(f, "\n");
    table_planes(f, r);
}

static void print_drop(void *ud, const char *name, uint64_t v)
{
    fprintf(ud, " %s %" PRIu64, name, v);
}

static void table_endpoints(FILE *f, const struct mroce_sim_exp_result *r)
{
    const struct mroce_conn_counters *c = &r->conn_cnt;
    double per = c->tx_data_pkts ? 1.0 / (double)c->tx_data_pkts : 0;
    fprintf(f,
            "  endpoints  ACKs %" PRIu64 " (%.3f per data packet), ACKM "
            "records %" PRIu64 ", NACKs %" PRIu64 ", tail-loss probes %" PRIu64
            "; dropped:",
            c->tx_acks, (double)c->tx_acks * per, c->tx_ackm_recs, c->tx_nacks,
            c->tlp_pkts);
    /* the drops counted at the endpoints, by reason: none on a clean run */
    uint64_t total = mroce_sim_cnt_drops(r, print_drop, f);
    fprintf(f, "%s\n", total ? "" : " none");
}

static void table_health(FILE *f, const struct mroce_sim_exp_result *r)
{
    fprintf(f,
            "  health     retx %.4f, out of order %.4f, ECN-marked %.4f (of "
            "%" PRIu64 " data packets delivered), MMR %.3f, p95 queue %" PRIu64
            " B\n",
            r->retx_rate, r->ooo_rate, r->ecn_fraction, r->rx_data_pkts, r->mmr,
            r->p95_qbytes);
    if (!is_coll(r))
        fprintf(f, "  fairness   Jain %.4f over %d flow(s)%s", r->jain,
                r->n_flows - (r->victim_fraction >= 0),
                r->victim_fraction >= 0 ? ", " : "\n");
    if (r->victim_fraction >= 0)
        fprintf(f, "victim %.3f of its throughput alone\n", r->victim_fraction);
    if (r->converge_rtts >= 0)
        fprintf(f,
                "  converge   every sender within 20%% of its share after %.1f "
                "base RTTs (windows of %.1f); then host 0's leaf queue max "
                "%" PRId64 " B, median %" PRId64 " B (BDP %.0f B), %" PRId64
                " drops\n",
                r->converge_rtts, r->conv_window_rtts,
                r->queue_after_conv_bytes, r->queue_median_after_conv_bytes,
                r->bdp_bytes, r->drops_after_conv);
    if (r->fault_ps || r->recovery_ps) {
        fprintf(f,
                "  recovery   after the fault at %.3f us: ", R_US(r->fault_ps));
        if (r->recovery_ps == UINT64_MAX)
            fprintf(f, "never (throughput below 90%% of what survives)\n");
        else
            fprintf(f, "%.3f us\n", R_US(r->recovery_ps));
    }
}

static void json_engine(FILE *f, const struct mroce_sim_exp_result *r)
{
    const struct mroce_state_bytes *e = &r->engine;
    fprintf(f,
            "  \"engine_state\": {\"conns\": %" PRIu64 ", \"paths\": %" PRIu64
            ", \"total_bytes\": %" PRIu64 ", \"conn_bytes\": %" PRIu64
            ", \"path_bytes\": %" PRIu64 ", \"dsn_bytes\": %" PRIu64
            ", \"psn_bytes\": %" PRIu64 ", \"ctx_bytes\": %" PRIu64
            ", \"per_conn\": %" PRIu64 ", \"per_path\": %" PRIu64 "},\n",
            e->conns, e->paths, e->total, e->conn_bytes, e->path_bytes,
            e->dsn_bytes, e->psn_bytes, e->ctx_bytes, e->per_conn, e->per_path);
}

/* Every endpoint counter by its field's name (sim/exp_counters.h). */
static void json_cnt_block(FILE *f, const char *key, const void *cnt,
                           const struct mroce_sim_cnt_name *nm, size_t n)
{
    fprintf(f, "  \"%s\": {", key);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s\"%s\": %" PRIu64, i ? ", " : "", nm[i].name,
                mroce_sim_cnt_get(cnt, nm[i].off));
    fprintf(f, "},\n");
}

static void json_endpoints(FILE *f, const struct mroce_sim_exp_result *r)
{
    size_t n;
    const struct mroce_sim_cnt_name *nm = mroce_sim_conn_cnt_names(&n);
    json_cnt_block(f, "conn_counters", &r->conn_cnt, nm, n);
    nm = mroce_sim_ctx_cnt_names(&n);
    json_cnt_block(f, "ctx_counters", &r->ctx_cnt, nm, n);
}

/* Instructions the run loops retired (perf counters), per data packet
 * sent and per event; null where the machine has no counter. */
static void json_insns(FILE *f, const struct mroce_sim_exp_result *r)
{
    if (r->insns < 0 || !r->data_pkts || !r->events) {
        fprintf(f, "  \"insns\": null, \"insns_per_pkt\": null, "
                   "\"insns_per_event\": null,\n");
        return;
    }
    fprintf(f,
            "  \"insns\": %" PRId64 ", \"insns_per_pkt\": %.1f, "
            "\"insns_per_event\": %.1f,\n",
            r->insns, (double)r->insns / (double)r->data_pkts,
            (double)r->insns / (double)r->events);
}

/* How the run was split (with the wall-clock fields: they differ
 * between runs of one scenario on different numbers of ranks). */
static void json_rank_s(FILE *f, const char *key, const double *v, int n)
{
    fprintf(f, "\"%s\": [", key);
    for (int i = 0; v && i < n; i++)
        fprintf(f, "%s%.6f", i ? ", " : "", v[i]);
    fprintf(f, "]");
}

static void json_ranks(FILE *f, const struct mroce_sim_exp_result *r)
{
    int n = r->rank_events ? r->ranks : 0;
    fprintf(f, "  \"ranks\": %d, \"rank_events\": [", r->ranks);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%" PRIu64, i ? ", " : "", r->rank_events[i]);
    fprintf(f, "], \"sync_wait_s\": %.6f,\n  ", r->sync_wait_s);
    json_rank_s(f, "rank_sync_wait_s", r->rank_sync_s, n);
    fprintf(f, ", ");
    json_rank_s(f, "rank_run_s", r->rank_run_s, n);
    fprintf(f, ", ");
    json_rank_s(f, "rank_import_s", r->rank_import_s, n);
    fprintf(f, ",\n  ");
    json_rank_s(f, "rank_run_cpu_s", r->rank_run_cpu_s, n);
    fprintf(f,
            ",\n  \"cut_msgs\": %" PRIu64 ", \"cut_bytes\": %" PRIu64
            ", \"windows\": %" PRIu64 ", \"window_us\": %.6f, "
            "\"lookahead_us\": ",
            r->cut_msgs, r->cut_bytes, r->windows, R_US(r->window_ps));
    if (r->lookahead_ps == MROCE_SIM_NEVER)
        fprintf(f, "null,\n");
    else
        fprintf(f, "%.6f,\n", R_US(r->lookahead_ps));
}

static void json_payload(FILE *f, const struct mroce_sim_exp_result *r)
{
    const struct mroce_sim_vmem_counters *v = &r->vmem;
    fprintf(f,
            "  \"payload\": {\"mode\": \"%s\", \"granule\": %" PRIu64
            ", \"buffer_bytes\": %" PRIu64 ", \"placements\": %" PRIu64
            ", \"placed_bytes\": %" PRIu64 ", \"fills\": %" PRIu64
            ", \"misaligned\": %" PRIu64 ", \"bad_tags\": %" PRIu64
            ", \"duplicates\": %" PRIu64 ", \"faults\": %" PRIu64 "},\n",
            r->payload_free ? "free" : "real", r->granule, r->buffer_bytes,
            v->placements, v->placed_bytes, v->fills, v->misaligned,
            v->bad_tags, v->duplicates, v->faults);
}

static void table_payload(FILE *f, const struct mroce_sim_exp_result *r)
{
    const struct mroce_sim_vmem_counters *v = &r->vmem;
    fprintf(f,
            "  payload    %s, granule %" PRIu64 " B, buffers %.1f MB: %" PRIu64
            " placements, %" PRIu64 " misaligned, %" PRIu64
            " bad tags, %" PRIu64 " duplicates\n",
            r->payload_free ? "free (no bytes: labels and tags)" : "real bytes",
            r->granule, (double)r->buffer_bytes / 1e6, v->placements,
            v->misaligned, v->bad_tags, v->duplicates);
}

/* A parallel run: how the ranks shared the work (docs/sim.md "Parallel
 * runs"). */
static void table_ranks(FILE *f, const struct mroce_sim_exp_result *r)
{
    if (r->ranks < 2 || !r->rank_events)
        return;
    fprintf(f, "  parallel   %d ranks, events", r->ranks);
    for (int i = 0; i < r->ranks; i++)
        fprintf(f, "%s%" PRIu64, i ? "/" : " ", r->rank_events[i]);
    fprintf(f,
            "; %" PRIu64 " windows of %.3f us (lookahead %.3f us), %" PRIu64
            " messages (%.1f MB) across the cut, %.3f s waiting per rank\n",
            r->windows, R_US(r->window_ps), R_US(r->lookahead_ps), r->cut_msgs,
            (double)r->cut_bytes / 1e6, r->sync_wait_s);
}

static void table_cost(FILE *f, const struct mroce_sim_exp_result *r)
{
    fprintf(f,
            "  simulator  %" PRIu64 " events, %" PRIu64 " packets to %.3f us "
            "simulated in %.3f s = %.2f M events/s, %.2f M packets/s\n"
            "  cost       setup %.3f s, peak RSS %.1f MB\n",
            r->events, r->pkts.injected, R_US(r->end_ps), r->wall_s,
            r->events_per_s / 1e6, r->pkts_per_s / 1e6, r->setup_s,
            r->peak_rss_mb);
    const struct mroce_state_bytes *e = &r->engine;
    if (e->conns)
        fprintf(
            f,
            "  engines    %.1f MB of state: %" PRIu64
            " connections x %.0f B, %" PRIu64 " paths x %" PRIu64
            " B (rings and queues included)\n",
            (double)e->total / 1e6, e->conns,
            (double)(e->total - e->ctx_bytes - e->path_bytes - e->psn_bytes) /
                (double)e->conns,
            e->paths,
            (e->path_bytes + e->psn_bytes) / (e->paths ? e->paths : 1));
}

static const char *flow_status(const struct mroce_sim_exp_flow *p)
{
    if (p->completed)
        return p->data_ok ? "success" : "data differs from the source";
    return p->status ? mroce_wc_status_str(p->status) : "incomplete";
}

static void table_failed(FILE *f, const struct mroce_sim_exp_result *r)
{
    for (int i = 0; i < r->n_flows; i++) {
        const struct mroce_sim_exp_flow *p = &r->flows[i];
        if (!p->completed || !p->data_ok)
            fprintf(f, "  FAILED     flow %d, host %d -> %d: %s\n", i, p->src,
                    p->dst, flow_status(p));
    }
}

void mroce_sim_report_table(FILE *f, const struct mroce_sim_exp_result *r)
{
    table_head(f, r);
    if (is_coll(r))
        table_coll(f, r);
    else
        table_fct(f, r);
    table_fabric(f, r);
    table_health(f, r);
    table_endpoints(f, r);
    table_payload(f, r);
    table_cost(f, r);
    table_ranks(f, r);
    table_failed(f, r);
}

/* ---- JSON ---- */

static void json_pct(FILE *f, const char *key,
                     const struct mroce_sim_exp_pct *p, bool last)
{
    fprintf(f, "  \"%s\": {\"p50\": %.6f, \"p99\": %.6f, \"max\": %.6f}%s\n",
            key, p->p50, p->p99, p->max, last ? "" : ",");
}

static void json_faults(FILE *f, const struct mroce_sim_exp_cfg *c)
{
    fprintf(f, "    \"degrade\": [");
    for (int i = 0; i < c->n_degrade; i++)
        fprintf(f, "%s{\"link\": \"%s\", \"fraction\": %g, \"t_us\": %.6f}",
                i ? ", " : "", c->degrade[i].link, c->degrade[i].fraction,
                R_US(c->degrade[i].t_ps));
    fprintf(f, "],\n    \"fail\": [");
    for (int i = 0; i < c->n_fail; i++)
        fprintf(f, "%s{\"link\": \"%s\", \"t_us\": %.6f}", i ? ", " : "",
                c->fail[i].link, R_US(c->fail[i].t_ps));
    fprintf(f, "],\n    \"fail_plane\": [");
    for (int i = 0; i < c->n_fail_plane; i++)
        fprintf(f, "%s{\"plane\": %d, \"t_us\": %.6f, \"up_us\": %.6f}",
                i ? ", " : "", c->fail_plane[i].plane,
                R_US(c->fail_plane[i].t_ps), R_US(c->fail_plane[i].up_ps));
    fprintf(f, "]\n");
}

static const char *payload_str(int p)
{
    return p == MROCE_SIM_EXP_PAYLOAD_REAL   ? "real"
           : p == MROCE_SIM_EXP_PAYLOAD_FREE ? "free"
                                             : "auto";
}

static void json_cfg(FILE *f, const struct mroce_sim_exp_cfg *c)
{
    fprintf(f, "  \"transport\": \"%s\",\n  \"workload\": \"%s\",\n",
            mroce_sim_report_transport_str(c->transport),
            mroce_sim_exp_workload_str(c->workload));
    fprintf(f, "  \"topology\": \"%s\",\n",
            c->fat_k ? "fat-tree" : "leaf-spine");
    fprintf(f,
            "  \"config\": {\"fat_k\": %d, \"oversub\": %d, "
            "\"hosts\": %d, \"hosts_per_leaf\": %d, "
            "\"spines\": %d, \"planes\": %d, \"link_gbps\": %g, "
            "\"mtu\": %" PRIu32 ", \"paths\": %d, \"qps\": %d,\n"
            "    \"pfc\": \"%s\", \"dcqcn\": \"%s\", \"loss\": %g, "
            "\"seed\": %" PRIu64 ", \"size\": %" PRIu64
            ", \"msg_bytes\": %" PRIu32 ", \"senders\": %d,\n"
            "    \"rocev2_timeout\": %d, \"reroute_us\": %.6f, "
            "\"deadline_us\": %.6f, \"trim\": \"%s\", "
            "\"buffer_kb_per_port\": %" PRIu64 ", \"link_delay_us\": %.6f,\n",
            c->fat_k, c->oversub, c->hosts, c->hosts_per_leaf, c->spines,
            c->planes, (double)c->link_bps / 1e9, c->mtu, c->paths, c->qps,
            onoff(c->pfc),
            c->transport == MROCE_TRANSPORT_ROCEV2 ? onoff(c->dcqcn) : "n/a",
            c->loss, c->seed, c->size, c->msg_bytes, c->senders,
            c->rocev2_timeout, R_US(c->reroute_ps), R_US(c->deadline_ps),
            onoff(c->trim), c->buf_per_port / 1024,
            c->delay_ps == MROCE_SIM_ZERO_DELAY ? 0.0 : R_US(c->delay_ps));
    fprintf(f,
            "    \"iters\": %d, \"channels\": %d, \"variant\": \"%s\", "
            "\"victim\": %s, \"sample_us\": %.6f, \"payload\": \"%s\",\n",
            c->iters, c->channels, coll_variant(c),
            c->victim ? "true" : "false", R_US(c->sample_ps),
            payload_str(c->payload));
    json_faults(f, c);
    fprintf(f, "  },\n");
}

static void json_fct(FILE *f, const struct mroce_sim_exp_result *r)
{
    fprintf(f,
            "  \"flows\": %d, \"flows_completed\": %d, \"flows_failed\": %d, "
            "\"flows_corrupt\": %d,\n",
            r->n_flows, r->flows_completed, r->flows_failed, r->flows_corrupt);
    fprintf(f,
            "  \"jct_us\": %.6f,\n  \"ideal_us\": %.6f,\n"
            "  \"fraction_of_ideal\": %.6f,\n",
            R_US(r->jct_ps), R_US(r->ideal_ps), r->fraction_of_ideal);
    fprintf(f,
            "  \"coll_verified\": %s, \"iters_done\": %d, "
            "\"coll_bytes\": %" PRIu64 ",\n  \"jct_max_us\": %.6f, "
            "\"alpha_us\": %.6f, \"eta\": %.6f, \"eta_measured\": %.6f, "
            "\"hdr_bytes\": %.3f, \"line_gbps\": %g,\n"
            "  \"algbw_gbps\": %.6f, \"busbw_gbps\": %.6f, "
            "\"ideal_busbw_gbps\": %.6f,\n",
            r->coll_verified ? "true" : "false", r->iters_done, r->coll_bytes,
            R_US(r->jct_max_ps), R_US(r->alpha_ps), r->eta, r->eta_measured,
            r->hdr_bytes, r->line_gbps, r->algbw_gbps, r->busbw_gbps,
            r->ideal_busbw_gbps);
    json_pct(f, "fct_us", &r->fct_us, false);
    json_pct(f, "fct_slowdown", &r->slowdown, false);
}

static void json_counters(FILE *f, const struct mroce_sim_exp_result *r)
{
    fprintf(f,
            "  \"data_pkts\": %" PRIu64 ", \"retx_pkts\": %" PRIu64
            ", \"ooo_pkts\": %" PRIu64 ", \"timeouts\": %" PRIu64 ",\n",
            r->data_pkts, r->retx_pkts, r->ooo_pkts, r->timeouts);
    const struct mroce_sim_exp_lost *l = &r->lost_by;
    fprintf(f,
            "  \"lost_by_rule\": {\"sack\": %" PRIu64 ", \"rack\": %" PRIu64
            ", \"pto\": %" PRIu64 ", \"rto\": %" PRIu64 ", \"rnr\": %" PRIu64
            "},\n",
            l->sack, l->rack, l->pto, l->rto, l->rnr);
    fprintf(f, "  \"drops\": {\"total\": %" PRIu64 ", \"by_reason\": {",
            r->drops);
    for (int i = 0; i < MROCE_SIM_DROP_N; i++)
        fprintf(f, "%s\"%s\": %" PRIu64, i ? ", " : "", mroce_sim_drop_str(i),
                r->drop[i]);
    fprintf(f,
            "}},\n  \"ecn_marks\": %" PRIu64 ", \"trimmed\": %" PRIu64
            ", \"pfc_pauses\": %" PRIu64 ",\n  \"pfc_pause_us\": %.6f, "
            "\"max_queue_bytes\": %" PRIu64 ",\n",
            r->ecn_marks, r->trimmed, r->pfc_pauses, R_US(r->pfc_pause_ps),
            r->max_qbytes);
    fprintf(f, "  \"queues_by_link\": {");
    for (int i = 0; i < 3; i++)
        fprintf(f,
                "%s\"%s\": {\"ecn_marks\": %" PRIu64
                ", \"max_queue_bytes\": %" PRIu64 "}",
                i ? ", " : "", json_where[i], r->where_ecn[i],
                r->where_max_qbytes[i]);
    fprintf(f, "},\n  \"plane_tx_bytes\": [");
    for (int p = 0; p < n_planes(r); p++)
        fprintf(f, "%s%" PRIu64, p ? ", " : "", r->plane_tx_bytes[p]);
    fprintf(f, "],\n");
    fprintf(f,
            "  \"pkts\": {\"injected\": %" PRIu64 ", \"delivered\": %" PRIu64
            ", \"dropped\": %" PRIu64 ", \"in_flight\": %" PRIu64
            ", \"squeezed\": %" PRIu64 "},\n",
            r->pkts.injected, r->pkts.delivered, r->pkts.dropped_total,
            r->pkts.in_flight, r->pkts.squeezed);
    fprintf(f,
            "  \"sim_time_us\": %.6f,\n  \"events\": %" PRIu64
            ",\n  \"pcap_frames\": %" PRIu64 ",\n",
            R_US(r->end_ps), r->events, r->pcap_frames);
}

static void json_recovery(FILE *f, const struct mroce_sim_exp_result *r)
{
    fprintf(f, "  \"fault_us\": %.6f, \"recovery_us\": ", R_US(r->fault_ps));
    if (r->recovery_ps == UINT64_MAX)
        fprintf(f, "null,\n");
    else
        fprintf(f, "%.6f,\n", R_US(r->recovery_ps));
}

static void json_health(FILE *f, const struct mroce_sim_exp_result *r)
{
    fprintf(f,
            "  \"retx_rate\": %.6f, \"ooo_rate\": %.6f, "
            "\"ecn_fraction\": %.6f,\n  \"rx_data_pkts\": %" PRIu64
            ", \"rx_ce_pkts\": %" PRIu64 ", \"placed_bytes\": %" PRIu64 ",\n",
            r->retx_rate, r->ooo_rate, r->ecn_fraction, r->rx_data_pkts,
            r->rx_ce_pkts, r->placed_bytes);
    fprintf(f,
            "  \"mmr\": %.6f, \"jain\": %.6f, \"victim_fraction\": %.6f,\n"
            "  \"p95_queue_bytes\": %" PRIu64 ", \"n_samples\": %d,\n",
            r->mmr, r->jain, r->victim_fraction, r->p95_qbytes, r->n_samples);
    fprintf(f,
            "  \"converge_rtts\": %.6f, \"queue_after_convergence_bytes\": "
            "%" PRId64 ", \"queue_median_after_convergence_bytes\": %" PRId64
            ", \"drops_after_convergence\": %" PRId64
            ", \"bdp_bytes\": %.0f, \"converge_window_rtts\": %.6f,\n",
            r->converge_rtts, r->queue_after_conv_bytes,
            r->queue_median_after_conv_bytes, r->drops_after_conv, r->bdp_bytes,
            r->conv_window_rtts);
    json_recovery(f, r);
}

/* [t_us, gbps, victim_gbps, qbytes, q_dst_bytes] per sample. */
static void json_samples(FILE *f, const struct mroce_sim_exp_result *r)
{
    fprintf(f, "  \"samples\": [");
    for (int i = 0; i < r->n_samples; i++) {
        const struct mroce_sim_exp_sample *s = &r->samples[i];
        fprintf(f, "%s[%.3f, %.3f, %.3f, %" PRIu64 ", %" PRIu64 "]",
                i ? (i % 4 ? ", " : ",\n    ") : "\n    ", R_US(s->t_ps),
                s->gbps, s->victim_gbps, s->qbytes, s->q_dst_bytes);
    }
    fprintf(f, "\n  ],\n");
}

static void json_flows(FILE *f, const struct mroce_sim_exp_result *r, bool last)
{
    fprintf(f, "  \"per_flow\": [");
    for (int i = 0; i < r->n_flows; i++) {
        const struct mroce_sim_exp_flow *p = &r->flows[i];
        fprintf(f,
                "%s\n    {\"src\": %d, \"dst\": %d, \"fct_us\": %.6f, "
                "\"ideal_us\": %.6f, \"status\": \"%s\", \"data_ok\": %s, "
                "\"retx_pkts\": %" PRIu64 "%s}",
                i ? "," : "", p->src, p->dst, R_US(p->fct_ps),
                R_US(p->ideal_ps), flow_status(p),
                p->data_ok ? "true" : "false", p->retx_pkts,
                p->victim ? ", \"victim\": true" : "");
    }
    fprintf(f, "\n  ]%s\n", last ? "" : ",");
}

int mroce_sim_report_json(FILE *f, const struct mroce_sim_exp_result *r,
                          bool with_wall)
{
    return mroce_sim_report_json_flags(f, r,
                                       with_wall ? MROCE_SIM_REPORT_WALL : 0);
}

int mroce_sim_report_json_flags(FILE *f, const struct mroce_sim_exp_result *r,
                                unsigned flags)
{
    bool with_wall = flags & MROCE_SIM_REPORT_WALL;
    fprintf(f, "{\n");
    json_cfg(f, &r->cfg);
    json_fct(f, r);
    json_counters(f, r);
    json_health(f, r);
    if (flags & MROCE_SIM_REPORT_SAMPLES)
        json_samples(f, r);
    json_flows(f, r, !with_wall);
    json_engine(f, r);
    json_endpoints(f, r);
    json_payload(f, r);
    if (with_wall) {
        json_insns(f, r);
        json_ranks(f, r);
        fprintf(f,
                "  \"setup_s\": %.6f,\n  \"wall_s\": %.6f,\n"
                "  \"events_per_s\": %.0f,\n  \"pkts_per_s\": %.0f,\n"
                "  \"peak_rss_mb\": %.1f\n",
                r->setup_s, r->wall_s, r->events_per_s, r->pkts_per_s,
                r->peak_rss_mb);
    }
    fprintf(f, "}\n");
    return ferror(f) ? -1 : 0;
}
