
/*
 * fairgate: the cpu backend's own kernels (kernels/fg_kernels_ext.h)
 * against references in double.
 *
 * fg_k_attention8(): two sequences' keys and values go into a paged cache
 * (blocks from a shuffled list, every other slot NaN, so a read of any
 * slot not written shows); then one batch asks for attention at every
 * position of one sequence and some of the other.  Each output is
 * compared with dense softmax attention in double.  Shapes: stories260K's
 * (8 heads of 8, 4 kv heads), a 100M model's (12 of 64, 4 kv heads),
 * multi-query with blocks of 5 (partial chunks of keys everywhere), 16
 * query heads on one kv head (more than the 8 taken together), heads of
 * 128 in blocks of 32, one block of 256, and heads of 12 (not a multiple
 * of 8: fg_k_attention() takes over); on 1 and 2 threads, with the AVX2
 * paths and without.  Tolerance 1e-5 absolute: values are in [-1, 1] and
 * an output is their convex combination; float sums of at most 128 terms
 * and the vector exponential (2e-7 relative) stay near 1e-6.
 *
 * fg_k_swiglu8(): silu(g) * u against the formula in double, for g from
 * -100 to 100 and at the clamps: within 2e-6 relative (or 1e-30 absolute
 * where the result is that small).
 */


#include <float.h>
#include <stdint.h>

#include "fg_tap.h"
#include "fg_kernels.h"
#include "fg_kernels_ext.h"


#define N_SEQ     2
#define MAX_POS   70
#define N_BLOCKS  64


typedef struct {
    size_t  n_head;
    size_t  n_kv_head;
    size_t  head_dim;
    size_t  block_size;
} cfg_t;


static uint64_t  rng = 0x6a09e667f3bcc909ULL;


static double
urand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;

    return (double) (rng >> 11) / 9007199254740992.0;
}


/* dense attention of one query head over keys 0 .. p, in double */
static void
ref_attention(double *o, const float *q, const float *k, const float *v,
    size_t p, size_t stride, size_t d)
{
    size_t  i, j;
    double  s[MAX_POS], max, sum;

    max = -INFINITY;

    for (j = 0; j <= p; j++) {
        s[j] = 0.0;

        for (i = 0; i < d; i++) {
            s[j] += (double) q[i] * k[j * stride + i];
        }

        s[j] /= sqrt((double) d);
        max = s[j] > max ? s[j] : max;
    }

    sum = 0.0;

    for (j = 0; j <= p; j++) {
        s[j] = exp(s[j] - max);
        sum += s[j];
    }

    for (i = 0; i < d; i++) {
        o[i] = 0.0;

        for (j = 0; j <= p; j++) {
            o[i] += s[j] / sum * v[j * stride + i];
        }
    }
}


static double
run_attention(const cfg_t *c, fg_pool_t *pool)
{
    size_t        s, t, h, i, n, kvd, qd, bps, cache;
    float        *q, *k[N_SEQ], *v[N_SEQ], *out, *qs[N_SEQ];
    double        o[256], e, worst;
    int32_t       list[N_BLOCKS], tables[N_SEQ][N_BLOCKS];
    int32_t       pos[N_SEQ * MAX_POS], seq[N_SEQ * MAX_POS];
    fg_k_kv_t     kv;
    fg_k_batch_t  b;

    kvd = c->n_kv_head * c->head_dim;
    qd = c->n_head * c->head_dim;
    bps = (MAX_POS + c->block_size - 1) / c->block_size;
    cache = N_BLOCKS * c->block_size * kvd;

    kv.k = malloc(cache * sizeof(float));
    kv.v = malloc(cache * sizeof(float));
    kv.n_blocks = N_BLOCKS;
    kv.block_size = c->block_size;
    kv.n_kv_head = c->n_kv_head;
    kv.head_dim = c->head_dim;

    for (i = 0; i < cache; i++) {
        kv.k[i] = NAN;
        kv.v[i] = NAN;
    }

    for (i = 0; i < N_BLOCKS; i++) {
        list[i] = (int32_t) i;
    }

    for (i = N_BLOCKS - 1; i > 0; i--) {
        t = (size_t) (urand() * (i + 1));
        h = (size_t) list[i];
        list[i] = list[t];
        list[t] = (int32_t) h;
    }

    /* the sequences: 70 and 37 positions, keys and values written */
    for (s = 0; s < N_SEQ; s++) {
        k[s] = malloc(MAX_POS * kvd * sizeof(float));
        v[s] = malloc(MAX_POS * kvd * sizeof(float));
        qs[s] = malloc(MAX_POS * qd * sizeof(float));

        for (i = 0; i < MAX_POS * kvd; i++) {
            k[s][i] = (float) (urand() * 2 - 1);
            v[s][i] = (float) (urand() * 2 - 1);
        }

        for (i = 0; i < MAX_POS * qd; i++) {
            qs[s][i] = (float) ((urand() * 2 - 1) * 2);
        }

        for (i = 0; i < bps; i++) {
            tables[s][i] = list[s * bps + i];
        }
    }

    b.pos = pos;
    b.seq = seq;
    b.block_tables = &tables[0][0];
    b.max_blocks = N_BLOCKS;

    for (s = 0; s < N_SEQ; s++) {
        n = s == 0 ? MAX_POS : 37;

        for (t = 0; t < n; t++) {
            pos[t] = (int32_t) t;
            seq[t] = (int32_t) s;
        }

        b.n_tokens = n;
        fg_k_kv_write(&kv, &b, k[s], v[s], kvd);
    }

    /* one batch: every position of sequence 0, some of sequence 1 */
    q = malloc(N_SEQ * MAX_POS * qd * sizeof(float));
    out = malloc(N_SEQ * MAX_POS * qd * sizeof(float));
    n = 0;

    for (t = 0; t < MAX_POS; t++) {
        pos[n] = (int32_t) t;
        seq[n] = 0;
        memcpy(q + n * qd, qs[0] + t * qd, qd * sizeof(float));
        n++;
    }

    for (t = 0; t < 37; t += 3) {
        pos[n] = (int32_t) t;
        seq[n] = 1;
        memcpy(q + n * qd, qs[1] + t * qd, qd * sizeof(float));
        n++;
    }

    b.n_tokens = n;
    fg_k_attention8(pool, out, q, &kv, &b, c->n_head);

    worst = 0.0;

    for (t = 0; t < n; t++) {
        s = (size_t) seq[t];

        for (h = 0; h < c->n_head; h++) {
            ref_attention(o, q + (t * c->n_head + h) * c->head_dim,
                          k[s] + h / (c->n_head / c->n_kv_head)
                                 * c->head_dim,
                          v[s] + h / (c->n_head / c->n_kv_head)
                                 * c->head_dim,
                          (size_t) pos[t], kvd, c->head_dim);

            for (i = 0; i < c->head_dim; i++) {
                e = fabs(out[(t * c->n_head + h) * c->head_dim + i] - o[i]);

                if (!(e <= worst)) {
                    worst = isnan(e) ? INFINITY : e;
                }
            }
        }
    }

    for (s = 0; s < N_SEQ; s++) {
        free(k[s]);
        free(v[s]);
        free(qs[s]);
    }

    free(q);
    free(out);
    free(kv.k);
    free(kv.v);

    return worst;
}


static void
test_attention(fg_pool_t *pool2, const char *paths)
{
    size_t      i;
    double      e1, e2;

    static const cfg_t  cfgs[] = {
        { 8, 4, 8, 16 },
        { 12, 4, 64, 16 },
        { 4, 1, 32, 5 },
        { 16, 1, 8, 8 },
        { 2, 2, 128, 32 },
        { 8, 8, 16, 256 },
        { 4, 2, 12, 16 },
    };

    for (i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
        e1 = run_attention(&cfgs[i], NULL);
        e2 = run_attention(&cfgs[i], pool2);

        ok(e1 <= 1e-5 && e2 <= 1e-5, "attention8 (%s): %zu heads of %zu, "
           "%zu kv heads, blocks of %zu: within 1e-5 on 1 and 2 threads "
           "(%.2g, %.2g)", paths, cfgs[i].n_head, cfgs[i].head_dim,
           cfgs[i].n_kv_head, cfgs[i].block_size, e1, e2);
    }
}


static void
test_swiglu(const char *paths)
{
    size_t  i, n, bad;
    float   g[1003], u[1003], y[1003];
    double  want, worst;

    n = 1003;

    for (i = 0; i < n; i++) {
        g[i] = (float) (-100.0 + 200.0 * i / (n - 1));
        u[i] = (float) (urand() * 4 - 2);
    }

    /* the clamps of the exponential, zero and the extremes */
    g[0] = -FLT_MAX;
    g[1] = -88.5f;
    g[2] = -86.5f;
    g[3] = 0.0f;
    g[4] = -0.0f;
    g[5] = 86.5f;
    g[6] = 88.5f;
    g[7] = FLT_MAX / 4;

    fg_k_swiglu8(y, g, u, n);

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

    ok(bad == 0, "swiglu8 (%s): %zu values within 2e-6 relative (%.2g)",
       paths, n, worst);

    /* a NaN, wherever it comes from, shows in the output */
    g[3] = NAN;
    fg_k_swiglu8(y, g, u, 8);

    ok(isnan(y[3]) && !isnan(y[2]), "swiglu8 (%s): NaN stays NaN", paths);
}


int
main(void)
{
    fg_pool_t  *pool2;

    pool2 = fg_pool_create(2);

    diag("kernels: %s", fg_k_init());

    test_attention(pool2, "best paths");
    test_swiglu("best paths");

    fg_k_set_simd(0);

    test_attention(pool2, "portable C");
    test_swiglu("portable C");

    fg_pool_destroy(pool2);

    return done_testing();
}
