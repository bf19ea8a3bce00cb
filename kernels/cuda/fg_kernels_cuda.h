
/*
 * fairgate: the CUDA kernels of the GPU backend, callable from C
 * (fg_kernels_cuda_ops.cu: element-wise; _gemv.cu: matrix products of a
 * few rows; _attn.cu: the KV cache's write and attention; _sample.cu:
 * argmax and sampling; _arch.cu: the element-wise kernels of gemma).
 *
 * They mirror kernels/fg_kernels.h with a stream in place of the pool:
 * plain device pointers and explicit sizes, no allocation, launches only
 * (nothing here waits for the GPU).  Each returns the launch's error, 0
 * when it was queued.
 *
 * Differences from the CPU kernels:
 *
 *   - the KV cache holds halves (fp16): half the memory and half the
 *     bytes that decode reads, for a rounding of 2^-11 relative;
 *   - a product with F16 or BF16 weights rounds x to their type first,
 *     as cuBLAS does with half inputs and fp32 accumulation: the GEMV
 *     kernel here and cuBLAS then multiply the same numbers and differ
 *     only in the order of their fp32 sums, so a row gets nearly the same
 *     result alone (GEMV) or in a batch (cuBLAS); the quantized types
 *     multiply their exact values with float x in the GEMV, their fp16
 *     roundings with fp16 x in cuBLAS;
 *   - RoPE, the KV write and the biases of q, k and v are one kernel.
 *
 * The cache of one layer, halves:
 *
 *     k[block][kv_head][slot][head_dim]       as the CPU's, block_size slots
 *     v[block][kv_head][slot][head_dim]
 */

#ifndef _FG_KERNELS_CUDA_H_INCLUDED_
#define _FG_KERNELS_CUDA_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "fg_kernels.h"


/* rows up to which a matrix product is the GEMV kernel, not cuBLAS */
#define FG_CUK_GEMV_ROWS    8

/* the attention kernel's largest head */
#define FG_CUK_MAX_HEAD_DIM 512


#ifdef __cplusplus
extern "C" {
#endif


/* the rows of a step on the device: the CPU kernels' fg_k_batch_t, its
 * arrays in device memory, and how to tile attention */
typedef struct {
    fg_k_batch_t    tok;
    size_t          rows_per_seq;       /* about: > 1 tiles attention */
} fg_cuk_batch_t;


/* one layer of the cache on the device (halves, layout above) */
typedef struct {
    void           *k;
    void           *v;
    size_t          block_size;
    size_t          n_kv_head;
    size_t          head_dim;
} fg_cuk_kv_t;


/* x[t] = row tokens[t] of table (type, dim values a row), widened */
cudaError_t fg_cuk_embed(cudaStream_t s, float *x, const int32_t *tokens,
    size_t n, const void *table, fg_k_type_e type, size_t dim);

/* y = x / sqrt(mean(x^2) + eps) * w, n rows of dim; y may be x */
cudaError_t fg_cuk_rmsnorm(cudaStream_t s, float *y, const float *x,
    const float *w, size_t n, size_t dim, float eps);

/* y = silu(gate) * up, n values; y may be gate */
cudaError_t fg_cuk_swiglu(cudaStream_t s, float *y, const float *gate,
    const float *up, size_t n);

/* fg_k_geglu(), fg_k_softcap(), fg_k_scale(), fg_k_add() (_arch.cu) */
cudaError_t fg_cuk_geglu(cudaStream_t s, float *y, const float *gate,
    const float *up, size_t n);
cudaError_t fg_cuk_softcap(cudaStream_t s, float *x, size_t n, float cap);
cudaError_t fg_cuk_scale(cudaStream_t s, float *x, size_t n, float f);
cudaError_t fg_cuk_add(cudaStream_t s, float *y, const float *a,
    const float *b, size_t n);

/* dst[j] = src[rows[j]], n rows of dim floats: the wanted rows */
cudaError_t fg_cuk_gather(cudaStream_t s, float *dst, const float *src,
    const int32_t *rows, size_t n, size_t dim);

/* n floats to halves: fp16 (FG_K_F16) or bf16 (FG_K_BF16) */
cudaError_t fg_cuk_to_half(cudaStream_t s, void *dst, const float *src,
    size_t n, fg_k_type_e type);

/*
 * The quantized types (fg_kernels_quant.h): Q4_0, Q4_1, Q5_0, Q5_1,
 * Q8_0, Q2_K, Q3_K, Q4_K, Q5_K and Q6_K run in the GEMV kernel (each
 * value dequantized as it is read, multiplied with x in float), are
 * dequantized to fp16 for cuBLAS by tiles, and to float for embedding
 * rows.  A value is ggml's d * q (- m) rounded once.
 */

/* 1 for a type above */
int fg_cuk_type_quant(fg_k_type_e type);

/* bytes of a row of n values of a type the kernels run; 0 for another
 * type, or n not whole blocks (32 values, 256 for the k-quants) */
size_t fg_cuk_row_bytes(fg_k_type_e type, size_t n);

/* n values (whole blocks) of a quantized type to fp16 */
cudaError_t fg_cuk_dequant_f16(cudaStream_t s, void *dst, const void *src,
    fg_k_type_e type, size_t n);

/* dst[r] = row rows[r] of src (dim values a row, a quantized type),
 * n rows, in float */
cudaError_t fg_cuk_dequant_rows(cudaStream_t s, float *dst,
    const int32_t *rows, size_t n, const void *src, fg_k_type_e type,
    size_t dim);

/* up to three matrices of one type and in over the same x, one launch */
typedef struct {
    const void     *w[3];
    float          *y[3];
    int             out[3];             /* 0: no matrix */
} fg_cuk_gemv_set_t;


/*
 * y[n][out] (+)= x[n][in] W^T for n <= FG_CUK_GEMV_ROWS: one warp per
 * output column reads W once for all n rows.  accumulate adds to y (the
 * residual) instead of writing it.  A quantized type needs whole blocks
 * in a row (fg_cuk_row_bytes() not 0).
 */
cudaError_t fg_cuk_gemv(cudaStream_t s, float *y, const float *x,
    const void *w, fg_k_type_e type, size_t n, size_t in, size_t out,
    int accumulate);

/* the same for each matrix of set, in one launch */
cudaError_t fg_cuk_gemv_set(cudaStream_t s, const fg_cuk_gemv_set_t *set,
    const float *x, fg_k_type_e type, size_t n, size_t in, int accumulate);

/*
 * Per row t: adds the biases (NULL: none) to q, k and v, rotates q and k
 * (RoPE as fg_k_rope(), angles in double), and writes k and v into the
 * cache at pos[t].  q is [n][n_head * head_dim], k and v
 * [n][n_kv_head * head_dim].
 */
cudaError_t fg_cuk_qkv(cudaStream_t s, float *q, float *k, float *v,
    const float *bq, const float *bk, const float *bv, const fg_cuk_kv_t *kv,
    const fg_cuk_batch_t *b, size_t n_head, size_t rot_dim,
    const float *inv_freq, fg_k_rope_e rope);

/*
 * out[t][h] = softmax(q[t][h] . K^T / sqrt(head_dim)) V over positions
 * 0 .. pos[t] of row t's sequence, as fg_k_attention(): causal masking
 * of a prefill chunk and decode over block tables are the same loop.
 */
cudaError_t fg_cuk_attention(cudaStream_t s, float *out, const float *q,
    const fg_cuk_kv_t *kv, const fg_cuk_batch_t *b, size_t n_head);

/* fg_k_attention_ext(): a scale, soft-capped scores, a sliding window */
cudaError_t fg_cuk_attention_ext(cudaStream_t s, float *out, const float *q,
    const fg_cuk_kv_t *kv, const fg_cuk_batch_t *b, size_t n_head,
    const fg_k_attn_opts_t *opts);

/* out[r] = the lowest index of row r's maximum, n_rows rows of n */
cudaError_t fg_cuk_argmax(cudaStream_t s, int32_t *out,
    const float *logits, size_t n_rows, size_t n);

/*
 * Samples one token per row as fg_k_sample() does (softmax of
 * logits / temperature, top_k, then top_p over the sorted candidates, u
 * the caller's uniform draw), without sorting the vocabulary: the cuts
 * and the draw are thresholds found by bisection over the values.  The
 * parameters are per row, on the device; temperature <= 0 or top_k == 1
 * is the argmax.
 */
cudaError_t fg_cuk_sample(cudaStream_t s, int32_t *out,
    const float *logits, size_t n_rows, size_t n, const float *temperature,
    const int32_t *top_k, const float *top_p, const double *u);


#ifdef __cplusplus
}
#endif


#endif /* _FG_KERNELS_CUDA_H_INCLUDED_ */
