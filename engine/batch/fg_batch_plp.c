
/*
 * fairgate: the prompt's log-probabilities in the batcher (OpenAI's echo
 * with logprobs).  Such a sequence's prompt chunks ask the backend for
 * every position's logits (want_all), not the last one's alone; row j of
 * a chunk at pos gives the log-softmax of the prompt's token at pos + j +
 * 1, reported as an event of its own before any generated token.  The
 * chunks are cut to FG_BATCH_PLP_CHUNK rows so that the logits' buffer
 * stays small whatever the step's token budget; a recomputation after a
 * preemption reports nothing twice.
 */


#include <stdio.h>
#include <stdlib.h>

#include "fg_batch_int.h"


uint32_t
fg_batch_plp_chunk(const fg_seq_t *s, uint32_t rem, uint32_t *budget)
{
    uint32_t  chunk;

    chunk = rem < *budget ? rem : *budget;

    if (s->prompt_lp && s->n_computed < s->n_prompt
        && chunk > FG_BATCH_PLP_CHUNK)
    {
        chunk = FG_BATCH_PLP_CHUNK;
        *budget = chunk;
    }

    return chunk;
}


int
fg_batch_plp_room(fg_batch_t *b, uint32_t n, char *err, size_t errlen)
{
    float     *p;
    uint32_t   i, rows;

    rows = 0;

    for (i = 0; i < n; i++) {
        rows += b->step[i].want_all ? b->step[i].n_tokens
                                    : b->step[i].want_logits;
    }

    if (rows <= b->logits_rows) {
        return 0;
    }

    p = realloc(b->logits, (size_t) rows * b->info.vocab * sizeof(float));

    if (p == NULL) {
        snprintf(err, errlen, "no memory for %u rows of logits", rows);
        return -1;
    }

    b->logits = p;
    b->logits_rows = rows;

    return 0;
}


float *
fg_batch_plp_step(fg_batch_t *b, uint32_t i, float *row)
{
    uint32_t                 j, p, rows;
    fg_seq_t                *s;
    fg_batch_event_t         ev;
    const fg_backend_seq_t  *bs;

    bs = &b->step[i];
    s = b->step_seqs[i];
    rows = bs->n_tokens - (bs->want_logits ? 1 : 0);

    for (j = 0; j < rows; j++, row += b->info.vocab) {
        p = bs->pos + j + 1;

        if (p >= s->n_prompt || p < s->plp_next || b->conf.emit == NULL) {
            continue;
        }

        fg_sample_logprobs(row, b->info.vocab, s->tokens[p],
                           s->sp.top_logprobs, &b->lp);

        ev.id = s->id;
        ev.owner = s->owner;
        ev.choice = s->choice;
        ev.data = s->data;
        ev.token = s->tokens[p];
        ev.finish = FG_FINISH_NONE;
        ev.n_prompt = s->n_prompt;
        ev.n_generated = 0;
        ev.n_cached = 0;
        ev.lp = &b->lp;
        ev.prompt_pos = p;
        ev.embedding = NULL;
        ev.n_embd = 0;

        s->plp_next = p + 1;
        b->conf.emit(b->conf.ctx, &ev);
    }

    return row;
}
