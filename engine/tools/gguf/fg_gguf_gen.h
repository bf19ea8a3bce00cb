
/*
 * fairgate: a generator of Llama-shaped GGUF models with seeded random
 * weights, for the tests, and for speed figures at real sizes without
 * downloading real weights.  One seed names one file on every machine.
 * Architectures (arch): llama, qwen2, qwen3, gemma, gemma2, gemma3, phi3,
 * each with the tensors and keys llama.cpp reads for it.
 */

#ifndef _FG_GGUF_GEN_H_INCLUDED_
#define _FG_GGUF_GEN_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fg_gguf.h"


typedef struct fg_gguf_gen_conf_s  fg_gguf_gen_conf_t;
struct fg_gguf_writer_s;

/* writes every tokenizer.* entry, and the vocabulary's size */
typedef int (*fg_gguf_gen_tok_pt)(const fg_gguf_gen_conf_t *c,
    struct fg_gguf_writer_s *w, uint32_t *n_vocab, char *err, size_t errlen);


struct fg_gguf_gen_conf_s {
    const char  *arch;              /* "llama", "qwen3", "gemma3" ... */
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
    uint32_t     head_dim;          /* 0: n_embd / n_head; else written as
                                       attention.key_length */
    float        rms_eps;
    float        rope_base;

    /* written when non-zero: attention.sliding_window (gemma2, gemma3),
     * rope.freq_base_swa, the soft-capping values (gemma2) */
    uint32_t     n_swa;
    float        rope_base_swa;
    float        attn_softcap;
    float        final_softcap;

    /* Llama 3 rope scaling (factor > 1): written as rope_freqs.weight */
    float        rope_factor;
    float        rope_low;
    float        rope_high;
    uint32_t     rope_orig_ctx;

    /* Phi-3's LongRoPE (phi3): the original context, 0: none; written as
     * rope.scaling.original_context_length and attn_factor and the
     * rope_factors_long and _short tensors */
    uint32_t     longrope_ctx;

    int          tied;              /* no output.weight (gemma, gemma2:
                                       always) */
    uint64_t     seed;
    unsigned     threads;           /* quantizing; 0: one per CPU */

    /* NULL: a synthetic tokenizer (unk, bos, eos, 256 byte tokens, unused
     * padding); else every tokenizer.* entry of this GGUF file */
    const char  *tokenizer_from;

    /*
     * Else, when set, tokenizer_write writes it: fg_gguf_tokjson_gen()
     * reads a Hugging Face tokenizer.json and its tokenizer_config.json
     * (or NULL), and brings jansson to the programs that link it only.
     */
    fg_gguf_gen_tok_pt   tokenizer_write;
    const char          *tokenizer_json;
    const char          *tokenizer_config;
};


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
