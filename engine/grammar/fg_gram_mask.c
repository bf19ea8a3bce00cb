
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


#define FG_GRAM_DEAD   0xfffffffeu
#define FG_GRAM_UNSET  0xfdfdfdfdu             /* memset() with 0xfd */


static int64_t fg_gram_walk(fg_gram_match_t *m, uint32_t *bits);
static int fg_gram_wstep(fg_gram_match_t *m, const fg_gram_wlevel_t *in,
    uint8_t byte, fg_gram_wlevel_t *out);
static uint32_t fg_gram_successor(fg_gram_match_t *m, uint32_t from,
    uint64_t sig, uint32_t cp);
static uint32_t fg_gram_state(fg_gram_match_t *m, uint32_t first,
    uint32_t n, uint64_t hash);
static uint64_t fg_gram_region_hash(const fg_gram_match_t *m,
    uint32_t first, uint32_t n);
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
        e->used = ++m->cache->clock;
        return e->n_allowed;
    }

    n = fg_gram_walk(m, bits);

    if (n < 0) {
        /* out of memory, or more states than a walk may make */
        memset(bits, 0, words * sizeof(uint32_t));
        m->failed = 1;
        return -1;
    }

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
    uint32_t                i, t, base, id;
    fg_gram_wlevel_t       *lv, *up;
    const fg_gram_tnode_t  *node;
    const fg_gram_vocab_t  *v;

    v = m->v;
    n = 0;
    base = m->n_nodes;
    m->buf.n = 0;
    m->n_states = 0;
    m->work = 0;
    memset(m->buckets, 0xff, FG_GRAM_BUCKETS * sizeof(uint32_t));

    for (i = 0; i < m->cur.n; i++) {
        if (fg_gram_buf_push(m, m->cur.a[i]) != 0) {
            return -1;
        }
    }

    if (fg_gram_state(m, 0, m->cur.n, 0) == FG_GRAM_NIL) {
        return -1;
    }

    lv = m->wlv;
    lv[0].st = 0;
    lv[0].cp = m->cp;
    lv[0].left = m->left;

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

        /* an ASCII byte after a whole character: the state's table */
        if (node->byte < 0x80 && up->left == 0
            && (id = m->trans[up->st * 128 + node->byte]) != FG_GRAM_UNSET)
        {
            lv[node->depth].st = id;
            lv[node->depth].cp = 0;
            lv[node->depth].left = 0;
            rc = id != FG_GRAM_NIL;

        } else {
            rc = fg_gram_wstep(m, up, node->byte, &lv[node->depth]);
        }

        if (rc < 0) {
            n = -1;
            break;
        }

        if (rc == 0) {
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


/*
 * One byte of the walk.  States are kept whole for the walk and made
 * once each: a successor is found by the set of stacks that took the
 * character (the state's memo), else made and looked up among the
 * states made (by its frames), so that the inside of a string, reached by
 * every token of letters, is one state whose successors are known after
 * its first letters.  1: the byte is taken; 0: not; -1: too many states.
 */
static int
fg_gram_wstep(fg_gram_match_t *m, const fg_gram_wlevel_t *in, uint8_t byte,
    fg_gram_wlevel_t *out)
{
    int               rc;
    uint32_t          k, id, cp;
    uint64_t          sig;
    fg_gram_level_t   a, b, *st;

    a.cp = in->cp;
    a.left = in->left;
    rc = fg_gram_utf8(&a, byte, &b);

    if (rc < 0) {
        return 0;
    }

    st = &m->states[in->st];
    out->st = in->st;
    out->cp = b.cp;
    out->left = b.left;

    if (rc == 0) {
        if (st->high == 0) {
            fg_gram_high(m, st);
        }

        if (st->high == 1) {
            return st->high_sig != 0;
        }

        a = *st;
        a.cp = b.cp;
        a.left = b.left;

        return fg_gram_may(m, &a);
    }

    cp = b.cp;
    out->cp = 0;

    if (m->work > FG_GRAM_MAX_WORK) {
        return -1;
    }

    if (cp >= 0x80 && st->high == 1 && st->high_succ != FG_GRAM_UNSET) {
        out->st = st->high_succ;
        return out->st != FG_GRAM_NIL;
    }

    sig = fg_gram_sig(m, st, cp);
    id = FG_GRAM_NIL;

    for (k = 0; sig != 0 && k < st->n_memo; k++) {
        if (st->memo[k].sig == sig) {
            id = st->memo[k].first;
            break;
        }
    }

    if (sig != 0 && k == st->n_memo) {
        id = fg_gram_successor(m, in->st, sig, cp);

        if (id == FG_GRAM_DEAD) {
            return -1;
        }

        st = &m->states[in->st];

        if (st->n <= 64 && st->n_memo < FG_GRAM_MEMO) {
            st->memo[st->n_memo].sig = sig;
            st->memo[st->n_memo++].first = id;
        }
    }

    if (cp < 0x80) {
        m->trans[in->st * 128 + cp] = id;

    } else if (st->high == 1) {
        st->high_succ = id;
    }

    out->st = id;

    return id != FG_GRAM_NIL;
}


/* the state after the stacks of sig took cp: its id, NIL when no stack
 * goes on (or a bound refused them), FG_GRAM_DEAD when the walk has too
 * many states */
static uint32_t
fg_gram_successor(fg_gram_match_t *m, uint32_t from, uint64_t sig,
    uint32_t cp)
{
    uint32_t         first, mark, n, id, i;
    uint64_t         hash;
    fg_gram_level_t  st;

    first = m->buf.n;
    mark = m->n_nodes;
    st = m->states[from];

    if (fg_gram_advance(m, &st, sig, cp) != 0 || m->buf.n == first) {
        m->buf.n = first;
        m->n_nodes = mark;
        return m->work > FG_GRAM_MAX_WORK ? FG_GRAM_DEAD : FG_GRAM_NIL;
    }

    n = m->buf.n - first;
    hash = fg_gram_region_hash(m, first, n);

    for (id = m->buckets[hash % FG_GRAM_BUCKETS]; id != FG_GRAM_NIL;
         id = m->st_next[id])
    {
        if (m->st_hash[id] != hash || m->states[id].n != n) {
            continue;
        }

        for (i = 0; i < n; i++) {
            if (!fg_gram_same(m, m->buf.a[first + i],
                              m->buf.a[m->states[id].first + i]))
            {
                break;
            }
        }

        if (i == n) {
            m->buf.n = first;
            m->n_nodes = mark;
            return id;
        }
    }

    return fg_gram_state(m, first, n, hash);
}


/* a new state of the walk: the stacks at first; NIL (or FG_GRAM_DEAD
 * past the bound) when it cannot be kept */
static uint32_t
fg_gram_state(fg_gram_match_t *m, uint32_t first, uint32_t n, uint64_t hash)
{
    uint32_t          cap, id, *next, *trans;
    uint64_t         *hashes;
    fg_gram_level_t  *states;

    if (m->n_states == m->cap_states) {
        if (m->cap_states >= FG_GRAM_MAX_STATES) {
            return FG_GRAM_DEAD;
        }

        cap = m->cap_states ? 2 * m->cap_states : 64;
        states = realloc(m->states, cap * sizeof(fg_gram_level_t));
        m->states = states ? states : m->states;
        hashes = realloc(m->st_hash, cap * sizeof(uint64_t));
        m->st_hash = hashes ? hashes : m->st_hash;
        next = realloc(m->st_next, cap * sizeof(uint32_t));
        m->st_next = next ? next : m->st_next;
        trans = realloc(m->trans, (size_t) cap * 128 * sizeof(uint32_t));
        m->trans = trans ? trans : m->trans;

        if (states == NULL || hashes == NULL || next == NULL
            || trans == NULL)
        {
            return FG_GRAM_DEAD;
        }

        m->cap_states = cap;
    }

    id = m->n_states++;
    memset(&m->states[id], 0, sizeof(fg_gram_level_t));
    m->states[id].first = first;
    m->states[id].n = n;
    m->states[id].high_succ = FG_GRAM_UNSET;
    memset(&m->trans[(size_t) id * 128], 0xfd, 128 * sizeof(uint32_t));
    m->st_hash[id] = hash;
    m->st_next[id] = m->buckets[hash % FG_GRAM_BUCKETS];
    m->buckets[hash % FG_GRAM_BUCKETS] = id;

    return id;
}


/* a hash of the stacks' frames, in their order */
static uint64_t
fg_gram_region_hash(const fg_gram_match_t *m, uint32_t first, uint32_t n)
{
    uint32_t  i, h;
    uint64_t  x;

    x = 0xcbf29ce484222325ull;

    for (i = 0; i < n; i++) {
        for (h = m->buf.a[first + i]; h != FG_GRAM_NIL; h = m->nodes[h].up) {
            x = (x ^ m->nodes[h].pos) * 0x100000001b3ull;
        }

        x = (x ^ 0xffffffffu) * 0x100000001b3ull;
    }

    return x;
}


/*
 * An element as the cache's keys name it.  In a chain of x{m,n}'s
 * optional repetitions a rule is "up to j more x": a token of at most
 * max_len bytes cannot tell j from max_len + 1 when j is more (each x
 * that takes bytes takes one at least), so those rules are named as that
 * one, and a count of digits or of a label's characters is one state to
 * the cache rather than a new one each character.
 */
static uint32_t
fg_gram_key_pos(const fg_gram_match_t *m, uint32_t pos)
{
    uint32_t          r, j, lim, to;
    const fg_gram_t  *g;

    g = m->g;
    r = g->rule_of[pos];
    j = g->chain[r];
    lim = m->v->max_len + 1;

    if (j <= lim) {
        return pos;
    }

    to = r - (j - lim);

    return g->alts[g->rule_alt[to]] + (pos - g->alts[g->rule_alt[r]]);
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
            if (fg_gram_vec_push(&m->key, fg_gram_key_pos(m,
                                                          m->nodes[h].pos))
                != 0)
            {
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

    if (m->cache == NULL || fg_gram_cache_key(m) != 0) {
        m->key.n = 0;
        return NULL;
    }

    *hash = XXH3_64bits(m->key.a, m->key.n * sizeof(uint32_t));

    for (i = 0; i < m->cache->n; i++) {
        e = &m->cache->e[i];

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

    if (m->cache == NULL || m->key.n == 0) {
        return;
    }

    e = &m->cache->e[0];

    for (i = 1; i < m->cache->n; i++) {
        if (m->cache->e[i].used < e->used) {
            e = &m->cache->e[i];
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
    e->used = ++m->cache->clock;
}

