
/*
 * fairgate: tests of a keys file's table and a worker's cache
 * (fg_keys_table.c): every key of 200,000 found at its entry and no other
 * key found, a digest listed twice named with its first, the table's
 * probe sequences short (so that building it and each lookup stay linear
 * and constant at a million keys), and the cache: a key found is cached,
 * a fifth key of a set puts out its least recently used one, a long key
 * and an unknown key are never cached.
 */


#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_tap.h"
#include "fg_keys_table.h"


#define N  200000


/* an entry as the nginx glue keeps it: the digest first, then its own */
typedef struct {
    unsigned char  digest[32];
    char           user[24];
    double         weight;
} entry_t;


static size_t
key_of(char *buf, size_t i)
{
    return (size_t) sprintf(buf, "sk-test-%zu", i);
}


static void
test_sha256(void)
{
    unsigned char        md[32];
    static const char    want[] = "ba7816bf8f01cfea414140de5dae2223"
                                  "b00361a396177a9cb410ff61f20015ad";
    char                 hex[65];
    size_t               i;

    ok(fg_keys_sha256((const unsigned char *) "abc", 3, md) == 0,
       "SHA-256 is available");

    for (i = 0; i < 32; i++) {
        sprintf(hex + 2 * i, "%02x", md[i]);
    }

    ok(strcmp(hex, want) == 0, "SHA-256 of \"abc\" is FIPS 180-2's");
}


/* the longest probe sequence, and the sum of every entry's displacement */
static void
probes(fg_keys_table_t *t, size_t *longest, size_t *total)
{
    size_t    s, j, home, dist;
    uint32_t  slot;

    *longest = 0;
    *total = 0;

    for (s = 0; s <= t->mask; s++) {
        j = t->slots[s];

        if (j == 0) {
            continue;
        }

        slot = (uint32_t) t->entries[(j - 1) * t->stride] << 24
               | (uint32_t) t->entries[(j - 1) * t->stride + 1] << 16
               | (uint32_t) t->entries[(j - 1) * t->stride + 2] << 8
               | t->entries[(j - 1) * t->stride + 3];
        home = slot & t->mask;
        dist = (s - home) & t->mask;

        *total += dist;
        *longest = dist > *longest ? dist : *longest;
    }
}


static void
test_table(entry_t *e, fg_keys_table_t *t, uint32_t *slots)
{
    char           key[64];
    size_t         i, len, dup, first, longest, total, bad;
    unsigned char  md[32];

    is_int(fg_keys_table_slots(0), 4, "an empty file's table has 4 slots");
    is_int(fg_keys_table_slots(3), 8, "3 keys: 8 slots, at most half full");
    is_int(fg_keys_table_slots(N), 524288, "200,000 keys: 2^19 slots");

    ok(fg_keys_table_build(t, slots, e, N, sizeof(entry_t), &dup, &first)
       == 0, "200,000 distinct keys build");

    for (i = 0, bad = 0; i < N; i++) {
        len = key_of(key, i);
        fg_keys_sha256((unsigned char *) key, len, md);
        bad += fg_keys_table_find(t, md) != (int64_t) i;
    }

    is_int(bad, 0, "each key is found at its own entry");

    for (i = N, bad = 0; i < N + 10000; i++) {
        len = key_of(key, i);
        fg_keys_sha256((unsigned char *) key, len, md);
        bad += fg_keys_table_find(t, md) != -1;
    }

    is_int(bad, 0, "10,000 keys not in the file are not found");

    probes(t, &longest, &total);
    ok(total < N, "probes stay short: %zu displacements for %d keys (mean "
       "under 1: building and finding are linear)", total, N);
    ok(longest < 64, "the longest probe sequence is %zu slots", longest);
}


static void
test_duplicate(entry_t *e, uint32_t *slots)
{
    size_t           dup, first;
    fg_keys_table_t  t;

    memcpy(e[150000].digest, e[7].digest, 32);
    memset(slots, 0, fg_keys_table_slots(N) * sizeof(uint32_t));

    ok(fg_keys_table_build(&t, slots, e, N, sizeof(entry_t), &dup, &first)
       == -1, "a digest listed twice is refused");
    is_int(dup, 150000, "... at the later entry");
    is_int(first, 7, "... which names the first");
}


/* whether the cache holds key i */
static int
held(fg_keys_cache_t *c, size_t i)
{
    char                    key[64];
    size_t                w, len;
    uint16_t              tag;
    fg_keys_cache_set_t  *set;

    len = key_of(key, i);
    set = fg_keys_cache_set(c, (unsigned char *) key, len, &tag);

    for (w = 0; w < FG_KEYS_CACHE_WAYS; w++) {
        if (set->way[w].index == i + 1 && set->way[w].len == len
            && set->way[w].tag == tag
            && memcmp(set->key[set->way[w].at], key, len) == 0)
        {
            return 1;
        }
    }

    return 0;
}


static int64_t
lookup(const fg_keys_table_t *t, fg_keys_cache_t *c, size_t i)
{
    char    key[64];
    size_t  len;

    len = key_of(key, i);

    return fg_keys_lookup(t, c, (unsigned char *) key, len);
}


/* FG_KEYS_CACHE_WAYS + 1 keys of the table that share one cache set */
static int
same_set(fg_keys_cache_t *c, size_t *k)
{
    char                  key[64];
    size_t                i, n, len;
    uint16_t              tag;
    fg_keys_cache_set_t  *first, *set;

    len = key_of(key, 0);
    first = fg_keys_cache_set(c, (unsigned char *) key, len, &tag);
    k[0] = 0;

    for (i = 1, n = 1; i < N && n <= FG_KEYS_CACHE_WAYS; i++) {
        len = key_of(key, i);
        set = fg_keys_cache_set(c, (unsigned char *) key, len, &tag);

        if (set == first) {
            k[n++] = i;
        }
    }

    return n == FG_KEYS_CACHE_WAYS + 1;
}


static void
test_cache_sizes(void)
{
    fg_keys_cache_t  c;

    is_int(sizeof(fg_keys_cache_set_t), 512,
           "a cache set is 512 bytes, 128 an entry");

    ok(fg_keys_cache_init(&c, 10) == 0
       && (c.mask + 1) * FG_KEYS_CACHE_WAYS == FG_KEYS_CACHE_MIN,
       "10 keys: the smallest cache, %d entries", FG_KEYS_CACHE_MIN);
    fg_keys_cache_free(&c);

    ok(fg_keys_cache_init(&c, 1000) == 0
       && (c.mask + 1) * FG_KEYS_CACHE_WAYS == 2048,
       "1,000 keys: 2,048 entries, 512 sets");
    fg_keys_cache_free(&c);
}


static void
test_cache(fg_keys_table_t *t)
{
    char             key[200];
    size_t           k[FG_KEYS_CACHE_WAYS + 1], i, bad;
    fg_keys_cache_t  c;

    test_cache_sizes();

    ok(fg_keys_cache_init(&c, N) == 0
       && (c.mask + 1) * FG_KEYS_CACHE_WAYS == FG_KEYS_CACHE_MAX,
       "200,000 keys: the largest cache, %d entries", FG_KEYS_CACHE_MAX);

    is_int(lookup(t, &c, 123), 123, "a key is found");
    ok(held(&c, 123), "... and cached");
    is_int(lookup(t, &c, 123), 123, "... and found there next");

    if (!same_set(&c, k)) {
        ok(0, "5 keys of one cache set");
        return;
    }

    for (i = 0, bad = 0; i < FG_KEYS_CACHE_WAYS; i++) {
        bad += lookup(t, &c, k[i]) != (int64_t) k[i];
    }

    ok(bad == 0 && held(&c, k[0]) && held(&c, k[1]) && held(&c, k[2])
       && held(&c, k[3]), "4 keys of one set are all found and cached");

    is_int(lookup(t, &c, k[0]), (int64_t) k[0],
           "the first is found again, now the set's most recent");
    is_int(lookup(t, &c, k[4]), (int64_t) k[4],
           "a fifth key of the set is found");
    ok(held(&c, k[4]) && !held(&c, k[1]),
       "... and cached in place of the least recently used");
    ok(held(&c, k[0]) && held(&c, k[2]) && held(&c, k[3]),
       "... the others kept");
    is_int(lookup(t, &c, k[1]), (int64_t) k[1],
           "the key put out is still found, in the table");

    is_int(lookup(t, &c, N + 1), -1, "an unknown key is not found");
    ok(!held(&c, N + 1), "... and not cached");

    memset(key, 'k', FG_KEYS_CACHED + 1);
    is_int(fg_keys_lookup(t, &c, (unsigned char *) key, FG_KEYS_CACHED + 1),
           -1, "a key longer than a cache entry is looked up all the same");

    is_int(lookup(t, NULL, 4242), 4242,
           "without a cache, a key is found in the table");

    fg_keys_cache_free(&c);
}


int
main(void)
{
    char              key[64];
    size_t            i, len;
    entry_t          *e;
    uint32_t         *slots;
    fg_keys_table_t   t;

    e = calloc(N, sizeof(entry_t));
    slots = calloc(fg_keys_table_slots(N), sizeof(uint32_t));

    if (e == NULL || slots == NULL) {
        printf("Bail out! no memory\n");
        return 1;
    }

    for (i = 0; i < N; i++) {
        len = key_of(key, i);
        fg_keys_sha256((unsigned char *) key, len, e[i].digest);
        e[i].weight = 1.0;
    }

    test_sha256();
    test_table(e, &t, slots);
    test_cache(&t);
    test_duplicate(e, slots);

    free(e);
    free(slots);

    return fg_tap_done();
}
