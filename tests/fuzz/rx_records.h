/* The input format of rx_fuzz, shared with the seed generator.
 *
 * An input is a sequence of records; each is independent of the bytes of
 * the others, so a mutation inside one record does not reshape the rest:
 *
 *   record := sel len body[len]            (len: 1 byte)
 *   record := sel lenhi lenlo body[len]    (RX_RAW and RX_MUTATE only)
 *
 * sel % 16 picks the kind through rx_kind_of_sel (the common kinds take
 * several slots). A body shorter than its kind needs reads as zeros, and
 * zero fields mean "the next in-order value" wherever a field is a
 * sequence number, so short records build well-formed packets. */
#ifndef MROCE_TESTS_FUZZ_RX_RECORDS_H
#define MROCE_TESTS_FUZZ_RX_RECORDS_H

#include <stdint.h>

enum rx_kind {
    RX_DATA_MSG,  /* a whole message from the peer: WRITE..READ_REQ */
    RX_DATA_PKT,  /* one data packet, every field fuzzer-chosen */
    RX_ACK_ALL,   /* ACK what the engine sent, per path (with tweaks) */
    RX_ACK_RAW,   /* one ACK with fuzzer fields near the engine's state */
    RX_NACK,      /* NACK one of the engine's recent data packets */
    RX_READ_RESP, /* answer one of the engine's READ_REQs */
    RX_PROBE,     /* a PROBE */
    RX_CLOSE,     /* CLOSE or CLOSE_ACK */
    RX_RAW,       /* raw bytes, optionally with version/conn/CRC fixed up */
    RX_MUTATE,    /* another record's first packet, bytes overwritten */
    RX_TIME,      /* advance the clock, run the timers */
    RX_API,       /* post a WR or receive, path enable/repath, ECN and
                     source of the following packets, disconnect */
};

static const uint8_t rx_kind_of_sel[16] = {
    RX_DATA_MSG, RX_DATA_MSG, RX_DATA_PKT, RX_DATA_PKT,  RX_ACK_ALL, RX_ACK_ALL,
    RX_ACK_RAW,  RX_NACK,     RX_NACK,     RX_READ_RESP, RX_PROBE,   RX_CLOSE,
    RX_RAW,      RX_MUTATE,   RX_TIME,     RX_API,
};

/* RX_API: body[0] % RX_API_N is the action. */
enum rx_api_action {
    RX_API_WRITE,
    RX_API_WRITE_IMM,
    RX_API_SEND,
    RX_API_SEND_IMM,
    RX_API_READ,
    RX_API_RECV,
    RX_API_PATH,
    RX_API_META,  /* body[1]: ECN in bits 0-1, wrong source address bit 2 */
    RX_API_REREG, /* deregister region body[1] % 5, register it elsewhere */
    RX_API_DISCONNECT, /* only with the magic second byte below */
    RX_API_END_INPUT,  /* idem: what runs between two inputs (timers,
                          checks, top-up); joins inputs in replay files */
    RX_API_N,
};
#define RX_API_DISCONNECT_MAGIC 0xD1
#define RX_API_END_INPUT_MAGIC 0xE0

/* RX_DATA_MSG body: op (% 5: WRITE, SEND, READ_REQ, WRITE_IMM,
 * SEND_IMM), stream, path, length, msn, ssn, dsn, imm[4], target
 * (region, offset[2]), flags, drop index. RX_READ_RESP body: which READ,
 * flags, drop index, path, dsn. Flags of both: */
#define RX_MF_REVERSE 0x01 /* packets in reverse order */
#define RX_MF_DROP 0x02    /* leave one packet out */
#define RX_MF_DUP 0x04     /* send the first one twice */
#define RX_MF_SPREAD 0x08  /* one path after the other */
#define RX_MF_RETX 0x10    /* RETX flag */
#define RX_MF_ACKREQ 0x20  /* ACKREQ on every packet */

/* RX_ACK_ALL body: flags, path mask, then the tweaks the flags ask for. */
#define RX_AF_ONLY_MASKED 0x01 /* only the paths in the mask */
#define RX_AF_CUM 0x02         /* move dsn_cum */
#define RX_AF_HOLES 0x04       /* clear some SACK bits */
#define RX_AF_ECHO 0x08        /* any echo_ts */
#define RX_AF_CE 0x10          /* every packet CE-marked */
#define RX_AF_RATE 0x20        /* a rate hint */
#define RX_AF_HIGH 0x40        /* an older sack_high */
/* RX_AF_ACKM: one ACKM, the first path's ACK carrying the others as
 * records; then a byte of RX_AM_* and a 16-bit hold (8 ns units) per
 * path. */
#define RX_AF_ACKM 0x80
/* RX_AF_ACKM's byte: bend the records the sender must validate. */
#define RX_AM_DUP 0x01   /* the last record repeats the first's path */
#define RX_AM_SELF 0x02  /* the first record names the MTH path */
#define RX_AM_FAR 0x04   /* the last record's path is out of range */
#define RX_AM_COUNT 0x08 /* the count byte is one too many */

/* The first sel value of each kind (what the seed generator writes). */
static inline uint8_t rx_sel_of_kind(int kind)
{
    for (uint8_t s = 0; s < 16; s++)
        if (rx_kind_of_sel[s] == kind)
            return s;
    return 15;
}

#endif
