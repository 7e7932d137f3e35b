/* Typed big-endian accessors: protocol code never pokes bytes (R-HDR-1). */
#ifndef MROCE_WIRE_BE_H
#define MROCE_WIRE_BE_H

#include <stdint.h>

static inline uint16_t mroce_be16_get(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}
static inline uint32_t mroce_be32_get(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}
static inline uint64_t mroce_be64_get(const uint8_t *p)
{
    return (uint64_t)mroce_be32_get(p) << 32 | mroce_be32_get(p + 4);
}
static inline void mroce_be16_put(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}
static inline void mroce_be32_put(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
static inline void mroce_be64_put(uint8_t *p, uint64_t v)
{
    mroce_be32_put(p, (uint32_t)(v >> 32));
    mroce_be32_put(p + 4, (uint32_t)v);
}

#endif
