
/*
 * fairgate: token sampling for the batcher: a request's parameters, its
 * own random generator, and the choice of a token from a row of logits.
 *
 * Each request carries a generator seeded from its seed, and every sampled
 * token draws exactly one number from it, greedy or not: the token at
 * output index i depends only on the seed, i and the logits, so a request
 * samples the same tokens alone or in any batch, and after a preemption.
 *
 * The generator is the tree's one (fg_rand.h): a seed names the same
 * sampled text on every machine.
 */

#ifndef _FG_SAMPLE_H_INCLUDED_
#define _FG_SAMPLE_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_kernels.h"
#include "fg_rand.h"


#define FG_SAMPLE_MAX_TEMPERATURE  100.0f


typedef struct {
    float       temperature;    /* <= 0: greedy */
    uint32_t    top_k;          /* 0: the whole vocabulary */
    float       top_p;          /* (0, 1]; 1: no nucleus cut */
    uint64_t    seed;
} fg_sample_params_t;


/* greedy: temperature 0, no cut */
void fg_sample_params_init(fg_sample_params_t *p);

/* 0, or -1 with the offending parameter named in err */
int fg_sample_params_check(const fg_sample_params_t *p, char *err,
    size_t errlen);

/*
 * A token id from n logits (not changed); cand is scratch of n entries.
 * Draws one number from rng whatever the parameters.
 */
int32_t fg_sample(const fg_sample_params_t *p, fg_rand_t *rng,
    const float *logits, uint32_t n, fg_k_cand_t *cand);


#endif /* _FG_SAMPLE_H_INCLUDED_ */
