
/*
 * fairgate: a keys file's keys found by their SHA-256 (fg_keys_table.h).
 *
 * A digest's first 4 bytes pick its slot: SHA-256 spreads them evenly,
 * and the keys are the operator's, so no client can lengthen a probe
 * sequence; at most half full, a sequence is short.
 */

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "fg_keys_table.h"
#include "fg_hash.h"


static uint32_t fg_keys_table_slot(const unsigned char *digest);


size_t
fg_keys_table_slots(size_t n)
{
    size_t  size;

    for (size = 4; size < 2 * n; size <<= 1) { /* void */ }

    return size;
}


int
fg_keys_table_build(fg_keys_table_t *t, uint32_t *slots, const void *entries,
    size_t n, size_t stride, size_t *dup, size_t *first)
{
    size_t                i;
    uint32_t              slot, j;
    const unsigned char  *digest;

    t->slots = slots;
    t->mask = (uint32_t) (fg_keys_table_slots(n) - 1);
    t->entries = entries;
    t->stride = stride;

    if (n > FG_KEYS_TABLE_MAX) {
        return -1;
    }

    for (i = 0; i < n; i++) {
        digest = t->entries + i * stride;
        slot = fg_keys_table_slot(digest) & t->mask;

        for (j = slots[slot]; j != 0; j = slots[slot]) {

            if (memcmp(t->entries + (size_t) (j - 1) * stride, digest, 32)
                == 0)
            {
                *dup = i;
                *first = j - 1;
                return -1;
            }

            slot = (slot + 1) & t->mask;
        }

        slots[slot] = (uint32_t) (i + 1);
    }

    return 0;
}


int64_t
fg_keys_table_find(const fg_keys_table_t *t, const unsigned char *digest)
{
    uint32_t  slot, j;

    if (t->slots == NULL) {
        return -1;
    }

    slot = fg_keys_table_slot(digest) & t->mask;

    for (j = t->slots[slot]; j != 0; j = t->slots[slot]) {

        if (CRYPTO_memcmp(t->entries + (size_t) (j - 1) * t->stride, digest,
                          32)
            == 0)
        {
            return (int64_t) j - 1;
        }

        slot = (slot + 1) & t->mask;
    }

    return -1;
}


static uint32_t
fg_keys_table_slot(const unsigned char *digest)
{
    return (uint32_t) digest[0] << 24 | (uint32_t) digest[1] << 16
           | (uint32_t) digest[2] << 8 | digest[3];
}


int
fg_keys_cache_init(fg_keys_cache_t *c, size_t n)
{
    size_t  size;

    for (size = FG_KEYS_CACHE_MIN; size < 2 * n && size < FG_KEYS_CACHE_MAX;
         size <<= 1)
    { /* void */ }

    size /= FG_KEYS_CACHE_WAYS;

    /* calloc()'s pages are the kernel's zeroes until a key is cached */

    c->set = calloc(size, sizeof(fg_keys_cache_set_t));
    c->mask = (uint32_t) (size - 1);

    if (getrandom(&c->seed, sizeof(c->seed), GRND_NONBLOCK)
        != (ssize_t) sizeof(c->seed))
    {
        c->seed = (uint64_t) (uintptr_t) c->set ^ (uint64_t) time(NULL);
    }

    return c->set ? 0 : -1;
}


void
fg_keys_cache_free(fg_keys_cache_t *c)
{
    free(c->set);
    c->set = NULL;
}


fg_keys_cache_set_t *
fg_keys_cache_set(const fg_keys_cache_t *c, const unsigned char *key,
    size_t len, uint16_t *tag)
{
    uint64_t  h;

    h = XXH3_64bits_withSeed(key, len, c->seed);
    *tag = (uint16_t) (h >> 48);

    return &c->set[h & c->mask];
}


int64_t
fg_keys_lookup(const fg_keys_table_t *t, fg_keys_cache_t *c,
    const unsigned char *key, size_t len)
{
    size_t                w;
    int64_t               i;
    uint16_t              tag;
    unsigned char         md[32];
    fg_keys_cache_way_t   use;
    fg_keys_cache_set_t  *set;

    set = NULL;
    tag = 0;
    w = 0;

    if (c && c->set && len <= FG_KEYS_CACHED) {
        set = fg_keys_cache_set(c, key, len, &tag);

        for (w = 0; w < FG_KEYS_CACHE_WAYS && set->way[w].index; w++) {

            if (set->way[w].tag != tag || set->way[w].len != len
                || CRYPTO_memcmp(set->key[set->way[w].at], key, len) != 0)
            {
                continue;
            }

            /* the set's most recently used first */

            use = set->way[w];
            memmove(&set->way[1], &set->way[0],
                    w * sizeof(fg_keys_cache_way_t));
            set->way[0] = use;

            return (int64_t) use.index - 1;
        }
    }

    if (fg_keys_sha256(key, len, md) != 0) {
        return -1;
    }

    i = fg_keys_table_find(t, md);

    if (i >= 0 && set) {
        /* the least recently used out, its bytes' place taken */

        use = set->way[FG_KEYS_CACHE_WAYS - 1];

        if (use.index == 0) {
            /* a set fills in order: the first w places are taken */
            use.at = (uint8_t) w;
        }

        memmove(&set->way[1], &set->way[0],
                (FG_KEYS_CACHE_WAYS - 1) * sizeof(fg_keys_cache_way_t));

        use.index = (uint32_t) (i + 1);
        use.tag = tag;
        use.len = (uint8_t) len;
        memcpy(set->key[use.at], key, len);
        set->way[0] = use;
    }

    return i;
}


/*
 * The digest's algorithm and context are fetched once a process (a
 * worker is one thread): OpenSSL 3 looks the algorithm up by name on every
 * EVP_Digest() otherwise, which costs more than the hashing of a key.
 */

static EVP_MD      *fg_keys_md;
static EVP_MD_CTX  *fg_keys_md_ctx;


int
fg_keys_sha256(const unsigned char *key, size_t len, unsigned char *digest)
{
    unsigned int  n;

    if (fg_keys_md_ctx == NULL) {
        fg_keys_md = EVP_MD_fetch(NULL, "SHA256", NULL);
        fg_keys_md_ctx = EVP_MD_CTX_new();

        if (fg_keys_md == NULL || fg_keys_md_ctx == NULL) {
            EVP_MD_free(fg_keys_md);
            EVP_MD_CTX_free(fg_keys_md_ctx);
            fg_keys_md = NULL;
            fg_keys_md_ctx = NULL;
            return -1;
        }
    }

    if (EVP_DigestInit_ex2(fg_keys_md_ctx, fg_keys_md, NULL) != 1
        || EVP_DigestUpdate(fg_keys_md_ctx, key, len) != 1
        || EVP_DigestFinal_ex(fg_keys_md_ctx, digest, &n) != 1
        || n != 32)
    {
        return -1;
    }

    return 0;
}
