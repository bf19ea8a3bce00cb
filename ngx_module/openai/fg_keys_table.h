
/*
 * fairgate: a keys file's keys found by their SHA-256 (fg_keys_table.c),
 * pure C so that a unit test and a benchmark call what a request does.
 *
 * The table is open addressing over the caller's entries, each of which
 * starts with its key's digest (32 bytes): a slot holds an entry's index
 * plus one, 4 bytes, and the table is at most half full.  It is built once
 * in O(n), a digest listed twice found on the way.
 *
 * A worker's cache remembers the keys it found, so that a client's next
 * requests cost a hash of the key and a compare instead of a SHA-256.  It
 * is 4-way set-associative, least recently used out, by the key's xxHash
 * with a seed of the process's (a client cannot aim its keys at another's
 * set).  A set's 4 entries (the key's entry in the table, 16 more bits of
 * the hash, where its bytes are) share a cache line, in use order, ahead
 * of the keys' bytes, which stay where they were written: a lookup reads
 * one line and the key it matches, a miss writes one key.
 */

#ifndef FG_KEYS_TABLE_H
#define FG_KEYS_TABLE_H

#include <stddef.h>
#include <stdint.h>


/* the longest key a cache entry holds; longer ones are hashed each time */
#define FG_KEYS_CACHED       120

/*
 * A worker's cache: 2 entries a key, in sets of 4, from 64 to 65,536
 * entries (8 MB, whose pages are touched only as keys are cached); a set
 * is 512 bytes
 */
#define FG_KEYS_CACHE_WAYS   4
#define FG_KEYS_CACHE_MIN    64
#define FG_KEYS_CACHE_MAX    65536

/* the most keys a table takes: an index plus one fits 32 bits */
#define FG_KEYS_TABLE_MAX    ((size_t) 1 << 30)


typedef struct {
    uint32_t              *slots;    /* an entry's index + 1; 0: empty */
    uint32_t               mask;
    const unsigned char   *entries;  /* the caller's, digest first */
    size_t                 stride;   /* bytes from an entry to the next */
} fg_keys_table_t;

typedef struct {
    uint32_t               index;    /* the entry's index + 1; 0: empty */
    uint16_t               tag;      /* the hash's top 16 bits */
    uint8_t                len;
    uint8_t                at;       /* its bytes: the set's key[at] */
} fg_keys_cache_way_t;

/* 512 bytes */
typedef struct {
    fg_keys_cache_way_t    way[FG_KEYS_CACHE_WAYS]; /* most recent first */
    unsigned char          key[FG_KEYS_CACHE_WAYS][FG_KEYS_CACHED];
} fg_keys_cache_set_t;

typedef struct {
    fg_keys_cache_set_t   *set;
    uint32_t               mask;     /* sets - 1 */
    uint64_t               seed;
} fg_keys_cache_t;


/* the slots a table of n entries takes: a power of two, at least 2n */
size_t fg_keys_table_slots(size_t n);

/*
 * Builds the table over n entries, stride bytes apart, into slots (the
 * caller's, fg_keys_table_slots(n) of them, zeroed).  0; or -1 when two
 * entries have one digest: *dup is the later's index, *first the
 * earlier's.
 */
int fg_keys_table_build(fg_keys_table_t *t, uint32_t *slots,
    const void *entries, size_t n, size_t stride, size_t *dup,
    size_t *first);

/* the index of the entry of this digest, or -1 */
int64_t fg_keys_table_find(const fg_keys_table_t *t,
    const unsigned char *digest);

/*
 * A cache for a table of n keys: twice as many entries, a power of two
 * from FG_KEYS_CACHE_MIN to FG_KEYS_CACHE_MAX.  0 or -1 (memory).
 */
int fg_keys_cache_init(fg_keys_cache_t *c, size_t n);
void fg_keys_cache_free(fg_keys_cache_t *c);

/* the set of a key, and its tag */
fg_keys_cache_set_t *fg_keys_cache_set(const fg_keys_cache_t *c,
    const unsigned char *key, size_t len, uint16_t *tag);

/*
 * The index of a key's entry (its SHA-256 in the table), or -1 when the
 * table has none or SHA-256 is not available.  The cache (NULL: none) is
 * asked first and remembers what the table found.  Digests and cached keys
 * are compared in constant time (CRYPTO_memcmp()).
 */
int64_t fg_keys_lookup(const fg_keys_table_t *t, fg_keys_cache_t *c,
    const unsigned char *key, size_t len);

/* the SHA-256 of a key; 0 or -1 */
int fg_keys_sha256(const unsigned char *key, size_t len,
    unsigned char *digest);


#endif /* FG_KEYS_TABLE_H */
