/* Deliberate faults, for tests that prove a checker can fail. Not part of
 * the public API; never set outside tests.
 *
 * Two kinds. The flags of mroce_ctx_set_fault are one-shot corruptions
 * used by tests of tests (the chaos test's data checker). The fault table
 * names persistent deliberate violations of the specification, one rule
 * each, for the mutation run of the compliance suite (docs/conformance.md,
 * "Mutation run"): a fault is set per context with mroce_ctx_set_fault_id
 * and tested at its site by one line, MROCE_FAULT(ctx, NAME). */
#ifndef MROCE_ENGINE_FAULT_H
#define MROCE_ENGINE_FAULT_H

#include <stdint.h>

#include <mroce/mroce.h>

/* The responder flips the lowest bit of the first byte it places for the
 * next data packet carrying a payload, then clears the flag. */
#define MROCE_FAULT_PLACE_FLIP 0x1u

void mroce_ctx_set_fault(struct mroce_ctx *ctx, uint32_t flags);

/* The fault table (fault.c): id 0 is "none". */
enum mroce_fault_id {
    MROCE_FID_NONE = 0,
    MROCE_FID_PLACE_FLIP, /* the first placed byte of the context flipped */
    MROCE_FID_COUNT
};

struct mroce_fault_info {
    const char *name; /* lower case, as the agent's "fault" request names it */
    const char *rule; /* the rule it violates */
    const char *what; /* the violation, in a sentence */
};

/* Entry `id` (1..MROCE_FID_COUNT-1), or NULL. */
const struct mroce_fault_info *mroce_fault_get(int id);
/* The id of a fault name, or MROCE_ENOENT. */
int mroce_fault_lookup(const char *name);
/* Sets fault `id` (0: none) on the context, replacing any other.
 * Errors: EINVAL (no such id). */
int mroce_ctx_set_fault_id(struct mroce_ctx *ctx, int id);

#endif
