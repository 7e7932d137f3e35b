/* mroce-verbs-paths: the extension calls of the drop-in libibverbs
 * (include/mroce/mroce_verbs.h) in one small verbs program.
 *
 * Two soft NICs in this process (two contexts opened with
 * mroce_verbs_open_device: 2 planes, 8 paths by default), one RC QP on
 * each with 2 streams, connected from what verbs programs exchange. The
 * program WRITEs on both streams, takes plane 1 out of use halfway
 * (every QP path on it), checks every byte, and prints the per-path
 * counters: the second half's packets all went over plane 0.
 *
 *   build/bin/mroce-verbs-paths [-n MESSAGES] [-s BYTES] [-p PATHS]
 *
 * Exit status 0 when every byte arrived and no packet took plane 1 after
 * it was disabled. */
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mroce/mroce_verbs.h>

#define ACCESS                                                                 \
    (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

struct end {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    uint8_t *buf;
};

struct opts {
    int msgs;
    uint32_t size;
    uint16_t paths;
};

static int die(const char *what, int err)
{
    fprintf(stderr, "mroce-verbs-paths: %s: %s\n", what, strerror(err));
    exit(1);
}

static void end_open(struct end *e, struct ibv_device *dev,
                     const struct opts *o, size_t len)
{
    struct mroce_verbs_attr a = {.paths = o->paths, .planes = 2};
    e->ctx = mroce_verbs_open_device(dev, &a);
    if (!e->ctx)
        die("mroce_verbs_open_device", errno);
    e->pd = ibv_alloc_pd(e->ctx);
    e->cq = ibv_create_cq(e->ctx, 256, NULL, NULL, 0);
    e->buf = calloc(1, len);
    e->mr = e->buf ? ibv_reg_mr(e->pd, e->buf, len, ACCESS) : NULL;
    struct ibv_qp_init_attr qa = {.send_cq = e->cq,
                                  .recv_cq = e->cq,
                                  .cap = {.max_send_wr = 64,
                                          .max_recv_wr = 16,
                                          .max_send_sge = 1,
                                          .max_recv_sge = 1},
                                  .qp_type = IBV_QPT_RC,
                                  .sq_sig_all = 1};
    e->qp = e->mr ? ibv_create_qp(e->pd, &qa) : NULL;
    if (!e->qp)
        die("setting up a QP", errno);
    int rc = mroce_verbs_qp_set_streams(e->qp, 2); /* in RESET */
    if (rc)
        die("mroce_verbs_qp_set_streams", rc);
}

static void end_connect(struct end *e, const struct end *peer)
{
    struct ibv_port_attr pa;
    union ibv_gid gid;
    ibv_query_port(peer->ctx, 1, &pa);
    ibv_query_gid(peer->ctx, 1, 0, &gid);
    struct ibv_qp_attr a = {
        .qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = ACCESS};
    int rc = ibv_modify_qp(e->qp, &a,
                           IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                               IBV_QP_ACCESS_FLAGS);
    a = (struct ibv_qp_attr){
        .qp_state = IBV_QPS_RTR,
        .path_mtu = IBV_MTU_4096,
        .dest_qp_num = peer->qp->qp_num,
        .max_dest_rd_atomic = 16,
        .min_rnr_timer = 12,
        .ah_attr = {
            .is_global = 1, .grh.dgid = gid, .dlid = pa.lid, .port_num = 1}};
    if (!rc)
        rc =
            ibv_modify_qp(e->qp, &a,
                          IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                              IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                              IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS,
                             .timeout = 14,
                             .retry_cnt = 7,
                             .rnr_retry = 7,
                             .max_rd_atomic = 16};
    if (!rc)
        rc = ibv_modify_qp(e->qp, &a,
                           IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                               IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                               IBV_QP_MAX_QP_RD_ATOMIC);
    if (rc)
        die("connecting", rc);
}

static void end_close(struct end *e)
{
    ibv_destroy_qp(e->qp);
    ibv_dereg_mr(e->mr);
    ibv_destroy_cq(e->cq);
    ibv_dealloc_pd(e->pd);
    ibv_close_device(e->ctx);
    free(e->buf);
}

/* One WRITE of message i on stream i % 2, waited for. */
static void write_one(struct end *a, const struct end *b, int i, uint32_t size)
{
    uint64_t off = (uint64_t)(i % 4) * size;
    for (uint32_t k = 0; k < size; k++)
        a->buf[off + k] = (uint8_t)(k * 7 + (uint32_t)i);
    int rc = mroce_verbs_qp_set_stream(a->qp, (uint16_t)(i % 2));
    struct ibv_sge sg = {
        .addr = (uintptr_t)(a->buf + off), .length = size, .lkey = a->mr->lkey};
    struct ibv_send_wr wr = {.wr_id = (uint64_t)i,
                             .sg_list = &sg,
                             .num_sge = 1,
                             .opcode = IBV_WR_RDMA_WRITE,
                             .wr.rdma = {.remote_addr =
                                             (uintptr_t)(b->buf + off),
                                         .rkey = b->mr->rkey}},
                       *bad;
    if (rc || (rc = ibv_post_send(a->qp, &wr, &bad)))
        die("ibv_post_send", rc);
    struct ibv_wc wc;
    time_t end = time(NULL) + 20;
    while (ibv_poll_cq(a->cq, 1, &wc) == 0)
        if (time(NULL) > end)
            die("waiting for a completion", ETIMEDOUT);
    if (wc.status != IBV_WC_SUCCESS) {
        fprintf(stderr, "message %d: %s\n", i, ibv_wc_status_str(wc.status));
        exit(1);
    }
    if (memcmp(a->buf + off, b->buf + off, size)) {
        fprintf(stderr, "message %d: the data differs\n", i);
        exit(1);
    }
}

/* Per path: its plane, state and packets; returns packets on plane 1. */
static uint64_t print_paths(struct ibv_qp *qp, uint16_t paths)
{
    uint64_t on1 = 0;
    printf(" path plane state     tx_pkts  retx  srtt_us\n");
    for (uint16_t p = 0; p < paths; p++) {
        struct mroce_path_info pi;
        if (mroce_verbs_path_query(qp, p, &pi))
            continue;
        int plane = mroce_verbs_path_plane(qp, p);
        printf(" %4u %5d %-9s %7llu %5llu %8.1f\n", p, plane,
               mroce_path_state_str(pi.state), (unsigned long long)pi.tx_pkts,
               (unsigned long long)pi.retx_pkts, pi.srtt_ns / 1000.0);
        if (plane == 1)
            on1 += pi.tx_pkts;
    }
    return on1;
}

static void parse(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.msgs = 64, .size = 256 * 1024, .paths = 8};
    int c;
    while ((c = getopt(argc, argv, "n:s:p:h")) != -1) {
        if (c == 'n')
            o->msgs = atoi(optarg);
        else if (c == 's')
            o->size = (uint32_t)strtoul(optarg, NULL, 0);
        else if (c == 'p')
            o->paths = (uint16_t)atoi(optarg);
        else {
            fprintf(stderr, "usage: %s [-n MESSAGES] [-s BYTES] [-p PATHS]\n",
                    argv[0]);
            exit(c == 'h' ? 0 : 2);
        }
    }
    if (o->msgs < 2 || !o->size || o->paths < 2)
        die("options", EINVAL);
}

int main(int argc, char **argv)
{
    struct opts o;
    parse(argc, argv, &o);
    struct ibv_device **l = ibv_get_device_list(NULL);
    if (!l || !l[0] || !strstr(ibv_get_device_name(l[0]), "mroce"))
        die("no mroce device (run it with build/bin/mroce-run)", ENODEV);
    struct end a, b;
    end_open(&a, l[0], &o, 4 * (size_t)o.size);
    end_open(&b, l[0], &o, 4 * (size_t)o.size);
    ibv_free_device_list(l);
    end_connect(&a, &b);
    end_connect(&b, &a);
    for (int i = 0; i < o.msgs / 2; i++)
        write_one(&a, &b, i, o.size);
    printf("after %d messages on 2 streams, %u paths on 2 planes:\n",
           o.msgs / 2, o.paths);
    uint64_t before = print_paths(a.qp, o.paths);
    int rc = mroce_verbs_qp_plane_enable(a.qp, 1, 0);
    if (rc)
        die("mroce_verbs_qp_plane_enable", rc);
    for (int i = o.msgs / 2; i < o.msgs; i++)
        write_one(&a, &b, i, o.size);
    printf("after %d more with plane 1 disabled:\n", o.msgs - o.msgs / 2);
    uint64_t after = print_paths(a.qp, o.paths);
    struct mroce_conn_counters cc;
    struct mroce_verbs_nic_info ni;
    mroce_verbs_qp_counters(a.qp, &cc);
    mroce_verbs_nic_info(a.ctx, &ni);
    printf("QP: %llu data packets, %llu resent; NIC %s:%u: %llu passes, "
           "%llu by pollers\n",
           (unsigned long long)cc.tx_data_pkts,
           (unsigned long long)cc.retx_pkts, ni.ip, ni.port,
           (unsigned long long)ni.passes, (unsigned long long)ni.assists);
    end_close(&a);
    end_close(&b);
    if (after != before) {
        fprintf(stderr, "plane 1 carried %llu packets while disabled\n",
                (unsigned long long)(after - before));
        return 1;
    }
    printf("every byte arrived; plane 1 idle while disabled\n");
    return 0;
}
