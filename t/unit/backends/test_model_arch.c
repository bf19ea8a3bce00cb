
/*
 * fairgate: the cpu forward pass of each architecture beyond llama's
 * (qwen3, gemma, gemma2, gemma3, phi3) gives a sequence the same logits
 * however its tokens are cut into steps and passes: a prompt of 40 in one
 * step of one pass, the same step in passes of 3 rows (each pass seeing
 * the keys the ones before wrote), and one token a step, in blocks of 4
 * from a shuffled free list.  Windows of 8 (gemma2, gemma3) make every
 * cut cross them; soft-capping, post norms and heads wider than the
 * embedding are in the files.  And the prompt with its last row's logits
 * alone wanted, where the last layer goes on with that row only.  Within
 * 1e-5 of the row's largest logit (float sums in another order; measured
 * about 1e-6).  That each
 * architecture computes what llama.cpp computes is checked against
 * llama.cpp itself (docs/engine-model-format.md).
 */


#include <stdint.h>

#include "fg_tap.h"
#include "fg_test_file.h"
#include "fg_test_gen.h"
#include "fg_gguf_gen.h"
#include "fg_model.h"
#include "fg_rand.h"


#define LEN       40
#define BLOCK     4
#define N_BLOCKS  (LEN / BLOCK)


static fg_rand_t  rng = { 0x9e3779b97f4a7c15ULL };


/*
 * The logits of every position of tokens, in steps of step tokens (0:
 * all at once) through passes of max_rows rows: 0, or -1 said.
 */
static int
run(const fg_model_t *m, const int32_t *tokens, size_t step,
    uint32_t max_rows, int last, float *logits)
{
    int              rc;
    char             err[256];
    size_t           t, n;
    int32_t          pos[LEN], seq[LEN], table[N_BLOCKS];
    uint8_t          want[LEN];
    uint32_t         i, j, k;
    fg_model_kv_t    kv;
    fg_model_ctx_t  *ctx;
    fg_model_batch_t b;

    /* an F32 cache: an F16 one rounds a key that float sums in another
     * order put on either side of a half's boundary to either half, and
     * the cuts then part by up to 2e-4 */
    if (fg_model_kv_init(&kv, m, N_BLOCKS, BLOCK, FG_K_F32, err, sizeof(err))
        != 0)
    {
        diag("%s", err);
        return -1;
    }

    ctx = fg_model_ctx_create(m, NULL, max_rows, err, sizeof(err));
    if (ctx == NULL) {
        diag("%s", err);
        fg_model_kv_free(&kv);
        return -1;
    }

    for (i = 0; i < N_BLOCKS; i++) {
        table[i] = (int32_t) i;
    }

    for (i = N_BLOCKS - 1; i > 0; i--) {
        j = (uint32_t) (fg_rand_next(&rng) % (i + 1));
        k = (uint32_t) table[i];
        table[i] = table[j];
        table[j] = (int32_t) k;
    }

    for (t = 0; t < LEN; t++) {
        pos[t] = (int32_t) t;
        seq[t] = 0;
        want[t] = !last || t == LEN - 1;
    }

    step = step ? step : LEN;
    rc = 0;

    for (t = 0; rc == 0 && t < LEN; t += n) {
        n = LEN - t < step ? LEN - t : step;

        memset(&b, 0, sizeof(b));
        b.tokens = tokens + t;
        b.pos = pos + t;
        b.seq = seq + t;
        b.want = want + t;
        b.block_tables = table;
        b.max_blocks = N_BLOCKS;
        b.n_seqs = 1;
        b.n_tokens = n;

        rc = fg_model_forward(ctx, &kv, &b, logits + t * m->hp->n_vocab, err,
                              sizeof(err));

        if (rc != 0) {
            diag("%s", err);
        }
    }

    fg_model_ctx_destroy(ctx);
    fg_model_kv_free(&kv);

    return rc;
}


/* the largest difference of a row, over its largest logit (at least 1) */
static double
worst(const float *a, const float *b, size_t rows, size_t n)
{
    size_t  r, i;
    double  w, d, big;

    w = 0;

    for (r = 0; r < rows; r++) {
        big = 1;
        d = 0;

        for (i = 0; i < n; i++) {
            big = fmax(big, fabs(a[r * n + i]));
            d = fmax(d, fabs((double) a[r * n + i] - b[r * n + i]));

            if (isnan(a[r * n + i]) || isnan(b[r * n + i])) {
                d = INFINITY;
            }
        }

        w = fmax(w, d / big);
    }

    return w;
}


static void
test_arch(const char *arch, fg_gguf_gen_conf_t *c)
{
    char         file[64], path[512], err[256];
    float       *one, *passes, *decode;
    size_t       t, vocab;
    double       wp, wd, wl;
    int32_t      tokens[LEN];
    fg_model_t  *m;

    c->arch = arch;
    c->n_vocab = 300;

    snprintf(file, sizeof(file), "%s.gguf", arch);

    if (fg_test_gen(file, c, path, sizeof(path)) != 0) {
        ok(0, "%s: generated", arch);
        return;
    }

    m = fg_model_open(path, err, sizeof(err));
    if (!ok(m != NULL, "%s: opens", arch)) {
        diag("%s", err);
        return;
    }

    vocab = m->hp->n_vocab;

    for (t = 0; t < LEN; t++) {
        tokens[t] = (int32_t) (fg_rand_next(&rng) % vocab);
    }

    one = malloc(LEN * vocab * sizeof(float));
    passes = malloc(LEN * vocab * sizeof(float));
    decode = malloc(LEN * vocab * sizeof(float));

    if (run(m, tokens, 0, 512, 0, one) == 0
        && run(m, tokens, 0, 3, 0, passes) == 0
        && run(m, tokens, 1, 512, 0, decode) == 0)
    {
        wp = worst(one, passes, LEN, vocab);
        wd = worst(one, decode, LEN, vocab);
        wl = run(m, tokens, 0, 512, 1, passes) == 0
             ? worst(one + (LEN - 1) * vocab, passes, 1, vocab) : INFINITY;

        ok(wp <= 1e-5, "%s: a prompt of %d in passes of 3 rows as in one "
           "(%.1e)", arch, LEN, wp);
        ok(wd <= 1e-5, "%s: one token a step as the prompt in one step "
           "(%.1e)", arch, wd);
        ok(wl <= 1e-5, "%s: the last row alone wanted as with every row "
           "(%.1e)", arch, wl);

    } else {
        ok(0, "%s: runs", arch);
    }

    free(one);
    free(passes);
    free(decode);
    fg_model_close(m);
}


int
main(void)
{
    fg_gguf_gen_conf_t  c;

    fg_k_init();
    fg_test_dir_make("model_arch");

    fg_gguf_gen_defaults(&c);
    c.head_dim = 16;
    c.n_head_kv = 2;
    test_arch("qwen3", &c);

    fg_gguf_gen_defaults(&c);
    test_arch("gemma", &c);

    fg_gguf_gen_defaults(&c);
    c.n_swa = 8;
    c.attn_softcap = 1.5f;
    c.final_softcap = 3.0f;
    test_arch("gemma2", &c);

    fg_gguf_gen_defaults(&c);
    c.n_layer = 7;
    c.n_swa = 8;
    c.head_dim = 16;
    c.rope_base = 1e6f;
    c.tied = 0;
    test_arch("gemma3", &c);

    fg_gguf_gen_defaults(&c);
    test_arch("phi3", &c);

    fg_test_dir_remove();

    return done_testing();
}
