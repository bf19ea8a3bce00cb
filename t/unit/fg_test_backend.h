
/*
 * fairgate: the backend configurations and steps the tests build again
 * and again, filled in one place.
 */

#ifndef _FG_TEST_BACKEND_H_INCLUDED_
#define _FG_TEST_BACKEND_H_INCLUDED_


#include <stdint.h>
#include <string.h>

#include "fg_backend.h"


/* a backend of the model at path (NULL: none, the sim backend's vocab) */
static inline void
fg_test_backend_conf(fg_backend_conf_t *conf, const char *path,
    uint32_t kv_blocks, uint32_t block_size, uint32_t max_batch,
    uint32_t max_tokens, uint32_t threads)
{
    memset(conf, 0, sizeof(fg_backend_conf_t));
    conf->model_path = path;
    conf->kv_blocks = kv_blocks;
    conf->block_size = block_size;
    conf->max_batch = max_batch;
    conf->max_tokens = max_tokens;
    conf->threads = threads;
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
    memset(sq, 0, sizeof(fg_backend_seq_t));
    sq->tokens = tokens;
    sq->n_tokens = n;
    sq->pos = pos;
    sq->block_table = table;
    sq->n_blocks = n_blocks;
    sq->want_logits = 1;
    sq->first = pos == 0;
    batch->seqs = sq;
    batch->n_seqs = 1;
}


#endif /* _FG_TEST_BACKEND_H_INCLUDED_ */
