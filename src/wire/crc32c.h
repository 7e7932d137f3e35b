/* CRC32C (Castagnoli), the ICRC of every MetaRoCE packet (R-CRC-1). */
#ifndef MROCE_WIRE_CRC32C_H
#define MROCE_WIRE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* An implementation: the CRC register in and out (not inverted). */
typedef uint32_t mroce_crc32c_fn(uint32_t c, const void *buf, size_t len);
/* The best one the CPU has: NULL until mroce_crc32c_pick sets it (the
 * first mroce_crc32c). Relaxed atomics: threads that race on a first
 * call all store the same. */
extern mroce_crc32c_fn *mroce_crc32c_best;
mroce_crc32c_fn *mroce_crc32c_pick(void);

/* Continues a CRC32C: pass 0 to start, the previous result to chain.
 * Init and final xor (0xFFFFFFFF) are applied inside, so
 * crc32c(crc32c(0, a), b) == crc32c(0, a || b). Inline, so that every
 * packet does not ask the CPU for its features again: picking the
 * implementation cost ~14 instructions a call, every packet sent and
 * received (a load now). Thread-safe. */
static inline __attribute__((always_inline)) uint32_t
mroce_crc32c(uint32_t crc, const void *buf, size_t len)
{
    mroce_crc32c_fn *f = __atomic_load_n(&mroce_crc32c_best, __ATOMIC_RELAXED);
    if (!f)
        f = mroce_crc32c_pick();
    return ~f(~crc, buf, len);
}

/* The same value, for data that is likely in no cache (a payload read
 * where it lies in a memory region, mroce_ctx_tx_ref): it first loads
 * one byte of every cache line, loads that depend on nothing, so their
 * misses overlap; the folding loop's dependent chains would take them a
 * few at a time. 4 KiB from DRAM: ~185 ns instead of ~455 (and ~240 for
 * a memcpy to a hot buffer plus the CRC there); ~30 ns slower than
 * mroce_crc32c on data in L1. */
uint32_t mroce_crc32c_cold(uint32_t crc, const void *buf, size_t len);

/* The implementations, slowest first (crc32c.c says which does what). */
enum {
    MROCE_CRC32C_TABLE, /* byte-wise table, any CPU */
    MROCE_CRC32C_SSE42, /* x86-64 CRC32 instruction, three lanes */
    MROCE_CRC32C_FOLD,  /* x86-64 AVX2 + VPCLMULQDQ folding with it */
};

/* mroce_crc32c computed by implementation `impl`, or by the best one
 * below it that the CPU has; *ran (if not NULL) says which ran. For
 * tests and benchmarks: mroce_crc32c picks the best one itself. */
uint32_t mroce_crc32c_impl(int impl, uint32_t crc, const void *buf, size_t len,
                           int *ran);

#endif
