
/*
 * fairgate: the cpu forward pass (engine/backends/cpu/fg_model.c) against
 * a plain reference (fg_test_ref.h).
 *
 * The reference runs one sequence at a time, one position after the
 * other, with dense K and V (no paging), in double, reading the file
 * itself: its own hyperparameters from the metadata, its own RoPE
 * frequencies and pairing, weights widened once with the GGUF library's
 * conversion (not the kernels').  It returns the logits of every position.
 *
 * The engine runs three sequences through steps that mix prefill chunks
 * and decode tokens, in a shuffled row order, with blocks taken from a
 * shuffled free list into a cache filled with NaN (a read of any slot not
 * yet written shows), a pass limit below the step sizes (a step runs in
 * several passes) and logits wanted for every row in some steps and for
 * each sequence's last row in others (the last layer then skips rows).
 *
 * Models: generated (fg_gguf_gen) in each tensor type, llama and qwen2
 * (biases, halves pairing), tied and separate outputs, grouped and
 * multi-query attention, Llama 3 rope scaling, qwen3 (per-head q/k norms,
 * heads wider than the embedding); and stories260K.  The other
 * architectures are checked against llama.cpp itself (greedy agreement,
 * docs/engine-model-format.md) and the cuda backend against this one.
 *
 * Q8_0 products see their inputs rounded to 8 bits per block of 32 (as
 * llama.cpp's do; the kernels round them on both of their paths), and so
 * does the reference, in double.
 *
 * Tolerances, on each logit, relative to the row's largest reference
 * logit magnitude (at least 1):
 *
 *   F32, F16, BF16   every row within 2e-5: float sums against double
 *                    over the same weights measure about 1e-6
 *   Q8_0             80% of the rows within 2e-5, every row within 3e-2:
 *                    where an input sits on a rounding boundary, float and
 *                    double round it to neighbouring 8-bit values, a step
 *                    of 1/127 of its block's largest value, and the rows
 *                    of that sequence from there on differ by up to 1e-2
 *                    (a few rows of 53 measure so)
 *   BF16, x rounded  a pass of more than 16 rows where AVX512-BF16
 *                    rounds x to BF16 (fg_k_bf16_rounds_x(), as
 *                    llama.cpp): every row within 2e-2 (2^-9 of each
 *                    input; 7e-3 measured)
 *   F16 cache        the engine's default (F32 files): the reference
 *                  rounds its keys and values to halves too; 80% of the
 *                  rows within 2e-5, every row within 2e-4: where a key
 *                  lies near a half's rounding boundary, float and double
 *                  round it to neighbouring halves (4e-5 measured)
 *
 * The measured errors are printed (diag) beside each bound.
 */


#include <stdint.h>
#include <unistd.h>

#include "fg_tap.h"
#include "fg_test_file.h"
#include "fg_test_model.h"
#include "fg_test_gen.h"
#include "fg_test_gguf.h"
#include "fg_test_ref.h"
#include "fg_ggml_types.h"
#include "fg_gguf_gen.h"
#include "fg_gguf_write.h"
#include "fg_model.h"
#include "fg_rand.h"


#define N_SEQ           3
#define MAX_LEN         48
#define BLOCK           4
#define N_BLOCKS        64
#define MAX_BT          (MAX_LEN / BLOCK + 1)
#define KV16_LOOSE      2e-4
#define BF16_X_ROUNDED  2e-2


static fg_rand_t  rng = { 0x9e3779b97f4a7c15ULL };


static uint64_t
urand64(void)
{
    return fg_rand_next(&rng);
}


static void
shuffle(int32_t *a, size_t n)
{
    size_t   i, j;
    int32_t  tmp;

    for (i = n - 1; i > 0; i--) {
        j = (size_t) (urand64() % (i + 1));
        tmp = a[i];
        a[i] = a[j];
        a[j] = tmp;
    }
}


/* ---- the engine, step by step ---- */

/* one step: per sequence, in the order given, new positions [from, to) */
typedef struct {
    int          order[N_SEQ];
    int          range[N_SEQ][2];
    int          all;           /* logits of every row, or last rows only */
} step_t;


static const step_t  steps[] = {
    { { 0, 1, 2 }, { { 0, 13 }, { 0, 1 }, { 0, 0 } }, 1 },
    { { 2, 0, 1 }, { { 13, 14 }, { 1, 21 }, { 0, 5 } }, 0 },
    { { 1, 2, 0 }, { { 14, 15 }, { 21, 22 }, { 5, 6 } }, 1 },
    { { 0, 2, 1 }, { { 15, 40 }, { 0, 0 }, { 6, 7 } }, 0 },
    { { 2, 1, 0 }, { { 40, 41 }, { 22, 23 }, { 7, 30 } }, 1 },
    { { 0, 1, 2 }, { { 41, 42 }, { 23, 24 }, { 30, 31 } }, 1 },
    { { 1, 0, 2 }, { { 42, 43 }, { 24, 40 }, { 31, 32 } }, 0 },
};


typedef struct {
    double    tight;            /* the bound most rows meet */
    double    worst;            /* largest relative error seen */
    size_t    rows;             /* logit rows compared */
    size_t    far;              /* rows above tight */
    int       failed;           /* the forward pass refused a step */
} cmp_t;


/* the engine's side: block tables from a shuffled free list, a step's rows */
typedef struct {
    int32_t           free_list[N_BLOCKS];
    size_t            n_free;
    int32_t           tables[N_SEQ][MAX_BT];
    size_t            have[N_SEQ];
    int32_t           tk[3 * MAX_LEN], pos[3 * MAX_LEN], seq[3 * MAX_LEN];
    uint8_t           want[3 * MAX_LEN];
} run_t;


static void
run_init(run_t *rs)
{
    int     s;
    size_t  i;

    for (i = 0; i < N_BLOCKS; i++) {
        rs->free_list[i] = (int32_t) i;
    }

    shuffle(rs->free_list, N_BLOCKS);
    rs->n_free = N_BLOCKS;
    memset(rs->have, 0, sizeof(rs->have));

    /* entries not given to a sequence are out of the cache's range */
    for (s = 0; s < N_SEQ; s++) {
        for (i = 0; i < MAX_BT; i++) {
            rs->tables[s][i] = N_BLOCKS + 1000;
        }
    }
}


/* step st's rows, with the blocks they need; returns how many */
static size_t
run_rows(run_t *rs, const step_t *step, int32_t tokens[N_SEQ][MAX_LEN])
{
    int     s, o;
    size_t  n, t;

    n = 0;

    for (o = 0; o < N_SEQ; o++) {
        s = step->order[o];

        /* blocks for the new positions, from the shuffled free list */
        while (rs->have[s] * BLOCK < (size_t) step->range[s][1]) {
            rs->tables[s][rs->have[s]++] = rs->free_list[--rs->n_free];
        }

        for (t = step->range[s][0]; t < (size_t) step->range[s][1]; t++) {
            rs->tk[n] = tokens[s][t];
            rs->pos[n] = (int32_t) t;
            rs->seq[n] = s;
            rs->want[n] = step->all || t + 1 == (size_t) step->range[s][1];
            n++;
        }
    }

    return n;
}


/* the wanted rows of a step against the reference's logits */
static void
run_compare(const run_t *rs, size_t n, const float *logits,
    const double *ref_logits, size_t vocab, cmp_t *cmp)
{
    size_t         t, v;
    double         d, scale, row;
    const float   *lg;
    const double  *ref;

    lg = logits;

    for (t = 0; t < n; t++) {
        if (!rs->want[t]) {
            continue;
        }

        ref = ref_logits + ((size_t) rs->seq[t] * MAX_LEN + rs->pos[t])
                           * vocab;

        scale = 1.0;

        for (v = 0; v < vocab; v++) {
            scale = fabs(ref[v]) > scale ? fabs(ref[v]) : scale;
        }

        row = 0.0;

        for (v = 0; v < vocab; v++) {
            d = fabs(lg[v] - ref[v]) / scale;

            /* a NaN fails too */
            if (!(d <= row)) {
                row = isnan(d) ? INFINITY : d;
            }
        }

        cmp->worst = row > cmp->worst ? row : cmp->worst;
        cmp->far += row > cmp->tight;
        lg += vocab;
        cmp->rows++;
    }
}


/*
 * Runs the steps on a fresh cache and compares each wanted row with the
 * reference's logits at its position.
 */
static void
run_steps(const fg_model_t *m, fg_pool_t *pool, uint32_t max_rows,
    const ref_t *r, int32_t tokens[N_SEQ][MAX_LEN], double *ref_logits,
    cmp_t *cmp)
{
    char              err[256];
    float            *logits;
    size_t            n, i, st;
    double            tight;
    run_t             rs;
    fg_model_kv_t     kv;
    fg_model_ctx_t   *ctx;
    fg_model_batch_t  b;

    tight = cmp->tight;
    memset(cmp, 0, sizeof(cmp_t));
    cmp->tight = tight;

    if (fg_model_kv_init(&kv, m, N_BLOCKS, BLOCK, kv_type, err, sizeof(err))
        != 0)
    {
        diag("kv: %s", err);
        cmp->failed = 1;
        return;
    }

    for (i = 0; kv_type == FG_K_F32 && i < kv.bytes / sizeof(float); i++) {
        ((float *) kv.mem)[i] = NAN;
    }

    for (i = 0; kv_type == FG_K_F16 && i < kv.bytes / 2; i++) {
        ((uint16_t *) kv.mem)[i] = 0x7e00;
    }

    ctx = fg_model_ctx_create(m, pool, max_rows, err, sizeof(err));
    logits = malloc(3 * MAX_LEN * r->vocab * sizeof(float));

    if (ctx == NULL || logits == NULL) {
        diag("ctx: %s", err);
        cmp->failed = 1;
        fg_model_kv_free(&kv);
        return;
    }

    run_init(&rs);

    for (st = 0; st < sizeof(steps) / sizeof(steps[0]); st++) {
        n = run_rows(&rs, &steps[st], tokens);

        b.tokens = rs.tk;
        b.pos = rs.pos;
        b.seq = rs.seq;
        b.block_tables = &rs.tables[0][0];
        b.want = rs.want;
        b.max_blocks = MAX_BT;
        b.n_seqs = N_SEQ;
        b.n_tokens = n;

        if (fg_model_forward(ctx, &kv, &b, logits, err, sizeof(err)) != 0) {
            diag("step %zu: %s", st, err);
            cmp->failed = 1;
            break;
        }

        run_compare(&rs, n, logits, ref_logits, r->vocab, cmp);
    }

    free(logits);
    fg_model_ctx_destroy(ctx);
    fg_model_kv_free(&kv);
}


static void
report(const cmp_t *c, const char *what, const char *how, double loose)
{
    if (loose <= c->tight) {
        ok(!c->failed && c->worst <= c->tight, "%s: %zu rows of logits "
           "within %g (%s)", what, c->rows, c->tight, how);

    } else {
        /* at most a fifth of the rows beyond the tight bound */
        ok(!c->failed && c->worst <= loose && c->far * 5 <= c->rows,
           "%s: %zu rows of logits within %g, %zu of them beyond %g (%s)",
           what, c->rows, loose, c->far, c->tight, how);
    }

    diag("  largest relative error %.3g", c->worst);
}


/* the forward pass of one model file against the reference */
static void
test_against_ref(const char *what, const char *path, double tight,
    double loose, fg_pool_t *pool2)
{
    char           err[256];
    size_t         s, t;
    double        *ref_logits;
    int32_t        tokens[N_SEQ][MAX_LEN];
    cmp_t          a, c;
    ref_t          r;
    fg_model_t    *m;

    m = fg_model_open(path, err, sizeof(err));
    if (!ok(m != NULL, "%s: opens", what)) {
        diag("%s", err);
        return;
    }

    if (ref_load(&r, path) != 0) {
        fg_model_close(m);
        return;
    }

    for (s = 0; s < N_SEQ; s++) {
        for (t = 0; t < MAX_LEN; t++) {
            tokens[s][t] = (int32_t) (urand64() % r.vocab);
        }
    }

    ref_logits = malloc(N_SEQ * MAX_LEN * r.vocab * sizeof(double));

    for (s = 0; s < N_SEQ; s++) {
        ref_forward(&r, tokens[s], MAX_LEN, ref_logits + s * MAX_LEN
                                                         * r.vocab, NULL);
    }

    /*
     * passes of at most 16 rows on one thread; one pass on two, where
     * BF16 products may round x to BF16 (fg_k_bf16_rounds_x())
     */
    a.tight = tight;
    c.tight = m->layers[0].wq.type == FG_K_BF16 && fg_k_bf16_rounds_x()
              ? BF16_X_ROUNDED : tight;
    run_steps(m, NULL, 16, &r, tokens, ref_logits, &a);
    run_steps(m, pool2, 512, &r, tokens, ref_logits, &c);

    report(&a, what, "passes of 16 rows, 1 thread", loose);
    report(&c, what, "one pass, 2 threads", loose);

    free(ref_logits);
    ref_free(&r);
    fg_model_close(m);
}


static void
test_generated(fg_pool_t *pool2)
{
    char                 path[512], what[128];
    size_t               i;
    fg_gguf_gen_conf_t   c;

    static const struct {
        uint32_t     type;
        const char  *name;
        double       loose;
    }  types[] = {
        { FG_GGML_F32, "f32", 2e-5 },
        { FG_GGML_F16, "f16", 2e-5 },
        { FG_GGML_BF16, "bf16", 2e-5 },
        { FG_GGML_Q8_0, "q8_0", 3e-2 },
    };

    for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {

        /* llama, grouped-query attention (8 heads, 2 kv heads) */
        fg_test_gguf_shape(&c, types[i].type, 64, 2, 96, 8, 2);
        c.n_vocab = 300;
        c.seed = 10 + i;

        snprintf(what, sizeof(what), "llama-%s.gguf", types[i].name);

        if (fg_test_gen(what, &c, path, sizeof(path)) == 0) {
            snprintf(what, sizeof(what), "llama %s, gqa, separate output",
                     types[i].name);
            test_against_ref(what, path, 2e-5, types[i].loose, pool2);
        }

        /* qwen2: biases, halves pairing; tied output, multi-query */
        fg_test_gguf_shape(&c, types[i].type, 128, 2, 160, 4, 1);
        c.arch = "qwen2";
        c.tied = 1;
        c.rope_base = 1000000.0f;
        c.seed = 20 + i;

        snprintf(what, sizeof(what), "qwen2-%s.gguf", types[i].name);

        if (fg_test_gen(what, &c, path, sizeof(path)) == 0) {
            snprintf(what, sizeof(what), "qwen2 %s, mqa, tied output, "
                     "biases", types[i].name);
            test_against_ref(what, path, 2e-5, types[i].loose, pool2);
        }
    }

    /* qwen3: q/k norms, heads of 32 making q twice the embedding */
    fg_test_gguf_shape(&c, FG_GGML_F16, 64, 2, 96, 4, 2);
    c.arch = "qwen3";
    c.head_dim = 32;
    c.seed = 31;

    if (fg_test_gen("qwen3.gguf", &c, path, sizeof(path)) == 0) {
        test_against_ref("qwen3 f16, q/k norms, q of 128 for 64", path,
                         2e-5, 2e-5, pool2);
    }

    /* Llama 3 rope scaling; an original context short enough to matter */
    fg_test_gguf_shape(&c, FG_GGML_BF16, 64, 2, 64, 2, 2);
    c.rope_base = 500000.0f;
    c.rope_factor = 8.0f;
    c.rope_orig_ctx = 64;
    c.seed = 30;

    if (fg_test_gen("llama3.gguf", &c, path, sizeof(path)) == 0) {
        test_against_ref("llama bf16, Llama 3 rope scaling, mha", path, 2e-5,
                         2e-5, pool2);
    }
}


/*
 * The engine's default cache, F16, against the reference over the same
 * rounded keys and values, for the F32 files (nothing else rounds).
 */
static void
test_kv_f16(fg_pool_t *pool2)
{
    char                 path[512];
    fg_gguf_gen_conf_t   c;

    kv_type = FG_K_F16;

    fg_test_gguf_shape(&c, FG_GGML_F32, 64, 2, 96, 8, 2);
    c.n_vocab = 300;
    c.seed = 10;

    if (fg_test_gen("llama-f32-kv16.gguf", &c, path, sizeof(path)) == 0) {
        test_against_ref("llama f32, gqa, F16 cache", path, 2e-5, KV16_LOOSE,
                         pool2);
    }

    fg_test_gguf_shape(&c, FG_GGML_F32, 128, 2, 160, 4, 1);
    c.arch = "qwen2";
    c.tied = 1;
    c.rope_base = 1000000.0f;
    c.seed = 20;

    if (fg_test_gen("qwen2-f32-kv16.gguf", &c, path, sizeof(path)) == 0) {
        test_against_ref("qwen2 f32, mqa, biases, F16 cache", path, 2e-5,
                         KV16_LOOSE, pool2);
    }

    kv_type = FG_K_F32;
}


static void
test_stories(fg_pool_t *pool2)
{
    if (access(fg_test_stories(), R_OK) != 0) {
        ok(1, "stories260K # SKIP %s is not there", fg_test_stories());
        return;
    }

    test_against_ref("stories260K", fg_test_stories(), 2e-5, 2e-5, pool2);
}


/* a model whose heads are wider than its embedding; a missing file */
static void
test_head_size(void)
{
    char               path[512], err[256];
    size_t             i;
    uint64_t           ne[2], size;
    uint8_t           *zero;
    FILE              *f;
    fg_model_t        *m;
    fg_gguf_writer_t  *w;

    static const char  *tokens[] = { "<unk>", "<s>", "</s>", "a" };

    /* 8 heads of 16 (key_length) in an embedding of 64 */
    w = fg_gguf_writer_new(3, 0);

    fg_test_gguf_llama(w, 64, 64, 1, 32, 8);
    fg_gguf_w_u32(w, "llama.attention.key_length", 16);
    fg_gguf_w_u32(w, "llama.attention.value_length", 16);
    fg_gguf_w_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    fg_gguf_w_str(w, "tokenizer.ggml.model", "llama");
    fg_gguf_w_arr_str(w, "tokenizer.ggml.tokens", tokens, NULL, 4);

#define tensor(name, a, b)                                                    \
    ne[0] = a;                                                                \
    ne[1] = b;                                                                \
    fg_gguf_w_tensor(w, name, FG_GGML_F32, b ? 2 : 1, ne)

    tensor("token_embd.weight", 64, 4);
    tensor("output_norm.weight", 64, 0);
    tensor("blk.0.attn_norm.weight", 64, 0);
    tensor("blk.0.attn_q.weight", 64, 128);
    tensor("blk.0.attn_k.weight", 64, 128);
    tensor("blk.0.attn_v.weight", 64, 128);
    tensor("blk.0.attn_output.weight", 128, 64);
    tensor("blk.0.ffn_norm.weight", 64, 0);
    tensor("blk.0.ffn_gate.weight", 64, 32);
    tensor("blk.0.ffn_up.weight", 64, 32);
    tensor("blk.0.ffn_down.weight", 32, 64);

#undef tensor

    snprintf(path, sizeof(path), "%s/heads.gguf", dir);
    f = fopen(path, "wb");
    zero = calloc(1, 64 * 128 * sizeof(float));

    if (f == NULL || zero == NULL || fg_gguf_w_write_header(w, f) != 0) {
        ok(0, "head size: write %s: %s", path, fg_gguf_writer_error(w));
        return;
    }

    for (i = 0; i < 11; i++) {
        size = fg_gguf_w_tensor_size(w, (uint32_t) i);
        fg_gguf_w_write_data(w, f, zero, size);
    }

    fclose(f);
    fg_gguf_writer_free(w);
    free(zero);

    /* heads need not fill the embedding (Qwen 3, Gemma 3 have such) */
    m = fg_model_open(path, err, sizeof(err));
    ok(m != NULL && m->q_dim == 128 && m->hp->n_embd == 64,
       "8 heads of 16 in an embedding of 64 load: q of 128");
    fg_model_close(m);

    m = fg_model_open("/nonexistent/model.gguf", err, sizeof(err));
    ok(m == NULL && strstr(err, "/nonexistent/model.gguf"),
       "a missing file is refused, naming it");
    diag("  %s", err);
}


/* steps that do not fit the model or the cache are refused, not run */
static void
test_check(void)
{
    char               path[512], err[256];
    float              logits[300];
    int32_t            tokens[2], pos[2], seq[2], table[2][2];
    fg_model_t        *m;
    fg_model_kv_t      kv;
    fg_model_ctx_t    *ctx;
    fg_model_batch_t   b;
    fg_gguf_gen_conf_t c;

    fg_gguf_gen_defaults(&c);
    c.n_layer = 1;
    c.n_vocab = 300;
    c.n_ctx = 64;

    if (fg_test_gen("check.gguf", &c, path, sizeof(path)) != 0) {
        ok(0, "check: generate");
        return;
    }

    m = fg_model_open(path, err, sizeof(err));
    fg_model_kv_init(&kv, m, 4, BLOCK, FG_K_F16, err, sizeof(err));
    ctx = fg_model_ctx_create(m, NULL, 0, err, sizeof(err));

    tokens[0] = 5;
    tokens[1] = 6;
    pos[0] = 0;
    pos[1] = 1;
    seq[0] = 0;
    seq[1] = 0;
    table[0][0] = 3;
    table[0][1] = 2;
    table[1][0] = 0;
    table[1][1] = 1;

    b.tokens = tokens;
    b.pos = pos;
    b.seq = seq;
    b.block_tables = &table[0][0];
    b.want = NULL;
    b.max_blocks = 2;
    b.n_seqs = 2;
    b.n_tokens = 2;

    ok(fg_model_forward(ctx, &kv, &b, logits, err, sizeof(err)) == 0,
       "a good step runs");

    tokens[1] = 300;
    ok(fg_model_forward(ctx, &kv, &b, logits, err, sizeof(err)) == -1
       && strstr(err, "token 300 is not in the vocabulary of 300"),
       "a token outside the vocabulary");
    diag("  %s", err);
    tokens[1] = 6;

    pos[1] = 64;
    ok(fg_model_forward(ctx, &kv, &b, logits, err, sizeof(err)) == -1
       && strstr(err, "outside the context of 64"),
       "a position outside the context");
    diag("  %s", err);

    pos[1] = 8;
    ok(fg_model_forward(ctx, &kv, &b, logits, err, sizeof(err)) == -1
       && strstr(err, "needs block 2 of a table of 2"),
       "a position past the block table");
    diag("  %s", err);

    pos[1] = 5;
    table[0][1] = 4;
    ok(fg_model_forward(ctx, &kv, &b, logits, err, sizeof(err)) == -1
       && strstr(err, "block 4 (entry 1 of sequence 0's table) is not in "
                 "the cache of 4 blocks"),
       "a block outside the cache");
    diag("  %s", err);

    table[0][1] = 2;
    seq[1] = 2;
    ok(fg_model_forward(ctx, &kv, &b, logits, err, sizeof(err)) == -1
       && strstr(err, "sequence 2 of 2"),
       "a sequence outside the table");
    diag("  %s", err);

    fg_model_kv_free(&kv);

    ok(fg_model_kv_init(&kv, m, 4, FG_K_MAX_BLOCK + 1, FG_K_F16, err,
                        sizeof(err))
       == -1 && strstr(err, "positions (1 to"),
       "a block larger than attention takes");
    diag("  %s", err);

    ok(fg_model_kv_init(&kv, m, 4, BLOCK, FG_K_BF16, err, sizeof(err)) == -1
       && strstr(err, "F16 or F32"), "a cache of another type");
    diag("  %s", err);

    fg_model_ctx_destroy(ctx);
    fg_model_close(m);
}


int
main(void)
{
    fg_pool_t  *pool2;

    fg_k_init();

    fg_test_dir_make("model");

    pool2 = fg_pool_create(2);

    test_generated(pool2);
    test_kv_f16(pool2);
    test_stories(pool2);
    test_head_size();
    test_check();

    fg_pool_destroy(pool2);

    fg_test_dir_remove();

    return done_testing();
}
