/* Seeded random numbers and hashing for the simulator.
 *
 * Every object that makes a random choice (a link's loss, a switch's ECN
 * marking) owns one struct mroce_sim_rng seeded from the topology seed and
 * its own identity, so adding an object or reordering calls in one object
 * never changes another object's draws. splitmix64 (Steele, Lea, Flood,
 * "Fast splittable pseudorandom number generators", OOPSLA 2014): one add
 * and a mix per draw, passes BigCrush, and any 64-bit seed is a good seed.
 */
#ifndef MROCE_SIM_RNG_H
#define MROCE_SIM_RNG_H

#include <stdbool.h>
#include <stdint.h>

struct mroce_sim_rng {
    uint64_t s;
};

/* The splitmix64 finalizer: a bijective 64-bit mixer, also used as the
 * flow hash so that nearby ports land on unrelated values. */
static inline uint64_t mroce_sim_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Derives an independent seed for object `id` from a parent seed. */
static inline uint64_t mroce_sim_seed(uint64_t parent, uint64_t id)
{
    return mroce_sim_mix64(parent ^
                           mroce_sim_mix64(id + 0x9e3779b97f4a7c15ull));
}

static inline void mroce_sim_rng_init(struct mroce_sim_rng *r, uint64_t seed)
{
    r->s = seed;
}

static inline uint64_t mroce_sim_rng_next(struct mroce_sim_rng *r)
{
    r->s += 0x9e3779b97f4a7c15ull;
    return mroce_sim_mix64(r->s);
}

/* Uniform in [0, 1) with 53 random bits. */
static inline double mroce_sim_rng_unit(struct mroce_sim_rng *r)
{
    return (double)(mroce_sim_rng_next(r) >> 11) * 0x1.0p-53;
}

/* True with probability p; never draws when p <= 0, so a lossless link
 * costs nothing and leaves its stream untouched. */
static inline bool mroce_sim_rng_chance(struct mroce_sim_rng *r, double p)
{
    if (p <= 0.0)
        return false;
    return p >= 1.0 || mroce_sim_rng_unit(r) < p;
}

#endif
