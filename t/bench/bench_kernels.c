
/*
 * fairgate: speed of the CPU matrix products, in GFLOP/s (2 * n * in * out
 * per product), for each weight type at the shapes of a ~100M-parameter
 * model's layer (hidden 768, feed-forward 3072): decode batches of 1, 8
 * and 32 tokens and a prefill chunk of 128, on 1 and 2 threads.
 *
 * The weights rotate over copies totalling 256 MiB or more, more than the
 * last-level cache, as a model's layers do in a real step; otherwise
 * decode would read them from cache and look faster than it is.  Each case
 * runs for 0.1 s (--time) three times and the best run counts, as
 * other work on a shared machine only ever slows a run down.
 *
 * With --quant it measures instead ggml's quantized types side by side
 * with Q8_0 (fg_bench_quant() below): GB/s of weights read and the speed
 * against Q8_0's at the same shape and batch, medians of 5 runs of one
 * thread's CPU time.
 *
 * Usage: bench_kernels [--direct N] [--time S] [--set MIB] [--n N]
 *                      [--quant] [--packed] [--simd avx2|generic]
 *   --direct N   use the direct kernels up to N rows (0: sgemm always)
 *   --time S     seconds per run (0.1)
 *   --set MIB    weights to rotate over (256; 0: one copy, cache-resident)
 *   --n N        only batches of N rows
 *   --quant      the quantized types, on one thread
 *   --packed     Q4_0, Q4_K, Q8_0 plain and packed (fg_k_pack()), in turn
 *   --simd P     the AVX2 or portable paths, where the CPU has better
 * Prints one JSON line per case.
 */


#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fg_bench.h"
#include "fg_kernels.h"
#include "fg_kernels_simd.h"
#include "fg_kernels_qdot.h"
#include "fg_rand.h"


#define FG_BENCH_COPIES  1024


static double  fg_bench_time = 0.1;
static size_t  fg_bench_set = 256;          /* MiB */
static size_t  fg_bench_n;                  /* 0: every batch size */
static int     fg_bench_quant_only;
static int     fg_bench_packed;


/* uniform in [-1, 1) */
static float
fg_bench_uniform(fg_rand_t *r)
{
    return (float) (fg_rand_double(r) * 2 - 1);
}


/*
 * Seconds per call of run(ctx, i), the best of three runs of at least
 * --time seconds and 3 calls each, i counting the calls of a run.
 */
static double
fg_bench_best(void (*run)(void *ctx, size_t i), void *ctx)
{
    int     r;
    size_t  calls;
    double  start, elapsed, best;

    best = 1e30;

    for (r = 0; r < 3; r++) {
        calls = 0;
        start = fg_bench_now();

        do {
            run(ctx, calls);
            calls++;
            elapsed = fg_bench_now() - start;

        } while (elapsed < fg_bench_time || calls < 3);

        if (elapsed / calls < best) {
            best = elapsed / calls;
        }
    }

    return best;
}


/* a product, its weights rotating over the copies */
typedef struct {
    fg_pool_t     *pool;
    fg_k_type_e    type;
    char         **w;
    size_t         copies;
    const float   *x;
    float         *y;
    size_t         n;
    size_t         in;
    size_t         out;
    void          *work;
} fg_bench_mm_t;


static void
fg_bench_mm_run(void *ctx, size_t i)
{
    fg_bench_mm_t  *m;

    m = ctx;

    fg_k_matmul(m->pool, m->y, m->x, m->w[i % m->copies], m->type, m->n,
                m->in, m->out, m->work);
}


static void
fg_bench_mm_run_packed(void *ctx, size_t i)
{
    fg_bench_mm_t  *m;

    m = ctx;

    fg_k_matmul_packed(m->pool, m->y, m->x, m->w[i % m->copies], m->type,
                       m->n, m->in, m->out, m->work);
}


/* an attention call */
typedef struct {
    fg_pool_t           *pool;
    float               *out;
    const float         *q;
    const fg_k_kv_t     *kv;
    const fg_k_batch_t  *b;
    size_t               n_head;
} fg_bench_attn_t;


static void
fg_bench_attn_run(void *ctx, size_t i)
{
    fg_bench_attn_t  *a;

    (void) i;
    a = ctx;

    fg_k_attention(a->pool, a->out, a->q, a->kv, a->b, a->n_head);
}


/*
 * n_seq sequences of ctx positions of one shape (n_head, n_kv_head,
 * dim), each decoding a token at its end, on 1 and 2 threads, over a
 * cache of type (F32 or F16).
 */
static int
fg_bench_attn_case(fg_pool_t **pools, const size_t *shape, size_t ctx,
    size_t n_seq, fg_k_type_e type, fg_rand_t *rnd)
{
    size_t            th, i, blocks, n_blocks, qd, kvd, vs;
    float            *q, *out, x;
    double            best;
    int32_t          *tables, *pos, *seq;
    fg_k_kv_t         kv;
    fg_k_batch_t      b;
    fg_bench_attn_t   run;

    blocks = ctx / 16;
    n_blocks = n_seq * blocks;
    qd = shape[0] * shape[2];
    kvd = shape[1] * shape[2];

    vs = fg_k_kv_value_size(type);
    memset(&kv, 0, sizeof(fg_k_kv_t));
    kv.type = type;
    kv.block_size = 16;
    kv.n_blocks = n_blocks;
    kv.n_kv_head = shape[1];
    kv.head_dim = shape[2];
    kv.k = malloc(n_blocks * 16 * kvd * vs);
    kv.v = malloc(n_blocks * 16 * kvd * vs);
    q = malloc(n_seq * qd * sizeof(float));
    out = malloc(n_seq * qd * sizeof(float));
    tables = malloc(n_blocks * sizeof(int32_t));
    pos = malloc(n_seq * sizeof(int32_t));
    seq = malloc(n_seq * sizeof(int32_t));

    if (kv.k == NULL || kv.v == NULL || q == NULL || out == NULL
        || tables == NULL || pos == NULL || seq == NULL)
    {
        return -1;
    }

    for (i = 0; i < 2 * n_blocks * 16 * kvd; i++) {
        x = fg_bench_uniform(rnd);

        if (type == FG_K_F16) {
            ((uint16_t *) (i & 1 ? kv.v : kv.k))[i / 2] = fg_f32_to_fp16(x);

        } else {
            ((float *) (i & 1 ? kv.v : kv.k))[i / 2] = x;
        }
    }

    for (i = 0; i < n_seq * qd; i++) {
        q[i] = fg_bench_uniform(rnd);
    }

    for (i = 0; i < n_blocks; i++) {
        tables[i] = (int32_t) i;
    }

    for (i = 0; i < n_seq; i++) {
        pos[i] = (int32_t) (ctx - 1);
        seq[i] = (int32_t) i;
    }

    b.pos = pos;
    b.seq = seq;
    b.block_tables = tables;
    b.max_blocks = blocks;
    b.n_tokens = n_seq;

    run.out = out;
    run.q = q;
    run.kv = &kv;
    run.b = &b;
    run.n_head = shape[0];

    for (th = 0; th < 2; th++) {
        run.pool = pools[th];
        best = fg_bench_best(fg_bench_attn_run, &run);

        printf("{\"kernel\": \"attention\", \"kv\": \"%s\", "
               "\"heads\": %zu, \"kv_heads\": %zu, \"dim\": %zu, "
               "\"ctx\": %zu, \"batch\": %zu, \"threads\": %zu, "
               "\"us\": %.1f, \"gbs\": %.1f}\n",
               type == FG_K_F16 ? "f16" : "f32", shape[0], shape[1],
               shape[2], ctx, n_seq, th + 1, best * 1e6,
               2.0 * n_seq * ctx * kvd * vs / best / 1e9);
        fflush(stdout);
    }

    free(seq);
    free(pos);
    free(tables);
    free(out);
    free(q);
    free(kv.v);
    free(kv.k);

    return 0;
}


/*
 * Decode attention: one token per sequence at the end of its context,
 * over an F32 and an F16 cache; figures in microseconds and GB/s of keys
 * and values read (in the cache's type).
 */
static int
fg_bench_attention(fg_pool_t **pools)
{
    size_t     c, ci, bi, t;
    fg_rand_t  rnd;

    static const size_t       shapes[][3] = {     /* n_head, n_kv_head, dim */
        { 8, 4, 8 },                          /* stories260K */
        { 12, 12, 64 }                        /* a ~100M model */
    };
    static const size_t       ctxs[] = { 128, 512 };
    static const size_t       batches[] = { 1, 8 };
    static const fg_k_type_e  types[] = { FG_K_F32, FG_K_F16 };

    fg_rand_seed(&rnd, 2);

    for (c = 0; c < 2; c++) {
        for (ci = 0; ci < 2; ci++) {
            for (bi = 0; bi < 4; bi++) {
                t = bi / 2;

                if (fg_bench_attn_case(pools, shapes[c], ctxs[ci],
                                       batches[bi % 2], types[t], &rnd)
                    != 0)
                {
                    return -1;
                }
            }
        }
    }

    return 0;
}


static int
fg_bench_args(int argc, char **argv)
{
    int  i;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--direct") == 0 && i + 1 < argc) {
            fg_k_mm_direct_max = (size_t) atol(argv[++i]);
            fg_k_mm_half_max = fg_k_mm_direct_max;
            fg_k_mm_qd_max_32 = fg_k_mm_direct_max;
            fg_k_mm_qd_max_k = fg_k_mm_direct_max;
            fg_k_mm_qd_max_0 = fg_k_mm_direct_max;

        } else if (strcmp(argv[i], "--time") == 0 && i + 1 < argc) {
            fg_bench_time = atof(argv[++i]);

        } else if (strcmp(argv[i], "--n") == 0 && i + 1 < argc) {
            fg_bench_n = (size_t) atol(argv[++i]);

        } else if (strcmp(argv[i], "--set") == 0 && i + 1 < argc) {
            fg_bench_set = (size_t) atol(argv[++i]);

        } else if (strcmp(argv[i], "--packed") == 0) {
            fg_bench_quant_only = 1;
            fg_bench_packed = 1;

        } else if (strcmp(argv[i], "--quant") == 0) {
            fg_bench_quant_only = 1;

        } else if (strcmp(argv[i], "--simd") == 0 && i + 1 < argc) {
            i++;
            fg_k_set_simd(strcmp(argv[i], "avx2") == 0 ? FG_K_SIMD_AVX2
                          : strcmp(argv[i], "generic") == 0 ? 0 : 1);

        } else {
            fprintf(stderr, "usage: bench_kernels [--direct N] [--time S] "
                    "[--set MIB] [--n N] [--quant] [--packed] "
                    "[--simd avx2|generic]\n");
            return -1;
        }
    }

    return 0;
}


/*
 * wf (out x in) in type, copied until the copies take --set MiB: w[0 ..
 * copies - 1].  Returns the number of copies, 0 when out of memory.
 */
static size_t
fg_bench_weights(fg_k_type_e type, const float *wf, size_t in, size_t out,
    char **w)
{
    size_t  c, r, row, copies;

    row = fg_k_row_size(type, in);

    copies = ((fg_bench_set << 20) + out * row - 1) / (out * row);
    copies = copies ? copies : 1;
    copies = copies > FG_BENCH_COPIES ? FG_BENCH_COPIES : copies;

    for (c = 0; c < copies; c++) {
        w[c] = malloc(out * row);

        if (w[c] == NULL) {
            return 0;
        }

        if (c == 0) {
            for (r = 0; r < out; r++) {
                fg_k_quant_row(type, wf + r * in, w[0] + r * row, in);
            }

        } else {
            memcpy(w[c], w[0], out * row);
        }
    }

    return copies;
}


/* the products of one matrix at each batch size on 1 and 2 threads */
static void
fg_bench_products(fg_pool_t **pools, fg_k_type_e type, const char *name,
    char **w, size_t copies, const float *x, float *y, size_t in,
    size_t out, void *work)
{
    size_t          ni, n, th;
    double          sec;
    fg_bench_mm_t   run;

    static const size_t  ns[] = { 1, 8, 16, 32, 128 };

    run.type = type;
    run.w = w;
    run.copies = copies;
    run.x = x;
    run.y = y;
    run.in = in;
    run.out = out;
    run.work = work;

    for (ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++) {
        n = ns[ni];

        if (fg_bench_n && n != fg_bench_n) {
            continue;
        }

        for (th = 0; th < 2; th++) {
            run.pool = pools[th];
            run.n = n;
            sec = fg_bench_best(fg_bench_mm_run, &run);

            printf("{\"type\": \"%s\", \"out\": %zu, \"in\": %zu, "
                   "\"n\": %zu, \"threads\": %zu, \"us\": %.1f, "
                   "\"gflops\": %.1f, \"path\": \"%s\"}\n",
                   name, out, in, n, th + 1, sec * 1e6,
                   2.0 * n * in * out / sec / 1e9,
                   fg_k_mm_takes_direct(type, n) ? "direct"
                   : type == FG_K_BF16 && fg_k_bf16_rounds_x() ? "bf16"
                   : "sgemm");
            fflush(stdout);
        }
    }
}


/* the calling thread's CPU time: a pool of 1 runs the products inline */
static double
fg_bench_cpu_now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);

    return ts.tv_sec + ts.tv_nsec / 1e9;
}


/*
 * Seconds per call of run(ctx, i) on one thread, the median of 5 runs as
 * above, in the thread's CPU time: time that other work on a shared
 * machine takes from it does not count (its memory traffic still does).
 */
static double
fg_bench_med(void (*run)(void *ctx, size_t i), void *ctx)
{
    int     r;
    size_t  calls;
    double  start, elapsed, v[5];

    for (r = 0; r < 5; r++) {
        calls = 0;
        start = fg_bench_cpu_now();

        do {
            run(ctx, calls);
            calls++;
            elapsed = fg_bench_cpu_now() - start;

        } while (elapsed < fg_bench_time || calls < 3);

        v[r] = elapsed / calls;
    }

    qsort(v, 5, sizeof(double), fg_bench_cmp);

    return fg_bench_median(v, 5);
}


/*
 * Weights of a quantized type for the speed alone: random bytes, bit 6 of
 * each cleared so that every half scale is finite (below 2); the kernels
 * take the same time whatever the values.  Copies as fg_bench_weights().
 */
static size_t
fg_bench_qweights(fg_k_type_e type, size_t in, size_t out, char **w,
    fg_rand_t *rnd)
{
    size_t  c, i, bytes, copies;

    bytes = out * fg_k_row_size(type, in);

    copies = ((fg_bench_set << 20) + bytes - 1) / bytes;
    copies = copies ? copies : 1;
    copies = copies > FG_BENCH_COPIES ? FG_BENCH_COPIES : copies;

    for (c = 0; c < copies; c++) {
        w[c] = malloc(bytes);

        if (w[c] == NULL) {
            return 0;
        }

        if (c == 0) {
            for (i = 0; i < bytes; i++) {
                w[0][i] = (char) (fg_rand_next(rnd) & 0xbf);
            }

        } else {
            memcpy(w[c], w[0], bytes);
        }
    }

    return copies;
}


/*
 * ggml's quantized types beside Q8_0 at a ~100M model's shapes, batches
 * of 1, 8 and 32 (a prefill's 512 with --n 512) on one thread: GB/s of
 * weights and the speed against Q8_0's (its time over theirs).
 */
static int
fg_bench_quant(fg_pool_t *pool, const float *x, float *y, void *work)
{
    char           *w[FG_BENCH_COPIES];
    size_t          t, s, ni, c, copies;
    double          sec, q8;
    fg_rand_t       rnd;
    fg_bench_mm_t   run;

    static const fg_k_type_e  types[] = {
        FG_K_Q8_0, FG_K_Q4_0, FG_K_Q4_1, FG_K_Q5_0, FG_K_Q5_1, FG_K_Q2_K,
        FG_K_Q3_K, FG_K_Q4_K, FG_K_Q5_K, FG_K_Q6_K
    };
    static const char  *names[] = {
        "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K",
        "Q5_K", "Q6_K"
    };
    static const size_t  shapes[][2] = {        /* out, in */
        { 768, 768 }, { 2048, 768 }, { 768, 2048 }
    };
    static const size_t  ns[] = { 1, 8, 32, 512 };

    fg_rand_seed(&rnd, 3);

    run.pool = pool;
    run.x = x;
    run.y = y;
    run.work = work;
    run.w = w;

    for (s = 0; s < 3; s++) {
        for (ni = 0; ni < 4; ni++) {
            /* a prefill's 512 rows only when asked: --n 512 */
            if (fg_bench_n ? ns[ni] != fg_bench_n : ns[ni] == 512) {
                continue;
            }

            q8 = 0;

            for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
                run.type = types[t];
                run.out = shapes[s][0];
                run.in = shapes[s][1];
                run.n = ns[ni];
                run.copies = fg_bench_qweights(types[t], run.in, run.out, w,
                                               &rnd);
                copies = run.copies;

                if (copies == 0) {
                    return -1;
                }

                sec = fg_bench_med(fg_bench_mm_run, &run);
                q8 = t == 0 ? sec : q8;

                printf("{\"type\": \"%s\", \"out\": %zu, \"in\": %zu, "
                       "\"n\": %zu, \"us\": %.1f, \"gbs\": %.2f, "
                       "\"x_q8_0\": %.2f, \"path\": \"%s\"}\n",
                       names[t], run.out, run.in, run.n, sec * 1e6,
                       run.out * fg_k_row_size(types[t], run.in) / sec / 1e9,
                       q8 / sec, fg_k_mm_takes_direct(types[t], run.n)
                                 ? "direct" : "sgemm");
                fflush(stdout);

                for (c = 0; c < copies; c++) {
                    free(w[c]);
                }
            }
        }
    }

    return 0;
}


/* the copies of a plain matrix packed, the plain ones freed */
static int
fg_bench_pack_copies(fg_bench_mm_t *run, char **w, char **wp)
{
    size_t  c, size;

    size = fg_k_pack_size(run->type, run->in, run->out);

    for (c = 0; c < run->copies; c++) {
        wp[c] = size ? aligned_alloc(64, (size + 63) / 64 * 64) : NULL;

        if (wp[c] == NULL) {
            return -1;
        }

        fg_k_pack(run->type, wp[c], w[c], run->in, run->out);
    }

    return 0;
}


/*
 * --packed: Q4_0, Q4_K and Q8_0 plain and packed, at a ~100M model's
 * shapes,
 * one thread, batches of 1 to 512 rows, the two taken in turn three
 * times so that a shared machine's load falls on both alike; the best
 * of each's medians, and plain's time over packed's.
 */
static int
fg_bench_pack(fg_pool_t *pool, const float *x, float *y, void *work)
{
    char           *w[FG_BENCH_COPIES], *wp[FG_BENCH_COPIES];
    size_t          t, s, ni, c, k;
    double          sec[2];
    fg_rand_t       rnd;
    fg_bench_mm_t   run, runp;

    static const fg_k_type_e  types[] = { FG_K_Q4_0, FG_K_Q4_K, FG_K_Q8_0 };
    static const char  *names[] = { "Q4_0", "Q4_K", "Q8_0" };
    static const size_t  shapes[][2] = {        /* out, in */
        { 768, 768 }, { 2048, 768 }, { 768, 2048 }
    };
    static const size_t  ns[] = { 1, 2, 4, 8, 32, 512 };

    fg_rand_seed(&rnd, 3);

    run.pool = pool;
    run.x = x;
    run.y = y;
    run.work = work;
    run.w = w;

    for (t = 0; t < 3; t++) {
        for (s = 0; s < 3; s++) {
            run.type = types[t];
            run.out = shapes[s][0];
            run.in = shapes[s][1];
            run.copies = fg_bench_qweights(types[t], run.in, run.out, w,
                                           &rnd);

            if (run.copies == 0 || fg_bench_pack_copies(&run, w, wp) != 0) {
                return -1;
            }

            runp = run;
            runp.w = wp;

            for (ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++) {
                if (fg_bench_n && ns[ni] != fg_bench_n) {
                    continue;
                }

                run.n = ns[ni];
                runp.n = ns[ni];
                sec[0] = 1e30;
                sec[1] = 1e30;

                for (k = 0; k < 3; k++) {
                    sec[0] = fmin(sec[0], fg_bench_med(fg_bench_mm_run,
                                                       &run));
                    sec[1] = fmin(sec[1], fg_bench_med(
                                              fg_bench_mm_run_packed,
                                              &runp));
                }

                printf("{\"type\": \"%s\", \"out\": %zu, \"in\": %zu, "
                       "\"n\": %zu, \"plain_us\": %.1f, "
                       "\"packed_us\": %.1f, \"speedup\": %.3f}\n",
                       names[t], run.out, run.in, run.n, sec[0] * 1e6,
                       sec[1] * 1e6, sec[0] / sec[1]);
                fflush(stdout);
            }

            for (c = 0; c < run.copies; c++) {
                free(w[c]);
                free(wp[c]);
            }
        }
    }

    return 0;
}


/* --quant: its own buffers, for batches of up to 512 rows of 2048 */
static int
fg_bench_quant_main(void)
{
    int         rc;
    void       *work;
    float      *x, *y;
    size_t      i, t, s, work_size;
    fg_rand_t   rnd;
    fg_pool_t  *pool;

    static const fg_k_type_e  types[] = {
        FG_K_Q8_0, FG_K_Q4_0, FG_K_Q4_1, FG_K_Q5_0, FG_K_Q5_1, FG_K_Q2_K,
        FG_K_Q3_K, FG_K_Q4_K, FG_K_Q5_K, FG_K_Q6_K
    };

    work_size = 0;

    for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
        s = fg_k_matmul_work_size(types[t], 512, 2048, 1);
        work_size = s > work_size ? s : work_size;
    }

    pool = fg_pool_create(1);
    x = malloc(512 * 2048 * sizeof(float));
    y = malloc(512 * 2048 * sizeof(float));
    work = aligned_alloc(64, (work_size + 63) & ~(size_t) 63);

    if (pool == NULL || x == NULL || y == NULL || work == NULL) {
        fprintf(stderr, "bench_kernels: out of memory\n");
        return 1;
    }

    fg_rand_seed(&rnd, 1);

    for (i = 0; i < 512 * 2048; i++) {
        x[i] = fg_bench_uniform(&rnd);
    }

    fprintf(stderr, "bench_kernels: %s paths\n",
            fg_k_simd512 ? "avx512vnni" : fg_k_simd ? "avx2" : "generic");

    rc = fg_bench_packed ? fg_bench_pack(pool, x, y, work)
                         : fg_bench_quant(pool, x, y, work);

    if (rc != 0) {
        fprintf(stderr, "bench_kernels: out of memory\n");
    }

    fg_pool_destroy(pool);
    free(work);
    free(y);
    free(x);

    return rc ? 1 : 0;
}


int
main(int argc, char **argv)
{
    char         *w[FG_BENCH_COPIES];
    void         *work;
    float        *x, *y, *wf;
    size_t        t, s, c, copies, in, out, work_size;
    fg_rand_t     rnd;
    fg_pool_t    *pools[2];

    static const fg_k_type_e  types[] = {
        FG_K_F32, FG_K_F16, FG_K_BF16, FG_K_Q8_0
    };
    static const char  *names[] = { "F32", "F16", "BF16", "Q8_0" };
    static const size_t  shapes[][2] = {        /* out, in */
        { 768, 768 }, { 3072, 768 }, { 768, 3072 }
    };

    fprintf(stderr, "bench_kernels: %s kernels\n", fg_k_init());

    if (fg_bench_args(argc, argv) != 0) {
        return 2;
    }

    if (fg_bench_quant_only) {
        return fg_bench_quant_main();
    }

    pools[0] = fg_pool_create(1);
    pools[1] = fg_pool_create(2);

    x = malloc(128 * 3072 * sizeof(float));
    y = malloc(128 * 3072 * sizeof(float));
    wf = malloc(3072 * 768 * sizeof(float));

    /* the largest n and in serve every product (fg_kernels.h) */
    work_size = 0;

    for (t = 0; t < 4; t++) {
        s = fg_k_matmul_work_size(types[t], 128, 3072, 2);
        work_size = s > work_size ? s : work_size;
    }

    work = aligned_alloc(64, (work_size + 63) & ~(size_t) 63);

    if (pools[0] == NULL || pools[1] == NULL || x == NULL || y == NULL
        || wf == NULL || work == NULL)
    {
        fprintf(stderr, "bench_kernels: out of memory\n");
        return 1;
    }

    fg_rand_seed(&rnd, 1);

    for (s = 0; s < 128 * 3072; s++) {
        x[s] = fg_bench_uniform(&rnd);
    }

    for (s = 0; s < 3072 * 768; s++) {
        wf[s] = fg_bench_uniform(&rnd) * 0.05f;
    }

    for (t = 0; t < 4; t++) {
        for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
            out = shapes[s][0];
            in = shapes[s][1];

            copies = fg_bench_weights(types[t], wf, in, out, w);

            if (copies == 0) {
                fprintf(stderr, "bench_kernels: out of memory\n");
                return 1;
            }

            fg_bench_products(pools, types[t], names[t], w, copies, x, y,
                              in, out, work);

            for (c = 0; c < copies; c++) {
                free(w[c]);
            }
        }
    }

    if (fg_bench_attention(pools) != 0) {
        fprintf(stderr, "bench_kernels: out of memory\n");
        return 1;
    }

    fg_pool_destroy(pools[0]);
    fg_pool_destroy(pools[1]);
    free(work);
    free(wf);
    free(y);
    free(x);

    return 0;
}
