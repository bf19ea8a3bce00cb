
/*
 * fairgate: structured output in the batcher.  A request's GBNF grammar
 * is compiled once, at submit, and its sequence keeps a matcher
 * (engine/grammar) over the model's vocabulary, which the batcher's conf
 * gives, built once per model.  Each sample masks the logits of the tokens
 * the grammar does not allow (end of generation only where the text is
 * complete), and the token sampled is accepted.  The matcher lives with
 * the sequence, not with its KV blocks: a preemption, recomputed or
 * swapped, keeps every token accepted.
 */


#include <stdio.h>

#include "fg_batch_int.h"


/* masks kept by matcher state: a string's inside, a number's digits */
#define FG_BATCH_GRAM_CACHE  16


int
fg_batch_gram_new(fg_batch_t *b, fg_seq_t *s, const fg_batch_req_t *req,
    char *err, size_t errlen)
{
    char  why[200];

    if (req->grammar == NULL || req->n_grammar == 0) {
        return FG_BATCH_OK;
    }

    if (b->gram_vocab == NULL && b->conf.tokenizer) {
        b->gram_vocab = fg_gram_vocab_from_tokenizer(b->conf.tokenizer);
    }

    if (b->gram_vocab == NULL
        || fg_gram_vocab_size(b->gram_vocab) != b->info.vocab)
    {
        snprintf(err, errlen, "this engine has no vocabulary for grammars");
        return FG_BATCH_EINVAL;
    }

    s->gram = fg_gram_from_gbnf(req->grammar, req->n_grammar, why,
                                sizeof(why));

    if (s->gram == NULL) {
        snprintf(err, errlen, "grammar: %s", why);
        return FG_BATCH_EINVAL;
    }

    s->gm = fg_gram_match_new(s->gram, b->gram_vocab,
                              FG_BATCH_GRAM_CACHE);

    if (s->gm == NULL) {
        snprintf(err, errlen, "grammar: no matcher for its start");
        fg_gram_free(s->gram);
        s->gram = NULL;
        return FG_BATCH_ENOMEM;
    }

    return FG_BATCH_OK;
}


void
fg_batch_gram_free(fg_seq_t *s)
{
    if (s->gm) {
        fg_gram_match_free(s->gm);
        s->gm = NULL;
    }

    if (s->gram) {
        fg_gram_free(s->gram);
        s->gram = NULL;
    }
}


/* how many tokens stay allowed; <= 0: the sequence cannot go on */
int64_t
fg_batch_gram_mask(fg_seq_t *s, float *logits)
{
    return fg_gram_bias(s->gm, logits);
}


int
fg_batch_gram_accept(fg_seq_t *s, int32_t token)
{
    return fg_gram_accept(s->gm, token);
}


void
fg_batch_gram_destroy(fg_batch_t *b)
{
    if (b->gram_vocab) {
        fg_gram_vocab_free(b->gram_vocab);
        b->gram_vocab = NULL;
    }
}
