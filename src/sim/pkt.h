/* Simulated packets and their pool.
 *
 * A packet is an engine's UDP payload (written by the engine straight into
 * a pooled buffer, mroce_sim_pkt_take/_commit) plus what the fabric needs:
 * addressing (struct mroce_pkt_meta), the priority, the bytes it occupies on
 * the wire, a flow hash of its 5-tuple, a trimmed flag, its injection time and
 * a hop count. Packets come from a pool of preallocated chunks with two size
 * classes (control-sized and MTU-sized buffers), so the hot path never calls
 * malloc once the pool has grown to the simulation's peak.
 *
 * Ownership: a packet belongs to exactly one holder at a time (a NIC or
 * switch queue, a link in flight, a host delivering it). The holder that
 * ends its life calls mroce_sim_pkt_deliver or mroce_sim_pkt_drop, which
 * count it and return it to the pool. The pool's counters prove
 * conservation: injected = delivered + dropped (by reason) + in flight.
 *
 * Thread-safety: none; a pool belongs to one simulation.
 */
#ifndef MROCE_SIM_PKT_H
#define MROCE_SIM_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce.h>

/* Priorities: strict priority, control above data (switch.h). */
#define MROCE_SIM_PRIO_DATA 0
#define MROCE_SIM_PRIO_CTRL 1
#define MROCE_SIM_NPRIO 2

/* Why a packet was dropped. */
enum mroce_sim_drop {
    MROCE_SIM_DROP_QUEUE,     /* egress queue or shared buffer full */
    MROCE_SIM_DROP_HEADROOM,  /* lossless priority beyond PFC headroom */
    MROCE_SIM_DROP_LINK_DOWN, /* sent into, or caught on, a down link */
    MROCE_SIM_DROP_LOSS,      /* random loss on a link */
    MROCE_SIM_DROP_NO_ROUTE,  /* unknown destination */
    MROCE_SIM_DROP_HOST,      /* destination host not accepting */
    MROCE_SIM_DROP_N
};

/* Static name of a drop reason ("queue", "headroom", ...); never NULL. */
const char *mroce_sim_drop_str(int reason);

struct mroce_sim_pkt {
    struct mroce_sim_pkt *next; /* link for the holder's queue */
    uint8_t *data;              /* UDP payload */
    uint32_t len;               /* payload bytes (kept bytes if trimmed) */
    uint32_t wire_bytes;        /* bytes on the wire incl. all overhead */
    struct mroce_pkt_meta meta; /* addresses, ports, ECN as sent/marked */
    uint64_t flow_hash;         /* of the 5-tuple; switches mix in a seed */
    uint64_t inject_ps;         /* when the host handed it to its NIC */
    int32_t src_host;           /* host index of the sender */
    int32_t dst_host;           /* host index routed to, -1 unknown */
    uint32_t epoch;             /* link scratch: its down-count at send */
    uint16_t in_port;           /* switch scratch: ingress port */
    uint8_t prio;               /* MROCE_SIM_PRIO_* */
    uint8_t trimmed;            /* payload cut by a switch */
    uint8_t hops;               /* switches traversed */
    uint8_t big;                /* size class (pool internal) */
    uint8_t live;               /* between inject and deliver/drop */
    uint8_t squeezed;           /* data holds the squeezed form, clen
                                   bytes (mroce_sim_pkt_bytes) */
    uint8_t zero;               /* pool internal: data is zero, as far
                                   as its writers said (pool_set_squeeze) */
    uint32_t clen;
    uint32_t written; /* pool internal: bytes of data written, from 0 */
};

/* Payload-free runs (sim/vmem.h): a packet whose payload a codec can
 * rebuild travels squeezed in a small buffer (its headers and what the
 * payload is, ~100 bytes instead of ~4 KiB), so the memory of an
 * 8,192-host run is not the packets in flight times the MTU. squeeze is
 * told of every committed packet (its state is per packet); it writes
 * the compact form of pkt[0..len) into out (cap bytes; cap 0: no room,
 * out may be NULL) and returns its length, or 0 if it does not squeeze
 * this packet. It must only squeeze a packet expand rebuilds byte for
 * byte, and a packet it squeezes it leaves zero (pkt[0..len)); one it
 * does not, it leaves as it was. expand makes the pool's rebuild buffer
 * pkt the whole packet (the len squeeze saw); the buffer is zeros at
 * first, then as the codec's clean left it after the last packet (clean
 * ends a packet's use of it). So none writes the kilobytes of zeros a
 * payload-free packet mostly is. open tells the codec which big buffer an
 * endpoint writes into now (cap bytes) and whether the pool keeps it zero (the
 * pool's word: see mroce_sim_pool_set_squeeze); NULL if the codec need not
 * know. */
struct mroce_sim_squeeze {
    uint32_t (*squeeze)(void *ud, uint8_t *pkt, uint32_t len, uint8_t *out,
                        uint32_t cap);
    void (*expand)(void *ud, const uint8_t *in, uint32_t in_len, uint8_t *pkt);
    void (*clean)(void *ud, const uint8_t *in, uint32_t in_len, uint8_t *pkt);
    void (*open)(void *ud, uint8_t *buf, uint32_t cap, bool zero);
    void *ud;
};

struct mroce_sim_pool_counters {
    uint64_t injected;
    uint64_t delivered;
    uint64_t dropped[MROCE_SIM_DROP_N];
    uint64_t dropped_total;
    uint64_t in_flight; /* alive now: injected, not yet delivered/dropped */
    uint64_t peak_in_flight;
    /* Crossing between partitions (sim/prun.h): a packet handed to
     * another rank leaves this pool alive (exported) and is alive in the
     * receiver's (imported); over all ranks they cancel out. */
    uint64_t exported, imported;
    uint64_t allocated;       /* packets the pool holds (live + free) */
    uint64_t allocated_bytes; /* memory those take, for RSS reports */
    uint64_t squeezed;        /* packets committed squeezed */
};

struct mroce_sim_pool;

/* A pool for payloads up to max_payload bytes; chunk is how many packets
 * each growth step adds (0: 1024). NULL on allocation failure. */
struct mroce_sim_pool *mroce_sim_pool_create(uint32_t max_payload,
                                             uint32_t chunk);
/* Frees every packet, live or not. NULL is a no-op. */
void mroce_sim_pool_destroy(struct mroce_sim_pool *pool);
uint32_t mroce_sim_pool_max_payload(const struct mroce_sim_pool *pool);

/* Bytes a UDP payload of len occupies on the wire for address family
 * (MROCE_AF_INET or MROCE_AF_INET6), see defaults.h. */
uint32_t mroce_sim_wire_bytes(uint32_t len, uint8_t family);

/* Hash of (src ip, dst ip, UDP, src port, dst port). */
uint64_t mroce_sim_flow_hash(const struct mroce_pkt_meta *meta);

/* Takes a packet from the pool, copies buf[0..len) and meta into it, fills
 * wire_bytes and flow_hash, sets inject_ps = now_ps, prio, hosts, and
 * counts it injected. Returns NULL if len exceeds max_payload or memory
 * ran out (nothing counted). buf stays the caller's. */
struct mroce_sim_pkt *mroce_sim_pkt_inject(struct mroce_sim_pool *pool,
                                           const struct mroce_pkt_meta *meta,
                                           const uint8_t *buf, uint32_t len,
                                           uint64_t now_ps);

/* Zero-copy injection: take a buffer of the big class (max_payload
 * bytes, not counted), let the endpoint write into p->data, then commit
 * it as a packet of len bytes (counted injected, fields filled as by
 * mroce_sim_pkt_inject). A packet that fits the small class is moved
 * into a small buffer (a copy of at most 256 bytes): the returned packet
 * may differ from p, and p then went back to the pool. A taken buffer
 * that is not committed goes back with mroce_sim_pkt_untake. take returns
 * NULL when memory ran out; commit returns NULL when len exceeds
 * max_payload (p went back to the pool, nothing counted). */
struct mroce_sim_pkt *mroce_sim_pkt_take(struct mroce_sim_pool *pool);
/* p, taken (and kept by its endpoint after a tx that wrote nothing), is
 * written into again: tells the codec (take does this itself). */
void mroce_sim_pkt_open(struct mroce_sim_pool *pool, struct mroce_sim_pkt *p);
struct mroce_sim_pkt *mroce_sim_pkt_commit(struct mroce_sim_pool *pool,
                                           struct mroce_sim_pkt *p,
                                           const struct mroce_pkt_meta *meta,
                                           uint32_t len, uint64_t now_ps);
void mroce_sim_pkt_untake(struct mroce_sim_pool *pool, struct mroce_sim_pkt *p);

/* Partitions (sim/prun.h). export: p, alive, goes to another rank as a
 * copy; it leaves this pool without being delivered or dropped. import:
 * a packet arriving from another rank, with room for len payload bytes
 * (NULL if len exceeds the max payload or memory ran out); the caller
 * fills every field (a squeezed packet: len is its clen, and the pool
 * must squeeze too). */
void mroce_sim_pkt_export(struct mroce_sim_pool *pool, struct mroce_sim_pkt *p);
struct mroce_sim_pkt *mroce_sim_pkt_import(struct mroce_sim_pool *pool,
                                           uint32_t len);

/* Packets committed from now on are squeezed where s can (s copied; NULL
 * stops it). With a codec the pool also keeps its big buffers zero for
 * the codec's fills, as far as their writers said: a buffer returns zero
 * where it was written (a packet's len bytes, counted from 0; a squeezed
 * packet's by the codec, which checked them; an untaken buffer's
 * whole), and the codec's open hears which buffers are zero. An
 * endpoint that writes past the length it returns (or anything on a tx
 * that returns 0) leaves bytes the pool does not know of: the codec must
 * not depend on them being zero (vmem.h: such a packet is not squeezed
 * and its placement fails). Errors: MROCE_ENOMEM (no squeezing then). */
int mroce_sim_pool_set_squeeze(struct mroce_sim_pool *pool,
                               const struct mroce_sim_squeeze *s);
/* True if the pool has a codec: it can rebuild squeezed packets. */
bool mroce_sim_pool_squeezes(const struct mroce_sim_pool *pool);
/* The packet's bytes: p->data, or, for a squeezed packet, rebuilt into
 * the pool's one rebuild buffer; valid until mroce_sim_pkt_bytes_done,
 * which the caller must call before asking for another packet's bytes.
 * The first p->len bytes are the packet (a trimmed one is cut to them). */
const uint8_t *mroce_sim_pkt_bytes(struct mroce_sim_pool *pool,
                                   const struct mroce_sim_pkt *p);
void mroce_sim_pkt_bytes_done(struct mroce_sim_pool *pool,
                              const struct mroce_sim_pkt *p);

/* Cuts the payload to keep bytes (no-op if already shorter), updates
 * wire_bytes and sets trimmed. */
void mroce_sim_pkt_trim(struct mroce_sim_pkt *p, uint32_t keep);

/* Ends the packet's life: counted delivered (handed to its destination's
 * endpoint) or dropped for reason; the packet returns to the pool. */
void mroce_sim_pkt_deliver(struct mroce_sim_pool *pool,
                           struct mroce_sim_pkt *p);
void mroce_sim_pkt_drop(struct mroce_sim_pool *pool, struct mroce_sim_pkt *p,
                        int reason);

void mroce_sim_pool_get_counters(const struct mroce_sim_pool *pool,
                                 struct mroce_sim_pool_counters *out);

/* Replaces the counters with a parallel run's totals over all ranks
 * (imports and exports then cancel out), once it is over. */
void mroce_sim_pool_load_counters(struct mroce_sim_pool *pool,
                                  const struct mroce_sim_pool_counters *c);

/* True if injected + imported == delivered + dropped + exported + in
 * flight. */
bool mroce_sim_pool_conserved(const struct mroce_sim_pool *pool);

#endif
