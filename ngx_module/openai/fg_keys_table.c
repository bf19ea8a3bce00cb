
/*
 * fairgate: a keys file's keys found by their SHA-256 (fg_keys_table.h).
 *
 * A digest's first 4 bytes pick its slot: SHA-256 spreads them evenly,
 * and the keys are the operator's, so no client can lengthen a probe
 * sequence; at most half full, a sequence is short.
 */

#include <stdlib.h>
#include <string.h>

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

    for (size = FG_KEYS_CACHE_MIN; size < n && size < FG_KEYS_CACHE_MAX;
         size <<= 1)
    { /* void */ }

    /* calloc()'s pages are the kernel's zeroes until a key is cached */

    c->entry = calloc(size, sizeof(fg_keys_cache_entry_t));
    c->mask = (uint32_t) (size - 1);

    return c->entry ? 0 : -1;
}


void
fg_keys_cache_free(fg_keys_cache_t *c)
{
    free(c->entry);
    c->entry = NULL;
}


int64_t
fg_keys_lookup(const fg_keys_table_t *t, fg_keys_cache_t *c,
    const unsigned char *key, size_t len)
{
    int64_t                 i;
    unsigned char           md[32];
    fg_keys_cache_entry_t  *e;

    e = NULL;

    if (c && c->entry && len <= FG_KEYS_CACHED) {
        e = &c->entry[XXH3_64bits(key, len) & c->mask];

        if (e->index && e->len == len
            && CRYPTO_memcmp(e->data, key, len) == 0)
        {
            return (int64_t) e->index - 1;
        }
    }

    if (fg_keys_sha256(key, len, md) != 0) {
        return -1;
    }

    i = fg_keys_table_find(t, md);

    if (i >= 0 && e) {
        e->index = (uint32_t) (i + 1);
        e->len = (uint32_t) len;
        memcpy(e->data, key, len);
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
