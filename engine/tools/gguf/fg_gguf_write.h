
/*
 * fairgate: a GGUF writer, the reader's counterpart (engine/model/): the
 * generator's models, and the tests' files, well-formed or not.
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


#endif /* _FG_GGUF_WRITE_H_INCLUDED_ */
