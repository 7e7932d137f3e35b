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

#endif
