/* CRC32C (Castagnoli), the ICRC of every MetaRoCE packet (R-CRC-1). */
#ifndef MROCE_WIRE_CRC32C_H
#define MROCE_WIRE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continues a CRC32C: pass 0 to start, the previous result to chain.
 * Init and final xor (0xFFFFFFFF) are applied inside, so
 * crc32c(crc32c(0, a), b) == crc32c(0, a || b). */
uint32_t mroce_crc32c(uint32_t crc, const void *buf, size_t len);

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
