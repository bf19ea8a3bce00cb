
/*
 * fairgate: paged attention against dense attention.
 *
 * Three sequences go through steps that mix prefill chunks and decode
 * tokens in one batch, as continuous batching does; their blocks are taken
 * from a shuffled free list and their block-table rows are shuffled too.
 * After each step's fg_k_kv_write(), fg_k_attention() must match attention
 * computed in double over dense per-sequence K and V, keys 0 .. p only.
 * The cache starts as NaN, so reading any slot not yet written (the rest
 * of a block, a later token of the same chunk) shows.  Shapes cover the
 * AVX2 path's groups of 8 keys, full and partial (blocks of 16, 5, 4 and
 * 1), more query heads on a kv head than an item takes (8), heads of 8,
 * 64 and 128 values (its copies for those sizes) and of 16 and 32 (its
 * general code), one block of 256, and heads of 12 for the portable path.
 *
 * Tolerance: 1e-5 absolute.  Values are in [-1, 1] and an output is a
 * convex combination of them; float dot products of at most 128 terms
 * and the exponential (expf, or the AVX2 path's polynomial, 2e-7
 * relative) add errors of a few 1e-7.
 */


#include <stdint.h>

#include "fg_tap.h"
#include "fg_kernels.h"
#include "fg_rand.h"


#define N_SEQ     3
#define MAX_POS   80
#define N_BLOCKS  256


typedef struct {
    size_t  n_head;
    size_t  n_kv_head;
    size_t  head_dim;
    size_t  block_size;
} cfg_t;


/* one step: for each sequence, new positions [from, to) */
typedef struct {
    int          range[N_SEQ][2];
    const char  *what;
} step_t;


static fg_rand_t  rng = { 0xdeadbeefcafef00dULL };


static double
urand(void)
{
    return fg_rand_double(&rng);
}


static void
shuffle(int32_t *a, size_t n)
{
    size_t   i, j;
    int32_t  tmp;

    for (i = n - 1; i > 0; i--) {
        j = (size_t) (urand() * (i + 1));
        tmp = a[i];
        a[i] = a[j];
        a[j] = tmp;
    }
}


/* dense attention of one query head at position p, in double */
static void
ref_attention(double *o, const float *q, const float *k, const float *v,
    size_t p, size_t kv_stride, size_t d)
{
    size_t  j, i;
    double  s[MAX_POS], max, sum, dot;

    max = -INFINITY;

    for (j = 0; j <= p; j++) {
        dot = 0;

        for (i = 0; i < d; i++) {
            dot += (double) q[i] * k[j * kv_stride + i];
        }

        s[j] = dot / sqrt((double) d);
        max = fmax(max, s[j]);
    }

    sum = 0;

    for (j = 0; j <= p; j++) {
        s[j] = exp(s[j] - max);
        sum += s[j];
    }

    for (i = 0; i < d; i++) {
        o[i] = 0;

        for (j = 0; j <= p; j++) {
            o[i] += s[j] / sum * v[j * kv_stride + i];
        }
    }
}


static void
run_cfg(const cfg_t *cfg, fg_pool_t *pool)
{
    int           pass_write, pass_attn[2], simd;
    size_t        c, s, t, h, i, n, p, kvd, qd, nb, blocks_per_seq;
    size_t        step, kvh, blk, off, written[N_SEQ];
    float        *q[N_SEQ], *k[N_SEQ], *v[N_SEQ];
    float        *qb, *kb, *vb, *out;
    double        o[FG_K_MAX_HEAD_DIM], e, worst;
    int32_t       free_list[N_BLOCKS], rows[N_SEQ];
    int32_t       tables[N_SEQ * N_BLOCKS], pos[N_SEQ * MAX_POS];
    int32_t       seq[N_SEQ * MAX_POS];
    fg_k_kv_t     kv;
    fg_k_batch_t  b;

    static const step_t  steps[] = {
        { { { 0, 21 }, { 0, 5 }, { 0, 1 } }, "prefill chunks of 21, 5, 1" },
        { { { 21, 22 }, { 5, 37 }, { 1, 50 } }, "decode + two chunks" },
        { { { 22, 23 }, { 37, 38 }, { 50, 51 } }, "decode of three" },
        { { { 23, 24 }, { 38, 38 }, { 51, 80 } }, "decode + chunk to 80" },
        { { { 24, 64 }, { 38, 39 }, { 80, 80 } }, "chunk + decode" }
    };

    kvd = cfg->n_kv_head * cfg->head_dim;
    qd = cfg->n_head * cfg->head_dim;
    blocks_per_seq = (MAX_POS + cfg->block_size - 1) / cfg->block_size;

    for (s = 0; s < N_SEQ; s++) {
        q[s] = malloc(MAX_POS * qd * sizeof(float));
        k[s] = malloc(MAX_POS * kvd * sizeof(float));
        v[s] = malloc(MAX_POS * kvd * sizeof(float));

        for (i = 0; i < MAX_POS * qd; i++) {
            q[s][i] = (float) ((urand() * 2 - 1) * 2);
        }

        for (i = 0; i < MAX_POS * kvd; i++) {
            k[s][i] = (float) (urand() * 2 - 1);
            v[s][i] = (float) (urand() * 2 - 1);
        }
    }

    qb = malloc(N_SEQ * MAX_POS * qd * sizeof(float));
    kb = malloc(N_SEQ * MAX_POS * kvd * sizeof(float));
    vb = malloc(N_SEQ * MAX_POS * kvd * sizeof(float));
    out = malloc(N_SEQ * MAX_POS * qd * sizeof(float));

    /* blocks enough for the three sequences, and to spare for shuffling */
    nb = 2 * N_SEQ * blocks_per_seq;
    nb = nb < N_BLOCKS ? nb : N_BLOCKS;
    kv.k = malloc(nb * cfg->block_size * kvd * sizeof(float));
    kv.v = malloc(nb * cfg->block_size * kvd * sizeof(float));
    kv.n_blocks = nb;
    kv.block_size = cfg->block_size;
    kv.n_kv_head = cfg->n_kv_head;
    kv.head_dim = cfg->head_dim;

    for (i = 0; i < nb * cfg->block_size * kvd; i++) {
        kv.k[i] = NAN;
        kv.v[i] = NAN;
    }

    /* blocks from a shuffled free list; table rows in shuffled order */
    for (i = 0; i < nb; i++) {
        free_list[i] = (int32_t) i;
    }

    shuffle(free_list, nb);

    for (s = 0; s < N_SEQ; s++) {
        rows[s] = (int32_t) s;
    }

    shuffle(rows, N_SEQ);

    for (s = 0; s < N_SEQ; s++) {
        for (i = 0; i < blocks_per_seq; i++) {
            tables[rows[s] * N_BLOCKS + i] =
                free_list[s * blocks_per_seq + i];
        }
    }

    b.pos = pos;
    b.seq = seq;
    b.block_tables = tables;
    b.max_blocks = N_BLOCKS;

    pass_write = 1;
    pass_attn[0] = 1;
    pass_attn[1] = 1;
    worst = 0;

    for (step = 0; step < sizeof(steps) / sizeof(steps[0]); step++) {

        /* the batch: sequence 1's tokens first, then 2, then 0 */
        n = 0;

        for (c = 0; c < N_SEQ; c++) {
            s = (c + 1) % N_SEQ;

            for (p = (size_t) steps[step].range[s][0];
                 p < (size_t) steps[step].range[s][1]; p++, n++)
            {
                pos[n] = (int32_t) p;
                seq[n] = rows[s];
                memcpy(qb + n * qd, q[s] + p * qd, qd * sizeof(float));
                memcpy(kb + n * kvd, k[s] + p * kvd, kvd * sizeof(float));
                memcpy(vb + n * kvd, v[s] + p * kvd, kvd * sizeof(float));
            }
        }

        b.n_tokens = n;

        fg_k_kv_write(&kv, &b, kb, vb, kvd);

        for (simd = 0; simd < 2; simd++) {
            fg_k_set_simd(simd);

            memset(out, 0xff, n * qd * sizeof(float));
            fg_k_attention(pool, out, qb, &kv, &b, cfg->n_head);

            for (t = 0, c = 0; c < N_SEQ; c++) {
                s = (c + 1) % N_SEQ;

                for (p = (size_t) steps[step].range[s][0];
                     p < (size_t) steps[step].range[s][1]; p++, t++)
                {
                    for (h = 0; h < cfg->n_head; h++) {
                        kvh = h / (cfg->n_head / cfg->n_kv_head);

                        ref_attention(o, q[s] + p * qd + h * cfg->head_dim,
                                      k[s] + kvh * cfg->head_dim,
                                      v[s] + kvh * cfg->head_dim, p, kvd,
                                      cfg->head_dim);

                        for (i = 0; i < cfg->head_dim; i++) {
                            e = fabs(out[t * qd + h * cfg->head_dim + i]
                                     - o[i]);

                            /* NaN fails here too */
                            if (!(e <= 1e-5)) {
                                if (pass_attn[simd]) {
                                    diag("%s, seq %zu pos %zu head %zu: "
                                         "%g, want %g",
                                         steps[step].what, s, p, h,
                                         out[t * qd + h * cfg->head_dim + i],
                                         o[i]);
                                }

                                pass_attn[simd] = 0;
                            }

                            worst = fmax(worst, e);
                        }
                    }
                }
            }
        }
    }

    fg_k_set_simd(1);

    /* every written token sits in its block and slot */
    for (s = 0; s < N_SEQ; s++) {
        written[s] = 0;

        for (step = 0; step < sizeof(steps) / sizeof(steps[0]); step++) {
            if ((size_t) steps[step].range[s][1] > written[s]) {
                written[s] = (size_t) steps[step].range[s][1];
            }
        }

        for (p = 0; p < written[s]; p++) {
            blk = (size_t) tables[rows[s] * N_BLOCKS + p / cfg->block_size];

            for (h = 0; h < cfg->n_kv_head; h++) {
                off = ((blk * cfg->n_kv_head + h) * cfg->block_size
                       + p % cfg->block_size) * cfg->head_dim;

                if (memcmp(kv.k + off, k[s] + p * kvd + h * cfg->head_dim,
                           cfg->head_dim * sizeof(float))
                    || memcmp(kv.v + off,
                              v[s] + p * kvd + h * cfg->head_dim,
                              cfg->head_dim * sizeof(float)))
                {
                    pass_write = 0;
                }
            }
        }
    }

    ok(pass_write, "heads %zu/%zu, dim %zu, blocks of %zu%s: kv_write puts "
       "each token in bt[p / B], slot p %% B", cfg->n_head, cfg->n_kv_head,
       cfg->head_dim, cfg->block_size, pool ? ", 2 threads" : "");

    for (simd = 0; simd < 2; simd++) {
        ok(pass_attn[simd], "heads %zu/%zu, dim %zu, blocks of %zu%s%s: "
           "paged = dense over 5 mixed steps", cfg->n_head, cfg->n_kv_head,
           cfg->head_dim, cfg->block_size, pool ? ", 2 threads" : "",
           simd ? "" : ", generic");
    }

    diag("largest error %.3g", worst);

    for (s = 0; s < N_SEQ; s++) {
        free(q[s]);
        free(k[s]);
        free(v[s]);
    }

    free(kv.k);
    free(kv.v);
    free(out);
    free(vb);
    free(kb);
    free(qb);
}


int
main(void)
{
    size_t      c;
    fg_pool_t  *pool;

    static const cfg_t  cfgs[] = {
        { 6, 2, 16, 16 },       /* grouped-query, 3 heads per kv head */
        { 4, 4, 8, 4 },         /* one kv head per head, small blocks */
        { 8, 1, 32, 16 },       /* one kv head for all */
        { 8, 4, 8, 16 },        /* stories260K */
        { 8, 4, 8, 1 },         /* stories260K's heads, a token a block */
        { 12, 4, 64, 16 },      /* a ~100M model */
        { 4, 1, 32, 5 },        /* multi-query, partial groups of keys */
        { 10, 1, 16, 16 },      /* 10 heads on one kv head: 8, then 2 */
        { 16, 1, 8, 8 },        /* 16 heads on one kv head: 8 and 8 */
        { 2, 2, 128, 32 },      /* heads of 128 */
        { 8, 8, 16, 256 },      /* one block of the largest size */
        { 4, 2, 12, 8 }         /* head_dim not a multiple of 8 */
    };

    diag("kernels: %s", fg_k_init());

    pool = fg_pool_create(2);
    ok(pool != NULL, "pool of 2");

    for (c = 0; c < sizeof(cfgs) / sizeof(cfgs[0]); c++) {
        run_cfg(&cfgs[c], NULL);
        run_cfg(&cfgs[c], pool);
    }

    fg_pool_destroy(pool);

    return done_testing();
}
