/* The instruction counter; see perfctr.h. */
#define _GNU_SOURCE /* syscall */
#include "sim/perfctr.h"

#include <linux/perf_event.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

bool mroce_sim_perfctr_open(struct mroce_sim_perfctr *p)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof(a));
    a.size = sizeof(a);
    a.type = PERF_TYPE_HARDWARE;
    a.config = PERF_COUNT_HW_INSTRUCTIONS;
    a.disabled = 1;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    p->total = 0;
    p->fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
    return p->fd >= 0;
}

void mroce_sim_perfctr_start(struct mroce_sim_perfctr *p)
{
    if (p->fd >= 0)
        ioctl(p->fd, PERF_EVENT_IOC_ENABLE, 0);
}

void mroce_sim_perfctr_stop(struct mroce_sim_perfctr *p)
{
    if (p->fd >= 0)
        ioctl(p->fd, PERF_EVENT_IOC_DISABLE, 0);
}

int64_t mroce_sim_perfctr_read(const struct mroce_sim_perfctr *p)
{
    uint64_t v = 0;
    if (p->fd < 0 || read(p->fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
        return -1;
    return (int64_t)v;
}

void mroce_sim_perfctr_close(struct mroce_sim_perfctr *p)
{
    if (p->fd >= 0)
        close(p->fd);
    p->fd = -1;
}
