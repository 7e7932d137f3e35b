/* The checks of a peer's HELLO and what both sides agree on (R-CM-7 ..
 * R-CM-9): versions, features, the key, the protection mode, the data
 * addresses, the value ranges and the local limits, in the order of
 * R-CM-8. Pure functions of the policy, the HELLO and its bytes. */
#ifndef MROCE_CM_CHECK_H
#define MROCE_CM_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce_cm.h>

#include "cm/auth.h"
#include "cm/msg.h"

/* What a side brings to the check. */
struct cm_policy {
    const struct mroce_cm_attr *attr;
    const struct cm_psk *psk;   /* NULL: no key */
    struct mroce_addr tcp_peer; /* the TCP peer's address */
    uint8_t can; /* modes the connection's datapath can apply; 0: not
                    known yet (the listener: establish checks again) */
};

/* What both sides agree on. */
struct cm_agreed {
    uint8_t proto; /* MetaRoCE version */
    uint8_t mode;  /* one MROCE_CM_MODE_* bit */
    bool psk;      /* the key authenticates the exchange */
};

/* The outcome of a failed check: the REJECT to send. */
struct cm_verdict {
    int reason; /* MROCE_CM_REJ_* */
    uint32_t detail;
    const char *why;
};

/* Our HELLO's versions, features, modes and key id under `pol`; h->p
 * holds our connection's parameters (its features are announced). */
void cm_check_fill_ours(const struct cm_policy *pol, struct cm_hello *h);
/* Modes we accept: the attribute's, else NONE (and AUTH|ENC with a
 * key), limited to what the datapath can apply (pol->can). */
uint8_t cm_check_our_modes(const struct cm_policy *pol);
/* R-CM-9: the mode agreed with the peer's HELLO h (ag->psk set), or
 * REJECT SECURITY. */
int cm_check_mode(const struct cm_policy *pol, const struct cm_hello *h,
                  struct cm_agreed *ag, struct cm_verdict *v);

/* Checks the peer's decoded HELLO h (its whole message msg[0..len), tag
 * included; prefix: the client's HELLO when h is the server's). 0 and
 * *ag filled, or a REJECT reason with *v filled. */
int cm_check_hello(const struct cm_policy *pol, const struct cm_hello *h,
                   const uint8_t *prefix, size_t prefix_len, const uint8_t *msg,
                   size_t len, struct cm_agreed *ag, struct cm_verdict *v);

/* R-CONN-3 ranges of the announced MetaRoCE values. */
bool cm_check_params(const struct mroce_conn_params *p, const char **why);
/* Whether addr is in the allow list or equal to the TCP peer's. */
bool cm_check_addr(const struct cm_policy *pol, const struct mroce_addr *a);

#endif
