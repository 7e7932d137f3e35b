/* The fault table: named deliberate violations for the compliance suite's
 * mutation run (fault.h). Sans-I/O like the rest of the engine. */
#include <string.h>

#include "engine/eng.h"
#include "engine/fault.h"

static const struct mroce_fault_info fault_tab[MROCE_FID_COUNT] = {
    [MROCE_FID_PLACE_FLIP] = {"place_flip", "R-MSG-4",
                              "the first payload byte the context places is "
                              "flipped"},
};

const struct mroce_fault_info *mroce_fault_get(int id)
{
    if (id <= MROCE_FID_NONE || id >= MROCE_FID_COUNT)
        return NULL;
    return &fault_tab[id];
}

int mroce_fault_lookup(const char *name)
{
    for (int id = 1; id < MROCE_FID_COUNT; id++)
        if (strcmp(fault_tab[id].name, name) == 0)
            return id;
    return MROCE_ENOENT;
}

int mroce_ctx_set_fault_id(struct mroce_ctx *ctx, int id)
{
    if (id < MROCE_FID_NONE || id >= MROCE_FID_COUNT)
        return MROCE_EINVAL;
    ctx->fault = id == MROCE_FID_PLACE_FLIP ? MROCE_FAULT_PLACE_FLIP : 0;
    return 0;
}
