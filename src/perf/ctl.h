/* mroce-perf control messages over the CM's TCP channel: the test
 * configuration (HELLO blob), buffer locations and RUN/GO/END/RESULT/QUIT,
 * all big-endian, fixed size. */
#ifndef MROCE_PERF_CTL_H
#define MROCE_PERF_CTL_H

#include <stdint.h>

#include "perf/perf.h"

#define PERF_CTL_MAGIC 0x4D505246u /* "MPRF" */
#define PERF_CTL_LEN 72

enum perf_cmd {
    PERF_CMD_CONFIG = 1, /* v: test, size, iters, duration_ns, depth, flags */
    PERF_CMD_MR,         /* v: addr, rkey, len */
    PERF_CMD_RUN,        /* v: size */
    PERF_CMD_GO,
    PERF_CMD_END,    /* v: messages the active side completed */
    PERF_CMD_RESULT, /* v: check+1, retx, ecn_ce, tx_data, rto, imp_lost */
    PERF_CMD_QUIT,
};

#define PERF_CTL_NV 8
struct perf_ctl {
    uint32_t cmd;
    uint64_t v[PERF_CTL_NV];
};

void perf_ctl_encode(const struct perf_ctl *c, uint8_t out[PERF_CTL_LEN]);
/* 0, or EPROTO if the length, magic or command is wrong. */
int perf_ctl_decode(const uint8_t *buf, int len, struct perf_ctl *c);

#endif
