
/*
 * fairgate: tests of the element-wise kernels, RoPE and sampling against
 * references written here in double precision.
 *
 * Tolerances: element-wise results within 1e-6 relative (a few float
 * roundings and expf's ulp), SwiGLU over its whole range (-100 to 100 and
 * the AVX2 exponential's clamps) within 2e-6 relative, or 1e-30 absolute
 * where the result is that small; RoPE within 2e-6 of a rotation computed in
 * double from the formula, at positions up to 100000; sampling is checked
 * on a grid of u values, where each candidate must get its probability
 * within 1.5 grid steps (a candidate's interval of u holds its length
 * times the grid's size of points, plus or minus one).
 */


#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fg_tap.h"
#include "fg_kernels.h"
#include "fg_rand.h"


#define DIM     96
#define ROWS    3
#define VOCAB   4096
#define GRID    20000


static fg_rand_t  rng = { 0x9e3779b97f4a7c15ULL };


static double
urand(void)
{
    return fg_rand_double(&rng);
}


static void test_swiglu_range(int simd);


static double
rel_err(double got, double want)
{
    return fabs(got - want) / fmax(fabs(want), 1e-30);
}


static void
test_elementwise(int simd)
{
    size_t  r, i;
    float   x[ROWS * DIM], w[DIM], y[ROWS * DIM], a[DIM], b[DIM];
    double  ss, want, worst, sum, max;

    fg_k_set_simd(simd);

    for (i = 0; i < ROWS * DIM; i++) {
        x[i] = (float) ((urand() * 2 - 1) * 4);
    }

    for (i = 0; i < DIM; i++) {
        w[i] = (float) (urand() + 0.5);
    }

    fg_k_rmsnorm(y, x, w, ROWS, DIM, 1e-5f);
    worst = 0;

    for (r = 0; r < ROWS; r++) {
        ss = 0;

        for (i = 0; i < DIM; i++) {
            ss += (double) x[r * DIM + i] * x[r * DIM + i];
        }

        for (i = 0; i < DIM; i++) {
            want = x[r * DIM + i] / sqrt(ss / DIM + 1e-5) * w[i];
            worst = fmax(worst, rel_err(y[r * DIM + i], want));
        }
    }

    ok(worst < 1e-6, "rmsnorm%s within 1e-6 relative (%.2g)",
       simd ? "" : " generic", worst);

    /* in place, as the forward pass uses it */
    memcpy(y, x, sizeof(x));
    fg_k_rmsnorm(y, y, w, ROWS, DIM, 1e-5f);
    fg_k_rmsnorm(x + 0, x, w, 1, DIM, 1e-5f);
    ok(memcmp(x, y, DIM * sizeof(float)) == 0, "rmsnorm in place");

    for (i = 0; i < DIM; i++) {
        a[i] = (float) ((urand() * 2 - 1) * 10);
        b[i] = (float) ((urand() * 2 - 1) * 10);
    }

    fg_k_add(y, a, b, DIM);
    worst = 0;

    for (i = 0; i < DIM; i++) {
        worst = fmax(worst, rel_err(y[i], (double) a[i] + b[i]));
    }

    ok(worst <= ldexp(1, -24), "add: correctly rounded");

    fg_k_swiglu(y, a, b, DIM);
    worst = 0;

    for (i = 0; i < DIM; i++) {
        want = a[i] / (1 + exp(-(double) a[i])) * b[i];
        worst = fmax(worst, rel_err(y[i], want));
    }

    ok(worst < 1e-6, "swiglu%s within 1e-6 relative (%.2g)",
       simd ? "" : " generic", worst);

    test_swiglu_range(simd);

    /* softmax with large values: needs the max subtracted */
    for (i = 0; i < DIM; i++) {
        y[i] = (float) (urand() * 200 + 500);
    }

    y[7] = -INFINITY;
    memcpy(a, y, sizeof(a));
    fg_k_softmax(y, 1, DIM);

    max = -INFINITY;

    for (i = 0; i < DIM; i++) {
        max = fmax(max, a[i]);
    }

    sum = 0;

    for (i = 0; i < DIM; i++) {
        sum += exp(a[i] - max);
    }

    worst = 0;

    for (i = 0; i < DIM; i++) {
        want = exp(a[i] - max) / sum;
        worst = fmax(worst, fabs(y[i] - want));
    }

    ok(worst < 1e-6 && y[7] == 0.0f, "softmax of values near 600 within "
       "1e-6, -inf gets 0");

    for (i = 0; i < 4; i++) {
        y[i] = -INFINITY;
    }

    fg_k_softmax(y, 1, 4);
    ok(y[0] == 0.25f && y[3] == 0.25f, "softmax of a row of -inf: uniform");

    fg_k_set_simd(1);
}


/*
 * silu(g) * u for g from -100 to 100, at the AVX2 exponential's clamps
 * (e^-g held to [e^-86, e^88]) and at the float range's ends, with a tail
 * past the last 8 values; a NaN must come out a NaN.
 */
static void
test_swiglu_range(int simd)
{
    size_t  i, n, bad;
    float   g[1003], u[1003], y[1003];
    double  want, worst;

    n = 1003;

    for (i = 0; i < n; i++) {
        g[i] = (float) (-100.0 + 200.0 * i / (n - 1));
        u[i] = (float) (urand() * 4 - 2);
    }

    g[0] = -FLT_MAX;
    g[1] = -88.5f;
    g[2] = -86.5f;
    g[3] = 0.0f;
    g[4] = -0.0f;
    g[5] = 86.5f;
    g[6] = 88.5f;
    g[7] = FLT_MAX / 4;

    fg_k_swiglu(y, g, u, n);

    bad = 0;
    worst = 0.0;

    for (i = 0; i < n; i++) {
        want = (double) g[i] / (1.0 + exp(-(double) g[i])) * u[i];

        if (fabs(want) < 1e-30 ? fabs(y[i]) > 1e-30
                               : !(fabs(y[i] - want) <= 2e-6 * fabs(want)))
        {
            if (bad++ < 5) {
                diag("g %g u %g: %g, want %g", (double) g[i], (double) u[i],
                     (double) y[i], want);
            }
        }

        if (fabs(want) >= 1e-30) {
            worst = fmax(worst, fabs(y[i] - want) / fabs(want));
        }
    }

    ok(bad == 0, "swiglu%s: %zu values from -100 to 100 and the clamps "
       "within 2e-6 relative (%.2g)", simd ? "" : " generic", n, worst);

    g[3] = NAN;
    fg_k_swiglu(y, g, u, 8);

    ok(isnan(y[3]) && !isnan(y[2]), "swiglu%s: NaN stays NaN",
       simd ? "" : " generic");
}


/* the test's rotation: pairs (a, b) by angle pos * inv_freq[i] */
static void
ref_rope(double *v, const float *x, size_t head_dim, size_t rot_dim,
    int32_t pos, const float *inv_freq, fg_k_rope_e rope)
{
    size_t  i, ia, ib;
    double  ang;

    for (i = 0; i < head_dim; i++) {
        v[i] = x[i];
    }

    for (i = 0; i < rot_dim / 2; i++) {
        ia = rope == FG_K_ROPE_ADJACENT ? 2 * i : i;
        ib = rope == FG_K_ROPE_ADJACENT ? 2 * i + 1 : i + rot_dim / 2;
        ang = pos * (double) inv_freq[i];

        v[ia] = x[ia] * cos(ang) - x[ib] * sin(ang);
        v[ib] = x[ia] * sin(ang) + x[ib] * cos(ang);
    }
}


/* RoPE's inverse frequencies, plain and divided by the file's factors */
static void
test_rope_freqs(void)
{
    size_t  i;
    float   inv[8], factors[8];
    double  worst;

    /* plain frequencies: theta^(-2i/d) */
    fg_k_rope_freqs(inv, 16, 10000.0f, NULL, NULL);
    worst = 0;

    for (i = 0; i < 8; i++) {
        worst = fmax(worst, rel_err(inv[i], pow(10000.0, -(2.0 * i) / 16)));
    }

    ok(worst < 1e-7, "rope freqs: theta^(-2i/d) (%.2g)", worst);

    /* GGUF's rope_freqs.weight divides them */
    for (i = 0; i < 8; i++) {
        factors[i] = 1.0f + i;
    }

    fg_k_rope_freqs(inv, 16, 500000.0f, factors, NULL);
    worst = 0;

    for (i = 0; i < 8; i++) {
        worst = fmax(worst, rel_err(inv[i], pow(500000.0, -(2.0 * i) / 16)
                                            / (1.0 + i)));
    }

    ok(worst < 1e-7, "rope freqs divided by the file's factors");
}


/*
 * Llama 3 scaling, written the way its conversion to GGUF computes the
 * per-frequency factors: 1 for short wavelengths, factor for long ones,
 * 1 / ((1 - smooth) / factor + smooth) between.  The context (64) and
 * a head of 64 put frequencies in all three bands.
 */
static void
test_rope_llama3(void)
{
    int                 bands[3] = { 0, 0, 0 };
    size_t              i;
    float               inv[8], inv64[32];
    double              want, worst, wavelen, smooth, ratio;
    fg_k_rope_llama3_t  l3;

    l3.factor = 8.0f;
    l3.low_freq_factor = 1.0f;
    l3.high_freq_factor = 4.0f;
    l3.orig_ctx = 64.0f;

    fg_k_rope_freqs(inv64, 64, 10000.0f, NULL, &l3);
    worst = 0;

    for (i = 0; i < 32; i++) {
        want = pow(10000.0, -(2.0 * i) / 64);
        wavelen = 2 * M_PI / want;

        if (wavelen < 64.0 / 4.0) {
            ratio = 1;
            bands[0]++;

        } else if (wavelen > 64.0 / 1.0) {
            ratio = 8;
            bands[2]++;

        } else {
            smooth = (64.0 / wavelen - 1.0) / (4.0 - 1.0);
            ratio = 1 / ((1 - smooth) / 8 + smooth);
            bands[1]++;
        }

        worst = fmax(worst, rel_err(inv64[i], want / ratio));
    }

    ok(worst < 1e-6 && bands[0] && bands[1] && bands[2],
       "rope freqs with Llama 3 scaling: %d kept, %d blended, %d "
       "scaled (%.2g)", bands[0], bands[1], bands[2], worst);

    l3.factor = 1.0f;
    fg_k_rope_freqs(inv, 16, 10000.0f, NULL, &l3);
    ok(rel_err(inv[5], pow(10000.0, -10.0 / 16)) < 1e-7,
       "Llama 3 factor 1 changes nothing");
}


/* rotations, both pairings, full and partial rotary dims, a row stride */
static void
test_rope(void)
{
    size_t        t, h, i, r, rot_dim;
    float         x[5 * 3 * 16], y[5 * 3 * 16], inv[8];
    double        v[16], worst;
    fg_k_rope_e   mode;

    static const int32_t  pos[5] = { 0, 1, 17, 1000, 100000 };

    /* rotations, both pairings, full and partial rotary dims */
    for (mode = FG_K_ROPE_ADJACENT; mode <= FG_K_ROPE_HALVES; mode++) {
        for (r = 0; r < 2; r++) {
            rot_dim = r ? 8 : 16;
            fg_k_rope_freqs(inv, rot_dim, 10000.0f, NULL, NULL);

            for (i = 0; i < 5 * 3 * 16; i++) {
                x[i] = (float) (urand() * 2 - 1);
            }

            memcpy(y, x, sizeof(x));
            fg_k_rope(y, 5, 3 * 16, 3, 16, rot_dim, pos, inv, mode);

            worst = 0;

            for (t = 0; t < 5; t++) {
                for (h = 0; h < 3; h++) {
                    ref_rope(v, x + (t * 3 + h) * 16, 16, rot_dim, pos[t],
                             inv, mode);

                    for (i = 0; i < 16; i++) {
                        worst = fmax(worst, fabs(y[(t * 3 + h) * 16 + i]
                                                 - v[i]));
                    }
                }
            }

            ok(worst < 2e-6, "rope %s, rot_dim %zu of 16, positions up to "
               "1e5: within 2e-6 (%.2g)",
               mode == FG_K_ROPE_ADJACENT ? "adjacent" : "halves", rot_dim,
               worst);
        }
    }

    /* pairings differ: position 1 moves other values */
    for (i = 0; i < 16; i++) {
        x[i] = (float) i;
        y[i] = (float) i;
    }

    fg_k_rope_freqs(inv, 16, 10000.0f, NULL, NULL);
    fg_k_rope(x, 1, 16, 1, 16, 16, &pos[1], inv, FG_K_ROPE_ADJACENT);
    fg_k_rope(y, 1, 16, 1, 16, 16, &pos[1], inv, FG_K_ROPE_HALVES);

    ok(fabs(x[0] - (0 * cos(1) - 1 * sin(1))) < 1e-6
       && fabs(y[0] - (0 * cos(1) - 8 * sin(1))) < 1e-6,
       "adjacent pairs x[0] with x[1], halves x[0] with x[8]");

    /* a row stride wider than the heads (a fused qkv row) */
    for (i = 0; i < 2 * 40; i++) {
        x[i] = (float) (urand() * 2 - 1);
    }

    memcpy(y, x, 2 * 40 * sizeof(float));
    fg_k_rope(y, 2, 40, 2, 16, 16, &pos[2], inv, FG_K_ROPE_HALVES);
    ref_rope(v, x + 40 + 16, 16, 16, pos[3], inv, FG_K_ROPE_HALVES);

    worst = 0;

    for (i = 0; i < 16; i++) {
        worst = fmax(worst, fabs(y[40 + 16 + i] - v[i]));
    }

    ok(worst < 2e-6 && memcmp(x + 32, y + 32, 8 * sizeof(float)) == 0
       && memcmp(x + 72, y + 72, 8 * sizeof(float)) == 0,
       "rope with a row stride: heads rotated, the rest untouched");
}


static int
cmp_desc(const void *a, const void *b)
{
    const fg_k_cand_t  *x, *y;

    x = a;
    y = b;

    if (x->v != y->v) {
        return x->v > y->v ? -1 : 1;
    }

    return x->id - y->id;
}


/*
 * The distribution the sampler should follow, by brute force: softmax at
 * the temperature, the top k by value, then the smallest prefix whose
 * mass reaches top_p, renormalized.
 */
static void
ref_dist(const float *logits, size_t n, float temp, size_t top_k,
    float top_p, double *p)
{
    size_t        i, m;
    double        max, sum, acc;
    fg_k_cand_t  *c;

    c = malloc(n * sizeof(fg_k_cand_t));

    for (i = 0; i < n; i++) {
        c[i].v = logits[i];
        c[i].id = (int32_t) i;
        p[i] = 0;
    }

    qsort(c, n, sizeof(fg_k_cand_t), cmp_desc);

    m = (top_k > 0 && top_k < n) ? top_k : n;
    max = c[0].v;
    sum = 0;

    for (i = 0; i < m; i++) {
        sum += exp((c[i].v - max) / temp);
    }

    acc = 0;

    for (i = 0; i < m; i++) {
        acc += exp((c[i].v - max) / temp) / sum;

        if (acc >= top_p) {
            m = i + 1;
            break;
        }
    }

    sum = 0;

    for (i = 0; i < m; i++) {
        sum += exp((c[i].v - max) / temp);
    }

    for (i = 0; i < m; i++) {
        p[c[i].id] = exp((c[i].v - max) / temp) / sum;
    }

    free(c);
}


/* frequencies over a grid of u against ref_dist(), and the support */
static int
check_dist(const float *logits, size_t n, float temp, size_t top_k,
    float top_p, size_t grid, fg_k_cand_t *cand, const char *what)
{
    int      pass;
    size_t   g, i, outside;
    double  *p, *freq, worst;
    int32_t  id;

    p = calloc(n, sizeof(double));
    freq = calloc(n, sizeof(double));

    ref_dist(logits, n, temp, top_k, top_p, p);

    outside = 0;

    for (g = 0; g < grid; g++) {
        id = fg_k_sample(logits, n, temp, top_k, top_p, (g + 0.5) / grid,
                         cand);

        if (id < 0 || (size_t) id >= n || p[id] == 0) {
            outside++;
            continue;
        }

        freq[id] += 1.0 / grid;
    }

    worst = 0;

    for (i = 0; i < n; i++) {
        worst = fmax(worst, fabs(freq[i] - p[i]));
    }

    pass = ok(outside == 0 && worst <= 1.5 / grid, "sample %s: only the "
              "allowed set, frequencies within 1.5/%zu (%.2g)", what, grid,
              worst);

    if (outside) {
        diag("%zu draws outside the allowed set", outside);
    }

    free(freq);
    free(p);

    return pass;
}


static void
test_sampling(void)
{
    int           pass;
    size_t        i;
    float         small[10], *big;
    fg_k_cand_t  *cand;

    static const float  logits[10] = {
        1.0f, 3.0f, -2.0f, 3.0f, 0.5f, 2.5f, -1.0f, 0.0f, 1.5f, 2.0f
    };

    cand = malloc(VOCAB * sizeof(fg_k_cand_t));
    big = malloc(VOCAB * sizeof(float));

    is_int(fg_k_argmax(logits, 10), 1, "argmax: the lowest index of a tie");

    pass = 1;

    for (i = 0; i < 50; i++) {
        pass &= fg_k_sample(logits, 10, 0.0f, 0, 1.0f, i / 50.0, cand) == 1;
        pass &= fg_k_sample(logits, 10, 0.8f, 1, 0.9f, i / 50.0, cand) == 1;
        pass &= fg_k_sample(logits, 10, -1.0f, 5, 1.0f, i / 50.0, cand) == 1;
    }

    ok(pass, "temperature 0 and top_k 1 are argmax, whatever u");

    check_dist(logits, 10, 1.0f, 0, 1.0f, GRID, cand, "T=1");
    check_dist(logits, 10, 0.5f, 0, 1.0f, GRID, cand, "T=0.5");
    check_dist(logits, 10, 2.0f, 0, 1.0f, GRID, cand, "T=2");
    check_dist(logits, 10, 1.0f, 3, 1.0f, GRID, cand,
               "top_k=3 (a tie inside)");
    check_dist(logits, 10, 1.0f, 2, 1.0f, GRID, cand, "top_k=2 (the tie)");
    check_dist(logits, 10, 1.0f, 0, 0.5f, GRID, cand, "top_p=0.5");
    check_dist(logits, 10, 1.0f, 0, 0.9f, GRID, cand, "top_p=0.9");
    check_dist(logits, 10, 0.7f, 6, 0.8f, GRID, cand,
               "T=0.7 top_k=6 top_p=0.8");
    check_dist(logits, 10, 1.0f, 0, 0.01f, GRID, cand,
               "top_p=0.01 (one token)");

    /* a peaked distribution: top_p=0.5 is the single largest */
    for (i = 0; i < 10; i++) {
        small[i] = (float) i;
    }

    small[4] = 20.0f;
    pass = 1;

    for (i = 0; i < 100; i++) {
        pass &= fg_k_sample(small, 10, 1.0f, 0, 0.5f, i / 100.0, cand) == 4;
    }

    ok(pass, "top_p: a token over top_p alone is the nucleus");

    /* a vocabulary's worth: the nucleus found by thresholds, not a sort */
    for (i = 0; i < VOCAB; i++) {
        big[i] = (float) (urand() * 24 - 12);
    }

    check_dist(big, VOCAB, 1.0f, 0, 0.9f, GRID / 10, cand,
               "4096 logits top_p=0.9");
    check_dist(big, VOCAB, 1.0f, 40, 0.95f, GRID / 10, cand,
               "4096 logits top_k=40 top_p=0.95");
    check_dist(big, VOCAB, 0.6f, 0, 0.3f, GRID / 10, cand,
               "4096 logits T=0.6 top_p=0.3");

    /* a flat vocabulary: the threshold must drop to take everything */
    for (i = 0; i < VOCAB; i++) {
        big[i] = 1.0f;
    }

    check_dist(big, VOCAB, 1.0f, 0, 0.33331f, GRID / 10, cand,
               "4096 equal logits top_p=0.33331");

    is_int(fg_k_sample(logits, 10, 1.0f, 0, 1.0f, 0.9999999999, cand) >= 0,
           1, "u near 1 still picks a token");

    free(big);
    free(cand);
}


/* FAIRGATE_CPU_SIMD holds fg_k_init() to a lesser path, never a better */
static void
test_simd_env(void)
{
    const char  *best, *avx2;

    unsetenv("FAIRGATE_CPU_SIMD");
    best = fg_k_init();

    setenv("FAIRGATE_CPU_SIMD", "avx2", 1);
    avx2 = fg_k_init();
    ok(strcmp(avx2, strcmp(best, "generic") == 0 ? "generic" : "avx2") == 0,
       "FAIRGATE_CPU_SIMD=avx2: %s where the best is %s", avx2, best);

    setenv("FAIRGATE_CPU_SIMD", "generic", 1);
    is_str(fg_k_init(), "generic", "FAIRGATE_CPU_SIMD=generic: portable C");

    unsetenv("FAIRGATE_CPU_SIMD");
    is_str(fg_k_init(), best, "without it, the best path again");
}


int
main(void)
{
    test_simd_env();
    diag("kernels: %s", fg_k_init());

    test_elementwise(1);
    test_elementwise(0);
    test_rope_freqs();
    test_rope_llama3();
    test_rope();
    test_sampling();

    return done_testing();
}
