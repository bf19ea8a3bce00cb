
/*
 * fairgate: the backend configurations and steps the tests build again
 * and again, filled in one place.
 */

#ifndef _FG_TEST_BACKEND_H_INCLUDED_
#define _FG_TEST_BACKEND_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_backend.h"


/* a backend of the model at path (NULL: none, the sim backend's vocab) */
static inline void
fg_test_backend_conf(fg_backend_conf_t *conf, const char *path,
    uint32_t kv_blocks, uint32_t block_size, uint32_t max_batch,
    uint32_t max_tokens, uint32_t threads)
{
    *conf = (fg_backend_conf_t) {
        .model_path = path, .kv_blocks = kv_blocks, .block_size = block_size,
        .max_batch = max_batch, .max_tokens = max_tokens, .threads = threads
    };
}


/* the sim backend: no model, step times by step_model / speedup */
static inline void
fg_test_backend_sim(fg_backend_conf_t *conf, uint32_t kv_blocks,
    uint32_t block_size, uint32_t max_batch, uint32_t max_tokens,
    const char *step_model, double speedup, uint32_t vocab)
{
    fg_test_backend_conf(conf, NULL, kv_blocks, block_size, max_batch,
                         max_tokens, 0);
    conf->step_model = step_model;
    conf->speedup = speedup;
    conf->vocab = vocab;
}


/* a step of one sequence, n tokens from pos, its last one's logits wanted */
static inline void
fg_test_backend_one(fg_backend_batch_t *batch, fg_backend_seq_t *sq,
    const int32_t *tokens, uint32_t n, uint32_t pos, const int32_t *table,
    uint32_t n_blocks)
{
    *sq = (fg_backend_seq_t) {
        .tokens = tokens, .n_tokens = n, .pos = pos, .block_table = table,
        .n_blocks = n_blocks, .want_logits = 1, .first = pos == 0
    };
    *batch = (fg_backend_batch_t) { .seqs = sq, .n_seqs = 1 };
}


/*
 * A sequence's chunk of n of its len known tokens toks, from done on; its
 * last one's logits wanted when the chunk reaches the end of what is known
 */
static inline void
fg_test_backend_chunk(fg_backend_seq_t *sq, const int32_t *toks, size_t done,
    size_t n, size_t len, const int32_t *table, uint32_t n_blocks)
{
    sq->tokens = toks + done;
    sq->n_tokens = (uint32_t) n;
    sq->pos = (uint32_t) done;
    sq->block_table = table;
    sq->n_blocks = n_blocks;
    sq->want_logits = done + n == len;
    sq->want_hidden = 0;
    sq->want_all = 0;
}


#endif /* _FG_TEST_BACKEND_H_INCLUDED_ */
