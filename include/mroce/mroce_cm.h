/* mroce connection manager: the set-up exchange of MetaRoCE (spec 4.2,
 * R-CM-*) over TCP, like perftest and rdma_cm, so two processes set up a
 * connection from a host and port.
 *
 * A server listens on host:port (mroce_cm_listen) and accepts
 * (mroce_cm_accept), which returns only a client whose HELLO checked out:
 * connectors that send garbage, an oversized or malformed message, a
 * HELLO that fails the checks, or nothing in time are dropped (counted)
 * while the listener keeps serving others. A client dials (mroce_cm_dial).
 * Each side creates its datapath and connection (the TCP socket's local
 * address, mroce_cm_local_ip, is the address that reaches the peer) and
 * calls mroce_cm_establish:
 *
 *   client HELLO -> server checks it, then HELLO -> client checks it and
 *   connects, READY -> server checks it and connects, READY -> client.
 *
 * So nothing about the server is sent before the client's HELLO passed
 * every check, and neither side sends data before the other is CONNECTED
 * (R-CONN-5). A HELLO carries the mroce_conn_params of the connection
 * (one address per plane, windows, timing), the versions and features its
 * sender supports and requires, the packet protection modes it accepts,
 * a fresh nonce and an application blob. With a pre-shared key (PSK) both
 * sides prove they hold it, the HELLOs are authenticated (nobody can
 * downgrade the mode or change a value), the connection secret is derived
 * from the key, both nonces and both HELLOs (HKDF-SHA256, OpenSSL), and
 * every later message is authenticated. The message layout is in
 * docs/spec.md section 4.5.
 *
 * Afterwards the TCP socket stays open: small application messages
 * (mroce_cm_send/recv: results, sync) and liveness. Each side sends a
 * KEEPALIVE when it has sent nothing for its announced interval, and
 * declares the peer dead after MROCE_CM_DEAD_FACTOR intervals of the
 * peer's without a message (a frozen or vanished peer). mroce_cm_close
 * sends BYE; mroce_cm_poll reports a peer that sent BYE, closed its
 * socket or went silent, and disconnects the connection
 * (mroce_conn_disconnect: outstanding work requests complete with
 * WR_FLUSH_ERR).
 *
 * Errors are negative MROCE_E* codes: EINVAL (bad argument), ENOMEM,
 * EAGAIN (timeout), ESTATE (TCP failure: refused, unreachable, peer
 * closed or silent), EPROTO (malformed, short, oversized or unexpected
 * message, bad version, a check failed, the peer rejected us), EACCES
 * (authentication failed: wrong key, bad MAC), ENOBUFS (caller's buffer
 * too small). mroce_cm_errmsg() gives the detail of the calling thread's
 * last failure ("connect 10.0.0.1:18515: Connection refused"), and
 * mroce_cm_reject_reason() the R-CM reason code of a REJECT sent or
 * received.
 *
 * Thread-safety: a listener or channel is used by one thread at a time.
 * mroce_cm_establish and mroce_cm_poll call mroce_conn_connect and
 * mroce_conn_disconnect: while a datapath polling thread runs, hold
 * mroce_dp_lock around them. Buffers passed in stay the caller's. */
#ifndef MROCE_CM_H
#define MROCE_CM_H

#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MROCE_CM_PORT 18515    /* perftest's default TCP port */
#define MROCE_CM_VERSION 2     /* version of the CM message format */
#define MROCE_CM_MAX_BLOB 4096 /* application bytes in a HELLO */
#define MROCE_CM_MAX_APP 4096  /* bytes in one application message */
#define MROCE_CM_MAX_BODY 8192 /* largest message body accepted */
#define MROCE_CM_ADDRSTRLEN 46 /* INET6_ADDRSTRLEN */

/* Packet protection modes (R-CM-9), as bits of mroce_cm_attr.modes. */
#define MROCE_CM_MODE_NONE 0x1 /* ICRC only (R-SEC-6) */
#define MROCE_CM_MODE_AUTH 0x2 /* AES-128-GCM tag, payload in clear */
#define MROCE_CM_MODE_ENC 0x4  /* AES-128-GCM, payload encrypted */

#define MROCE_CM_PSK_MIN 16 /* shortest pre-shared key, bytes */
#define MROCE_CM_PSK_MAX 64
#define MROCE_CM_SECRET_LEN 32 /* connection secret (R-CM-10) */
#define MROCE_CM_MAX_ALLOW 16  /* address prefixes in an allow list */
#define MROCE_CM_DEAD_FACTOR 4 /* silent intervals before a peer is dead */

/* An address prefix: addr/len (len 0..32 for IPv4, 0..128 for IPv6). */
struct mroce_cm_prefix {
    struct mroce_addr addr;
    uint8_t len;
};

/* Policy and limits of a channel (or of every channel a listener
 * accepts). Zero fields take the defaults in brackets. */
struct mroce_cm_attr {
    const uint8_t *psk; /* MROCE_CM_PSK_MIN..MAX bytes; NULL: none. A side
                           with a key requires the peer to prove it has
                           the same (R-CM-10). Copied. */
    size_t psk_len;
    uint8_t modes; /* MROCE_CM_MODE_* accepted [NONE without a key,
                      NONE|AUTH|ENC with one]; the strongest common one
                      is used (R-CM-9). */
    /* Data addresses the peer may announce besides its TCP address
     * (R-CM-8) [none]; allow_any accepts every address. */
    struct mroce_cm_prefix allow[MROCE_CM_MAX_ALLOW];
    uint32_t n_allow;
    uint8_t allow_any;
    uint32_t max_blob;     /* peer's HELLO blob [MROCE_CM_MAX_BLOB] */
    int hello_timeout_ms;  /* listener: a connector's HELLO [5000] */
    uint32_t max_pending;  /* listener: connectors waiting [16] */
    uint16_t keepalive_ms; /* our KEEPALIVE interval [1000] */
    uint8_t no_keepalive;  /* 1: announce 0, send none */
    /* Application check of the peer's blob before anything is sent to
     * it (the server) or before connecting (the client); nonzero refuses
     * (the peer gets a REJECT, establish returns EPROTO). NULL: none. */
    int (*check_blob)(void *ud, const void *blob, size_t len);
    void *ud;
};

/* Parses "a.b.c.d/n", "x:y::z/n" or a bare address (a host prefix).
 * EINVAL if it is neither. */
int mroce_cm_prefix_parse(const char *s, struct mroce_cm_prefix *out);

struct mroce_cm_listener;
struct mroce_cm;

/* Listens on host:port (host NULL or "": every address, IPv6 and IPv4;
 * port 0: an ephemeral port, see mroce_cm_listener_port). attr may be
 * NULL (defaults); it is copied. */
int mroce_cm_listen(const char *host, uint16_t port,
                    const struct mroce_cm_attr *attr,
                    struct mroce_cm_listener **out);
uint16_t mroce_cm_listener_port(const struct mroce_cm_listener *l);
/* Waits up to timeout_ms (< 0: forever) for a client whose HELLO checks
 * out (R-CM-8), serving up to max_pending connectors at once and dropping
 * (and counting) every other one; the returned channel holds the HELLO
 * for mroce_cm_establish. EAGAIN on timeout. */
int mroce_cm_accept(struct mroce_cm_listener *l, int timeout_ms,
                    struct mroce_cm **out);
void mroce_cm_listener_close(struct mroce_cm_listener *l);

struct mroce_cm_listener_counters {
    uint64_t accepted; /* TCP connections taken */
    uint64_t handed;   /* returned by mroce_cm_accept */
    uint64_t rejected; /* sent a REJECT and dropped */
    uint64_t dropped;  /* dropped silently (not a CM peer) */
    uint64_t timeouts; /* no whole HELLO in time */
    uint64_t evicted;  /* dropped to make room for a newer connector */
    uint64_t closed;   /* closed by the connector before its HELLO */
};
void mroce_cm_listener_get_counters(const struct mroce_cm_listener *l,
                                    struct mroce_cm_listener_counters *out);

/* Connects to host:port (name or literal), waiting up to timeout_ms and
 * retrying a refused connection until then (the server may still be
 * starting). attr may be NULL. */
int mroce_cm_dial(const char *host, uint16_t port, int timeout_ms,
                  const struct mroce_cm_attr *attr, struct mroce_cm **out);

/* The local (peer) IP address of the TCP socket as a literal; bind the
 * datapath to the local one. ENOBUFS if cap is too small. */
int mroce_cm_local_ip(const struct mroce_cm *cm, char *buf, size_t cap);
int mroce_cm_peer_ip(const struct mroce_cm *cm, char *buf, size_t cap);

/* The exchange above and mroce_conn_connect. `blob` (blob_len <=
 * MROCE_CM_MAX_BLOB) goes to the peer; the peer's lands in peer_blob (cap
 * bytes; its length in *peer_len, may be NULL). A check that fails sends
 * the peer a REJECT with the reason (mroce_cm_reject_reason) and returns
 * EPROTO, EACCES or the error of mroce_conn_connect; a REJECT from the
 * peer gives EPROTO (EACCES for an authentication reason). On failure
 * the connection may already be CONNECTED (the client connects before
 * the server's READY): destroy it. */
int mroce_cm_establish(struct mroce_cm *cm, struct mroce_conn *conn,
                       const void *blob, size_t blob_len, void *peer_blob,
                       size_t cap, size_t *peer_len, int timeout_ms);

/* What establish agreed (R-CM-9, R-CM-10): the packet protection mode
 * (one MROCE_CM_MODE_* bit) and, when a key was used, the connection
 * secret (MROCE_CM_SECRET_LEN bytes into secret, which may be NULL).
 * establish has already given both to the connection
 * (mroce_conn_set_secret, before mroce_conn_connect; it owns the
 * connection's mode, so do not set one yourself). Returns 1 if a secret
 * was derived, 0 if not (no key), ESTATE before establish succeeded. */
int mroce_cm_security(const struct mroce_cm *cm, uint8_t *mode,
                      uint8_t *secret);

/* Application messages after establish (len <= MROCE_CM_MAX_APP).
 * recv returns the length, EAGAIN after timeout_ms (0: do not wait),
 * ESTATE if the peer closed or went silent, ENOBUFS if cap is too small
 * (the message is dropped), EACCES if its MAC is wrong. Both send our
 * KEEPALIVE when one is due. */
int mroce_cm_send(struct mroce_cm *cm, const void *buf, size_t len);
int mroce_cm_recv(struct mroce_cm *cm, void *buf, size_t cap, int timeout_ms);

/* Liveness, never blocks: 0 while the peer is there, 1 once it closed
 * (BYE or end of stream) or went silent -- conn (may be NULL) is then
 * disconnected if it is still CONNECTED. Sends our KEEPALIVE when due;
 * call it at least every keepalive interval. Application messages that
 * arrive stay queued for mroce_cm_recv. EPROTO on a malformed message. */
int mroce_cm_poll(struct mroce_cm *cm, struct mroce_conn *conn);
/* The TCP socket, for poll()/epoll of the caller's loop. */
int mroce_cm_fd(const struct mroce_cm *cm);

/* Sends BYE (best effort), closes the socket and frees. NULL: no-op. */
void mroce_cm_close(struct mroce_cm *cm);

struct mroce_cm_counters {
    uint64_t tx_msgs, rx_msgs;
    uint64_t rx_bad;     /* malformed, oversized, bad version, unexpected */
    uint64_t rx_bad_mac; /* authentication failures (R-CM-10) */
    uint64_t tx_keepalive, rx_keepalive;
};
void mroce_cm_get_counters(const struct mroce_cm *cm,
                           struct mroce_cm_counters *out);

/* Detail of the calling thread's last CM failure; "" if none. */
const char *mroce_cm_errmsg(void);
/* The R-CM reason code (MROCE_CM_REJ_*) of the calling thread's last
 * REJECT, sent or received; 0 if none. */
int mroce_cm_reject_reason(void);
const char *mroce_cm_reject_str(int reason);

/* REJECT reasons (R-CM-5). */
enum mroce_cm_reject {
    MROCE_CM_REJ_VERSION = 1,       /* no common CM version */
    MROCE_CM_REJ_PROTO_VERSION = 2, /* no common MetaRoCE version */
    MROCE_CM_REJ_MALFORMED = 3,     /* a message that does not decode */
    MROCE_CM_REJ_UNEXPECTED = 4,    /* a message out of sequence */
    MROCE_CM_REJ_FEATURE = 5,       /* a required feature is missing */
    MROCE_CM_REJ_SECURITY = 6,      /* no common protection mode */
    MROCE_CM_REJ_AUTH = 7,          /* wrong key or bad MAC */
    MROCE_CM_REJ_PARAMS = 8,        /* a value out of range or refused */
    MROCE_CM_REJ_ADDRESS = 9,       /* a data address not allowed */
    MROCE_CM_REJ_LIMIT = 10,        /* beyond a configured limit */
    MROCE_CM_REJ_TRANSPORT = 11,    /* MetaRoCE against RoCEv2 */
    MROCE_CM_REJ_APP = 12,          /* the application refused the blob */
    MROCE_CM_REJ_INTERNAL = 13,     /* a local failure (memory) */
};

#ifdef __cplusplus
}
#endif
#endif
