/* Deliberate faults, for tests that prove a checker can fail. Not part of
 * the public API; never set outside tests.
 *
 * Two kinds. The flags of mroce_ctx_set_fault are one-shot corruptions
 * used by tests of tests (the chaos test's data checker). The fault table
 * names persistent deliberate violations of the specification, one rule
 * each, for the mutation run of the compliance suite (docs/conformance.md,
 * "Mutation run"): a fault is set per context with mroce_ctx_set_fault_id
 * and tested at its site by one line, MROCE_FAULT(ctx, NAME).
 *
 * The fault table exists only in the fault variant of the engine, which
 * the build compiles a second time for mroce-agent (CMake target
 * mroce_engine_faults, defining MROCE_WITH_FAULTS). In libmroce, which
 * every other program links, MROCE_FAULT and MROCE_PFAULT are constant
 * false, so the compiler drops the checks and the faulty branches, and
 * setting a fault fails with MROCE_ENOTSUP. The checks may appear only in
 * the files compiled in both variants (CMakeLists.txt, MROCE_FAULT_SITES:
 * the engine and src/cm/check.c, each built with MROCE_FAULT_SITES
 * defined); anywhere else they do not compile. */
#ifndef MROCE_ENGINE_FAULT_H
#define MROCE_ENGINE_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce.h>

#include "wire/wire.h"

/* The responder flips the lowest bit of the first byte it places for the
 * next data packet carrying a payload, then clears the flag. */
#define MROCE_FAULT_PLACE_FLIP 0x1u

void mroce_ctx_set_fault(struct mroce_ctx *ctx, uint32_t flags);

/* The fault table: id, name (as the agent's "fault" request names it), the
 * rule the fault violates, and the violation. Each is tested at one site
 * (sometimes two) by a one-line MROCE_FAULT check. Faults of the set-up
 * exchange (CM_*) have no context: they hold for the whole process. */
#define MROCE_FAULT_LIST(X)                                                    \
    X(PLACE_FLIP, "place_flip", "R-MSG-4",                                     \
      "the first payload byte the context places is flipped")                  \
    /* ---- receiver: acknowledgement and SACK state ---- */                   \
    X(ACK_IGNORE_ACKREQ, "ack_ignore_ackreq", "R-ACK-1",                       \
      "ACKREQ does not make the ACK immediate")                                \
    X(ACK_GAP_LATE, "ack_gap_late", "R-ACK-1",                                 \
      "a gap or a late arrival does not make the ACK immediate")               \
    X(ACK_EVERY_OFF, "ack_every_off", "R-ACK-1",                               \
      "no ACK after ack_every packets")                                        \
    X(ACK_DELAY_OFF, "ack_delay_off", "R-ACK-1",                               \
      "no delayed ACK: a packet without ACKREQ waits for another")             \
    X(SACK_LATE_BIT, "sack_late_bit", "R-SACK-5",                              \
      "a late arrival does not set its bit")                                   \
    X(ECHO_TS_LATEST, "echo_ts_latest", "R-ACK-2",                             \
      "echo_ts is the latest packet's ts, not sack_high's")                    \
    X(SACK_WORDS_SWAPPED, "sack_words_swapped", "R-HDR-14",                    \
      "the second and third 64-bit words of the SACK bitmap swapped")          \
    X(RX_COUNT_NO_PROBE, "rx_count_no_probe", "R-SACK-7",                      \
      "PROBEs are recorded but not counted in rx_count")                       \
    X(CE_NOT_COUNTED, "ce_not_counted", "R-SACK-7",                            \
      "CE-marked packets are not counted in ce_count")                         \
    X(ACK_FLAGS_SET, "ack_flags_set", "R-ACK-2", "ACKs carry ACKREQ")          \
    X(ACK_PATH_FIXED, "ack_path_fixed", "R-ACK-3",                             \
      "every ACK leaves from path 0")                                          \
    X(RATE_HINT_ZERO, "rate_hint_zero", "R-CC-2",                              \
      "ACKs carry no fair-share rate hint")                                    \
    X(PROBE_ANSWER_HIGH, "probe_answer_high", "R-VAL-4",                       \
      "the answer to a PROBE names sack_high, not the PROBE")                  \
    X(PROBE_RECORDED_ANYWHERE, "probe_recorded_anywhere", "R-VAL-2",           \
      "a PROBE is recorded at any PSN")                                        \
    X(PROBE_DROPPED, "probe_dropped", "R-PATH-9", "PROBEs are not answered")   \
    X(ROUTE_CHECK_OFF, "route_check_off", "R-ACK-8",                           \
      "a RETX PROBE does not make the receiver test its ACK route")            \
    /* ---- receiver: DSN window and validation ---- */                        \
    X(DSN_CUM_LAG, "dsn_cum_lag", "R-DSN-2",                                   \
      "ACKs report dsn_cum one DSN behind")                                    \
    X(DSN_WINDOW_IGNORED, "dsn_window_ignored", "R-DSN-6",                     \
      "a DSN beyond the window is accepted")                                   \
    X(DSN_MAP_FIRST, "dsn_map_first", "R-DSN-3",                               \
      "the accepted map is read for a DSN outside the window")                 \
    X(DUP_PLACED, "dup_placed", "R-DSN-5", "a duplicate DSN is placed again")  \
    X(DUP_NOT_RECORDED, "dup_not_recorded", "R-DSN-5",                         \
      "a duplicate DSN is not recorded on its path")                           \
    X(DUP_RECORDED_ANYWHERE, "dup_recorded_anywhere", "R-VAL-2",               \
      "a duplicate is recorded however far from the path's highest PSN")       \
    X(REFUSED_RECORDED, "refused_recorded", "R-SACK-6",                        \
      "a packet refused with RNR is recorded on its path")                     \
    X(STREAM_BEFORE_DSN, "stream_before_dsn", "R-VAL-3",                       \
      "the stream is checked before the DSN is classified")                    \
    X(CLOSE_PSN_UNCHECKED, "close_psn_unchecked", "R-VAL-5",                   \
      "a CLOSE or CLOSE_ACK naming any DSN is taken")                          \
    X(BAD_SRC_ACCEPTED, "bad_src_accepted", "R-RX-2",                          \
      "packets from an address that is not the peer's are taken")              \
    X(CRC_UNCHECKED, "crc_unchecked", "R-RX-1",                                \
      "a packet with a wrong ICRC is taken")                                   \
    X(VERSION_IGNORED, "version_ignored", "R-RX-1",                            \
      "a packet of another version is taken")                                  \
    X(PAYLOAD_IGNORED, "payload_ignored", "R-HDR-6",                           \
      "a control packet with bytes after its headers is taken")                \
    /* ---- receiver: messages ---- */                                         \
    X(RNR_SILENT, "rnr_silent", "R-RETRY-3",                                   \
      "a SEND without a posted receive is dropped, no RNR NACK")               \
    X(NACK_CODE_SWAP, "nack_code_swap", "R-NACK-2",                            \
      "access violations are NACKed INVALID_REQUEST")                          \
    X(NACK_PSN_ZERO, "nack_psn_zero", "R-HDR-9",                               \
      "NACKs carry PSN 0, not the offending packet's")                         \
    X(FATAL_NACK_NO_ERROR, "fatal_nack_no_error", "R-NACK-6",                  \
      "the receiver stays CONNECTED after a fatal NACK")                       \
    X(BOUNDS_ACKED, "bounds_acked", "R-MSG-4",                                 \
      "a WRITE outside its region is acknowledged (not placed)")               \
    X(WRITE_RIGHT_UNCHECKED, "write_right_unchecked", "R-MSG-4",               \
      "a WRITE to a region without remote write is placed")                    \
    X(READ_RIGHT_LATE, "read_right_late", "R-MSG-9",                           \
      "a READ_REQ's key is checked only when the READ runs")                   \
    X(ZERO_LEN_UNCHECKED, "zero_len_unchecked", "R-MSG-2",                     \
      "a zero-length WRITE's key and address are not checked")                 \
    X(CHUNK_UNCHECKED, "chunk_unchecked", "R-MSG-1",                           \
      "a packet's offset and length are not checked")                          \
    X(MSG_FIELDS_UNCHECKED, "msg_fields_unchecked", "R-MSG-3",                 \
      "a packet's fields are not compared with its message's")                 \
    X(MSN_WINDOW_IGNORED, "msn_window_ignored", "R-MSG-14",                    \
      "an MSN beyond the window is processed")                                 \
    X(OLD_MSN_DROPPED, "old_msn_dropped", "R-MSG-14",                          \
      "a new DSN for a completed message is dropped, not NACKed")              \
    X(RECV_SMALL_RNR, "recv_small_rnr", "R-MSG-6",                             \
      "a SEND larger than its receive draws RNR, not INVALID_REQUEST")         \
    X(SSN_ORDER_OFF, "ssn_order_off", "R-MSG-16",                              \
      "receives are completed out of order")                                   \
    X(IMM_LOST, "imm_lost", "R-MSG-5",                                         \
      "the immediate value of a receive completion is 0")                      \
    X(MSN_READ_SHIFT, "msn_read_shift", "R-ORD-1",                             \
      "a READ request carries the MSN after its own")                          \
    X(RECV_EARLY, "recv_early", "R-ORD-3",                                     \
      "a message completes one packet before it is complete")                  \
    X(READ_RESP_UNKNOWN_FATAL, "read_resp_unknown_fatal", "R-VAL-3",           \
      "a READ_RESP naming no READ is NACKed, not dropped")                     \
    X(READ_RESP_LEN_DROPPED, "read_resp_len_dropped", "R-MSG-11",              \
      "a READ_RESP of the wrong length is dropped, not NACKed")                \
    X(ZERO_READ_UNANSWERED, "zero_read_unanswered", "R-MSG-2",                 \
      "a zero-length READ gets no READ_RESP")                                  \
    X(READ_BEFORE_PROOF, "read_before_proof", "R-VAL-7",                       \
      "READ data is sent before the peer proved it holds the connection")      \
    X(NO_PROOF_PROBE, "no_proof_probe", "R-VAL-7",                             \
      "no PROBE to obtain the proof a READ's data waits for")                  \
    /* ---- sender ---- */                                                     \
    X(PSN_SKIP, "psn_skip", "R-SACK-2", "every data packet skips a PSN")       \
    X(RETX_NO_FLAG, "retx_no_flag", "R-LOSS-3",                                \
      "retransmissions do not set RETX")                                       \
    X(TS_FROZEN, "ts_frozen", "R-HDR-10", "MTH ts does not advance")           \
    X(TS_NO_OFFSET, "ts_no_offset", "R-HDR-10",                                \
      "no random per-connection offset on ts")                                 \
    X(ACKREQ_NEVER, "ackreq_never", "R-ACK-1",                                 \
      "no ACKREQ on a message's last packet")                                  \
    X(ECN_NOT_ECT, "ecn_not_ect", "R-ENC-6", "packets are not ECN-capable")    \
    X(PORT_SHARED, "port_shared", "R-ENC-3",                                   \
      "every path uses path 0's source port")                                  \
    X(MSG_WINDOW_SENDER, "msg_window_sender", "R-MSG-14",                      \
      "the sender ignores the peer's message window")                          \
    X(MAX_RD_SENDER, "max_rd_sender", "R-MSG-13",                              \
      "the requester ignores max_rd")                                          \
    X(INIT_WINDOW_OFF, "init_window_off", "R-CC-4",                            \
      "no initial window before the first ACK")                                \
    X(CLOSE_PSN_ZERO, "close_psn_zero", "R-VAL-5",                             \
      "CLOSE and CLOSE_ACK carry 0, not the next DSN")                         \
    /* ---- sender: ACKs, loss, timers ---- */                                 \
    X(SACK_HOLES_WAIT, "sack_holes_wait", "R-LOSS-1",                          \
      "a hole below sack_high waits for the RTO")                              \
    X(SACK_HOLES_DELIVERED, "sack_holes_delivered", "R-LOSS-1",                \
      "a hole below sack_high is taken as delivered")                          \
    X(ECHO_UNCHECKED, "echo_unchecked", "R-VAL-1",                             \
      "an ACK's echo_ts is not checked against the PSN's ts")                  \
    X(BIT0_UNCHECKED, "bit0_unchecked", "R-VAL-1",                             \
      "an ACK with bit 0 clear is evidence")                                   \
    X(DSN_CUM_TRUSTED, "dsn_cum_trusted", "R-ACK-6",                           \
      "an ACK with a dsn_cum past snd_nxt is processed")                       \
    X(CE_OLD_ACK, "ce_old_ack", "R-ACK-7",                                     \
      "CE marks are taken from ACKs that are not newer")                       \
    X(CC_NO_TIMEOUT, "cc_no_timeout", "R-CC-1",                                \
      "an RTO does not shrink the window")                                     \
    X(ACKED_RESENT, "acked_resent", "R-DSN-8",                                 \
      "an acknowledged DSN is sent again")                                     \
    X(RETX_AFTER_NEW, "retx_after_new", "R-LOSS-6",                            \
      "new data goes before retransmissions")                                  \
    X(THIRD_ONCE, "third_once", "R-LOSS-7",                                    \
      "a DSN's third transmission goes out once")                              \
    X(COMPLETE_EARLY, "complete_early", "R-ORD-6",                             \
      "a WRITE completes with its last DSN unacknowledged")                    \
    X(READ_DONE_EARLY, "read_done_early", "R-ORD-6",                           \
      "a READ completes one response packet early")                            \
    X(RTO_NO_MIN, "rto_no_min", "R-RTT-4",                                     \
      "the RTO is not bounded by min_rto")                                     \
    X(RTO_NO_MAX, "rto_no_max", "R-RTT-4",                                     \
      "the RTO is not bounded by max_rto")                                     \
    X(SRTT_UNSMOOTHED, "srtt_unsmoothed", "R-RTT-3",                           \
      "every RTT sample replaces SRTT")                                        \
    X(RTT_ANY_ACK, "rtt_any_ack", "R-RTT-2",                                   \
      "an RTT sample is taken from every ACK")                                 \
    X(TLP_OFF, "tlp_off", "R-RTT-7", "no tail-loss probe")                     \
    X(NO_REPATH_ON_RTO, "no_repath_on_rto", "R-PATH-6",                        \
      "an RTO does not move the path to a new source port")                    \
    X(REPATH_KEEPS_PORT, "repath_keeps_port", "R-PATH-5",                      \
      "a re-path keeps the source port")                                       \
    X(DATA_ON_UNUSABLE, "data_on_unusable", "R-PATH-4",                        \
      "new data goes on paths that are not ACTIVE")                            \
    X(PROBE_NO_ACKREQ, "probe_no_ackreq", "R-PATH-7", "PROBEs lack ACKREQ")    \
    X(PROBE_NO_RETX, "probe_no_retx", "R-PATH-7",                              \
      "a PROBE after silence lacks RETX")                                      \
    X(READ_WATCH_OFF, "read_watch_off", "R-RETRY-6",                           \
      "no PROBE while READs wait for their data")                              \
    /* ---- sender: NACKs and retry limits ---- */                             \
    X(RESERVED_NACK_FATAL, "reserved_nack_fatal", "R-NACK-2",                  \
      "a NACK with a reserved syndrome is fatal")                              \
    X(NACK_STATUS_SWAP, "nack_status_swap", "R-NACK-5",                        \
      "REMOTE_ACCESS completes with REM_OP_ERR")                               \
    X(NACK_MSN_UNCHECKED, "nack_msn_unchecked", "R-VAL-6",                     \
      "a NACK's stream and MSN are not compared with its DSN's message")       \
    X(NACK_WR_DSN_UNCHECKED, "nack_wr_dsn_unchecked", "R-VAL-6",               \
      "a NACK matched by MSN needs no DSN of its work request")                \
    X(NACK_NO_RELEASE, "nack_no_release", "R-NACK-5",                          \
      "an RNR NACK does not release its transmission")                         \
    X(RNR_NO_WAIT, "rnr_no_wait", "R-RETRY-4",                                 \
      "an RNR NACK's delay is not waited for")                                 \
    X(RNR_UNCAPPED, "rnr_uncapped", "R-RETRY-4",                               \
      "an RNR NACK's delay is not capped at max_rto")                          \
    X(RNR_LIMIT_OFF, "rnr_limit_off", "R-RETRY-4", "rnr_retry is not applied") \
    X(RNR_COUNTED, "rnr_counted", "R-RETRY-1",                                 \
      "transmissions answered by RNR count toward the cap of 64")              \
    X(RETRY_LIMIT_OFF, "retry_limit_off", "R-RETRY-1",                         \
      "retry_cnt timeout rounds do not end the connection")                    \
    X(TX_CAP_OFF, "tx_cap_off", "R-RETRY-1",                                   \
      "a DSN is sent more than 64 times")                                      \
    X(BACKOFF_KEPT, "backoff_kept", "R-RETRY-1",                               \
      "progress does not reset the timeout rounds")                            \
    /* ---- connection ---- */                                                 \
    X(MTU_NOT_MIN, "mtu_not_min", "R-CONN-3",                                  \
      "the effective mtu is the own, not the smaller")                         \
    X(PARAMS_UNCHECKED, "params_unchecked", "R-CONN-4",                        \
      "the peer's parameters are not range-checked")                           \
    X(INIT_SEQ_FIXED, "init_seq_fixed", "R-CONN-5",                            \
      "the initial PSN, DSN and MSN are 0")                                    \
    X(CONN_ID_SEQUENTIAL, "conn_id_sequential", "R-SEC-2",                     \
      "connection ids are a counter")                                          \
    X(CLOSE_NO_RETRY, "close_no_retry", "R-CONN-8", "a CLOSE is sent once")    \
    X(CLOSE_NO_FLUSH, "close_no_flush", "R-CONN-9",                            \
      "a peer's CLOSE does not flush the connection")                          \
    X(CLOSED_SILENT, "closed_silent", "R-CONN-9",                              \
      "a CLOSE in CLOSED is not answered")                                     \
    X(CLOSE_ACK_CONNECTED, "close_ack_connected", "R-CONN-7",                  \
      "a CLOSE_ACK in CONNECTED closes the connection")                        \
    X(CLOSED_TAKES_DATA, "closed_takes_data", "R-CONN-11",                     \
      "data after the connection ended is taken")                              \
    X(NO_CONN_CLOSED_NACK, "no_conn_closed_nack", "R-CONN-11",                 \
      "data after the connection ended draws no CONN_CLOSED NACK")             \
    /* ---- secure modes ---- */                                               \
    X(TAG_UNCHECKED, "tag_unchecked", "R-AEAD-8",                              \
      "a sealed packet whose tag does not verify is taken")                    \
    X(REPLAY_ACCEPTED, "replay_accepted", "R-AEAD-9",                          \
      "a replayed sealed packet is taken")                                     \
    X(PLAIN_ACCEPTED, "plain_accepted", "R-AEAD-8",                            \
      "an unsealed packet on a secure connection is taken")                    \
    X(PROT_UNCHECKED, "prot_unchecked", "R-AEAD-2",                            \
      "a data packet's protection byte is not checked")                        \
    X(CSN_REUSED, "csn_reused", "R-AEAD-4",                                    \
      "control packets reuse one sequence number")                             \
    /* ---- ACKM: acknowledgements as path records ---- */                     \
    X(ACKM_TX_UNNEGOTIATED, "ackm_tx_unnegotiated", "R-ACKM-1",                \
      "ACKs wait as records and go as ACKMs without the feature")              \
    X(ACKM_RX_UNNEGOTIATED, "ackm_rx_unnegotiated", "R-ACKM-1",                \
      "an ACKM is taken on a connection without the feature")                  \
    X(ACKM_REC_UNBOUNDED, "ackm_rec_unbounded", "R-ACKM-4",                    \
      "a record waits for the next ACK however long it takes")                 \
    X(ACKM_REC_LEFT, "ackm_rec_left", "R-ACKM-4",                              \
      "an ACK sent while records wait leaves them waiting")                    \
    X(ACKM_OWN_RECORD, "ackm_own_record", "R-ACKM-2",                          \
      "an ACKM carries a record of its own path")                              \
    X(ACKM_PARTIAL_CHECK, "ackm_partial_check", "R-ACKM-5",                    \
      "a record that is no evidence is skipped, the ACKM acts")                \
    X(ACKM_PATH_UNCHECKED, "ackm_path_unchecked", "R-ACKM-5",                  \
      "a record of the ACKM's own path or a path named before is taken")       \
    X(ACKM_STALE_DROPS, "ackm_stale_drops", "R-ACKM-5",                        \
      "a stale record drops the whole ACKM")                                   \
    /* ---- the set-up exchange (process-wide) ---- */                         \
    X(CM_TAG_UNCHECKED, "cm_tag_unchecked", "R-CM-10",                         \
      "a HELLO whose tag does not verify is accepted")                         \
    X(CM_ADDR_UNCHECKED, "cm_addr_unchecked", "R-CM-8",                        \
      "a data address that is not the TCP peer's is accepted")                 \
    X(CM_MODE_WEAKEST, "cm_mode_weakest", "R-CM-9",                            \
      "the weakest common protection mode is chosen")                          \
    X(CM_PARAMS_UNCHECKED, "cm_params_unchecked", "R-CM-8",                    \
      "a HELLO's parameters are not range-checked")                            \
    X(CM_FEATURE_UNCHECKED, "cm_feature_unchecked", "R-CM-7",                  \
      "a HELLO requiring an unknown feature is accepted")

enum mroce_fault_id {
    MROCE_FID_NONE = 0,
#define MROCE_FAULT_ENUM(id, name, rule, what) MROCE_FID_##id,
    MROCE_FAULT_LIST(MROCE_FAULT_ENUM)
#undef MROCE_FAULT_ENUM
        MROCE_FID_COUNT
};

extern int mroce_fault_process;

#ifdef MROCE_FAULT_SITES
#ifdef MROCE_WITH_FAULTS
#define MROCE_FAULTS_BUILT 1
/* The one-line check at a fault's site. */
#define MROCE_FAULT(ctx, ID) ((ctx)->fault_id == MROCE_FID_##ID)
/* ... for code without a context (the CM). */
#define MROCE_PFAULT(ID) (mroce_fault_process == MROCE_FID_##ID)
#else
/* libmroce: no fault is ever set, the checks fold away */
#define MROCE_FAULTS_BUILT 0
#define MROCE_FAULT(ctx, ID) ((void)(ctx), false)
#define MROCE_PFAULT(ID) false
#endif
#endif

struct mroce_fault_info {
    const char *name; /* lower case, as the agent's "fault" request names it */
    const char *rule; /* the rule it violates */
    const char *what; /* the violation, in a sentence */
};

/* Whether this engine carries the fault table (the fault variant): in
 * libmroce the calls below find no fault and set none. */
bool mroce_fault_built(void);
/* Entry `id` (1..MROCE_FID_COUNT-1), or NULL (also for every id in
 * libmroce). */
const struct mroce_fault_info *mroce_fault_get(int id);
/* The id of a fault name. Errors: ENOENT (no such fault), ENOTSUP
 * (libmroce: no fault table). */
int mroce_fault_lookup(const char *name);
/* Sets fault `id` (0: none) on the context, replacing any other.
 * Errors: EINVAL (no such id), ENOTSUP (an id other than 0 in libmroce),
 * ENOMEM (the re-decode buffer of the receive faults). */
int mroce_ctx_set_fault_id(struct mroce_ctx *ctx, int id);
/* Sets fault `id` for code without a context (the CM), process-wide.
 * Not thread-safe; for test processes only. Errors: EINVAL, ENOTSUP (an
 * id other than 0 in libmroce). */
int mroce_fault_set_process(int id);
/* The receive faults that take a packet R-RX-1 drops (CRC_UNCHECKED,
 * VERSION_IGNORED, PAYLOAD_IGNORED): decodes a repaired copy in *buf
 * when the fault applies to err, else returns err unchanged. */
int eng_fault_redecode(struct mroce_ctx *ctx, const uint8_t **buf, size_t *len,
                       struct mroce_hdr *h, int err);

#endif
