
/*
 * fairgate: a sequence's place in its grammar, as a pushdown automaton.
 *
 * A state is a set of stacks.  A stack's top frame is a character class
 * to match next; the frames below it are where to go on once the rule
 * above is done.  Frames are shared: a stack is its top frame's index,
 * and each frame names the one below it (NIL: the bottom), so that a step
 * copies nothing but the frames it changes.  A character that the top's
 * class holds moves the stack on: to the next element of the sequence, or
 * down to the frame below when the sequence is done; a reference to a
 * rule pushes each of its alternatives, a reference last in its sequence
 * without a frame to come back to (so x* keeps its depth).  A stack that
 * empties is the grammar complete.  UTF-8 is decoded on the way: a
 * character's bytes wait for its last one, and meanwhile a state holds
 * only if some class holds a character that they may begin.
 *
 * Bounds: a stack deeper than FG_GRAM_MAX_DEPTH is dropped (a grammar's
 * nesting deeper than that is not allowed), and a state of more than
 * FG_GRAM_MAX_STACKS stacks fails the step (an ambiguous grammar's
 * stacks would grow without end).
 */


#include <stdlib.h>
#include <string.h>

#include "fg_gram_int.h"


#define FG_GRAM_DEEP        0xfffffffeu     /* a frame too deep: dropped */
#define FG_GRAM_MAX_NODES   (1u << 24)
#define FG_GRAM_MAX_EXPAND  (4 * FG_GRAM_MAX_NEST + 1024)


static int fg_gram_expand(fg_gram_match_t *m, uint32_t pos, uint32_t up,
    uint32_t from, uint32_t guard);
static int fg_gram_memo(fg_gram_match_t *m, fg_gram_level_t *in,
    fg_gram_level_t *out, uint64_t sig);


fg_gram_match_t *
fg_gram_match_new(const fg_gram_t *g, const fg_gram_vocab_t *v,
    uint32_t cache)
{
    fg_gram_cache_t  *c;
    fg_gram_match_t  *m;

    c = NULL;

    if (cache > 0) {
        c = fg_gram_cache_new(g, v, cache);

        if (c == NULL) {
            return NULL;
        }
    }

    m = fg_gram_match_shared(g, v, c);

    if (m == NULL) {
        fg_gram_cache_free(c);
        return NULL;
    }

    m->own_cache = 1;

    return m;
}


fg_gram_match_t *
fg_gram_match_shared(const fg_gram_t *g, const fg_gram_vocab_t *v,
    fg_gram_cache_t *c)
{
    fg_gram_match_t  *m;

    if (c != NULL && (c->g != g || c->v != v)) {
        return NULL;
    }

    m = calloc(1, sizeof(fg_gram_match_t));

    if (m == NULL) {
        return NULL;
    }

    m->g = g;
    m->v = v;
    m->cache = c;
    m->compact_at = 4096;
    m->levels = calloc(v->max_len + 2, sizeof(fg_gram_level_t));
    m->wlv = calloc(v->max_len + 2, sizeof(fg_gram_wlevel_t));
    m->buckets = malloc(FG_GRAM_BUCKETS * sizeof(uint32_t));

    if (m->levels == NULL || m->wlv == NULL || m->buckets == NULL
        || fg_gram_start(m) != 0)
    {
        fg_gram_match_free(m);
        return NULL;
    }

    return m;
}


void
fg_gram_match_free(fg_gram_match_t *m)
{
    if (m == NULL) {
        return;
    }

    if (m->own_cache) {
        fg_gram_cache_free(m->cache);
    }

    free(m->levels);
    free(m->wlv);
    free(m->buckets);
    free(m->states);
    free(m->st_hash);
    free(m->st_next);
    free(m->trans);
    free(m->nodes);
    free(m->buf.a);
    free(m->bcls);
    free(m->cur.a);
    free(m->key.a);
    free(m->remap);
    free(m->tmp);
    free(m);
}


fg_gram_cache_t *
fg_gram_cache_new(const fg_gram_t *g, const fg_gram_vocab_t *v,
    uint32_t entries)
{
    fg_gram_cache_t  *c;

    c = calloc(1, sizeof(fg_gram_cache_t));

    if (c == NULL) {
        return NULL;
    }

    c->g = g;
    c->v = v;
    c->n = entries > 0 ? entries : 1;
    c->e = calloc(c->n, sizeof(fg_gram_centry_t));

    if (c->e == NULL) {
        free(c);
        return NULL;
    }

    return c;
}


void
fg_gram_cache_free(fg_gram_cache_t *c)
{
    uint32_t  i;

    if (c == NULL) {
        return;
    }

    for (i = 0; i < c->n; i++) {
        free(c->e[i].key);
        free(c->e[i].bits);
    }

    free(c->e);
    free(c);
}


/* a frame pos over up: its index, FG_GRAM_DEEP, or NIL without memory */
static uint32_t
fg_gram_node(fg_gram_match_t *m, uint32_t pos, uint32_t up)
{
    uint32_t         depth, cap;
    fg_gram_node_t  *nodes;

    depth = up == FG_GRAM_NIL ? 1 : m->nodes[up].depth + 1;

    if (depth > FG_GRAM_MAX_DEPTH) {
        return FG_GRAM_DEEP;
    }

    if (m->n_nodes == m->cap_nodes) {
        if (m->cap_nodes >= FG_GRAM_MAX_NODES) {
            return FG_GRAM_NIL;
        }

        cap = m->cap_nodes ? 2 * m->cap_nodes : 1024;
        nodes = realloc(m->nodes, cap * sizeof(fg_gram_node_t));

        if (nodes == NULL) {
            return FG_GRAM_NIL;
        }

        m->nodes = nodes;
        m->cap_nodes = cap;
    }

    m->nodes[m->n_nodes].pos = pos;
    m->nodes[m->n_nodes].up = up;
    m->nodes[m->n_nodes].depth = depth;

    return m->n_nodes++;
}


/* whether two stacks hold the same frames */
int
fg_gram_same(fg_gram_match_t *m, uint32_t a, uint32_t b)
{
    while (a != b) {
        m->work++;

        if (a == FG_GRAM_NIL || b == FG_GRAM_NIL
            || m->nodes[a].pos != m->nodes[b].pos)
        {
            return 0;
        }

        a = m->nodes[a].up;
        b = m->nodes[b].up;
    }

    return 1;
}


/* a stack with top pos over up (pos NIL: the empty stack) into the
 * state that begins at from, unless it is there already */
static int
fg_gram_emit(fg_gram_match_t *m, uint32_t pos, uint32_t up, uint32_t from)
{
    uint32_t  i, h;

    m->work += 1 + m->buf.n - from;

    for (i = from; i < m->buf.n; i++) {
        h = m->buf.a[i];

        if (pos == FG_GRAM_NIL ? h == FG_GRAM_NIL
            : h != FG_GRAM_NIL && m->nodes[h].pos == pos
              && fg_gram_same(m, m->nodes[h].up, up))
        {
            return 0;
        }
    }

    /* an ambiguous grammar's stacks, each compared with the others */
    if (m->buf.n - from >= FG_GRAM_MAX_STACKS || m->work > FG_GRAM_MAX_WORK)
    {
        return -1;
    }

    h = FG_GRAM_NIL;

    if (pos != FG_GRAM_NIL) {
        h = fg_gram_node(m, pos, up);

        if (h == FG_GRAM_DEEP) {
            return 0;
        }

        if (h == FG_GRAM_NIL) {
            return -1;
        }
    }

    return fg_gram_buf_push(m, h);
}


int
fg_gram_buf_push(fg_gram_match_t *m, uint32_t h)
{
    uint32_t  *a;

    if (fg_gram_vec_push(&m->buf, h) != 0) {
        return -1;
    }

    if (m->cap_bcls < m->buf.cap) {
        a = realloc(m->bcls, m->buf.cap * sizeof(uint32_t));

        if (a == NULL) {
            m->buf.n--;
            return -1;
        }

        m->bcls = a;
        m->cap_bcls = m->buf.cap;
    }

    m->bcls[m->buf.n - 1] = h == FG_GRAM_NIL
                            ? FG_GRAM_NIL
                            : fg_gram_val(m->g->elems[m->nodes[h].pos]);

    return 0;
}


/* the stacks that go on at element pos, over the frames up */
static int
fg_gram_expand(fg_gram_match_t *m, uint32_t pos, uint32_t up,
    uint32_t from, uint32_t guard)
{
    uint32_t          e, ret, cont, a, r;
    const fg_gram_t  *g;

    g = m->g;

    for ( ;; ) {
        e = g->elems[pos];

        if (fg_gram_type(e) == FG_GRAM_CLASS) {
            return fg_gram_emit(m, pos, up, from);
        }

        if (fg_gram_type(e) == FG_GRAM_REF) {
            break;
        }

        /* the end of a sequence: down to the frame below */
        if (up == FG_GRAM_NIL) {
            return fg_gram_emit(m, FG_GRAM_NIL, FG_GRAM_NIL, from);
        }

        pos = m->nodes[up].pos;
        up = m->nodes[up].up;
    }

    if (guard > FG_GRAM_MAX_EXPAND) {
        return -1;
    }

    ret = pos + 1;
    cont = up;

    if (fg_gram_type(g->elems[ret]) != FG_GRAM_END) {
        cont = fg_gram_node(m, ret, up);

        if (cont == FG_GRAM_DEEP) {
            return 0;
        }

        if (cont == FG_GRAM_NIL) {
            return -1;
        }
    }

    r = fg_gram_val(e);

    for (a = g->rule_alt[r]; a < g->rule_alt[r + 1]; a++) {
        if (fg_gram_expand(m, g->alts[a], cont, from, guard + 1) != 0) {
            return -1;
        }
    }

    return 0;
}


int
fg_gram_start(fg_gram_match_t *m)
{
    uint32_t          a, r;
    const fg_gram_t  *g;

    g = m->g;
    r = g->root;
    m->buf.n = 0;

    for (a = g->rule_alt[r]; a < g->rule_alt[r + 1]; a++) {
        if (fg_gram_expand(m, g->alts[a], FG_GRAM_NIL, 0, 0) != 0) {
            return -1;
        }
    }

    m->cur.n = 0;

    for (a = 0; a < m->buf.n; a++) {
        if (fg_gram_vec_push(&m->cur, m->buf.a[a]) != 0) {
            return -1;
        }
    }

    m->buf.n = 0;

    return m->cur.n ? 0 : -1;
}


/* whether some stack's class holds a character that the bytes so far
 * begin: code points cp << 6 * left up to the next prefix's */
int
fg_gram_may(const fg_gram_match_t *m, const fg_gram_level_t *l)
{
    uint32_t  i, h, lo, hi;

    lo = l->cp << (6 * l->left);
    hi = ((l->cp + 1) << (6 * l->left)) - 1;

    /* a lead byte E0 or F0 begins no character under U+0800 or U+10000;
     * F4 none over U+10FFFF (the second byte holds the rest to it) */
    lo = l->left == 2 && lo < 0x800 ? 0x800 : lo;
    lo = l->left == 3 && lo < 0x10000 ? 0x10000 : lo;
    hi = hi > 0x10ffff ? 0x10ffff : hi;

    for (i = l->first; i < l->first + l->n; i++) {
        h = m->buf.a[i];

        if (h != FG_GRAM_NIL
            && fg_gram_class_meets(m->g,
                                   fg_gram_val(m->g->elems[m->nodes[h].pos]),
                                   lo, hi))
        {
            return 1;
        }
    }

    return 0;
}


/* the next character's code point, or the bytes of one begun: 1 when
 * the byte ends a character, 0 when it begins or goes on with one, -1
 * when UTF-8 has no such byte there */
int
fg_gram_utf8(const fg_gram_level_t *in, uint8_t byte, fg_gram_level_t *out)
{
    out->left = 0;

    if (in->left > 0) {
        /* RFC 3629: no overlong form, no surrogate, nothing over
         * U+10FFFF, told by a 3-byte character's second byte (lead bits
         * E0, ED) or a 4-byte one's (F0, F4) */
        if ((byte & 0xc0) != 0x80
            || (in->left == 2 && in->cp == 0x0 && byte < 0xa0)
            || (in->left == 2 && in->cp == 0xd && byte > 0x9f)
            || (in->left == 3 && in->cp == 0x0 && byte < 0x90)
            || (in->left == 3 && in->cp == 0x4 && byte > 0x8f))
        {
            return -1;
        }

        out->cp = (in->cp << 6) | (byte & 0x3f);
        out->left = in->left - 1;

    } else if (byte < 0x80) {
        out->cp = byte;

    } else if (byte >= 0xc2 && byte <= 0xf4) {
        out->left = byte < 0xe0 ? 1 : byte < 0xf0 ? 2 : 3;
        out->cp = byte & (0x3f >> out->left);

    } else {
        return -1;
    }

    return out->left == 0;
}


/* which stacks of the level take a character over ASCII, when that set
 * is the same for all of them (JSON's classes: [^"\\], digits) */
void
fg_gram_high(const fg_gram_match_t *m, fg_gram_level_t *l)
{
    uint32_t  i, c;

    l->high = 1;
    l->high_sig = 0;

    for (i = 0; i < l->n; i++) {
        c = m->bcls[l->first + i];

        if (c == FG_GRAM_NIL) {
            continue;
        }

        if (m->g->classes[c].high == FG_GRAM_HIGH_SOME || l->n > 64) {
            l->high = 2;
            return;
        }

        if (m->g->classes[c].high == FG_GRAM_HIGH_ALL) {
            l->high_sig |= 1ull << i;
        }
    }
}


/* the set of the level's stacks that take cp (bit i: stack i; over 64
 * stacks, bit i % 64) */
uint64_t
fg_gram_sig(const fg_gram_match_t *m, const fg_gram_level_t *in,
    uint32_t cp)
{
    uint32_t                i, c;
    uint64_t                sig;
    const fg_gram_class_t  *cls;

    if (cp >= 128 && in->high == 1) {
        return in->high_sig;
    }

    sig = 0;
    cls = m->g->classes;
    ((fg_gram_match_t *) m)->work += in->n;

    for (i = 0; i < in->n; i++) {
        c = m->bcls[in->first + i];

        if (c == FG_GRAM_NIL) {
            continue;
        }

        if (cp < 128 ? (int) ((cls[c].ascii[cp >> 5] >> (cp & 31)) & 1)
            : fg_gram_class_has(m->g, c, cp))
        {
            sig |= 1ull << (i & 63);
        }
    }

    return sig;
}


int
fg_gram_step(fg_gram_match_t *m, fg_gram_level_t *in, uint8_t byte,
    fg_gram_level_t *out)
{
    int       rc;
    uint32_t  k, cp;
    uint64_t  sig;

    rc = fg_gram_utf8(in, byte, out);

    if (rc < 0) {
        return 0;
    }

    out->first = in->first;
    out->n = in->n;
    out->n_memo = 0;
    out->keep_nodes = m->n_nodes;
    out->keep_buf = m->buf.n;

    if (rc == 0) {
        /* a character begun: the same stacks, which may take it */
        if (in->high == 0) {
            fg_gram_high(m, in);
        }

        out->high = in->high;
        out->high_sig = in->high_sig;

        return in->high == 1 ? in->high_sig != 0 : fg_gram_may(m, out);
    }

    cp = out->cp;
    sig = fg_gram_sig(m, in, cp);
    out->cp = 0;
    out->high = 0;

    if (sig == 0) {
        return 0;
    }

    for (k = 0; in->n <= 64 && k < in->n_memo; k++) {
        if (in->memo[k].sig == sig) {
            out->first = in->memo[k].first;
            out->n = in->memo[k].n;
            return out->n > 0;
        }
    }

    out->first = m->buf.n;

    if (fg_gram_advance(m, in, sig, cp) != 0) {
        return -1;
    }

    return fg_gram_memo(m, in, out, sig);
}


int
fg_gram_advance(fg_gram_match_t *m, const fg_gram_level_t *in, uint64_t sig,
    uint32_t cp)
{
    uint32_t  i, h, from;

    from = m->buf.n;

    for (i = 0; i < in->n; i++) {
        h = m->buf.a[in->first + i];

        if (h != FG_GRAM_NIL && ((sig >> (i & 63)) & 1)
            && (in->n <= 64
                || fg_gram_class_has(m->g, m->bcls[in->first + i], cp))
            && fg_gram_expand(m, m->nodes[h].pos + 1, m->nodes[h].up,
                              from, 0) != 0)
        {
            return -1;
        }
    }

    return 0;
}


/* the successor made: kept as the level's memo while there is room */
static int
fg_gram_memo(fg_gram_match_t *m, fg_gram_level_t *in, fg_gram_level_t *out,
    uint64_t sig)
{
    fg_gram_memo_t  *memo;

    out->n = m->buf.n - out->first;
    out->keep_nodes = m->n_nodes;
    out->keep_buf = m->buf.n;

    if (in->n <= 64 && in->n_memo < FG_GRAM_MEMO) {
        memo = &in->memo[in->n_memo++];
        memo->sig = sig;
        memo->first = out->first;
        memo->n = out->n;
        in->keep_nodes = m->n_nodes;
        in->keep_buf = m->buf.n;
    }

    return out->n > 0;
}


int
fg_gram_accept_bytes(fg_gram_match_t *m, const char *s, size_t len)
{
    int              rc;
    size_t           i;
    uint32_t         saved;
    fg_gram_level_t  a, b;

    if (m->failed || m->done) {
        return -1;
    }

    saved = m->n_nodes;
    m->buf.n = 0;
    m->work = 0;

    for (i = 0; i < m->cur.n; i++) {
        if (fg_gram_buf_push(m, m->cur.a[i]) != 0) {
            return -1;
        }
    }

    a.first = 0;
    a.n = m->cur.n;
    a.cp = m->cp;
    a.left = m->left;
    a.n_memo = 0;
    a.high = 0;

    for (i = 0; i < len; i++) {
        rc = fg_gram_step(m, &a, (uint8_t) s[i], &b);

        if (rc <= 0) {
            m->n_nodes = saved;
            m->buf.n = 0;
            m->failed = m->work > FG_GRAM_MAX_WORK;
            return -1;
        }

        a = b;
    }

    m->cur.n = 0;

    for (i = 0; i < a.n; i++) {
        if (fg_gram_vec_push(&m->cur, m->buf.a[a.first + i]) != 0) {
            m->failed = 1;
            return -1;
        }
    }

    m->cp = a.cp;
    m->left = a.left;
    m->buf.n = 0;

    return fg_gram_compact(m);
}


int
fg_gram_accept(fg_gram_match_t *m, int32_t token)
{
    const fg_gram_vocab_t  *v;

    v = m->v;

    if (token < 0 || (uint32_t) token >= v->n_vocab || m->failed
        || m->done)
    {
        return -1;
    }

    if (v->is_eog[token]) {
        if (!fg_gram_complete(m)) {
            return -1;
        }

        m->done = 1;
        return 0;
    }

    if (v->lens[token] == 0) {
        return -1;
    }

    return fg_gram_accept_bytes(m, v->pieces[token], v->lens[token]);
}


int
fg_gram_complete(const fg_gram_match_t *m)
{
    uint32_t  i;

    if (m->failed || m->left > 0) {
        return 0;
    }

    for (i = 0; i < m->cur.n; i++) {
        if (m->cur.a[i] == FG_GRAM_NIL) {
            return 1;
        }
    }

    return 0;
}


int
fg_gram_done(const fg_gram_match_t *m)
{
    return m->done;
}


/* the frames no stack of the state holds are dropped: a frame's own
 * frame below was made before it, so one pass up the indices moves each
 * live frame down in place */
int
fg_gram_compact(fg_gram_match_t *m)
{
    uint32_t  i, h, k, *remap;

    if (m->n_nodes < m->compact_at) {
        return 0;
    }

    if (m->cap_remap < m->n_nodes) {
        remap = realloc(m->remap, m->cap_nodes * sizeof(uint32_t));

        if (remap == NULL) {
            m->failed = 1;
            return -1;
        }

        m->remap = remap;
        m->cap_remap = m->cap_nodes;
    }

    memset(m->remap, 0xff, m->n_nodes * sizeof(uint32_t));

    for (i = 0; i < m->cur.n; i++) {
        for (h = m->cur.a[i]; h != FG_GRAM_NIL && m->remap[h] != 0;
             h = m->nodes[h].up)
        {
            m->remap[h] = 0;
        }
    }

    k = 0;

    for (i = 0; i < m->n_nodes; i++) {
        if (m->remap[i] != 0) {
            continue;
        }

        m->nodes[k] = m->nodes[i];

        if (m->nodes[k].up != FG_GRAM_NIL) {
            m->nodes[k].up = m->remap[m->nodes[k].up];
        }

        m->remap[i] = k++;
    }

    for (i = 0; i < m->cur.n; i++) {
        if (m->cur.a[i] != FG_GRAM_NIL) {
            m->cur.a[i] = m->remap[m->cur.a[i]];
        }
    }

    m->n_nodes = k;
    m->compact_at = k * 4 > 4096 ? k * 4 : 4096;

    return 0;
}
