
/*
 * fairgate: what a request asks of the logits beyond temperature and the
 * cuts: logit_bias, the repetition, frequency and presence penalties and
 * min_p, applied to a copy of a sequence's row before sampling; and the
 * log-probabilities reported of the row as the model gave it.
 *
 * The penalties read only the sequence's own tokens, so a request's
 * tokens stay the same alone, in any batch and after a preemption.
 * Counting uses a vocabulary of zeroed marks shared by the batch: each
 * pass sets the marks of the tokens it visits and a second walk over the
 * same tokens clears them, so the cost is that of the tokens, never of
 * the vocabulary.
 */


#include <math.h>
#include <string.h>

#include "fg_batch.h"


int
fg_sample_adjusts(const fg_sample_params_t *p)
{
    return p->n_bias != 0 || p->frequency != 0.0f || p->presence != 0.0f
           || (p->repetition != 0.0f && p->repetition != 1.0f)
           || (p->min_p > 0.0f && p->temperature > 0.0f);
}


/* CTRL's penalty, once for each distinct token of the prompt and output */
static void
fg_sample_repetition(float r, const fg_sample_seq_t *seq, float *logits)
{
    int32_t   t;
    uint32_t  i;

    for (i = 0; i < seq->n_tokens; i++) {
        t = seq->tokens[i];

        if (seq->marks[t]) {
            continue;
        }

        seq->marks[t] = 1;
        logits[t] = logits[t] > 0.0f ? logits[t] / r : logits[t] * r;
    }

    for (i = 0; i < seq->n_tokens; i++) {
        seq->marks[seq->tokens[i]] = 0;
    }
}


/* OpenAI's: logit -= count * frequency + (count > 0) * presence, over the
 * output */
static void
fg_sample_penalties(const fg_sample_params_t *p, const fg_sample_seq_t *seq,
    float *logits)
{
    int32_t   t;
    uint32_t  i, c;

    for (i = seq->n_prompt; i < seq->n_tokens; i++) {
        seq->marks[seq->tokens[i]]++;
    }

    for (i = seq->n_prompt; i < seq->n_tokens; i++) {
        t = seq->tokens[i];
        c = seq->marks[t];

        if (c == 0) {
            continue;               /* applied at its first occurrence */
        }

        logits[t] -= (float) c * p->frequency + p->presence;
        seq->marks[t] = 0;
    }
}


/* tokens less likely than min_p times the best, after temperature, out */
static void
fg_sample_min_p(const fg_sample_params_t *p, float *logits, uint32_t n)
{
    float     max, cut;
    uint32_t  i;

    max = -INFINITY;

    for (i = 0; i < n; i++) {
        max = logits[i] > max ? logits[i] : max;
    }

    if (max == -INFINITY) {
        return;
    }

    /* p_i / p_max = exp((l_i - max) / T) >= min_p */
    cut = max + p->temperature * logf(p->min_p);

    for (i = 0; i < n; i++) {
        if (logits[i] < cut) {
            logits[i] = -INFINITY;
        }
    }
}


void
fg_sample_adjust(const fg_sample_params_t *p, const fg_sample_seq_t *seq,
    float *logits, uint32_t n)
{
    uint32_t  i;

    for (i = 0; i < p->n_bias; i++) {
        if (p->bias[i].id >= 0 && (uint32_t) p->bias[i].id < n) {
            logits[p->bias[i].id] += p->bias[i].bias;
        }
    }

    if (p->repetition != 0.0f && p->repetition != 1.0f) {
        fg_sample_repetition(p->repetition, seq, logits);
    }

    if (p->frequency != 0.0f || p->presence != 0.0f) {
        fg_sample_penalties(p, seq, logits);
    }

    if (p->min_p > 0.0f && p->temperature > 0.0f) {
        fg_sample_min_p(p, logits, n);
    }
}


/* inserts (id, v) into the best k of lp, sorted, the lower id first on
 * ties (ids come in ascending order: an equal value goes after) */
static void
fg_sample_top_insert(fg_sample_lp_t *lp, uint32_t k, int32_t id, float v)
{
    uint32_t  j;

    if (lp->n_top == k && !(v > lp->top_lp[k - 1])) {
        return;
    }

    j = lp->n_top < k ? lp->n_top++ : k - 1;

    while (j > 0 && v > lp->top_lp[j - 1]) {
        lp->top_lp[j] = lp->top_lp[j - 1];
        lp->top_id[j] = lp->top_id[j - 1];
        j--;
    }

    lp->top_lp[j] = v;
    lp->top_id[j] = id;
}


void
fg_sample_logprobs(const float *logits, uint32_t n, int32_t token,
    uint32_t top, fg_sample_lp_t *lp)
{
    double    max, sum, lse;
    uint32_t  i;

    top = top < FG_SAMPLE_MAX_TOP ? top : FG_SAMPLE_MAX_TOP;
    top = top < n ? top : n;

    lp->n_top = 0;
    max = -INFINITY;

    for (i = 0; i < n; i++) {
        max = logits[i] > max ? logits[i] : max;

        if (top) {
            fg_sample_top_insert(lp, top, (int32_t) i, logits[i]);
        }
    }

    /* expf of the differences (each within a float's precision of the
     * exact value), summed in double: cheaper than exp() in double, and
     * as exact as a float log-probability needs */
    sum = 0.0;

    for (i = 0; i < n; i++) {
        sum += expf(logits[i] - (float) max);
    }

    lse = max + log(sum);

    for (i = 0; i < lp->n_top; i++) {
        lp->top_lp[i] = (float) ((double) lp->top_lp[i] - lse);
    }

    lp->logprob = (token >= 0 && (uint32_t) token < n)
                  ? (float) ((double) logits[token] - lse) : -INFINITY;
}
