/* Topologies: build and wire hosts, NICs, switches and links; install
 * routes; schedule faults. A topology owns its event list and packet pool
 * and everything it builds; it models nothing itself.
 *
 * Shape: P planes, each an independent 2-tier leaf-spine or 3-tier
 * fat-tree. Every host has a NIC with P ports; port p is cabled to its
 * leaf in plane p. Each cable is two unidirectional links.
 *
 * Leaf-spine (pods 0): L leaves of H hosts each; S spines; every leaf has
 * one uplink to every spine, so the leaf oversubscription is H/S (S = H
 * is non-blocking). A leaf's ports 0..H-1 go down to its hosts in order,
 * ports H..H+S-1 up to spines 0..S-1. A spine's port l goes to leaf l.
 * Routes: a leaf sends to its own hosts directly and to any other host
 * over ECMP across all its uplinks; a spine sends to the destination's
 * leaf.
 *
 * Fat-tree (pods >= 2; Al-Fares et al., SIGCOMM 2008, with the leaf
 * oversubscription a parameter): the L leaves form `pods` pods of
 * L/pods leaves; each pod has S aggregation switches ("spines" of the
 * pod, agg index pod x S + i), every leaf cabled to every agg of its
 * pod; each agg has C uplinks to the core (core_per_agg, default L/pods:
 * a non-blocking agg), and core switch c of group g = c / C is cabled to
 * agg g of every pod (S x C cores). The k-ary fat-tree is pods = k,
 * L/pods = S = C = k/2 and H = k/2 (oversubscription o: H = o k/2), so
 * k^3/4 x o hosts. Ports: an agg's 0..L/pods-1 go down to its pod's
 * leaves, the next C up to its cores; a core's port q to pod q. Routes:
 * up over ECMP until a switch sees the destination below it, then down:
 * a leaf's other hosts over all its uplinks; an agg sends to a leaf of
 * its pod directly and elsewhere over its core uplinks; a core sends to
 * the destination's pod.
 *
 * Host index h = leaf x H + position.
 *
 * Addresses: host h at leaf l, position i has IPv4 10.(l / 256).(l % 256)
 * .(i + 1), the same on every plane (the engine sees one address per host;
 * the NIC picks the plane from the source port, nic.h). So at most 254
 * hosts per leaf and 65536 leaves.
 *
 * Link ids: integers 0..n-1, each with a printable name that a CLI can
 * take back with mroce_sim_topo_link_find:
 *   host<h>-leaf<l>, leaf<l>-host<h>, leaf<l>-spine<s>, spine<s>-leaf<l>
 * and in a fat-tree leaf<l>-agg<a>, agg<a>-leaf<l>, agg<a>-core<c>,
 * core<c>-agg<a>, prefixed with "p<plane>." when there are several
 * planes (the prefix is optional for plane 0).
 *
 * LPs (logical processes, event.h), the units a simulation can be cut
 * into (sim/part.h): LP 0 is the driver (faults); LP 1 + l is leaf
 * group l: leaf l in every plane with its hosts, their NICs and the
 * cables between them; then one LP per spine (fat-tree: agg) of each
 * plane, in switch order, then one per core. So only leaf-spine
 * (leaf-agg) and agg-core cables join two LPs.
 *
 * Faults take effect at an absolute time through events: link down/up,
 * degrade to a fraction of the rate, random loss, a whole plane down.
 * With `both` set they hit the cable (both directions). By default a
 * switch does not react to a dead link (ECMP keeps hashing onto it, as in
 * the interval before a control plane converges), so recovery is the
 * transport's job; reroute_ps > 0 takes a dead link's sending switch port
 * out of ECMP that long after it fails (local fast reroute).
 *
 * Thread-safety: none; a topology and its objects belong to one thread.
 */
#ifndef MROCE_SIM_TOPO_H
#define MROCE_SIM_TOPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce.h>

#include "sim/event.h"
#include "sim/host.h"
#include "sim/link.h"
#include "sim/nic.h"
#include "sim/pkt.h"
#include "sim/switch.h"

/* Zero fields take the default in brackets (defaults.h). */
struct mroce_sim_topo_cfg {
    int hosts_per_leaf;    /* 1..254 [8] */
    int leaves;            /* [2] */
    int spines;            /* leaf-spine: spines; fat-tree: aggs per pod
                              [hosts_per_leaf: non-blocking] */
    int pods;              /* >= 2: a 3-tier fat-tree of this many pods
                              (divides leaves); 0: leaf-spine [0] */
    int core_per_agg;      /* fat-tree: core uplinks of an agg
                              [leaves / pods: non-blocking] */
    int planes;            /* [1] */
    uint64_t link_bps;     /* leaf-spine links [400G] */
    uint64_t host_bps;     /* host-leaf links [link_bps] */
    uint64_t delay_ps;     /* every link [1 us]; MROCE_SIM_ZERO_DELAY
                              (link.h): none (0 once resolved) */
    uint32_t mtu;          /* payload bytes, sizes PFC and ideals [4096] */
    uint32_t max_payload;  /* largest UDP payload carried [9216] */
    uint64_t seed;         /* every generator derives from it [0] */
    uint64_t reroute_ps;   /* 0: switches never reroute around faults */
    uint64_t buf_per_port; /* shared buffer of a switch per port, bytes;
                              0: the switch template's (defaults.h) */
    /* Switch template: n_ports, n_hosts and seed are filled per switch;
     * PFC headroom/xoff/xon, if 0, from the link rate, delay and mtu. */
    struct mroce_sim_switch_cfg sw;
    struct mroce_sim_nic_cfg nic;   /* n_ports is set to planes */
    mroce_sim_classify_fn classify; /* host packet classifier [size] */
    void *classify_ud;
};

enum mroce_sim_link_kind {
    MROCE_SIM_LINK_HOST_UP,    /* host -> leaf */
    MROCE_SIM_LINK_HOST_DOWN,  /* leaf -> host */
    MROCE_SIM_LINK_SPINE_UP,   /* leaf -> spine (fat-tree: agg) */
    MROCE_SIM_LINK_SPINE_DOWN, /* spine -> leaf */
    MROCE_SIM_LINK_CORE_UP,    /* fat-tree: agg -> core */
    MROCE_SIM_LINK_CORE_DOWN,  /* fat-tree: core -> agg */
    MROCE_SIM_LINK_KINDS
};

struct mroce_sim_link_info {
    struct mroce_sim_link *link;
    const char *name;
    int kind;                           /* mroce_sim_link_kind */
    int plane, leaf, spine, host, core; /* -1 where not an end (spine:
                                           the agg index in a fat-tree) */
    int reverse;                        /* id of the other direction */
};

/* Fabric-wide sums. */
struct mroce_sim_topo_counters {
    struct mroce_sim_pool_counters pkts; /* conservation */
    uint64_t switch_drops[MROCE_SIM_DROP_N];
    uint64_t link_drop_down, link_drop_loss;
    uint64_t ecn_marks, trimmed;
    uint64_t pfc_pauses;   /* pause frames sent by switches */
    uint64_t pfc_pause_ps; /* paused time summed over ports, priorities */
    uint64_t max_qbytes;   /* deepest egress queue seen */
    /* by the kind of the link a switch port feeds (mroce_sim_link_kind;
     * HOST_UP is a NIC, so 0): where congestion is */
    uint64_t kind_ecn[MROCE_SIM_LINK_KINDS];
    uint64_t kind_max_qbytes[MROCE_SIM_LINK_KINDS];
    uint64_t events;
};

struct mroce_sim_topo;

/* Builds everything. Errors: EINVAL (a count out of range), ENOMEM. *out
 * is NULL on failure. */
int mroce_sim_topo_create(const struct mroce_sim_topo_cfg *cfg,
                          struct mroce_sim_topo **out);
/* Frees the topology, its objects, pool and event list. NULL: no-op.
 * Attached endpoints are not touched. */
void mroce_sim_topo_destroy(struct mroce_sim_topo *t);

/* The configuration with defaults resolved. */
const struct mroce_sim_topo_cfg *
mroce_sim_topo_cfg(const struct mroce_sim_topo *t);
struct mroce_sim_evlist *mroce_sim_topo_ev(struct mroce_sim_topo *t);
struct mroce_sim_pool *mroce_sim_topo_pool(struct mroce_sim_topo *t);

int mroce_sim_topo_n_hosts(const struct mroce_sim_topo *t);
struct mroce_sim_host *mroce_sim_topo_host(struct mroce_sim_topo *t, int h);
void mroce_sim_topo_host_addr(const struct mroce_sim_topo *t, int h,
                              struct mroce_addr *out);
/* Host index of an address, -1 if none. */
int mroce_sim_topo_resolve(const struct mroce_sim_topo *t,
                           const struct mroce_addr *a);
struct mroce_sim_switch *mroce_sim_topo_leaf(struct mroce_sim_topo *t,
                                             int plane, int leaf);
struct mroce_sim_switch *mroce_sim_topo_spine(struct mroce_sim_topo *t,
                                              int plane, int spine);
/* Every switch of every plane, leaves, spines/aggs then cores, for
 * samplers: index 0 .. n_switches - 1. */
int mroce_sim_topo_n_switches(const struct mroce_sim_topo *t);
struct mroce_sim_switch *mroce_sim_topo_switch(struct mroce_sim_topo *t, int i);
/* LPs (above): how many, a host's, and a switch's (index as above). */
uint32_t mroce_sim_topo_n_lps(const struct mroce_sim_topo *t);
uint32_t mroce_sim_topo_host_lp(const struct mroce_sim_topo *t, int h);
uint32_t mroce_sim_topo_switch_lp(const struct mroce_sim_topo *t, int i);

/* Links on the path between two hosts' leaves: 2 (one leaf), 4, or 6
 * (fat-tree, across pods). */
int mroce_sim_topo_hops(const struct mroce_sim_topo *t, int src_host,
                        int dst_host);

int mroce_sim_topo_n_links(const struct mroce_sim_topo *t);
/* NULL if id is out of range. */
const struct mroce_sim_link_info *
mroce_sim_topo_link_info(const struct mroce_sim_topo *t, int id);
/* Link id by name (see above), -1 if none. */
int mroce_sim_topo_link_find(const struct mroce_sim_topo *t, const char *name);
/* The link of a leaf-spine pair in a plane, either direction. */
int mroce_sim_topo_link_id(const struct mroce_sim_topo *t, int plane, int kind,
                           int a, int b);

/* ---- Faults at absolute time t_ps. Errors: EINVAL, ENOMEM. ---- */

int mroce_sim_topo_link_down(struct mroce_sim_topo *t, int id, bool both,
                             uint64_t t_ps);
int mroce_sim_topo_link_up(struct mroce_sim_topo *t, int id, bool both,
                           uint64_t t_ps);
/* Serialize at fraction f of the rate, 0 < f <= 1 (1 restores). */
int mroce_sim_topo_link_degrade(struct mroce_sim_topo *t, int id, bool both,
                                double f, uint64_t t_ps);
/* Random frame loss with probability p on the link. */
int mroce_sim_topo_link_loss(struct mroce_sim_topo *t, int id, bool both,
                             double p, uint64_t t_ps);
/* Every link of the plane down (up = false) or back up (up = true). */
int mroce_sim_topo_plane_set(struct mroce_sim_topo *t, int plane, bool up,
                             uint64_t t_ps);

/* ---- Measurement ---- */

void mroce_sim_topo_get_counters(const struct mroce_sim_topo *t,
                                 struct mroce_sim_topo_counters *out);

/* The analytic ideal completion time of one flow alone on the fabric:
 * its frames leave the sender back to back and cross each link store-and-
 * forward with no other traffic. With equal rates and full frames this is
 * the metrics.md formula bytes_on_wire/B + links x delay + (links - 1) x
 * MTU_on_wire/B; computed exactly (any rates, a short last frame) by the
 * tandem-queue recursion in topo.c. bytes of message in packets of at
 * most mtu payload bytes, each adding hdr_bytes of transport header plus
 * the Ethernet/IP/UDP overhead; links = mroce_sim_topo_hops; host_bps on
 * host links, link_bps on the others. */
uint64_t mroce_sim_topo_ideal_fct_ps(const struct mroce_sim_topo *t,
                                     uint64_t bytes, uint32_t mtu,
                                     uint32_t hdr_bytes, int src_host,
                                     int dst_host);

#endif
