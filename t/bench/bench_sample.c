
/*
 * fairgate: what the logits' adjustments and the log-probabilities cost a
 * sampled token (docs/engine-runtime.md, "Sampling").
 *
 * One row of logits (random, the spread of a real model's) of a 32,000
 * and a 128,256 token vocabulary, sampled as the batcher samples it
 * (fg_batch_sample: the row copied when adjusted, fg_sample, then
 * fg_sample_logprobs on the raw row) in these ways:
 *
 *   greedy        temperature 0, nothing else
 *   sampled       temperature 0.8, top_p 0.95
 *   penalties     greedy + frequency, presence and repetition penalties
 *                 over a sequence of 1,024 prompt and 1,024 output tokens,
 *                 and 16 logit_bias entries
 *   min_p         sampled + min_p 0.05
 *   logprobs      greedy + logprobs with 20 alternatives
 *   all           sampled + penalties + min_p + logprobs 20
 *
 * The figure: microseconds a token, the median of 9 runs of 200 rows.
 *
 * Usage: bench_sample
 */


#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_batch.h"
#include "fg_bench.h"


#define ROWS      200
#define RUNS      9
#define HISTORY   2048


typedef struct {
    const char  *name;
    int          temperature;
    int          penalties;
    int          min_p;
    int          logprobs;
} way_t;


static const way_t  ways[] = {
    { "greedy", 0, 0, 0, 0 },
    { "sampled", 1, 0, 0, 0 },
    { "penalties", 0, 1, 0, 0 },
    { "min_p", 1, 0, 1, 0 },
    { "logprobs", 0, 0, 0, 1 },
    { "all", 1, 1, 1, 1 },
};


static void
params(const way_t *w, fg_sample_params_t *p, const fg_sample_bias_t *bias)
{
    fg_sample_params_init(p);

    if (w->temperature) {
        p->temperature = 0.8f;
        p->top_p = 0.95f;
    }

    if (w->penalties) {
        p->frequency = 0.5f;
        p->presence = 0.5f;
        p->repetition = 1.1f;
        p->bias = bias;
        p->n_bias = 16;
    }

    if (w->min_p) {
        p->min_p = 0.05f;
    }

    if (w->logprobs) {
        p->logprobs = 1;
        p->top_logprobs = 20;
    }
}


/* the microseconds a token of one way, the median of RUNS */
static double
bench_way(const way_t *w, const float *rows, uint32_t vocab,
    const int32_t *history, fg_sample_bias_t *bias)
{
    int                 run, i;
    float              *work;
    double              t0, us[RUNS];
    uint32_t           *marks;
    fg_rand_t           rng;
    fg_k_cand_t        *cand;
    fg_sample_lp_t      lp;
    const float        *use, *row;
    fg_sample_seq_t     seq;
    fg_sample_params_t  p;
    volatile int32_t    sink;

    work = malloc(vocab * sizeof(float));
    marks = calloc(vocab, sizeof(uint32_t));
    cand = malloc(vocab * sizeof(fg_k_cand_t));

    if (work == NULL || marks == NULL || cand == NULL) {
        exit(1);
    }

    params(w, &p, bias);

    seq.tokens = history;
    seq.n_tokens = HISTORY;
    seq.n_prompt = HISTORY / 2;
    seq.marks = marks;

    for (run = 0; run < RUNS; run++) {
        fg_rand_seed(&rng, 7);
        t0 = fg_bench_now();

        for (i = 0; i < ROWS; i++) {
            row = rows + (size_t) (i % 8) * vocab;
            use = row;

            if (fg_sample_adjusts(&p)) {
                memcpy(work, row, vocab * sizeof(float));
                fg_sample_adjust(&p, &seq, work, vocab);
                use = work;
            }

            sink = fg_sample(&p, &rng, use, vocab, cand);

            if (p.logprobs) {
                fg_sample_logprobs(row, vocab, sink, p.top_logprobs, &lp);
            }
        }

        us[run] = (fg_bench_now() - t0) * 1e6 / ROWS;
    }

    (void) sink;

    free(work);
    free(marks);
    free(cand);

    qsort(us, RUNS, sizeof(double), fg_bench_cmp);

    return fg_bench_median(us, RUNS);
}


int
main(void)
{
    size_t             i, k;
    float             *rows;
    int32_t            history[HISTORY];
    uint32_t           vocab;
    fg_rand_t          rng;
    fg_sample_bias_t   bias[16];

    static const uint32_t  vocabs[] = { 32000, 128256 };

    fg_k_init();

    printf("%-10s %12s %12s\n", "way", "32000 us/tok", "128256 us/tok");

    fg_rand_seed(&rng, 1);

    for (i = 0; i < HISTORY; i++) {
        history[i] = (int32_t) (fg_rand_next(&rng) % 32000);
    }

    for (i = 0; i < 16; i++) {
        bias[i].id = (int32_t) (i * 997);
        bias[i].bias = (float) i - 8.0f;
    }

    rows = malloc((size_t) 8 * 128256 * sizeof(float));

    if (rows == NULL) {
        return 1;
    }

    /* logits of a model's spread: normal, sd 3 (Box-Muller) */
    for (i = 0; i < (size_t) 8 * 128256; i++) {
        rows[i] = (float) (3.0 * sqrt(-2.0 * log(1.0 - fg_rand_double(&rng)))
                           * cos(6.283185307179586 * fg_rand_double(&rng)));
    }

    for (k = 0; k < sizeof(ways) / sizeof(ways[0]); k++) {
        printf("%-10s", ways[k].name);

        for (i = 0; i < 2; i++) {
            vocab = vocabs[i];
            printf(" %12.1f", bench_way(&ways[k], rows, vocab, history, bias));
        }

        printf("\n");
    }

    free(rows);

    return 0;
}
