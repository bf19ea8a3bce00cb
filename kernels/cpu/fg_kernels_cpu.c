
/*
 * fairgate: element-wise kernels, RoPE and sampling of the CPU backend.
 * Matrix products are in fg_kernels_mm.c and fg_kernels_gemv.c, weight
 * types in fg_kernels_types.c, paged attention in fg_kernels_attn.c.
 */


#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fg_kernels_gemv.h"


#if FG_K_X86
static void fg_k_swiglu_avx2(float *y, const float *gate, const float *up,
    size_t n);
static void fg_k_geglu_avx2(float *y, const float *gate, const float *up,
    size_t n);
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

    i = 0;

#if FG_K_X86
    /* an expf() call per value was a fifth of a small model's step */
    if (fg_k_simd) {
        i = n & ~(size_t) 7;
        fg_k_swiglu_avx2(y, gate, up, i);
    }
#endif

    for ( /* void */ ; i < n; i++) {
        g = gate[i];
        y[i] = g / (1.0f + expf(-g)) * up[i];
    }
}


#if FG_K_X86

/* n a multiple of 8 */
FG_K_AVX2 static void
fg_k_swiglu_avx2(float *y, const float *gate, const float *up, size_t n)
{
    size_t  i;
    __m256  g, keep;

    for (i = 0; i < n; i += 8) {
        g = _mm256_loadu_ps(gate + i);

        /*
         * Below -88, where e^-g is clamped, silu(g) is below 1e-36 and
         * g / (1 + e^88) would not be: 0 instead (a NaN is kept).
         */
        keep = _mm256_cmp_ps(g, _mm256_set1_ps(-88.0f), _CMP_NLT_UQ);

        g = _mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f),
                              fg_k_exp8_avx2(_mm256_sub_ps(
                                  _mm256_setzero_ps(), g))));

        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_and_ps(g, keep),
                                              _mm256_loadu_ps(up + i)));
    }
}

#endif


/* sqrt(2 / pi), and the cubic's coefficient of gelu's tanh form */
#define FG_K_GELU_C    0.7978845608028654f
#define FG_K_GELU_A    0.044715f


/*
 * 0.5 g (1 + tanh z) is g / (1 + e^-2z): no cancellation where tanh nears
 * -1 (gelu(-12) keeps its relative precision), and e^-2z overflowing to
 * infinity gives the -0 that gelu tends to.
 */
void
fg_k_geglu(float *y, const float *gate, const float *up, size_t n)
{
    size_t  i;
    float   g;

    i = 0;

#if FG_K_X86
    if (fg_k_simd) {
        i = n & ~(size_t) 7;
        fg_k_geglu_avx2(y, gate, up, i);
    }
#endif

    for ( /* void */ ; i < n; i++) {
        g = gate[i];
        y[i] = g / (1.0f + expf(-2.0f * FG_K_GELU_C
                                * (g + FG_K_GELU_A * g * g * g)))
               * up[i];
    }
}


#if FG_K_X86

/* n a multiple of 8 */
FG_K_AVX2 static void
fg_k_geglu_avx2(float *y, const float *gate, const float *up, size_t n)
{
    size_t  i;
    __m256  g, t, keep;

    for (i = 0; i < n; i += 8) {
        g = _mm256_loadu_ps(gate + i);

        /* t = -2z = -2c (g + a g^3) */
        t = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(FG_K_GELU_A), g),
                            _mm256_mul_ps(g, g), g);
        t = _mm256_mul_ps(t, _mm256_set1_ps(-2.0f * FG_K_GELU_C));

        /* past 88, where e^t is clamped, gelu is below 1e-38 |g|: 0 */
        keep = _mm256_cmp_ps(t, _mm256_set1_ps(88.0f), _CMP_NGT_UQ);

        g = _mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f),
                                           fg_k_exp8_avx2(t)));

        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_and_ps(g, keep),
                                              _mm256_loadu_ps(up + i)));
    }
}

#endif


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
