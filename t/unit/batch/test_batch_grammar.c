
/*
 * fairgate: structured output in the batcher, on stories260K and the cpu
 * backend.  Eight requests with a JSON Schema's grammar, sampled at
 * temperature 1 with their seeds, run together: every output that ends
 * by an end-of-generation token parses (jansson) and meets the schema
 * (t/unit/grammar's validator, written apart from the compiler).  The
 * same eight in a KV pool too small for them (preempted, recomputed) give
 * the same tokens: the matcher stays with its sequence.  The grammar's end
 * stops a sequence that ignores EOG; a matcher past its bounds (an
 * ambiguous grammar, a bias making the model feed it) ends its sequence
 * with an error; a grammar that does not compile is refused at submit.
 */


#include <jansson.h>
#include <unistd.h>

#include "fg_tap.h"
#include "fg_test_backend.h"
#include "fg_test_batch.h"
#include "fg_test_model.h"
#include "fg_batch.h"
#include "fg_gguf.h"
#include "fg_grammar.h"
#include "grammar/fg_test_valid.h"


#define GB_REQ      8
#define GB_MAX_OUT  160


typedef struct {
    int32_t     tokens[GB_MAX_OUT];
    uint32_t    n;
    uint32_t    finish;
} gb_out_t;


static gb_out_t  outs[GB_REQ + 2];
static unsigned  gb_ignore_eos;
static int32_t   gb_paren = -1;
static const char  *gb_alt;         /* the odd requests' grammar */
static uint32_t     gb_n;           /* > 1: one request of gb_n choices */
static unsigned     gb_embed;       /* the requests are embeddings */
static char         gb_err[512];    /* the last submit's refusal */


static const char  *schema_text =
    "{\"type\": \"object\", \"properties\": {"
    "\"name\": {\"type\": \"string\", \"maxLength\": 10},"
    "\"age\": {\"type\": \"integer\", \"minimum\": 0, \"maximum\": 99},"
    "\"kind\": {\"enum\": [\"cat\", \"dog\"]},"
    "\"ok\": {\"type\": \"boolean\"}},"
    "\"required\": [\"name\", \"age\", \"kind\"],"
    "\"additionalProperties\": false}";


static void
gb_emit(void *ctx, const fg_batch_event_t *ev)
{
    gb_out_t  *o;

    (void) ctx;

    /* one request of several choices: each choice its own output */
    o = &outs[ev->id + ev->choice];

    if (ev->token >= 0 && o->n < GB_MAX_OUT) {
        o->tokens[o->n++] = ev->token;
    }

    o->finish = ev->finish;
}


/* the id of the token whose bytes are text (-1: none) */
static int32_t
gb_token(const fg_tokenizer_t *tok, const char *text)
{
    char      buf[64];
    ssize_t   n;
    uint32_t  id;

    for (id = 0; id < fg_tokenizer_n_vocab(tok); id++) {
        n = fg_tokenizer_piece(tok, (int32_t) id, 0, buf, sizeof(buf));

        if (n == (ssize_t) strlen(text) && memcmp(buf, text, n) == 0) {
            return (int32_t) id;
        }
    }

    return -1;
}


/* runs the eight (and what else is given) to their ends: 0, or -1 */
static int
gb_run(const fg_tokenizer_t *tok, uint32_t kv_blocks, const char *gbnf,
    uint32_t *preempted)
{
    char                err[512];
    int32_t             prompt[] = { 1, 403, 407, 261, 378 };
    uint32_t            i, steps;
    fg_kv_t            *kv;
    fg_batch_t         *b;
    fg_backend_t       *be;
    fg_batch_req_t      req;
    fg_batch_conf_t     bc;
    fg_batch_stats_t    st;
    fg_sample_bias_t    paren;
    fg_backend_conf_t   conf;

    memset(outs, 0, sizeof(outs));
    paren.id = gb_paren;
    paren.bias = 100.0f;
    fg_test_backend_conf(&conf, fg_test_stories(), kv_blocks, 16, 8, 128, 1);

    be = fg_backend_cpu.create(&conf, err, sizeof(err));
    kv = be ? fg_kv_create(kv_blocks, 16, err, sizeof(err)) : NULL;
    fg_test_batch_conf(&bc, 8, 128, 16, gb_emit, NULL);
    bc.tokenizer = tok;
    bc.eog = (int32_t[]) { fg_tokenizer_eos(tok) };
    bc.n_eog = 1;
    b = kv ? fg_batch_create(&bc, &fg_backend_cpu, be, kv, err, sizeof(err))
           : NULL;

    if (b == NULL) {
        diag("%s", err);
        return -1;
    }

    gb_err[0] = '\0';

    for (i = 0; i < (gb_n > 1 ? 1 : GB_REQ); i++) {
        fg_test_batch_req(&req, i, prompt, 5, GB_MAX_OUT - 10,
                          gb_ignore_eos);
        req.n = gb_n;
        req.embed = gb_embed;
        req.sampling.temperature = 1.0f;
        req.sampling.seed = 1000 + i;
        req.grammar = (gb_alt && i % 2) ? gb_alt : gbnf;
        req.n_grammar = (uint32_t) strlen(req.grammar);

        if (gb_paren >= 0) {
            req.sampling.bias = &paren;
            req.sampling.n_bias = 1;
        }

        if (fg_batch_submit(b, &req, err, sizeof(err)) != FG_BATCH_OK) {
            diag("submit %u: %s", i, err);
            snprintf(gb_err, sizeof(gb_err), "%s", err);
        }
    }

    for (steps = 0; fg_batch_held(b) && steps < 4000; steps++) {
        if (fg_batch_step(b, err, sizeof(err)) < 0) {
            diag("step: %s", err);
            break;
        }
    }

    fg_batch_stats(b, &st);
    *preempted = (uint32_t) st.preemptions;

    fg_batch_destroy(b);
    fg_kv_destroy(kv);
    fg_backend_cpu.destroy(be);

    return 0;
}


/* the outputs ended by the grammar's end that do not meet the schema */
static uint32_t
gb_bad(const fg_tokenizer_t *tok, json_t *schema)
{
    char      text[GB_MAX_OUT * 16];
    json_t   *v;
    uint32_t  i, bad;

    bad = 0;

    for (i = 0; i < GB_REQ; i++) {
        if (outs[i].finish != FG_FINISH_STOP) {
            continue;
        }

        fg_tokenizer_decode(tok, outs[i].tokens, outs[i].n - 1, 0, text,
                            sizeof(text));
        v = json_loads(text, JSON_DECODE_ANY, NULL);

        if (v == NULL || !fg_test_valid(v, schema, schema)) {
            diag("output %u does not validate: %s", i, text);
            bad++;
        }

        json_decref(v);
    }

    return bad;
}


static void
test_schema(const fg_tokenizer_t *tok)
{
    char        err[256], text[GB_MAX_OUT * 16], *gbnf;
    json_t     *schema;
    uint32_t    i, ended, bad, pre_big, pre_small;
    gb_out_t    first[GB_REQ];

    schema = json_loads(schema_text, 0, NULL);
    gbnf = fg_gram_schema_gbnf(schema, err, sizeof(err));

    if (!ok(gbnf != NULL, "the schema compiles (%s)", gbnf ? "" : err)) {
        json_decref(schema);
        return;
    }

    if (gb_run(tok, 256, gbnf, &pre_big) != 0) {
        ok(0, "the batcher runs");
        return;
    }

    memcpy(first, outs, sizeof(first));
    ended = 0;

    for (i = 0; i < GB_REQ; i++) {
        ended += outs[i].finish == FG_FINISH_STOP;
    }

    bad = gb_bad(tok, schema);

    ok(ended >= GB_REQ - 1, "%u of %u end by the grammar's end", ended,
       GB_REQ);
    is_int(bad, 0, "every one that ends parses and meets the schema");

    /* 12 blocks of 16 cannot hold eight of up to 155 tokens */
    gb_run(tok, 12, gbnf, &pre_small);
    ok(pre_small > 0 && pre_big == 0, "a small pool preempts (%u)",
       pre_small);
    ok(memcmp(first, outs, sizeof(first)) == 0,
       "preempted and recomputed: the same tokens, the same ends");

    /* one request of eight choices: each follows the grammar with a
     * matcher of its own, choice 0 as the request of its seed alone */
    gb_n = GB_REQ;
    gb_run(tok, 256, gbnf, &pre_big);
    gb_n = 0;
    bad = gb_bad(tok, schema);
    ok(bad == 0 && outs[0].n == first[0].n
       && memcmp(outs[0].tokens, first[0].tokens,
                 first[0].n * sizeof(int32_t)) == 0
       && memcmp(&outs[1], &outs[2], sizeof(gb_out_t)) != 0,
       "n = %u choices of one grammar: each its own output, every one "
       "valid (%u not), choice 0 the seed's alone", GB_REQ, bad);

    /* two grammars among the eight: each held once, for its own */
    gb_alt = "root ::= \"yes\" | \"no\"";
    gb_run(tok, 256, gbnf, &pre_big);
    gb_alt = NULL;
    bad = 0;

    for (i = 0; i < GB_REQ; i++) {
        fg_tokenizer_decode(tok, outs[i].tokens, outs[i].n - 1, 0, text,
                            sizeof(text));

        if (i % 2 ? strcmp(text, "yes") != 0 && strcmp(text, "no") != 0
                  : outs[i].n != first[i].n
                    || memcmp(outs[i].tokens, first[i].tokens,
                              outs[i].n * sizeof(int32_t)) != 0)
        {
            diag("request %u: %s", i, text);
            bad++;
        }
    }

    is_int(bad, 0, "two grammars in one batch: the schema's the same "
           "tokens as alone, the other's yes or no");

    free(gbnf);
    json_decref(schema);
}


static void
test_refused(const fg_tokenizer_t *tok)
{
    uint32_t  pre;

    /* past the grammar's end (its EOG ignored): the grammar stops it */
    gb_ignore_eos = 1;
    gb_run(tok, 64, "root ::= \"ab\"", &pre);
    gb_ignore_eos = 0;
    ok(outs[0].finish == FG_FINISH_STOP && outs[0].n >= 2
       && outs[0].tokens[outs[0].n - 1] == fg_tokenizer_eos(tok)
       && outs[7].finish == FG_FINISH_STOP,
       "EOG ignored: the grammar's end stops it all the same (%u tokens)",
       outs[0].n);

    /* an ambiguous grammar whose stacks grow with each "(", which a bias
     * makes the model write: the matcher meets its bound, and the
     * sequence ends with an error */
    gb_paren = gb_token(tok, "(");
    gb_run(tok, 64, "root ::= ( \"(\" root \")\"* )* | [^\\-\\x1f]", &pre);
    gb_paren = -1;
    ok(outs[0].finish == FG_FINISH_ERROR && outs[0].n > 0
       && outs[0].n < GB_MAX_OUT - 10,
       "a matcher past its bounds: an error finish after %u tokens",
       outs[0].n);

    diag("the next eight submits are refused, as they should be:");
    gb_run(tok, 64, "root ::= nothing", &pre);
    ok(outs[0].finish == FG_FINISH_NONE && outs[0].n == 0,
       "a grammar that does not compile: refused at submit");

    /* an embedding samples nothing: a grammar with it is a mistake */
    gb_embed = 1;
    gb_run(tok, 64, "root ::= \"ab\"", &pre);
    gb_embed = 0;
    ok(outs[0].finish == FG_FINISH_NONE && outs[0].n == 0
       && strstr(gb_err, "grammar") != NULL,
       "an embedding with a grammar: refused at submit (%s)", gb_err);
}


int
main(void)
{
    char             err[512];
    fg_gguf_t       *g;
    fg_tokenizer_t  *tok;

    if (access(fg_test_stories(), R_OK) != 0) {
        diag("no %s: skipped", fg_test_stories());
        ok(1, "nothing to run");
        return fg_tap_done();
    }

    g = fg_gguf_open(fg_test_stories(), err, sizeof(err));
    tok = g ? fg_tokenizer_load(g, err, sizeof(err)) : NULL;
    fg_gguf_close(g);

    if (!ok(tok != NULL, "stories260K's tokenizer (%s)", tok ? "" : err)) {
        return fg_tap_done();
    }

    test_schema(tok);
    test_refused(tok);

    fg_tokenizer_free(tok);

    return fg_tap_done();
}
