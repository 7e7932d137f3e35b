/* ECN-driven AIMD per path and per connection (R-CC-1..3).
 * Path: priv[0] = time of the last multiplicative decrease (one per RTT),
 * priv[1] = smoothed RTT seen by the controller, priv[2] = mtu << 32 |
 * cap (bytes), priv[3] = ACKed bytes not yet turned into window.
 * Connection: priv[0] = time of its last CE mark, priv[1] = mtu << 32 |
 * its maximum window, priv[2] = the share of its recent ACKs that report
 * CE marks (in 1/AIMD_CE_ONE), priv[3] = the bytes the peer may hold
 * unacknowledged (R-ACK-101). */
#include "engine/cc.h"

#define AIMD_BETA_ECN 4 /* ECN: cwnd -= cwnd / 4 */
/* loss: cwnd -= cwnd / 8. ECN is the congestion signal (switches mark
 * long before they drop); a loss without marks is as likely corruption or
 * a failing route, which the path machinery handles. Halving made 10%
 * random loss cost 0.51 of the lossless all-reduce, an eighth 0.59. */
#define AIMD_BETA_LOSS 8
/* R-CC-3: the fair-share cap is k x hint x RTT with k = 1.5 while the
 * connection saw CE marks within the last HINT_CALM_RTTS RTTs (a queue is
 * building: keep at most half a BDP standing per bottleneck), else k = 2
 * (no queue: the headroom lets losses wait for their retransmission
 * without stalling the window; k = 1 cost a lone flow at 10% random loss
 * 0.57 of its bound, k = 2 0.99). k = 1 under marks left a 64-host
 * all-to-all, where every sender is also a receiver's 1/63, no slack at
 * all: 1.33 x ideal, against 1.13 at 1.5 and 1.09 at 2. */
#define HINT_CALM_RTTS 16
/* R-ACK-101: the share of a connection's ACKs that report new CE marks, a
 * moving average over its ACKs (gain 1/16). The peer's ACK allowance is
 * added in full while at most half of them do, not at all from three
 * quarters on (linear between). A 64-host all-to-all marks 0.2% of its
 * packets and never gets near half; a 63-to-1 incast's ACKs mostly carry
 * marks, and there the allowance stood in the receiver's queue: 63 x 15
 * packets, 4.4 MB against 0.43 MB without it. */
#define AIMD_CE_ONE 1024
#define AIMD_CE_GAIN 16
#define AIMD_SLACK_FULL (AIMD_CE_ONE / 2)
#define AIMD_SLACK_NONE (AIMD_CE_ONE * 3 / 4)

static uint32_t aimd_clamp(uint64_t v, uint32_t lo, uint32_t hi)
{
    if (v < lo)
        return lo;
    return v > hi ? hi : (uint32_t)v;
}

static void aimd_init(struct cc_conn *cc, struct cc_path *pc, uint32_t n,
                      const struct cc_params *prm)
{
    cc->cwnd = prm->max_conn;
    cc->priv[0] = 0;
    cc->priv[1] = ((uint64_t)prm->mtu << 32) | prm->max_conn;
    cc->priv[2] = 0;
    cc->priv[3] = prm->ack_slack;
    for (uint32_t i = 0; i < n; i++) {
        pc[i].cwnd = prm->init_cwnd;
        pc[i].priv[0] = 0;
        pc[i].priv[1] = 0;
        pc[i].priv[2] = ((uint64_t)prm->mtu << 32) | prm->max_path;
        pc[i].priv[3] = 0;
    }
}

static uint32_t aimd_mtu(const struct cc_path *pc)
{
    return (uint32_t)(pc->priv[2] >> 32);
}

static uint32_t aimd_max(const struct cc_path *pc)
{
    return (uint32_t)pc->priv[2];
}

/* One decrease per RTT: marks within the same RTT are the same event. */
static void aimd_cut(struct cc_path *pc, unsigned beta, uint64_t now)
{
    uint64_t rtt = pc->priv[1] ? pc->priv[1] : 10000;
    if (pc->priv[0] && now - pc->priv[0] < rtt)
        return;
    pc->priv[0] = now;
    pc->cwnd =
        aimd_clamp(pc->cwnd - pc->cwnd / beta, aimd_mtu(pc), aimd_max(pc));
}

/* R-ACK-101: one more ACK in the connection's CE share. The decay rounds
 * up so that a connection whose marks stopped gets back to 0, where an
 * unmarked ACK costs one test. */
static void aimd_ce_share(struct cc_conn *cc, bool ce)
{
    uint64_t m = cc->priv[2];
    if (!ce && !m)
        return;
    cc->priv[2] = m - (m + AIMD_CE_GAIN - 1) / AIMD_CE_GAIN +
                  (ce ? AIMD_CE_ONE / AIMD_CE_GAIN : 0);
}

static void aimd_on_ack(struct cc_conn *cc, struct cc_path *pc, uint32_t bytes,
                        bool ce, uint64_t rtt, uint64_t now)
{
    if (rtt)
        pc->priv[1] = pc->priv[1] ? (pc->priv[1] * 7 + rtt) / 8 : rtt;
    aimd_ce_share(cc, ce);
    if (ce) {
        cc->priv[0] = now ? now : 1; /* the connection's last CE (R-CC-3) */
        aimd_cut(pc, AIMD_BETA_ECN, now);
        return;
    }
    /* additive increase: one MTU per window's worth of ACKed bytes, with
     * the remainder carried in priv[3] so small ACKs add up exactly */
    pc->priv[3] += bytes;
    if (pc->priv[3] < pc->cwnd)
        return;
    pc->priv[3] -= pc->cwnd;
    pc->cwnd = aimd_clamp((uint64_t)pc->cwnd + aimd_mtu(pc), aimd_mtu(pc),
                          aimd_max(pc));
}

static void aimd_on_loss(struct cc_conn *cc, struct cc_path *pc, uint64_t now)
{
    (void)cc;
    aimd_cut(pc, AIMD_BETA_LOSS, now);
}

static void aimd_on_timeout(struct cc_conn *cc, struct cc_path *pc,
                            uint64_t now)
{
    (void)cc;
    pc->priv[0] = now;
    pc->cwnd = aimd_mtu(pc);
}

/* R-ACK-101: what the peer may hold unacknowledged, while the
 * connection's ACKs do not mostly report CE marks (AIMD_CE_ONE). */
static uint64_t aimd_slack(const struct cc_conn *cc)
{
    uint64_t ce = cc->priv[2];
    if (ce <= AIMD_SLACK_FULL)
        return cc->priv[3];
    if (ce >= AIMD_SLACK_NONE)
        return 0;
    return cc->priv[3] * (AIMD_SLACK_NONE - ce) /
           (AIMD_SLACK_NONE - AIMD_SLACK_FULL);
}

/* R-CC-3: the connection may keep k x hint x RTT bytes in flight, never
 * less than one packet so the hint cannot starve it, plus what the peer
 * may hold before it acknowledges (R-ACK-101): a window that closes
 * before the peer's coalesced ACK is due would wait for every ACK. */
static void aimd_on_rate_hint(struct cc_conn *cc, uint32_t mbps,
                              uint64_t rtt_ns, uint64_t now)
{
    uint32_t max = (uint32_t)cc->priv[1];
    if (!mbps || !rtt_ns) {
        cc->cwnd = max;
        return;
    }
    uint64_t bdp = (uint64_t)mbps * rtt_ns / 8000; /* Mbit/s * ns -> B */
    bool marked = cc->priv[0] && now - cc->priv[0] < HINT_CALM_RTTS * rtt_ns;
    cc->cwnd = aimd_clamp(bdp * (marked ? 3 : 4) / 2 + aimd_slack(cc),
                          (uint32_t)(cc->priv[1] >> 32), max);
}

const struct cc_ops mroce_cc_aimd = {
    .name = "aimd",
    .init = aimd_init,
    .on_ack = aimd_on_ack,
    .on_loss = aimd_on_loss,
    .on_timeout = aimd_on_timeout,
    .on_rate_hint = aimd_on_rate_hint,
};
