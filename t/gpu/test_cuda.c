
/*
 * fairgate: the cuda backend against the cpu backend, on a GPU
 * (make test-gpu; docs/cuda.md records its output).
 *
 * - Logits: generated models in each tensor type (F32, F16, BF16, Q8_0),
 *   a qwen2 one (biases, RoPE on halves), a wider GQA one whose rows take
 *   the vectorised GEMV paths, ones with heads of 128 (Llama's, GQA 4:1),
 *   256 and 512 (each head size its own attention kernel), and
 *   stories260K: a prompt in one step, then
 *   decode steps fed the cpu's greedy tokens.  Each step's logits are
 *   within the type's tolerance of the cpu's, and the greedy token is the
 *   same wherever the cpu's best two are further apart than that.
 * - Quantized models (fg_test_cuda_qmodels.h): Q4_K_M, Q5_K_M and one
 *   of every quantized type against the cpu backend on their F32 twins,
 *   and on the same file where the cpu kernels run the types.
 * - stories260K decodes 200 greedy tokens, free-running, exactly as the
 *   cpu backend does (which test_backend_cpu ties to llama2.c).
 * - Batched = unbatched: twelve sequences decoded together (cuBLAS, a
 *   graph of 12) give the tokens and, within 1e-3, the logits they give
 *   decoded alone (GEMV, a graph of 1); a prompt in chunks gives what it
 *   gives in one step; graphs on and off give the same bits.
 *
 * Tolerance: max |cuda - cpu| over a row, divided by max(1, max |cpu|).
 * Beside the order of sums, the cuda backend rounds x to fp16/bf16 in
 * products with half weights; the cpu backend multiplies in fp32 and
 * rounds x to 8 bits per block for Q8_0.  Both keep the KV cache in fp16
 * (the cpu backend's default), rounded to nearest even.
 *
 * Without a GPU it bails out (exit 255, "Bail out! no usable GPU ..."):
 * make test-gpu fails rather than passing having checked nothing.
 *
 * Built with FG_TEST_CUDA_EMU (build/t/test_cuda_emu, in make test), the
 * same tests run the backend and its kernels over a CPU emulation of
 * CUDA and cuBLAS (t/cuda_emu/), on smaller models: its passes, staging,
 * wanted rows, cache layout and graph replays are checked on any
 * machine; a GPU's own arithmetic and speed only on one.
 */


#include <stdint.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "fg_tap.h"
#include "fg_test_file.h"
#include "fg_test_backend.h"
#include "fg_test_gpu.h"
#include "fg_test_model.h"
#include "fg_test_gguf.h"
#include "fg_backend.h"
#include "fg_ggml_types.h"
#include "fg_gguf_gen.h"
#include "fg_kernels.h"
#include "fg_rand.h"
#include "fg_tokenizer.h"


#define MAX_TOK     512
#define MAX_BT      (MAX_TOK / 16 + 1)
#define N_BLOCKS    512
#define N_SEQS      12

/*
 * Batched against unbatched: the same products in another order of sums,
 * then x rounded again to the weights' type: fp16's 11 bits keep that
 * near 1e-3, bf16's 8 bits flip roundings enough for 1e-2.
 */
#define TOL_BATCH       2e-3
#define TOL_BATCH_BF16  2e-2

/*
 * The emulation (make test) runs the same checks on smaller models and
 * fewer steps: its kernels are plain loops.
 */
#ifdef FG_TEST_CUDA_EMU
#define N_GEN       12
#define N_STEPS     6
#define WIDE_EMBD   128
#define WIDE_FF     256
#define WIDE_VOCAB  300
#else
#define N_GEN       40
#define N_STEPS     16
#define WIDE_EMBD   512
#define WIDE_FF     1408
#define WIDE_VOCAB  4096
#endif

#ifdef FG_TEST_CUDA_EMU
#define cuda_ops()  (&fg_backend_cuda)
#else
#define cuda_ops()  fg_backend_find("cuda")
#endif


static fg_rand_t  rng = { 0x9e3779b97f4a7c15ULL };


typedef struct {
    const fg_backend_ops_t  *ops;
    fg_backend_t            *b;
    uint32_t                 vocab;
} be_t;


typedef struct {
    int32_t    toks[MAX_TOK];
    int32_t    table[MAX_BT];
    uint32_t   n_blocks;
    size_t     len;             /* tokens known */
    size_t     done;            /* positions in the cache */
} tseq_t;


static int
be_open_conf(be_t *e, const fg_backend_ops_t *ops, const char *path,
    uint32_t max_tokens, uint32_t max_batch)
{
    char               err[512];
    fg_backend_info_t  info;
    fg_backend_conf_t  conf;

    fg_test_backend_conf(&conf, path, N_BLOCKS, 16, max_batch, max_tokens, 2);

    e->ops = ops;
    e->b = ops->create(&conf, err, sizeof(err));

    if (e->b == NULL) {
        diag("%s backend on %s: %s", ops->name, path, err);
        return -1;
    }

    memset(&info, 0, sizeof(info));
    ops->info(e->b, &info);
    e->vocab = info.vocab;

    return 0;
}


static int
be_open(be_t *e, const fg_backend_ops_t *ops, const char *path,
    uint32_t max_tokens)
{
    return be_open_conf(e, ops, path, max_tokens, 32);
}


static void
be_close(be_t *e)
{
    if (e->b) {
        e->ops->destroy(e->b);
        e->b = NULL;
    }
}


/*
 * One step over n sequences: seqs[i] feeds chunk[i] of its known tokens
 * (0: sits out) and gets logits when that reaches its last; blocks are
 * handed out in order, each sequence its own range.  logits: vocab floats
 * for each sequence that wanted them, in order.
 */
static int
step(be_t *e, tseq_t **seqs, const size_t *chunk, size_t n, float *logits)
{
    char                 err[512];
    size_t               i, m;
    fg_backend_seq_t     bs[N_SEQS];
    fg_backend_batch_t   batch;

    m = 0;

    for (i = 0; i < n; i++) {
        if (chunk[i] == 0) {
            continue;
        }

        while ((size_t) seqs[i]->n_blocks * 16 < seqs[i]->done + chunk[i]) {
            seqs[i]->table[seqs[i]->n_blocks] = seqs[i]->table[0]
                                                + (int32_t) seqs[i]->n_blocks;
            seqs[i]->n_blocks++;
        }

        fg_test_backend_chunk(&bs[m++], seqs[i]->toks, seqs[i]->done,
                              chunk[i], seqs[i]->len, seqs[i]->table,
                              seqs[i]->n_blocks);
    }

    batch.seqs = bs;
    batch.n_seqs = (uint32_t) m;
    batch.hidden = NULL;

    if (e->ops->forward(e->b, &batch, logits, err, sizeof(err)) != 0) {
        diag("%s forward: %s", e->ops->name, err);
        return -1;
    }

    for (i = 0; i < n; i++) {
        seqs[i]->done += chunk[i];
    }

    return 0;
}


/* a sequence at block base with the given prompt */
static void
seq_init(tseq_t *s, int32_t base, const int32_t *prompt, size_t n)
{
    memset(s, 0, sizeof(tseq_t));
    memcpy(s->toks, prompt, n * sizeof(int32_t));
    s->len = n;
    s->table[0] = base;
    s->n_blocks = 1;
}


/* max |a - b| / max(1, max |b|) */
static double
rel_err(const float *a, const float *b, size_t n)
{
    double  d, m, scale;
    size_t  i;

    m = 0.0;
    scale = 1.0;

    for (i = 0; i < n; i++) {
        d = fabs((double) a[i] - b[i]);
        m = d > m ? d : m;
        scale = fabs(b[i]) > scale ? fabs(b[i]) : scale;
    }

    return m / scale;
}


/* the gap between a row's best two, relative as rel_err() */
static double
margin(const float *x, size_t n)
{
    float   b1, b2, scale;
    size_t  i;

    b1 = -INFINITY;
    b2 = -INFINITY;
    scale = 1.0f;

    for (i = 0; i < n; i++) {
        if (x[i] > b1) {
            b2 = b1;
            b1 = x[i];

        } else if (x[i] > b2) {
            b2 = x[i];
        }

        scale = fabsf(x[i]) > scale ? fabsf(x[i]) : scale;
    }

    return (double) (b1 - b2) / scale;
}


/* c written to path; a failed test, naming why, when it cannot be */
static int
gen_model(const fg_gguf_gen_conf_t *c, const char *path)
{
    char  err[FG_GGUF_ERR_LEN];

    if (fg_gguf_gen_file(c, path, err, sizeof(err)) != 0) {
        ok(0, "generate %s: %s", path, err);
        return -1;
    }

    return 0;
}


/*
 * cuda on path against cpu on ref (the same model, or its F32 twin): the
 * prompt in one step, then gen decode steps fed the cpu's greedy token.
 */
static void
test_compare(const char *what, const char *path, const char *ref,
    const int32_t *prompt, size_t n_prompt, size_t gen, double tol)
{
    int      rc;
    float   *lc, *lg;
    double   err, worst;
    size_t   i, chunk, ties, differ;
    int32_t  tc, tg;
    tseq_t   sc, sg, *ps;
    be_t     cpu, gpu;

    memset(&cpu, 0, sizeof(cpu));
    memset(&gpu, 0, sizeof(gpu));

    if (be_open(&cpu, &fg_backend_cpu, ref, 0) != 0
        || be_open(&gpu, cuda_ops(), path, 0) != 0)
    {
        ok(0, "%s: both backends open", what);
        be_close(&cpu);
        be_close(&gpu);
        return;
    }

    lc = malloc(cpu.vocab * sizeof(float));
    lg = malloc(cpu.vocab * sizeof(float));

    seq_init(&sc, 0, prompt, n_prompt);
    seq_init(&sg, 0, prompt, n_prompt);

    worst = 0.0;
    ties = 0;
    differ = 0;
    rc = 0;

    for (i = 0; i <= gen && rc == 0; i++) {
        chunk = sc.len - sc.done;

        ps = &sc;
        rc = step(&cpu, &ps, &chunk, 1, lc);
        ps = &sg;
        rc |= step(&gpu, &ps, &chunk, 1, lg);

        if (rc != 0) {
            break;
        }

        err = rel_err(lg, lc, cpu.vocab);
        worst = err > worst ? err : worst;

        if (i == 0) {
            ok(err <= tol, "%s: prompt of %zu, logits within %g (%.2e)",
               what, n_prompt, tol, err);
        }

        tc = fg_k_argmax(lc, cpu.vocab);
        tg = fg_k_argmax(lg, cpu.vocab);

        if (tc != tg) {
            if (margin(lc, cpu.vocab) <= 2 * tol) {
                ties++;

            } else {
                differ++;
            }
        }

        sc.toks[sc.len++] = tc;
        sg.toks[sg.len++] = tc;
    }

    ok(rc == 0 && worst <= tol, "%s: %zu decode steps, logits within %g "
       "(worst %.2e)", what, gen, tol, worst);
    ok(rc == 0 && differ == 0, "%s: the same greedy tokens (%zu near-ties "
       "apart)", what, ties);

    free(lc);
    free(lg);
    be_close(&cpu);
    be_close(&gpu);
}


static void
test_models(void)
{
    char                 path[512], what[64];
    size_t               k, i;
    int32_t              prompt[40];
    fg_gguf_gen_conf_t   c;

    /*
     * Shapes: 0 the small one (heads of 32), 1 wide (GQA 4:1, the
     * vectorised GEMV paths), then heads of 128 (Llama's, GQA 4:1), 256
     * and 512: each head size is its own attention kernel and tiling.
     */
    static const struct {
        uint32_t     embd;
        uint32_t     head;
        uint32_t     kv;
        const char  *what;
    }  shapes[] = {
        { 128, 4, 2, "" },
        { WIDE_EMBD, 8, 2, " (wide, GQA 4:1)" },
        { 512, 4, 1, " (heads of 128, GQA 4:1)" },
        { 512, 2, 2, " (heads of 256)" },
        { 512, 1, 1, " (a head of 512)" },
    };

    static const struct {
        uint32_t     type;
        const char  *name;
        const char  *arch;
        uint32_t     shape;
        double       tol;
    }  models[] = {
        { FG_GGML_F32, "f32", "llama", 0, 5e-3 },
        { FG_GGML_F16, "f16", "llama", 0, 2e-2 },
        { FG_GGML_BF16, "bf16", "llama", 0, 5e-2 },
        { FG_GGML_Q8_0, "q8_0", "llama", 0, 5e-2 },
        { FG_GGML_F16, "f16", "qwen2", 0, 2e-2 },
        { FG_GGML_F16, "f16", "llama", 1, 2e-2 },
        { FG_GGML_Q8_0, "q8_0", "llama", 1, 5e-2 },
        { FG_GGML_F16, "f16", "llama", 2, 2e-2 },
        { FG_GGML_BF16, "bf16", "qwen2", 3, 5e-2 },
        { FG_GGML_F16, "f16", "llama", 4, 2e-2 },
    };

    for (k = 0; k < sizeof(models) / sizeof(models[0]); k++) {
        fg_gguf_gen_defaults(&c);
        c.type = models[k].type;
        c.arch = models[k].arch;
        c.seed = 70 + k;

        /* Q8_0 rows are whole blocks of 32: no 172-wide feed-forward */
        c.n_embd = shapes[models[k].shape].embd;
        c.n_layer = 2;
        c.n_ff = 256;
        c.n_head = shapes[models[k].shape].head;
        c.n_head_kv = shapes[models[k].shape].kv;
        c.n_vocab = 300;

        if (models[k].shape == 1) {
            c.n_layer = 3;
            c.n_ff = WIDE_FF;
            c.n_vocab = WIDE_VOCAB;
        }

        snprintf(path, sizeof(path), "%s/%s-%s-%u.gguf", dir,
                 models[k].arch, models[k].name, models[k].shape);
        snprintf(what, sizeof(what), "%s %s%s", models[k].arch,
                 models[k].name, shapes[models[k].shape].what);

        if (gen_model(&c, path) != 0) {
            continue;
        }

        for (i = 0; i < 40; i++) {
            prompt[i] = (int32_t) (fg_rand_next(&rng) % c.n_vocab);
        }

        test_compare(what, path, path, prompt, 21, N_GEN, models[k].tol);
    }
}


/*
 * The architectures beyond llama's, cuda against cpu: qwen3 (q/k norms,
 * heads wider than the embedding), gemma (embedding scale, GeGLU),
 * gemma2 (post norms, soft-capped scores and logits, a window of 8 on
 * even layers) and gemma3 (a window of 8 on 5 layers of 6, their own
 * RoPE base), phi3 (fused tensors); prompts of 21, past the windows.
 */
static void
test_archs(void)
{
    char                 path[512], what[64];
    size_t               k, i;
    int32_t              prompt[40];
    fg_gguf_gen_conf_t   c;

    static const char  *archs[] = {
        "qwen3", "gemma", "gemma2", "gemma3", "phi3"
    };

    for (k = 0; k < sizeof(archs) / sizeof(archs[0]); k++) {
        fg_gguf_gen_defaults(&c);
        c.type = FG_GGML_F16;
        c.arch = archs[k];
        c.seed = 90 + k;
        c.n_embd = 128;
        c.n_layer = k == 3 ? 7 : 3;
        c.n_ff = 256;
        c.n_head = 4;
        c.n_head_kv = 2;
        c.n_vocab = 300;
        c.head_dim = k == 0 ? 64 : 0;
        c.n_swa = k == 2 || k == 3 ? 8 : 0;
        c.attn_softcap = k == 2 ? 1.5f : 0;
        c.final_softcap = k == 2 ? 3.0f : 0;
        c.rope_base = k == 3 ? 1e6f : 10000.0f;

        snprintf(path, sizeof(path), "%s/arch-%s.gguf", dir, archs[k]);
        snprintf(what, sizeof(what), "%s f16", archs[k]);

        if (gen_model(&c, path) != 0) {
            continue;
        }

        for (i = 0; i < 40; i++) {
            prompt[i] = (int32_t) (fg_rand_next(&rng) % c.n_vocab);
        }

        test_compare(what, path, path, prompt, 21, N_GEN, 2e-2);
    }
}


/* stories260K: compared, then 200 free-running greedy tokens from BOS */
static void
test_stories(void)
{
    int              rc;
    char             err[FG_GGUF_ERR_LEN];
    float           *lc, *lg;
    size_t           i, chunk, same;
    ssize_t          n;
    int32_t          prompt[40];
    tseq_t           sc, sg, *ps;
    fg_gguf_t       *g;
    fg_tokenizer_t  *t;
    be_t             cpu, gpu;

    g = fg_gguf_open(fg_test_stories(), err, sizeof(err));
    t = g ? fg_tokenizer_load(g, err, sizeof(err)) : NULL;

    if (t == NULL) {
        ok(0, "stories260K: %s", err);
        fg_gguf_close(g);
        return;
    }

    n = fg_tokenizer_encode(t, "Once upon a time", 16, FG_TOK_BOS, prompt,
                            40);
    test_compare("stories260K", fg_test_stories(), fg_test_stories(), prompt,
                 (size_t) n, N_GEN + 20, 5e-3);

    memset(&cpu, 0, sizeof(cpu));
    memset(&gpu, 0, sizeof(gpu));

    if (be_open(&cpu, &fg_backend_cpu, fg_test_stories(), 0) != 0
        || be_open(&gpu, cuda_ops(), fg_test_stories(), 0) != 0)
    {
        ok(0, "stories260K: both backends open");
        goto done;
    }

    lc = malloc(512 * sizeof(float));
    lg = malloc(512 * sizeof(float));

    prompt[0] = fg_tokenizer_bos(t);
    seq_init(&sc, 0, prompt, 1);
    seq_init(&sg, 100, prompt, 1);
    rc = 0;

    for (i = 0; i < 200 && rc == 0; i++) {
        chunk = 1;
        ps = &sc;
        rc = step(&cpu, &ps, &chunk, 1, lc);
        ps = &sg;
        rc |= step(&gpu, &ps, &chunk, 1, lg);

        sc.toks[sc.len++] = fg_k_argmax(lc, 512);
        sg.toks[sg.len++] = fg_k_argmax(lg, 512);
    }

    for (same = 0; same < sc.len && sc.toks[same] == sg.toks[same]; same++)
    {
        /* void */
    }

    ok(rc == 0 && same == sc.len, "stories260K: 200 greedy tokens from BOS "
       "the same on cuda and cpu (%zu of %zu the same)", same, sc.len);

    free(lc);
    free(lg);

done:

    be_close(&cpu);
    be_close(&gpu);
    fg_tokenizer_free(t);
    fg_gguf_close(g);
}


/* twelve sequences alone (a), together (b) and together without graphs (c) */
typedef struct {
    be_t       ea;
    be_t       eb;
    be_t       ec;
    tseq_t     a[N_SEQS];
    tseq_t     bt[N_SEQS];
    tseq_t     ct[N_SEQS];
    float     *la;
    float     *lb;
    float     *lc;
    uint32_t   vocab;
    double     tol;
    double     worst;
    size_t     differ;
    size_t     ties;
    int        same_bits;
} batched_t;


/* a's greedy token, fed to sequence s on a, b and c */
static void
batched_push(batched_t *t, size_t s, int32_t tok)
{
    t->a[s].toks[t->a[s].len++] = tok;
    t->bt[s].toks[t->bt[s].len++] = tok;
    t->ct[s].toks[t->ct[s].len++] = tok;
}


/*
 * Each prompt: in one step on a, in chunks of 4 on b and c; the last
 * one's logits compared.
 */
static int
batched_prompts(batched_t *t, const char *what)
{
    int      rc;
    double   err;
    size_t   s, chunk[1];
    tseq_t  *ps[1];

    rc = 0;

    for (s = 0; s < N_SEQS && rc == 0; s++) {
        chunk[0] = t->a[s].len;
        ps[0] = &t->a[s];
        rc = step(&t->ea, ps, chunk, 1, t->la);

        while (rc == 0 && t->bt[s].done < t->bt[s].len) {
            chunk[0] = t->bt[s].len - t->bt[s].done < 4
                       ? t->bt[s].len - t->bt[s].done : 4;
            ps[0] = &t->bt[s];
            rc = step(&t->eb, ps, chunk, 1, t->lb);
            ps[0] = &t->ct[s];
            rc |= step(&t->ec, ps, chunk, 1, t->lc);
        }

        if (rc == 0 && s == N_SEQS - 1) {
            err = rel_err(t->lb, t->la, t->vocab);
            ok(err <= t->tol, "%s: a prompt of %zu in chunks of 4 as in one "
               "step, within %g (%.2e)", what, t->a[s].len, t->tol, err);
        }

        batched_push(t, s, fg_k_argmax(t->la, t->vocab));
    }

    return rc;
}


/*
 * One decode step of all twelve on b (a graph of 12) and c (none), and
 * of each alone on a (a graph of 1, the GEMV kernel).
 */
static int
batched_decode(batched_t *t)
{
    int       rc;
    float    *la, *lb;
    double    err;
    size_t    s, chunk[N_SEQS];
    int32_t   tok;
    uint32_t  vocab;
    tseq_t   *ps[N_SEQS];

    vocab = t->vocab;

    for (s = 0; s < N_SEQS; s++) {
        ps[s] = &t->bt[s];
        chunk[s] = 1;
    }

    rc = step(&t->eb, ps, chunk, N_SEQS, t->lb);

    for (s = 0; s < N_SEQS; s++) {
        ps[s] = &t->ct[s];
    }

    rc |= step(&t->ec, ps, chunk, N_SEQS, t->lc);

    t->same_bits &= memcmp(t->lb, t->lc,
                           (size_t) N_SEQS * vocab * sizeof(float)) == 0;

    for (s = 0; s < N_SEQS && rc == 0; s++) {
        ps[0] = &t->a[s];
        rc = step(&t->ea, ps, chunk, 1, t->la + s * vocab);
    }

    for (s = 0; s < N_SEQS && rc == 0; s++) {
        la = t->la + s * vocab;
        lb = t->lb + s * vocab;

        err = rel_err(lb, la, vocab);
        t->worst = err > t->worst ? err : t->worst;

        tok = fg_k_argmax(la, vocab);

        if (fg_k_argmax(lb, vocab) != tok) {
            if (margin(la, vocab) <= 2 * t->tol) {
                t->ties++;

            } else {
                t->differ++;
            }
        }

        batched_push(t, s, tok);
    }

    return rc;
}


/*
 * Twelve sequences: on a each alone, its prompt in one step; on b and c
 * (graphs off) together, prompts in chunks of 4, all fed a's greedy
 * tokens.  Logits within tol, the same greedy tokens but at near-ties;
 * b and c the same bits.
 */
static void
test_batched(const char *what, const char *path, uint32_t vocab, double tol)
{
    int         rc;
    size_t      i, j, s;
    int32_t     prompt[64];
    batched_t  *t;

    t = calloc(1, sizeof(batched_t));

    if (t == NULL) {
        ok(0, "%s: memory", what);
        return;
    }

    rc = be_open(&t->ea, cuda_ops(), path, 0);
    rc |= be_open(&t->eb, cuda_ops(), path, 0);

    setenv("FAIRGATE_CUDA_GRAPHS", "0", 1);
    rc |= be_open(&t->ec, cuda_ops(), path, 0);
    unsetenv("FAIRGATE_CUDA_GRAPHS");

    if (rc != 0) {
        ok(0, "%s: cuda backends open", what);
        goto done;
    }

    t->vocab = vocab;
    t->tol = tol;
    t->same_bits = 1;
    t->la = malloc((size_t) N_SEQS * vocab * sizeof(float));
    t->lb = malloc((size_t) N_SEQS * vocab * sizeof(float));
    t->lc = malloc((size_t) N_SEQS * vocab * sizeof(float));

    for (s = 0; s < N_SEQS; s++) {
        for (i = 0; i < 64; i++) {
            prompt[i] = (int32_t) (fg_rand_next(&rng) % vocab);
        }

        seq_init(&t->a[s], (int32_t) (s * 32), prompt, 3 + 5 * s);
        t->bt[s] = t->a[s];
        t->ct[s] = t->a[s];
    }

    rc = batched_prompts(t, what);

    for (j = 0; j < N_STEPS && rc == 0; j++) {
        rc = batched_decode(t);
    }

    ok(rc == 0 && t->differ == 0, "%s: %d sequences decoded together and "
       "alone: the same greedy tokens (%zu near-ties apart)", what, N_SEQS,
       t->ties);
    ok(rc == 0 && t->worst <= tol, "%s: batched logits within %g of "
       "unbatched (worst %.2e)", what, tol, t->worst);
    ok(rc == 0 && t->same_bits, "%s: graphs off give the bits graphs on "
       "give", what);

done:

    free(t->la);
    free(t->lb);
    free(t->lc);
    be_close(&t->ea);
    be_close(&t->eb);
    be_close(&t->ec);
    free(t);
}


/*
 * Steps larger than a backend's scratch run in passes: of 8 rows, with 4
 * wanted rows at most (--step-tokens 8, --max-batch 4), against passes of
 * the whole step.
 */
static void
test_passes(const char *what, const char *path, uint32_t vocab)
{
    int       rc;
    float    *la, *lb;
    double    err, worst;
    size_t    i, j, s, chunk[N_SEQS];
    int32_t   prompt[64], tok;
    tseq_t    a[N_SEQS], bt[N_SEQS], *pa[N_SEQS], *pb[N_SEQS];
    be_t      ea, eb;

    memset(&ea, 0, sizeof(ea));
    memset(&eb, 0, sizeof(eb));

    rc = be_open(&ea, cuda_ops(), path, 0);
    rc |= be_open_conf(&eb, cuda_ops(), path, 8, 4);

    la = malloc((size_t) N_SEQS * vocab * sizeof(float));
    lb = malloc((size_t) N_SEQS * vocab * sizeof(float));

    for (s = 0; s < N_SEQS; s++) {
        for (i = 0; i < 64; i++) {
            prompt[i] = (int32_t) (fg_rand_next(&rng) % vocab);
        }

        seq_init(&a[s], (int32_t) (s * 32), prompt, 3 + 5 * s);
        bt[s] = a[s];
        pa[s] = &a[s];
        pb[s] = &bt[s];
        chunk[s] = a[s].len;
    }

    worst = 0.0;

    /* every prompt in one step (a 438-row step), then decode together */
    for (j = 0; j < 4 && rc == 0; j++) {
        rc = step(&ea, pa, chunk, N_SEQS, la);
        rc |= step(&eb, pb, chunk, N_SEQS, lb);

        for (s = 0; s < N_SEQS && rc == 0; s++) {
            err = rel_err(lb + s * vocab, la + s * vocab, vocab);
            worst = err > worst ? err : worst;

            tok = fg_k_argmax(la + s * vocab, vocab);
            a[s].toks[a[s].len++] = tok;
            bt[s].toks[bt[s].len++] = tok;
            chunk[s] = 1;
        }
    }

    ok(rc == 0 && worst <= TOL_BATCH, "%s: steps in passes of 8 rows and 4 "
       "wanted as in one pass, within %g (%.2e)", what, TOL_BATCH, worst);

    free(la);
    free(lb);
    be_close(&ea);
    be_close(&eb);
}


static void
test_batching(void)
{
    char                 path[512], what[64];
    size_t               i;
    fg_gguf_gen_conf_t   c;

    /* the generated models: their weights' type, seed and tolerance */
    static const struct {
        const char  *name;
        uint32_t     type;
        uint32_t     seed;
        double       tol;
        int          passes;
    } gens[] = {
        { "q8_0", FG_GGML_Q8_0, 90, TOL_BATCH, 1 },
        { "bf16", FG_GGML_BF16, 91, TOL_BATCH_BF16, 0 },
    };

    test_batched("stories260K", fg_test_stories(), 512, TOL_BATCH);
    test_passes("stories260K", fg_test_stories(), 512);

    for (i = 0; i < sizeof(gens) / sizeof(gens[0]); i++) {
        fg_test_gguf_shape(&c, gens[i].type, WIDE_EMBD, 2, WIDE_FF, 8, 2);
        c.n_vocab = WIDE_VOCAB;
        c.seed = gens[i].seed;

        snprintf(path, sizeof(path), "%s/batch-%s.gguf", dir, gens[i].name);
        snprintf(what, sizeof(what), "generated %s", gens[i].name);

        if (gen_model(&c, path) != 0) {
            return;
        }

        test_batched(what, path, WIDE_VOCAB, gens[i].tol);

        if (gens[i].passes) {
            test_passes(what, path, WIDE_VOCAB);
        }
    }
}


/* create refuses what it cannot run, naming why */
static void
test_create_refused(const fg_backend_ops_t *ops)
{
    char                err[512], path[512];
    fg_backend_conf_t   conf;
    fg_gguf_gen_conf_t  gen;

    memset(&conf, 0, sizeof(conf));
    ok(ops->create(&conf, err, sizeof(err)) == NULL
       && strstr(err, "needs a model"), "no model file: refused (%s)", err);

    conf.model_path = "/nonexistent.gguf";
    ok(ops->create(&conf, err, sizeof(err)) == NULL
       && strstr(err, "/nonexistent.gguf"), "a missing file: refused (%s)",
       err);

    conf.model_path = fg_test_stories();
    conf.block_size = 1000;
    ok(ops->create(&conf, err, sizeof(err)) == NULL
       && strstr(err, "1000 positions"), "KV blocks too large: refused");

    /* a model the cpu backend runs but the attention kernel cannot */
    fg_test_gguf_shape(&gen, FG_GGML_F32, 1024, 1, 64, 1, 1);
    gen.n_vocab = 300;
    snprintf(path, sizeof(path), "%s/head-1024.gguf", dir);

    if (gen_model(&gen, path) != 0) {
        return;
    }

    conf.model_path = path;
    conf.block_size = 16;
    ok(ops->create(&conf, err, sizeof(err)) == NULL
       && strstr(err, "a head of 1024 values") != NULL
       && strstr(err, "up to 512") != NULL,
       "a head of 1024: refused, naming the kernels' limit (%s)", err);
    unlink(path);
}


/* forward refuses steps the cache or the model cannot take */
static void
test_forward_refused(const fg_backend_ops_t *ops, fg_backend_t *b)
{
    char                err[512];
    float              *logits;
    int32_t             toks[20], table[2];
    fg_backend_seq_t    sq;
    fg_backend_info_t   info;
    fg_backend_batch_t  batch;

    memset(toks, 0, sizeof(toks));
    logits = malloc(512 * sizeof(float));
    table[0] = 0;
    table[1] = 1;

    fg_test_backend_one(&batch, &sq, toks, 20, 0, table, 1);

    ok(ops->forward(b, &batch, logits, err, sizeof(err)) != 0
       && strstr(err, "need 2 blocks"), "20 positions, a table of 1 block: "
       "refused (%s)", err);

    sq.n_blocks = 2;
    table[1] = 4;
    ok(ops->forward(b, &batch, logits, err, sizeof(err)) != 0
       && strstr(err, "block 4"), "a block outside the cache: refused (%s)",
       err);

    table[1] = 1;
    toks[3] = 512;
    ok(ops->forward(b, &batch, logits, err, sizeof(err)) != 0
       && strstr(err, "token 512"), "a token outside the vocabulary: "
       "refused (%s)", err);

    toks[3] = 1;
    ok(ops->forward(b, &batch, logits, err, sizeof(err)) == 0,
       "then the same step, right, runs");

    /* no embeddings here: info says n_embd 0, a step asking is refused */
    ops->info(b, &info);
    is_int(info.n_embd, 0, "info: no embeddings (n_embd 0)");

    sq.want_logits = 0;
    sq.want_hidden = 1;
    batch.hidden = logits;
    ok(ops->forward(b, &batch, logits, err, sizeof(err)) != 0
       && strstr(err, "computes no embeddings"), "hidden states wanted: "
       "refused (%s)", err);

    free(logits);
}


/*
 * create refuses what it cannot run, naming why; info describes the model
 * and the fp16 cache, sized from free memory when no size is given;
 * forward refuses steps the cache or the model cannot take.
 */
static void
test_create(void)
{
    char                     err[512];
    fg_backend_t            *b;
    fg_backend_info_t        info;
    fg_backend_conf_t        conf;
    const fg_backend_ops_t  *ops;

    ops = cuda_ops();

    test_create_refused(ops);

    /* no --kv-blocks: what free memory holds */
    memset(&conf, 0, sizeof(conf));
    conf.model_path = fg_test_stories();
    conf.block_size = 16;
    conf.kv_blocks = 0;
    b = ops->create(&conf, err, sizeof(err));

    if (!ok(b != NULL, "stories260K, the cache sized from free memory")) {
        diag("%s", err);
        return;
    }

    memset(&info, 0, sizeof(info));
    ops->info(b, &info);

    ok(info.vocab == 512 && info.context == 2048 && info.n_layer == 5
       && info.n_kv_head == 4 && info.head_dim == 8
       && info.kv_bytes_per_block == 2 * 5 * 4 * 8 * 16 * 2
       && info.kv_blocks > 1000, "info: vocab %u, context %u, %u layers, "
       "%u kv heads of %u, %zu bytes a block of 16 (fp16), %u blocks",
       info.vocab, info.context, info.n_layer, info.n_kv_head,
       info.head_dim, info.kv_bytes_per_block, info.kv_blocks);

    ops->destroy(b);

    conf.kv_blocks = 4;
    b = ops->create(&conf, err, sizeof(err));

    if (!ok(b != NULL, "stories260K, 4 blocks")) {
        diag("%s", err);
        return;
    }

    test_forward_refused(ops, b);

    ops->destroy(b);
}


#include "fg_test_cuda_qmodels.h"


int
main(void)
{
    char                     err[512];
    const fg_backend_ops_t  *ops;

    if (fg_test_gpu() != 0) {
        return 255;
    }

#ifdef FG_TEST_CUDA_EMU
    (void) err;
    ops = &fg_backend_cuda;

    /* the backend's one line at create, twenty times over */
    if (freopen("/dev/null", "w", stderr) == NULL) {
        diag("stderr stays");
    }
#else
    ops = fg_backend_load("cuda", err, sizeof(err));

    if (ops == NULL) {
        printf("Bail out! %s\n", err);
        return 255;
    }
#endif

    (void) ops;

    fg_k_init();

    fg_test_dir_make("cuda");

    test_archs();
    test_create();
    test_models();
    test_quant_models();

    if (access(fg_test_stories(), R_OK) != 0) {
        ok(1, "stories260K # SKIP %s is not there", fg_test_stories());

    } else {
        test_stories();
    }

    test_batching();

#ifdef FG_TEST_CUDA_EMU
    ok(fg_emu_graph_launches() > 0, "decode steps replayed recorded graphs "
       "(%zu launches)", fg_emu_graph_launches());
#endif

    fg_test_dir_remove();

    return fg_tap_done();
}
