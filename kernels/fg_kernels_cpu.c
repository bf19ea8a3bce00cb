
/*
 * fairgate: element-wise kernels, RoPE, paged attention and sampling of
 * the CPU backend.  Matrix products are in fg_kernels_mm.c.
 */


#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fg_kernels.h"
#include "fg_kernels_simd.h"

#if FG_K_X86
#include <immintrin.h>
#endif


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
} fg_k_attn_t;


static void fg_k_attn_task(void *data, size_t i0, size_t i1,
    unsigned thread);
static void fg_k_attn_heads(const fg_k_attn_t *a, size_t t, size_t h0,
    size_t nh);
#if FG_K_X86
static void fg_k_attn_heads_avx2(const fg_k_attn_t *a, size_t t, size_t h0,
    size_t nh);
#endif
static int fg_k_cand_cmp(const void *a, const void *b);
static void fg_k_top_k(fg_k_cand_t *c, size_t n, size_t k);


/* ---- element-wise ---- */

void
fg_k_rmsnorm(float *y, const float *x, const float *w, size_t n_rows,
    size_t dim, float eps)
{
    size_t  r, i;
    float   scale;

    for (r = 0; r < n_rows; r++, x += dim, y += dim) {
        scale = 1.0f / sqrtf(fg_k_dot(x, x, dim) / (float) dim + eps);

        for (i = 0; i < dim; i++) {
            y[i] = x[i] * scale * w[i];
        }
    }
}


void
fg_k_add(float *y, const float *a, const float *b, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        y[i] = a[i] + b[i];
    }
}


void
fg_k_swiglu(float *y, const float *gate, const float *up, size_t n)
{
    size_t  i;
    float   g;

    for (i = 0; i < n; i++) {
        g = gate[i];
        y[i] = g / (1.0f + expf(-g)) * up[i];
    }
}


void
fg_k_softmax(float *x, size_t n_rows, size_t n)
{
    size_t  r, i;
    float   max, sum;

    for (r = 0; r < n_rows; r++, x += n) {
        max = -INFINITY;

        for (i = 0; i < n; i++) {
            max = x[i] > max ? x[i] : max;
        }

        /* all -inf: a uniform row rather than NaNs */
        if (max == -INFINITY) {
            for (i = 0; i < n; i++) {
                x[i] = 1.0f / (float) n;
            }

            continue;
        }

        sum = 0.0f;

        for (i = 0; i < n; i++) {
            x[i] = expf(x[i] - max);
            sum += x[i];
        }

        sum = 1.0f / sum;

        for (i = 0; i < n; i++) {
            x[i] *= sum;
        }
    }
}


/* ---- RoPE ---- */

void
fg_k_rope_freqs(float *inv_freq, size_t rot_dim, float theta,
    const float *factors, const fg_k_rope_llama3_t *llama3)
{
    size_t  i;
    double  f, wavelen, low, high, smooth;

    for (i = 0; i < rot_dim / 2; i++) {
        f = pow(theta, -(double) (2 * i) / (double) rot_dim);

        if (factors) {
            f /= factors[i];
        }

        if (llama3 && llama3->factor > 1.0f) {
            /*
             * Llama 3 keeps short wavelengths (local detail), stretches
             * long ones by factor (to the longer context), and blends in
             * between: wavelengths are compared with the original context
             * divided by the high and low frequency factors.
             */
            wavelen = 2.0 * M_PI / f;
            high = llama3->orig_ctx / llama3->high_freq_factor;
            low = llama3->orig_ctx / llama3->low_freq_factor;

            if (wavelen > low) {
                f /= llama3->factor;

            } else if (wavelen >= high) {
                smooth = (llama3->orig_ctx / wavelen
                          - llama3->low_freq_factor)
                         / (llama3->high_freq_factor
                            - llama3->low_freq_factor);
                f = (1.0 - smooth) * f / llama3->factor + smooth * f;
            }
        }

        inv_freq[i] = (float) f;
    }
}


void
fg_k_rope(float *x, size_t n_tokens, size_t ld, size_t n_heads,
    size_t head_dim, size_t rot_dim, const int32_t *pos,
    const float *inv_freq, fg_k_rope_e rope)
{
    size_t   t, h, i, half;
    float    c[FG_K_MAX_HEAD_DIM / 2], s[FG_K_MAX_HEAD_DIM / 2];
    float   *v, x0, x1;
    double   angle;

    half = rot_dim / 2;

    for (t = 0; t < n_tokens; t++) {

        /* angles in double: pos * freq reaches 1e5 radians at long context */
        for (i = 0; i < half; i++) {
            angle = (double) pos[t] * inv_freq[i];
            c[i] = (float) cos(angle);
            s[i] = (float) sin(angle);
        }

        for (h = 0; h < n_heads; h++) {
            v = x + t * ld + h * head_dim;

            if (rope == FG_K_ROPE_ADJACENT) {
                for (i = 0; i < half; i++) {
                    x0 = v[2 * i];
                    x1 = v[2 * i + 1];
                    v[2 * i] = x0 * c[i] - x1 * s[i];
                    v[2 * i + 1] = x0 * s[i] + x1 * c[i];
                }

            } else {
                for (i = 0; i < half; i++) {
                    x0 = v[i];
                    x1 = v[i + half];
                    v[i] = x0 * c[i] - x1 * s[i];
                    v[i + half] = x0 * s[i] + x1 * c[i];
                }
            }
        }
    }
}


/* ---- paged attention ---- */

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
            off = (((size_t) block * kv->n_kv_head + h) * bs + p % bs) * d;

            memcpy(kv->k + off, k + t * ld + h * d, d * sizeof(float));
            memcpy(kv->v + off, v + t * ld + h * d, d * sizeof(float));
        }
    }
}


void
fg_k_attention(fg_pool_t *pool, float *out, const float *q,
    const fg_k_kv_t *kv, const fg_k_batch_t *b, size_t n_head)
{
    size_t       t, keys, work;
    fg_k_attn_t  a;

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
        keys += (size_t) b->pos[t] + 1;
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


/*
 * Query heads h0 .. h0+nh-1 of token t, a block of keys at a time with a
 * running maximum per head (online softmax): no buffer as long as the
 * context.
 */
static void
fg_k_attn_heads(const fg_k_attn_t *a, size_t t, size_t h0, size_t nh)
{
    size_t            d, bs, n_keys, base, nk, j, g, kvh, block;
    float             s[FG_K_MAX_BLOCK], max[FG_K_ATTN_HEADS];
    float             sum[FG_K_ATTN_HEADS], scale, bmax, c, e;
    float            *o;
    const float      *qh, *kb, *vb;
    const int32_t    *bt;
    const fg_k_kv_t  *kv;

    kv = a->kv;
    d = kv->head_dim;
    bs = kv->block_size;
    kvh = h0 / a->group;

    n_keys = (size_t) a->b->pos[t] + 1;
    bt = a->b->block_tables + (size_t) a->b->seq[t] * a->b->max_blocks;

    scale = 1.0f / sqrtf((float) d);

    for (g = 0; g < nh; g++) {
        max[g] = -INFINITY;
        sum[g] = 0.0f;
    }

    memset(a->out + (t * a->n_head + h0) * d, 0, nh * d * sizeof(float));

    for (base = 0; base < n_keys; base += bs) {
        block = (size_t) bt[base / bs];
        nk = n_keys - base < bs ? n_keys - base : bs;

        kb = kv->k + (block * kv->n_kv_head + kvh) * bs * d;
        vb = kv->v + (block * kv->n_kv_head + kvh) * bs * d;

        for (g = 0; g < nh; g++) {
            qh = a->q + (t * a->n_head + h0 + g) * d;
            o = a->out + (t * a->n_head + h0 + g) * d;

            bmax = -INFINITY;

            for (j = 0; j < nk; j++) {
                s[j] = fg_k_dot(qh, kb + j * d, d) * scale;
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
                fg_k_axpy(o, e, vb + j * d, d);
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

/*
 * e^x for x <= 0, 8 at a time.  x = n ln 2 + r, |r| <= ln 2 / 2, with
 * ln 2 split in two so that n times the first part is exact; e^r by its
 * Taylor polynomial of degree 6 (relative error below 2e-7 on that range);
 * 2^n built in the exponent bits.  Below -87, where 2^n would leave the
 * normal floats, the result is 0.
 */
FG_K_AVX2 static inline __m256
fg_k_exp_avx2(__m256 x)
{
    __m256   n, r, p, keep;
    __m256i  two_n;

    keep = _mm256_cmp_ps(x, _mm256_set1_ps(-87.0f), _CMP_GE_OQ);
    x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));

    n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.442695041f)),
                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606765330187e-6f), r);

    p = _mm256_fmadd_ps(_mm256_set1_ps(1.0f / 720.0f), r,
                        _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));

    two_n = _mm256_slli_epi32(
                _mm256_add_epi32(_mm256_cvtps_epi32(n),
                                 _mm256_set1_epi32(127)), 23);
    p = _mm256_mul_ps(p, _mm256_castsi256_ps(two_n));

    return _mm256_and_ps(p, keep);
}


FG_K_AVX2 static inline float
fg_k_hsum8_avx2(__m256 v)
{
    __m128  s;

    s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));

    return _mm_cvtss_f32(s);
}


/* the sums of 8 vectors' lanes, as one vector: s[k] = sum of v[k] */
FG_K_AVX2 static inline __m256
fg_k_sums8_avx2(const __m256 *v)
{
    __m256  a, b, c, e, lo, hi;

    /* pairwise sums: a = v0 01 23, v1 01 23 | v0 45 67, v1 45 67 ... */
    a = _mm256_hadd_ps(v[0], v[1]);
    b = _mm256_hadd_ps(v[2], v[3]);
    c = _mm256_hadd_ps(v[4], v[5]);
    e = _mm256_hadd_ps(v[6], v[7]);

    /* then v0..v3 0123 | v0..v3 4567, and the same for v4..v7 */
    a = _mm256_hadd_ps(a, b);
    c = _mm256_hadd_ps(c, e);

    /* the low halves (lanes 0-3) beside each other, then the high ones */
    lo = _mm256_permute2f128_ps(a, c, 0x20);
    hi = _mm256_permute2f128_ps(a, c, 0x31);

    return _mm256_add_ps(lo, hi);
}


/*
 * fg_k_attn_heads() for head_dim a multiple of 8, without a call per key:
 * scores and exponentials 8 keys at a time and the weighted sum of values
 * inline.  For small heads (stories260K's are 8 values) calls and one
 * horizontal sum per key were most of the time.  Value sums stay in
 * registers across a block's keys.
 */
FG_K_AVX2 static void
fg_k_attn_heads_avx2(const fg_k_attn_t *a, size_t t, size_t h0, size_t nh)
{
    size_t            d, bs, n_keys, base, nk, i, j, k, g, kvh, block;
    float             s[FG_K_MAX_BLOCK], max[FG_K_ATTN_HEADS];
    float             sum[FG_K_ATTN_HEADS], scale, bmax, c;
    float            *o;
    __m256            acc, vc, qv, p[8];
    const float      *qh, *kb, *vb;
    const int32_t    *bt;
    const fg_k_kv_t  *kv;

    kv = a->kv;
    d = kv->head_dim;
    bs = kv->block_size;
    kvh = h0 / a->group;

    n_keys = (size_t) a->b->pos[t] + 1;
    bt = a->b->block_tables + (size_t) a->b->seq[t] * a->b->max_blocks;

    scale = 1.0f / sqrtf((float) d);

    for (g = 0; g < nh; g++) {
        max[g] = -INFINITY;
        sum[g] = 0.0f;
    }

    memset(a->out + (t * a->n_head + h0) * d, 0, nh * d * sizeof(float));

    for (base = 0; base < n_keys; base += bs) {
        block = (size_t) bt[base / bs];
        nk = n_keys - base < bs ? n_keys - base : bs;

        kb = kv->k + (block * kv->n_kv_head + kvh) * bs * d;
        vb = kv->v + (block * kv->n_kv_head + kvh) * bs * d;

        for (g = 0; g < nh; g++) {
            qh = a->q + (t * a->n_head + h0 + g) * d;
            o = a->out + (t * a->n_head + h0 + g) * d;

            /* 8 keys at a time: 8 sums, then one vector of 8 scores */
            for (j = 0; j + 8 <= nk; j += 8) {
#pragma GCC unroll 8
                for (k = 0; k < 8; k++) {
                    p[k] = _mm256_setzero_ps();
                }

                for (i = 0; i < d; i += 8) {
                    qv = _mm256_loadu_ps(qh + i);

#pragma GCC unroll 8
                    for (k = 0; k < 8; k++) {
                        p[k] = _mm256_fmadd_ps(qv,
                                   _mm256_loadu_ps(kb + (j + k) * d + i),
                                   p[k]);
                    }
                }

                _mm256_storeu_ps(s + j, _mm256_mul_ps(fg_k_sums8_avx2(p),
                                                      _mm256_set1_ps(scale)));
            }

            for ( /* void */ ; j < nk; j++) {
                acc = _mm256_setzero_ps();

                for (i = 0; i < d; i += 8) {
                    acc = _mm256_fmadd_ps(_mm256_loadu_ps(qh + i),
                                          _mm256_loadu_ps(kb + j * d + i),
                                          acc);
                }

                s[j] = fg_k_hsum8_avx2(acc) * scale;
            }

            bmax = -INFINITY;

            for (j = 0; j < nk; j++) {
                bmax = s[j] > bmax ? s[j] : bmax;
            }

            if (bmax > max[g]) {
                if (sum[g] != 0.0f) {
                    c = expf(max[g] - bmax);
                    sum[g] *= c;
                    vc = _mm256_set1_ps(c);

                    for (i = 0; i < d; i += 8) {
                        _mm256_storeu_ps(o + i,
                            _mm256_mul_ps(vc, _mm256_loadu_ps(o + i)));
                    }
                }

                max[g] = bmax;
            }

            vc = _mm256_set1_ps(max[g]);

            for (j = 0; j + 8 <= nk; j += 8) {
                _mm256_storeu_ps(s + j, fg_k_exp_avx2(
                    _mm256_sub_ps(_mm256_loadu_ps(s + j), vc)));
            }

            for ( /* void */ ; j < nk; j++) {
                s[j] = expf(s[j] - max[g]);
            }

            for (j = 0; j < nk; j++) {
                sum[g] += s[j];
            }

            /* four sums over keys j mod 4: a quarter of the FMA chain */
            for (i = 0; i < d; i += 8) {
                p[0] = _mm256_loadu_ps(o + i);
                p[1] = _mm256_setzero_ps();
                p[2] = _mm256_setzero_ps();
                p[3] = _mm256_setzero_ps();

                for (j = 0; j + 4 <= nk; j += 4) {
#pragma GCC unroll 4
                    for (k = 0; k < 4; k++) {
                        p[k] = _mm256_fmadd_ps(_mm256_set1_ps(s[j + k]),
                                   _mm256_loadu_ps(vb + (j + k) * d + i),
                                   p[k]);
                    }
                }

                for ( /* void */ ; j < nk; j++) {
                    p[0] = _mm256_fmadd_ps(_mm256_set1_ps(s[j]),
                                           _mm256_loadu_ps(vb + j * d + i),
                                           p[0]);
                }

                _mm256_storeu_ps(o + i,
                                 _mm256_add_ps(_mm256_add_ps(p[0], p[1]),
                                               _mm256_add_ps(p[2], p[3])));
            }
        }
    }

    for (g = 0; g < nh; g++) {
        o = a->out + (t * a->n_head + h0 + g) * d;
        vc = _mm256_set1_ps(1.0f / sum[g]);

        for (i = 0; i < d; i += 8) {
            _mm256_storeu_ps(o + i, _mm256_mul_ps(vc, _mm256_loadu_ps(o + i)));
        }
    }
}

#endif


/* ---- sampling ---- */

int32_t
fg_k_argmax(const float *logits, size_t n)
{
    size_t  i, best;

    best = 0;

    for (i = 1; i < n; i++) {
        if (logits[i] > logits[best]) {
            best = i;
        }
    }

    return (int32_t) best;
}


/* larger value first, then lower id: a strict order, so results repeat */
static inline int
fg_k_cand_before(const fg_k_cand_t *a, const fg_k_cand_t *b)
{
    return a->v > b->v || (a->v == b->v && a->id < b->id);
}


static int
fg_k_cand_cmp(const void *a, const void *b)
{
    if (fg_k_cand_before(a, b)) {
        return -1;
    }

    return fg_k_cand_before(b, a) ? 1 : 0;
}


static inline void
fg_k_cand_swap(fg_k_cand_t *a, fg_k_cand_t *b)
{
    fg_k_cand_t  tmp;

    tmp = *a;
    *a = *b;
    *b = tmp;
}


/* moves the k first candidates in fg_k_cand_before() order to c[0 .. k) */
static void
fg_k_top_k(fg_k_cand_t *c, size_t n, size_t k)
{
    size_t  lo, hi, mid, i, store;

    lo = 0;
    hi = n - 1;

    while (lo < hi) {

        /* median of three as the pivot, moved to hi */
        mid = lo + (hi - lo) / 2;

        if (fg_k_cand_before(&c[mid], &c[lo])) {
            fg_k_cand_swap(&c[mid], &c[lo]);
        }

        if (fg_k_cand_before(&c[hi], &c[lo])) {
            fg_k_cand_swap(&c[hi], &c[lo]);
        }

        if (fg_k_cand_before(&c[mid], &c[hi])) {
            fg_k_cand_swap(&c[mid], &c[hi]);
        }

        store = lo;

        for (i = lo; i < hi; i++) {
            if (fg_k_cand_before(&c[i], &c[hi])) {
                fg_k_cand_swap(&c[i], &c[store++]);
            }
        }

        fg_k_cand_swap(&c[store], &c[hi]);

        /* c[store] is in its sorted place */
        if (store == k || store + 1 == k) {
            return;
        }

        if (store > k) {
            hi = store - 1;

        } else {
            lo = store + 1;
        }
    }
}


int32_t
fg_k_sample(const float *logits, size_t n, float temperature, size_t top_k,
    float top_p, double u, fg_k_cand_t *cand)
{
    size_t  i, m, kept;
    float   max, tau;
    double  total, target, acc;

    if (n == 0) {
        return -1;
    }

    if (temperature <= 0.0f || top_k == 1 || n == 1) {
        return fg_k_argmax(logits, n);
    }

    for (i = 0; i < n; i++) {
        cand[i].v = logits[i];
        cand[i].id = (int32_t) i;
    }

    m = n;

    if (top_k > 0 && top_k < n) {
        fg_k_top_k(cand, n, top_k);
        m = top_k;
    }

    max = -INFINITY;

    for (i = 0; i < m; i++) {
        max = cand[i].v > max ? cand[i].v : max;
    }

    if (max == -INFINITY) {
        return fg_k_argmax(logits, n);
    }

    /* unnormalized probabilities; v now holds them */
    total = 0.0;

    for (i = 0; i < m; i++) {
        cand[i].v = expf((cand[i].v - max) / temperature);
        total += cand[i].v;
    }

    if (top_p > 0.0f && top_p < 1.0f) {

        /*
         * The nucleus is a prefix of the candidates sorted by probability.
         * Sorting all of a large vocabulary costs more than the step, so
         * first keep those above a threshold, lowered until they hold
         * top_p of the mass: the nucleus is then inside what was kept.
         */
        target = top_p * total;
        tau = 1.0f / 64.0f;
        kept = m;

        for ( ;; ) {
            acc = 0.0;

            for (i = 0; i < m; i++) {
                acc += cand[i].v >= tau ? cand[i].v : 0.0f;
            }

            if (acc >= target || tau < 1e-30f) {
                break;
            }

            tau /= 64.0f;
        }

        if (tau >= 1e-30f) {
            kept = 0;

            for (i = 0; i < m; i++) {
                if (cand[i].v >= tau) {
                    fg_k_cand_swap(&cand[i], &cand[kept++]);
                }
            }
        }

        qsort(cand, kept, sizeof(fg_k_cand_t), fg_k_cand_cmp);

        acc = 0.0;

        for (i = 0; i < kept; i++) {
            acc += cand[i].v;

            if (acc >= target) {
                break;
            }
        }

        m = i < kept ? i + 1 : kept;
        total = acc;
    }

    target = u * total;
    acc = 0.0;

    for (i = 0; i < m; i++) {
        acc += cand[i].v;

        if (target < acc) {
            return cand[i].id;
        }
    }

    /* u close to 1 and rounding: the last candidate with any mass */
    for (i = m; i > 0; i--) {
        if (cand[i - 1].v > 0.0f) {
            return cand[i - 1].id;
        }
    }

    return cand[0].id;
}
