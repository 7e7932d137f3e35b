/* Reading fields out of a fuzzer's input: big-endian, and zeros once the
 * input is used up, so every input is a valid (if short) record. Shared
 * by all the fuzzers in this folder. */
#ifndef MROCE_TESTS_FUZZ_RD_H
#define MROCE_TESTS_FUZZ_RD_H

#include <stddef.h>
#include <stdint.h>

struct rd {
    const uint8_t *p;
    size_t n;
};

static inline uint8_t rd_u8(struct rd *r)
{
    if (!r->n)
        return 0;
    r->n--;
    return *r->p++;
}

/* The next `bytes` (<= 8) bytes as one big-endian number. */
static inline uint64_t rd_n(struct rd *r, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = v << 8 | rd_u8(r);
    return v;
}

static inline uint16_t rd_u16(struct rd *r)
{
    return (uint16_t)rd_n(r, 2);
}

static inline uint32_t rd_u32(struct rd *r)
{
    return (uint32_t)rd_n(r, 4);
}

static inline uint64_t rd_u64(struct rd *r)
{
    return rd_n(r, 8);
}

#endif
