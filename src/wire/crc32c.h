/* CRC32C (Castagnoli), the ICRC of every MetaRoCE packet (R-CRC-1). */
#ifndef MROCE_WIRE_CRC32C_H
#define MROCE_WIRE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continues a CRC32C: pass 0 to start, the previous result to chain.
 * Init and final xor (0xFFFFFFFF) are applied inside, so
 * crc32c(crc32c(0, a), b) == crc32c(0, a || b). */
uint32_t mroce_crc32c(uint32_t crc, const void *buf, size_t len);

#endif
