
/*
 * fairgate: tests of sampling: greedy is the argmax, a seed repeats its
 * tokens, top-k and top-p keep to their candidates, temperature spreads
 * the choice as softmax says, and bad parameters are named.  The logits'
 * adjustments (logit_bias, the repetition, frequency and presence
 * penalties, min_p) against the formulas computed here, the marks left
 * zero; the log-probabilities against a log-softmax in long double.
 */


#include <math.h>
#include <string.h>

#include "fg_tap.h"
#include "fg_batch.h"


#define VOCAB  64


static fg_k_cand_t  cand[VOCAB];


static void
ramp(float *logits)
{
    int  i;

    /* distinct values, the largest at id 37, then 36, 38, 35 ... */
    for (i = 0; i < VOCAB; i++) {
        logits[i] = -0.25f * (float) abs(i - 37) + (i > 37 ? -0.1f : 0.0f);
    }
}


static void
test_rng(void)
{
    int        i, same, low, high;
    double     u, sum;
    fg_rand_t  a, b;

    fg_rand_seed(&a, 42);
    fg_rand_seed(&b, 42);
    same = 1;

    for (i = 0; i < 100; i++) {
        same &= fg_rand_next(&a) == fg_rand_next(&b);
    }

    ok(same, "one seed, one stream");

    fg_rand_seed(&a, 42);
    fg_rand_seed(&b, 43);
    ok(fg_rand_next(&a) != fg_rand_next(&b), "another seed, another stream");

    fg_rand_seed(&a, 7);
    sum = 0.0;
    low = high = 0;

    for (i = 0; i < 10000; i++) {
        u = fg_rand_double(&a);

        if (u < 0.0 || u >= 1.0) {
            break;
        }

        sum += u;
        low += u < 0.1;
        high += u >= 0.9;
    }

    ok(i == 10000, "uniform numbers lie in [0, 1)");
    is_num(sum / 10000, 0.5, 0.02, "their mean is near 1/2");
    ok(low > 850 && low < 1150 && high > 850 && high < 1150,
       "each tenth of the range gets about a tenth (%d, %d)", low, high);
}


static void
test_greedy(void)
{
    int                 i, all;
    float               logits[VOCAB];
    fg_rand_t           rng;
    fg_sample_params_t  p;

    ramp(logits);
    fg_sample_params_init(&p);
    fg_rand_seed(&rng, 1);
    all = 1;

    for (i = 0; i < 50; i++) {
        all &= fg_sample(&p, &rng, logits, VOCAB, cand) == 37;
    }

    ok(all, "greedy takes the largest logit every time");

    p.temperature = 1.0f;
    p.top_k = 1;
    all = 1;

    for (i = 0; i < 50; i++) {
        all &= fg_sample(&p, &rng, logits, VOCAB, cand) == 37;
    }

    ok(all, "top_k 1 is greedy at any temperature");

    logits[5] = logits[37];
    p.temperature = 0.0f;
    is_int(fg_sample(&p, &rng, logits, VOCAB, cand), 5,
           "a tie goes to the lower id");
}


static void
test_seeded(void)
{
    int                 i, same, differ;
    float               logits[VOCAB];
    int32_t             a[200], b[200], c[200];
    fg_rand_t           r;
    fg_sample_params_t  p;

    ramp(logits);
    fg_sample_params_init(&p);
    p.temperature = 2.0f;

    fg_rand_seed(&r, 1234);
    for (i = 0; i < 200; i++) {
        a[i] = fg_sample(&p, &r, logits, VOCAB, cand);
    }

    fg_rand_seed(&r, 1234);
    for (i = 0; i < 200; i++) {
        b[i] = fg_sample(&p, &r, logits, VOCAB, cand);
    }

    fg_rand_seed(&r, 1235);
    for (i = 0; i < 200; i++) {
        c[i] = fg_sample(&p, &r, logits, VOCAB, cand);
    }

    same = 1;
    differ = 0;

    for (i = 0; i < 200; i++) {
        same &= a[i] == b[i];
        differ += a[i] != c[i];
    }

    ok(same, "the same seed samples the same 200 tokens");
    ok(differ > 50, "another seed samples others (%d of 200 differ)", differ);

    /* one draw per token, greedy or not: a greedy token between two
     * sampled ones does not shift the stream */
    fg_rand_seed(&r, 1234);
    fg_sample(&p, &r, logits, VOCAB, cand);
    p.temperature = 0.0f;
    fg_sample(&p, &r, logits, VOCAB, cand);
    p.temperature = 2.0f;
    is_int(fg_sample(&p, &r, logits, VOCAB, cand), a[2],
           "a greedy token draws its number too");
}


static void
test_cuts(void)
{
    int                 i, inside, counts[VOCAB];
    float               logits[VOCAB];
    fg_rand_t           r;
    fg_sample_params_t  p;

    ramp(logits);
    fg_sample_params_init(&p);
    fg_rand_seed(&r, 99);

    /* top-k 3: only 37, 36, 38 */
    p.temperature = 5.0f;
    p.top_k = 3;
    memset(counts, 0, sizeof(counts));

    for (i = 0; i < 3000; i++) {
        counts[fg_sample(&p, &r, logits, VOCAB, cand)]++;
    }

    inside = counts[37] + counts[36] + counts[38];
    is_int(inside, 3000, "top_k 3 keeps to the three largest");
    ok(counts[37] > 600 && counts[36] > 600 && counts[38] > 600,
       "and a high temperature uses all three (%d %d %d)",
       counts[37], counts[36], counts[38]);

    /* top-p: two tokens hold almost all the mass */
    for (i = 0; i < VOCAB; i++) {
        logits[i] = -20.0f;
    }

    logits[10] = 2.0f;
    logits[20] = 2.0f - logf(3.0f);     /* p(20) = p(10) / 3 */
    logits[30] = 2.0f - logf(9.0f);

    p.temperature = 1.0f;
    p.top_k = 0;
    p.top_p = 0.5f;
    memset(counts, 0, sizeof(counts));

    for (i = 0; i < 2000; i++) {
        counts[fg_sample(&p, &r, logits, VOCAB, cand)]++;
    }

    is_int(counts[10], 2000, "top_p 0.5: only the token holding 69%% stays");

    p.top_p = 0.9f;
    memset(counts, 0, sizeof(counts));

    for (i = 0; i < 4000; i++) {
        counts[fg_sample(&p, &r, logits, VOCAB, cand)]++;
    }

    is_int(counts[10] + counts[20], 4000,
           "top_p 0.9: the two tokens holding 92%% stay");

    /* renormalized over the nucleus: 3/4 and 1/4 */
    is_num(counts[10] / 4000.0, 0.75, 0.03,
           "and they are drawn 3:1 as softmax says");

    p.top_p = 1.0f;
    memset(counts, 0, sizeof(counts));

    for (i = 0; i < 4000; i++) {
        counts[fg_sample(&p, &r, logits, VOCAB, cand)]++;
    }

    ok(counts[30] > 150, "top_p 1 keeps the third token (%d of 4000)",
       counts[30]);
}


static void
test_check(void)
{
    char                err[128];
    fg_sample_params_t  p;

    fg_sample_params_init(&p);
    ok(fg_sample_params_check(&p, err, sizeof(err)) == 0,
       "greedy parameters pass");

    p.temperature = -1.0f;
    ok(fg_sample_params_check(&p, err, sizeof(err)) == -1
       && strstr(err, "temperature") != NULL, "a negative temperature: %s",
       err);

    p.temperature = NAN;
    ok(fg_sample_params_check(&p, err, sizeof(err)) == -1,
       "a NaN temperature is refused");

    p.temperature = 1.0f;
    p.top_p = 0.0f;
    ok(fg_sample_params_check(&p, err, sizeof(err)) == -1
       && strstr(err, "top_p") != NULL, "top_p 0: %s", err);

    p.top_p = 1.5f;
    ok(fg_sample_params_check(&p, err, sizeof(err)) == -1,
       "top_p above 1 is refused");
}


/* the row adjusted by hand: OpenAI's and CTRL's formulas */
static void
test_adjust(void)
{
    int                 i, same, zero;
    float               got[VOCAB], want[VOCAB];
    uint32_t            marks[VOCAB];
    fg_sample_seq_t     seq;
    fg_sample_bias_t    bias[2] = { { 3, 2.5f }, { 60, -100.0f } };
    fg_sample_params_t  p;

    /* prompt 5 5 9; output 9 9 40 5: counts 9:2 40:1 5:1 */
    static const int32_t  toks[] = { 5, 5, 9, 9, 9, 40, 5 };

    memset(marks, 0, sizeof(marks));
    seq.tokens = toks;
    seq.n_tokens = 7;
    seq.n_prompt = 3;
    seq.marks = marks;

    fg_sample_params_init(&p);
    ok(!fg_sample_adjusts(&p), "the defaults adjust nothing");

    p.repetition = 0.0f;
    p.min_p = 0.5f;
    ok(!fg_sample_adjusts(&p), "repetition 0 is off, min_p needs a "
       "temperature");

    p.min_p = 0.0f;
    p.bias = bias;
    p.n_bias = 2;
    p.frequency = 0.5f;
    p.presence = -0.25f;
    p.repetition = 2.0f;
    ok(fg_sample_adjusts(&p), "bias and penalties adjust");

    for (i = 0; i < VOCAB; i++) {
        got[i] = want[i] = (float) (i % 7) - 3.0f;
    }

    /* bias, then CTRL over 5, 9, 40 (prompt and output), then OpenAI's */
    want[3] += 2.5f;
    want[60] -= 100.0f;
    want[5] = want[5] > 0 ? want[5] / 2 : want[5] * 2;
    want[9] = want[9] > 0 ? want[9] / 2 : want[9] * 2;
    want[40] = want[40] > 0 ? want[40] / 2 : want[40] * 2;
    want[9] -= 2 * 0.5f - 0.25f;
    want[40] -= 1 * 0.5f - 0.25f;
    want[5] -= 1 * 0.5f - 0.25f;

    fg_sample_adjust(&p, &seq, got, VOCAB);

    for (i = 0, same = 1; i < VOCAB; i++) {
        same &= fabsf(got[i] - want[i]) < 1e-6f;
    }

    ok(same, "bias, repetition over prompt and output, frequency and "
       "presence over the output, once per distinct token");

    for (i = 0, zero = 1; i < VOCAB; i++) {
        zero &= marks[i] == 0;
    }

    ok(zero, "the marks are zero again");

    /* min_p: p_i / p_max >= min_p after temperature */
    fg_sample_params_init(&p);
    p.temperature = 2.0f;
    p.min_p = 0.25f;

    for (i = 0; i < VOCAB; i++) {
        got[i] = -0.5f * (float) i;
    }

    fg_sample_adjust(&p, &seq, got, VOCAB);

    /* exp(-0.25 i) >= 0.25 for i <= 4 * ln 4 = 5.5 */
    for (i = 0, same = 1; i < VOCAB; i++) {
        same &= (i <= 5) ? got[i] == -0.5f * (float) i
                         : got[i] == -INFINITY;
    }

    ok(same, "min_p 0.25 at temperature 2 keeps ids 0 .. 5 alone");
}


/* log-softmax against long double, the best k, ties by id */
static void
test_logprobs(void)
{
    int             i, k, ok_lp, ok_top;
    float           logits[VOCAB];
    long double     m, sum, lse;
    fg_sample_lp_t  lp;

    ramp(logits);
    logits[10] = logits[36];                /* a tie with the second */

    m = logits[37];
    sum = 0.0L;

    for (i = 0; i < VOCAB; i++) {
        sum += expl((long double) logits[i] - m);
    }

    lse = m + logl(sum);

    fg_sample_logprobs(logits, VOCAB, 12, 5, &lp);

    ok_lp = fabsl((long double) lp.logprob - (logits[12] - lse)) < 1e-6L;
    ok(ok_lp, "the token's log-probability: %g", (double) lp.logprob);
    is_int(lp.n_top, 5, "five alternatives");

    ok_top = 1;

    for (k = 0; k < 5; k++) {
        ok_top &= fabsl((long double) lp.top_lp[k]
                        - (logits[lp.top_id[k]] - lse)) < 1e-6L;
    }

    ok(ok_top, "each alternative's log-probability");
    ok(lp.top_id[0] == 37 && lp.top_id[1] == 10 && lp.top_id[2] == 36
       && lp.top_id[3] == 38, "best first, the lower id first on a tie "
       "(%d %d %d %d %d)", lp.top_id[0], lp.top_id[1], lp.top_id[2],
       lp.top_id[3], lp.top_id[4]);

    fg_sample_logprobs(logits, VOCAB, 37, 0, &lp);
    ok(lp.n_top == 0 && fabsl((long double) lp.logprob - (logits[37] - lse))
       < 1e-6L, "no alternatives asked: the token's alone");

    fg_sample_logprobs(logits, 3, 1, 20, &lp);
    ok(lp.n_top == 3, "no more alternatives than the vocabulary");

    /* far below the best: finite, exact in double */
    logits[0] = -1e4f;
    fg_sample_logprobs(logits, VOCAB, 0, 1, &lp);
    ok(isfinite(lp.logprob) && lp.logprob < -9990.0f,
       "a very unlikely token: finite (%g)", (double) lp.logprob);
}


static void
test_check_more(void)
{
    char                err[128];
    fg_sample_bias_t    bias = { 4, 100.5f };
    fg_sample_params_t  p;

    fg_sample_params_init(&p);
    p.frequency = 2.5f;
    ok(fg_sample_params_check(&p, err, sizeof(err)) != 0
       && strstr(err, "frequency") != NULL, "frequency 2.5 refused: %s",
       err);

    fg_sample_params_init(&p);
    p.presence = NAN;
    ok(fg_sample_params_check(&p, err, sizeof(err)) != 0,
       "presence NaN refused");

    fg_sample_params_init(&p);
    p.repetition = -1.0f;
    ok(fg_sample_params_check(&p, err, sizeof(err)) != 0,
       "repetition -1 refused");

    fg_sample_params_init(&p);
    p.min_p = 1.5f;
    ok(fg_sample_params_check(&p, err, sizeof(err)) != 0,
       "min_p 1.5 refused");

    fg_sample_params_init(&p);
    p.top_logprobs = 21;
    ok(fg_sample_params_check(&p, err, sizeof(err)) != 0,
       "21 alternatives refused");

    fg_sample_params_init(&p);
    p.bias = &bias;
    p.n_bias = 1;
    ok(fg_sample_params_check(&p, err, sizeof(err)) != 0
       && strstr(err, "token 4") != NULL, "a bias of 100.5 refused: %s",
       err);
}


int
main(void)
{
    test_rng();
    test_greedy();
    test_seeded();
    test_cuts();
    test_check();
    test_adjust();
    test_logprobs();
    test_check_more();

    return done_testing();
}
