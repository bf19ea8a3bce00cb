
/*
 * fairgate: the tensor types of ggml, as GGUF files number them: block
 * sizes and bytes per block of every type (so that a file with types the
 * engine does not compute with still parses and says which tensor is the
 * problem), and conversions to and from f32 for the four the engine
 * computes with: F32, F16, BF16 and Q8_0.
 *
 * Pure C, no state: the GGUF reader sizes tensors with it, the backends
 * and the model generator convert with it.
 */

#ifndef _FG_GGML_TYPES_H_INCLUDED_
#define _FG_GGML_TYPES_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_half.h"


/* tensor types, as numbered by ggml; the engine computes with four */
typedef enum {
    FG_GGML_F32 = 0,
    FG_GGML_F16 = 1,
    FG_GGML_Q8_0 = 8,
    FG_GGML_BF16 = 30,
    FG_GGML_NTYPES = 40
} fg_ggml_type_e;


const char *fg_ggml_type_name(uint32_t type);   /* NULL when unknown */
int fg_ggml_type_supported(uint32_t type);      /* F32, F16, BF16, Q8_0 */
uint32_t fg_ggml_block_size(uint32_t type);     /* 0 when unknown */
uint32_t fg_ggml_type_size(uint32_t type);      /* bytes per block */

/* bytes of n elements (n a multiple of the block size) */
uint64_t fg_ggml_row_size(uint32_t type, uint64_t n);

/* converts n elements of a supported type; -1 for other types */
int fg_ggml_to_f32(uint32_t type, const void *src, float *dst, size_t n);

/* from f32: n a multiple of 32 for Q8_0; -1 for unsupported types */
int fg_ggml_from_f32(uint32_t type, const float *src, void *dst, size_t n);



#endif /* _FG_GGML_TYPES_H_INCLUDED_ */
