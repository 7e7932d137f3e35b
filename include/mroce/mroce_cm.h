/* mroce connection manager: a small TCP exchange (like perftest and
 * rdma_cm) so two processes set up a connection from a host and port.
 *
 * A server listens on host:port (mroce_cm_listen) and accepts
 * (mroce_cm_accept); a client dials (mroce_cm_dial). Each side creates its
 * datapath and connection (the TCP socket's local address,
 * mroce_cm_local_ip, is the address that reaches the peer) and calls
 * mroce_cm_establish: both send HELLO (their mroce_conn_params and an
 * application blob, e.g. an MR address, rkey and length), both call
 * mroce_conn_connect with the peer's parameters, then both send READY and
 * wait for the peer's READY, so neither sends data before the other is
 * CONNECTED (R-CONN-5). The message layout is in docs/cm.md.
 *
 * Afterwards the TCP socket stays open as a liveness and close channel and
 * carries small application messages (mroce_cm_send/recv: results, sync).
 * mroce_cm_close sends BYE; a peer that receives BYE or sees the socket
 * close (the peer process died) is told by mroce_cm_poll, which then
 * disconnects the connection (mroce_conn_disconnect: outstanding work
 * requests complete with WR_FLUSH_ERR). A peer that vanishes without its
 * socket closing is found by the engine's retry timeouts anyway.
 *
 * Errors are negative MROCE_E* codes: EINVAL (bad argument), ENOMEM,
 * EAGAIN (timeout), ESTATE (TCP failure: refused, unreachable, peer
 * closed), EPROTO (malformed, short, oversized or unexpected message, bad
 * version, peer rejected our parameters), ENOBUFS (caller's buffer too
 * small). mroce_cm_errmsg() gives the detail of the calling thread's last
 * failure ("connect 10.0.0.1:18515: Connection refused").
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
#define MROCE_CM_VERSION 1     /* version of the CM message format */
#define MROCE_CM_MAX_BLOB 4096 /* application bytes in a HELLO */
#define MROCE_CM_MAX_APP 4096  /* bytes in one application message */
#define MROCE_CM_MAX_BODY 8192 /* largest message body accepted */
#define MROCE_CM_ADDRSTRLEN 46 /* INET6_ADDRSTRLEN */

struct mroce_cm_listener;
struct mroce_cm;

/* Listens on host:port (host NULL or "": every address, IPv6 and IPv4;
 * port 0: an ephemeral port, see mroce_cm_listener_port). */
int mroce_cm_listen(const char *host, uint16_t port,
                    struct mroce_cm_listener **out);
uint16_t mroce_cm_listener_port(const struct mroce_cm_listener *l);
/* Waits up to timeout_ms (< 0: forever) for one client. EAGAIN on
 * timeout. */
int mroce_cm_accept(struct mroce_cm_listener *l, int timeout_ms,
                    struct mroce_cm **out);
void mroce_cm_listener_close(struct mroce_cm_listener *l);

/* Connects to host:port (name or literal), waiting up to timeout_ms and
 * retrying a refused connection until then (the server may still be
 * starting). */
int mroce_cm_dial(const char *host, uint16_t port, int timeout_ms,
                  struct mroce_cm **out);

/* The local (peer) IP address of the TCP socket as a literal; bind the
 * datapath to the local one. ENOBUFS if cap is too small. */
int mroce_cm_local_ip(const struct mroce_cm *cm, char *buf, size_t cap);
int mroce_cm_peer_ip(const struct mroce_cm *cm, char *buf, size_t cap);

/* HELLO/READY exchange and mroce_conn_connect (see above). `blob`
 * (blob_len <= MROCE_CM_MAX_BLOB) goes to the peer; the peer's lands in
 * peer_blob (cap bytes; its length in *peer_len, may be NULL). If
 * mroce_conn_connect refuses the peer's parameters, the peer is sent a
 * REJECT and the error is returned; a REJECT from the peer gives EPROTO.
 * Errors as above plus those of mroce_conn_connect. */
int mroce_cm_establish(struct mroce_cm *cm, struct mroce_conn *conn,
                       const void *blob, size_t blob_len, void *peer_blob,
                       size_t cap, size_t *peer_len, int timeout_ms);

/* Application messages after establish (len <= MROCE_CM_MAX_APP).
 * recv returns the length, EAGAIN after timeout_ms (0: do not wait),
 * ESTATE if the peer closed, ENOBUFS if cap is too small (the message is
 * dropped). */
int mroce_cm_send(struct mroce_cm *cm, const void *buf, size_t len);
int mroce_cm_recv(struct mroce_cm *cm, void *buf, size_t cap, int timeout_ms);

/* Liveness, never blocks: 0 while the peer is there, 1 once it closed
 * (BYE or end of stream) -- conn (may be NULL) is then disconnected if it
 * is still CONNECTED. Application messages that arrive stay queued for
 * mroce_cm_recv. EPROTO on a malformed message. */
int mroce_cm_poll(struct mroce_cm *cm, struct mroce_conn *conn);
/* The TCP socket, for poll()/epoll of the caller's loop. */
int mroce_cm_fd(const struct mroce_cm *cm);

/* Sends BYE (best effort), closes the socket and frees. NULL: no-op. */
void mroce_cm_close(struct mroce_cm *cm);

struct mroce_cm_counters {
    uint64_t tx_msgs, rx_msgs;
    uint64_t rx_bad; /* malformed, oversized, bad version, unexpected */
};
void mroce_cm_get_counters(const struct mroce_cm *cm,
                           struct mroce_cm_counters *out);

/* Detail of the calling thread's last CM failure; "" if none. */
const char *mroce_cm_errmsg(void);

#ifdef __cplusplus
}
#endif
#endif
