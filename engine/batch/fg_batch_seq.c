
/*
 * fairgate: the batcher's held sequences, what the step (fg_batch.c) and
 * Andes's scheduler (fg_batch_andes.c) both do with them: a preemption,
 * and the cached prefix a waiting one would find; and a sequence's
 * sampling, with its own tokens, for the step.
 */


#include <string.h>

#include "fg_batch_int.h"


int32_t
fg_batch_sample(fg_batch_t *b, fg_seq_t *s, const float *row)
{
    int32_t          token;
    const float     *use;
    fg_sample_seq_t  seq;

    use = row;

    if (fg_sample_adjusts(&s->sp) || s->gm) {
        memcpy(b->work, row, b->info.vocab * sizeof(float));
        use = b->work;
    }

    if (fg_sample_adjusts(&s->sp)) {
        seq.tokens = s->tokens;
        seq.n_tokens = s->n_tokens;
        seq.n_prompt = s->n_prompt;
        seq.marks = b->marks;

        fg_sample_adjust(&s->sp, &seq, b->work, b->info.vocab);
    }

    /* the grammar's mask last: the adjustments never bring back a token
     * it forbids; nothing allowed (or a failed matcher) ends the
     * sequence with an error */
    if (s->gm && fg_batch_gram_mask(s, b->work) <= 0) {
        return -1;
    }

    token = fg_sample(&s->sp, &s->rng, use, b->info.vocab, b->cand);

    if (s->gm && fg_batch_gram_accept(s, token) != 0) {
        return -1;
    }

    if (s->sp.logprobs) {
        fg_sample_logprobs(row, b->info.vocab, token, s->sp.top_logprobs,
                           &b->lp);
    }

    return token;
}


/*
 * Frees a running sequence's blocks; it waits again, at the head, to
 * recompute what it had computed, or to load it back when swapped out
 */
void
fg_batch_preempt_seq(fg_batch_t *b, fg_seq_t *s)
{
    fg_list_remove(&b->running, s);

    if (fg_batch_swap_out(b, s) != 0) {
        s->n_computed = 0;
    }

    fg_kv_seq_free(b->kv, &s->kv);

    s->running = 0;
    s->n_registered = 0;

    fg_list_push_head(&b->waiting, s);
    b->stats.preemptions++;
    s->preempted++;
}


/*
 * The cached blocks that begin a sequence's tokens: how many, at most
 * (n_tokens - 1) / block_size, so that its last token is computed; idle
 * counts those nobody holds, which a join takes off the evictable.
 */
uint32_t
fg_batch_match(fg_batch_t *b, fg_seq_t *s, uint32_t *idle)
{
    int32_t   blk;
    uint32_t  max, m, i;

    *idle = 0;

    /* an embedding needs every position's hidden state: it computes its
     * whole prompt, whatever the cache holds */
    if (!b->conf.prefix_cache || s->embed || s->prompt_lp) {
        return 0;
    }

    max = (s->n_tokens - 1) / b->block_size;
    fg_batch_hash_blocks(b, s, max);

    for (m = 0; m < max; m++) {
        if (fg_kv_cache_find(b->kv, s->hashes[m]) < 0) {
            break;
        }
    }

    /* sliding layers: only as far as the window before it is kept */
    m = fg_kv_window_prefix(b->kv, s->hashes, NULL, m);

    for (i = 0; i < m; i++) {
        blk = fg_kv_cache_find(b->kv, s->hashes[i]);
        *idle += fg_kv_refs(b->kv, blk) == 0;
    }

    return m;
}


/*
 * Without the prefix cache, a request's choices still compute their
 * prompt once: choice 0 computes it, and another choice joins with
 * references to its full prompt blocks (at most (n_tokens - 1) /
 * block_size, so that its last token is its own), once they are
 * computed, waiting a step while they are not, at most as many steps as
 * blocks: then it computes them itself.  Choice 0 not running (waiting,
 * preempted, ended): each computes its own.
 */
int
fg_batch_sibling(fg_batch_t *b, fg_seq_t *s, fg_seq_t **sib)
{
    uint32_t   want, m;
    fg_seq_t  *r;

    *sib = NULL;

    if (b->conf.prefix_cache || s->choice == 0) {
        return 0;
    }

    want = (s->n_tokens - 1) / b->block_size;
    want = want < s->n_prompt / b->block_size ? want
                                              : s->n_prompt / b->block_size;

    for (r = b->running.head; r; r = r->next) {
        if (r->id == s->id && r->owner == s->owner && r->choice == 0) {
            break;
        }
    }

    if (r == NULL || want == 0) {
        return 0;
    }

    m = r->n_computed / b->block_size;
    m = m < want ? m : want;

    if (m < want && s->n_deferred < want) {
        s->n_deferred++;
        return -1;
    }

    *sib = r;

    /* sliding layers: only as far as choice 0's window has kept them */
    return (int) fg_kv_window_prefix(b->kv, NULL, r->kv.blocks, m);
}


/*
 * Before a step: each of its n sequences holds the slots of its window's
 * blocks and of those its new tokens fill (fg_kv_seq_window()).  0, or
 * -1 with err filled (slots short, or a window's block without its slot:
 * neither happens with the slots the backend sized).
 */
int
fg_batch_window(fg_batch_t *b, uint32_t n, char *err, size_t errlen)
{
    int                      rc;
    uint32_t                 i;
    const fg_backend_seq_t  *bs;

    for (i = 0; i < n; i++) {
        bs = &b->step[i];
        rc = fg_kv_seq_window(b->kv, &b->step_seqs[i]->kv, bs->pos,
                              bs->n_tokens, bs->pos);

        if (rc != 0) {
            snprintf(err, errlen, "sliding layers: %s at position %u",
                     rc == -1 ? "no window slot free"
                              : "a window block lost its slot", bs->pos);
            return -1;
        }
    }

    return 0;
}
