/* A test peer for the sans-I/O engine: one real mroce context with one
 * connection, and on the other side the test itself, playing the remote
 * endpoint byte by byte. The peer owns a fake clock (`now`, advanced by
 * hand), a guarded memory arena registered with the engine, and helpers
 * that build packets (valid or hostile), feed them to mroce_ctx_rx and
 * collect what the engine emits through mroce_ctx_tx.
 *
 * Every helper asserts with cmocka, so it may only be called from a test. */
#ifndef MROCE_TESTS_SUPPORT_PEER_H
#define MROCE_TESTS_SUPPORT_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce.h>

#include "wire/wire.h"

#define PEER_T0 1000000ull /* the fake clock starts at 1 ms */
#define PEER_MTU 1024      /* default mtu of both sides */
#define PEER_PATHS 4       /* paths of the fixture's connection */
/* the default initial window of each path: 128 packets split (R-CC-4) */
#define PEER_INIT_CWND                                                         \
    (128 / PEER_PATHS * (MROCE_MAX_HDR_LEN + PEER_MTU + MROCE_ICRC_LEN))
#define PEER_MEM_LEN (64 * 1024) /* registered region */
#define PEER_GUARD 4096          /* unregistered guard on each side */
#define PEER_FILL 0xA5           /* pattern of untouched memory */
#define PEER_PKT_MAX (MROCE_MAX_HDR_LEN + 9000 + MROCE_AEAD_TAG_LEN)
#define PEER_OUT_MAX 1024          /* packets one drain can hold */
#define PEER_REMOTE_ID 0x0BADF00Du /* the peer's own connection id */
#define PEER_MAX_STREAMS 16

struct peer_sec;

/* What to build; zero fields take the defaults listed in peer.c. */
struct peer_cfg {
    uint32_t mtu;                    /* engine context mtu */
    uint32_t n_planes;               /* engine context planes */
    uint32_t spray_run;              /* engine context, R-PATH-17 */
    uint8_t no_icrc;                 /* engine context: no ICRC sent or
                                        checked (mroce_ctx_attr) */
    uint32_t cq_depth;               /* each of the two CQs */
    struct mroce_conn_attr attr;     /* send_cq/recv_cq are filled in */
    struct mroce_conn_params remote; /* conn_id/addr/port filled in */
    uint64_t (*rand64)(void *ud);    /* optional rand hook */
    void *rand_ud;
    /* the engine's own first PSN, DSN and MSN (R-CONN-5): its random
     * draws, or with fixed_init these (mroce_conn_set_init_seq) */
    bool fixed_init;
    uint32_t init_psn, init_dsn, init_msn;
    const struct mroce_crypto *crypto; /* engine context's provider */
    const uint16_t *src_ports;         /* engine context's port set */
    uint32_t n_src_ports;
};

/* One packet the engine emitted, decoded. h.payload points into buf, so
 * refer to it in place rather than copying the struct. */
struct peer_out {
    struct mroce_pkt_meta meta;
    struct mroce_hdr h;
    size_t len;
    uint8_t buf[PEER_PKT_MAX];
};

struct peer {
    uint64_t now; /* the fake clock, in ns */
    struct mroce_ctx *ctx;
    struct mroce_pd *pd;
    struct mroce_cq *scq, *rcq;
    struct mroce_conn *conn;
    struct mroce_conn_params local;  /* the engine's parameters */
    struct mroce_conn_params remote; /* what the peer told the engine */
    uint32_t mtu;                    /* negotiated */
    bool no_icrc;                    /* the engine sends no ICRC */

    /* arena = guard | region (mem, PEER_MEM_LEN) | guard */
    uint8_t *arena;
    uint8_t *mem;
    struct mroce_mr *mr; /* mem, every access right */
    uint32_t rkey;
    uint64_t va;

    /* sequence numbers a well-behaved peer would use next */
    uint32_t psn[256];
    uint32_t dsn;
    uint32_t msn[PEER_MAX_STREAMS];
    uint32_t ssn[PEER_MAX_STREAMS];

    struct peer_out *out; /* filled by peer_drain */
    int n_out;
    /* every data packet and PROBE the engine sent, by (path, PSN mod 256):
     * its PSN and ts, for the echo_ts of the peer's ACKs (R-VAL-1) */
    struct peer_sent {
        uint32_t psn, ts;
        bool any;
    } (*sent)[256];

    /* what the peer received of the engine's own sends (peer_ack_all) */
    bool rx_any[256];
    uint32_t rx_high[256];
    uint64_t rx_bits[256][4];
    uint32_t rx_cum;
    uint8_t rx_seen[4096]; /* by DSN mod 4096, above rx_cum */

    struct peer *live_next; /* every peer not yet freed (peer_free_all) */
    struct peer_sec *sec;   /* secure modes: support/peer_sec.h */
};

/* The engine's own sequence numbers start at its announced init values
 * (R-CONN-5): its k-th PSN of a path, k-th DSN and k-th MSN of a stream. */
static inline uint32_t peer_tpsn(const struct peer *p, uint32_t k)
{
    return p->local.init_psn + k;
}
static inline uint32_t peer_tdsn(const struct peer *p, uint32_t k)
{
    return p->local.init_dsn + k;
}
static inline uint32_t peer_tmsn(const struct peer *p, uint32_t k)
{
    return p->local.init_msn + k;
}

void peer_default_cfg(struct peer_cfg *cfg);
/* Creates the engine side and connects it to the peer. cfg may be NULL. */
struct peer *peer_new(const struct peer_cfg *cfg);
/* Creates the engine side but leaves the connection in INIT. */
struct peer *peer_new_unconnected(const struct peer_cfg *cfg);
void peer_connect(struct peer *p);
void peer_free(struct peer *p);
/* Frees every peer still alive: call it from each test's teardown, so a
 * test that fails half-way (cmocka longjmps out) leaks nothing. */
void peer_free_all(void);

/* ---- packets from the peer ---- */

/* Addressing of a datagram from the peer to the engine on `path`. */
struct mroce_pkt_meta peer_meta(const struct peer *p, uint16_t path);
/* An MTH for the engine's connection, stamped with the fake clock. */
struct mroce_hdr peer_hdr(const struct peer *p, uint8_t opcode, uint16_t path,
                          uint32_t psn);
/* Encodes h + payload with no validity rules (payload on any opcode). */
size_t peer_encode(const struct mroce_hdr *h, const void *payload, uint32_t len,
                   uint8_t *buf);
/* Feeds raw bytes as if they came from the peer on path 0. */
int peer_rx_raw(struct peer *p, const uint8_t *buf, size_t len);
/* Feeds raw bytes with explicit addressing. */
int peer_rx_meta(struct peer *p, const struct mroce_pkt_meta *m,
                 const uint8_t *buf, size_t len);
/* Encodes h + payload and feeds it (addressed on h->path). */
int peer_feed(struct peer *p, const struct mroce_hdr *h, const void *payload,
              uint32_t len);

int peer_write(struct peer *p, uint16_t path, uint32_t psn, uint32_t dsn,
               uint16_t stream, uint32_t msn, uint64_t va, uint32_t rkey,
               uint32_t offset, uint32_t msg_len, const void *payload,
               uint32_t len);
int peer_send(struct peer *p, uint16_t path, uint32_t psn, uint32_t dsn,
              uint16_t stream, uint32_t msn, uint32_t ssn, uint32_t offset,
              uint32_t msg_len, const void *payload, uint32_t len);
/* An ACK for the engine's sends on `path`; psns lists the PSNs received
 * (each within 256 below sack_high). */
int peer_ack(struct peer *p, uint16_t path, uint32_t sack_high,
             uint32_t dsn_cum, const uint32_t *psns, int n);
/* An ACK saying every PSN in [lo, sack_high] arrived on `path`. */
int peer_ack_range(struct peer *p, uint16_t path, uint32_t lo,
                   uint32_t sack_high, uint32_t dsn_cum);
int peer_nak(struct peer *p, const struct mroce_hdr *data, uint8_t code,
             uint32_t info);
/* The ts the engine sent its (path, psn) with (seen by a drain), which a
 * true receiver echoes; the clock if the peer never saw that PSN. */
uint32_t peer_sent_ts(const struct peer *p, uint16_t path, uint32_t psn);

/* ---- what the engine emits ---- */

/* Takes every packet the engine wants to send now into p->out (each
 * checked to decode and to be addressed to the peer), copies up to max
 * headers to out (may be NULL) and returns how many were taken. */
int peer_drain(struct peer *p, struct mroce_hdr *out, int max);
/* Packets of the last drain with this opcode. */
int peer_count(const struct peer *p, uint8_t opcode);
/* The i-th packet of the last drain with this opcode, or NULL. */
const struct peer_out *peer_find(const struct peer *p, uint8_t opcode, int i);
/* Answers every data packet and PROBE of the last drain with one ACK per
 * path (all received, dsn_cum = first DSN not seen yet). */
void peer_ack_all(struct peer *p);

/* R-VAL-7: the engine sends READ response data only once an ACK of the
 * peer has resolved one of its transmissions; before that it sends a
 * PROBE. Answers the PROBE of the last drain (peer_ack_all) and drains
 * again; returns the number of packets. */
int peer_prove(struct peer *p);

/* Posts a receive of [mem + off, +len) on `stream`. */
void peer_post_recv(struct peer *p, uint16_t stream, uint64_t wr_id,
                    uint32_t off, uint32_t len);
/* Posts a send-queue WR on the engine over [mem + off, +len); op is
 * MROCE_OP_WRITE, _WRITE_IMM, _SEND, _SEND_IMM or _READ_REQ. Returns the
 * post call's result. */
int peer_post(struct peer *p, uint8_t op, uint16_t stream, uint64_t wr_id,
              uint32_t off, uint32_t len);

/* ---- time ---- */

void peer_advance(struct peer *p, uint64_t ns);
/* Moves the clock to the engine's next deadline (if it is later) and runs
 * its timers; false if no timer is armed. */
bool peer_fire(struct peer *p);
/* Runs timers (peer_fire) and drains until the engine emits something, at
 * most max_rounds times; returns the number of packets (0: none). The
 * engine may report a deadline earlier than its real next timer (a cheap
 * cached deadline, docs/design.md "Timers"), so a test must not assume
 * that the first expiry does anything. */
int peer_fire_tx(struct peer *p, int max_rounds);

/* ---- state ---- */

int peer_poll(struct mroce_cq *cq, struct mroce_wc *wc, int max);
/* Drops counted anywhere: context and connection counters. */
uint64_t peer_drops(const struct peer *p);
/* Bytes of the arena (guards included) that differ from PEER_FILL. */
size_t peer_mem_dirty(const struct peer *p);
/* Puts PEER_FILL back everywhere. */
void peer_mem_reset(struct peer *p);
/* Deterministic test bytes; different seeds give different bytes. */
void peer_pattern(uint8_t *buf, size_t len, uint32_t seed);
struct mroce_path_info peer_path(const struct peer *p, uint16_t path);
struct mroce_conn_counters peer_cnt(const struct peer *p);
struct mroce_ctx_counters peer_ctx_cnt(const struct peer *p);

/* Proves the connection still works: a one-packet WRITE with the next
 * in-order sequence numbers lands in memory and is acknowledged at once
 * (ACK for its PSN, dsn_cum past it). Restores the memory afterwards. */
void peer_check_alive(struct peer *p);

#endif
