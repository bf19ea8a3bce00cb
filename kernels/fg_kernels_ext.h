
/*
 * fairgate: kernels the cpu backend adds to fg_kernels.h, for what small
 * models spend their steps on.  Each takes the arguments of its
 * fg_kernels.h counterpart, gives its result to float rounding, and runs
 * that counterpart where its AVX2 path does not apply.
 *
 * fg_k_attention8(): fg_k_attention() visits keys one at a time: a dot
 * product, an expf() and an axpy per key and query head, each a call,
 * each summing head_dim values.  With small heads (stories260K's are 8
 * values) the calls and the scalar expf() are most of the step: attention
 * then costs more than all the matrix products at a context of a
 * hundred.  This one takes a block's keys 8 at a time: 8 dot products
 * reduced into one vector of scores, one vector exponential, and the
 * query heads that share a kv head read each block once.  Its AVX2 path
 * needs head_dim to be a multiple of 8.
 *
 * fg_k_swiglu8(): silu(gate) * up with a vector exponential, where
 * fg_k_swiglu() calls expf() per value: a fifth of a small model's
 * batched decode step.
 */

#ifndef _FG_KERNELS_EXT_H_INCLUDED_
#define _FG_KERNELS_EXT_H_INCLUDED_


#include "fg_kernels.h"


void fg_k_attention8(fg_pool_t *pool, float *out, const float *q,
    const fg_k_kv_t *kv, const fg_k_batch_t *b, size_t n_head);

void fg_k_swiglu8(float *y, const float *gate, const float *up, size_t n);


#endif /* _FG_KERNELS_EXT_H_INCLUDED_ */
