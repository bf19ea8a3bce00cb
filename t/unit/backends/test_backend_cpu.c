
/*
 * fairgate: the cpu backend through its table of functions.
 *
 * - create refuses what it cannot run, naming why; info describes the
 *   model and the cache; forward refuses steps the cache cannot hold.
 * - stories260K from BOS alone, greedy, reproduces the 200 tokens that
 *   llama2.c's own test expects of run.c and of its PyTorch model
 *   (test_all.py in github.com/karpathy/llama2.c: expected_stdout, run.c
 *   with -t 0.0 -n 200): an independent reference for the whole path.
 * - "Once upon a time", tokenized by fg_tokenizer with BOS as the
 *   metadata says: its greedy continuation is the same on every run and
 *   thread count, and the same as what the model wrote after it from BOS.
 * - Batching: each of three sequences gets the same greedy tokens alone
 *   and inside a batch with the others, joining at different steps, its
 *   prompt in chunks, at other positions and blocks, in passes of 8 rows,
 *   on 1 and 2 threads; on stories260K and on generated models.  In the
 *   engine's determinism mode (fg_k_set_batch_invariant()): alone, a
 *   prompt of 30 rows would go through sgemm, whose float sums differ
 *   from the direct kernels' in the last bits, and the F16 cache rounds
 *   a key on either side of a half's boundary to either half (a step of
 *   2^-11), enough to part greedy tokens at a near tie of random weights.
 */


#include <stdint.h>
#include <unistd.h>

#include "fg_tap.h"
#include "fg_test_file.h"
#include "fg_test_backend.h"
#include "fg_test_model.h"
#include "fg_test_gguf.h"
#include "fg_backend.h"
#include "fg_ggml_types.h"
#include "fg_gguf_gen.h"
#include "fg_kernels.h"
#include "fg_tokenizer.h"
#include "fg_rand.h"


#define MAX_TOK     256
#define MAX_BT      (MAX_TOK / 16 + 1)
#define N_BLOCKS    128


/* llama2.c's test_all.py, expected_stdout: run.c, -t 0.0 -n 200 */
static const char  llama2c_expected[] =
    "Once upon a time, there was a little girl named Lily. She loved to "
    "play outside in the park. One day, she saw a big, red ball. She "
    "wanted to play with it, but it was too high.\n"
    "Lily's mom said, \"Lily, let's go to the park.\" Lily was sad and "
    "didn't know what to do. She said, \"I want to play with your ball, "
    "but I can't find it.\"\n"
    "Lily was sad and didn't know what to do. She said, \"I'm sorry, "
    "Lily. I didn't know what to do.\"\n"
    "Lily didn't want to help her mom, so she";


static fg_rand_t  rng = { 0x2545f4914f6cdd1dULL };


typedef struct {
    int32_t    toks[MAX_TOK];
    size_t     n_prompt;
    size_t     len;             /* prompt and generated tokens */
    size_t     done;            /* positions already in the cache */
    size_t     target;          /* len to reach */
    int32_t    table[MAX_BT];
    uint32_t   n_blocks;
} tseq_t;


typedef struct {
    int32_t    free_list[N_BLOCKS];
    size_t     n_free;
} blocks_t;


static uint64_t
urand64(void)
{
    return fg_rand_next(&rng);
}


static void
blocks_init(blocks_t *bl)
{
    size_t   i, j;
    int32_t  tmp;

    for (i = 0; i < N_BLOCKS; i++) {
        bl->free_list[i] = (int32_t) i;
    }

    for (i = N_BLOCKS - 1; i > 0; i--) {
        j = (size_t) (urand64() % (i + 1));
        tmp = bl->free_list[i];
        bl->free_list[i] = bl->free_list[j];
        bl->free_list[j] = tmp;
    }

    bl->n_free = N_BLOCKS;
}


static fg_backend_t *
create(const char *path, uint32_t threads, uint32_t max_tokens)
{
    char               err[256];
    fg_backend_t      *b;
    fg_backend_conf_t  conf;

    fg_test_backend_conf(&conf, path, N_BLOCKS, 16, 8, max_tokens, threads);

    b = fg_backend_cpu.create(&conf, err, sizeof(err));

    if (b == NULL) {
        diag("create %s: %s", path, err);
    }

    return b;
}


/*
 * One step: seqs[i] feeds chunk[i] new tokens (0: sits out); a sequence
 * whose chunk reaches its last token gets logits and its greedy next
 * token.  Returns 0 or -1.
 */
static int
step(fg_backend_t *b, blocks_t *bl, tseq_t **seqs, const size_t *chunk,
    size_t n, uint32_t vocab)
{
    char                 err[256];
    float               *logits, *lg;
    size_t               i, m;
    fg_backend_seq_t     bs[8];
    fg_backend_batch_t   batch;

    m = 0;

    for (i = 0; i < n; i++) {
        if (chunk[i] == 0) {
            continue;
        }

        while ((size_t) seqs[i]->n_blocks * 16 < seqs[i]->done + chunk[i]) {
            seqs[i]->table[seqs[i]->n_blocks++] = bl->free_list[--bl->n_free];
        }

        fg_test_backend_chunk(&bs[m++], seqs[i]->toks, seqs[i]->done,
                              chunk[i], seqs[i]->len, seqs[i]->table,
                              seqs[i]->n_blocks);
    }

    batch.seqs = bs;
    batch.n_seqs = (uint32_t) m;
    batch.hidden = NULL;

    logits = malloc((size_t) 8 * vocab * sizeof(float));

    if (fg_backend_cpu.forward(b, &batch, logits, err, sizeof(err)) != 0) {
        diag("forward: %s", err);
        free(logits);
        return -1;
    }

    lg = logits;

    for (i = 0; i < n; i++) {
        if (chunk[i] == 0) {
            continue;
        }

        seqs[i]->done += chunk[i];

        if (seqs[i]->done == seqs[i]->len) {
            seqs[i]->toks[seqs[i]->len++] = fg_k_argmax(lg, vocab);
            lg += vocab;
        }
    }

    free(logits);

    return 0;
}


/* a sequence alone: its prompt in one step, then one token a step */
static int
run_alone(const char *path, tseq_t *s, uint32_t vocab)
{
    int            rc;
    size_t         chunk;
    blocks_t       bl;
    fg_backend_t  *b;

    b = create(path, 1, 0);
    if (b == NULL) {
        return -1;
    }

    blocks_init(&bl);
    rc = 0;

    while (rc == 0 && s->len < s->target) {
        chunk = s->len - s->done;
        rc = step(b, &bl, &s, &chunk, 1, vocab);
    }

    fg_backend_cpu.destroy(b);

    return rc;
}


/*
 * Three sequences in one batch: b starts, c joins the next step, a joins
 * at the third with its prompt in two chunks, and the order of the
 * sequences in the batch changes from step to step.
 */
static int
run_batched(const char *path, tseq_t *a, tseq_t *bq, tseq_t *c,
    uint32_t vocab)
{
    int            rc;
    size_t         i, chunk[3], st;
    tseq_t        *all[3], *seqs[3];
    blocks_t       bl;
    fg_backend_t  *b;

    static const int  order[3][3] = { { 0, 1, 2 }, { 2, 0, 1 }, { 1, 2, 0 } };

    b = create(path, 2, 8);
    if (b == NULL) {
        return -1;
    }

    all[0] = a;
    all[1] = bq;
    all[2] = c;

    blocks_init(&bl);
    rc = 0;

    for (st = 0; rc == 0; st++) {
        for (i = 0; i < 3; i++) {
            seqs[i] = all[order[st % 3][i]];

            if (seqs[i]->len >= seqs[i]->target
                || (seqs[i] == c && st < 1) || (seqs[i] == a && st < 3))
            {
                chunk[i] = 0;

            } else if (seqs[i] == a && seqs[i]->done == 0) {
                /* a's prompt: two tokens first, the rest the next step */
                chunk[i] = 2;

            } else {
                chunk[i] = seqs[i]->len - seqs[i]->done;
            }
        }

        if (chunk[0] + chunk[1] + chunk[2] == 0) {
            break;
        }

        rc = step(b, &bl, seqs, chunk, 3, vocab);
    }

    fg_backend_cpu.destroy(b);

    return rc;
}


static void
seq_init(tseq_t *s, const int32_t *prompt, size_t n, size_t gen)
{
    memset(s, 0, sizeof(tseq_t));
    memcpy(s->toks, prompt, n * sizeof(int32_t));
    s->n_prompt = n;
    s->len = n;
    s->target = n + gen;
}


/* the same greedy tokens alone and batched, for each of three prompts */
static void
test_batch_invariance(const char *what, const char *path, uint32_t vocab,
    const int32_t *p0, size_t n0, const int32_t *p1, size_t n1,
    const int32_t *p2, size_t n2, size_t gen)
{
    int      rc;
    size_t   i;
    tseq_t   alone[3], batched[3];

    seq_init(&alone[0], p0, n0, gen);
    seq_init(&alone[1], p1, n1, gen + 7);
    seq_init(&alone[2], p2, n2, gen + 3);

    batched[0] = alone[0];
    batched[1] = alone[1];
    batched[2] = alone[2];

    rc = 0;
    fg_k_set_batch_invariant(1);

    for (i = 0; i < 3; i++) {
        rc |= run_alone(path, &alone[i], vocab);
    }

    rc |= run_batched(path, &batched[0], &batched[1], &batched[2], vocab);

    fg_k_set_batch_invariant(0);

    if (!ok(rc == 0, "%s: alone and batched runs", what)) {
        return;
    }

    for (i = 0; i < 3; i++) {
        ok(alone[i].len == batched[i].len
           && memcmp(alone[i].toks, batched[i].toks,
                     alone[i].len * sizeof(int32_t)) == 0,
           "%s: sequence %zu (prompt %zu, %zu generated): the same tokens "
           "alone and batched", what, i, alone[i].n_prompt,
           alone[i].len - alone[i].n_prompt);
    }
}


static void
test_create(void)
{
    char                err[256];
    fg_backend_t       *b;
    fg_backend_info_t   info;
    fg_backend_conf_t   conf;

    memset(&conf, 0, sizeof(conf));
    conf.kv_blocks = 16;

    ok(fg_backend_cpu.create(&conf, err, sizeof(err)) == NULL
       && strstr(err, "needs a model"), "no model file: refused");
    diag("  %s", err);

    conf.model_path = "/nonexistent.gguf";
    ok(fg_backend_cpu.create(&conf, err, sizeof(err)) == NULL
       && strstr(err, "/nonexistent.gguf"), "a missing file: refused");
    diag("  %s", err);

    conf.model_path = fg_test_stories();
    conf.kv_blocks = 0;
    ok(fg_backend_cpu.create(&conf, err, sizeof(err)) == NULL
       && strstr(err, "at least one block"), "no KV blocks: refused");
    diag("  %s", err);

    conf.kv_blocks = 16;
    conf.block_size = 1000;
    ok(fg_backend_cpu.create(&conf, err, sizeof(err)) == NULL
       && strstr(err, "1000 positions"), "KV blocks too large: refused");
    diag("  %s", err);

    conf.block_size = 0;
    b = fg_backend_cpu.create(&conf, err, sizeof(err));

    if (!ok(b != NULL, "stories260K with the defaults")) {
        diag("  %s", err);
        return;
    }

    fg_backend_cpu.info(b, &info);

    ok(info.vocab == 512 && info.context == 2048 && info.n_layer == 5
       && info.n_kv_head == 4 && info.head_dim == 8
       && info.kv_bytes_per_block == 2 * 5 * 4 * 8 * 16 * sizeof(uint16_t),
       "info: vocab %u, context %u, %u layers, %u kv heads of %u, "
       "%zu bytes a block of 16 (halves)", info.vocab, info.context,
       info.n_layer, info.n_kv_head, info.head_dim,
       info.kv_bytes_per_block);

    fg_backend_cpu.destroy(b);

    conf.kv_type = FG_BACKEND_KV_F32;
    b = fg_backend_cpu.create(&conf, err, sizeof(err));

    if (!ok(b != NULL, "stories260K with an F32 cache")) {
        diag("  %s", err);
        return;
    }

    fg_backend_cpu.info(b, &info);

    ok(info.kv_bytes_per_block == 2 * 5 * 4 * 8 * 16 * sizeof(float),
       "info: %zu bytes a block of 16 (floats)", info.kv_bytes_per_block);

    fg_backend_cpu.destroy(b);
}


static void
test_forward_errors(void)
{
    char                err[256];
    float               logits[512];
    int32_t             toks[20], table[2];
    fg_backend_t       *b;
    fg_backend_seq_t    s;
    fg_backend_batch_t  batch;

    b = create(fg_test_stories(), 1, 0);
    if (b == NULL) {
        ok(0, "forward errors: create");
        return;
    }

    memset(toks, 0, sizeof(toks));
    toks[0] = 1;
    table[0] = 5;
    table[1] = 200;

    fg_test_backend_one(&batch, &s, toks, 20, 0, table, 1);

    ok(fg_backend_cpu.forward(b, &batch, logits, err, sizeof(err)) == -1
       && strstr(err, "positions up to 20 need 2 blocks of 16, its table "
                 "has 1"), "a step past the sequence's blocks: refused");
    diag("  %s", err);

    s.n_blocks = 2;
    ok(fg_backend_cpu.forward(b, &batch, logits, err, sizeof(err)) == -1
       && strstr(err, "block 200"), "a block outside the cache: refused");
    diag("  %s", err);

    s.n_tokens = 0;
    ok(fg_backend_cpu.forward(b, &batch, logits, err, sizeof(err)) == -1
       && strstr(err, "wants logits but has no new tokens"),
       "logits without tokens: refused");
    diag("  %s", err);

    s.want_logits = 0;
    ok(fg_backend_cpu.forward(b, &batch, logits, err, sizeof(err)) == 0,
       "an empty step is nothing to do");

    fg_backend_cpu.destroy(b);
}


static int
decode(fg_tokenizer_t *t, const int32_t *ids, size_t n, int flags,
    char *buf, size_t size)
{
    return fg_tokenizer_decode(t, ids, n, flags, buf, size) < 0 ? -1 : 0;
}


static void
test_stories(void)
{
    char             err[256], text[4096], again[4096];
    ssize_t          n;
    size_t           i;
    int32_t          bos, prompt[64];
    tseq_t           s, s2, s3;
    fg_gguf_t       *g;
    fg_tokenizer_t  *t;

    g = fg_gguf_open(fg_test_stories(), err, sizeof(err));
    t = g ? fg_tokenizer_load(g, err, sizeof(err)) : NULL;

    if (!ok(t != NULL, "stories260K's tokenizer")) {
        diag("  %s", err);
        fg_gguf_close(g);
        return;
    }

    bos = fg_tokenizer_bos(t);

    /* from BOS alone, 200 tokens, as llama2.c's test runs run.c */
    seq_init(&s, &bos, 1, 200);

    if (run_alone(fg_test_stories(), &s, 512) == 0
        && decode(t, s.toks + 1, 200, FG_TOK_STRIP_SPACE, text,
                  sizeof(text)) == 0)
    {
        is_str(text, llama2c_expected, "stories260K from BOS, greedy, 200 "
               "tokens: llama2.c's expected text");
    }

    /* "Once upon a time", BOS as the metadata says */
    n = fg_tokenizer_encode(t, "Once upon a time", 16, 0, prompt, 64);

    ok(n > 1 && prompt[0] == bos && fg_tokenizer_add_bos(t),
       "the prompt is BOS and %zd tokens", n - 1);

    /* what the model wrote after BOS began with these very tokens */
    ok(memcmp(prompt, s.toks, n * sizeof(int32_t)) == 0,
       "... the tokens that the model wrote from BOS");

    seq_init(&s2, prompt, (size_t) n, 64);
    seq_init(&s3, prompt, (size_t) n, 64);

    if (run_alone(fg_test_stories(), &s2, 512) != 0
        || decode(t, s2.toks + n, 64, 0, text, sizeof(text)) != 0
        || run_alone(fg_test_stories(), &s3, 512) != 0
        || decode(t, s3.toks + n, 64, 0, again, sizeof(again)) != 0)
    {
        ok(0, "stories260K: \"Once upon a time\"");
        goto done;
    }

    diag("  Once upon a time|%s", text);

    is_str(again, text, "the greedy continuation is the same run to run");

    ok(memcmp(s2.toks + n, s.toks + n, 64 * sizeof(int32_t)) == 0,
       "... and the same as from BOS");

    ok(strncmp(text, ", there was a little girl named Lily. She loved to "
               "play outside in the park.", 66) == 0,
       "... and a story: \", there was a little girl named Lily ...\"");

    for (i = 0; text[i]; i++) {
        if ((unsigned char) text[i] >= 0x80) {
            break;
        }
    }

    ok(text[i] == '\0', "... in plain ASCII");

done:

    fg_tokenizer_free(t);
    fg_gguf_close(g);
}


static void
test_batching(void)
{
    char                 path[512], err[FG_GGUF_ERR_LEN];
    size_t               i, k;
    ssize_t              n0, n1;
    int32_t              p[3][40];
    fg_gguf_t           *g;
    fg_tokenizer_t      *t;
    fg_gguf_gen_conf_t   c;

    static const struct {
        uint32_t     type;
        const char  *name;
    }  types[] = {
        { FG_GGML_F16, "f16" },
        { FG_GGML_Q8_0, "q8_0" },
    };

    /* stories260K: a story's beginning, random tokens, another beginning */
    g = fg_gguf_open(fg_test_stories(), err, sizeof(err));
    t = g ? fg_tokenizer_load(g, err, sizeof(err)) : NULL;

    if (t) {
        n0 = fg_tokenizer_encode(t, "Once upon a time", 16, 0, p[0], 40);
        n1 = fg_tokenizer_encode(t, "Tom and Sue", 11, 0, p[2], 40);

        for (i = 1; i < 40; i++) {
            p[1][i] = (int32_t) (urand64() % 512);
        }

        p[1][0] = fg_tokenizer_bos(t);

        test_batch_invariance("stories260K", fg_test_stories(), 512, p[0],
                              (size_t) n0, p[1], 19, p[2], (size_t) n1, 40);

        fg_tokenizer_free(t);
    }

    fg_gguf_close(g);

    for (k = 0; k < 2; k++) {
        fg_test_gguf_shape(&c, types[k].type, 128, 2, 256, 4, 2);
        c.n_vocab = 300;
        c.seed = 40 + k;

        snprintf(path, sizeof(path), "%s/batch-%s.gguf", dir,
                 types[k].name);

        if (fg_gguf_gen_file(&c, path, err, sizeof(err)) != 0) {
            ok(0, "generate %s: %s", path, err);
            continue;
        }

        for (i = 0; i < 3 * 40; i++) {
            p[i / 40][i % 40] = (int32_t) (urand64() % 300);
        }

        snprintf(err, sizeof(err), "generated %s", types[k].name);
        test_batch_invariance(err, path, 300, p[0], 12, p[1], 3, p[2], 30,
                              24);
    }
}


int
main(void)
{
    fg_test_dir_make("cpu");

    if (access(fg_test_stories(), R_OK) != 0) {
        ok(1, "stories260K # SKIP %s is not there", fg_test_stories());

    } else {
        test_create();
        test_forward_errors();
        test_stories();
    }

    test_batching();

    fg_test_dir_remove();

    return done_testing();
}
