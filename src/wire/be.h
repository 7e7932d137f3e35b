/* Typed big-endian accessors: protocol code never pokes bytes (R-HDR-1).
 *
 * Each field is one (unaligned) load or store and one byte swap. Written
 * byte by byte, GCC merged the loads but not the stores (a byte store
 * may alias the next field's source): 2-3 instructions a byte in every
 * header and ACKM record written. */
#ifndef MROCE_WIRE_BE_H
#define MROCE_WIRE_BE_H

#include <stdint.h>
#include <string.h>

#if !defined(__BYTE_ORDER__) || !defined(__ORDER_LITTLE_ENDIAN__)
#error "be.h needs the compiler's __BYTE_ORDER__ (GCC, Clang)"
#endif
#define MROCE_BE_SWAP (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)

static inline uint16_t mroce_be16_get(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof(v));
    return MROCE_BE_SWAP ? __builtin_bswap16(v) : v;
}
static inline uint32_t mroce_be32_get(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return MROCE_BE_SWAP ? __builtin_bswap32(v) : v;
}
static inline uint64_t mroce_be64_get(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return MROCE_BE_SWAP ? __builtin_bswap64(v) : v;
}
static inline void mroce_be16_put(uint8_t *p, uint16_t v)
{
    v = MROCE_BE_SWAP ? __builtin_bswap16(v) : v;
    memcpy(p, &v, sizeof(v));
}
static inline void mroce_be32_put(uint8_t *p, uint32_t v)
{
    v = MROCE_BE_SWAP ? __builtin_bswap32(v) : v;
    memcpy(p, &v, sizeof(v));
}
static inline void mroce_be64_put(uint8_t *p, uint64_t v)
{
    v = MROCE_BE_SWAP ? __builtin_bswap64(v) : v;
    memcpy(p, &v, sizeof(v));
}

#endif
