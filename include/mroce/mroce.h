/* mroce public API -- see docs/spec.md for the protocol. */
#ifndef MROCE_MROCE_H
#define MROCE_MROCE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Addressing and packet metadata (the sans-I/O boundary) ---- */

#define MROCE_AF_NONE 0
#define MROCE_AF_INET 4
#define MROCE_AF_INET6 6

/* An IP address: family MROCE_AF_INET uses ip[0..3], MROCE_AF_INET6 all 16. */
struct mroce_addr {
    uint8_t family;
    uint8_t ip[16];
};

/* IP ECN codepoints (RFC 3168). */
#define MROCE_ECN_NOT_ECT 0
#define MROCE_ECN_ECT1 1
#define MROCE_ECN_ECT0 2
#define MROCE_ECN_CE 3

/* What a datapath tells the engine about a received UDP datagram, and what
 * the engine tells the datapath about one to send. The UDP payload itself
 * travels separately as (buf, len). */
struct mroce_pkt_meta {
    struct mroce_addr src;
    struct mroce_addr dst;
    uint16_t src_port; /* path entropy (R-ENC-3) */
    uint16_t dst_port;
    uint8_t ecn; /* MROCE_ECN_* */
    /* tx: the plane the packet belongs on (R-ENC-10), below
     * mroce_ctx_attr.n_planes; a multi-port datapath sends it from that
     * port. rx: ignored. */
    uint8_t plane;
};

/* ---- Errors ---- */

/* Every function returning int returns 0 (or a count) on success and one
 * of these on failure. */
enum mroce_err {
    MROCE_OK = 0,
    MROCE_EINVAL = -1,   /* bad argument */
    MROCE_ENOMEM = -2,   /* allocation failed */
    MROCE_EAGAIN = -3,   /* queue or window full; retry after progress */
    MROCE_ENOENT = -4,   /* unknown key, path or stream */
    MROCE_ESTATE = -5,   /* object in the wrong state for this call */
    MROCE_ERANGE = -6,   /* buffer outside its memory region */
    MROCE_EACCES = -7,   /* key lacks the access right */
    MROCE_EBUSY = -8,    /* object still in use */
    MROCE_ENOBUFS = -9,  /* caller's buffer too small */
    MROCE_EPROTO = -10,  /* packet dropped: malformed or not for us */
    MROCE_ENOTSUP = -11, /* not available here (e.g. no crypto provider) */
};

/* Static English text for an error code; never NULL. Thread-safe. */
const char *mroce_strerror(int err);

/* ---- Hooks: how the engine gets memory, randomness and logging ---- */

#define MROCE_LOG_ERR 0
#define MROCE_LOG_INFO 1
#define MROCE_LOG_DEBUG 2

/* Any NULL member gets a default: malloc/free, no logging, and for
 * rand64 the kernel's CSPRNG (getrandom(2), read 256 bytes at a time), or
 * with mroce_ctx_attr.deterministic a generator seeded from
 * mroce_ctx_attr.seed. A rand64 hook supplied outside simulation and
 * tests MUST be a cryptographically secure generator: connection ids,
 * memory keys and initial sequence numbers are drawn from it, and nothing
 * about the connection must let a host predict them (R-SEC-2, R-SEC-7).
 * The engine calls alloc when objects are created and when a connection's
 * rings grow: its DSN ring, retransmit FIFO and per-path PSN rings start
 * small at connect and double while what is in flight fills them, up to
 * the negotiated windows (a few times per connection, not per packet). A
 * failed growth holds the sending back as a full window would. */
struct mroce_hooks {
    void *ud;
    void *(*alloc)(void *ud, size_t size); /* zeroed memory or NULL */
    void (*free)(void *ud, void *p);
    uint64_t (*rand64)(void *ud);
    void (*log)(void *ud, int level, const char *msg);
};

/* ---- Crypto provider (authenticated and encrypted modes, R-AEAD) ----
 *
 * The engine never links a crypto library: AES-128-GCM and HKDF-SHA256
 * come through this table, given at context creation (like ngtcp2's
 * crypto callbacks). src/crypto provides one over intel-ipsec-mb or
 * OpenSSL (mroce_crypto.h); the datapaths fill it in by default. Every
 * function may be called from any thread for different key objects; a
 * key object is used by one thread at a time. */

#define MROCE_AEAD_KEY_LEN 16 /* AES-128 */
#define MROCE_AEAD_IV_LEN 12  /* GCM nonce */
#define MROCE_AEAD_TAG_LEN 16 /* GCM tag, the trailer of a sealed packet */
#define MROCE_SECRET_LEN 32   /* connection secret (R-AEAD-6) */

struct mroce_crypto {
    void *ud;
    /* An AES-128-GCM key object for key[0, 16): the key expansion and
     * GHASH tables, computed once per key. NULL on failure. */
    void *(*key_new)(void *ud, const uint8_t *key);
    /* Frees a key object and wipes its key material. */
    void (*key_free)(void *ud, void *key);
    /* AES-128-GCM encryption with the 12-byte iv. The additional data is
     * aad[0, aad_len) followed by aad2[0, aad2_len) (one AAD string in
     * two places); the plaintext in[0, len) becomes out[0, len) (in ==
     * out allowed; other overlaps not); the 16-byte tag goes to tag.
     * Returns 0, or a negative MROCE_E* code (nothing usable written). */
    int (*seal)(void *ud, void *key, const uint8_t *iv, const uint8_t *aad,
                size_t aad_len, const uint8_t *aad2, size_t aad2_len,
                const uint8_t *in, uint8_t *out, size_t len, uint8_t *tag);
    /* The inverse: 0 if tag authenticates iv, the AAD and in[0, len), and
     * then out[0, len) is the plaintext; negative otherwise, and out[0,
     * len) may hold anything (never use it). Tag comparison in constant
     * time. */
    int (*open)(void *ud, void *key, const uint8_t *iv, const uint8_t *aad,
                size_t aad_len, const uint8_t *aad2, size_t aad2_len,
                const uint8_t *in, uint8_t *out, size_t len,
                const uint8_t *tag);
    /* HKDF-Expand (RFC 5869) with HMAC-SHA256: out[0, out_len) from the
     * pseudorandom key prk[0, prk_len) and info[0, info_len). out_len at
     * most 255 * 32. Returns 0 or a negative MROCE_E* code. */
    int (*hkdf_expand)(void *ud, const uint8_t *prk, size_t prk_len,
                       const uint8_t *info, size_t info_len, uint8_t *out,
                       size_t out_len);
    /* Bytes one key object holds, for mroce_ctx_state_bytes (0: not
     * known; the accounting then leaves the key objects out). */
    size_t key_bytes;
};

/* ---- Context (one endpoint: an address and a UDP port) ---- */

struct mroce_ctx;
struct mroce_pd;
struct mroce_mr;
struct mroce_cq;
struct mroce_conn;

struct mroce_ctx_attr {
    struct mroce_hooks hooks;
    /* Simulation and tests only (R-SEC-7): 1 makes the default rand64 a
     * fixed generator (splitmix64) over `seed`, so that a run is repeated
     * exactly; its ids, keys and initial sequence numbers are then
     * predictable by anyone who knows or guesses the seed. 0 (default):
     * the kernel's CSPRNG, and `seed` is ignored. Ignored when
     * hooks.rand64 is set. */
    uint8_t deterministic;
    uint64_t seed;           /* with deterministic = 1 */
    struct mroce_addr addr;  /* this endpoint's IP address */
    uint16_t udp_port;       /* 0: MROCE_UDP_PORT (4797) */
    uint32_t mtu;            /* payload bytes per packet; 0: 4096 */
    uint32_t link_mbps;      /* line rate for the fair-share hint;
                                0: 100000 */
    uint8_t transport;       /* MROCE_TRANSPORT_* [METAROCE] */
    uint8_t rocev2_no_dcqcn; /* RoCEv2 only: 1 turns DCQCN off [on] */
    uint8_t no_icrc;         /* send packets with a zero ICRC and
                                accept packets without checking it
                                (simulation speed: a fabric that cannot
                                corrupt; not valid on a wire). MetaRoCE
                                in secure modes seals as usual */
    /* MetaRoCE only: the UDP source ports paths may use (R-ENC-3), for a
     * datapath that can send from a fixed set of ports only (one socket
     * per port). Copied at open. NULL/0: any port in 49152-65535. A
     * connection may then have at most n_src_ports paths. */
    const uint16_t *src_ports;
    uint32_t n_src_ports; /* at most MROCE_MAX_SRC_PORTS */
    /* MetaRoCE only: the fabric's base RTT. The fair-share window (R-CC-3)
     * uses the smaller of it and the measured min RTT, so a connection
     * whose first RTT sample already waited in a queue does not keep that
     * queue. 0: the measured min RTT alone. */
    uint32_t base_rtt_ns;
    /* Planes the endpoint's NIC attaches to, one port each (R-ENC-10):
     * MetaRoCE path p is on plane p mod n_planes, a RoCEv2 QP on its source
     * port mod n_planes. 1..MROCE_MAX_PLANES; 0: 1. */
    uint32_t n_planes;
    /* MetaRoCE only: how many data packets in a row one path may take
     * before the round-robin moves on (R-PATH-17), while it stays the
     * best-ranked path with room. 0 or 1: one packet per path turn, a
     * different path for every packet (R-PATH-13). Larger runs let a UDP
     * datapath send a run as one GSO message (15 fill 64 KiB at mtu 4096)
     * but put more packets of a path in flight at once, which weakens
     * loss detection across paths (R-LOSS-8). 1..MROCE_MAX_SPRAY_RUN. */
    uint32_t spray_run;
    /* R-ENC-10: the address of each plane, in plane order (n_planes
     * entries, each of addr's family): announced to peers and the source
     * of every packet sent on that plane. Copied at open. NULL: addr on
     * every plane. */
    const struct mroce_addr *plane_addrs;
    /* MetaRoCE only: AES-128-GCM and HKDF for the authenticated and
     * encrypted modes (mroce_conn_set_secret). Copied at open; every
     * function must be set. NULL: only MROCE_SEC_NONE. */
    const struct mroce_crypto *crypto;
};

#define MROCE_MAX_PLANES 64
#define MROCE_MAX_SPRAY_RUN 256

#define MROCE_MAX_SRC_PORTS 256

/* The wire protocol a context speaks. Every call of this API works with
 * both; the path extensions (mroce_path_*) are MetaRoCE only. RoCEv2 is
 * the IBTA RC baseline of src/roce (UDP port 4791, go-back-N, DCQCN),
 * kept for side-by-side comparisons. */
#define MROCE_TRANSPORT_METAROCE 0
#define MROCE_TRANSPORT_ROCEV2 1

#define MROCE_UDP_PORT 4797

/* Features of the MetaRoCE wire protocol (R-VER-5, bits of the set-up
 * exchange's features, R-CM-7): in effect when both sides announce. */
#define MROCE_FEAT_ACKM 0x4 /* ACKs with path records (R-ACKM-1) */

/* Creates an endpoint. Errors: EINVAL (mtu outside 256..9000, more than
 * MROCE_MAX_SRC_PORTS source ports, a port 0 or the same port twice among
 * them, spray_run above MROCE_MAX_SPRAY_RUN, a plane address of another
 * family than addr), ENOMEM, ENOENT (the default rand64 found no secure
 * source: neither getrandom(2) nor /dev/urandom).
 * Not thread-safe: one thread drives a context at a time. */
int mroce_ctx_open(const struct mroce_ctx_attr *attr, struct mroce_ctx **out);
/* Destroys the context and everything created from it. */
void mroce_ctx_close(struct mroce_ctx *ctx);

/* ---- Sans-I/O driving: the datapath calls these ---- */

/* Largest UDP payload this context emits (size of tx buffers): with a
 * crypto provider, room for the 16-byte tag of the secure modes. */
size_t mroce_ctx_max_pkt(const struct mroce_ctx *ctx);

/* Feeds one received UDP payload. buf stays the caller's. Returns
 * MROCE_EPROTO if the packet is dropped before a connection takes it:
 * malformed, unknown connection or wrong source (counted by reason in
 * mroce_ctx_counters) or a path id out of range (drop_bad_path of the
 * connection). Returns 0 once a connection took it, even if it then drops
 * or refuses it (counted in mroce_conn_counters). Never writes outside
 * registered memory. */
int mroce_ctx_rx(struct mroce_ctx *ctx, uint64_t now_ns,
                 const struct mroce_pkt_meta *meta, const uint8_t *buf,
                 size_t len);

/* Writes the next packet to send into buf (cap bytes, at least
 * mroce_ctx_max_pkt) and its addressing into *meta. Returns its length,
 * 0 if there is nothing to send now, or ENOBUFS if cap is too small. */
int mroce_ctx_tx(struct mroce_ctx *ctx, uint64_t now_ns, uint8_t *buf,
                 size_t cap, struct mroce_pkt_meta *meta);

#define MROCE_TX_ICRC_LEN 4
#define MROCE_TX_TRAILER_MAX MROCE_AEAD_TAG_LEN

/* Where the parts of a packet from mroce_ctx_tx_ref lie. On the wire the
 * packet is buf[0, hdr_len), then payload[0, payload_len), then
 * trailer[0, trailer_len). payload_len 0 (ACK, NACK, PROBE, CLOSE, a
 * zero-length message, every packet of an encrypted connection, every
 * RoCEv2 packet): the whole packet is buf[0, hdr_len), trailer included;
 * payload is NULL and trailer unused. */
struct mroce_tx_ref {
    const uint8_t *payload; /* in a registered memory region */
    uint32_t payload_len;
    uint32_t hdr_len; /* bytes the engine wrote into buf */
    /* what follows the payload: the ICRC (R-CRC-1, 4 bytes) or, on an
     * authenticated connection, the AES-GCM tag (R-AEAD-3, 16 bytes),
     * computed over the headers and the payload where it lies */
    uint32_t trailer_len;
    uint8_t trailer[MROCE_TX_TRAILER_MAX];
};

/* Zero-copy transmit: the same packet mroce_ctx_tx would write, byte for
 * byte, with the same effect on the engine, but a data packet's payload
 * is not copied: the engine writes its headers into buf and says in *ref
 * where the payload lies (the sender's registered memory for WRITE and
 * SEND, the responder's for a READ response) and what trailer follows
 * it. On an encrypted connection (MROCE_SEC_ENCRYPT) the payload on the
 * wire is ciphertext, which exists only in buf: such packets come back
 * whole (payload_len 0), as mroce_ctx_tx writes them. Returns the
 * packet's length on the wire (hdr_len + payload_len + trailer_len, or
 * hdr_len when payload_len is 0), 0 if there is nothing to send now, or
 * ENOBUFS if cap is below mroce_ctx_max_pkt.
 *
 * Lifetime: ref->payload is valid, and still holds the bytes the trailer
 * covers, only until the next call into the engine for this context
 * (mroce_ctx_rx, mroce_ctx_tx, mroce_ctx_tx_ref, mroce_ctx_on_expiry,
 * any post, mroce_poll_cq, any connection or memory region call): such a
 * call may complete the work request and hand the memory back to the
 * application. The datapath must have handed the payload to the kernel
 * or device (which copies it, as sendmsg does) before it calls the engine
 * again, or copy it. A device that reads the memory asynchronously (DMA,
 * a DPDK external buffer) would need a hold on the memory region until
 * it has read it; this call provides none.
 *
 * The RoCEv2 baseline context returns every packet whole in buf
 * (payload_len 0). Not thread-safe, as mroce_ctx_tx. */
int mroce_ctx_tx_ref(struct mroce_ctx *ctx, uint64_t now_ns, uint8_t *buf,
                     size_t cap, struct mroce_pkt_meta *meta,
                     struct mroce_tx_ref *ref);

/* R-PATH-14: the planes whose port can take a packet now (bit i = plane
 * i), for a datapath with a queue per port: until the next call,
 * mroce_ctx_tx returns data packets (MetaRoCE) or any packet of a QP
 * (RoCEv2) only for those planes, so one full port does not hold back
 * the others. MetaRoCE ACKs, PROBEs and control packets (small) may
 * still go to any plane. Default: every plane. */
void mroce_ctx_set_tx_planes(struct mroce_ctx *ctx, uint64_t planes);

/* Earliest time on_expiry must be called; UINT64_MAX if none. It may be
 * earlier than every timer (one moved later since): on_expiry then runs
 * nothing, and the next call returns a later time. */
uint64_t mroce_ctx_next_expiry(const struct mroce_ctx *ctx);
/* Runs due timers (retransmission, probes, delayed ACKs). */
void mroce_ctx_on_expiry(struct mroce_ctx *ctx, uint64_t now_ns);

/* Drops at the endpoint, by reason (R-RX-1, R-RX-2, R-RX-5). */
struct mroce_ctx_counters {
    uint64_t rx_pkts;
    uint64_t tx_pkts;
    uint64_t drop_truncated;
    uint64_t drop_bad_version;
    uint64_t drop_bad_opcode;
    uint64_t drop_bad_crc;
    uint64_t drop_bad_payload;
    uint64_t drop_unknown_conn;
    uint64_t drop_bad_src;
    uint64_t planes_down; /* R-PATH-15: a plane marked down (MetaRoCE) */
};
void mroce_ctx_get_counters(const struct mroce_ctx *ctx,
                            struct mroce_ctx_counters *out);

/* Engine memory of a MetaRoCE context, in bytes, as allocated now (not
 * counting the allocator's own overhead). A connection's DSN ring and
 * retransmit FIFO and each path's PSN ring start small at connect and
 * double while what is in flight fills them, up to dsn_window and
 * path_window; paths are allocated at connect for the negotiated count.
 * A RoCEv2 context reports its context tables only. Cost O(connections
 * + paths). Not thread-safe (reads the context's state). */
struct mroce_state_bytes {
    uint64_t conns, paths; /* connections; paths over all of them */
    /* unit sizes */
    uint64_t per_conn;     /* a connection's fixed object */
    uint64_t per_path;     /* a path's fixed state, both directions */
    uint64_t per_dsn_slot; /* a DSN ring slot plus a retransmit slot */
    uint64_t per_psn_slot; /* a slot of a path's PSN ring */
    /* totals over the context's connections */
    uint64_t conn_bytes; /* fixed objects, DSN dedup bitmaps, READ slots,
                            send/receive queues (sq_depth, rq_depth) */
    uint64_t path_bytes; /* paths' fixed state */
    uint64_t dsn_bytes;  /* DSN rings and retransmit FIFOs */
    uint64_t psn_bytes;  /* PSN rings */
    uint64_t ctx_bytes;  /* the context object and its tables */
    uint64_t sec_bytes;  /* the secure modes (R-AEAD): per connection its
                            key schedule, replay windows and the provider's
                            key objects (mroce_crypto.key_bytes each); the
                            context's decrypt buffer (mtu) */
    uint64_t total;      /* the sum of the six above */
};
void mroce_ctx_state_bytes(const struct mroce_ctx *ctx,
                           struct mroce_state_bytes *out);

/* ---- Protection domains and memory regions ---- */

int mroce_pd_alloc(struct mroce_ctx *ctx, struct mroce_pd **out);
/* Errors: EBUSY while memory regions or connections use it. */
int mroce_pd_free(struct mroce_pd *pd);

#define MROCE_ACCESS_LOCAL_WRITE 0x1
#define MROCE_ACCESS_REMOTE_WRITE 0x2
#define MROCE_ACCESS_REMOTE_READ 0x4

/* Registers [addr, addr+len). The memory stays the caller's and must stay
 * valid until mroce_dereg_mr. Keys are 32-bit random values, unique in
 * the context (R-SEC-2). The local and remote key are the same value.
 * Errors: EINVAL (len 0, unknown flags, remote write without local
 * write), ENOMEM. */
int mroce_reg_mr(struct mroce_pd *pd, void *addr, size_t len, unsigned access,
                 struct mroce_mr **out);

/* A region with no backing bytes, for simulations that move more data
 * than the machine holds (docs/sim.md "Payload-free runs"). The engines
 * never read or write its memory: every payload byte they would write
 * into it (placement of WRITE, SEND and READ response data) goes to
 * place, every byte they would read from it (data they send) comes from
 * fill. off is the byte offset in the region; src/dst are the engine's
 * packet buffer, lent for the call. The hooks run on the thread that
 * drives the context, inside mroce_ctx_rx / mroce_ctx_tx. */
struct mroce_mr_virt {
    void (*place)(void *ud, uint64_t off, const uint8_t *src, size_t len);
    void (*fill)(void *ud, uint64_t off, uint8_t *dst, size_t len);
    void *ud;
};

/* Registers [va, va+len) as a payload-free region: va is any address
 * (never dereferenced), peers address it as usual; v is copied. Work
 * requests and placements that name it behave as for mroce_reg_mr, with
 * the bytes moved through the hooks. Errors: EINVAL (as mroce_reg_mr, a
 * hook missing, va + len wrapping, or overlap with another payload-free
 * region of the context), ENOMEM. */
int mroce_reg_mr_virt(struct mroce_pd *pd, uint64_t va, size_t len,
                      unsigned access, const struct mroce_mr_virt *v,
                      struct mroce_mr **out);
uint32_t mroce_mr_lkey(const struct mroce_mr *mr);
uint32_t mroce_mr_rkey(const struct mroce_mr *mr);
/* Errors: EBUSY while a posted work request or receive refers to it, or
 * while a READ response is served from it (until its last packet is
 * acknowledged or the connection is flushed, R-MSG-17). */
int mroce_dereg_mr(struct mroce_mr *mr);

/* ---- Completion queues ---- */

enum mroce_wc_status {
    MROCE_WC_SUCCESS = 0,
    MROCE_WC_LOC_LEN_ERR,       /* message longer than the receive */
    MROCE_WC_LOC_PROT_ERR,      /* local key or bounds */
    MROCE_WC_REM_ACCESS_ERR,    /* peer refused key/bounds/permission */
    MROCE_WC_REM_INV_REQ_ERR,   /* peer found the request invalid */
    MROCE_WC_REM_OP_ERR,        /* peer could not execute */
    MROCE_WC_RETRY_EXC_ERR,     /* retry limit: peer or paths gone */
    MROCE_WC_RNR_RETRY_EXC_ERR, /* peer never posted a receive */
    MROCE_WC_WR_FLUSH_ERR,      /* flushed: connection in error/closed */
};
const char *mroce_wc_status_str(int status);

enum mroce_wc_opcode {
    MROCE_WC_SEND,
    MROCE_WC_RDMA_WRITE,
    MROCE_WC_RDMA_READ,
    MROCE_WC_RECV,               /* a SEND or SEND_IMM arrived */
    MROCE_WC_RECV_RDMA_WITH_IMM, /* a WRITE_IMM arrived */
};

struct mroce_wc {
    uint64_t wr_id;
    struct mroce_conn *conn;
    uint16_t stream;
    uint8_t status; /* mroce_wc_status */
    uint8_t opcode; /* mroce_wc_opcode */
    uint8_t has_imm;
    uint32_t byte_len; /* receives: bytes placed */
    uint32_t imm;
};

/* A CQ holds `depth` completions; connections reserve room for every work
 * request they can have outstanding, so a CQ never overflows.
 * Errors: EINVAL (depth 0), ENOMEM. */
int mroce_cq_create(struct mroce_ctx *ctx, uint32_t depth,
                    struct mroce_cq **out);
/* Errors: EBUSY while a connection uses it. */
int mroce_cq_destroy(struct mroce_cq *cq);
/* Moves up to n completions into wc[]; returns how many (>= 0). */
int mroce_poll_cq(struct mroce_cq *cq, int n, struct mroce_wc *wc);

/* ---- Connections (the queue pair of MetaRoCE) ---- */

/* Zero fields take the default in brackets. */
struct mroce_conn_attr {
    struct mroce_cq *send_cq;    /* required */
    struct mroce_cq *recv_cq;    /* required (may equal send_cq) */
    uint16_t n_streams;          /* ordered message streams [1] */
    uint16_t n_paths;            /* 1..256 [16] */
    uint32_t sq_depth;           /* send WRs per stream [64] */
    uint32_t rq_depth;           /* receive WRs per stream [64] */
    uint32_t dsn_window;         /* packets in flight, power of 2 [4096] */
    uint32_t path_window;        /* PSNs in flight per path, pow2<=256 [256]*/
    uint32_t max_rd;             /* outstanding READs [16] */
    uint8_t retry_cnt;           /* timeout rounds before ERROR [7] */
    uint8_t rnr_retry;           /* RNR retries, 7 = unlimited [7] */
    uint64_t min_rto_ns;         /* >= 1000 [100000] */
    uint64_t max_rto_ns;         /* <= MROCE_MAX_RTO_NS [100000000] */
    uint32_t ack_every;          /* in-order packets per ACK of the
                                    connection; 1: ACK every packet [16] */
    uint64_t ack_delay_ns;       /* delayed-ACK bound (R-ACK-1) [2000] */
    uint32_t init_cwnd_pkts;     /* per connection, split over the paths
                                    (at least 1 each) [128] */
    uint32_t max_conn_cwnd_pkts; /* connection window cap [dsn_window] */
    uint8_t tail_copies;         /* copies of a retransmission sent when
                                    nothing new waits: 1 or 2 [2]
                                    (R-LOSS-7) */
    uint16_t qps_per_stream;     /* RoCEv2: QPs per stream, k [1] */
    uint8_t rocev2_timeout;      /* RoCEv2: ACK timeout 4.096us*2^t [14] */
    uint32_t rocev2_window;      /* RoCEv2: PSNs in flight per QP [1024] */
    /* MetaRoCE: the connection's id, which the peer puts in every packet
     * for it; 0: a fresh random id [0] (R-CONN-1). A caller that picks it
     * (the drop-in libibverbs: the QP number, R-SOFT-2) must pick it
     * unpredictably; EBUSY if the context already has it. */
    uint32_t conn_id;
    /* MetaRoCE: 1 to neither announce nor use ACKM, ACKs that carry
     * several paths' acknowledgements (R-ACKM-1) [0: announced] */
    uint8_t ackm_off;
};

#define MROCE_MAX_QPS 256 /* RoCEv2 QPs per connection */
/* R-CONN-3: largest announced max_rto_ns and RNR delay */
#define MROCE_MAX_RTO_NS 120000000000ull
#define MROCE_MAX_RNR_US 1000000u

/* What the two sides exchange out of band before connecting (R-CONN-3;
 * on the wire: the CM's HELLO, R-CONN-15). mroce_conn_get_params fills every
 * field. A caller that builds the peer's values by hand may leave the
 * plane and timing fields 0 ("not announced"); mroce_conn_connect checks
 * every announced value (R-CONN-4). */
struct mroce_conn_params {
    uint32_t conn_id;
    /* MetaRoCE: where the announcing side's sequence numbers start
     * (R-CONN-5): every path's first PSN is init_psn, the first DSN
     * init_dsn, every stream's first MSN init_msn. Random per connection
     * (R-SEC-7); any 32-bit value is valid. */
    uint32_t init_psn, init_dsn, init_msn;
    struct mroce_addr addr; /* plane 0's; every plane's when n_planes = 0 */
    /* R-ENC-10: the address of each plane, in plane order. 0: addr on
     * every plane. Otherwise it must equal the local context's n_planes,
     * packets must come from the plane's address (R-RX-2) and addr is
     * ignored (mroce_conn_get_params sets it to plane_addr[0]). */
    uint8_t n_planes;
    struct mroce_addr plane_addr[MROCE_MAX_PLANES];
    uint16_t udp_port;
    uint16_t n_paths;
    uint16_t n_streams;
    uint32_t mtu;
    uint32_t dsn_window;
    uint32_t msg_window; /* messages in flight per stream it accepts */
    uint32_t max_rd;
    uint8_t transport; /* MROCE_TRANSPORT_*; both sides must agree */
    /* The announcing side's own settings, which its peer's behaviour
     * depends on (R-CONN-3); 0: not announced. */
    uint16_t path_window;  /* PSNs it keeps in flight per path */
    uint16_t ack_every;    /* it ACKs every n in-order packets (R-ACK-1) */
    uint32_t ack_delay_ns; /* its delayed-ACK bound (below the peer's
                              min_rto_ns) */
    uint64_t min_rto_ns, max_rto_ns;
    uint8_t retry_cnt;   /* its timeout rounds before ERROR (< 16) */
    uint8_t rnr_retry;   /* its RNR retries, 7 = unlimited */
    uint32_t rnr_max_us; /* the longest RNR delay it asks for */
    uint32_t features;   /* MROCE_FEAT_* it supports (R-VER-5) */
    uint16_t n_qps;      /* RoCEv2: QP numbers and first PSNs */
    uint32_t qpn[MROCE_MAX_QPS];
    uint32_t psn[MROCE_MAX_QPS];
};

enum mroce_conn_state {
    MROCE_CONN_INIT,      /* created, not connected */
    MROCE_CONN_CONNECTED, /* sending and receiving */
    MROCE_CONN_CLOSING,   /* disconnect called, waiting for CLOSE_ACK */
    MROCE_CONN_CLOSED,
    MROCE_CONN_ERROR, /* retry limit or fatal NACK; WRs flushed */
};
const char *mroce_conn_state_str(int state);

/* Errors: EINVAL (bad attr, pd/cq of another context), EBUSY (attr
 * conn_id in use), ENOMEM. */
int mroce_conn_create(struct mroce_pd *pd, const struct mroce_conn_attr *attr,
                      struct mroce_conn **out);
void mroce_conn_get_params(const struct mroce_conn *conn,
                           struct mroce_conn_params *out);
/* Makes the connection's own sequence numbers start at the given values
 * (R-CONN-5) instead of its random draws (R-SEC-7), announced by
 * mroce_conn_get_params. For a caller whose peer cannot learn the draws:
 * the drop-in libibverbs derives them from both QP numbers (R-SOFT-3); and
 * for tests that need a given start (a message number just before it
 * wraps). Values a third party can guess weaken R-SEC-7.
 * Errors: ESTATE unless the connection is in INIT. Not thread-safe. */
int mroce_conn_set_init_seq(struct mroce_conn *c, uint32_t psn, uint32_t dsn,
                            uint32_t msn);
/* Errors: ESTATE (not INIT), EINVAL (params out of range, a plane count
 * other than the context's, an ack_delay_ns not below this connection's
 * min_rto_ns), ENOMEM (paths and send rings are allocated here, for the
 * negotiated values). */
int mroce_conn_connect(struct mroce_conn *conn,
                       const struct mroce_conn_params *remote);
/* Per-connection protection (docs/spec.md section 3.14, R-AEAD-*). */
#define MROCE_SEC_NONE 0 /* ICRC only (R-CRC-1): no protection */
#define MROCE_SEC_AUTH 1 /* AES-128-GCM tag over headers and payload */
#define MROCE_SEC_ENCRYPT                                                      \
    2 /* AES-128-GCM: payload encrypted, headers                               \
         authenticated in clear */

/* Sets the connection's mode and its 32-byte connection secret (both
 * sides must give the same mode and secret, normally from the connection
 * manager). Call it before mroce_conn_connect, which derives the keys of
 * both directions from the secret and the two connection ids (R-AEAD-6)
 * and then forgets the secret. The secret is copied. MROCE_SEC_NONE
 * ignores secret and len. In the secure modes every packet of the
 * connection is sealed, and packets that are not (or do not verify, or
 * are replays) are dropped and counted (mroce_conn_counters).
 * Errors: EINVAL (unknown mode, secret NULL or len not MROCE_SECRET_LEN,
 * a RoCEv2 connection), ESTATE (not in INIT), ENOTSUP (a secure mode on a
 * context without a crypto provider, mroce_ctx_attr.crypto).
 * Not thread-safe (the context's thread). */
int mroce_conn_set_secret(struct mroce_conn *c, int mode, const uint8_t *secret,
                          size_t len);
/* The mode set by mroce_conn_set_secret (MROCE_SEC_NONE by default). */
int mroce_conn_sec_mode(const struct mroce_conn *c);
/* Bit of a mode in the mask of mroce_ctx_sec_modes. */
#define MROCE_SEC_BIT(mode) (1 << (mode))
/* The protection modes the context's connections can apply, as a mask of
 * MROCE_SEC_BIT(MROCE_SEC_*): MROCE_SEC_NONE always; MROCE_SEC_AUTH and
 * MROCE_SEC_ENCRYPT with a crypto provider (mroce_ctx_attr.crypto) on a
 * MetaRoCE context. What a connection manager may offer its peer
 * (R-CM-9) without trying mroce_conn_set_secret. No errors. Thread-safe
 * (reads what mroce_ctx_open fixed). */
int mroce_ctx_sec_modes(const struct mroce_ctx *ctx);

/* Abortive close: flushes every outstanding work request and posted
 * receive with WR_FLUSH_ERR, then sends CLOSE, with a doubling wait, until
 * CLOSE_ACK or 1 + retry_cnt copies (R-CONN-8).
 * Errors: ESTATE if not connected. */
int mroce_conn_disconnect(struct mroce_conn *conn);
/* Frees the connection; outstanding WRs are dropped without completion. */
void mroce_conn_destroy(struct mroce_conn *conn);
int mroce_conn_state(const struct mroce_conn *conn);
/* The context the connection was created in (through its PD). No errors.
 * Thread-safe. */
struct mroce_ctx *mroce_conn_ctx(const struct mroce_conn *conn);

/* ---- Work requests ---- */

struct mroce_sge {
    uint64_t addr;
    uint32_t length;
    uint32_t lkey;
};

struct mroce_send_wr {
    uint64_t wr_id;
    uint16_t stream;
    struct mroce_sge sge; /* local buffer (READ: destination) */
    uint64_t remote_addr; /* WRITE, WRITE_IMM, READ */
    uint32_t rkey;        /* WRITE, WRITE_IMM, READ */
    uint32_t imm;         /* WRITE_IMM, SEND with post_send_imm */
};

struct mroce_recv_wr {
    uint64_t wr_id;
    uint16_t stream;
    struct mroce_sge sge;
};

/* Post calls copy the WR; the buffers stay the caller's and must stay
 * valid until the completion. Completions of a stream come in post order.
 * Errors: ENOENT (stream), EACCES/ERANGE (lkey or bounds), EINVAL
 * (length above 2^31), EAGAIN (queue full), ESTATE (not connected). */
int mroce_post_write(struct mroce_conn *conn, const struct mroce_send_wr *wr);
int mroce_post_write_imm(struct mroce_conn *conn,
                         const struct mroce_send_wr *wr);
int mroce_post_send(struct mroce_conn *conn, const struct mroce_send_wr *wr);
int mroce_post_send_imm(struct mroce_conn *conn,
                        const struct mroce_send_wr *wr);
int mroce_post_read(struct mroce_conn *conn, const struct mroce_send_wr *wr);
/* Receives may be posted before connect. */
int mroce_post_recv(struct mroce_conn *conn, const struct mroce_recv_wr *wr);

/* ---- Counters and path extensions ---- */

struct mroce_conn_counters {
    uint64_t tx_pkts, tx_bytes, rx_pkts, rx_bytes;
    uint64_t tx_data_pkts, rx_data_pkts;
    uint64_t retx_pkts; /* data packets sent again */
    uint64_t tlp_pkts;  /* tail-loss probes */
    uint64_t rto_events;
    uint64_t tx_acks, rx_acks, tx_nacks, rx_nacks;
    uint64_t tx_ackm_recs, rx_ackm_recs; /* ACKM path records (R-ACKM-4) */
    uint64_t rx_dup_pkts;                /* DSN already received */
    uint64_t rx_ecn_ce;                  /* CE-marked packets received */
    uint64_t rnr_naks;
    uint64_t drop_bad_path, drop_dsn_window, drop_msn_window;
    uint64_t drop_bad_key, drop_bad_bounds, drop_bad_access;
    uint64_t drop_bad_msg;    /* inconsistent message fields */
    uint64_t drop_state;      /* data, ACK or NACK its state does not take:
                                 outside CONNECTED (R-CONN-7) */
    uint64_t drop_stale;      /* NACK matching nothing, or reserved code */
    uint64_t drop_bad_ack;    /* ACK naming no PSN or DSN of ours (R-VAL-1) */
    uint64_t drop_psn_window; /* PROBE or duplicate not recorded: its PSN is
                                 not where its path is (R-VAL-2) */
    uint64_t drop_bad_close;  /* CLOSE/CLOSE_ACK with a DSN outside the
                                 window (R-VAL-5) */
    uint64_t psn_resyncs;     /* a path's PSNs moved past one the peer holds
                                 but we never sent (R-VAL-4) */
    uint64_t rnr_capped;      /* RNR NACKs asking more than the peer's
                                 announced rnr_max or our max_rto: waited
                                 the smaller (R-RETRY-4) */
    uint64_t drop_ooo;        /* RoCEv2: out-of-order packet (go-back-N) */
    uint64_t repaths;
    uint64_t msgs_tx, msgs_rx;
    /* MetaRoCE: data transmissions declared lost, each once, by the rule
     * that declared it (a transmission a tail-loss probe already sent
     * again is not counted again when its path's SACK or RTO resolves
     * it); the sum is not retx_pkts (R-LOSS-5 copies, R-LOSS-7) */
    uint64_t lost_sack; /* R-LOSS-1: a hole below an ACK's sack_high */
    uint64_t lost_rack; /* R-LOSS-8: late by a later packet's ACK */
    uint64_t lost_pto;  /* R-RTT-7: tail-loss probe at the PTO */
    uint64_t lost_rto;  /* R-RTT-6: RTO expiry */
    uint64_t lost_rnr;  /* R-RETRY-4: refused by an RNR NACK */
    /* Secure modes (R-AEAD-9): packets dropped because their tag did not
     * verify under any key the receiver holds (tampered, forged, wrong
     * key), because they authenticated but were seen before (replay:
     * the same path and PSN, or the same control sequence number), or
     * because their protection does not match the connection's mode
     * (unsealed on a secure connection, sealed on a plain one); key
     * updates of each direction (R-AEAD-7). */
    uint64_t drop_bad_tag, drop_replay, drop_sec_mode;
    uint64_t key_updates_tx, key_updates_rx;
};
void mroce_conn_get_counters(const struct mroce_conn *conn,
                             struct mroce_conn_counters *out);

enum mroce_path_state {
    MROCE_PATH_ACTIVE,
    MROCE_PATH_SUSPECT,
    MROCE_PATH_FAILED,
    MROCE_PATH_PROBING,
    MROCE_PATH_DISABLED, /* switched off by mroce_path_enable(.., 0) */
};
const char *mroce_path_state_str(int state);

struct mroce_path_info {
    uint8_t state;
    uint16_t src_port;
    uint64_t srtt_ns, min_rtt_ns, rto_ns;
    uint32_t cwnd_bytes, inflight_bytes;
    uint64_t tx_pkts, tx_bytes, retx_pkts, acked_pkts, lost_pkts;
    uint64_t ecn_marks, timeouts, repaths, probes;
};
/* Errors: ENOENT (path >= n_paths). */
int mroce_path_query(const struct mroce_conn *conn, uint16_t path,
                     struct mroce_path_info *out);
/* Moves a path to a fresh random UDP source port (R-PATH-5, R-PATH-12). */
int mroce_path_repath(struct mroce_conn *conn, uint16_t path);
/* Takes a path out of (0) or back into (1) use (R-PATH-12). Errors:
 * ENOENT, EINVAL (disabling the last enabled path). */
int mroce_path_enable(struct mroce_conn *conn, uint16_t path, int on);

#ifdef __cplusplus
}
#endif
#endif
