/* Deliberate faults, for tests that prove a checker can fail. Not part of
 * the public API; never set outside tests. */
#ifndef MROCE_ENGINE_FAULT_H
#define MROCE_ENGINE_FAULT_H

#include <stdint.h>

#include <mroce/mroce.h>

/* The responder flips the lowest bit of the first byte it places for the
 * next data packet carrying a payload, then clears the flag. */
#define MROCE_FAULT_PLACE_FLIP 0x1u

void mroce_ctx_set_fault(struct mroce_ctx *ctx, uint32_t flags);

/* Makes the connection's own sequence numbers start at the given values
 * (R-CONN-5) instead of its random draws, for a test that needs a given
 * start: readable numbers, or a message number just before it wraps.
 * Errors: ESTATE unless the connection is in INIT. */
int mroce_conn_set_init_seq(struct mroce_conn *c, uint32_t psn, uint32_t dsn,
                            uint32_t msn);

#endif
