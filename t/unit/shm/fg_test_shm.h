
/*
 * fairgate: the engine's side of a segment with no model behind it
 * (vocabulary 1000, context 4096, no eos or bos), for the tests of the
 * protocol that play the engine themselves.
 */

#ifndef _FG_TEST_SHM_H_INCLUDED_
#define _FG_TEST_SHM_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_shm_engine.h"


/* kv_blocks of 16 positions; 4 sequences, 4 a step of 64 tokens */
static inline fg_shm_engine_t *
fg_test_shm_engine(const char *name, uint32_t kv_blocks, char *err,
    size_t errlen)
{
    fg_shm_engine_conf_t  sc;

    sc = (fg_shm_engine_conf_t) {
        .name = name, .max_workers = 2,
        .shape = {
            .vocab = 1000, .context = 4096, .eos = -1, .bos = -1,
            .block_size = 16, .kv_blocks = kv_blocks, .max_batch = 4,
            .max_seqs = 4, .step_tokens = 64
        },
        .model = "none", .backend = "none"
    };

    return fg_shm_engine_create(&sc, err, errlen);
}


#endif /* _FG_TEST_SHM_H_INCLUDED_ */
