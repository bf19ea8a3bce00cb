
/*
 * fairgate: the tensor types of ggml, as GGUF files number them: block
 * sizes and bytes per block of every type (so that a file with types the
 * engine does not compute with still parses and says which tensor is the
 * problem), and which of them the engine computes with.
 *
 * Pure C, no state: the GGUF reader sizes tensors with it, the model
 * binding checks types with it.  The conversions of rows to and from
 * float are the kernels' (fg_k_dequant_row(), fg_k_quant_row()), which
 * the backends and the model generator call: this layer stays free of
 * the kernels, for the gateway links it without them.
 */

#ifndef _FG_GGML_TYPES_H_INCLUDED_
#define _FG_GGML_TYPES_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_half.h"


/* tensor types, as numbered by ggml: those the engine computes with */
typedef enum {
    FG_GGML_F32 = 0,
    FG_GGML_F16 = 1,
    FG_GGML_Q4_0 = 2,
    FG_GGML_Q4_1 = 3,
    FG_GGML_Q5_0 = 6,
    FG_GGML_Q5_1 = 7,
    FG_GGML_Q8_0 = 8,
    FG_GGML_Q2_K = 10,
    FG_GGML_Q3_K = 11,
    FG_GGML_Q4_K = 12,
    FG_GGML_Q5_K = 13,
    FG_GGML_Q6_K = 14,
    FG_GGML_BF16 = 30,
    FG_GGML_NTYPES = 40
} fg_ggml_type_e;


const char *fg_ggml_type_name(uint32_t type);   /* NULL when unknown */
int fg_ggml_type_supported(uint32_t type);      /* the weight types above */
uint32_t fg_ggml_block_size(uint32_t type);     /* 0 when unknown */
uint32_t fg_ggml_type_size(uint32_t type);      /* bytes per block */

/* bytes of n elements (n a multiple of the block size) */
uint64_t fg_ggml_row_size(uint32_t type, uint64_t n);



#endif /* _FG_GGML_TYPES_H_INCLUDED_ */
