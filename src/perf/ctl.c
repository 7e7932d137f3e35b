/* mroce-perf control messages (see ctl.h). */
#include "perf/ctl.h"

#include <string.h>

#include "wire/be.h"

void perf_ctl_encode(const struct perf_ctl *c, uint8_t out[PERF_CTL_LEN])
{
    mroce_be32_put(out, PERF_CTL_MAGIC);
    mroce_be32_put(out + 4, c->cmd);
    for (int i = 0; i < PERF_CTL_NV; i++)
        mroce_be64_put(out + 8 + 8 * i, c->v[i]);
}

int perf_ctl_decode(const uint8_t *buf, int len, struct perf_ctl *c)
{
    if (len != PERF_CTL_LEN || mroce_be32_get(buf) != PERF_CTL_MAGIC)
        return MROCE_EPROTO;
    memset(c, 0, sizeof(*c));
    c->cmd = mroce_be32_get(buf + 4);
    if (c->cmd < PERF_CMD_CONFIG || c->cmd > PERF_CMD_QUIT)
        return MROCE_EPROTO;
    for (int i = 0; i < PERF_CTL_NV; i++)
        c->v[i] = mroce_be64_get(buf + 8 + 8 * i);
    return 0;
}
