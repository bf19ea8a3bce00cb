
/*
 * fairgate: seeded pseudo-random numbers, one generator for the whole tree.
 *
 * splitmix64 (Steele, Lea and Flood, 2014): a 64-bit state, fast, and the
 * same sequence on every machine and libc (rand() and random() differ
 * between them), so a seed names one sampled text, one trace or one set of
 * random weights wherever it runs.
 */

#ifndef _FG_RAND_H_INCLUDED_
#define _FG_RAND_H_INCLUDED_


#include <stdint.h>


typedef struct {
    uint64_t  state;
} fg_rand_t;


static inline uint64_t
fg_rand_next(fg_rand_t *r)
{
    uint64_t  z;

    z = (r->state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;

    return z ^ (z >> 31);
}


/* the sequence that starts at seed: its first number is splitmix64's own */
static inline void
fg_rand_seed(fg_rand_t *r, uint64_t seed)
{
    r->state = seed;
}


/* independent streams for one seed: stream k of seed s */
static inline void
fg_rand_stream(fg_rand_t *r, uint64_t seed, uint64_t stream)
{
    fg_rand_t  mix;

    mix.state = seed;
    r->state = fg_rand_next(&mix) ^ (stream * 0xd1b54a32d192ed03ULL);
    (void) fg_rand_next(r);
}


/* uniform in [0, 1), 53 bits */
static inline double
fg_rand_double(fg_rand_t *r)
{
    return (double) (fg_rand_next(r) >> 11) * 0x1.0p-53;
}


/* uniform integer in [lo, hi] */
static inline uint64_t
fg_rand_range(fg_rand_t *r, uint64_t lo, uint64_t hi)
{
    return lo + fg_rand_next(r) % (hi - lo + 1);
}


#endif /* _FG_RAND_H_INCLUDED_ */
