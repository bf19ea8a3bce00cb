
/*
 * fairgate: token sampling.
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

    return 0;
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
