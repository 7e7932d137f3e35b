/* Packet traces: the frames that selected links start, written to a pcap
 * file with simulated timestamps (nanoseconds since time 0), through the
 * project's pcap writer (src/io/pcap: synthesized Ethernet/IP/UDP around
 * each UDP payload, so tshark and the MetaRoCE dissector read it).
 *
 * A frame is written when it starts serializing on a traced link, before
 * the link's loss and failure drops, as a capture at the sender's port
 * would see it; a trimmed packet appears with its cut payload. Several
 * links may share one trace (one merged capture, in time order). This is
 * the simulator's only file I/O.
 *
 * Errors are codes from enum mroce_err. Thread-safety: none.
 */
#ifndef MROCE_SIM_TRACE_H
#define MROCE_SIM_TRACE_H

#include <stdint.h>

#include "sim/link.h"

struct mroce_sim_trace;

/* Creates or truncates the file at path. Errors: EINVAL (NULL or the file
 * cannot be created), ENOMEM. *out is NULL on failure. */
int mroce_sim_trace_open(const char *path, struct mroce_sim_trace **out);

/* Traces link l (replacing any tap it had) until the trace is closed;
 * the trace must be closed only after the last event that can send on
 * l, or the link detached with mroce_sim_link_set_tap(l, NULL, NULL). */
void mroce_sim_trace_add_link(struct mroce_sim_trace *tr,
                              struct mroce_sim_link *l);

/* Frames written so far, and frames that failed to be written. */
uint64_t mroce_sim_trace_count(const struct mroce_sim_trace *tr);
uint64_t mroce_sim_trace_errors(const struct mroce_sim_trace *tr);

/* Flushes, closes and frees. Returns 0, or EINVAL if any write failed.
 * NULL: no-op. */
int mroce_sim_trace_close(struct mroce_sim_trace *tr);

#endif
