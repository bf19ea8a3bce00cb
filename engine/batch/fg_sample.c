
/*
 * fairgate: token sampling, and the seeds of a request's n choices.
 */


#include <math.h>
#include <stdio.h>

#include "fg_batch.h"


void
fg_sample_params_init(fg_sample_params_t *p)
{
    p->temperature = 0.0f;
    p->top_k = 0;
    p->top_p = 1.0f;
    p->seed = 0;
    p->bias = NULL;
    p->n_bias = 0;
    p->frequency = 0.0f;
    p->presence = 0.0f;
    p->repetition = 1.0f;
    p->min_p = 0.0f;
    p->logprobs = 0;
    p->top_logprobs = 0;
}


/* the adjustments' and the log-probabilities' parameters */
static int
fg_sample_params_check_more(const fg_sample_params_t *p, char *err,
    size_t errlen)
{
    uint32_t  i;

    if (!(p->frequency >= -FG_SAMPLE_MAX_PENALTY
          && p->frequency <= FG_SAMPLE_MAX_PENALTY)
        || !(p->presence >= -FG_SAMPLE_MAX_PENALTY
             && p->presence <= FG_SAMPLE_MAX_PENALTY))
    {
        snprintf(err, errlen, "frequency or presence penalty %g, %g is not "
                 "in [-%g, %g]", (double) p->frequency, (double) p->presence,
                 (double) FG_SAMPLE_MAX_PENALTY,
                 (double) FG_SAMPLE_MAX_PENALTY);
        return -1;
    }

    if (!(p->repetition >= 0.0f
          && p->repetition <= FG_SAMPLE_MAX_REPETITION))
    {
        snprintf(err, errlen, "repetition penalty %g is not in (0, %g]",
                 (double) p->repetition, (double) FG_SAMPLE_MAX_REPETITION);
        return -1;
    }

    if (!(p->min_p >= 0.0f && p->min_p <= 1.0f)) {
        snprintf(err, errlen, "min_p %g is not in [0, 1]", (double) p->min_p);
        return -1;
    }

    if (p->top_logprobs > FG_SAMPLE_MAX_TOP) {
        snprintf(err, errlen, "top_logprobs %u is more than %u",
                 p->top_logprobs, FG_SAMPLE_MAX_TOP);
        return -1;
    }

    for (i = 0; i < p->n_bias; i++) {
        if (!(p->bias[i].bias >= -FG_SAMPLE_MAX_BIAS
              && p->bias[i].bias <= FG_SAMPLE_MAX_BIAS))
        {
            snprintf(err, errlen, "logit bias %g of token %d is not in "
                     "[-%g, %g]", (double) p->bias[i].bias, p->bias[i].id,
                     (double) FG_SAMPLE_MAX_BIAS, (double) FG_SAMPLE_MAX_BIAS);
            return -1;
        }
    }

    return 0;
}


int
fg_sample_params_check(const fg_sample_params_t *p, char *err,
    size_t errlen)
{
    /* written so that NaN fails each test */
    if (!(p->temperature >= 0.0f
          && p->temperature <= FG_SAMPLE_MAX_TEMPERATURE))
    {
        snprintf(err, errlen, "temperature %g is not in [0, %g]",
                 (double) p->temperature,
                 (double) FG_SAMPLE_MAX_TEMPERATURE);
        return -1;
    }

    if (!(p->top_p > 0.0f && p->top_p <= 1.0f)) {
        snprintf(err, errlen, "top_p %g is not in (0, 1]", (double) p->top_p);
        return -1;
    }

    return fg_sample_params_check_more(p, err, errlen);
}


int32_t
fg_sample(const fg_sample_params_t *p, fg_rand_t *rng, const float *logits,
    uint32_t n, fg_k_cand_t *cand)
{
    double  u;

    /* drawn even for greedy: a request's stream of numbers stays in step
     * with its output index whatever its parameters */
    u = fg_rand_double(rng);

    if (p->temperature <= 0.0f) {
        return fg_k_argmax(logits, n);
    }

    return fg_k_sample(logits, n, p->temperature, p->top_k, p->top_p, u,
                       cand);
}


/* the seed of choice c of a request (fg_batch.h) */
uint64_t
fg_batch_choice_seed(uint64_t seed, uint32_t c)
{
    uint64_t  z;

    if (c == 0) {
        return seed;
    }

    /* splitmix64's finaliser of the seed moved by c golden-ratio steps:
     * streams as far apart as unrelated seeds */
    z = seed + (uint64_t) c * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;

    return z ^ (z >> 31);
}
