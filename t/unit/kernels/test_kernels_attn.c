
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
 * Each shape runs again on a cache mapped into a shared pool of head
 * blocks (the unified pool of several models), each head at a shuffled
 * place, so a kernel that addressed a block by the plain layout would
 * read NaN.
 *
 * And every run again on a cache of IEEE halves (FG_K_F16, the engine's
 * default): the cache must hold each key and value rounded to the nearest
 * half, ties to even (fg_f32_to_fp16(), bit for bit; the SIMD and the
 * portable writes take turns, step by step, and the keys include ties
 * both ways), and attention must match the reference in double over
 * those same rounded values.
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
#define TIES_POS  21


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


/* one configuration's sequences, cache and step */
typedef struct {
    const cfg_t   *cfg;
    fg_k_type_e    type;                /* the cache's */
    size_t         qd;
    size_t         kvd;
    size_t         blocks_per_seq;
    float         *q[N_SEQ];            /* dense, [MAX_POS][qd] */
    float         *k[N_SEQ];            /* dense, [MAX_POS][kvd] */
    float         *v[N_SEQ];
    float         *kr[N_SEQ];           /* k and v as the cache holds */
    float         *vr[N_SEQ];           /* them: rounded to its type */
    float         *qb;                  /* the step's rows */
    float         *kb;
    float         *vb;
    float         *out;
    int32_t        rows[N_SEQ];         /* a sequence's block-table row */
    int32_t        tables[N_SEQ * N_BLOCKS];
    int32_t        pos[N_SEQ * MAX_POS];
    int32_t        seq[N_SEQ * MAX_POS];
    uint32_t      *map;                 /* mapped: [block][K heads, V] */
    fg_k_kv_t      kv;
    fg_k_batch_t   b;
} attn_t;


static const step_t  steps[] = {
    { { { 0, 21 }, { 0, 5 }, { 0, 1 } }, "prefill chunks of 21, 5, 1" },
    { { { 21, 22 }, { 5, 37 }, { 1, 50 } }, "decode + two chunks" },
    { { { 22, 23 }, { 37, 38 }, { 50, 51 } }, "decode of three" },
    { { { 23, 24 }, { 38, 38 }, { 51, 80 } }, "decode + chunk to 80" },
    { { { 24, 64 }, { 38, 39 }, { 80, 80 } }, "chunk + decode" }
};

#define N_STEPS  (sizeof(steps) / sizeof(steps[0]))


/* n values of type, every one a NaN: a read of one not written shows */
static void *
attn_cache(size_t n, fg_k_type_e type)
{
    size_t     i;
    float     *f;
    uint16_t  *h;

    if (type == FG_K_F16) {
        h = malloc(n * sizeof(uint16_t));

        for (i = 0; i < n; i++) {
            h[i] = 0x7e00;
        }

        return h;
    }

    f = malloc(n * sizeof(float));

    for (i = 0; i < n; i++) {
        f[i] = NAN;
    }

    return f;
}


/* x as a cache of type holds it */
static float
attn_round(float x, fg_k_type_e type)
{
    return type == FG_K_F16 ? fg_fp16_to_f32(fg_f32_to_fp16(x)) : x;
}


/*
 * Keys at ties between two halves, where rounding to even goes down (1 +
 * 2^-11 to 1) and up (1 + 3 * 2^-11 to 1 + 2^-9), either sign; and one
 * below the halves' normal range, where the step is 2^-24.
 */
static void
attn_ties(float *k)
{
    static const float  ties[] = {
        0x1.002p0f, 0x1.006p0f, -0x1.002p0f, -0x1.006p0f, 0x1.002p-1f,
        0x1.8p-24f
    };

    memcpy(k, ties, sizeof(ties));
}


/*
 * The cache as a pool of head blocks several models share: the K and V
 * heads of each block at shuffled places of one arena, head blocks a
 * little more than a head apart (a larger head size's).
 */
static void
attn_map(attn_t *a, size_t nb)
{
    size_t    i, n, heads;
    int32_t  *perm;

    heads = 2 * a->cfg->n_kv_head;
    n = nb * heads;
    perm = malloc(n * sizeof(int32_t));
    a->map = malloc(n * sizeof(uint32_t));

    for (i = 0; i < n; i++) {
        perm[i] = (int32_t) i;
    }

    shuffle(perm, n);

    for (i = 0; i < n; i++) {
        a->map[i] = (uint32_t) perm[i];
    }

    free(perm);

    a->kv.head_stride = a->cfg->block_size * a->cfg->head_dim + 8;
    a->kv.map_stride = heads;
    a->kv.k_map = a->map;
    a->kv.v_map = a->map + a->cfg->n_kv_head;
    a->kv.k = attn_cache(n * a->kv.head_stride, a->type);
    a->kv.v = a->kv.k;
}


/*
 * Random dense q, k and v for each sequence, a cache of NaN (mapped: a
 * shared pool's, attn_map()), blocks from a shuffled free list and table
 * rows in shuffled order.
 */
static void
attn_init(attn_t *a, const cfg_t *cfg, int mapped, fg_k_type_e type)
{
    size_t   s, i, nb;
    int32_t  free_list[N_BLOCKS];

    a->cfg = cfg;
    a->type = type;
    a->kvd = cfg->n_kv_head * cfg->head_dim;
    a->qd = cfg->n_head * cfg->head_dim;
    a->blocks_per_seq = (MAX_POS + cfg->block_size - 1) / cfg->block_size;

    for (s = 0; s < N_SEQ; s++) {
        a->q[s] = malloc(MAX_POS * a->qd * sizeof(float));
        a->k[s] = malloc(MAX_POS * a->kvd * sizeof(float));
        a->v[s] = malloc(MAX_POS * a->kvd * sizeof(float));

        for (i = 0; i < MAX_POS * a->qd; i++) {
            a->q[s][i] = (float) ((urand() * 2 - 1) * 2);
        }

        for (i = 0; i < MAX_POS * a->kvd; i++) {
            a->k[s][i] = (float) (urand() * 2 - 1);
            a->v[s][i] = (float) (urand() * 2 - 1);
        }

        /* written in step 0 (the portable write) and in step 1 (SIMD) */
        attn_ties(a->k[s] + s * 3);
        attn_ties(a->k[s] + TIES_POS * a->kvd + s * 3);

        a->kr[s] = malloc(MAX_POS * a->kvd * sizeof(float));
        a->vr[s] = malloc(MAX_POS * a->kvd * sizeof(float));

        for (i = 0; i < MAX_POS * a->kvd; i++) {
            a->kr[s][i] = attn_round(a->k[s][i], type);
            a->vr[s][i] = attn_round(a->v[s][i], type);
        }
    }

    a->qb = malloc(N_SEQ * MAX_POS * a->qd * sizeof(float));
    a->kb = malloc(N_SEQ * MAX_POS * a->kvd * sizeof(float));
    a->vb = malloc(N_SEQ * MAX_POS * a->kvd * sizeof(float));
    a->out = malloc(N_SEQ * MAX_POS * a->qd * sizeof(float));

    /* blocks enough for the three sequences, and to spare for shuffling */
    nb = 2 * N_SEQ * a->blocks_per_seq;
    nb = nb < N_BLOCKS ? nb : N_BLOCKS;
    memset(&a->kv, 0, sizeof(fg_k_kv_t));
    a->map = NULL;
    a->kv.n_blocks = nb;
    a->kv.block_size = cfg->block_size;
    a->kv.n_kv_head = cfg->n_kv_head;
    a->kv.head_dim = cfg->head_dim;
    a->kv.type = type;

    if (mapped) {
        attn_map(a, nb);

    } else {
        a->kv.k = attn_cache(nb * cfg->block_size * a->kvd, type);
        a->kv.v = attn_cache(nb * cfg->block_size * a->kvd, type);
    }

    for (i = 0; i < nb; i++) {
        free_list[i] = (int32_t) i;
    }

    shuffle(free_list, nb);

    for (s = 0; s < N_SEQ; s++) {
        a->rows[s] = (int32_t) s;
    }

    shuffle(a->rows, N_SEQ);

    for (s = 0; s < N_SEQ; s++) {
        for (i = 0; i < a->blocks_per_seq; i++) {
            a->tables[a->rows[s] * N_BLOCKS + i] =
                free_list[s * a->blocks_per_seq + i];
        }
    }

    a->b.pos = a->pos;
    a->b.seq = a->seq;
    a->b.block_tables = a->tables;
    a->b.max_blocks = N_BLOCKS;
}


static void
attn_free(attn_t *a)
{
    size_t  s;

    for (s = 0; s < N_SEQ; s++) {
        free(a->q[s]);
        free(a->k[s]);
        free(a->v[s]);
        free(a->kr[s]);
        free(a->vr[s]);
    }

    if (a->map == NULL) {
        free(a->kv.v);
    }

    free(a->kv.k);
    free(a->map);
    free(a->out);
    free(a->vb);
    free(a->kb);
    free(a->qb);
}


/* the batch of a step: sequence 1's tokens first, then 2, then 0 */
static void
attn_batch(attn_t *a, const step_t *st)
{
    size_t  c, s, p, n, qd, kvd;

    qd = a->qd;
    kvd = a->kvd;
    n = 0;

    for (c = 0; c < N_SEQ; c++) {
        s = (c + 1) % N_SEQ;

        for (p = (size_t) st->range[s][0]; p < (size_t) st->range[s][1];
             p++, n++)
        {
            a->pos[n] = (int32_t) p;
            a->seq[n] = a->rows[s];
            memcpy(a->qb + n * qd, a->q[s] + p * qd, qd * sizeof(float));
            memcpy(a->kb + n * kvd, a->k[s] + p * kvd, kvd * sizeof(float));
            memcpy(a->vb + n * kvd, a->v[s] + p * kvd, kvd * sizeof(float));
        }
    }

    a->b.n_tokens = n;
}


/*
 * The step's output against dense attention in double, within 1e-5;
 * the first difference is told when report is set.
 */
static int
attn_check(const attn_t *a, const step_t *st, int report, double *worst)
{
    int            pass;
    size_t         c, s, t, p, h, i, kvh;
    double         o[FG_K_MAX_HEAD_DIM], e, got;
    const cfg_t   *cfg;

    cfg = a->cfg;
    pass = 1;

    for (t = 0, c = 0; c < N_SEQ; c++) {
        s = (c + 1) % N_SEQ;

        for (p = (size_t) st->range[s][0]; p < (size_t) st->range[s][1];
             p++, t++)
        {
            for (h = 0; h < cfg->n_head; h++) {
                kvh = h / (cfg->n_head / cfg->n_kv_head);

                ref_attention(o, a->q[s] + p * a->qd + h * cfg->head_dim,
                              a->kr[s] + kvh * cfg->head_dim,
                              a->vr[s] + kvh * cfg->head_dim, p, a->kvd,
                              cfg->head_dim);

                for (i = 0; i < cfg->head_dim; i++) {
                    got = a->out[t * a->qd + h * cfg->head_dim + i];
                    e = fabs(got - o[i]);

                    /* NaN fails here too */
                    if (!(e <= 1e-5)) {
                        if (report && pass) {
                            diag("%s, seq %zu pos %zu head %zu: %g, want %g",
                                 st->what, s, p, h, got, o[i]);
                        }

                        pass = 0;
                    }

                    *worst = fmax(*worst, e);
                }
            }
        }
    }

    return pass;
}


/* where head h's keys (vh: values) of block blk begin */
static size_t
attn_head(const attn_t *a, size_t blk, size_t h, int vh)
{
    const cfg_t  *cfg;

    cfg = a->cfg;

    if (a->map) {
        return a->map[blk * 2 * cfg->n_kv_head + vh * cfg->n_kv_head + h]
               * a->kv.head_stride;
    }

    return (blk * cfg->n_kv_head + h) * cfg->block_size * cfg->head_dim;
}


/* d values of the cache at value off of base are x as its type holds x */
static int
attn_same(const attn_t *a, const void *base, size_t off, const float *x,
    size_t d)
{
    size_t           i;
    const uint16_t  *h;

    if (a->type != FG_K_F16) {
        return memcmp((const float *) base + off, x, d * sizeof(float)) == 0;
    }

    h = (const uint16_t *) base + off;

    for (i = 0; i < d; i++) {
        if (h[i] != fg_f32_to_fp16(x[i])) {
            return 0;
        }
    }

    return 1;
}


/* every written token sits in its block and slot, in the cache's type */
static int
attn_check_cache(const attn_t *a)
{
    int           pass;
    size_t        s, step, p, h, blk, off, written;
    const cfg_t  *cfg;

    cfg = a->cfg;
    pass = 1;

    for (s = 0; s < N_SEQ; s++) {
        written = 0;

        for (step = 0; step < N_STEPS; step++) {
            if ((size_t) steps[step].range[s][1] > written) {
                written = (size_t) steps[step].range[s][1];
            }
        }

        for (p = 0; p < written; p++) {
            blk = (size_t) a->tables[a->rows[s] * N_BLOCKS
                                     + p / cfg->block_size];

            for (h = 0; h < cfg->n_kv_head; h++) {
                off = (p % cfg->block_size) * cfg->head_dim;

                if (!attn_same(a, a->kv.k, attn_head(a, blk, h, 0) + off,
                               a->k[s] + p * a->kvd + h * cfg->head_dim,
                               cfg->head_dim)
                    || !attn_same(a, a->kv.v, attn_head(a, blk, h, 1) + off,
                                  a->v[s] + p * a->kvd + h * cfg->head_dim,
                                  cfg->head_dim))
                {
                    pass = 0;
                }
            }
        }
    }

    return pass;
}


/*
 * The ties of attn_ties() in sequence 0's keys at 0 and TIES_POS, as
 * halves rounded to even: 1, 1 + 2^-9, their negatives, 0.5 and 2^-23.
 */
static int
attn_check_ties(const attn_t *a)
{
    size_t           i, blk, n, p, bs;
    const uint16_t  *h;

    static const uint16_t  want[] = {
        0x3c00, 0x3c02, 0xbc00, 0xbc02, 0x3800, 0x0002
    };

    n = sizeof(want) / sizeof(want[0]);

    if (a->cfg->head_dim < n) {
        return 1;
    }

    bs = a->cfg->block_size;

    for (p = 0; p <= TIES_POS; p += TIES_POS) {
        blk = (size_t) a->tables[a->rows[0] * N_BLOCKS + p / bs];
        h = (const uint16_t *) a->kv.k + attn_head(a, blk, 0, 0)
            + (p % bs) * a->cfg->head_dim;

        for (i = 0; i < n; i++) {
            if (h[i] != want[i]) {
                diag("position %zu, tie %zu: 0x%04x, want 0x%04x", p, i,
                     h[i], want[i]);
                return 0;
            }
        }
    }

    return 1;
}


static void
run_cfg(const cfg_t *cfg, fg_pool_t *pool, int mapped, fg_k_type_e type)
{
    int          pass_attn[2], simd;
    size_t       step;
    double       worst;
    attn_t       a;
    const char  *how, *in;

    attn_init(&a, cfg, mapped, type);
    how = mapped ? ", a shared pool's head blocks" : "";
    in = type == FG_K_F16 ? ", F16 cache" : "";

    pass_attn[0] = 1;
    pass_attn[1] = 1;
    worst = 0;

    for (step = 0; step < N_STEPS; step++) {
        attn_batch(&a, &steps[step]);

        /* the SIMD write and the portable one take turns */
        fg_k_set_simd((int) (step % 2));
        fg_k_kv_write(&a.kv, &a.b, a.kb, a.vb, a.kvd);

        for (simd = 0; simd < 2; simd++) {
            fg_k_set_simd(simd);

            memset(a.out, 0xff, a.b.n_tokens * a.qd * sizeof(float));
            fg_k_attention(pool, a.out, a.qb, &a.kv, &a.b, cfg->n_head);

            pass_attn[simd] &= attn_check(&a, &steps[step], pass_attn[simd],
                                          &worst);
        }
    }

    fg_k_set_simd(1);

    ok(attn_check_cache(&a), "heads %zu/%zu, dim %zu, blocks of %zu%s%s%s: "
       "kv_write puts each token in bt[p / B], slot p %% B", cfg->n_head,
       cfg->n_kv_head, cfg->head_dim, cfg->block_size,
       pool ? ", 2 threads" : "", how, in);

    if (type == FG_K_F16) {
        ok(attn_check_ties(&a), "heads %zu/%zu, dim %zu, blocks of %zu%s%s: "
           "ties round to the even half", cfg->n_head, cfg->n_kv_head,
           cfg->head_dim, cfg->block_size, pool ? ", 2 threads" : "", how);
    }

    for (simd = 0; simd < 2; simd++) {
        ok(pass_attn[simd], "heads %zu/%zu, dim %zu, blocks of %zu%s%s%s%s: "
           "paged = dense over 5 mixed steps", cfg->n_head, cfg->n_kv_head,
           cfg->head_dim, cfg->block_size, pool ? ", 2 threads" : "",
           simd ? "" : ", generic", how, in);
    }

    diag("largest error %.3g", worst);

    attn_free(&a);
}


int
main(void)
{
    size_t      c, t;
    fg_pool_t  *pool;

    static const fg_k_type_e  types[] = { FG_K_F32, FG_K_F16 };

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
        for (t = 0; t < 2; t++) {
            run_cfg(&cfgs[c], NULL, 0, types[t]);
            run_cfg(&cfgs[c], pool, 0, types[t]);
            run_cfg(&cfgs[c], pool, 1, types[t]);
        }
    }

    fg_pool_destroy(pool);

    return done_testing();
}
