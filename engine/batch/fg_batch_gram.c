
/*
 * fairgate: structured output in the batcher.  A request's GBNF grammar
 * is compiled at submit, once for all the held sequences whose grammar is
 * the same text (the requests of one schema), and each sequence keeps a
 * matcher (engine/grammar) over the model's vocabulary, built once per
 * model from the batcher's tokenizer.  The matchers of one grammar share
 * one cache of masks: a batch's sequences of one schema meet the same
 * states, and a mask one of them made serves the others.  Each sample
 * masks the logits of the tokens the grammar does not allow (end of
 * generation only where the text is complete), and the token sampled is
 * accepted.  The matcher lives with the sequence, not with its KV blocks:
 * a preemption, recomputed or swapped, keeps every token accepted.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_batch_int.h"


/* masks kept by the matchers of one grammar, together */
#define FG_BATCH_GRAM_CACHE  64


/* a grammar the held sequences use, with its cache of masks */
struct fg_batch_gram_s {
    fg_batch_gram_t     *next;
    uint64_t             hash;
    uint32_t             len;
    uint32_t             refs;          /* sequences holding it */
    char                *text;
    fg_gram_t           *g;
    fg_gram_cache_t     *cache;
};


static uint64_t
fg_batch_gram_hash(const char *text, uint32_t len)
{
    uint32_t  i;
    uint64_t  h;

    /* FNV-1a: a lookup key, checked against the text */
    h = 14695981039346656037ULL;

    for (i = 0; i < len; i++) {
        h = (h ^ (uint8_t) text[i]) * 1099511628211ULL;
    }

    return h;
}


static void
fg_batch_gram_unref(fg_batch_t *b, fg_batch_gram_t *e)
{
    fg_batch_gram_t  **p;

    if (--e->refs > 0) {
        return;
    }

    for (p = &b->grams; *p != e; p = &(*p)->next) { /* void */ }

    *p = e->next;
    fg_gram_cache_free(e->cache);
    fg_gram_free(e->g);
    free(e->text);
    free(e);
}


/* the held grammar of this text, or a new one: NULL with err */
static fg_batch_gram_t *
fg_batch_gram_get(fg_batch_t *b, const char *text, uint32_t len, char *err,
    size_t errlen)
{
    char              why[200];
    uint64_t          h;
    fg_batch_gram_t  *e;

    h = fg_batch_gram_hash(text, len);

    for (e = b->grams; e; e = e->next) {
        if (e->hash == h && e->len == len && memcmp(e->text, text, len) == 0)
        {
            e->refs++;
            return e;
        }
    }

    e = calloc(1, sizeof(fg_batch_gram_t));
    if (e == NULL || (e->text = malloc(len)) == NULL) {
        snprintf(err, errlen, "no memory for a grammar");
        free(e);
        return NULL;
    }

    memcpy(e->text, text, len);
    e->hash = h;
    e->len = len;
    e->refs = 1;
    e->next = b->grams;
    b->grams = e;

    e->g = fg_gram_from_gbnf(text, len, why, sizeof(why));
    e->cache = e->g ? fg_gram_cache_new(e->g, b->gram_vocab,
                                        FG_BATCH_GRAM_CACHE)
                    : NULL;

    if (e->cache == NULL) {
        snprintf(err, errlen, "grammar: %s",
                 e->g ? "no memory for its masks" : why);
        fg_batch_gram_unref(b, e);
        return NULL;
    }

    return e;
}


int
fg_batch_gram_new(fg_batch_t *b, fg_seq_t *s, const fg_batch_req_t *req,
    char *err, size_t errlen)
{
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

    s->gram = fg_batch_gram_get(b, req->grammar, req->n_grammar, err,
                                errlen);

    if (s->gram == NULL) {
        return FG_BATCH_EINVAL;
    }

    s->gm = fg_gram_match_shared(s->gram->g, b->gram_vocab, s->gram->cache);

    if (s->gm == NULL) {
        snprintf(err, errlen, "grammar: no matcher for its start");
        fg_batch_gram_unref(b, s->gram);
        s->gram = NULL;
        return FG_BATCH_ENOMEM;
    }

    return FG_BATCH_OK;
}


void
fg_batch_gram_free(fg_batch_t *b, fg_seq_t *s)
{
    if (s->gm) {
        fg_gram_match_free(s->gm);
        s->gm = NULL;
    }

    if (s->gram) {
        fg_batch_gram_unref(b, s->gram);
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


/* after every sequence is freed: the vocabulary */
void
fg_batch_gram_destroy(fg_batch_t *b)
{
    if (b->gram_vocab) {
        fg_gram_vocab_free(b->gram_vocab);
        b->gram_vocab = NULL;
    }
}
