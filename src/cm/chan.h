/* The CM channel shared by its three parts: framing and liveness (cm.c),
 * the set-up exchange (est.c) and the listener (listen.c). */
#ifndef MROCE_CM_CHAN_H
#define MROCE_CM_CHAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce_cm.h>

#include "cm/auth.h"
#include "cm/check.h"
#include "cm/msg.h"

enum cm_role { CM_CLIENT = 0, CM_SERVER = 1 };

#define CM_KEEPALIVE_DEF_MS 1000
#define CM_HELLO_TIMEOUT_DEF_MS 5000
#define CM_PENDING_DEF 16
#define CM_PENDING_MAX 256

struct mroce_cm {
    int fd;
    int role;         /* enum cm_role: who speaks first (R-CM-4) */
    bool eof;         /* the peer's side of the stream ended */
    bool broken;      /* a malformed message: the stream is out of step */
    bool established; /* both READYs done */
    bool rejected;    /* a REJECT went either way: no BYE */
    struct mroce_cm_attr attr; /* attr.psk is NULL: the key is in psk */
    struct cm_psk psk;
    bool has_psk;
    struct mroce_addr tcp_peer;
    uint8_t can; /* modes the connection can apply (establish), 0: unknown */
    /* set-up */
    uint8_t *hello_peer; /* the peer's whole HELLO (server: from accept) */
    size_t hello_peer_len;
    struct cm_agreed ag;
    struct cm_session ses;
    /* after set-up (R-CM-11) */
    uint64_t seq_tx, seq_rx;
    uint16_t ka_peer_ms;
    int64_t last_tx_ms, last_rx_ms;
    int64_t hello_deadline; /* listener: when a pending connector expires */
    struct mroce_cm_counters cnt;
    size_t rx_len;
    uint8_t rx[CM_MSG_MAX];
};

/* One decoded message at the head of the receive buffer (after the
 * channel stripped and checked a tag, len is the payload's). */
struct cm_msg {
    struct cm_hdr h;
    const uint8_t *body;
    uint32_t len;
    int rej; /* a header error's REJECT reason (0: none to send) */
};

/* A channel on a connected socket (closed on failure). */
int cm_chan_new(int fd, int role, const struct mroce_cm_attr *attr,
                const struct cm_psk *psk, struct mroce_cm **out);
void cm_chan_free(struct mroce_cm *cm);
struct cm_policy cm_chan_policy(const struct mroce_cm *cm);

/* Reads what the socket has without blocking: 1 if bytes came. */
int cm_chan_read(struct mroce_cm *cm);
/* The message at the head: 1 whole, 0 not yet, EPROTO malformed. */
int cm_chan_peek(struct mroce_cm *cm, struct cm_msg *m);
void cm_chan_consume(struct mroce_cm *cm, const struct cm_msg *m);
/* Waits for the next whole message; ESTATE once the stream ended. After
 * set-up, checks and strips its tag (EACCES) and answers liveness. */
int cm_chan_next(struct mroce_cm *cm, int64_t deadline, struct cm_msg *m);
/* Sends one message; after set-up with a key, tagged (R-CM-11). */
int cm_chan_send(struct mroce_cm *cm, int type, const void *body, size_t len,
                 int64_t deadline);
int cm_chan_send_raw(struct mroce_cm *cm, const uint8_t *buf, int len,
                     int64_t deadline);
/* Sends a REJECT and marks the channel done; returns err. */
int cm_chan_reject(struct mroce_cm *cm, int err, int reason, uint32_t detail,
                   const char *why, int64_t deadline);
/* A REJECT from the peer: EPROTO (EACCES for AUTH) with the detail. */
int cm_chan_got_reject(struct mroce_cm *cm, const struct cm_msg *m);
/* A message that is not the one expected. BYE means the peer left. */
int cm_chan_unexpected(struct mroce_cm *cm, const struct cm_msg *m,
                       const char *want, int64_t deadline);

/* Thread-local REJECT reason (sock.c). */
void cm_set_reject(int reason);

#endif
