/* Extension calls of the drop-in libibverbs (build/lib/libibverbs.so.1):
 * what verbs cannot say about a MetaRoCE soft NIC -- its datapath, the
 * paths, planes and streams of a QP, per-path counters. docs/verbs.md
 * describes the soft NIC; tools/mroce-verbs-paths.c uses them.
 *
 * A program calls them on objects of the soft NIC only (check with
 * mroce_verbs_is_soft first when it may also run on other devices) and
 * links with -libverbs against build/lib. Unless said otherwise a call
 * returns 0 or a positive errno value, as the verbs calls that return int
 * do, is thread-safe (it takes the context's control lock) and keeps no
 * pointer it was given.
 *
 * Paths and streams must be the same at both ends of a QP (R-SOFT-4):
 * the verbs exchange has no room to tell the peer. */
#ifndef MROCE_MROCE_VERBS_H
#define MROCE_MROCE_VERBS_H

#include <infiniband/verbs.h>
#include <stdint.h>

#include <mroce/mroce.h>
#include <mroce/mroce_dp.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the soft NIC ---- */

/* How a soft NIC is opened; zero fields take the profile's value (the
 * MROCE_VERBS_* environment, docs/verbs.md). */
struct mroce_verbs_attr {
    int datapath;          /* MROCE_DP_UDP or MROCE_DP_DPDK */
    const char *ip;        /* address to bind: the GID */
    uint16_t port;         /* UDP port: the LID; 0: the first free one */
    uint16_t paths;        /* paths of a new QP, 1..256 */
    uint16_t streams;      /* ordered streams of a new QP, 1..64 */
    uint32_t planes;       /* planes (NIC ports), 1..MROCE_MAX_PLANES */
    const char *dpdk_args; /* EAL arguments, space separated */
};

/* ibv_open_device with an explicit profile: the datapath choice and the
 * defaults for QPs created on the context. Returns NULL with errno set
 * (EINVAL: a value out of range; ENODEV: the datapath cannot start). */
struct ibv_context *mroce_verbs_open_device(struct ibv_device *dev,
                                            const struct mroce_verbs_attr *a);

/* 1 if ctx is a mroce soft NIC, 0 otherwise. Thread-safe. */
int mroce_verbs_is_soft(struct ibv_context *ctx);

struct mroce_verbs_nic_info {
    char ip[64];
    uint16_t port; /* = the port's LID */
    uint16_t paths, streams;
    uint32_t planes;
    int datapath;
    uint64_t passes;  /* NIC thread passes */
    uint64_t sleeps;  /* times it slept for lack of work */
    uint64_t wakes;   /* doorbells that woke it */
    uint64_t assists; /* passes run by threads polling a CQ */
    struct mroce_dp_counters dp;
    struct mroce_ctx_counters eng;
};

int mroce_verbs_nic_info(struct ibv_context *ctx,
                         struct mroce_verbs_nic_info *out);

/* ---- a QP's paths, planes and streams ---- */

/* Paths and streams of the QP's connection, in state RESET only (EINVAL
 * in another state or out of range). */
int mroce_verbs_qp_set_paths(struct ibv_qp *qp, uint16_t n_paths);
int mroce_verbs_qp_set_streams(struct ibv_qp *qp, uint16_t n_streams);

/* The stream the next ibv_post_send/ibv_post_recv calls on this QP use
 * (0 until set; a receive is consumed by a SEND of its own stream).
 * Completions of one stream come in posting order; across streams they
 * do not. EINVAL: stream >= the QP's streams. Not ordered with posts of
 * other threads on the same QP. */
int mroce_verbs_qp_set_stream(struct ibv_qp *qp, uint16_t stream);

/* The plane path p of a QP is on: p mod planes (R-ENC-10). */
int mroce_verbs_path_plane(struct ibv_qp *qp, uint16_t path);

/* Takes every path of the QP on a plane out of use (on 0) or back (1)
 * (R-PATH-12). EINVAL: no such plane, or it would disable the last
 * enabled path; the QP must be connected (RTR or later). */
int mroce_verbs_qp_plane_enable(struct ibv_qp *qp, uint32_t plane, int on);

/* One path: mroce_path_query, mroce_path_enable, mroce_path_repath on the
 * QP's connection (ENOENT: path out of range). */
int mroce_verbs_path_query(struct ibv_qp *qp, uint16_t path,
                           struct mroce_path_info *out);
int mroce_verbs_path_enable(struct ibv_qp *qp, uint16_t path, int on);
int mroce_verbs_path_repath(struct ibv_qp *qp, uint16_t path);

/* The connection's counters (mroce_conn_get_counters). */
int mroce_verbs_qp_counters(struct ibv_qp *qp, struct mroce_conn_counters *out);

#ifdef __cplusplus
}
#endif
#endif
