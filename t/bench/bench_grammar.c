
/*
 * fairgate: what constrained decoding costs a decode step: the mask of
 * allowed tokens, per step, over real vocabularies (the GGUF files named,
 * t/bench/bench_grammar.sh writes Llama 2's 32,000 tokens and Qwen 3's
 * 151,669), or without files over synthetic ones of 32,000 and 150,000,
 * for json_object and a typical extraction schema (docs/structured-
 * output.md).
 *
 *     bench_grammar [--steps N] [--step1-us U] [--step32-us U] [GGUF...]
 *
 * Steps come from random walks through the masks (seeded: the same
 * tokens each run), each step's mask taken twice: by a matcher without a
 * cache (the walk of the trie every step) and by one with 8 masks cached
 * (what the engine would use).  Reported: microseconds per mask, mean and
 * percentiles, and as a share of a decode step of the 100M shape at
 * batch 1 (--step1-us, 4500 by default) and of one at batch 32, where 32
 * masks are taken a step (--step32-us, 69000 by default: 4.5 ms scaled
 * by the ratio of the two steps in docs/engine.md, 101.7 ms / 6.6 ms).
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "fg_grammar.h"
#include "fg_rand.h"


#define FG_BENCH_BUDGET  60


static const char  fg_bench_schema[] =
    "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": "
    "\"string\"}, \"age\": {\"type\": \"integer\", \"minimum\": 0}, "
    "\"email\": {\"type\": \"string\", \"format\": \"email\"}, \"role\": "
    "{\"enum\": [\"admin\", \"user\", \"guest\"]}, \"tags\": {\"type\": "
    "\"array\", \"items\": {\"type\": \"string\"}, \"maxItems\": 5}, "
    "\"address\": {\"type\": \"object\", \"properties\": {\"city\": "
    "{\"type\": \"string\"}, \"zip\": {\"type\": \"string\"}}, "
    "\"required\": [\"city\", \"zip\"], \"additionalProperties\": false}}, "
    "\"required\": [\"name\", \"age\", \"role\", \"tags\", \"address\"], "
    "\"additionalProperties\": false}";


typedef struct {
    const char        *name;
    fg_gram_vocab_t   *v;
    uint32_t           n;
    uint32_t           eog;
    int32_t            close[4];            /* ", }, ], 0 */
    double             build_ms;
} fg_bench_voc_t;


static double
fg_bench_now(void)
{
    struct timespec  ts;

    /* the thread's CPU time: on a shared machine, wall time would count
     * the other processes' turns */
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);

    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}


static int
fg_bench_cmp(const void *a, const void *b)
{
    double  x, y;

    x = *(const double *) a;
    y = *(const double *) b;

    return x < y ? -1 : x > y;
}


/* n tokens: the 256 bytes, then words of letters, digits and marks, half
 * with a space in front, drawn with a fixed seed; EOG last */
static int
fg_bench_synthetic(fg_bench_voc_t *bv, uint32_t n)
{
    char        **pieces, *store;
    uint8_t      *eog;
    uint32_t      i, k, len, *lens;
    fg_rand_t     rng;
    static const char  chars[] = "etaoinshrdlcumwfgypbvkjxqz"
                                 "ETAOINSHRDLC0123456789_.,:;\"'{}[]()-";

    pieces = calloc(n, sizeof(char *));
    lens = calloc(n, sizeof(uint32_t));
    eog = calloc(n, 1);
    store = calloc(n, 16);

    if (pieces == NULL || lens == NULL || eog == NULL || store == NULL) {
        return -1;
    }

    fg_rand_seed(&rng, 7);

    for (i = 0; i < n; i++) {
        pieces[i] = store + (size_t) i * 16;

        if (i < 256) {
            pieces[i][0] = (char) i;
            lens[i] = 1;
            continue;
        }

        len = 0;

        if (fg_rand_next(&rng) & 1) {
            pieces[i][len++] = ' ';
        }

        for (k = 2 + fg_rand_next(&rng) % 8; k > 0; k--) {
            pieces[i][len++] = chars[fg_rand_next(&rng) % (sizeof(chars) - 1)];
        }

        lens[i] = len;
    }

    lens[n - 1] = 0;
    eog[n - 1] = 1;
    bv->eog = n - 1;
    bv->n = n;
    bv->v = fg_gram_vocab_new(n, (const char *const *) pieces, lens, eog);

    free(pieces);
    free(lens);
    free(eog);
    free(store);

    return bv->v ? 0 : -1;
}


static int
fg_bench_gguf(fg_bench_voc_t *bv, const char *path)
{
    char             err[256];
    fg_gguf_t       *f;
    fg_tokenizer_t  *t;

    f = fg_gguf_open(path, err, sizeof(err));
    t = f ? fg_tokenizer_load(f, err, sizeof(err)) : NULL;

    if (t == NULL) {
        fprintf(stderr, "%s: %s\n", path, err);
        fg_gguf_close(f);
        return -1;
    }

    bv->v = fg_gram_vocab_from_tokenizer(t);
    bv->n = fg_tokenizer_n_vocab(t);
    bv->eog = fg_tokenizer_eos(t);
    fg_tokenizer_free(t);
    fg_gguf_close(f);

    return bv->v ? 0 : -1;
}


/* the closing tokens: the single bytes ", }, ], 0 of the vocabulary */
static void
fg_bench_closers(fg_bench_voc_t *bv)
{
    int               k;
    char              c[4] = { '"', '}', ']', '0' };
    fg_gram_t        *g;
    fg_gram_match_t  *m;
    char              gbnf[64];
    uint32_t         *bits, i;

    bits = calloc((bv->n + 31) / 32, sizeof(uint32_t));

    for (k = 0; k < 4; k++) {
        bv->close[k] = -1;
        snprintf(gbnf, sizeof(gbnf), "root ::= \"%s%c\"", c[k] == '"'
                 ? "\\" : "", c[k]);
        g = fg_gram_from_gbnf(gbnf, strlen(gbnf), NULL, 0);
        m = g ? fg_gram_match_new(g, bv->v, 0) : NULL;

        if (m != NULL && bits != NULL && fg_gram_mask(m, bits) > 0) {
            for (i = 0; i < bv->n; i++) {
                if ((bits[i >> 5] >> (i & 31)) & 1) {
                    bv->close[k] = i;
                    break;
                }
            }
        }

        fg_gram_match_free(m);
        fg_gram_free(g);
    }

    free(bits);
}


static int32_t
fg_bench_pick(const fg_bench_voc_t *bv, const uint32_t *bits, int64_t n,
    uint32_t step, fg_rand_t *rng)
{
    int       k;
    int32_t   t;
    int64_t   want;
    uint32_t  i;

    for (k = 0; step >= FG_BENCH_BUDGET && k < 4; k++) {
        t = bv->close[k];

        if (t >= 0 && ((bits[t >> 5] >> (t & 31)) & 1)) {
            return t;
        }
    }

    want = (int64_t) (fg_rand_next(rng) % (uint64_t) n);

    for (i = 0; i < bv->n; i++) {
        if (((bits[i >> 5] >> (i & 31)) & 1) && want-- == 0) {
            return i;
        }
    }

    return -1;
}


/* walks until steps masks are timed: their times into cold[], hot[] */
static uint32_t
fg_bench_walks(const fg_bench_voc_t *bv, const fg_gram_t *g, uint32_t steps,
    double *cold, double *hot)
{
    double            t0, t1, t2;
    int32_t           t;
    int64_t           n;
    uint32_t          k, step, *bits;
    fg_rand_t         rng;
    fg_gram_match_t  *m, *mc;

    bits = calloc((bv->n + 31) / 32, sizeof(uint32_t));
    fg_rand_seed(&rng, 42);
    k = 0;

    while (bits != NULL && k < steps) {
        m = fg_gram_match_new(g, bv->v, 0);
        mc = fg_gram_match_new(g, bv->v, 8);

        for (step = 0; m && mc && k < steps && !fg_gram_done(m); step++) {
            t0 = fg_bench_now();
            n = fg_gram_mask(m, bits);
            t1 = fg_bench_now();
            n = fg_gram_mask(mc, bits) == n ? n : -1;
            t2 = fg_bench_now();
            cold[k] = t1 - t0;
            hot[k++] = t2 - t1;
            t = n > 0 ? fg_bench_pick(bv, bits, n, step, &rng) : -1;

            if (t < 0 || fg_gram_accept(m, t) != 0
                || fg_gram_accept(mc, t) != 0)
            {
                fprintf(stderr, "a walk failed at step %u\n", step);
                steps = k;
                break;
            }
        }

        fg_gram_match_free(m);
        fg_gram_match_free(mc);
    }

    free(bits);

    return k;
}


/* 32 sequences decoding together for steps steps, each its own walk;
 * the CPU time of each step's 32 masks, mean, in microseconds: private
 * caches of 8 (shared NULL) or one cache of 64 for all */
static double
fg_bench_batch(const fg_bench_voc_t *bv, const fg_gram_t *g, uint32_t steps,
    int share)
{
    double            t0, total;
    int32_t           t;
    int64_t           n[32];
    uint32_t          k, i, step[32], *bits[32];
    fg_rand_t         rng;
    fg_gram_cache_t  *c;
    fg_gram_match_t  *m[32];

    c = share ? fg_gram_cache_new(g, bv->v, 64) : NULL;
    fg_rand_seed(&rng, 99);
    total = 0;

    for (i = 0; i < 32; i++) {
        m[i] = share ? fg_gram_match_shared(g, bv->v, c)
                     : fg_gram_match_new(g, bv->v, 8);
        bits[i] = calloc((bv->n + 31) / 32, sizeof(uint32_t));
        step[i] = 0;
    }

    for (k = 0; k < steps; k++) {
        t0 = fg_bench_now();

        for (i = 0; i < 32; i++) {
            n[i] = m[i] && bits[i] ? fg_gram_mask(m[i], bits[i]) : -1;
        }

        total += fg_bench_now() - t0;

        for (i = 0; i < 32; i++) {
            t = n[i] > 0 ? fg_bench_pick(bv, bits[i], n[i], step[i]++, &rng)
                         : -1;

            if (t < 0 || fg_gram_accept(m[i], t) != 0 || fg_gram_done(m[i])) {
                fg_gram_match_free(m[i]);
                m[i] = share ? fg_gram_match_shared(g, bv->v, c)
                             : fg_gram_match_new(g, bv->v, 8);
                step[i] = 0;
            }
        }
    }

    for (i = 0; i < 32; i++) {
        fg_gram_match_free(m[i]);
        free(bits[i]);
    }

    fg_gram_cache_free(c);

    return total / steps;
}


static void
fg_bench_report(const char *voc, uint32_t n_vocab, const char *gram,
    uint32_t k, double *cold, double *hot, double step1, double step32)
{
    double    sum_c, sum_h;
    uint32_t  i;

    sum_c = 0;
    sum_h = 0;

    for (i = 0; i < k; i++) {
        sum_c += cold[i];
        sum_h += hot[i];
    }

    qsort(cold, k, sizeof(double), fg_bench_cmp);
    qsort(hot, k, sizeof(double), fg_bench_cmp);

    printf("| %s | %u | %s | %u | %.0f | %.0f / %.0f / %.0f | %.0f "
           "| %.0f / %.0f | %.1f%% | %.1f%% |\n",
           voc, n_vocab, gram, k, sum_c / k, cold[k / 2], cold[k * 99 / 100],
           cold[k - 1], sum_h / k, hot[k / 2], hot[k * 99 / 100],
           100.0 * (sum_h / k) / step1, 100.0 * 32 * (sum_h / k) / step32);
}


static void
fg_bench_voc(fg_bench_voc_t *bv, uint32_t steps, double step1,
    double step32)
{
    int            i;
    char           err[256];
    double        *cold, *hot, b[4];
    json_t        *schema;
    uint32_t       k;
    fg_gram_t     *g;
    json_error_t   jerr;

    fg_bench_closers(bv);
    memset(b, 0, sizeof(b));
    printf("| vocabulary | tokens | grammar | steps | walk us (mean) "
           "| walk us (p50 / p99 / max) | cached us (mean) "
           "| cached us (p50 / p99) | batch 1 | batch 32 |\n"
           "|---|---|---|---|---|---|---|---|---|---|\n");
    cold = calloc(steps, sizeof(double));
    hot = calloc(steps, sizeof(double));
    schema = json_loads(fg_bench_schema, 0, &jerr);

    for (i = 0; cold && hot && i < 2; i++) {
        g = fg_gram_from_schema(i ? schema : NULL, err, sizeof(err));

        if (g == NULL) {
            fprintf(stderr, "%s\n", err);
            break;
        }

        k = fg_bench_walks(bv, g, steps, cold, hot);

        if (k > 0) {
            fg_bench_report(bv->name, bv->n, i ? "schema" : "json_object",
                            k, cold, hot, step1, step32);
        }

        b[2 * i] = fg_bench_batch(bv, g, steps / 4, 0);
        b[2 * i + 1] = fg_bench_batch(bv, g, steps / 4, 1);

        fg_gram_free(g);
    }

    printf("\nbatch 32, %s, %u steps: the 32 masks of a step, us "
           "(share of the step)\n\n| grammar | caches of 8 | a shared "
           "cache of 64 |\n|---|---|---|\n", bv->name, steps / 4);

    for (i = 0; i < 2; i++) {
        printf("| %s | %.0f (%.1f%%) | %.0f (%.1f%%) |\n",
               i ? "schema" : "json_object", b[2 * i],
               100.0 * b[2 * i] / step32, b[2 * i + 1],
               100.0 * b[2 * i + 1] / step32);
    }

    printf("\n");
    json_decref(schema);
    free(cold);
    free(hot);
}


int
main(int argc, char **argv)
{
    int              i;
    double           t0, step1, step32;
    uint32_t         steps;
    fg_bench_voc_t   bv;
    static uint32_t  sizes[] = { 32000, 150000 };

    steps = 400;
    step1 = 4500;
    step32 = 69000;

    for (i = 1; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        if (strcmp(argv[i], "--steps") == 0) {
            steps = atoi(argv[i + 1]);

        } else if (strcmp(argv[i], "--step1-us") == 0) {
            step1 = atof(argv[i + 1]);

        } else if (strcmp(argv[i], "--step32-us") == 0) {
            step32 = atof(argv[i + 1]);
        }
    }

    steps = steps < 10 ? 10 : steps;
    fprintf(stderr, "decode step: %.0f us at batch 1, %.0f us at batch 32\n",
            step1, step32);


    if (i == argc) {
        for (i = 0; i < 2; i++) {
            memset(&bv, 0, sizeof(bv));
            bv.name = i ? "synthetic-150k" : "synthetic-32k";
            t0 = fg_bench_now();

            if (fg_bench_synthetic(&bv, sizes[i]) == 0) {
                bv.build_ms = (fg_bench_now() - t0) / 1e3;
                fg_bench_voc(&bv, steps, step1, step32);
                fprintf(stderr, "%s: trie built in %.0f ms\n", bv.name,
                        bv.build_ms);
            }

            fg_gram_vocab_free(bv.v);
        }

        return 0;
    }

    for ( /* void */ ; i < argc; i++) {
        memset(&bv, 0, sizeof(bv));
        bv.name = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1
                                         : argv[i];
        t0 = fg_bench_now();

        if (fg_bench_gguf(&bv, argv[i]) == 0) {
            fprintf(stderr, "%s: vocabulary and trie in %.0f ms\n", bv.name,
                    (fg_bench_now() - t0) / 1e3);
            fg_bench_voc(&bv, steps, step1, step32);
        }

        fg_gram_vocab_free(bv.v);
    }

    return 0;
}
