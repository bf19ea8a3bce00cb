
/*
 * fairgate: speed of the cpu backend, in tokens per second, through its
 * table of functions as the engine drives it.
 *
 *   decode    B sequences (B = 1, 8, 32), each with a 32-token prompt in
 *             the cache, then one new token each per step (the greedy
 *             choice of the step before) from position 32 to 95 at
 *             most: B tokens a step
 *   prefill   one 256-token prompt in one step, logits for its last row
 *   prefix    the prefix cache (docs/engine-runtime.md): a request of a
 *             480-token prompt through the batcher, its first N tokens
 *             cached by an earlier request (N = 0: the cache on, nothing
 *             found; 240; 464, every block but the last token's), timed
 *             from its submission to its token, against the same request
 *             with the cache off, the two alternating run by run; medians
 *             and the spread (min-max) of --prefix-runs runs (15) of each
 *             and of the ratio within a pair ("speedup"), one thread
 *
 * on 1 and 2 threads, for stories260K and for a generated model of about
 * 100M parameters (the generator's 100m shape: 12 layers, embedding 768,
 * 12 heads, 4 kv heads, feed-forward 2048, vocabulary 32000, tied) in F32
 * and Q8_0, written into build/bench/ the first time.
 *
 * Beside it, for F32 models, a plain single-file engine in the manner of
 * llama2.c's run.c written here: one token at a time, dense K and V,
 * straight loops, compiled -O3 -ffast-math for AVX2 as its "runfast"
 * build would be on this machine: the bar for the engine at batch 1.
 *
 * Each case runs --runs times (5) for --time seconds (0.1; at least 2
 * steps or one prefill) and the best run counts: other work on a shared
 * machine only ever slows a run down, and short runs are more likely to
 * find the cores free.  One JSON line per case, with "cpu": the CPU
 * seconds the process had per wall second of that run (threads included;
 * spinning workers count), below the thread count when other work took
 * the cores; and "per_cpu_s": tokens per CPU second, which for one thread
 * is about what a core of one's own would give.
 *
 * Usage: bench_engine [--time S] [--runs N] [--prefix-runs N] [--dir DIR]
 *                     [--stories PATH] [--no-100m] [--model PATH]
 *
 * --model PATH measures that file alone (as "model"), e.g. a Q4_0 file
 * with FAIRGATE_CPU_PACK=0 and without, its matrices plain and packed.
 */


#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fg_bench.h"
#include "fg_backend.h"
#include "fg_batch.h"
#include "fg_ggml_types.h"
#include "fg_gguf_gen.h"
#include "fg_kernels.h"
#include "fg_model.h"
#include "fg_rand.h"

#include "../unit/fg_test_backend.h"
#include "../unit/fg_test_batch.h"
#include "../unit/fg_test_gguf.h"


#define FG_BENCH_PROMPT    32       /* decode: context before the steps */
#define FG_BENCH_STEPS     64       /* decode: steps at most per run */
#define FG_BENCH_PREFILL   256
#define FG_BENCH_MAX_B     32
#define FG_BENCH_BLOCK     16
#define FG_BENCH_PER_SEQ   ((FG_BENCH_PROMPT + FG_BENCH_STEPS)            \
                            / FG_BENCH_BLOCK)
#define FG_BENCH_BLOCKS    (FG_BENCH_MAX_B * FG_BENCH_PER_SEQ)

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FG_BENCH_FAST  __attribute__((optimize("O3", "fast-math"),         \
                                      target("avx2,fma")))
#define FG_BENCH_HAS_FAST  1
#else
#define FG_BENCH_FAST
#define FG_BENCH_HAS_FAST  0
#endif


static double  fg_bench_time = 0.1;
static int     fg_bench_runs = 5;
static int     fg_bench_px_runs = 15;


/* the process's CPU time: how much of the wall time it really ran */
static double
fg_bench_cpu(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);

    return ts.tv_sec + ts.tv_nsec / 1e9;
}


/* ---- the cpu backend ---- */

typedef struct {
    const fg_backend_ops_t  *ops;
    fg_backend_t            *b;
    uint32_t                 vocab;
    int32_t                  tables[FG_BENCH_MAX_B][FG_BENCH_PER_SEQ];
    int32_t                  prompt[FG_BENCH_MAX_B][FG_BENCH_PREFILL];
    int32_t                  next[FG_BENCH_MAX_B];
    float                   *logits;
} fg_bench_t;


static int
fg_bench_step(fg_bench_t *bn, fg_backend_seq_t *seqs, uint32_t n)
{
    char                err[256];
    fg_backend_batch_t  batch;

    batch.seqs = seqs;
    batch.n_seqs = n;

    if (bn->ops->forward(bn->b, &batch, bn->logits, err, sizeof(err)) != 0) {
        fprintf(stderr, "bench_engine: forward: %s\n", err);
        return -1;
    }

    return 0;
}


/*
 * The prompts of all sequences, in one step: the context every decode
 * case starts from (each run then overwrites positions from
 * FG_BENCH_PROMPT on).  Not timed.
 */
static int
fg_bench_prompts(fg_bench_t *bn)
{
    uint32_t          s;
    fg_backend_seq_t  seqs[FG_BENCH_MAX_B];

    /* the flags it does not set (want_all, want_hidden, first) are 0 */
    memset(seqs, 0, sizeof(seqs));

    for (s = 0; s < FG_BENCH_MAX_B; s++) {
        seqs[s].tokens = bn->prompt[s];
        seqs[s].n_tokens = FG_BENCH_PROMPT;
        seqs[s].pos = 0;
        seqs[s].block_table = bn->tables[s];
        seqs[s].n_blocks = FG_BENCH_PER_SEQ;
        seqs[s].want_logits = 1;
    }

    return fg_bench_step(bn, seqs, FG_BENCH_MAX_B);
}


/* tokens per second of B sequences decoding, the best run */
static double
fg_bench_decode(fg_bench_t *bn, uint32_t nb, double *step_ms, double *cpu)
{
    int               run;
    size_t            steps;
    double            start, elapsed, best, cpu0;
    uint32_t          s, pos;
    fg_backend_seq_t  seqs[FG_BENCH_MAX_B];

    best = 0.0;
    memset(seqs, 0, sizeof(seqs));

    for (run = 0; run < fg_bench_runs; run++) {
        for (s = 0; s < nb; s++) {
            bn->next[s] = bn->prompt[s][FG_BENCH_PROMPT];
            seqs[s].block_table = bn->tables[s];
            seqs[s].n_blocks = FG_BENCH_PER_SEQ;
            seqs[s].want_logits = 1;
        }

        start = fg_bench_now();
        cpu0 = fg_bench_cpu();
        steps = 0;

        for (pos = FG_BENCH_PROMPT;
             pos < FG_BENCH_PROMPT + FG_BENCH_STEPS;
             pos++)
        {
            for (s = 0; s < nb; s++) {
                if (pos > FG_BENCH_PROMPT) {
                    bn->next[s] = fg_k_argmax(bn->logits
                                              + (size_t) s * bn->vocab,
                                              bn->vocab);
                }

                seqs[s].tokens = &bn->next[s];
                seqs[s].n_tokens = 1;
                seqs[s].pos = pos;
            }

            if (fg_bench_step(bn, seqs, nb) != 0) {
                return -1;
            }

            steps++;
            elapsed = fg_bench_now() - start;

            if (elapsed >= fg_bench_time && steps >= 2) {
                break;
            }
        }

        elapsed = fg_bench_now() - start;

        if (nb * steps / elapsed > best) {
            best = nb * steps / elapsed;
            *step_ms = elapsed / steps * 1e3;
            *cpu = (fg_bench_cpu() - cpu0) / elapsed;
        }
    }

    return best;
}


/* tokens per second of one prompt's prefill, the best run */
static double
fg_bench_prefill(fg_bench_t *bn, double *step_ms, double *cpu)
{
    int               run, calls;
    double            start, elapsed, best, cpu0;
    fg_backend_seq_t  seq;

    best = 0.0;

    /* sequence 0's table and the next ones' are consecutive rows */
    memset(&seq, 0, sizeof(seq));
    seq.tokens = bn->prompt[0];
    seq.n_tokens = FG_BENCH_PREFILL;
    seq.pos = 0;
    seq.block_table = bn->tables[0];
    seq.n_blocks = FG_BENCH_PREFILL / FG_BENCH_BLOCK;
    seq.want_logits = 1;

    for (run = 0; run < fg_bench_runs; run++) {
        start = fg_bench_now();
        cpu0 = fg_bench_cpu();
        calls = 0;

        do {
            if (fg_bench_step(bn, &seq, 1) != 0) {
                return -1;
            }

            calls++;
            elapsed = fg_bench_now() - start;

        } while (elapsed < fg_bench_time);

        if (FG_BENCH_PREFILL * calls / elapsed > best) {
            best = FG_BENCH_PREFILL * calls / elapsed;
            *step_ms = elapsed / calls * 1e3;
            *cpu = (fg_bench_cpu() - cpu0) / elapsed;
        }
    }

    return best;
}


/* ---- a plain single-file engine, for comparison ---- */

typedef struct {
    const fg_model_t  *m;
    float             *x, *xb, *xb2, *q, *k, *v, *att, *hg, *hu, *logits;
    float             *kc, *vc;
    size_t             max_pos;
} fg_naive_t;


FG_BENCH_FAST static void
fg_naive_matvec(float *y, const float *w, const float *x, size_t in,
    size_t out)
{
    size_t  i, j;
    float   s;

    for (i = 0; i < out; i++) {
        s = 0.0f;

        for (j = 0; j < in; j++) {
            s += w[i * in + j] * x[j];
        }

        y[i] = s;
    }
}


FG_BENCH_FAST static void
fg_naive_rmsnorm(float *y, const float *x, const float *w, size_t n,
    float eps)
{
    size_t  i;
    float   ss;

    ss = 0.0f;

    for (i = 0; i < n; i++) {
        ss += x[i] * x[i];
    }

    ss = 1.0f / sqrtf(ss / n + eps);

    for (i = 0; i < n; i++) {
        y[i] = w[i] * (ss * x[i]);
    }
}


/* one token at position pos; the logits land in nv->logits */
FG_BENCH_FAST static void
fg_naive_forward(fg_naive_t *nv, int32_t token, size_t pos)
{
    size_t                     l, h, i, j, e, kvd, hd, group, off;
    float                      s, max, sum, angle, c, sn, x0, x1;
    const float               *kr, *vr;
    const fg_model_t          *m;
    const fg_model_layer_t    *ly;
    const fg_llama_hparams_t  *hp;

    m = nv->m;
    hp = m->hp;
    e = hp->n_embd;
    kvd = m->kv_dim;
    hd = hp->head_dim;
    group = hp->n_head / hp->n_head_kv;

    memcpy(nv->x, (const float *) m->tok_embd.data + (size_t) token * e,
           e * sizeof(float));

    for (l = 0; l < hp->n_layer; l++) {
        ly = &m->layers[l];

        fg_naive_rmsnorm(nv->xb, nv->x, ly->attn_norm, e, hp->rms_eps);

        off = (l * nv->max_pos + pos) * kvd;

        fg_naive_matvec(nv->q, ly->wq.data, nv->xb, e, e);
        fg_naive_matvec(nv->kc + off, ly->wk.data, nv->xb, e, kvd);
        fg_naive_matvec(nv->vc + off, ly->wv.data, nv->xb, e, kvd);

        /* RoPE, adjacent pairs as llama's GGUF stores them */
        for (i = 0; i < e; i += 2) {
            angle = pos * m->inv_freq[(i % hd) / 2];
            c = cosf(angle);
            sn = sinf(angle);

            x0 = nv->q[i];
            x1 = nv->q[i + 1];
            nv->q[i] = x0 * c - x1 * sn;
            nv->q[i + 1] = x0 * sn + x1 * c;

            if (i < kvd) {
                x0 = nv->kc[off + i];
                x1 = nv->kc[off + i + 1];
                nv->kc[off + i] = x0 * c - x1 * sn;
                nv->kc[off + i + 1] = x0 * sn + x1 * c;
            }
        }

        for (h = 0; h < hp->n_head; h++) {
            max = -1e30f;

            for (j = 0; j <= pos; j++) {
                kr = nv->kc + (l * nv->max_pos + j) * kvd + h / group * hd;
                s = 0.0f;

                for (i = 0; i < hd; i++) {
                    s += nv->q[h * hd + i] * kr[i];
                }

                nv->att[j] = s / sqrtf((float) hd);
                max = nv->att[j] > max ? nv->att[j] : max;
            }

            sum = 0.0f;

            for (j = 0; j <= pos; j++) {
                nv->att[j] = expf(nv->att[j] - max);
                sum += nv->att[j];
            }

            memset(nv->xb + h * hd, 0, hd * sizeof(float));

            for (j = 0; j <= pos; j++) {
                vr = nv->vc + (l * nv->max_pos + j) * kvd + h / group * hd;

                for (i = 0; i < hd; i++) {
                    nv->xb[h * hd + i] += nv->att[j] / sum * vr[i];
                }
            }
        }

        fg_naive_matvec(nv->xb2, ly->wo.data, nv->xb, e, e);

        for (i = 0; i < e; i++) {
            nv->x[i] += nv->xb2[i];
        }

        fg_naive_rmsnorm(nv->xb, nv->x, ly->ffn_norm, e, hp->rms_eps);
        fg_naive_matvec(nv->hg, ly->w_gate.data, nv->xb, e, hp->n_ff);
        fg_naive_matvec(nv->hu, ly->w_up.data, nv->xb, e, hp->n_ff);

        for (i = 0; i < hp->n_ff; i++) {
            nv->hg[i] = nv->hg[i] / (1.0f + expf(-nv->hg[i])) * nv->hu[i];
        }

        fg_naive_matvec(nv->xb2, ly->w_down.data, nv->hg, hp->n_ff, e);

        for (i = 0; i < e; i++) {
            nv->x[i] += nv->xb2[i];
        }
    }

    fg_naive_rmsnorm(nv->x, nv->x, m->output_norm, e, hp->rms_eps);
    fg_naive_matvec(nv->logits, m->output.data, nv->x, e, hp->n_vocab);
}


/* decode at batch 1 from position 32, as the backend's case runs */
static double
fg_bench_naive(const char *path, double *step_ms, double *cpu)
{
    int          run;
    char         err[256];
    size_t       steps, pos, e, ff, kvd, i;
    double       start, elapsed, best, cpu0;
    int32_t      token;
    fg_rand_t    rng;
    fg_model_t  *m;
    fg_naive_t   nv;

    m = fg_model_open(path, err, sizeof(err));
    if (m == NULL) {
        fprintf(stderr, "bench_engine: %s\n", err);
        return -1;
    }

    e = m->hp->n_embd;
    ff = m->hp->n_ff;
    kvd = m->kv_dim;

    memset(&nv, 0, sizeof(nv));
    nv.m = m;
    nv.max_pos = FG_BENCH_PROMPT + FG_BENCH_STEPS;
    nv.x = calloc(e, sizeof(float));
    nv.xb = calloc(e, sizeof(float));
    nv.xb2 = calloc(e, sizeof(float));
    nv.q = calloc(e, sizeof(float));
    nv.att = calloc(nv.max_pos, sizeof(float));
    nv.hg = calloc(ff, sizeof(float));
    nv.hu = calloc(ff, sizeof(float));
    nv.logits = calloc(m->hp->n_vocab, sizeof(float));
    nv.kc = calloc(m->hp->n_layer * nv.max_pos * kvd, sizeof(float));
    nv.vc = calloc(m->hp->n_layer * nv.max_pos * kvd, sizeof(float));

    best = 0.0;
    fg_rand_seed(&rng, 7);

    for (i = 0; i < FG_BENCH_PROMPT; i++) {
        fg_naive_forward(&nv, (int32_t) (fg_rand_next(&rng) % m->hp->n_vocab),
                         i);
    }

    for (run = 0; run < fg_bench_runs; run++) {
        start = fg_bench_now();
        cpu0 = fg_bench_cpu();
        steps = 0;

        for (pos = FG_BENCH_PROMPT; pos < nv.max_pos; pos++) {
            token = fg_k_argmax(nv.logits, m->hp->n_vocab);
            fg_naive_forward(&nv, token, pos);
            steps++;

            if (fg_bench_now() - start >= fg_bench_time && steps >= 2) {
                break;
            }
        }

        elapsed = fg_bench_now() - start;

        if (steps / elapsed > best) {
            best = steps / elapsed;
            *step_ms = elapsed / steps * 1e3;
            *cpu = (fg_bench_cpu() - cpu0) / elapsed;
        }
    }

    free(nv.x);
    free(nv.xb);
    free(nv.xb2);
    free(nv.q);
    free(nv.att);
    free(nv.hg);
    free(nv.hu);
    free(nv.logits);
    free(nv.kc);
    free(nv.vc);
    fg_model_close(m);

    return best;
}


/* ---- the prefix cache, through the batcher ---- */

#define FG_BENCH_PX_PROMPT  480
#define FG_BENCH_PX_BLOCKS  64


typedef struct {
    uint32_t            events;
    uint32_t            n_cached;
} fg_bench_px_t;


static void
fg_bench_px_emit(void *ctx, const fg_batch_event_t *ev)
{
    fg_bench_px_t  *px;

    px = ctx;
    px->events++;
    px->n_cached = ev->n_cached;
}


/* one request of prompt through b, run to its end; -1 on failure */
static int
fg_bench_px_run(fg_batch_t *batch, const int32_t *prompt, uint32_t n)
{
    char            err[256];
    fg_batch_req_t  req;

    memset(&req, 0, sizeof(req));
    req.prompt = prompt;
    req.n_prompt = n;
    req.max_tokens = 1;
    fg_sample_params_init(&req.sampling);

    if (fg_batch_submit(batch, &req, err, sizeof(err)) != FG_BATCH_OK) {
        fprintf(stderr, "bench_engine: submit: %s\n", err);
        return -1;
    }

    while (fg_batch_held(batch)) {
        if (fg_batch_step(batch, err, sizeof(err)) < 0) {
            fprintf(stderr, "bench_engine: step: %s\n", err);
            return -1;
        }
    }

    return 0;
}


/*
 * Milliseconds from the submission of a request of the prompt to its
 * token, on a fresh pool: the cache off (cached -1), or on after a
 * request of the prompt's first cached tokens (and one other) ran, not
 * timed.  -1 on failure.
 */
static double
fg_bench_px_once(fg_bench_t *bn, const int32_t *prompt, int cached)
{
    char              err[256];
    double            start, ms;
    int32_t           warm[FG_BENCH_PX_PROMPT + 1];
    fg_kv_t          *kv;
    fg_batch_t       *batch;
    fg_bench_px_t     px;
    fg_batch_conf_t   bc;

    memset(&px, 0, sizeof(px));
    fg_test_batch_conf(&bc, 1, 512, 1, fg_bench_px_emit, &px);
    bc.prefix_cache = cached >= 0;

    kv = fg_kv_create(FG_BENCH_PX_BLOCKS, FG_BENCH_BLOCK, err, sizeof(err));
    batch = kv ? fg_batch_create(&bc, bn->ops, bn->b, kv, err, sizeof(err))
               : NULL;
    ms = -1.0;

    if (batch == NULL) {
        fprintf(stderr, "bench_engine: %s\n", err);
        goto done;
    }

    if (cached > 0) {
        memcpy(warm, prompt, cached * sizeof(int32_t));
        warm[cached] = (prompt[cached] + 1) % (int32_t) bn->vocab;

        if (fg_bench_px_run(batch, warm, (uint32_t) cached + 1) != 0) {
            goto done;
        }
    }

    start = fg_bench_now();

    if (fg_bench_px_run(batch, prompt, FG_BENCH_PX_PROMPT) != 0) {
        goto done;
    }

    ms = (fg_bench_now() - start) * 1e3;

    if (px.n_cached != (uint32_t) (cached > 0 ? cached : 0)) {
        fprintf(stderr, "bench_engine: %u tokens were cached, not %d\n",
                px.n_cached, cached);
        ms = -1.0;
    }

done:

    fg_batch_destroy(batch);
    fg_kv_destroy(kv);

    return ms;
}


/*
 * The prefix cases, the cache on and off alternating run by run: the
 * medians and ranges of each, and of the ratio off / on within a pair of
 * runs, which the machine's drift moves least.
 */
static int
fg_bench_prefix(const char *name, fg_bench_t *bn)
{
    int      c, r, n;
    double  *v, *on, *off, *ratio;

    static const int  cached[] = { 0, 240, 464 };

    n = fg_bench_px_runs;
    v = malloc(3 * n * sizeof(double));

    if (v == NULL) {
        return -1;
    }

    on = v;
    off = v + n;
    ratio = v + 2 * n;

    for (c = 0; c < (int) (sizeof(cached) / sizeof(cached[0])); c++) {
        for (r = 0; r < n; r++) {
            off[r] = fg_bench_px_once(bn, bn->prompt[0], -1);
            on[r] = fg_bench_px_once(bn, bn->prompt[0], cached[c]);

            if (off[r] <= 0 || on[r] <= 0) {
                free(v);
                return -1;
            }

            ratio[r] = off[r] / on[r];
        }

        qsort(on, n, sizeof(double), fg_bench_cmp);
        qsort(off, n, sizeof(double), fg_bench_cmp);
        qsort(ratio, n, sizeof(double), fg_bench_cmp);

        printf("{\"model\": \"%s\", \"engine\": \"fairgate\", "
               "\"case\": \"prefix\", \"threads\": 1, \"prompt\": %d, "
               "\"cached\": %d, \"runs\": %d, \"ms\": %.3f, "
               "\"ms_min\": %.3f, \"ms_max\": %.3f, \"off_ms\": %.3f, "
               "\"off_ms_min\": %.3f, \"off_ms_max\": %.3f, "
               "\"speedup\": %.2f, \"speedup_min\": %.2f, "
               "\"speedup_max\": %.2f}\n", name, FG_BENCH_PX_PROMPT,
               cached[c], n, fg_bench_median(on, n), on[0], on[n - 1],
               fg_bench_median(off, n), off[0], off[n - 1],
               fg_bench_median(ratio, n), ratio[0], ratio[n - 1]);
        fflush(stdout);
    }

    free(v);

    return 0;
}


/* ---- models ---- */

static int
fg_bench_gen(const char *dir, const char *file, uint32_t type, char *path,
    size_t len)
{
    char                err[FG_GGUF_ERR_LEN];
    double              start;
    struct stat         st;
    fg_gguf_gen_conf_t  c;

    snprintf(path, len, "%s/%s", dir, file);

    if (stat(path, &st) == 0) {
        return 0;
    }

    mkdir(dir, 0755);

    fg_test_gguf_shape(&c, type, 768, 12, 2048, 12, 4);
    c.name = "fairgate-bench-100m";
    c.n_vocab = 32000;
    c.tied = 1;

    fprintf(stderr, "bench_engine: writing %s (%.1fM parameters)\n", path,
            fg_gguf_gen_params(&c) / 1e6);

    start = fg_bench_now();

    if (fg_gguf_gen_file(&c, path, err, sizeof(err)) != 0) {
        fprintf(stderr, "bench_engine: %s\n", err);
        return -1;
    }

    fprintf(stderr, "bench_engine: written in %.1f s\n",
            fg_bench_now() - start);

    return 0;
}


/*
 * cpu: CPU seconds per wall second of the run (threads included), below
 * the thread count when other work on the machine took the cores
 */
static void
fg_bench_print(const char *model, const char *engine, const char *what,
    uint32_t batch, uint32_t threads, double rate, double ms, double cpu)
{
    printf("{\"model\": \"%s\", \"engine\": \"%s\", \"case\": \"%s\", "
           "\"batch\": %u, \"threads\": %u, \"tokens_per_s\": %.1f, "
           "\"ms_per_step\": %.3f, \"cpu\": %.2f, \"per_cpu_s\": %.1f}\n",
           model, engine, what, batch, threads, rate, ms, cpu,
           cpu > 0 ? rate / cpu : 0.0);
    fflush(stdout);
}


static int
fg_bench_model(const char *name, const char *path, int naive)
{
    char               err[256];
    double             rate, ms, cpu;
    uint32_t           threads, s, i, nb;
    fg_rand_t          rng;
    fg_bench_t        *bn;
    fg_backend_info_t  info;
    fg_backend_conf_t  conf;

    static const uint32_t  batches[] = { 1, 8, 32 };

    ms = 0.0;
    cpu = 0.0;

    if (naive && FG_BENCH_HAS_FAST && __builtin_cpu_supports("avx2")
        && __builtin_cpu_supports("fma"))
    {
        rate = fg_bench_naive(path, &ms, &cpu);

        if (rate < 0) {
            return -1;
        }

        fg_bench_print(name, "naive", "decode", 1, 1, rate, ms, cpu);
    }

    bn = calloc(1, sizeof(fg_bench_t));
    if (bn == NULL) {
        return -1;
    }

    for (threads = 1; threads <= 2; threads++) {
        fg_test_backend_conf(&conf, path, FG_BENCH_BLOCKS, FG_BENCH_BLOCK,
                             FG_BENCH_MAX_B, 512, threads);

        bn->ops = &fg_backend_cpu;
        bn->b = bn->ops->create(&conf, err, sizeof(err));

        if (bn->b == NULL) {
            fprintf(stderr, "bench_engine: %s\n", err);
            free(bn);
            return -1;
        }

        bn->ops->info(bn->b, &info);
        bn->vocab = info.vocab;
        bn->logits = malloc((size_t) FG_BENCH_MAX_B * info.vocab
                            * sizeof(float));

        fg_rand_seed(&rng, 1);

        for (s = 0; s < FG_BENCH_MAX_B; s++) {
            for (i = 0; i < FG_BENCH_PER_SEQ; i++) {
                bn->tables[s][i] = (int32_t) (s * FG_BENCH_PER_SEQ + i);
            }

            for (i = 0; i < FG_BENCH_PREFILL; i++) {
                bn->prompt[s][i] = (int32_t) (fg_rand_next(&rng)
                                              % info.vocab);
            }
        }

        if (fg_bench_prompts(bn) != 0) {
            free(bn->logits);
            bn->ops->destroy(bn->b);
            free(bn);
            return -1;
        }

        for (i = 0; i < sizeof(batches) / sizeof(batches[0]); i++) {
            nb = batches[i];
            rate = fg_bench_decode(bn, nb, &ms, &cpu);

            if (rate < 0) {
                break;
            }

            fg_bench_print(name, "fairgate", "decode", nb, threads, rate,
                           ms, cpu);
        }

        rate = fg_bench_prefill(bn, &ms, &cpu);

        if (rate >= 0) {
            fg_bench_print(name, "fairgate", "prefill", 1, threads, rate,
                           ms, cpu);
        }

        if (threads == 1 && fg_bench_px_runs > 0) {
            fg_bench_prefix(name, bn);
        }

        free(bn->logits);
        bn->ops->destroy(bn->b);
    }

    free(bn);

    return 0;
}


int
main(int argc, char **argv)
{
    int          i, big;
    char         f32[512], q8[512];
    const char  *dir, *stories, *model;

    dir = "build/bench";
    model = NULL;
    stories = "../shared/models/stories260K.gguf";
    big = 1;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--time") == 0 && i + 1 < argc) {
            fg_bench_time = atof(argv[++i]);

        } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            fg_bench_runs = atoi(argv[++i]);
            fg_bench_runs = fg_bench_runs > 0 ? fg_bench_runs : 1;

        } else if (strcmp(argv[i], "--prefix-runs") == 0 && i + 1 < argc) {
            fg_bench_px_runs = atoi(argv[++i]);

        } else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) {
            dir = argv[++i];

        } else if (strcmp(argv[i], "--stories") == 0 && i + 1 < argc) {
            stories = argv[++i];

        } else if (strcmp(argv[i], "--no-100m") == 0) {
            big = 0;

        } else if (strcmp(argv[i], "--model") == 0 && i + 1 < argc) {
            model = argv[++i];

        } else {
            fprintf(stderr, "usage: bench_engine [--time S] [--runs N] "
                    "[--prefix-runs N] [--dir DIR] [--stories PATH] "
                    "[--no-100m] [--model PATH]\n");
            return 2;
        }
    }

    fprintf(stderr, "bench_engine: %s kernels, %ld cpus online\n",
            fg_k_init(), sysconf(_SC_NPROCESSORS_ONLN));

    /* a file of one's own alone, as the others are measured */
    if (model != NULL) {
        return fg_bench_model("model", model, 0) != 0;
    }

    if (access(stories, R_OK) == 0) {
        if (fg_bench_model("stories260K", stories, 1) != 0) {
            return 1;
        }

    } else {
        fprintf(stderr, "bench_engine: %s is not there, skipped\n",
                stories);
    }

    if (!big) {
        return 0;
    }

    if (fg_bench_gen(dir, "bench-100m-f32.gguf", FG_GGML_F32, f32,
                     sizeof(f32)) != 0
        || fg_bench_model("100m-f32", f32, 1) != 0
        || fg_bench_gen(dir, "bench-100m-q8_0.gguf", FG_GGML_Q8_0, q8,
                        sizeof(q8)) != 0
        || fg_bench_model("100m-q8_0", q8, 0) != 0)
    {
        return 1;
    }

    return 0;
}
