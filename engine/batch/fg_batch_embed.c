
/*
 * fairgate: embeddings in the batcher.  An embedding is a sequence like
 * any other (it waits, joins, takes KV blocks, is chunked, preempted and
 * swapped as the others are), whose steps ask the backend for the final
 * hidden states of its new tokens (after the output norm) summed over
 * the chunk instead of logits; the sums add up over its chunks, and when
 * its prompt is all computed the mean over its positions, L2-normalised,
 * is its one event.  Normalising the sum gives the same vector as
 * normalising the mean: the division by the positions' count is left
 * out.
 *
 * Mean pooling is the one offered: the models served are decoders, and
 * for them neither mean nor last-token pooling is what they were trained
 * for; mean is the default of the common serving stacks for a model
 * without a pooling setting of its own.
 */


#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fg_batch_int.h"


int
fg_batch_embed_check(fg_batch_t *b, const fg_batch_req_t *req, char *err,
    size_t errlen)
{
    uint32_t  need;

    b->stats.refused++;

    if (b->info.n_embd == 0) {
        snprintf(err, errlen, "backend %s computes no embeddings",
                 b->ops->name);
        return FG_BATCH_EINVAL;
    }

    if (req->n > 1) {
        snprintf(err, errlen, "an embedding has one choice, not %u",
                 req->n);
        return FG_BATCH_EINVAL;
    }

    /* nothing is sampled: no grammar to follow */
    if (req->n_grammar) {
        snprintf(err, errlen, "an embedding follows no grammar");
        return FG_BATCH_EINVAL;
    }

    if (req->n_prompt > b->info.context) {
        snprintf(err, errlen, "an input of %u tokens exceeds the context "
                 "of %u", req->n_prompt, b->info.context);
        return FG_BATCH_ECONTEXT;
    }

    need = fg_kv_blocks_for(b->kv, req->n_prompt);

    if (need > fg_kv_n_blocks(b->kv)) {
        snprintf(err, errlen, "an input of %u tokens needs %u KV blocks; "
                 "the pool has %u", req->n_prompt, need,
                 fg_kv_n_blocks(b->kv));
        return FG_BATCH_EKV;
    }

    b->stats.refused--;

    return FG_BATCH_OK;
}


/* the sum scaled to unit length, in place (all zeros stay so) */
static void
fg_batch_embed_normalize(float *v, uint32_t n)
{
    double    sq;
    uint32_t  k;

    sq = 0.0;

    for (k = 0; k < n; k++) {
        sq += (double) v[k] * v[k];
    }

    if (sq <= 0.0) {
        return;
    }

    sq = 1.0 / sqrt(sq);

    for (k = 0; k < n; k++) {
        v[k] = (float) (v[k] * sq);
    }
}


int
fg_batch_embed_step(fg_batch_t *b, uint32_t i)
{
    float             *row;
    uint32_t           k, n;
    fg_seq_t          *s;
    fg_batch_event_t   ev;

    s = b->step_seqs[i];
    n = b->info.n_embd;
    row = b->hidden + (size_t) i * n;

    if (b->step[i].pos == 0) {
        memset(s->embd_sum, 0, n * sizeof(float));
    }

    for (k = 0; k < n; k++) {
        s->embd_sum[k] += row[k];
    }

    if (s->n_computed < s->n_prompt) {
        return 0;
    }

    fg_batch_embed_normalize(s->embd_sum, n);

    if (b->conf.emit) {
        ev.id = s->id;
        ev.owner = s->owner;
        ev.choice = 0;
        ev.data = s->data;
        ev.token = -1;
        ev.finish = FG_FINISH_STOP;
        ev.n_prompt = s->n_prompt;
        ev.n_generated = 0;
        ev.n_cached = 0;
        ev.lp = NULL;
        ev.prompt_pos = 0;
        ev.embedding = s->embd_sum;
        ev.n_embd = n;

        b->conf.emit(b->conf.ctx, &ev);
    }

    return 1;
}
