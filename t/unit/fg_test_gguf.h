
/*
 * fairgate: the shape of a model the tests generate (fg_gguf_gen), the
 * rest the generator's defaults; the llama keys of one they write by hand.
 */

#ifndef _FG_TEST_GGUF_H_INCLUDED_
#define _FG_TEST_GGUF_H_INCLUDED_


#include <stdint.h>

#include "fg_ggml_types.h"
#include "fg_gguf_gen.h"
#include "fg_gguf_write.h"


static inline void
fg_test_gguf_shape(fg_gguf_gen_conf_t *c, uint32_t type, uint32_t embd,
    uint32_t layers, uint32_t ff, uint32_t heads, uint32_t kv_heads)
{
    fg_gguf_gen_defaults(c);
    c->type = type;
    c->n_embd = embd;
    c->n_layer = layers;
    c->n_ff = ff;
    c->n_head = heads;
    c->n_head_kv = kv_heads;
}



/* a llama's architecture and hyperparameters, written by hand */
static inline void
fg_test_gguf_llama(fg_gguf_writer_t *w, uint32_t ctx, uint32_t embd,
    uint32_t layers, uint32_t ff, uint32_t heads)
{
    fg_gguf_w_str(w, "general.architecture", "llama");
    fg_gguf_w_u32(w, "llama.context_length", ctx);
    fg_gguf_w_u32(w, "llama.embedding_length", embd);
    fg_gguf_w_u32(w, "llama.block_count", layers);
    fg_gguf_w_u32(w, "llama.feed_forward_length", ff);
    fg_gguf_w_u32(w, "llama.attention.head_count", heads);
}


#endif /* _FG_TEST_GGUF_H_INCLUDED_ */
