/* The fault table: named deliberate violations for the compliance suite's
 * mutation run (fault.h). Sans-I/O like the rest of the engine. Built
 * twice: in libmroce (MROCE_FAULTS_BUILT 0) every call finds or sets no
 * fault and the table is dropped as unused; the fault variant linked into
 * mroce-agent has it. */
#include <string.h>

#include "engine/eng.h"
#include "engine/fault.h"
#include "wire/aead.h"
#include "wire/be.h"
#include "wire/crc32c.h"

static const struct mroce_fault_info fault_tab[MROCE_FID_COUNT] = {
#define FAULT_ENTRY(id, n, r, w) [MROCE_FID_##id] = {n, r, w},
    MROCE_FAULT_LIST(FAULT_ENTRY)
#undef FAULT_ENTRY
};

int mroce_fault_process;

bool mroce_fault_built(void)
{
    return MROCE_FAULTS_BUILT;
}

const struct mroce_fault_info *mroce_fault_get(int id)
{
    if (!MROCE_FAULTS_BUILT || id <= MROCE_FID_NONE || id >= MROCE_FID_COUNT)
        return NULL;
    return &fault_tab[id];
}

int mroce_fault_lookup(const char *name)
{
    if (!MROCE_FAULTS_BUILT)
        return MROCE_ENOTSUP;
    for (int id = 1; id < MROCE_FID_COUNT; id++)
        if (strcmp(fault_tab[id].name, name) == 0)
            return id;
    return MROCE_ENOENT;
}

static bool fault_redecodes(int id)
{
    return id == MROCE_FID_CRC_UNCHECKED || id == MROCE_FID_VERSION_IGNORED ||
           id == MROCE_FID_PAYLOAD_IGNORED;
}

int mroce_ctx_set_fault_id(struct mroce_ctx *ctx, int id)
{
    if (id < MROCE_FID_NONE || id >= MROCE_FID_COUNT)
        return MROCE_EINVAL;
    if (!MROCE_FAULTS_BUILT && id != MROCE_FID_NONE)
        return MROCE_ENOTSUP;
    if (fault_redecodes(id) && !ctx->fault_buf &&
        !(ctx->fault_buf = eng_alloc(ctx, eng_ctx_max_pkt(ctx) + 64)))
        return MROCE_ENOMEM;
    ctx->fault_id = (uint16_t)id;
    ctx->fault = id == MROCE_FID_PLACE_FLIP ? MROCE_FAULT_PLACE_FLIP : 0;
    return 0;
}

int mroce_fault_set_process(int id)
{
    if (id < MROCE_FID_NONE || id >= MROCE_FID_COUNT)
        return MROCE_EINVAL;
    if (!MROCE_FAULTS_BUILT && id != MROCE_FID_NONE)
        return MROCE_ENOTSUP;
    mroce_fault_process = id;
    return 0;
}

/* The packet as R-RX-1 would have taken it: version 1, a right ICRC, no
 * bytes after the headers of a type without payload. */
int eng_fault_redecode(struct mroce_ctx *ctx, const uint8_t **buf, size_t *len,
                       struct mroce_hdr *h, int err)
{
    bool crc = err == MROCE_WIRE_ECRC && MROCE_FAULT(ctx, CRC_UNCHECKED);
    bool ver = err == MROCE_WIRE_EVERSION && MROCE_FAULT(ctx, VERSION_IGNORED);
    bool pay = err == MROCE_WIRE_EPAYLOAD && MROCE_FAULT(ctx, PAYLOAD_IGNORED);
    if (!(crc || ver || pay) || *len > eng_ctx_max_pkt(ctx) + 64)
        return err;
    uint8_t *b = ctx->fault_buf;
    size_t n = *len;
    memcpy(b, *buf, n);
    if (ver)
        b[0] = (uint8_t)((MROCE_WIRE_VERSION << 4) | (b[0] & 0x0F));
    if (pay)
        n = (size_t)mroce_wire_op_info(b[1])->hdr_len + MROCE_ICRC_LEN;
    if (!(b[0] & MROCE_HF_SEAL))
        mroce_be32_put(b + n - MROCE_ICRC_LEN,
                       mroce_crc32c(0, b, n - MROCE_ICRC_LEN));
    int rc = mroce_wire_decode(b, n, h);
    if (!rc) {
        *buf = b;
        *len = n;
    }
    return rc;
}
