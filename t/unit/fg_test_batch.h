
/*
 * fairgate: the prompts and requests the batcher's tests submit, made in
 * one place.
 */

#ifndef _FG_TEST_BATCH_H_INCLUDED_
#define _FG_TEST_BATCH_H_INCLUDED_


#include <stdint.h>

#include "fg_batch.h"


/* n tokens below vocab: the same for the same salt, others for another */
static inline void
fg_test_prompt(int32_t *p, uint32_t n, uint32_t salt, uint32_t vocab)
{
    uint32_t  i;

    for (i = 0; i < n; i++) {
        p[i] = (int32_t) ((i * 131 + salt * 977 + 7) % vocab);
    }
}


/* a batcher's conf: the sizes of its steps, where its events go */
static inline void
fg_test_batch_conf(fg_batch_conf_t *bc, uint32_t max_batch,
    uint32_t max_tokens, uint32_t max_seqs, fg_batch_emit_pt emit, void *ctx)
{
    *bc = (fg_batch_conf_t) {
        .max_batch = max_batch, .max_tokens = max_tokens,
        .max_seqs = max_seqs, .emit = emit, .ctx = ctx
    };
}


/* a request of the prompt, sampled as by default; ignore_eos: it runs to
 * max_tokens */
static inline void
fg_test_batch_req(fg_batch_req_t *req, uint64_t id, const int32_t *prompt,
    uint32_t n, uint32_t max_tokens, unsigned ignore_eos)
{
    *req = (fg_batch_req_t) {
        .id = id, .prompt = prompt, .n_prompt = n, .max_tokens = max_tokens,
        .ignore_eos = ignore_eos
    };
    fg_sample_params_init(&req->sampling);
}


#endif /* _FG_TEST_BATCH_H_INCLUDED_ */
