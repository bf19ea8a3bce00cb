
/*
 * fairgate: random walks through the masks.  For each schema, on each
 * vocabulary (a synthetic byte-level one, stories260K's, and the GGUF
 * files named on the command line or in $FG_GRAM_VOCABS, as t/117 does
 * with real tokenizers), tokens are drawn from the mask with a seeded
 * generator until EOG; every text must parse with jansson and meet the
 * schema (fg_test_valid.h).  On the way, each step checks that the
 * cached mask is the uncached one, that a token the mask refuses is
 * refused by fg_gram_accept(), and that EOG comes only where the grammar
 * is complete.  Past a budget of steps the walk prefers tokens that
 * close (", }, ], 0), so that it ends.
 */


#include <stdio.h>
#include <stdlib.h>

#include "fg_tap.h"
#include "fg_test_gram.h"
#include "fg_test_model.h"
#include "fg_test_valid.h"
#include "fg_rand.h"


#define FG_TEST_TEXT    65536
#define FG_TEST_BUDGET  60


static const char  *fg_test_walk_schemas[] = {
    NULL,
    "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": "
    "\"string\", \"maxLength\": 12}, \"age\": {\"type\": \"integer\", "
    "\"minimum\": 0, \"maximum\": 150}, \"email\": {\"type\": \"string\", "
    "\"format\": "
    "\"email\"}, \"tags\": {\"type\": \"array\", \"items\": {\"enum\": "
    "[\"a\", \"b\", \"c\"]}, \"maxItems\": 3}, \"born\": {\"type\": "
    "\"string\", \"format\": \"date\"}}, \"required\": [\"name\", \"age\"], "
    "\"additionalProperties\": false}",
    "{\"type\": \"object\", \"properties\": {\"id\": {\"type\": \"string\", "
    "\"format\": \"uuid\"}, \"at\": {\"type\": \"string\", \"format\": "
    "\"date-time\"}, \"ok\": {\"type\": \"boolean\"}, \"score\": "
    "{\"type\": \"number\"}, \"note\": {\"type\": [\"string\", \"null\"], "
    "\"minLength\": 1, \"maxLength\": 8}, \"kind\": {\"const\": \"event\"}},"
    " \"required\": [\"id\", \"at\", \"ok\", \"score\", \"note\", \"kind\"],"
    " \"additionalProperties\": false}",
    "{\"$defs\": {\"node\": {\"type\": \"object\", \"properties\": {\"v\": "
    "{\"type\": \"integer\"}, \"kids\": {\"type\": \"array\", \"items\": "
    "{\"$ref\": \"#/$defs/node\"}, \"maxItems\": 2}}, \"required\": [\"v\"],"
    " \"additionalProperties\": false}}, \"$ref\": \"#/$defs/node\"}",
    "{\"type\": \"array\", \"minItems\": 2, \"maxItems\": 4, \"items\": "
    "{\"anyOf\": [{\"type\": \"string\", \"minLength\": 2, \"maxLength\": "
    "5}, {\"type\": \"integer\", \"exclusiveMinimum\": 0}, {\"type\": "
    "\"object\", \"additionalProperties\": {\"type\": \"boolean\"}}]}}",
    "{\"enum\": [\"north\", \"south\", \"nord\", 7, null]}",
    "{\"type\": \"array\", \"items\": {\"type\": \"integer\", "
    "\"minimum\": -40, \"exclusiveMaximum\": 1000}, \"maxItems\": 6}",
    "{\"type\": \"object\", \"properties\": {\"code\": {\"type\": "
    "\"string\", \"pattern\": \"^[A-Z]{2}-[0-9]{3}(-[a-z]+)?$\"}, "
    "\"tag\": {\"type\": \"string\", \"pattern\": \"^(ab|c)+[.]$\"}}, "
    "\"required\": [\"code\", \"tag\"], \"additionalProperties\": false}",
    /* zod's (LangChain's withStructuredOutput): int() in the safe range,
     * numbers between integers, a uuid's format beside its pattern */
    "{\"type\": \"object\", \"properties\": {\"n\": {\"type\": "
    "\"integer\", \"minimum\": -9007199254740991, \"maximum\": "
    "9007199254740991}, \"p\": {\"type\": \"number\", \"minimum\": 0, "
    "\"maximum\": 1}, \"q\": {\"type\": \"number\", "
    "\"exclusiveMinimum\": -3, \"exclusiveMaximum\": 0}, \"id\": "
    "{\"type\": \"string\", \"format\": \"uuid\", \"pattern\": "
    "\"^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB]"
    "[0-9a-fA-F]{3}-[0-9a-fA-F]{12})$\"}}, \"required\": [\"n\", \"p\", "
    "\"q\", \"id\"], \"additionalProperties\": false}",
};


typedef struct {
    const char        *name;
    fg_gram_vocab_t   *v;
    uint32_t           n;
    char             **pieces;
    uint32_t          *lens;
    uint32_t           eog;
    int32_t            pref[8];             /* closing tokens, in order */
    uint32_t           walks;
} fg_test_voc_t;


static const char  *fg_test_closers[] = { "\"", "}", "]", "0", "1", ":",
                                          NULL };


static void
fg_test_voc_prefs(fg_test_voc_t *tv)
{
    size_t    k;
    uint32_t  i;

    for (k = 0; fg_test_closers[k]; k++) {
        tv->pref[k] = -1;

        for (i = 0; i < tv->n; i++) {
            if (tv->lens[i] == 1 && tv->pieces[i][0] == fg_test_closers[k][0])
            {
                tv->pref[k] = i;
                break;
            }
        }
    }

    tv->pref[k] = -1;
}


static int
fg_test_voc_synthetic(fg_test_voc_t *tv)
{
    size_t    k;
    uint32_t  i;

    k = sizeof(fg_test_gram_pieces) / sizeof(fg_test_gram_pieces[0]);
    tv->name = "synthetic";
    tv->v = fg_test_gram_vocab(&tv->eog);
    tv->n = 256 + k + 2;
    tv->pieces = calloc(tv->n, sizeof(char *));
    tv->lens = calloc(tv->n, sizeof(uint32_t));
    tv->walks = 12;

    for (i = 0; i < tv->n; i++) {
        tv->pieces[i] = calloc(1, 64);
        tv->pieces[i][0] = (char) i;
        tv->lens[i] = i < 256;

        if (i >= 256 && i < 256 + k) {
            tv->lens[i] = strlen(fg_test_gram_pieces[i - 256]);
            memcpy(tv->pieces[i], fg_test_gram_pieces[i - 256], tv->lens[i]);
        }
    }

    fg_test_voc_prefs(tv);

    return tv->v != NULL;
}


static int
fg_test_voc_gguf(fg_test_voc_t *tv, const char *path, uint32_t walks)
{
    char             err[256];
    size_t           max;
    ssize_t          len;
    uint32_t         i;
    fg_gguf_t       *f;
    fg_tokenizer_t  *t;

    f = fg_gguf_open(path, err, sizeof(err));
    t = f ? fg_tokenizer_load(f, err, sizeof(err)) : NULL;

    if (t == NULL) {
        diag("%s: %s", path, err);
        fg_gguf_close(f);
        return 0;
    }

    tv->name = path;
    tv->walks = walks;
    tv->v = fg_gram_vocab_from_tokenizer(t);
    tv->n = fg_tokenizer_n_vocab(t);
    tv->pieces = calloc(tv->n, sizeof(char *));
    tv->lens = calloc(tv->n, sizeof(uint32_t));
    tv->eog = fg_tokenizer_eos(t);
    max = fg_tokenizer_max_piece(t) + 8;

    for (i = 0; i < tv->n; i++) {
        tv->pieces[i] = calloc(1, max);
        len = fg_tokenizer_piece(t, i, 0, tv->pieces[i], max);
        tv->lens[i] = len > 0 ? len : 0;
    }

    fg_test_voc_prefs(tv);
    fg_tokenizer_free(t);
    fg_gguf_close(f);

    return tv->v != NULL;
}


static void
fg_test_voc_free(fg_test_voc_t *tv)
{
    uint32_t  i;

    for (i = 0; tv->pieces && i < tv->n; i++) {
        free(tv->pieces[i]);
    }

    free(tv->pieces);
    free(tv->lens);
    fg_gram_vocab_free(tv->v);
}


static int
fg_test_bit(const uint32_t *bits, int32_t t)
{
    return t >= 0 && ((bits[t >> 5] >> (t & 31)) & 1);
}


/* the token to take: the k-th allowed, or past the budget a closer */
static int32_t
fg_test_pick(const fg_test_voc_t *tv, const uint32_t *bits, int64_t n,
    uint32_t step, fg_rand_t *rng)
{
    size_t    k;
    int64_t   want;
    uint32_t  i;

    if (step >= FG_TEST_BUDGET) {
        for (k = 0; tv->pref[k] >= 0 || fg_test_closers[k]; k++) {
            if (fg_test_bit(bits, tv->pref[k])) {
                return tv->pref[k];
            }
        }
    }

    want = (int64_t) (fg_rand_next(rng) % (uint64_t) n);

    for (i = 0; i < tv->n; i++) {
        if (fg_test_bit(bits, i) && want-- == 0) {
            return i;
        }
    }

    return -1;
}


/* a token the mask refuses must be refused: one drawn at random */
static int
fg_test_refused(const fg_test_voc_t *tv, fg_gram_match_t *m,
    const uint32_t *bits, fg_rand_t *rng)
{
    int32_t  t;

    t = (int32_t) (fg_rand_next(rng) % tv->n);

    return fg_test_bit(bits, t) || fg_gram_accept(m, t) == -1;
}


/* one walk into text; 0, or what went wrong */
static const char *
fg_test_walk(const fg_test_voc_t *tv, const fg_gram_t *g,
    fg_gram_cache_t *shared, fg_rand_t *rng, char *text)
{
    size_t            len, words;
    int32_t           t;
    int64_t           n, n2;
    uint32_t          step, *bits, *bits2, *bits3;
    const char       *why;
    fg_gram_match_t  *m, *m2, *m3;

    words = (tv->n + 31) / 32;
    bits = calloc(words, sizeof(uint32_t));
    bits2 = calloc(words, sizeof(uint32_t));
    bits3 = calloc(words, sizeof(uint32_t));
    m = fg_gram_match_new(g, tv->v, 8);
    m2 = fg_gram_match_new(g, tv->v, 0);
    m3 = fg_gram_match_shared(g, tv->v, shared);
    len = 0;
    why = m && m2 && m3 && bits && bits2 && bits3 ? NULL : "out of memory";

    for (step = 0; why == NULL && step < 8 * FG_TEST_BUDGET; step++) {
        n = fg_gram_mask(m, bits);
        n2 = fg_gram_mask(m2, bits2);

        if (n <= 0) {
            why = "a step with no token allowed";

        } else if (n != n2 || memcmp(bits, bits2, words * 4) != 0) {
            why = "the cached mask differs from the walked one";

        } else if (fg_gram_mask(m3, bits3) != n
                   || memcmp(bits, bits3, words * 4) != 0)
        {
            why = "the shared cache's mask differs from the walked one";

        } else if (fg_test_bit(bits, tv->eog) != fg_gram_complete(m)) {
            why = "EOG allowed where the grammar is not complete, or not "
                  "where it is";

        } else if (!fg_test_refused(tv, m, bits, rng)) {
            why = "a token out of the mask was taken";

        } else if ((t = fg_test_pick(tv, bits, n, step, rng)) < 0) {
            why = "no token picked";

        } else if (fg_gram_accept(m, t) != 0 || fg_gram_accept(m2, t) != 0
                   || fg_gram_accept(m3, t) != 0)
        {
            why = "a token of the mask was refused";

        } else if (fg_gram_done(m)) {
            break;

        } else if (len + tv->lens[t] + 1 >= FG_TEST_TEXT) {
            why = "too long";

        } else {
            memcpy(text + len, tv->pieces[t], tv->lens[t]);
            len += tv->lens[t];
        }
    }

    text[len] = '\0';

    if (why == NULL && !fg_gram_done(m)) {
        why = "no EOG after many steps";
    }

    free(bits);
    free(bits2);
    free(bits3);
    fg_gram_match_free(m);
    fg_gram_match_free(m2);
    fg_gram_match_free(m3);

    return why;
}


static void
fg_test_walks(const fg_test_voc_t *tv, const char *schema_text, size_t si)
{
    int               valid, fails;
    char              err[256], *text;
    json_t           *schema, *val;
    uint32_t          w;
    fg_rand_t         rng;
    fg_gram_t        *g;
    const char       *why;
    json_error_t      jerr;
    fg_gram_cache_t  *shared;

    schema = schema_text ? json_loads(schema_text, 0, &jerr) : NULL;
    g = fg_gram_from_schema(schema, err, sizeof(err));
    text = malloc(FG_TEST_TEXT);
    fails = 0;
    shared = g ? fg_gram_cache_new(g, tv->v, 4) : NULL;

    if (!ok(g != NULL && text != NULL, "%s: schema %zu compiles", tv->name,
            si))
    {
        diag("%s", err);
    }

    for (w = 0; g && text && w < tv->walks && fails < 3; w++) {
        fg_rand_stream(&rng, 31, si * 1000 + w);
        why = fg_test_walk(tv, g, shared, &rng, text);
        val = why ? NULL : json_loads(text, JSON_DECODE_ANY, &jerr);
        valid = val && (schema ? fg_test_valid(val, schema, schema)
                               : json_is_object(val));

        if (w == 0 && valid) {
            diag("%s", fg_test_gram_show(text));
        }

        if (!valid) {
            fails++;
            ok(0, "%s: schema %zu, walk %u: %s", tv->name, si, w,
               why ? why : val ? "the text does not meet the schema"
                           : jerr.text);
            diag("text: %s", text);
        }

        json_decref(val);
    }

    ok(fails == 0, "%s: schema %zu: %u walks end in valid JSON", tv->name,
       si, w);

    fg_gram_cache_free(shared);
    fg_gram_free(g);
    json_decref(schema);
    free(text);
}


static void
fg_test_voc_run(fg_test_voc_t *tv)
{
    size_t  i;

    for (i = 0; i < sizeof(fg_test_walk_schemas) / sizeof(char *); i++) {
        fg_test_walks(tv, fg_test_walk_schemas[i], i);
    }

    fg_test_voc_free(tv);
}


int
main(int argc, char **argv)
{
    int             i;
    char           *env, *path, *save;
    fg_test_voc_t   tv;

    memset(&tv, 0, sizeof(tv));

    if (ok(fg_test_voc_synthetic(&tv), "the synthetic vocabulary")) {
        fg_test_voc_run(&tv);
    }

    memset(&tv, 0, sizeof(tv));

    if (ok(fg_test_voc_gguf(&tv, fg_test_stories(), 12),
           "stories260K's vocabulary"))
    {
        fg_test_voc_run(&tv);
    }

    env = getenv("FG_GRAM_VOCABS") ? strdup(getenv("FG_GRAM_VOCABS")) : NULL;

    for (path = env ? strtok_r(env, ":", &save) : NULL; path;
         path = strtok_r(NULL, ":", &save))
    {
        memset(&tv, 0, sizeof(tv));

        if (ok(fg_test_voc_gguf(&tv, path, 4), "%s's vocabulary", path)) {
            fg_test_voc_run(&tv);
        }
    }

    for (i = 1; i < argc; i++) {
        memset(&tv, 0, sizeof(tv));

        if (ok(fg_test_voc_gguf(&tv, argv[i], 4), "%s", argv[i])) {
            fg_test_voc_run(&tv);
        }
    }

    free(env);

    return done_testing();
}
