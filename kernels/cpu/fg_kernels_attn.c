
/*
 * fairgate: the paged KV cache's kernels of the CPU backend: writing new
 * keys and values, in float32 or IEEE halves (fg_k_kv_t's type), and
 * attention over them, with an online softmax a block at a time.
 */


#include <math.h>
#include <string.h>

#include "fg_kernels_gemv.h"


/* query heads of one kv head that an attention item takes together */
#define FG_K_ATTN_HEADS    8

/*
 * Multiply-adds below which attention stays on one thread: waking a
 * worker costs microseconds, tens of them when the other cores are busy.
 */
#define FG_K_ATTN_PAR_MIN  65536


typedef struct {
    float               *out;
    const float         *q;
    const fg_k_kv_t     *kv;
    const fg_k_batch_t  *b;
    size_t               n_head;
    size_t               group;        /* query heads per kv head */
    size_t               chunks;       /* items per kv head and token */
    float                scale;
    float                softcap;      /* 0: none */
    size_t               window;       /* 0: every key */
} fg_k_attn_t;


static void fg_k_attn_task(void *data, size_t i0, size_t i1,
    unsigned thread);
static void fg_k_attn_heads(const fg_k_attn_t *a, size_t t, size_t h0,
    size_t nh);
#if FG_K_X86
static void fg_k_attn_heads_avx2(const fg_k_attn_t *a, size_t t, size_t h0,
    size_t nh);
#endif


#if FG_K_X86

/* the sums of 8 vectors' lanes, as one vector: s[k] = sum of v[k] */
FG_K_AVX2 static inline __attribute__((always_inline)) __m256
fg_k_sums8_avx2(const __m256 *v)
{
    __m256  a, b, c, e;

    /* pairwise sums: a = v0 01 23, v1 01 23 | v0 45 67, v1 45 67 ... */
    a = _mm256_hadd_ps(v[0], v[1]);
    b = _mm256_hadd_ps(v[2], v[3]);
    c = _mm256_hadd_ps(v[4], v[5]);
    e = _mm256_hadd_ps(v[6], v[7]);

    /* then v0..v3 0123 | v0..v3 4567, and the same for v4..v7 */
    a = _mm256_hadd_ps(a, b);
    c = _mm256_hadd_ps(c, e);

    /*
     * a's low half beside c's high half, plus the other two: a blend
     * and one lane crossing, where two crossings would wait on the one
     * port that does them.
     */
    return _mm256_add_ps(_mm256_blend_ps(a, c, 0xf0),
                         _mm256_permute2f128_ps(a, c, 0x21));
}


/* value i of a cache's run of type */
static inline const void *
fg_k_at(const void *p, size_t i, fg_k_type_e type)
{
    return (const char *) p + i * fg_k_kv_value_size(type);
}


/* x to halves by F16C, 8 at a time, to nearest even: how many it did */
FG_K_AVX2 static size_t
fg_k_to_half_avx2(uint16_t *h, const float *x, size_t n)
{
    size_t  i;

    for (i = 0; i + 8 <= n; i += 8) {
        _mm_storeu_si128((__m128i *) (h + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i),
                                         _MM_FROUND_TO_NEAREST_INT
                                         | _MM_FROUND_NO_EXC));
    }

    return i;
}

#endif


/* value off of a cache's k or v, in its type */
static inline void *
fg_k_kv_at(const fg_k_kv_t *kv, void *base, size_t off)
{
    return (char *) base + off * fg_k_kv_value_size(kv->type);
}


/* d values of x into the cache at p, rounded to halves for an F16 cache */
static void
fg_k_kv_put(const fg_k_kv_t *kv, void *p, const float *x, size_t d)
{
    size_t     i;
    uint16_t  *h;

    if (kv->type != FG_K_F16) {
        memcpy(p, x, d * sizeof(float));
        return;
    }

    h = p;
    i = 0;

#if FG_K_X86
    if (fg_k_simd) {
        i = fg_k_to_half_avx2(h, x, d);
    }
#endif

    for ( /* void */ ; i < d; i++) {
        h[i] = fg_f32_to_fp16(x[i]);
    }
}


void
fg_k_kv_write(const fg_k_kv_t *kv, const fg_k_batch_t *b, const float *k,
    const float *v, size_t ld)
{
    size_t   t, h, d, bs, p, off;
    int32_t  block;

    d = kv->head_dim;
    bs = kv->block_size;

    for (t = 0; t < b->n_tokens; t++) {
        p = (size_t) b->pos[t];
        block = b->block_tables[(size_t) b->seq[t] * b->max_blocks + p / bs];

        for (h = 0; h < kv->n_kv_head; h++) {
            off = (p % bs) * d;

            fg_k_kv_put(kv, fg_k_kv_at(kv, kv->k,
                            fg_k_kv_head(kv, kv->k_map, block, h) + off),
                        k + t * ld + h * d, d);
            fg_k_kv_put(kv, fg_k_kv_at(kv, kv->v,
                            fg_k_kv_head(kv, kv->v_map, block, h) + off),
                        v + t * ld + h * d, d);
        }
    }
}


void
fg_k_attention(fg_pool_t *pool, float *out, const float *q,
    const fg_k_kv_t *kv, const fg_k_batch_t *b, size_t n_head)
{
    fg_k_attention_ext(pool, out, q, kv, b, n_head, NULL);
}


/* the first key token t sees: its window's, or 0 */
static inline size_t
fg_k_attn_first(const fg_k_attn_t *a, size_t t)
{
    size_t  p;

    p = (size_t) a->b->pos[t];

    return a->window && p >= a->window ? p + 1 - a->window : 0;
}


void
fg_k_attention_ext(fg_pool_t *pool, float *out, const float *q,
    const fg_k_kv_t *kv, const fg_k_batch_t *b, size_t n_head,
    const fg_k_attn_opts_t *opts)
{
    size_t       t, keys, work;
    fg_k_attn_t  a;

    a.scale = 1.0f / sqrtf((float) kv->head_dim);
    a.softcap = 0.0f;
    a.window = 0;

    if (opts) {
        a.scale = opts->scale > 0 ? opts->scale : a.scale;
        a.softcap = opts->softcap;
        a.window = opts->window;
    }

    a.out = out;
    a.q = q;
    a.kv = kv;
    a.b = b;
    a.n_head = n_head;
    a.group = n_head / kv->n_kv_head;
    a.chunks = (a.group + FG_K_ATTN_HEADS - 1) / FG_K_ATTN_HEADS;

    /*
     * An item is a token and up to FG_K_ATTN_HEADS query heads of one kv
     * head, which go through its blocks together: each block of keys and
     * values is read once for them.  Items run kv head by kv head, then
     * token: threads get whole kv heads, the same work each even when a
     * prefill chunk's tokens see ever more keys.
     */
    keys = 0;

    for (t = 0; t < b->n_tokens; t++) {
        keys += (size_t) b->pos[t] + 1 - fg_k_attn_first(&a, t);
    }

    /* items enough for FG_K_ATTN_PAR_MIN multiply-adds a thread, or one */
    work = 2 * keys / (b->n_tokens ? b->n_tokens : 1) * kv->head_dim
           * (a.group < FG_K_ATTN_HEADS ? a.group : FG_K_ATTN_HEADS);

    fg_pool_for(pool, kv->n_kv_head * a.chunks * b->n_tokens,
                FG_K_ATTN_PAR_MIN / (work + 1) + 1, fg_k_attn_task, &a);
}


static void
fg_k_attn_task(void *data, size_t i0, size_t i1, unsigned thread)
{
    size_t              i, t, chunk, h0, nh;
    const fg_k_attn_t  *a;

    (void) thread;

    a = data;

    for (i = i0; i < i1; i++) {
        t = i % a->b->n_tokens;
        chunk = i / a->b->n_tokens;

        /* chunk counts kv heads' chunks: chunk / chunks is the kv head */
        h0 = (chunk / a->chunks) * a->group
             + (chunk % a->chunks) * FG_K_ATTN_HEADS;
        nh = (chunk / a->chunks + 1) * a->group - h0;
        nh = nh < FG_K_ATTN_HEADS ? nh : FG_K_ATTN_HEADS;

#if FG_K_X86
        if (fg_k_simd && a->kv->head_dim % 8 == 0) {
            fg_k_attn_heads_avx2(a, t, h0, nh);
            continue;
        }
#endif

        fg_k_attn_heads(a, t, h0, nh);
    }
}


/* key or value j of a head's block as floats: in place, or widened */
static inline const float *
fg_k_kv_row(const fg_k_kv_t *kv, const void *base, size_t j, float *row)
{
    size_t           i, d;
    const uint16_t  *h;

    d = kv->head_dim;

    if (kv->type != FG_K_F16) {
        return (const float *) base + j * d;
    }

    h = (const uint16_t *) base + j * d;

    for (i = 0; i < d; i++) {
        row[i] = fg_fp16_to_f32(h[i]);
    }

    return row;
}


/*
 * Query heads h0 .. h0+nh-1 of token t, a block of keys at a time with a
 * running maximum per head (online softmax): no buffer as long as the
 * context.
 */
static void
fg_k_attn_heads(const fg_k_attn_t *a, size_t t, size_t h0, size_t nh)
{
    size_t            d, bs, n_keys, base, nk, j, g, kvh, block, j0, s0;
    float             s[FG_K_MAX_BLOCK], max[FG_K_ATTN_HEADS];
    float             sum[FG_K_ATTN_HEADS], scale, bmax, c, e;
    float             row[FG_K_MAX_HEAD_DIM];
    float            *o;
    const void       *kb, *vb;
    const float      *qh;
    const int32_t    *bt;
    const fg_k_kv_t  *kv;

    kv = a->kv;
    d = kv->head_dim;
    bs = kv->block_size;
    kvh = h0 / a->group;

    n_keys = (size_t) a->b->pos[t] + 1;
    bt = a->b->block_tables + (size_t) a->b->seq[t] * a->b->max_blocks;

    scale = a->scale;
    j0 = fg_k_attn_first(a, t);

    for (g = 0; g < nh; g++) {
        max[g] = -INFINITY;
        sum[g] = 0.0f;
    }

    memset(a->out + (t * a->n_head + h0) * d, 0, nh * d * sizeof(float));

    for (base = j0 - j0 % bs; base < n_keys; base += bs) {
        block = (size_t) bt[base / bs];
        nk = n_keys - base < bs ? n_keys - base : bs;
        s0 = base < j0 ? j0 - base : 0;

        kb = fg_k_kv_at(kv, kv->k,
                        fg_k_kv_head(kv, kv->k_map, block, kvh) + s0 * d);
        vb = fg_k_kv_at(kv, kv->v,
                        fg_k_kv_head(kv, kv->v_map, block, kvh) + s0 * d);
        nk -= s0;

        for (g = 0; g < nh; g++) {
            qh = a->q + (t * a->n_head + h0 + g) * d;
            o = a->out + (t * a->n_head + h0 + g) * d;

            bmax = -INFINITY;

            for (j = 0; j < nk; j++) {
                s[j] = fg_k_dot(qh, fg_k_kv_row(kv, kb, j, row), d)
                       * scale;

                if (a->softcap != 0.0f) {
                    s[j] = a->softcap * tanhf(s[j] / a->softcap);
                }

                bmax = s[j] > bmax ? s[j] : bmax;
            }

            /* a new maximum: the sums so far shrink by e^(old - new) */
            if (bmax > max[g]) {
                if (sum[g] != 0.0f) {
                    c = expf(max[g] - bmax);
                    sum[g] *= c;

                    for (j = 0; j < d; j++) {
                        o[j] *= c;
                    }
                }

                max[g] = bmax;
            }

            for (j = 0; j < nk; j++) {
                e = expf(s[j] - max[g]);
                sum[g] += e;
                fg_k_axpy(o, e, fg_k_kv_row(kv, vb, j, row), d);
            }
        }
    }

    for (g = 0; g < nh; g++) {
        o = a->out + (t * a->n_head + h0 + g) * d;
        c = 1.0f / sum[g];

        for (j = 0; j < d; j++) {
            o[j] *= c;
        }
    }
}


#if FG_K_X86

/* scale times the dot products of q with cnt consecutive keys, as lanes */
FG_K_AVX2 static inline __attribute__((always_inline)) __m256
fg_k_attn_scores_avx2(const float *qh, const void *k, size_t d, size_t cnt,
    float scale, fg_k_type_e type)
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
            acc[j] = _mm256_fmadd_ps(qv, fg_k_load8_avx2(k, j * d + i, type),
                                     acc[j]);
        }
    }

    return _mm256_mul_ps(fg_k_sums8_avx2(acc), _mm256_set1_ps(scale));
}


/*
 * A block's nk keys against one query head, in phases so that the work
 * of different keys overlaps: the scores 8 keys at a time, kept in
 * registers (the last 8 may be partial: lanes past nk get -inf, then 0
 * after the exponential), their maximum and the rescaling a new maximum
 * brings, the exponentials as vectors and their vector sum, then the
 * weighted values added to o in four chains, since one chain of FMAs
 * would wait on each other.
 */
/* cap tanh(s / cap) as cap (1 - 2 / (e^(2s / cap) + 1)), 8 at a time */
FG_K_AVX2 static inline __attribute__((always_inline)) __m256
fg_k_softcap8_avx2(__m256 s, float cap)
{
    __m256  e;

    e = fg_k_exp8_avx2(_mm256_mul_ps(s, _mm256_set1_ps(2.0f / cap)));
    e = _mm256_div_ps(_mm256_set1_ps(2.0f),
                      _mm256_add_ps(e, _mm256_set1_ps(1.0f)));

    return _mm256_mul_ps(_mm256_set1_ps(cap),
                         _mm256_sub_ps(_mm256_set1_ps(1.0f), e));
}


FG_K_AVX2 static inline __attribute__((always_inline)) void
fg_k_attn_block_avx2(const float *qh, float *o, const void *kb,
    const void *vb, size_t d, size_t nk, float scale, float softcap,
    float *max, __m256 *sum, fg_k_type_e type)
{
    size_t  i, j, k, c, full, n8;
    float   p[FG_K_MAX_BLOCK], bmax;
    __m256  sc[FG_K_MAX_BLOCK / 8], m, mask, acc[4];

    static const int32_t  lanes[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };

    full = nk / 8;
    n8 = (nk + 7) / 8;
    mask = _mm256_setzero_ps();

    for (c = 0; c < full; c++) {
        sc[c] = fg_k_attn_scores_avx2(qh, fg_k_at(kb, c * 8 * d, type), d,
                                      8, scale, type);

        if (softcap != 0.0f) {
            sc[c] = fg_k_softcap8_avx2(sc[c], softcap);
        }
    }

    if (full < n8) {
        mask = _mm256_castsi256_ps(_mm256_cmpgt_epi32(
                   _mm256_set1_epi32((int32_t) (nk - full * 8)),
                   _mm256_loadu_si256((const __m256i *) lanes)));

        m = fg_k_attn_scores_avx2(qh, fg_k_at(kb, full * 8 * d, type), d,
                                  nk - full * 8, scale, type);

        if (softcap != 0.0f) {
            m = fg_k_softcap8_avx2(m, softcap);
        }

        sc[full] = _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), m, mask);
    }

    m = _mm256_set1_ps(-INFINITY);

    for (c = 0; c < n8; c++) {
        m = _mm256_max_ps(m, sc[c]);
    }

    bmax = fg_k_hmax8_avx2(m);

    /* a new maximum: what was summed shrinks by e^(old - new) */
    if (bmax > *max) {
        if (*max != -INFINITY) {
            m = _mm256_set1_ps(expf(*max - bmax));
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

    for (i = 0; i < d; i += 8) {
        acc[0] = _mm256_loadu_ps(o + i);
        acc[1] = _mm256_setzero_ps();
        acc[2] = _mm256_setzero_ps();
        acc[3] = _mm256_setzero_ps();

        for (j = 0; j + 4 <= nk; j += 4) {
#pragma GCC unroll 4
            for (k = 0; k < 4; k++) {
                acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(p[j + k]),
                             fg_k_load8_avx2(vb, (j + k) * d + i, type),
                             acc[k]);
            }
        }

        for ( /* void */ ; j < nk; j++) {
            acc[0] = _mm256_fmadd_ps(_mm256_set1_ps(p[j]),
                                     fg_k_load8_avx2(vb, j * d + i, type),
                                     acc[0]);
        }

        _mm256_storeu_ps(o + i, _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]),
                                              _mm256_add_ps(acc[2], acc[3])));
    }
}


/*
 * fg_k_attn_heads() for head_dim d, a multiple of 8, without a call per
 * key: for small heads (stories260K's are 8 values) calls, a horizontal
 * sum and an expf() per key were most of the time.  Each head keeps its
 * sum of exponentials as a vector, added up once at the end.
 */
FG_K_AVX2 static inline __attribute__((always_inline)) void
fg_k_attn_heads_d_avx2(const fg_k_attn_t *a, size_t t, size_t h0, size_t nh,
    size_t d, fg_k_type_e type)
{
    size_t            bs, n_keys, base, nk, i, g, kvh, block, j0, s0;
    float             max[FG_K_ATTN_HEADS], scale;
    float            *o[FG_K_ATTN_HEADS];
    __m256            sum[FG_K_ATTN_HEADS], vc;
    const void       *kb, *vb;
    const float      *qh[FG_K_ATTN_HEADS];
    const int32_t    *bt;
    const fg_k_kv_t  *kv;

    kv = a->kv;
    bs = kv->block_size;
    kvh = h0 / a->group;

    n_keys = (size_t) a->b->pos[t] + 1;
    bt = a->b->block_tables + (size_t) a->b->seq[t] * a->b->max_blocks;

    scale = a->scale;
    j0 = fg_k_attn_first(a, t);

    for (g = 0; g < nh; g++) {
        qh[g] = a->q + (t * a->n_head + h0 + g) * d;
        o[g] = a->out + (t * a->n_head + h0 + g) * d;
        max[g] = -INFINITY;
        sum[g] = _mm256_setzero_ps();

        for (i = 0; i < d; i += 8) {
            _mm256_storeu_ps(o[g] + i, _mm256_setzero_ps());
        }
    }

    for (base = j0 - j0 % bs; base < n_keys; base += bs) {
        block = (size_t) bt[base / bs];
        nk = n_keys - base < bs ? n_keys - base : bs;
        s0 = base < j0 ? j0 - base : 0;

        kb = fg_k_kv_at(kv, kv->k,
                        fg_k_kv_head(kv, kv->k_map, block, kvh) + s0 * d);
        vb = fg_k_kv_at(kv, kv->v,
                        fg_k_kv_head(kv, kv->v_map, block, kvh) + s0 * d);
        nk -= s0;

        for (g = 0; g < nh; g++) {
            fg_k_attn_block_avx2(qh[g], o[g], kb, vb, d, nk, scale,
                                 a->softcap, &max[g], &sum[g], type);
        }
    }

    for (g = 0; g < nh; g++) {
        vc = _mm256_set1_ps(1.0f / fg_k_hsum8_avx2(sum[g]));

        for (i = 0; i < d; i += 8) {
            _mm256_storeu_ps(o[g] + i,
                             _mm256_mul_ps(vc, _mm256_loadu_ps(o[g] + i)));
        }
    }
}


/*
 * Common head sizes get a copy of the code with d a constant, whose loops
 * over a head's values the compiler unrolls or removes: about 20% less
 * time for heads of 8 (stories260K), 5-8% for 64.  Each cache type has
 * its copies too, whose loads are F16C's widening or plain floats.
 */
FG_K_AVX2 static inline __attribute__((always_inline)) void
fg_k_attn_heads_type_avx2(const fg_k_attn_t *a, size_t t, size_t h0,
    size_t nh, fg_k_type_e type)
{
    size_t  d;

    d = a->kv->head_dim;

    switch (d) {

    case 8:
        fg_k_attn_heads_d_avx2(a, t, h0, nh, 8, type);
        break;

    case 64:
        fg_k_attn_heads_d_avx2(a, t, h0, nh, 64, type);
        break;

    case 128:
        fg_k_attn_heads_d_avx2(a, t, h0, nh, 128, type);
        break;

    default:
        fg_k_attn_heads_d_avx2(a, t, h0, nh, d, type);
        break;
    }
}


FG_K_AVX2 static void
fg_k_attn_heads_avx2(const fg_k_attn_t *a, size_t t, size_t h0, size_t nh)
{
    if (a->kv->type == FG_K_F16) {
        fg_k_attn_heads_type_avx2(a, t, h0, nh, FG_K_F16);

    } else {
        fg_k_attn_heads_type_avx2(a, t, h0, nh, FG_K_F32);
    }
}

#endif
