/* Packet traces to pcap; see trace.h. */
#include "sim/trace.h"

#include <stdlib.h>

#include "io/pcap/pcap.h"
#include "sim/event.h"

struct mroce_sim_trace {
    struct mroce_pcap *pcap;
    uint64_t errors;
};

int mroce_sim_trace_open(const char *path, struct mroce_sim_trace **out)
{
    if (!out)
        return MROCE_EINVAL;
    *out = NULL;
    struct mroce_sim_trace *tr = calloc(1, sizeof(*tr));
    if (!tr)
        return MROCE_ENOMEM;
    int rc = mroce_pcap_open(path, &tr->pcap);
    if (rc < 0) {
        free(tr);
        return rc;
    }
    *out = tr;
    return 0;
}

static void trace_tap(void *ud, const struct mroce_sim_pkt *p, uint64_t now)
{
    struct mroce_sim_trace *tr = ud;
    if (mroce_pcap_write(tr->pcap, now / MROCE_SIM_PS_PER_NS, &p->meta, p->data,
                         p->len) < 0)
        tr->errors++;
}

void mroce_sim_trace_add_link(struct mroce_sim_trace *tr,
                              struct mroce_sim_link *l)
{
    mroce_sim_link_set_tap(l, trace_tap, tr);
}

uint64_t mroce_sim_trace_count(const struct mroce_sim_trace *tr)
{
    return mroce_pcap_count(tr->pcap);
}

uint64_t mroce_sim_trace_errors(const struct mroce_sim_trace *tr)
{
    return tr->errors;
}

int mroce_sim_trace_close(struct mroce_sim_trace *tr)
{
    if (!tr)
        return 0;
    int rc = mroce_pcap_close(tr->pcap);
    if (tr->errors)
        rc = MROCE_EINVAL;
    free(tr);
    return rc;
}
