/* The compliance suite (docs/conformance.md): the suite is the peer. It
 * owns a UDP socket, plays the remote endpoint of a connection byte by
 * byte, and drives the implementation under test (IUT) through an agent
 * (the target adapter, control protocol of docs/conformance.md).
 *
 * Modules: agent.c (the agent client: spawn, connect, requests), sock.c
 * (UDP socket with ECN and address control), peer.c (the suite's endpoint:
 * its sequence numbers, receiver state and automatic answers), build.c
 * (packets the suite sends, valid or hostile), mon.c (the wire monitor:
 * checks on every packet the IUT sends), iut.c (set-up of one test's
 * context and connection, work requests, completions, counters), rules.c
 * (the rules of docs/spec.md and which are testable), registry.c (the
 * test table), runner.c (runs, grades, mutation runs), report.c (console,
 * JUnit, JSON, markdown), t_*.c (the test cases, by spec section). */
#ifndef MROCE_CONFORM_CF_H
#define MROCE_CONFORM_CF_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "wire/wire.h"

#define CF_PKT_MAX 9216
#define CF_DERR_TAG (-100) /* a sealed packet whose tag does not verify */
#define CF_MAX_PATHS 256
#define CF_MAX_STREAMS 16
#define CF_MEM_LEN (4u << 20) /* the suite's own registered memory */
#define CF_RECV_SLOTS 256     /* receives the suite posts per stream */
#define CF_IN_MSGS 1024       /* inbound messages tracked per stream */

uint64_t cf_now(void); /* CLOCK_MONOTONIC, ns */
void cf_sleep_us(uint64_t us);

/* ---- keywords and verdicts ---- */

enum cf_kw { CF_KW_NONE, CF_KW_MAY, CF_KW_SHOULD, CF_KW_MUST };
enum cf_verdict { CF_PASS, CF_FAIL, CF_SKIP };
const char *cf_kw_name(int kw);

/* ---- rules of docs/spec.md (rules.c) ---- */

struct cf_rule {
    char id[24];
    char section[16];
    int kw;                 /* strongest RFC 2119 keyword in the paragraph */
    char *text;             /* the paragraph, markdown */
    const char *untestable; /* why no black-box test can check it, or NULL */
};

struct cf_rules {
    struct cf_rule *r;
    int n;
    char path[512];
};

int cf_rules_load(struct cf_rules *rs, const char *path);
const struct cf_rule *cf_rule_find(const struct cf_rules *rs, const char *id);
void cf_rules_free(struct cf_rules *rs);

/* ---- the agent client (agent.c) ---- */

struct cf_agent {
    int fd;
    char *rbuf;
    size_t rlen, rcap;
    int next_id;
    pid_t pid; /* spawned by us, or 0 */
    char target[256];
    char bin[512];
    char fault[64]; /* passed to a spawned agent */
    json_t *hello;
    char err[256]; /* last transport error */
};

/* target "HOST:PORT" or "unix:PATH". */
int cf_agent_connect(struct cf_agent *a, const char *target);
/* Starts bin (mroce-agent) on 127.0.0.1 and connects to it. */
int cf_agent_spawn(struct cf_agent *a, const char *bin, const char *ip);
/* Kills a spawned agent and starts it again (after a crash). */
int cf_agent_respawn(struct cf_agent *a);
void cf_agent_close(struct cf_agent *a);
/* One request; the reply (new reference) or NULL if the agent is gone. */
json_t *cf_agent_call(struct cf_agent *a, json_t *req);
bool cf_agent_has(const struct cf_agent *a, const char *cap);

/* ---- the wire: one received datagram ---- */

struct cf_pkt {
    uint64_t t;     /* suite clock at receipt */
    int sock;       /* 0: the announced socket, 1: the second one */
    uint16_t sport; /* UDP source port */
    uint8_t src[16];
    int family; /* 4 or 6 */
    uint8_t ecn;
    int derr; /* mroce_wire_decode result */
    struct mroce_hdr h;
    size_t len;
    uint8_t *buf;    /* exact copy; h.payload points into it */
    bool lost;       /* the test's drop rule made the suite ignore it */
    bool sealed;     /* opened from a sealed packet (buf is the plain one) */
    uint8_t flags0;  /* byte 0 as sent (SEAL, key phase) */
    uint8_t prot;    /* the protection byte as sent (data, sealed) */
    size_t wire_len; /* its length on the wire */
    bool first;      /* data: the first transmission of its DSN */
    int mon_viol;    /* violations the monitor found in it */
};

/* ---- the suite's UDP socket (sock.c) ---- */

struct cf_sock {
    int fd;
    int family;
    uint8_t ip[16];
    uint16_t port;
    uint64_t kernel_drops; /* SO_RXQ_OVFL */
};

int cf_sock_open(struct cf_sock *s, const char *ip, uint16_t port);
void cf_sock_close(struct cf_sock *s);
/* Sends len bytes to ip:port with the ECN bits ecn (and the DSCP 0). */
int cf_sock_send(struct cf_sock *s, const uint8_t *ip, uint16_t port,
                 const void *buf, size_t len, uint8_t ecn);
/* Receives one datagram within timeout_ms (0: poll); -1 on timeout,
 * else its length with *pk's addressing filled. */
int cf_sock_recv(struct cf_sock *s, uint8_t *buf, size_t cap, struct cf_pkt *pk,
                 int timeout_ms);
bool cf_parse_ip(const char *s, int *family, uint8_t ip[16]);

/* ---- parameters (R-CONN-3) ---- */

struct cf_params {
    uint32_t version, conn_id;
    uint32_t init_psn, init_dsn, init_msn; /* R-CONN-5 */
    char addr[64];
    uint16_t udp_port, n_paths, n_streams;
    uint32_t mtu, dsn_window, msg_window, max_rd;
    /* the announcing side's timing (R-CONN-3; 0: not announced) */
    uint32_t path_window, ack_every, ack_delay_ns;
    uint64_t min_rto_ns, max_rto_ns;
    uint32_t retry_cnt, rnr_retry, rnr_max_us;
    uint32_t features; /* R-VER-5: CF_FEAT_* it supports */
};

#define CF_FEAT_ACKM 0x4u /* feature bit 2 (R-ACKM-1) */

/* What the agent says about the IUT's own timing (docs/conformance.md). */
struct cf_timers {
    uint64_t ack_delay_ns, min_rto_ns, max_rto_ns, initial_rto_ns;
    uint32_t ack_every, retry_cnt, rnr_retry, rnr_delay_us, path_window;
    uint32_t max_tx_per_dsn;
};

/* ---- the suite's endpoint (peer.c) ---- */

struct cf_rxpath { /* R-SACK-4, receiving the IUT's packets */
    bool any;
    uint32_t init_psn; /* the sender's: high starts at init_psn - 1 */
    uint32_t high, echo;
    uint64_t bits[4];
    uint16_t rx_count, ce_count;
};

struct cf_recv { /* a receive the suite posted for the IUT's SENDs */
    bool posted, done;
    uint32_t len, byte_len, imm, npkts, got;
    bool has_imm;
    uint32_t off; /* in the suite's memory */
};

struct cf_inmsg { /* an inbound message of the IUT, by stream and MSN */
    bool used, done;
    uint8_t op;
    uint32_t msn, len, npkts, got, ssn, imm;
    uint64_t va;
    uint32_t rkey;
};

struct cf_rd { /* a READ the suite sent to the IUT */
    bool used;
    uint16_t stream;
    uint32_t msn, len, got, npkts, off;
};

/* what the IUT's monitor state holds per path and stream (mon.c) */
struct cf_monpath {
    bool any;
    uint32_t next_psn; /* expected PSN of the next data/PROBE */
    uint16_t port;     /* its current source port */
    int taken_by;      /* 1 + a path seen on that port since, else 0 */
    uint32_t last_ts;
};

struct cf_monmsg {
    bool used;
    uint8_t op;
    uint32_t msn, len, ssn, imm;
    uint64_t va;
    uint32_t rkey;
};

struct cf_mondsn {
    bool seen;
    uint32_t dsn;
    uint32_t crc, len; /* of the bytes after the MTH, first transmission */
};

#define CF_MON_DSNS 8192
#define CF_MON_MSGS 256

struct cf_mon {
    uint8_t *new_dsn;  /* [CF_MON_DSNS]: first sightings since init_dsn */
    uint8_t *csn_seen; /* [CF_MON_DSNS]: CSNs of the IUT (secure modes) */
    uint32_t max_new;  /* 1 + the highest of them, from init_dsn */
    struct cf_monpath path[CF_MAX_PATHS];
    struct cf_monmsg msg[CF_MAX_STREAMS][CF_MON_MSGS];
    uint32_t next_msn[CF_MAX_STREAMS], next_ssn[CF_MAX_STREAMS];
    struct cf_mondsn *dsn; /* [CF_MON_DSNS], by DSN mod */
    bool unreliable; /* the kernel dropped packets: skip sequence checks */
};

/* The secure modes (aead.c, R-AEAD-*): the suite's keys, epoch 0. */
struct cf_aead {
    int mode; /* 0 none, 1 authenticated, 2 encrypted */
    uint8_t key_tx[16], iv_tx[12], key_rx[16], iv_rx[12];
    uint32_t csn_tx;
    bool csn_any;
    uint32_t csn_rx_next; /* the IUT's next CSN (monitor) */
};

bool cf_aead_init(struct cf_aead *a, int mode, const uint8_t secret[32],
                  uint32_t my_id, uint32_t iut_id);
/* Seals pkt[0, body) in place (SEAL, CSN, protection byte -- prot, or
 * the mode's when -1 -- then the tag at pkt + body); returns the new
 * length, 0 on failure. */
size_t cf_aead_seal(struct cf_aead *a, uint8_t *pkt, size_t body, int prot);
/* Opens a sealed packet into out as a packet of mode none (ICRC); its
 * length, -1 if it is not sealed, -2 if the tag does not verify. */
int cf_aead_open(const struct cf_aead *a, const uint8_t *in, size_t len,
                 uint8_t *out);

struct cf_t;
/* Decides whether the suite treats an IUT packet as lost. */
typedef bool (*cf_drop_fn)(struct cf_t *t, const struct cf_pkt *pk, void *ud);

#define CF_PROBE_RING 64

struct cf_peer {
    struct cf_sock s, s2; /* announced socket; a second one (spoofing) */
    bool have_s2;
    uint8_t iut_ip[16];
    int iut_family;
    uint16_t iut_port;
    uint32_t my_id, iut_id;
    uint32_t extra_ids[4]; /* other connections of the IUT the test opened
                              toward this socket (the monitor lets them by) */
    uint32_t iut_init_psn, iut_init_dsn, iut_init_msn; /* R-CONN-5 */
    /* effective values (R-CONN-3) */
    uint16_t n_paths, n_streams;
    uint32_t mtu, dsn_window;
    uint32_t iut_msg_window, my_msg_window;
    bool ackm; /* both announced the feature ACKM (R-ACKM-1) */
    /* the suite's sending state */
    uint32_t psn[CF_MAX_PATHS];
    uint32_t dsn;
    uint32_t msn[CF_MAX_STREAMS], ssn[CF_MAX_STREAMS];
    uint16_t rr_path;
    /* what the IUT acknowledged of ours */
    bool got_ack;
    uint32_t iut_cum;
    /* receiving the IUT's data */
    struct cf_rxpath rx[CF_MAX_PATHS];
    uint32_t dsn_cum;
    uint8_t *acc; /* accepted map, dsn_window bytes, by DSN mod W */
    uint8_t *mem;
    uint64_t mem_va;
    uint32_t mem_rkey;
    struct cf_recv recv[CF_MAX_STREAMS][CF_RECV_SLOTS];
    struct cf_inmsg in[CF_MAX_STREAMS][CF_IN_MSGS];
    uint32_t in_base[CF_MAX_STREAMS];
    struct cf_rd rd[64];
    uint32_t rd_off; /* next free byte of the READ area of mem */
    /* automatic behaviour */
    bool auto_ack, auto_place, auto_close_ack, auto_read;
    uint32_t rnr_info;   /* info of the RNR NACKs the suite sends [100] */
    uint32_t rate_mbps;  /* hint in the suite's ACKs [0] */
    struct cf_aead aead; /* mode 0: none */
    cf_drop_fn drop;
    void *drop_ud;
    /* every packet received in this test */
    struct cf_pkt **log;
    int n_log, cap_log;
    struct cf_mon mon;
    uint64_t sent_pkts;
    /* the highest PSN the suite sent per path (data and PROBEs) */
    bool tx_any[CF_MAX_PATHS];
    uint32_t tx_high[CF_MAX_PATHS];
    /* the PSNs of the suite's latest PROBEs per path (R-VAL-4) */
    uint32_t probe_psn[CF_MAX_PATHS][CF_PROBE_RING];
    uint32_t probe_n[CF_MAX_PATHS];
    /* the highest sack_high of the suite's ACKs per path */
    bool ack_any[CF_MAX_PATHS];
    uint32_t ack_high[CF_MAX_PATHS];
};

/* ---- one test (iut.c, peer.c, build.c) ---- */

struct cf_open {
    /* IUT context */
    uint32_t mtu; /* [1024] */
    uint32_t link_mbps;
    uint32_t src_ports; /* UDP datapath source ports [16] */
    /* IUT connection attributes (0: the agent's defaults; see iut.c for
     * the suite's defaults) */
    uint16_t n_paths, n_streams; /* [4], [2] */
    uint32_t sq_depth, rq_depth, dsn_window, path_window, max_rd;
    uint32_t ack_every, init_cwnd_pkts, max_conn_cwnd_pkts;
    uint64_t ack_delay_ns, min_rto_ns, max_rto_ns;
    int retry_cnt, rnr_retry; /* -1 (or 0): default */
    uint8_t tail_copies;
    /* what the suite announces (0: as the IUT) */
    uint16_t my_paths, my_streams;
    uint32_t my_mtu, my_dsn_window, my_msg_window, my_max_rd;
    bool no_connect; /* leave the IUT's connection in INIT */
    int sec;         /* secure mode: 1 authenticated, 2 encrypted */
    /* the suite's own initial sequence numbers (R-CONN-5) [0, 0, 0] */
    uint32_t my_init_psn, my_init_dsn, my_init_msn;
    /* the IUT's, through the agent's test hook conn.init_seq (else its
     * own random draws) */
    bool iut_init;
    uint32_t iut_init_psn, iut_init_dsn, iut_init_msn;
    bool no_mr;            /* no default region at the IUT */
    bool slow_tlp;         /* announce ack_delay just below the IUT's min_rto */
    uint32_t my_ack_every; /* the suite's announced ack_every [1] */
    bool my_ackm;          /* the suite announces the feature ACKM */
    bool iut_ackm_off;     /* the IUT announces no ACKM (attr ackm_off) */
};

struct cf_wc {
    uint64_t wr_id;
    char cq[8], status[24], opcode[16];
    uint16_t stream;
    uint32_t byte_len, imm;
    bool has_imm;
    uint64_t t; /* when the suite saw it */
};

#define CF_MAX_WC 4096

struct cf_iut {
    int ctx, conn;
    char addr[64];
    uint16_t port;
    struct cf_params params;
    struct cf_timers timers;
    uint8_t secret[32]; /* the connection secret (secure modes) */
    int mr; /* the default region: all rights, CF_IUT_MR_LEN bytes */
    uint64_t va;
    uint32_t rkey, lkey;
};

#define CF_IUT_MR_LEN (1u << 20)

struct cf_test;

struct cf_t {
    const struct cf_test *test;
    struct cf_agent *agent;
    const char *ip; /* the suite's address */
    struct cf_iut iut;
    struct cf_peer *p;
    bool opened;
    bool trace; /* print every packet (-vv) */
    struct cf_wc wc[CF_MAX_WC];
    int n_wc;
    int extra_ctx[8], n_extra_ctx;
    char msg[2048];
    int failed, mon_notes;
    bool skipped;
    jmp_buf *abort_jmp;
    double scale; /* timing tolerance multiplier (--slow) */
};

/* The standard set-up: an IUT context and connection connected to the
 * suite's endpoint. o may be NULL. Aborts the test (fail) on error. */
void cf_open(struct cf_t *t, const struct cf_open *o);
/* Connects an IUT opened with no_connect (announcing the suite's values
 * as given, so a test can announce bad ones); the agent's error code or
 * NULL. */
const char *cf_connect(struct cf_t *t, const struct cf_params *mine);
/* After a set-up exchange done otherwise (the CM): the suite's endpoint
 * takes the effective values of `mine` and the IUT's parameters. */
void cf_apply_params(struct cf_t *t, const struct cf_params *mine);
/* The parameter block the suite announces by default; as JSON. */
void cf_my_params(struct cf_t *t, struct cf_params *out);
/* The ack_delay the suite announces (R-CONN-3). */
uint32_t cf_my_ack_delay(const struct cf_t *t);
json_t *cf_params_json(const struct cf_params *p);
void cf_close(struct cf_t *t);

/* ---- verdicts inside a test ---- */

/* Records a failure (printf-style) and returns false. */
bool cf_fail(struct cf_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Ends the test as skipped / failed at once (longjmp to the runner). */
_Noreturn void cf_skip(struct cf_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
_Noreturn void cf_abort(struct cf_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void cf_note(struct cf_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define CF_CHECK(t, cond, ...) ((cond) ? true : cf_fail((t), __VA_ARGS__))
#define CF_REQUIRE(t, cond, ...)                                               \
    do {                                                                       \
        if (!(cond))                                                           \
            cf_abort((t), __VA_ARGS__);                                        \
    } while (0)

/* Skips the test unless the agent has the capability. */
void cf_need(struct cf_t *t, const char *cap);

/* ---- the agent's side of a test (iut.c) ---- */

struct cf_wr {
    const char *op; /* write write_imm send send_imm read recv */
    uint64_t wr_id;
    uint16_t stream;
    uint32_t off, len; /* in the IUT's default region */
    uint64_t raddr;    /* 0: the suite's memory at roff */
    uint32_t roff;
    uint32_t rkey; /* 0: the suite's key */
    uint32_t imm;
    bool no_mr; /* len 0 without a region */
};

/* Posts; 0 or the agent's error code as a negative number (-1 for any
 * error, with the code in *code if given). */
int cf_post(struct cf_t *t, const struct cf_wr *wr);
const char *cf_post_err(struct cf_t *t, const struct cf_wr *wr);
/* Polls the agent once (non-blocking) into t->wc. */
int cf_poll(struct cf_t *t);
/* Pumps the wire and polls until wr_id completes on cq ("send"/"recv"),
 * at most ms; the completion or NULL. */
const struct cf_wc *cf_wait_wc(struct cf_t *t, const char *cq, uint64_t wr_id,
                               int ms);
const struct cf_wc *cf_find_wc(struct cf_t *t, const char *cq, uint64_t wr_id);
/* Counter of the IUT (scope "ctx" or "conn"), or -1 if not reported. */
int64_t cf_counter(struct cf_t *t, const char *scope, const char *name);
/* The IUT's connection state ("CONNECTED", ...), or NULL. */
const char *cf_state(struct cf_t *t, char *buf, size_t cap);
/* The IUT's memory: the default region. */
void cf_iut_write(struct cf_t *t, uint32_t off, const void *p, uint32_t n);
void cf_iut_read(struct cf_t *t, uint32_t off, void *p, uint32_t n);
/* A path's info from the agent (path.info); NULL if unsupported. */
json_t *cf_path_info(struct cf_t *t, uint16_t path);
/* Any other request on this test's connection; reply or aborts. */
json_t *cf_call(struct cf_t *t, json_t *req);
bool cf_reply_ok(json_t *rep, char *code, size_t cap);

/* ---- the suite's endpoint (peer.c) ---- */

struct cf_peer *cf_peer_new(struct cf_t *t);
void cf_peer_free(struct cf_peer *p);
/* Next packet from the IUT within ms (answered by the automatic rules,
 * checked by the monitor); NULL on timeout. A negative ms counts as 0. */
const struct cf_pkt *cf_next(struct cf_t *t, int ms);
typedef bool (*cf_match_fn)(const struct cf_pkt *pk, const void *arg);
/* The first packet within ms that matches; others are handled as usual. */
const struct cf_pkt *cf_wait(struct cf_t *t, cf_match_fn m, const void *arg,
                             int ms);
/* Handles everything that arrives within ms; returns the count. */
int cf_pump(struct cf_t *t, int ms);
/* Sends a PROBE on path and waits for the ACK that records it: every
 * answer to what the suite sent before has arrived by then (a barrier).
 * False if no such ACK came within ms. */
bool cf_barrier(struct cf_t *t, uint16_t path, int ms);
/* Packets of the log, from index `from`, with this opcode. */
int cf_count(const struct cf_t *t, int from, uint8_t opcode);
const struct cf_pkt *cf_find(const struct cf_t *t, int from, uint8_t opcode,
                             int nth);
/* Matchers for cf_wait (arg: a const uint8_t* opcode, or NULL). */
bool cf_is_op(const struct cf_pkt *pk, const void *opcode);
bool cf_is_data(const struct cf_pkt *pk, const void *unused);
bool cf_is_ack_for(const struct cf_pkt *pk, const void *path16);

/* The receiver's path state of R-SACK-5 and R-SACK-7, as written: the
 * suite's model of a conforming receiver. Returns the classification. */
enum {
    CF_RX_IN_ORDER,
    CF_RX_GAP,
    CF_RX_LATE,
    CF_RX_DUP_PSN,
    CF_RX_TOO_OLD,
    CF_RX_NOT_RECORDED /* outside R-VAL-2's windows */
};
/* what is recorded: an accepted data packet, a duplicate, a PROBE */
enum { CF_REC_DATA, CF_REC_DUP, CF_REC_PROBE };
int cf_rx_model(struct cf_rxpath *r, uint32_t psn, uint32_t ts, uint8_t ecn,
                int kind);

/* The suite's receiver: an ACK for path now (R-ACK-2). */
void cf_ack_fill(struct cf_t *t, uint16_t path, struct mroce_hdr *h);
/* A one-packet WRITE of 8 bytes with a new DSN and MSN (stream 0) at a
 * chosen PSN, ACKREQ: accepted data is recorded at any PSN (R-VAL-2). */
/* The MTH ts of the IUT's transmission path/psn (data or PROBE) in the
 * log, 0 if none: what an ACK naming it must echo (R-VAL-1). */
uint32_t cf_iut_ts(const struct cf_t *t, uint16_t path, uint32_t psn);
/* Opens and connects a second connection of the IUT (one path, one
 * stream, sequence numbers from 0) toward the suite's socket; its id.
 * Its packets carry conn = the suite's id ^ 0x5A5A5A5A (extra_ids[0]). */
uint32_t cf_second_conn(struct cf_t *t);
void cf_write_at(struct cf_t *t, uint16_t path, uint32_t psn, uint32_t ts,
                 uint8_t ecn);
void cf_send_probe_ack(struct cf_t *t, uint16_t path, uint32_t probe_psn);
void cf_send_ack(struct cf_t *t, uint16_t path);
/* Posts a receive of len bytes at the suite for the IUT's SENDs. */
void cf_peer_recv(struct cf_t *t, uint16_t stream, uint32_t ssn, uint32_t len);
/* Inbound message of the IUT (stream, msn) as the suite received it. */
const struct cf_inmsg *cf_inmsg(struct cf_t *t, uint16_t stream, uint32_t msn);

/* ---- packets the suite sends (build.c) ---- */

struct cf_tx {
    uint8_t ecn;          /* [ECT(0)] */
    bool bad_crc;         /* flip the ICRC */
    bool crc_le;          /* store the ICRC little-endian */
    uint32_t extra;       /* bytes appended after the ICRC's position
                             (covered by the ICRC) */
    int trunc;            /* >0: send only this many bytes */
    bool from_s2;         /* from the second socket (another port/addr) */
    uint8_t byte0;        /* nonzero: byte 0 of the packet as given */
    const uint8_t *patch; /* bytes to overwrite after encoding */
    uint32_t patch_off, patch_len;
    bool no_reseal; /* patch after the ICRC is computed */
    bool plain;     /* on a secure connection: not sealed */
    uint8_t prot;   /* nonzero: the protection byte sent, minus 1 */
};

/* The suite's MTH for the IUT: conn, path, ts; psn 0. */
struct mroce_hdr cf_hdr(struct cf_t *t, uint8_t opcode, uint16_t path);
/* Encodes and sends (R-CRC-1 ICRC); returns the datagram length. */
int cf_send(struct cf_t *t, const struct mroce_hdr *h, const void *payload,
            uint32_t len);
int cf_send_x(struct cf_t *t, const struct mroce_hdr *h, const void *payload,
              uint32_t len, const struct cf_tx *x);
/* Notes a data packet or PROBE the suite sent by other means (raw
 * socket), for the monitor's check of what ACKs may name (R-ACK-5). */
void cf_note_sent(struct cf_peer *p, const struct mroce_hdr *h);
bool cf_sent_probe(const struct cf_peer *p, uint16_t path, uint32_t psn);
/* The IUT's own clock between two of its packets (MTH ts, R-HDR-10), in
 * ms: immune to the suite's scheduling. */
static inline double cf_ts_ms(const struct cf_pkt *a, const struct cf_pkt *b)
{
    return (double)(uint32_t)(b->h.ts - a->h.ts) / 1e6;
}
/* Raw bytes as the suite's datagram. */
int cf_send_raw(struct cf_t *t, const void *buf, size_t len,
                const struct cf_tx *x);
uint32_t cf_next_psn(struct cf_t *t, uint16_t path);
uint32_t cf_next_dsn(struct cf_t *t);

/* One data packet of a message with the next PSN of `path` and the next
 * DSN; the caller fills stream/msn/msg_len/offset/va/rkey/ssn/imm in h. */
struct mroce_hdr cf_data_hdr(struct cf_t *t, uint8_t opcode, uint16_t path);

/* A whole message from the suite, split per R-MSG-1 with the mtu. */
struct cf_msg {
    uint8_t op;
    uint16_t stream;
    uint32_t msn, ssn;     /* used when msn_set / ssn_set */
    bool msn_set, ssn_set; /* else the stream's next (R-MSG-7, R-ORD-1) */
    uint64_t va;           /* WRITE, READ: [the IUT's region + roff] */
    uint32_t roff;
    uint32_t rkey; /* [the IUT's key] */
    bool rkey_set;
    uint32_t imm;
    const void *data;
    uint32_t len;
    int path;       /* -1: round-robin over the paths */
    uint32_t skip;  /* bitmask: packets (< 32) not sent */
    bool reverse;   /* send the packets last to first */
    bool no_ackreq; /* no ACKREQ on the last packet */
    /* filled in */
    uint32_t first_dsn, npkts;
    uint32_t dsn[64], psn[64];
    uint16_t pth[64];
};

/* Sends msg; returns the number of packets sent. */
int cf_send_msg(struct cf_t *t, struct cf_msg *m);
/* Sends packet i of a message built by cf_send_msg again (same DSN, new
 * PSN on path, RETX set). */
int cf_resend(struct cf_t *t, struct cf_msg *m, uint32_t i, uint16_t path);

/* One line per packet on stderr (-vv). */
void cf_trace_pkt(const char *dir, const struct mroce_hdr *h, size_t len,
                  uint16_t port);

/* Test data: deterministic bytes. */
void cf_pattern(uint8_t *buf, size_t len, uint32_t seed);

/* The IUT's k-th DSN, its first PSN, its stream's k-th MSN. */
static inline uint32_t cf_iut_dsn(const struct cf_t *t, uint32_t k)
{
    return t->iut.params.init_dsn + k;
}
static inline uint32_t cf_iut_psn(const struct cf_t *t, uint32_t k)
{
    return t->iut.params.init_psn + k;
}
static inline uint32_t cf_iut_msn(const struct cf_t *t, uint32_t k)
{
    return t->iut.params.init_msn + k;
}

/* ---- checks tests share (tlib.c) ---- */

/* Waits for an ACK whose dsn_cum is past dsn. */
bool cf_wait_cum(struct cf_t *t, uint32_t dsn, int ms);
/* Waits for an ACK of path that records psn (its SACK bit set). */
bool cf_wait_sacked(struct cf_t *t, uint16_t path, uint32_t psn, int ms);
/* Sends CLOSE and waits for its CLOSE_ACK: a barrier that works in every
 * state but INIT (it closes a CONNECTED connection). */
bool cf_barrier_close(struct cf_t *t, int ms);
/* A valid WRITE is acknowledged and lands: the connection still works. */
bool cf_alive(struct cf_t *t);
/* Sends a barrier PROBE on path 0 and counts the packets that arrived
 * since log index `from` before its ACK. */
int cf_replies_since(struct cf_t *t, int from, bool *barrier_ok);
/* Nothing but the barrier's ACK arrived since `from` (fails otherwise). */
bool cf_silent(struct cf_t *t, int from, const char *what);
/* Counter moved by exactly `want` since `before` (skips if unreported). */
bool cf_delta(struct cf_t *t, const char *scope, const char *name,
              int64_t before, int64_t want);
bool cf_wc_is(struct cf_t *t, const struct cf_wc *w, uint64_t wr_id,
              const char *status);
bool cf_state_is(struct cf_t *t, const char *want);
const struct cf_pkt *cf_wait_op(struct cf_t *t, uint8_t op, int ms);
/* ms scaled by --slow; as ns. */
int cf_ms(const struct cf_t *t, int ms);
uint64_t cf_ms_ns(const struct cf_t *t, double ms);
/* Another region at the IUT with the access rights listed (space
 * separated: local_write remote_write remote_read). */
struct cf_mr {
    int mr;
    uint64_t va;
    uint32_t rkey, lkey;
};
bool cf_iut_mr(struct cf_t *t, uint32_t len, const char *access,
               struct cf_mr *out);
const struct cf_pkt *cf_wait_nack(struct cf_t *t, int ms);
/* pk is a NACK with syndrome code (fails otherwise, also when NULL). */
bool cf_nack_is(struct cf_t *t, const struct cf_pkt *pk, uint8_t code,
                const char *what);

/* A drop rule: the first `times` transmissions of dsn are lost. */
struct cf_drop_dsn {
    uint32_t dsn;
    int times;
    int seen;
};
bool cf_drop_dsn_fn(struct cf_t *t, const struct cf_pkt *pk, void *ud);
/* The i-th transmission of dsn in the log; how many there are. */
const struct cf_pkt *cf_nth_tx(struct cf_t *t, uint32_t dsn, int i);
int cf_count_dsn(struct cf_t *t, uint32_t dsn);
/* Opens a 4-path connection (the suite announcing ack_every my_ack_every;
 * 0: the default) under a 1 Mbit/s hint, posts one 200,000-byte WRITE,
 * holds its ACKs 3 ms at a time and returns the most data packets that
 * arrived in one such hold after the first three (cc.hint_cap, R-ACK-101's
 * window slack). The connection stays open. */
int cf_held_burst(struct cf_t *t, uint32_t my_ack_every);

/* ---- below the UDP socket (cap.c, root only) ---- */

int cf_cap_open(void);
void cf_cap_count(int fd, uint16_t dst_port, int ms, int *total, int *df);
int cf_raw_udp(const uint8_t *dst_ip, uint16_t sport, uint16_t dport,
               const void *payload, size_t len, uint16_t csum);
uint16_t cf_udp_csum(const uint8_t *src, const uint8_t *dst, uint16_t sport,
                     uint16_t dport, const uint8_t *p, size_t len);

/* ---- the wire monitor (mon.c) ---- */

struct cf_mon_rule {
    const char *rule;
    int kw;
    const char *what;
    uint64_t checked, violated;
    char first[256];
};

void cf_mon_packet(struct cf_t *t, struct cf_pkt *pk);
/* Checks at the end of a test (DSNs skipped). */
void cf_mon_finish(struct cf_t *t);
/* The tallies over the whole run. */
struct cf_mon_rule *cf_mon_rules(int *n);
struct cf_mon_rule *cf_mon_get(const char *rule);
void cf_mon_clear_all(void);

/* ---- test table (registry.c) ---- */

typedef void (*cf_test_fn)(struct cf_t *t);

struct cf_test {
    const char *id;      /* "hdr.version.drop" */
    const char *section; /* spec section "3.2" */
    const char *rules;   /* space separated ids */
    int kw;              /* the keyword of the requirement it checks */
    const char *title;
    cf_test_fn fn;
    const void *arg; /* for table-driven tests */
    int timeout_ms;  /* [20000] */
};

#define CF_TEST(id_, sec_, rules_, kw_, title_, fn_)                           \
    {                                                                          \
        .id = id_, .section = sec_, .rules = rules_, .kw = CF_KW_##kw_,        \
        .title = title_, .fn = fn_                                             \
    }

#define CF_TESTA(id_, sec_, rules_, kw_, title_, fn_, arg_)                    \
    {                                                                          \
        .id = id_, .section = sec_, .rules = rules_, .kw = CF_KW_##kw_,        \
        .title = title_, .fn = fn_, .arg = arg_                                \
    }

/* The whole table, in spec section order. */
const struct cf_test *const *cf_tests(int *n);
/* Whether a test is tagged with rule id. */
bool cf_test_has_rule(const struct cf_test *ts, const char *rule);

/* per-section tables (t_*.c) */
extern const struct cf_test cf_t_enc[], cf_t_hdr[], cf_t_conn[], cf_t_path[],
    cf_t_sack[], cf_t_ack[], cf_t_ackm[], cf_t_loss[], cf_t_dsn[], cf_t_rtt[],
    cf_t_retry[], cf_t_msg[], cf_t_ord[], cf_t_cc[], cf_t_rx[], cf_t_nack[],
    cf_t_sec[], cf_t_cm[], cf_t_aead[], cf_t_val[], cf_t_mon[];

/* ---- results and reports (runner.c, report.c) ---- */

struct cf_result {
    const struct cf_test *test;
    int verdict; /* CF_PASS, CF_FAIL, CF_SKIP */
    int kw;      /* the keyword it is graded by (runner.c) */
    bool xfail;  /* a known failure (--xfail): does not fail the run */
    int retries; /* runs after the first (--retry) */
    double time_s;
    char *msg;
};

struct cf_run {
    struct cf_rules rules;
    struct cf_result *res;
    int n_res;
    double time_s;
    char agent_desc[256];
};

/* An outcome for people: pass, fail (MUST), warn (SHOULD), info (MAY),
 * skip. */
const char *cf_outcome(const struct cf_result *r);
bool cf_must_fail(const struct cf_result *r);

struct cf_cov {
    int total, testable, covered;
};
void cf_coverage(const struct cf_run *run, struct cf_cov *cov);
void cf_report_console_line(const struct cf_result *r, bool verbose);
void cf_report_summary(const struct cf_run *run);
int cf_report_json(const struct cf_run *run, const char *path);
int cf_report_junit(const struct cf_run *run, const char *path);
int cf_report_md(const struct cf_run *run, const char *path);

struct cf_opts {
    const char *target, *agent_bin, *spec, *ip;
    const char *json, *junit, *md;
    const char **filters;
    int n_filters;
    const char **xfail; /* test ids of known failures, reported upstream */
    int n_xfail;
    const char *fault;        /* run against this engine fault */
    const char *mutants_json; /* mutation run: output file */
    const char *only_mutant;  /* mutation run of one fault */
    int mutant_limit;         /* first N faults only (0: all) */
    int retry;                /* --retry: runs again of a failed test */
    bool mutants, list, verbose, trace, stop_on_fail;
    double scale;
};

int cf_main(int argc, char **argv);

/* runner.c: one test (t is reset and set up inside) and the keyword it
 * is graded by; a set of tests; the watchdog flag cf_next polls. */
void cf_run_one(const struct cf_test *ts, struct cf_agent *a,
                const struct cf_opts *o, const struct cf_rules *rs,
                struct cf_result *out);
extern volatile int cf_timed_out;
int cf_grade_kw(const struct cf_test *ts, const struct cf_rules *rs);
bool cf_selected(const struct cf_test *ts, const struct cf_opts *o);
/* Keeps a spawned agent usable after a test (restarts it if it died). */
int cf_agent_check(struct cf_agent *a);

/* mutant.c: the mutation run. */
int cf_mutants(const struct cf_opts *o, struct cf_agent *a,
               const struct cf_rules *rs);

#endif
