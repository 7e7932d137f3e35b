/* TCP plumbing of the CM: listen, accept, dial, deadline-bounded I/O and
 * the thread-local error detail behind mroce_cm_errmsg(). */
#ifndef MROCE_CM_SOCK_H
#define MROCE_CM_SOCK_H

#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce.h>

/* Records the detail of a failure for mroce_cm_errmsg and returns err. */
int cm_fail(int err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Monotonic milliseconds; a deadline of -1 means never. */
int64_t cm_now_ms(void);
int64_t cm_deadline(int timeout_ms);
/* Milliseconds left until deadline for poll() (-1: forever, 0: passed). */
int cm_left_ms(int64_t deadline);

/* TCP_NODELAY and non-blocking. */
void cm_sock_tune(int fd);
/* Each returns a socket (>= 0) or a negative MROCE_E* with cm_fail set. */
int cm_sock_listen(const char *host, uint16_t port);
int cm_sock_dial(const char *host, uint16_t port, int timeout_ms);
uint16_t cm_sock_port(int fd);
/* Literal of the local (peer != 0: remote) address. */
int cm_sock_ip(int fd, int peer, char *buf, size_t cap);

/* The remote address as a MetaRoCE address (IPv4-mapped IPv6: IPv4). */
int cm_sock_peer_addr(int fd, struct mroce_addr *out);

/* Sends all of buf or fails (ESTATE) by the deadline (EAGAIN). */
int cm_sock_send_all(int fd, const uint8_t *buf, size_t len, int64_t deadline);
/* Waits until readable or the deadline: 1 readable, 0 timeout. */
int cm_sock_wait(int fd, int64_t deadline);

#endif
