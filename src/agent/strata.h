/* Stratified sampling of a stream of bytes (allocated or copied bytes of one thread). The stream
 * is cut into windows of W bytes and each window has one sampling point at a uniformly random
 * offset, so every byte has probability 1/W of carrying a point whatever the program's pattern
 * (no aliasing with a loop's period, unlike a fixed threshold). Bytes that carry k points stand
 * for k x W bytes: unbiased for any subset of the stream (a line), and the points of n bytes
 * number n/W to within one, so the total stays within W of the truth. Events of W bytes or more
 * are not part of the stream: each stands for its exact size.
 * Header-only and free of libc calls but for the seed: used on the hooks' fast path. */
#ifndef SCRY_AGENT_STRATA_H
#define SCRY_AGENT_STRATA_H

#include <stdint.h>

struct ag_strata {
    int64_t until; /* bytes before the next point (<= 0: the slow path decides) */
    uint64_t tail; /* bytes from that point to the end of its window; 0: no window yet */
};

/* xorshift64*: a few instructions, no lock; the state must not be 0. */
static inline uint64_t ag_rng_next(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* A state from any 64 bits (splitmix64's finaliser), never 0. */
static inline uint64_t ag_rng_seed(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return z ? z : 0x853C49E6748FEA9BULL;
}

/* Uniform in [0, w). */
static inline uint64_t ag_rng_below(uint64_t *state, uint64_t w)
{
    return (uint64_t)(((unsigned __int128)ag_rng_next(state) * w) >> 64);
}

/* The slow path: the last bytes took s->until to 0 or below, so they carry one point or more;
 * returns how many, and places the next point. */
static inline uint64_t ag_strata_points(struct ag_strata *s, uint64_t *rng, uint64_t w)
{
    uint64_t k = 0;
    if (!s->tail) { /* the stream's first window starts with these bytes */
        uint64_t o = ag_rng_below(rng, w);
        s->until += (int64_t)o + 1;
        s->tail = w - o;
    }
    while (s->until <= 0) {
        uint64_t o = ag_rng_below(rng, w);
        k++;
        s->until += (int64_t)(s->tail + o);
        s->tail = w - o;
    }
    return k;
}

/* What n bytes of the stream stand for: n itself at or above the window, else the window per
 * point they carry (usually none: the fast path is a subtraction and a compare). */
static inline uint64_t ag_strata_bytes(struct ag_strata *s, uint64_t *rng, uint64_t n,
                                       uint64_t w)
{
    if (n >= w)
        return n;
    if ((s->until -= (int64_t)n) > 0)
        return 0;
    return ag_strata_points(s, rng, w) * w;
}

#endif
