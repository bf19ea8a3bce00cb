
/*
 * fairgate: where the CPU model's matrices go at load (fg_model_place.c).
 * Generated Q4_0, Q8_0 and Q4_K models are opened packed (the default)
 * and with FAIRGATE_CPU_PACK=0, and run the same prefill and decode steps
 * on one thread and on two: every logit near the plain model's (packed,
 * the products sum in another order); packed, a prefill's logits have the
 * bits of its tokens run one a step (batch invariance); the layers'
 * matrices are packed, and an output of 300 rows (not whole groups of 8)
 * is not; an output of 304 rows tied to the embeddings is, and their
 * lookups read it.  Q6_K, F16 and BF16 models, which are not packed, are
 * copied into the model's region and give the bits they give where the
 * file maps them (FAIRGATE_CPU_COPY=0).
 */


#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "fg_tap.h"
#include "fg_test_file.h"
#include "fg_test_gen.h"
#include "fg_test_gguf.h"
#include "fg_ggml_types.h"
#include "fg_gguf_gen.h"
#include "fg_model.h"


#define VOCAB    304                    /* the most */
#define PREFILL  5
#define STEPS    (PREFILL + 1)


/*
 * A prefill of 5 tokens, then a decode step: their logits, 6 rows; with
 * one, the 6 tokens a step each.
 */
static int
run_steps(fg_model_t *m, fg_pool_t *pool, float *logits, int32_t vocab,
    int one)
{
    char               err[256];
    int                rc;
    size_t             t;
    uint8_t            want[STEPS];
    int32_t            tokens[STEPS], pos[STEPS], seq[STEPS], table[4];
    fg_model_kv_t      kv;
    fg_model_ctx_t    *ctx;
    fg_model_batch_t   b;

    if (fg_model_kv_init(&kv, m, 4, 4, FG_K_F16, err, sizeof(err)) != 0) {
        return -1;
    }

    ctx = fg_model_ctx_create(m, pool, 0, err, sizeof(err));

    if (ctx == NULL) {
        fg_model_kv_free(&kv);
        return -1;
    }

    for (t = 0; t < STEPS; t++) {
        tokens[t] = (int32_t) (7 + 41 * t) % vocab;
        pos[t] = (int32_t) t;
        seq[t] = 0;
        table[t % 4] = (int32_t) (t % 4);
        want[t] = FG_MODEL_WANT_LOGITS;
    }

    memset(&b, 0, sizeof(b));
    b.tokens = tokens;
    b.pos = pos;
    b.seq = seq;
    b.block_tables = table;
    b.want = want;
    b.max_blocks = 4;
    b.n_seqs = 1;
    b.n_tokens = one ? 1 : PREFILL;
    rc = 0;

    for (t = 0; rc == 0 && t < STEPS; t += b.n_tokens) {
        b.tokens = tokens + t;
        b.pos = pos + t;
        b.n_tokens = t < PREFILL && !one ? PREFILL : 1;

        rc = fg_model_forward(ctx, &kv, &b, logits + t * vocab, err,
                              sizeof(err));
    }

    fg_model_ctx_destroy(ctx);
    fg_model_kv_free(&kv);

    return rc;
}


static fg_model_t *
open_model(const char *path, int pack)
{
    char         err[256];
    fg_model_t  *m;

    if (!pack) {
        setenv("FAIRGATE_CPU_PACK", "0", 1);
    }

    m = fg_model_open(path, err, sizeof(err));
    unsetenv("FAIRGATE_CPU_PACK");

    if (m == NULL) {
        diag("%s", err);
    }

    return m;
}


/* within 2% of the largest logit: float sums and x's 8-bit rounding */
static int
near(const float *a, const float *b, size_t n)
{
    float   most, gap;
    size_t  i;

    most = 0.0f;
    gap = 0.0f;

    for (i = 0; i < n; i++) {
        most = fabsf(a[i]) > most ? fabsf(a[i]) : most;
        gap = fabsf(a[i] - b[i]) > gap ? fabsf(a[i] - b[i]) : gap;
    }

    diag("largest logit %g, largest difference %g", most, gap);

    return most > 0.0f && gap <= 0.02f * most;
}


/* a generated model of type, 2 layers of rows of 256 and 512 values */
static int
gen_model(uint32_t type, const char *file, uint32_t vocab, int tied,
    uint64_t seed, char *path, size_t len)
{
    fg_gguf_gen_conf_t  c;

    /* whole Q4_K blocks */
    fg_test_gguf_shape(&c, type, 256, 2, 512, 4, 2);
    c.n_vocab = vocab;
    c.tied = tied;
    c.seed = seed;

    return fg_test_gen(file, &c, path, len);
}


/*
 * Packed, the products sum in another order than the plain ones: the
 * logits are near the plain model's, and a packed model's prefill gives
 * its tokens the bits they get one a step.
 */
static void
test_type(uint32_t type, const char *name, int tied, fg_pool_t *pool2)
{
    int           p;
    char          path[512], file[64];
    float         logits[3][STEPS * VOCAB];
    uint32_t      vocab;
    fg_model_t   *m[2];

    vocab = tied ? 304 : 300;
    snprintf(file, sizeof(file), "pack-%.4s-%d.gguf", name, tied);

    if (gen_model(type, file, vocab, tied, 77, path, sizeof(path)) != 0) {
        ok(0, "%s: generate the model", name);
        return;
    }

    m[0] = open_model(path, 0);
    m[1] = open_model(path, 1);

    if (m[0] == NULL || m[1] == NULL) {
        ok(0, "%s: open the model", name);
        return;
    }

    ok(m[0]->n_packed == 0 && !m[0]->layers[0].wq.packed
       && m[0]->copied_bytes > 0,
       "%s: FAIRGATE_CPU_PACK=0 packs nothing, copies", name);
    ok(m[1]->n_packed == (size_t) (14 + tied)
       && m[1]->layers[1].w_down.packed && m[1]->layers[0].wk.packed
       && m[1]->output.packed == tied && m[1]->tok_embd.packed == tied,
       "%s: the layers' 14 matrices packed (%zu bytes), %s", name,
       m[1]->packed_bytes, tied ? "and the tied output of 304 rows, which "
       "the lookups read" : "not an output of 300 rows");

    for (p = 0; p < 2; p++) {
        memset(logits, 0, sizeof(logits));

        if (run_steps(m[0], p ? pool2 : NULL, logits[0], vocab, 0) != 0
            || run_steps(m[1], p ? pool2 : NULL, logits[1], vocab, 0)
               != 0
            || run_steps(m[1], p ? pool2 : NULL, logits[2], vocab, 1)
               != 0)
        {
            ok(0, "%s: the steps run", name);
            continue;
        }

        ok(near(logits[0], logits[1], STEPS * vocab),
           "%s, %d thread%s: a prefill of %d tokens and a decode step, "
           "every logit near the plain model's", name, p + 1,
           p ? "s" : "", PREFILL);

        ok(memcmp(logits[1], logits[2], sizeof(logits[1])) == 0,
           "%s, %d thread%s: packed, the prefill's logits have the bits "
           "of its tokens run one a step", name, p + 1, p ? "s" : "");
    }

    fg_model_close(m[1]);
    fg_model_close(m[0]);
}


/* whether p lies in m's region */
static int
in_region(const fg_model_t *m, const void *p)
{
    const char  *c;

    c = p;

    return m->wmem != NULL && c >= (const char *) m->wmem
           && c < (const char *) m->wmem + m->wmem_size;
}


/*
 * A type that is not packed is copied into the region, every matrix the
 * products read (the tied output too, which the lookups then read), and
 * multiplies there with the bits it has in the file's mapping.
 */
static void
test_copy(uint32_t type, const char *name, fg_pool_t *pool2)
{
    int           p;
    char          path[512], file[64];
    float         logits[2][STEPS * VOCAB];
    fg_model_t   *m[2];

    snprintf(file, sizeof(file), "copy-%.4s.gguf", name);

    if (gen_model(type, file, VOCAB, 1, 78, path, sizeof(path)) != 0) {
        ok(0, "%s: generate the model", name);
        return;
    }

    setenv("FAIRGATE_CPU_COPY", "0", 1);
    m[0] = open_model(path, 1);
    unsetenv("FAIRGATE_CPU_COPY");
    m[1] = open_model(path, 1);

    if (m[0] == NULL || m[1] == NULL) {
        ok(0, "%s: open the model", name);
        return;
    }

    ok(m[0]->wmem == NULL && m[0]->copied_bytes == 0,
       "%s: FAIRGATE_CPU_COPY=0 leaves it mapped", name);
    ok(m[1]->n_packed == 0 && !m[1]->layers[1].w_down.packed
       && in_region(m[1], m[1]->layers[0].wq.data)
       && in_region(m[1], m[1]->layers[1].w_down.data)
       && in_region(m[1], m[1]->output.data)
       && m[1]->tok_embd.data == m[1]->output.data
       && !in_region(m[1], m[1]->layers[0].attn_norm),
       "%s: every matrix copied into the region (%zu bytes), the tied "
       "embeddings with the output, the norms not", name,
       m[1]->copied_bytes);

    for (p = 0; p < 2; p++) {
        memset(logits, 0, sizeof(logits));

        if (run_steps(m[0], p ? pool2 : NULL, logits[0], VOCAB, 0) != 0
            || run_steps(m[1], p ? pool2 : NULL, logits[1], VOCAB, 0)
               != 0)
        {
            ok(0, "%s: the steps run", name);
            continue;
        }

        ok(memcmp(logits[0], logits[1], sizeof(logits[0])) == 0,
           "%s, %d thread%s: copied, a prefill's and a decode step's "
           "logits have the mapped model's bits", name, p + 1,
           p ? "s" : "");
    }

    fg_model_close(m[1]);
    fg_model_close(m[0]);
}


int
main(void)
{
    const char  *path;
    fg_pool_t   *pool2;

    path = fg_k_init();

    fg_test_dir_make("model_place");
    pool2 = fg_pool_create(2);

    /* without SIMD nothing is packed (test_kernels_pack) */
    if (strcmp(path, "generic") != 0) {
        test_type(FG_GGML_Q4_0, "q4_0", 0, pool2);
        test_type(FG_GGML_Q4_K, "q4_k", 0, pool2);
        test_type(FG_GGML_Q4_0, "q4_0, tied", 1, pool2);
        test_type(FG_GGML_Q4_K, "q4_k, tied", 1, pool2);
        test_type(FG_GGML_Q8_0, "q8_0", 0, pool2);
        test_type(FG_GGML_Q8_0, "q8_0, tied", 1, pool2);
    }

    test_copy(FG_GGML_Q6_K, "q6_k", pool2);
    test_copy(FG_GGML_F16, "f16", pool2);
    test_copy(FG_GGML_BF16, "bf16", pool2);

    fg_pool_destroy(pool2);
    fg_test_dir_remove();

    return done_testing();
}
