
/*
 * fairgate: token sampling for the batcher: a request's parameters, its
 * own random generator, and the choice of a token from a row of logits.
 *
 * Each request carries a generator seeded from its seed, and every sampled
 * token draws exactly one number from it, greedy or not: the token at
 * output index i depends only on the seed, i and the logits, so a request
 * samples the same tokens alone or in any batch, and after a preemption.
 *
 * The generator is SplitMix64 (Steele, Lea and Flood, 2014): one 64-bit
 * state, an additive step and a mixing function; small, fast, and good
 * enough to draw the uniform numbers sampling needs.
 */

#ifndef _FG_SAMPLE_H_INCLUDED_
#define _FG_SAMPLE_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_kernels.h"


#define FG_SAMPLE_MAX_TEMPERATURE  100.0f


typedef struct {
    float       temperature;    /* <= 0: greedy */
    uint32_t    top_k;          /* 0: the whole vocabulary */
    float       top_p;          /* (0, 1]; 1: no nucleus cut */
    uint64_t    seed;
} fg_sample_params_t;


typedef struct {
    uint64_t    state;
} fg_rng_t;


/* greedy: temperature 0, no cut */
void fg_sample_params_init(fg_sample_params_t *p);

/* 0, or -1 with the offending parameter named in err */
int fg_sample_params_check(const fg_sample_params_t *p, char *err,
    size_t errlen);

void fg_rng_seed(fg_rng_t *r, uint64_t seed);
uint64_t fg_rng_next(fg_rng_t *r);

/* uniform in [0, 1), 53 bits */
double fg_rng_uniform(fg_rng_t *r);

/*
 * A token id from n logits (not changed); cand is scratch of n entries.
 * Draws one number from rng whatever the parameters.
 */
int32_t fg_sample(const fg_sample_params_t *p, fg_rng_t *rng,
    const float *logits, uint32_t n, fg_k_cand_t *cand);


#endif /* _FG_SAMPLE_H_INCLUDED_ */
