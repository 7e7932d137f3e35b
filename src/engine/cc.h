/* Congestion control plug-in interface (R-CC-1). A controller sees only
 * its own per-path and per-connection state and the events below, never
 * the topology. The engine reads `cwnd` to gate sending. */
#ifndef MROCE_ENGINE_CC_H
#define MROCE_ENGINE_CC_H

#include <stdbool.h>
#include <stdint.h>

struct cc_path {
    uint32_t cwnd;    /* bytes the path may have in flight */
    uint64_t priv[4]; /* controller-private */
};

struct cc_conn {
    uint32_t cwnd; /* bytes the connection may have in flight */
    uint64_t priv[4];
};

struct cc_params {
    uint32_t mtu;
    uint32_t init_cwnd; /* bytes, per path */
    uint32_t max_path;  /* bytes, per path (path window * mtu) */
    uint32_t max_conn;  /* bytes, per connection */
    uint32_t ack_slack; /* bytes the peer may hold unacknowledged (R-ACK-101) */
};

struct cc_ops {
    const char *name;
    void (*init)(struct cc_conn *cc, struct cc_path *pc, uint32_t n_paths,
                 const struct cc_params *prm);
    /* bytes newly acknowledged on a path; ce: the ACK reported new CE
     * marks; rtt_ns 0 if no sample. */
    void (*on_ack)(struct cc_conn *cc, struct cc_path *pc, uint32_t bytes,
                   bool ce, uint64_t rtt_ns, uint64_t now);
    void (*on_loss)(struct cc_conn *cc, struct cc_path *pc, uint64_t now);
    void (*on_timeout)(struct cc_conn *cc, struct cc_path *pc, uint64_t now);
    /* receiver's fair-share grant in Mbit/s and the path's min RTT */
    void (*on_rate_hint)(struct cc_conn *cc, uint32_t mbps, uint64_t rtt_ns,
                         uint64_t now);
};

/* The first controller: ECN-driven AIMD per path and per connection,
 * capped by the receiver's hint (cc_aimd.c, R-CC-1..3). */
extern const struct cc_ops mroce_cc_aimd;

#endif
