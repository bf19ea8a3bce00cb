
/*
 * fairgate: a request's key looked up in a keys file of 1,000 and of
 * 1,000,000 keys (ngx_module/openai/fg_keys_table.c, what
 * ngx_http_fairgate_key_find() calls), in nanoseconds a lookup:
 *
 *   build    the table made over the keys (per key; the file's reading
 *            and parsing are bench_scale.pl's, through nginx -t)
 *   find     a digest found in the table, keys in random order: the
 *            table's own cost, memory misses included
 *   sha256   a key's digest and its find, no cache (the cost of a key a
 *            worker has not cached)
 *   cached   the worker's cache asked first, 1,000 keys in turn: each
 *            found there after its first request
 *   spread   the worker's cache asked first, keys in random order over
 *            the whole file: the cache's hit ratio is its size over the
 *            keys, the rest pay sha256
 *
 * Keys are 51 bytes, as OpenAI's "sk-" keys; an entry is 112 bytes, the
 * size of the nginx glue's ngx_http_fairgate_key_t, digest first.  Each
 * case runs FG_BENCH_REPEAT times, the median is printed as one JSON line.
 * Usage: bench_keys [LOOKUPS]
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_bench.h"
#include "fg_rand.h"
#include "fg_keys_table.h"


#define FG_BENCH_REPEAT   5
#define FG_BENCH_KEY_LEN  51
#define FG_BENCH_HOT      1000


typedef struct {
    unsigned char   digest[32];
    unsigned char   rest[80];
} fg_bench_entry_t;


typedef struct {
    size_t             n;
    fg_bench_entry_t  *entries;
    uint32_t          *slots;
    fg_keys_table_t    table;
    size_t             lookups;
    uint32_t          *order;        /* lookups random indexes */
    char              *keys;         /* their keys, FG_BENCH_KEY_LEN + 1 */
    char              *hot;          /* FG_BENCH_HOT keys */
} fg_bench_t;


static void
fg_bench_key(char *buf, size_t i)
{
    snprintf(buf, FG_BENCH_KEY_LEN + 1, "sk-scale-%042zu", i);
}


static int
fg_bench_init(fg_bench_t *b, size_t n, size_t lookups)
{
    char       key[FG_BENCH_KEY_LEN + 1];
    size_t     i;
    fg_rand_t  rng;

    b->n = n;
    b->lookups = lookups;
    b->entries = calloc(n, sizeof(fg_bench_entry_t));
    b->slots = calloc(fg_keys_table_slots(n), sizeof(uint32_t));
    b->order = calloc(lookups, sizeof(uint32_t));
    b->keys = calloc(lookups, FG_BENCH_KEY_LEN + 1);
    b->hot = calloc(FG_BENCH_HOT, FG_BENCH_KEY_LEN + 1);

    if (b->entries == NULL || b->slots == NULL || b->order == NULL
        || b->keys == NULL || b->hot == NULL)
    {
        return -1;
    }

    for (i = 0; i < n; i++) {
        fg_bench_key(key, i);
        fg_keys_sha256((unsigned char *) key, FG_BENCH_KEY_LEN,
                       b->entries[i].digest);
    }

    fg_rand_seed(&rng, 7);

    for (i = 0; i < lookups; i++) {
        b->order[i] = (uint32_t) (fg_rand_next(&rng) % n);
        fg_bench_key(b->keys + i * (FG_BENCH_KEY_LEN + 1), b->order[i]);
    }

    for (i = 0; i < FG_BENCH_HOT; i++) {
        fg_bench_key(b->hot + i * (FG_BENCH_KEY_LEN + 1), i % n);
    }

    return 0;
}


static void
fg_bench_free(fg_bench_t *b)
{
    free(b->entries);
    free(b->slots);
    free(b->order);
    free(b->keys);
    free(b->hot);
}


/* ns per key of a table's build; -1: a failure */
static double
fg_bench_build(fg_bench_t *b)
{
    double  start;
    size_t  dup, first;

    memset(b->slots, 0, fg_keys_table_slots(b->n) * sizeof(uint32_t));

    start = fg_bench_now();

    if (fg_keys_table_build(&b->table, b->slots, b->entries, b->n,
                            sizeof(fg_bench_entry_t), &dup, &first)
        != 0)
    {
        return -1;
    }

    return (fg_bench_now() - start) * 1e9 / b->n;
}


/* ns per find of a known digest; -1: one not found */
static double
fg_bench_find(fg_bench_t *b)
{
    size_t  i;
    double  start;

    start = fg_bench_now();

    for (i = 0; i < b->lookups; i++) {
        if (fg_keys_table_find(&b->table,
                               b->entries[b->order[i]].digest)
            != (int64_t) b->order[i])
        {
            return -1;
        }
    }

    return (fg_bench_now() - start) * 1e9 / b->lookups;
}


/* whether the cache holds the key: what fg_keys_lookup() asks first */
static int
fg_bench_cached(fg_keys_cache_t *c, const char *key)
{
    size_t                w;
    uint16_t              tag;
    fg_keys_cache_set_t  *set;

    set = fg_keys_cache_set(c, (const unsigned char *) key,
                            FG_BENCH_KEY_LEN, &tag);

    for (w = 0; w < FG_KEYS_CACHE_WAYS; w++) {
        if (set->way[w].index && set->way[w].tag == tag
            && memcmp(set->key[set->way[w].at], key, FG_BENCH_KEY_LEN) == 0)
        {
            return 1;
        }
    }

    return 0;
}


/*
 * ns per lookup of the keys given (count of them, cycled to lookups); then
 * the same again untimed, *hits the share the cache held; -1: a key not
 * found
 */
static double
fg_bench_lookup(fg_bench_t *b, fg_keys_cache_t *c, const char *keys,
    size_t count, double *hits)
{
    size_t       i, held;
    double       start, ns;
    const char  *key;

    start = fg_bench_now();

    for (i = 0; i < b->lookups; i++) {
        key = keys + (i % count) * (FG_BENCH_KEY_LEN + 1);

        if (fg_keys_lookup(&b->table, c, (const unsigned char *) key,
                           FG_BENCH_KEY_LEN)
            < 0)
        {
            return -1;
        }
    }

    ns = (fg_bench_now() - start) * 1e9 / b->lookups;

    for (i = 0, held = 0; c && i < b->lookups; i++) {
        key = keys + (i % count) * (FG_BENCH_KEY_LEN + 1);
        held += fg_bench_cached(c, key);
        (void) fg_keys_lookup(&b->table, c, (const unsigned char *) key,
                              FG_BENCH_KEY_LEN);
    }

    *hits = (double) held / b->lookups;

    return ns;
}


/* one case, FG_BENCH_REPEAT times; its median printed; -1 on a failure */
static int
fg_bench_case(fg_bench_t *b, const char *what)
{
    int              k;
    double           ns[FG_BENCH_REPEAT], hits;
    fg_keys_cache_t  c;

    hits = 0;
    c.mask = 0;

    for (k = 0; k < FG_BENCH_REPEAT; k++) {
        if (strcmp(what, "build") == 0) {
            ns[k] = fg_bench_build(b);

        } else if (strcmp(what, "find") == 0) {
            ns[k] = fg_bench_find(b);

        } else if (strcmp(what, "sha256") == 0) {
            ns[k] = fg_bench_lookup(b, NULL, b->keys, b->lookups, &hits);

        } else {
            if (fg_keys_cache_init(&c, b->n) != 0) {
                return -1;
            }

            ns[k] = strcmp(what, "cached") == 0
                    ? fg_bench_lookup(b, &c, b->hot, FG_BENCH_HOT, &hits)
                    : fg_bench_lookup(b, &c, b->keys, b->lookups, &hits);

            fg_keys_cache_free(&c);
        }

        if (ns[k] < 0) {
            fprintf(stderr, "bench_keys: %s failed\n", what);
            return -1;
        }
    }

    qsort(ns, FG_BENCH_REPEAT, sizeof(double), fg_bench_cmp);

    printf("{\"keys\": %zu, \"case\": \"%s\", \"ns_median\": %.1f, "
           "\"min\": %.1f, \"max\": %.1f, \"cache_entries\": %u, "
           "\"cache_hits\": %.3f, \"runs\": %d}\n", b->n, what,
           fg_bench_median(ns, FG_BENCH_REPEAT), ns[0],
           ns[FG_BENCH_REPEAT - 1],
           c.mask ? (c.mask + 1) * FG_KEYS_CACHE_WAYS : 0, hits,
           FG_BENCH_REPEAT);
    fflush(stdout);

    return 0;
}


int
main(int argc, char **argv)
{
    size_t       s, w, lookups;
    fg_bench_t   b;
    size_t       sizes[] = { 1000, 1000000 };
    const char  *cases[] = { "build", "find", "sha256", "cached", "spread" };

    lookups = argc > 1 ? strtoull(argv[1], NULL, 10) : 200000;

    if (lookups == 0) {
        fprintf(stderr, "usage: bench_keys [LOOKUPS]\n");
        return 2;
    }

    for (s = 0; s < 2; s++) {
        if (fg_bench_init(&b, sizes[s], lookups) != 0) {
            fprintf(stderr, "bench_keys: out of memory\n");
            return 1;
        }

        for (w = 0; w < 5; w++) {
            if (fg_bench_case(&b, cases[w]) != 0) {
                return 1;
            }
        }

        fg_bench_free(&b);
    }

    return 0;
}
