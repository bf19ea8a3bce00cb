
/*
 * fairgate: GGUF writer, and a generator of Llama-shaped models with
 * seeded random weights (for tests, and for speed figures at real sizes
 * without downloading real weights).
 *
 * Metadata and tensor infos are kept in memory; tensor data is streamed,
 * one tensor after the other, so that a model of any size can be written.
 */

#ifndef _FG_GGUF_WRITE_H_INCLUDED_
#define _FG_GGUF_WRITE_H_INCLUDED_


#include <stdint.h>
#include <stdio.h>

#include "fg_gguf.h"


typedef struct fg_gguf_writer_s  fg_gguf_writer_t;


/* version 2 or 3; alignment a power of two (0: the default, 32) */
fg_gguf_writer_t *fg_gguf_writer_new(uint32_t version, uint32_t alignment);
void fg_gguf_writer_free(fg_gguf_writer_t *w);

/* the first error, "" when none */
const char *fg_gguf_writer_error(const fg_gguf_writer_t *w);

/*
 * Metadata.  Every call returns 0 or -1 (out of memory, a duplicate key);
 * after an error the writer refuses everything and keeps the message.
 */
int fg_gguf_w_u32(fg_gguf_writer_t *w, const char *key, uint32_t v);
int fg_gguf_w_i32(fg_gguf_writer_t *w, const char *key, int32_t v);
int fg_gguf_w_u64(fg_gguf_writer_t *w, const char *key, uint64_t v);
int fg_gguf_w_f32(fg_gguf_writer_t *w, const char *key, float v);
int fg_gguf_w_bool(fg_gguf_writer_t *w, const char *key, int v);
int fg_gguf_w_str(fg_gguf_writer_t *w, const char *key, const char *s);

/* any scalar type, value in its little-endian bytes (size of the type) */
int fg_gguf_w_scalar(fg_gguf_writer_t *w, const char *key, uint32_t type,
    const void *value);

/* numeric array: n elements of type, little-endian, packed */
int fg_gguf_w_arr(fg_gguf_writer_t *w, const char *key, uint32_t type,
    const void *elems, uint64_t n);

/* string array; lens NULL: NUL-terminated strings */
int fg_gguf_w_arr_str(fg_gguf_writer_t *w, const char *key,
    const char *const *strs, const size_t *lens, uint64_t n);

/* copies an entry read from another file */
int fg_gguf_w_copy(fg_gguf_writer_t *w, const fg_gguf_kv_t *kv);

/* declares a tensor: its data must then be written in declaration order */
int fg_gguf_w_tensor(fg_gguf_writer_t *w, const char *name, uint32_t type,
    uint32_t n_dims, const uint64_t *ne);

/* bytes of tensor i's data */
uint64_t fg_gguf_w_tensor_size(const fg_gguf_writer_t *w, uint32_t i);

/* header, metadata, tensor infos and the padding before the data */
int fg_gguf_w_write_header(fg_gguf_writer_t *w, FILE *f);

/*
 * Tensor data in declaration order, in pieces of any size that do not
 * cross from one tensor into the next; the padding after a tensor is
 * written when its last byte is.
 */
int fg_gguf_w_write_data(fg_gguf_writer_t *w, FILE *f, const void *data,
    uint64_t len);


/* the generator */

typedef struct {
    const char  *arch;              /* "llama" or "qwen2" */
    const char  *name;              /* general.name */
    uint32_t     type;              /* of the matrices: f32, f16, bf16, q8_0 */
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

    /* NULL: a synthetic tokenizer (unk, bos, eos, 256 byte tokens, unused
     * padding); else every tokenizer.* entry of this GGUF file */
    const char  *tokenizer_from;
} fg_gguf_gen_conf_t;


/* the defaults: stories260K's shape, f32, seed 1, synthetic tokenizer */
void fg_gguf_gen_defaults(fg_gguf_gen_conf_t *c);

/* parameters the configuration describes (embeddings counted once) */
uint64_t fg_gguf_gen_params(const fg_gguf_gen_conf_t *c);

int fg_gguf_gen(const fg_gguf_gen_conf_t *c, FILE *f, char *err,
    size_t errlen);
int fg_gguf_gen_file(const fg_gguf_gen_conf_t *c, const char *path,
    char *err, size_t errlen);


#endif /* _FG_GGUF_WRITE_H_INCLUDED_ */
