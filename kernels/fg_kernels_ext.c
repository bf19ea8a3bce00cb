
/*
 * fairgate: kernels the cpu backend adds (fg_kernels_ext.h says why).
 *
 * Paged attention: an item is one token and one kv head; the query heads
 * of its group, up to 8 at a time, go through the sequence's blocks
 * together, each with an online softmax (a running maximum and sum; what
 * was summed shrinks when the maximum grows).  Per block and head, in
 * phases so that the work of different keys overlaps: the scores of the
 * block's keys 8 at a time (8 dot products, their sums transposed into
 * one vector), the block's maximum, the exponentials as vectors, then the
 * weighted values added to the head's output, which is the accumulator.
 *
 * The exponential is a vector one of the kernels' own (fg_k_exp8_avx2()),
 * shared by the attention and SwiGLU.
 */


#include <math.h>
#include <string.h>

#include "fg_kernels.h"
#include "fg_kernels_ext.h"
#include "fg_kernels_simd.h"

#if FG_K_X86
#include <immintrin.h>
#endif


/* query heads that go through the blocks together */
#define FG_K_ATTN_HEADS     8

/* multiply-adds worth a thread's wake-up */
#define FG_K_ATTN8_PAR_MIN  65536


typedef struct {
    float               *out;
    const float         *q;
    const fg_k_kv_t     *kv;
    const fg_k_batch_t  *b;
    size_t               n_head;
    size_t               group;
} fg_k_attn8_t;


#if FG_K_X86

static void fg_k_attn8_task(void *data, size_t i0, size_t i1,
    unsigned thread);
static void fg_k_attn8_item(const fg_k_attn8_t *a, size_t t, size_t kvh,
    size_t h0, size_t nh);

#endif


void
fg_k_attention8(fg_pool_t *pool, float *out, const float *q,
    const fg_k_kv_t *kv, const fg_k_batch_t *b, size_t n_head)
{
#if FG_K_X86
    size_t        t, items, work;
    fg_k_attn8_t  a;

    if (fg_k_simd && kv->head_dim % 8 == 0) {
        a.out = out;
        a.q = q;
        a.kv = kv;
        a.b = b;
        a.n_head = n_head;
        a.group = n_head / kv->n_kv_head;

        /*
         * Items are kv head major: the tokens of one kv head read the same
         * blocks.  A thread gets FG_K_ATTN8_PAR_MIN multiply-adds at least,
         * else waking it costs more than it saves.
         */
        items = b->n_tokens * kv->n_kv_head;
        work = 0;

        for (t = 0; t < b->n_tokens; t++) {
            work += (size_t) b->pos[t] + 1;
        }

        work = work * 2 * n_head * kv->head_dim / items;

        fg_pool_for(pool, items, FG_K_ATTN8_PAR_MIN / (work + 1) + 1,
                    fg_k_attn8_task, &a);
        return;
    }
#endif

    fg_k_attention(pool, out, q, kv, b, n_head);
}


#if FG_K_X86

static void
fg_k_attn8_task(void *data, size_t i0, size_t i1, unsigned thread)
{
    size_t               i, t, kvh, h0, nh;
    const fg_k_attn8_t  *a;

    (void) thread;

    a = data;

    for (i = i0; i < i1; i++) {
        kvh = i / a->b->n_tokens;
        t = i % a->b->n_tokens;

        for (h0 = 0; h0 < a->group; h0 += nh) {
            nh = a->group - h0 < FG_K_ATTN_HEADS ? a->group - h0
                                                 : FG_K_ATTN_HEADS;
            fg_k_attn8_item(a, t, kvh, kvh * a->group + h0, nh);
        }
    }
}


/*
 * e^x: 2^n * e^r with n = round(x / ln 2), |r| <= ln 2 / 2, e^r by its
 * Taylor series to r^6 (error below 2e-7 relative).  x is clamped to
 * [-86, 88], where 2^n stays a normal float: e^-86 = 4e-38 is as good as
 * 0 beside the softmax's e^0 = 1 and in silu's 1 + e^-g, and e^88 =
 * 1.7e38 makes silu(-88) and below a negligible -5e-37.
 */
FG_K_AVX2 static inline __attribute__((always_inline)) __m256
fg_k_exp8_avx2(__m256 x)
{
    __m256   n, r, p;
    __m256i  e;

    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-86.0f)),
                      _mm256_set1_ps(88.0f));

    n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);

    /* ln 2 in two parts, the first of 9 bits: n * it is exact */
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);

    p = _mm256_set1_ps(1.0f / 720);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));

    e = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);

    return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), e));
}


/* the horizontal sums of 8 vectors, as one vector */
FG_K_AVX2 static inline __attribute__((always_inline)) __m256
fg_k_hsum8_avx2(const __m256 *a)
{
    __m256  t0, t1, t2, t3, u0, u1;

    t0 = _mm256_hadd_ps(a[0], a[1]);
    t1 = _mm256_hadd_ps(a[2], a[3]);
    t2 = _mm256_hadd_ps(a[4], a[5]);
    t3 = _mm256_hadd_ps(a[6], a[7]);

    /* lanes 0-3: sums of a[0..3] over their low halves, 4-7 high halves */
    u0 = _mm256_hadd_ps(t0, t1);
    u1 = _mm256_hadd_ps(t2, t3);

    return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20),
                         _mm256_permute2f128_ps(u0, u1, 0x31));
}


/* the largest of 8 values */
FG_K_AVX2 static inline __attribute__((always_inline)) float
fg_k_hmax8_avx2(__m256 s)
{
    s = _mm256_max_ps(s, _mm256_permute2f128_ps(s, s, 1));
    s = _mm256_max_ps(s, _mm256_shuffle_ps(s, s, 0x4e));
    s = _mm256_max_ps(s, _mm256_shuffle_ps(s, s, 0xb1));

    return _mm256_cvtss_f32(s);
}


/* 8 dot products of q with 8 consecutive keys (cnt present), scaled */
FG_K_AVX2 static inline __attribute__((always_inline)) __m256
fg_k_attn8_scores(const float *qh, const float *k, size_t d, size_t cnt,
    float scale)
{
    size_t  i, j;
    __m256  acc[8], qv;

#pragma GCC unroll 8
    for (j = 0; j < 8; j++) {
        acc[j] = _mm256_setzero_ps();
    }

    for (i = 0; i < d; i += 8) {
        qv = _mm256_loadu_ps(qh + i);

#pragma GCC unroll 8
        for (j = 0; j < cnt; j++) {
            acc[j] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + j * d + i),
                                     acc[j]);
        }
    }

    return _mm256_mul_ps(fg_k_hsum8_avx2(acc), _mm256_set1_ps(scale));
}


/*
 * One block of nk keys against one query head, in phases so that the
 * work of different keys overlaps: all scores (the last 8 partial,
 * masked), their maximum and the rescaling it may bring, all
 * exponentials, then the weighted values added to o.
 */
FG_K_AVX2 static inline __attribute__((always_inline)) void
fg_k_attn8_block(const float *qh, float *o, const float *k, const float *v,
    size_t d, size_t nk, float scale, float *max, __m256 *sum)
{
    size_t  i, j, c, full, n8;
    float   p[FG_K_MAX_BLOCK], bmax, f;
    __m256  sc[FG_K_MAX_BLOCK / 8], m, mask, a0, a1, a2, a3;

    static const int32_t  lanes[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };

    full = nk / 8;
    n8 = (nk + 7) / 8;

    for (c = 0; c < full; c++) {
        sc[c] = fg_k_attn8_scores(qh, k + c * 8 * d, d, 8, scale);
    }

    mask = _mm256_setzero_ps();

    if (full < n8) {
        /* lanes past the block's keys: no load above, no weight below */
        mask = _mm256_castsi256_ps(_mm256_cmpgt_epi32(
                   _mm256_set1_epi32((int32_t) (nk - full * 8)),
                   _mm256_loadu_si256((const __m256i *) lanes)));

        sc[full] = _mm256_blendv_ps(_mm256_set1_ps(-INFINITY),
                                    fg_k_attn8_scores(qh, k + full * 8 * d, d,
                                                      nk - full * 8, scale),
                                    mask);
    }

    m = sc[0];

    for (c = 1; c < n8; c++) {
        m = _mm256_max_ps(m, sc[c]);
    }

    bmax = fg_k_hmax8_avx2(m);

    if (bmax > *max) {
        if (*max != -INFINITY) {
            f = expf(*max - bmax);
            m = _mm256_set1_ps(f);
            *sum = _mm256_mul_ps(*sum, m);

            for (i = 0; i < d; i += 8) {
                _mm256_storeu_ps(o + i,
                                 _mm256_mul_ps(m, _mm256_loadu_ps(o + i)));
            }
        }

        *max = bmax;
    }

    m = _mm256_set1_ps(*max);

    for (c = 0; c < n8; c++) {
        sc[c] = fg_k_exp8_avx2(_mm256_sub_ps(sc[c], m));

        if (c == full) {
            sc[c] = _mm256_and_ps(sc[c], mask);
        }

        *sum = _mm256_add_ps(*sum, sc[c]);
        _mm256_storeu_ps(p + c * 8, sc[c]);
    }

    /* four sums: one chain of FMAs would wait on each other */
    for (i = 0; i < d; i += 8) {
        a0 = _mm256_loadu_ps(o + i);
        a1 = _mm256_setzero_ps();
        a2 = _mm256_setzero_ps();
        a3 = _mm256_setzero_ps();

        for (j = 0; j + 4 <= nk; j += 4) {
            a0 = _mm256_fmadd_ps(_mm256_set1_ps(p[j]),
                                 _mm256_loadu_ps(v + j * d + i), a0);
            a1 = _mm256_fmadd_ps(_mm256_set1_ps(p[j + 1]),
                                 _mm256_loadu_ps(v + (j + 1) * d + i), a1);
            a2 = _mm256_fmadd_ps(_mm256_set1_ps(p[j + 2]),
                                 _mm256_loadu_ps(v + (j + 2) * d + i), a2);
            a3 = _mm256_fmadd_ps(_mm256_set1_ps(p[j + 3]),
                                 _mm256_loadu_ps(v + (j + 3) * d + i), a3);
        }

        for ( /* void */ ; j < nk; j++) {
            a0 = _mm256_fmadd_ps(_mm256_set1_ps(p[j]),
                                 _mm256_loadu_ps(v + j * d + i), a0);
        }

        _mm256_storeu_ps(o + i, _mm256_add_ps(_mm256_add_ps(a0, a1),
                                              _mm256_add_ps(a2, a3)));
    }
}


FG_K_AVX2 static void
fg_k_attn8_item(const fg_k_attn8_t *a, size_t t, size_t kvh, size_t h0,
    size_t nh)
{
    size_t            d, bs, n_keys, base, nk, i, g, block;
    float             scale, max[FG_K_ATTN_HEADS], total;
    float            *o[FG_K_ATTN_HEADS];
    __m256            sum[FG_K_ATTN_HEADS], cv;
    __m128            h;
    const float      *qh[FG_K_ATTN_HEADS], *kb, *vb;
    const int32_t    *bt;
    const fg_k_kv_t  *kv;

    kv = a->kv;
    d = kv->head_dim;
    bs = kv->block_size;

    n_keys = (size_t) a->b->pos[t] + 1;
    bt = a->b->block_tables + (size_t) a->b->seq[t] * a->b->max_blocks;
    scale = 1.0f / sqrtf((float) d);

    for (g = 0; g < nh; g++) {
        qh[g] = a->q + (t * a->n_head + h0 + g) * d;
        o[g] = a->out + (t * a->n_head + h0 + g) * d;
        max[g] = -INFINITY;
        sum[g] = _mm256_setzero_ps();

        memset(o[g], 0, d * sizeof(float));
    }

    for (base = 0; base < n_keys; base += bs) {
        block = (size_t) bt[base / bs];
        nk = n_keys - base < bs ? n_keys - base : bs;

        kb = kv->k + (block * kv->n_kv_head + kvh) * bs * d;
        vb = kv->v + (block * kv->n_kv_head + kvh) * bs * d;

        for (g = 0; g < nh; g++) {
            fg_k_attn8_block(qh[g], o[g], kb, vb, d, nk, scale, &max[g],
                             &sum[g]);
        }
    }

    for (g = 0; g < nh; g++) {
        h = _mm_add_ps(_mm256_castps256_ps128(sum[g]),
                       _mm256_extractf128_ps(sum[g], 1));
        h = _mm_add_ps(h, _mm_movehl_ps(h, h));
        h = _mm_add_ss(h, _mm_movehdup_ps(h));
        total = _mm_cvtss_f32(h);

        cv = _mm256_set1_ps(1.0f / total);

        for (i = 0; i < d; i += 8) {
            _mm256_storeu_ps(o[g] + i,
                             _mm256_mul_ps(cv, _mm256_loadu_ps(o[g] + i)));
        }
    }
}


FG_K_AVX2 static void
fg_k_swiglu8_avx2(float *y, const float *gate, const float *up, size_t n)
{
    size_t  i;
    __m256  g, one, keep;

    one = _mm256_set1_ps(1.0f);

    for (i = 0; i + 8 <= n; i += 8) {
        g = _mm256_loadu_ps(gate + i);

        /* below -88, where e^-g is clamped, silu(g) is 0 to 1e-36 */
        keep = _mm256_cmp_ps(g, _mm256_set1_ps(-88.0f), _CMP_NLT_UQ);

        g = _mm256_div_ps(g, _mm256_add_ps(one, fg_k_exp8_avx2(
                                 _mm256_sub_ps(_mm256_setzero_ps(), g))));
        g = _mm256_and_ps(g, keep);

        _mm256_storeu_ps(y + i, _mm256_mul_ps(g, _mm256_loadu_ps(up + i)));
    }

    if (i < n) {
        fg_k_swiglu(y + i, gate + i, up + i, n - i);
    }
}

#endif


void
fg_k_swiglu8(float *y, const float *gate, const float *up, size_t n)
{
#if FG_K_X86
    if (fg_k_simd) {
        fg_k_swiglu8_avx2(y, gate, up, n);
        return;
    }
#endif

    fg_k_swiglu(y, gate, up, n);
}
