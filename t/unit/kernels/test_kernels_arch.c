
/*
 * fairgate: the kernels of the architectures beyond llama's against
 * references in double: GeGLU (tanh GELU; relative error up to
 * 4e-7 (1 + |2z|), z tanh's argument, as float's rounding of z moves
 * e^-2z where gelu nears 0), soft-capping, the scale, the
 * per-head RMS norm (fg_k_rmsnorm() over rows of a head), and attention
 * with a scale, soft-capped scores and a sliding window
 * (fg_k_attention_ext()).
 *
 * Attention: two sequences of 45 and 29 positions written into a paged
 * cache (blocks from a shuffled list, the rest NaN: a read of a slot not
 * written shows), then every position attends in one step; each row must
 * match dense attention in double over the keys its window leaves
 * (p - window < j <= p), within 1e-5 absolute (values in [-1, 1]; an
 * output is a convex combination of them).  Windows of 1, 5, 16 (a block)
 * and 37 cross blocks of 4 and 16 at every offset; heads of 8 and 64 take
 * the AVX2 path (soft-capped scores too), heads of 12 the portable one;
 * both paths, 1 and 2 threads; a cache of floats and one of halves (the
 * engine's default), whose reference attends over the keys and values
 * rounded to halves as the cache holds them.
 */


#include <stdint.h>

#include "fg_tap.h"
#include "fg_kernels.h"
#include "fg_rand.h"


#define N_SEQ     2
#define MAX_POS   45
#define N_BLOCKS  64
#define MAX_HEAD  64


static fg_rand_t  rng = { 0x243f6a8885a308d3ULL };


static float
urand(void)
{
    return (float) (fg_rand_double(&rng) * 2 - 1);
}


static int
close_rel(double got, double want, double rel)
{
    return fabs(got - want) <= rel * fabs(want) + 1e-30
           || (isnan(got) && isnan(want));
}


/* both paths; special values first, in the vector part */
static void
test_geglu(void)
{
    int     simd;
    size_t  i, n, bad;
    float   g[1003], u[1003], y[1003], y2[1003];
    double  r, worst, e, z;

    n = 1003;

    for (i = 0; i < n; i++) {
        g[i] = -12.0f + 24.0f * (float) i / (float) (n - 1);
        u[i] = urand();
    }

    g[0] = 0.0f;
    g[1] = 3e4f;
    g[2] = -3e4f;
    g[3] = NAN;

    for (simd = 0; simd < 2; simd++) {
        fg_k_set_simd(simd);
        fg_k_geglu(y, g, u, n);

        bad = 0;
        worst = 0;

        for (i = 0; i < n; i++) {
            /* 0.5 (1 + tanh z) = 1 / (1 + e^-2z), exact where tanh z = -1 */
            z = sqrt(2 / M_PI) * (g[i] + 0.044715 * pow(g[i], 3));
            r = g[i] / (1 + exp(-2 * z)) * u[i];

            /* float's rounding of 2z, times e^-2z's slope where large */
            e = fabs(y[i] - r) / (fabs(r) + 1e-30) / (1 + fabs(2 * z));
            worst = fabs(r) > 1e-30 && e > worst ? e : worst;
            bad += !close_rel(y[i], r, 4e-7 * (1 + fabs(2 * z)))
                   && fabs(y[i] - r) > 1e-30;
        }

        ok(bad == 0 && isnan(y[3]), "geglu (%s): %zu values from -12 to "
           "12, 0, +-3e4 and NaN within 4e-7 (1 + |2z|) relative, z "
           "tanh's argument (worst %.2g)",
           simd ? "best path" : "portable", n, worst);

        /* in place, on gate */
        memcpy(y2, g, sizeof(g));
        fg_k_geglu(y2, y2, u, n);
        ok(memcmp(y, y2, sizeof(y)) == 0, "geglu (%s): in place is the "
           "same", simd ? "best path" : "portable");
    }

    fg_k_set_simd(1);
}


static void
test_softcap_scale(void)
{
    size_t  i, bad;
    float   x[257], y[257];
    double  r;

    for (i = 0; i < 257; i++) {
        x[i] = (float) ((double) i - 128) * 1.7f;
    }

    memcpy(y, x, sizeof(x));
    fg_k_softcap(y, 257, 30.0f);

    bad = 0;

    for (i = 0; i < 257; i++) {
        r = 30.0 * tanh(x[i] / 30.0);
        bad += !close_rel(y[i], r, 2e-6);
        bad += fabs(y[i]) > 30.0f;
    }

    ok(bad == 0, "softcap 30: -218 .. 218 within 2e-6 of 30 tanh(x / 30), "
       "never past 30");

    memcpy(y, x, sizeof(x));
    fg_k_scale(y, 257, 8.0f);

    bad = 0;

    for (i = 0; i < 257; i++) {
        bad += y[i] != x[i] * 8.0f;
    }

    ok(bad == 0, "scale by 8 is exact");
}


/* qwen3's q norm: each head of each row normed with the same weights */
static void
test_head_norm(void)
{
    size_t  t, h, i, bad;
    float   x[3 * 4 * 16], y[3 * 4 * 16], w[16];
    double  ss, r;

    for (i = 0; i < 16; i++) {
        w[i] = 1.0f + 0.1f * urand();
    }

    for (i = 0; i < 3 * 4 * 16; i++) {
        x[i] = urand() * (float) (1 + i / 16);
    }

    fg_k_rmsnorm(y, x, w, 3 * 4, 16, 1e-6f);

    bad = 0;

    for (t = 0; t < 3; t++) {
        for (h = 0; h < 4; h++) {
            ss = 0;

            for (i = 0; i < 16; i++) {
                ss += (double) x[(t * 4 + h) * 16 + i]
                      * x[(t * 4 + h) * 16 + i];
            }

            for (i = 0; i < 16; i++) {
                r = x[(t * 4 + h) * 16 + i] / sqrt(ss / 16 + 1e-6) * w[i];
                bad += !close_rel(y[(t * 4 + h) * 16 + i], r, 2e-6);
            }
        }
    }

    ok(bad == 0, "per-head rms norm: 3 rows of 4 heads of 16, each head on "
       "its own, within 2e-6");
}


typedef struct {
    size_t            n_head;
    size_t            n_kv_head;
    size_t            d;
    size_t            bs;
    fg_k_attn_opts_t  o;
} acfg_t;


/* dense attention of one head at position p over its window, in double */
static void
ref_attn(double *out, const float *q, const float *k, const float *v,
    size_t p, size_t stride, const acfg_t *c)
{
    size_t  j, i, j0;
    double  s[MAX_POS], max, sum, dot, scale;

    scale = c->o.scale > 0 ? c->o.scale : 1 / sqrt((double) c->d);
    j0 = c->o.window && p + 1 > c->o.window ? p + 1 - c->o.window : 0;
    max = -INFINITY;

    for (j = j0; j <= p; j++) {
        dot = 0;

        for (i = 0; i < c->d; i++) {
            dot += (double) q[i] * k[j * stride + i];
        }

        s[j] = dot * scale;

        if (c->o.softcap > 0) {
            s[j] = c->o.softcap * tanh(s[j] / c->o.softcap);
        }

        max = fmax(max, s[j]);
    }

    sum = 0;

    for (j = j0; j <= p; j++) {
        s[j] = exp(s[j] - max);
        sum += s[j];
    }

    for (i = 0; i < c->d; i++) {
        out[i] = 0;

        for (j = j0; j <= p; j++) {
            out[i] += s[j] / sum * v[j * stride + i];
        }
    }
}


/* both sequences through one step; the worst error against ref_attn */
static double
attn_case(const acfg_t *c, fg_pool_t *pool, fg_k_type_e type)
{
    size_t        qd, kvd, t, n, s, p, h, i, nb, vs;
    float        *q, *k, *v, *out;
    char         *cache;
    double        r[MAX_HEAD], worst;
    int32_t       tables[N_SEQ * N_BLOCKS], pos[N_SEQ * MAX_POS];
    int32_t       seq[N_SEQ * MAX_POS], ids[N_BLOCKS];
    fg_k_kv_t     kv;
    fg_k_batch_t  b;

    static const size_t  len[N_SEQ] = { MAX_POS, 29 };

    qd = c->n_head * c->d;
    kvd = c->n_kv_head * c->d;
    n = len[0] + len[1];
    nb = N_BLOCKS;

    q = malloc(n * qd * sizeof(float));
    k = malloc(n * kvd * sizeof(float));
    v = malloc(n * kvd * sizeof(float));
    out = malloc(n * qd * sizeof(float));
    vs = fg_k_kv_value_size(type);
    cache = malloc(2 * nb * c->bs * kvd * vs);

    /* all ones: a NaN as a float and as a half */
    memset(cache, 0xff, 2 * nb * c->bs * kvd * vs);

    for (i = 0; i < nb; i++) {
        ids[i] = (int32_t) i;
    }

    for (i = nb - 1; i > 0; i--) {
        t = (size_t) (fg_rand_double(&rng) * (i + 1));
        s = ids[i];
        ids[i] = ids[t];
        ids[t] = (int32_t) s;
    }

    for (i = 0; i < N_SEQ * N_BLOCKS; i++) {
        tables[i] = ids[i % nb];
    }

    /* sequence 1's blocks after sequence 0's */
    for (i = 0; i < N_BLOCKS / 2; i++) {
        tables[N_BLOCKS + i] = ids[N_BLOCKS / 2 + i];
    }

    for (t = 0, s = 0; s < N_SEQ; s++) {
        for (p = 0; p < len[s]; p++, t++) {
            pos[t] = (int32_t) p;
            seq[t] = (int32_t) s;
        }
    }

    for (i = 0; i < n * qd; i++) {
        q[i] = urand();
    }

    for (i = 0; i < n * kvd; i++) {
        k[i] = urand();
        v[i] = urand();
    }

    memset(&kv, 0, sizeof(kv));
    kv.type = type;
    kv.k = cache;
    kv.v = cache + nb * c->bs * kvd * vs;
    kv.n_blocks = nb;
    kv.block_size = c->bs;
    kv.n_kv_head = c->n_kv_head;
    kv.head_dim = c->d;

    b.pos = pos;
    b.seq = seq;
    b.block_tables = tables;
    b.max_blocks = N_BLOCKS;
    b.n_tokens = n;

    fg_k_kv_write(&kv, &b, k, v, kvd);
    fg_k_attention_ext(pool, out, q, &kv, &b, c->n_head, &c->o);

    /* the reference's keys and values: as the cache holds them */
    for (i = 0; type == FG_K_F16 && i < n * kvd; i++) {
        k[i] = fg_fp16_to_f32(fg_f32_to_fp16(k[i]));
        v[i] = fg_fp16_to_f32(fg_f32_to_fp16(v[i]));
    }

    worst = 0;

    for (t = 0; t < n; t++) {
        s = (size_t) seq[t];
        p = (size_t) pos[t];

        for (h = 0; h < c->n_head; h++) {
            /* the sequence's first row: its keys start there */
            ref_attn(r, q + t * qd + h * c->d,
                     k + (t - p) * kvd + h / (c->n_head / c->n_kv_head)
                         * c->d,
                     v + (t - p) * kvd + h / (c->n_head / c->n_kv_head)
                         * c->d, p, kvd, c);

            for (i = 0; i < c->d; i++) {
                worst = fmax(worst, fabs(out[t * qd + h * c->d + i] - r[i]));

                if (isnan(out[t * qd + h * c->d + i])) {
                    worst = INFINITY;
                }
            }
        }
    }

    free(q);
    free(k);
    free(v);
    free(out);
    free(cache);

    return worst;
}


static void
test_attention(fg_k_type_e type)
{
    int         simd, th;
    size_t      i, w, sc;
    double      err, worst;
    acfg_t      c;
    fg_pool_t  *pool;

    static const size_t  windows[] = { 0, 1, 5, 16, 37 };
    static const acfg_t  shapes[] = {
        { 4, 2, 8, 4, { 0, 0, 0 } },
        { 2, 1, 64, 16, { 0, 0, 0 } },
        { 3, 3, 12, 4, { 0, 0, 0 } },
        { 8, 1, 8, 16, { 0, 0, 0 } }
    };

    for (simd = 0; simd < 2; simd++) {
        fg_k_set_simd(simd);

        for (th = 1; th <= 2; th++) {
            pool = th > 1 ? fg_pool_create(th) : NULL;
            worst = 0;

            for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
                for (w = 0; w < sizeof(windows) / sizeof(windows[0]); w++)
                {
                    for (sc = 0; sc < 3; sc++) {
                        c = shapes[i];
                        c.o.window = (uint32_t) windows[w];
                        c.o.scale = sc == 1 ? 0.7f : 0.0f;
                        c.o.softcap = sc == 2 ? 1.5f : 0.0f;

                        err = attn_case(&c, pool, type);

                        if (err > 1e-5) {
                            diag("heads %zu/%zu x %zu, blocks of %zu, "
                                 "window %u, scale %g, softcap %g: %g",
                                 c.n_head, c.n_kv_head, c.d, c.bs,
                                 c.o.window, (double) c.o.scale,
                                 (double) c.o.softcap, err);
                        }

                        worst = fmax(worst, err);
                    }
                }
            }

            ok(worst <= 1e-5, "attention_ext (%s, %d thread%s, %s cache): 4 "
               "shapes, windows 0 1 5 16 37, scale 0.7, softcap 1.5, every "
               "row within 1e-5 (worst %.2g)",
               simd ? "best path" : "portable", th, th > 1 ? "s" : "",
               type == FG_K_F16 ? "F16" : "F32", worst);

            fg_pool_destroy(pool);
        }
    }

    fg_k_set_simd(1);
}


int
main(void)
{
    fg_k_init();

    test_geglu();
    test_softcap_scale();
    test_head_norm();
    test_attention(FG_K_F32);
    test_attention(FG_K_F16);

    return done_testing();
}
