
/*
 * fairgate: the tokens a grammar allows next.
 *
 * The vocabulary's trie is walked in its depth-first order with the
 * state after each node's bytes; a node whose bytes no stack can take
 * is skipped with all the tokens under it, so the walk costs the trie's
 * nodes that the grammar allows, not the vocabulary's bytes.  A token is
 * allowed where the walk reaches its node: its bytes may span several
 * elements of the grammar, and end inside a character when some class
 * holds a character that they begin.  EOG tokens are allowed where the
 * grammar is complete.
 *
 * Masks are kept by state in a small cache (least recently used goes):
 * the inside of a string or a run of digits is one state step after
 * step, and costs a copy.
 */


#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fg_gram_int.h"
#include "fg_hash.h"


static int64_t fg_gram_walk(fg_gram_match_t *m, uint32_t *bits);
static fg_gram_centry_t *fg_gram_cache_find(fg_gram_match_t *m,
    uint64_t *hash);
static void fg_gram_cache_put(fg_gram_match_t *m, uint64_t hash,
    const uint32_t *bits, int64_t n);


int64_t
fg_gram_mask(fg_gram_match_t *m, uint32_t *bits)
{
    size_t             words;
    int64_t            n;
    uint64_t           hash;
    fg_gram_centry_t  *e;

    words = (m->v->n_vocab + 31) / 32;
    memset(bits, 0, words * sizeof(uint32_t));

    if (m->failed || m->done) {
        return 0;
    }

    e = fg_gram_cache_find(m, &hash);

    if (e != NULL) {
        memcpy(bits, e->bits, words * sizeof(uint32_t));
        e->used = ++m->clock;
        return e->n_allowed;
    }

    n = fg_gram_walk(m, bits);

    if (n > 0) {
        fg_gram_cache_put(m, hash, bits, n);
    }

    return n;
}


int64_t
fg_gram_bias(fg_gram_match_t *m, float *logits)
{
    int64_t   n;
    uint32_t  i;

    if (m->tmp == NULL) {
        m->tmp = malloc((m->v->n_vocab + 31) / 32 * sizeof(uint32_t));

        if (m->tmp == NULL) {
            return -1;
        }
    }

    n = fg_gram_mask(m, m->tmp);

    for (i = 0; i < m->v->n_vocab; i++) {
        if (!((m->tmp[i >> 5] >> (i & 31)) & 1)) {
            logits[i] = -INFINITY;
        }
    }

    return n;
}


static int64_t
fg_gram_walk(fg_gram_match_t *m, uint32_t *bits)
{
    int                     rc;
    int64_t                 n;
    uint32_t                i, t, base;
    fg_gram_level_t        *lv, *up;
    const fg_gram_tnode_t  *node;
    const fg_gram_vocab_t  *v;

    v = m->v;
    n = 0;
    base = m->n_nodes;
    m->buf.n = 0;

    for (i = 0; i < m->cur.n; i++) {
        if (fg_gram_vec_push(&m->buf, m->cur.a[i]) != 0) {
            return -1;
        }
    }

    lv = m->levels;
    lv[0].first = 0;
    lv[0].n = m->cur.n;
    lv[0].cp = m->cp;
    lv[0].left = m->left;
    lv[0].keep_nodes = base;
    lv[0].keep_buf = m->buf.n;
    lv[0].n_memo = 0;

    if (fg_gram_complete(m)) {
        for (i = 0; i < v->n_eog; i++) {
            bits[v->eog[i] >> 5] |= 1u << (v->eog[i] & 31);
            n++;
        }
    }

    i = 0;

    while (i < v->n_nodes) {
        node = &v->nodes[i];
        up = &lv[node->depth - 1];
        m->n_nodes = up->keep_nodes;
        m->buf.n = up->keep_buf;

        /* a path the bounds refuse (-1) is one the grammar refuses */
        rc = fg_gram_step(m, up, node->byte, &lv[node->depth]);

        if (rc <= 0) {
            i = node->skip;
            continue;
        }

        for (t = node->tok; t != FG_GRAM_NIL; t = v->tok_next[t]) {
            if (!v->is_eog[t]) {
                bits[t >> 5] |= 1u << (t & 31);
                n++;
            }
        }

        i++;
    }

    m->n_nodes = base;
    m->buf.n = 0;

    return n;
}


/* the state's key: each stack's frames top down, then the character
 * begun */
static int
fg_gram_cache_key(fg_gram_match_t *m)
{
    uint32_t  i, h;

    m->key.n = 0;

    for (i = 0; i < m->cur.n; i++) {
        for (h = m->cur.a[i]; h != FG_GRAM_NIL; h = m->nodes[h].up) {
            if (fg_gram_vec_push(&m->key, m->nodes[h].pos) != 0) {
                return -1;
            }
        }

        if (fg_gram_vec_push(&m->key, FG_GRAM_NIL) != 0) {
            return -1;
        }
    }

    if (fg_gram_vec_push(&m->key, m->cp) != 0
        || fg_gram_vec_push(&m->key, m->left) != 0)
    {
        return -1;
    }

    return 0;
}


static fg_gram_centry_t *
fg_gram_cache_find(fg_gram_match_t *m, uint64_t *hash)
{
    uint32_t           i;
    fg_gram_centry_t  *e;

    *hash = 0;

    if (m->n_cache == 0 || fg_gram_cache_key(m) != 0) {
        m->key.n = 0;
        return NULL;
    }

    *hash = XXH3_64bits(m->key.a, m->key.n * sizeof(uint32_t));

    for (i = 0; i < m->n_cache; i++) {
        e = &m->cache[i];

        if (e->used && e->hash == *hash && e->key_len == m->key.n
            && memcmp(e->key, m->key.a, m->key.n * sizeof(uint32_t)) == 0)
        {
            return e;
        }
    }

    return NULL;
}


static void
fg_gram_cache_put(fg_gram_match_t *m, uint64_t hash, const uint32_t *bits,
    int64_t n)
{
    size_t             words;
    uint32_t           i, *key;
    fg_gram_centry_t  *e;

    if (m->n_cache == 0 || m->key.n == 0) {
        return;
    }

    e = &m->cache[0];

    for (i = 1; i < m->n_cache; i++) {
        if (m->cache[i].used < e->used) {
            e = &m->cache[i];
        }
    }

    words = (m->v->n_vocab + 31) / 32;

    if (e->bits == NULL) {
        e->bits = malloc(words * sizeof(uint32_t));

        if (e->bits == NULL) {
            return;
        }
    }

    key = realloc(e->key, m->key.n * sizeof(uint32_t));

    if (key == NULL) {
        e->used = 0;
        return;
    }

    e->key = key;
    memcpy(e->key, m->key.a, m->key.n * sizeof(uint32_t));
    e->key_len = m->key.n;
    memcpy(e->bits, bits, words * sizeof(uint32_t));
    e->hash = hash;
    e->n_allowed = n;
    e->used = ++m->clock;
}
