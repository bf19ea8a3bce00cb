
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
 * requests cost a hash of the key and a compare instead of a SHA-256: it is
 * direct-mapped by the key's xxHash, an entry is 128 bytes, and a key that
 * lands on a taken entry replaces it.
 */

#ifndef FG_KEYS_TABLE_H
#define FG_KEYS_TABLE_H

#include <stddef.h>
#include <stdint.h>


/* the longest key a cache entry holds; longer ones are hashed each time */
#define FG_KEYS_CACHED       120

/* the most entries a worker's cache has (2 MB of 128-byte entries) */
#define FG_KEYS_CACHE_MAX    16384
#define FG_KEYS_CACHE_MIN    64

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
    uint32_t               len;
    unsigned char          data[FG_KEYS_CACHED];
} fg_keys_cache_entry_t;

typedef struct {
    fg_keys_cache_entry_t *entry;
    uint32_t               mask;
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
 * A cache of entries for a table of n keys: as many as the keys, a power
 * of two from FG_KEYS_CACHE_MIN to FG_KEYS_CACHE_MAX.  0 or -1 (memory).
 */
int fg_keys_cache_init(fg_keys_cache_t *c, size_t n);
void fg_keys_cache_free(fg_keys_cache_t *c);

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
