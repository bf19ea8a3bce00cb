
/*
 * fairgate: a generator of Llama-shaped GGUF models with seeded random
 * weights, for the tests, and for speed figures at real sizes without
 * downloading real weights.  One seed names one file on every machine.
 */

#ifndef _FG_GGUF_GEN_H_INCLUDED_
#define _FG_GGUF_GEN_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fg_gguf.h"


typedef struct {
    const char  *arch;              /* "llama" or "qwen2" */
    const char  *name;              /* general.name */
    uint32_t     type;              /* of the matrices (fg_gguf_mix.h) */
    uint32_t     mix;               /* 0, or a llama.cpp mixture of type */
    uint32_t     version;           /* GGUF version: 2 or 3 */
    uint32_t     alignment;

    uint32_t     n_vocab;           /* 0: the tokenizer's size */
    uint32_t     n_ctx;
    uint32_t     n_embd;
    uint32_t     n_layer;
    uint32_t     n_ff;
    uint32_t     n_head;
    uint32_t     n_head_kv;
    float        rms_eps;
    float        rope_base;

    /* Llama 3 rope scaling (factor > 1): written as rope_freqs.weight */
    float        rope_factor;
    float        rope_low;
    float        rope_high;
    uint32_t     rope_orig_ctx;

    int          tied;              /* no output.weight */
    uint64_t     seed;
    unsigned     threads;           /* quantizing; 0: one per CPU */

    /* NULL: a synthetic tokenizer (unk, bos, eos, 256 byte tokens, unused
     * padding); else every tokenizer.* entry of this GGUF file */
    const char  *tokenizer_from;
} fg_gguf_gen_conf_t;


/* the defaults: stories260K's shape, f32, seed 1, synthetic tokenizer */
void fg_gguf_gen_defaults(fg_gguf_gen_conf_t *c);

/* parameters the configuration describes (embeddings counted once) */
uint64_t fg_gguf_gen_params(const fg_gguf_gen_conf_t *c);

/*
 * Writes the model to f, or to path (removed again on a failure): 0, or
 * -1 with a message in err.
 */
int fg_gguf_gen(const fg_gguf_gen_conf_t *c, FILE *f, char *err,
    size_t errlen);
int fg_gguf_gen_file(const fg_gguf_gen_conf_t *c, const char *path,
    char *err, size_t errlen);


#endif /* _FG_GGUF_GEN_H_INCLUDED_ */
