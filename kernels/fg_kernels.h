
/*
 * fairgate: the compute kernels a backend calls for a Llama-family forward
 * pass with continuous batching and a paged KV cache.
 *
 * Every kernel takes plain float pointers and explicit sizes, knows nothing
 * of models or requests, and allocates nothing: the caller owns every
 * buffer.  The CPU versions are in cpu/: fg_kernels_cpu.c (element-wise,
 * RoPE, attention, sampling), fg_kernels_types.c (weight types),
 * fg_kernels_mm.c and fg_kernels_gemv.c (matrix products); the CUDA
 * backend's (cuda/fg_kernels_cuda.h) mirror each function one-to-one, with
 * the same arguments and a stream in place of the pool.
 *
 * Activations are row-major float32: a batch of n tokens is n rows.  Weight
 * matrices are row-major [out][in], as GGUF stores them, in one of the
 * types below.  Kernels that take a pool spread their rows over its
 * threads; a NULL pool runs them on the calling thread.  The others are
 * cheap enough to run on one thread, or take explicit rows so that the
 * caller can split them.
 *
 * The paged KV cache, for one layer:
 *
 *     k[block][kv_head][slot][head_dim]       block_size slots
 *     v[block][kv_head][slot][head_dim]       the same layout
 *
 * in IEEE halves (FG_K_F16, as llama.cpp keeps its cache: half the
 * memory, keys and values rounded to nearest even when written) or in
 * float32 (FG_K_F32); attention computes in float32 either way.
 *
 * The token at position p of a sequence whose block table is bt (int32
 * block ids) lives in block bt[p / block_size], slot p % block_size.  A
 * block holds one head's keys contiguously (block_size * head_dim floats),
 * so attention reads each head's keys as one run per block.
 *
 * Several models in one engine share one pool of such head blocks
 * (MuxServe's unified KV cache, engine/kv/fg_kv.h): then a layer's
 * maps say which head block of the pool holds head h of block b, and
 * fg_k_kv_head() finds it either way.
 *
 * Kernels trust their arguments: positions, block ids and token ids are
 * checked by the engine, which owns the block tables.
 */

#ifndef _FG_KERNELS_H_INCLUDED_
#define _FG_KERNELS_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_half.h"
#include "fg_pool.h"
#include "fg_kernels_quant.h"


#ifdef __cplusplus
extern "C" {
#endif


#define FG_K_QK8_0          32      /* values in a Q8_0 block */

/* limits of the attention and RoPE kernels' stack buffers */
#define FG_K_MAX_HEAD_DIM   512
#define FG_K_MAX_BLOCK      256


/* weight types, numbered as ggml (and GGUF) number them */
typedef enum {
    FG_K_F32 = 0,
    FG_K_F16 = 1,
    FG_K_Q4_0 = 2,
    FG_K_Q4_1 = 3,
    FG_K_Q5_0 = 6,
    FG_K_Q5_1 = 7,
    FG_K_Q8_0 = 8,
    FG_K_Q8_1 = 9,                  /* activations only */
    FG_K_Q2_K = 10,
    FG_K_Q3_K = 11,
    FG_K_Q4_K = 12,
    FG_K_Q5_K = 13,
    FG_K_Q6_K = 14,
    FG_K_Q8_K = 15,                 /* activations only */
    FG_K_BF16 = 30
} fg_k_type_e;


/* GGUF's Q8_0 block: value i is d * qs[i], d an IEEE half; 34 bytes */
typedef struct {
    uint16_t        d;
    int8_t          qs[FG_K_QK8_0];
} fg_k_block_q8_0_t;


typedef enum {
    FG_K_ROPE_ADJACENT = 0,         /* (x[2i], x[2i+1]): GGUF llama */
    FG_K_ROPE_HALVES                /* (x[i], x[i+d/2]): NEOX, qwen2 */
} fg_k_rope_e;


/* Llama 3's RoPE frequency scaling (rope_scaling type "llama3") */
typedef struct {
    float           factor;             /* 8 for Llama 3.1; <= 1: none */
    float           low_freq_factor;    /* 1 */
    float           high_freq_factor;   /* 4 */
    float           orig_ctx;           /* original context, 8192 */
} fg_k_rope_llama3_t;


/*
 * One layer of the paged KV cache (layout above); or, with maps, one
 * layer of a model's part of a shared pool of head blocks: head h of
 * block b is head block k_map[b * map_stride + h] of k (v_map of v),
 * head blocks being head_stride values apart.  Offsets count values of
 * the cache's type, not bytes.
 */
typedef struct {
    void           *k;
    void           *v;
    fg_k_type_e     type;               /* FG_K_F16 or FG_K_F32 */
    size_t          n_blocks;
    size_t          block_size;         /* tokens per block, 16 by default */
    size_t          n_kv_head;
    size_t          head_dim;
    const uint32_t *k_map;              /* NULL: the layout above */
    const uint32_t *v_map;
    size_t          map_stride;
    size_t          head_stride;        /* >= block_size * head_dim */
} fg_k_kv_t;


/* the bytes of one value of a cache of type (FG_K_F16 or FG_K_F32) */
static inline size_t
fg_k_kv_value_size(fg_k_type_e type)
{
    return type == FG_K_F16 ? sizeof(uint16_t) : sizeof(float);
}


/* where head h of block b begins in k (map k_map) or v (v_map), in values */
static inline size_t
fg_k_kv_head(const fg_k_kv_t *kv, const uint32_t *map, size_t block,
    size_t h)
{
    if (map != NULL) {
        return (size_t) map[block * kv->map_stride + h] * kv->head_stride;
    }

    return (block * kv->n_kv_head + h) * kv->block_size * kv->head_dim;
}


/*
 * The tokens of a step: sequences' new tokens side by side, token t at
 * position pos[t] of the sequence whose block table is row seq[t] of
 * block_tables.  A decode step has one token per sequence, a prefill chunk
 * several consecutive positions of one sequence.
 */
typedef struct {
    const int32_t  *pos;                /* [n_tokens] */
    const int32_t  *seq;                /* [n_tokens] */
    const int32_t  *block_tables;       /* [n_seqs][max_blocks] */
    size_t          max_blocks;
    size_t          n_tokens;
} fg_k_batch_t;


/* a sampling candidate; fg_k_sample() needs one per vocabulary entry */
typedef struct {
    float           v;
    int32_t         id;
} fg_k_cand_t;


/*
 * Chooses the SIMD paths (AVX2+FMA+F16C when the CPU has them, else
 * portable C; for the products of quantized weights AVX-512 with VNNI
 * where the CPU has it) and makes OpenBLAS run on the calling thread, as
 * the pool already spreads the work, ending the threads it started when
 * it was loaded (they would spin for a tenth of a second).  Call once
 * before any kernel, early in main(); idempotent.  FAIRGATE_CPU_SIMD=avx2
 * or generic in the environment holds it to that path.  Returns the
 * chosen path's name for the log: "avx512vnni", "avx2" or "generic".
 */
const char *fg_k_init(void);

/*
 * For tests and benchmarks: 0 forces portable C, 1 the best path,
 * FG_K_SIMD_AVX2 the AVX2 paths even where AVX-512 would run.
 */
#define FG_K_SIMD_AVX2      2

void fg_k_set_simd(int on);


/* ---- weight types ---- */

/* one half and bfloat16 to and from float: fg_half.h's */

/* bytes of a row of n values; 0 for an unknown type or a partial block */
size_t fg_k_row_size(fg_k_type_e type, size_t n);

/* a row of n values to float: embedding lookups, tiles, tests */
void fg_k_dequant_row(fg_k_type_e type, const void *src, float *dst,
    size_t n);

/*
 * float to a row of type, n a whole number of its blocks, rounded as
 * ggml's reference quantizers round (quantize_row_*_ref, no importance
 * matrix), so the bytes are llama.cpp's: every weight type, and the
 * activations' Q8_1 and Q8_K; nothing for an unknown type.
 */
void fg_k_quant_row(fg_k_type_e type, const float *src, void *dst,
    size_t n);


/* ---- matrix product ---- */

/*
 * Batch invariance: with it on, every product runs the direct kernels,
 * whose result for a row of x has the same bits whatever the other rows
 * and the threads, so a sequence decodes the same alone or in any batch
 * (the engine's determinism tests).  Off (the default), batches of more
 * than 16 rows go through sgemm, faster for prefill, whose sums depend on
 * the batch's size; batches of up to 16 rows are invariant either way
 * (with SIMD, ggml's quantized types take the direct kernels further:
 * Q4_0 .. Q5_1 up to 128 rows, the k-quants always).  Products of Q8_0
 * and ggml's quantized types quantize x (per 32 or 256 values) on both
 * paths alike, so that a row's results move with the batch by float
 * rounding only, not by the rounding of x (but for Q4_1's and Q5_1's
 * mins, which meet ggml's s = d * sum(q) in a half on the direct path
 * and the sum of d * q in sgemm: 2^-11 of their part at most).  Set it
 * before sizing work buffers.
 */
void fg_k_set_batch_invariant(int on);

/*
 * 1 when products of BF16 weights by more than 16 rows of x round x to
 * BF16 (to nearest even) and multiply with AVX512-BF16, as llama.cpp's
 * do on such CPUs: 2.5x the widened tiles' speed, x's values then within
 * 2^-9 of their own; never with batch invariance on.  Tests bound their
 * errors by it.
 */
int fg_k_bf16_rounds_x(void);

/*
 * Bytes of work buffer fg_k_matmul() needs for products of up to n rows
 * and in columns of x on n_threads threads; it grows with each argument,
 * so the size for a model's largest n and in serves all its products.
 */
size_t fg_k_matmul_work_size(fg_k_type_e type, size_t n, size_t in,
    unsigned n_threads);

/*
 * y[n][out] = x[n][in] * W^T, W row-major [out][in] of type.  The
 * quantized types need in to be a multiple of their block: 32 values,
 * 256 for the k-quants.  work is 64-byte aligned, of at least
 * fg_k_matmul_work_size(type, n, in, fg_pool_threads(pool)) bytes (it may
 * be NULL when that is 0).  y must not overlap x.
 */
void fg_k_matmul(fg_pool_t *pool, float *y, const float *x, const void *w,
    fg_k_type_e type, size_t n, size_t in, size_t out, void *work);

/*
 * Packed weights (docs/kernels.md, "Packed rows"): Q4_0, Q8_0 and Q4_K
 * matrices whose rows come in whole groups of 8, rewritten once so that
 * a group's 8 rows lie in the lanes of a vector, which the SIMD products
 * multiply 8 rows at a time.  fg_k_pack_size() is the packed matrix's
 * bytes (its plain size), or 0 where the type, the shape or the path
 * (portable C) packs nothing: the matrix stays plain.  fg_k_pack() writes
 * the packed copy to dst (not src).  fg_k_matmul_packed() multiplies by
 * it as fg_k_matmul() by the plain matrix, on the same work buffer: a
 * row's sums in one order on every path, whatever n and the threads (the
 * same bits alone or batched, and on the portable, AVX2 and AVX-512
 * paths), within float rounding of the plain product.
 */
size_t fg_k_pack_size(fg_k_type_e type, size_t in, size_t out);
void fg_k_pack(fg_k_type_e type, void *dst, const void *src, size_t in,
    size_t out);
void fg_k_matmul_packed(fg_pool_t *pool, float *y, const float *x,
    const void *w, fg_k_type_e type, size_t n, size_t in, size_t out,
    void *work);

/* row r of a packed matrix to float: a tied output's embedding lookups */
void fg_k_pack_dequant_row(fg_k_type_e type, const void *w, size_t in,
    size_t r, float *dst);


/* ---- element-wise, per row ---- */

/* y = x / sqrt(mean(x^2) + eps) * w, n_rows rows of dim; y may be x */
void fg_k_rmsnorm(float *y, const float *x, const float *w, size_t n_rows,
    size_t dim, float eps);

/* y = a + b; y may be a or b */
void fg_k_add(float *y, const float *a, const float *b, size_t n);

/* y = silu(gate) * up, silu(g) = g / (1 + e^-g); y may be gate or up */
void fg_k_swiglu(float *y, const float *gate, const float *up, size_t n);

/* softmax of each row in place, max subtracted first */
void fg_k_softmax(float *x, size_t n_rows, size_t n);

/*
 * The architectures beyond llama's (cpu/fg_kernels_arch.c; GeGLU beside
 * SwiGLU in cpu/fg_kernels_cpu.c).  GeGLU:
 * y = gelu(gate) * up, gelu's tanh approximation
 * 0.5 g (1 + tanh(sqrt(2 / pi) (g + 0.044715 g^3))) (gemma); y may be gate
 * or up.
 */
void fg_k_geglu(float *y, const float *gate, const float *up, size_t n);

/* x = cap * tanh(x / cap) in place (gemma2's soft-capping); cap > 0 */
void fg_k_softcap(float *x, size_t n, float cap);

/* x = x * s in place (gemma's embedding scale) */
void fg_k_scale(float *x, size_t n, float s);

/*
 * A per-head RMS norm (qwen3's and gemma3's q and k norms) is
 * fg_k_rmsnorm() over n_tokens * n_heads rows of head_dim: a row of q is
 * its heads side by side.
 */


/* ---- RoPE ---- */

/*
 * inv_freq[i] = theta^(-2i / rot_dim) for i < rot_dim / 2, divided by
 * factors[i] when factors is given (GGUF's rope_freqs.weight), then scaled
 * as Llama 3 does when llama3 is given with factor > 1.  Computed once per
 * model.
 */
void fg_k_rope_freqs(float *inv_freq, size_t rot_dim, float theta,
    const float *factors, const fg_k_rope_llama3_t *llama3);

/*
 * Rotates in place the first rot_dim values of each head of n_tokens rows
 * (row t starts at x + t * ld and holds n_heads heads of head_dim) by the
 * angles pos[t] * inv_freq[i], pairing values as rope says.  Call it for q
 * and for k; rot_dim is even, at most head_dim and FG_K_MAX_HEAD_DIM.
 */
void fg_k_rope(float *x, size_t n_tokens, size_t ld, size_t n_heads,
    size_t head_dim, size_t rot_dim, const int32_t *pos,
    const float *inv_freq, fg_k_rope_e rope);


/* ---- paged attention ---- */

/*
 * Writes the new tokens' keys and values into the cache: k and v are
 * [n_tokens][n_kv_head * head_dim] with row stride ld floats.  An F16
 * cache gets each value rounded to the nearest half, ties to even
 * (fg_f32_to_fp16()'s rounding, F16C's where the SIMD paths run).
 */
void fg_k_kv_write(const fg_k_kv_t *kv, const fg_k_batch_t *b,
    const float *k, const float *v, size_t ld);

/*
 * out[t][h] = softmax(q[t][h] . K^T / sqrt(head_dim)) V over the keys at
 * positions 0 .. pos[t] of token t's sequence, read from the cache, for
 * each token t and query head h; head h reads kv head
 * h / (n_head / n_kv_head).  q and out are [n_tokens][n_head * head_dim].
 * The new tokens' keys must be in the cache already (fg_k_kv_write()),
 * which makes decode and chunked prefill the same computation.
 */
void fg_k_attention(fg_pool_t *pool, float *out, const float *q,
    const fg_k_kv_t *kv, const fg_k_batch_t *b, size_t n_head);

/* what fg_k_attention_ext() does beyond fg_k_attention() */
typedef struct {
    float           scale;          /* of q . k; 0: 1 / sqrt(head_dim) */
    float           softcap;        /* scores to c tanh(s / c); 0: none */
    uint32_t        window;         /* keys at pos[t] - window + 1 ..
                                       pos[t] only; 0: all */
} fg_k_attn_opts_t;

/*
 * fg_k_attention() with another scale (gemma's query_pre_attn_scalar),
 * soft-capped scores (gemma2) and a sliding window (gemma2, gemma3):
 * a key at position j is seen from position p when p - window < j <= p,
 * llama.cpp's rule.  opts NULL is fg_k_attention().
 */
void fg_k_attention_ext(fg_pool_t *pool, float *out, const float *q,
    const fg_k_kv_t *kv, const fg_k_batch_t *b, size_t n_head,
    const fg_k_attn_opts_t *opts);


/* ---- sampling ---- */

/* the index of the largest value, the lowest on ties */
int32_t fg_k_argmax(const float *logits, size_t n);

/*
 * Samples an index from softmax(logits / temperature) restricted to the
 * top_k largest (0: all) and then to the smallest set of largest whose
 * probability reaches top_p (1: all), with u uniform in [0, 1) from the
 * caller's generator.  temperature <= 0 or top_k == 1 is argmax.  cand
 * holds n entries of scratch.  Ties keep the lower index first, so the
 * result depends on logits and u alone.
 */
int32_t fg_k_sample(const float *logits, size_t n, float temperature,
    size_t top_k, float top_p, double u, fg_k_cand_t *cand);


#ifdef __cplusplus
}
#endif


#endif /* _FG_KERNELS_H_INCLUDED_ */
