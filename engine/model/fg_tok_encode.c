
/*
 * fairgate: encoding: the special tokens written in the text, then each
 * fragment between them by the model's merges.
 *
 * Both models merge adjacent symbols through a min-heap of candidate pairs
 * (fg_tok_heap.h): a merge is taken when its pair is still there when it
 * reaches the top (a pair whose symbols changed meanwhile is stale and
 * dropped), and the merged symbol's new pairs go into the heap.  n symbols
 * cost O(n log n).  SentencePiece merges characters by the score of the
 * piece they make; byte-level BPE merges the bytes of each pre-tokenized
 * word by the rank of the pair in tokenizer.ggml.merges.
 */


#include <stdlib.h>


#include "fg_tok_heap.h"
#include "fg_tok_int.h"


typedef struct {
    int32_t      *ids;
    size_t        max;
    size_t        n;
} fg_tok_out_t;


typedef struct {
    int32_t       prev;
    int32_t       next;
    uint32_t      start;
    uint32_t      len;
    int32_t       id;               /* BPE */
} fg_tok_sym_t;


static int fg_tok_scan(const fg_tokenizer_t *t, const char *text,
    size_t len, const fg_tok_seg_t *segs, size_t n, fg_tok_out_t *o);
static int fg_tok_fragment(const fg_tokenizer_t *t, const char *s,
    size_t len, int prefix, fg_tok_out_t *o);
static int fg_tok_spm(const fg_tokenizer_t *t, const char *s, size_t len,
    fg_tok_out_t *o);
static int fg_tok_bpe(const fg_tokenizer_t *t, const char *s, size_t len,
    fg_tok_out_t *o);
static int fg_tok_bpe_word(const fg_tokenizer_t *t, const char *s,
    size_t len, fg_tok_sym_t *sym, fg_tok_heap_t *h, char *mapped,
    fg_tok_out_t *o);


/* ids beyond max are counted, not written: the caller asks again */
static inline void
fg_tok_emit(fg_tok_out_t *o, int32_t id)
{
    if (o->n < o->max) {
        o->ids[o->n] = id;
    }

    o->n++;
}


/*
 * The special token written at s, if any: longest first.  User-defined
 * tokens may take all len bytes; control tokens only the seg bytes of
 * their segment, and only when flags allow them.
 */
static int32_t
fg_tok_special_at(const fg_tokenizer_t *t, const char *s, size_t len,
    size_t seg, int flags, size_t *tlen)
{
    int32_t   id;
    uint8_t   c;
    uint32_t  i, n;

    c = (uint8_t) s[0];

    for (i = t->special_start[c]; i < t->special_start[c + 1]; i++) {
        id = t->special[i];
        n = fg_tok_len(t, id);

        /* user-defined tokens always match, control ones when asked */
        if (t->types[id] != FG_TOK_USER_DEFINED
            && (!(flags & FG_TOK_SPECIAL) || n > seg))
        {
            continue;
        }

        if (n <= len && memcmp(s, t->text + t->off[id], n) == 0) {
            *tlen = n;
            return id;
        }
    }

    return FG_TOK_NONE;
}


ssize_t
fg_tokenizer_encode(const fg_tokenizer_t *t, const char *text, size_t len,
    int flags, int32_t *ids, size_t max)
{
    fg_tok_seg_t  seg;

    seg.text = text;
    seg.len = len;
    seg.special = (flags & FG_TOK_SPECIAL) != 0;

    return fg_tokenizer_encode_segs(t, &seg, 1, flags, ids, max);
}


ssize_t
fg_tokenizer_encode_segs(const fg_tokenizer_t *t, const fg_tok_seg_t *segs,
    size_t n, int flags, int32_t *ids, size_t max)
{
    int           bos, rc;
    char         *all;
    size_t        i, len;
    fg_tok_out_t  o;

    o.ids = ids;
    o.max = ids ? max : 0;
    o.n = 0;

    /* one text to scan: segments' words and merges may run across */
    all = NULL;

    for (i = 0, len = 0; i < n; i++) {
        len += segs[i].len;
    }

    if (n > 1) {
        all = malloc(len + 1);
        if (all == NULL) {
            return -1;
        }

        for (i = 0, len = 0; i < n; i++) {
            memcpy(all + len, segs[i].text, segs[i].len);
            len += segs[i].len;
        }
    }

    bos = (flags & FG_TOK_NO_BOS) ? 0
          : (flags & FG_TOK_BOS) ? 1 : t->add_bos;

    if (bos && t->bos != FG_TOK_NONE) {
        fg_tok_emit(&o, t->bos);
    }

    rc = fg_tok_scan(t, all ? all : (n ? segs[0].text : ""), len, segs, n,
                     &o);
    free(all);

    if (rc != 0) {
        return -1;
    }

    if (((flags & FG_TOK_EOS) || t->add_eos) && t->eos != FG_TOK_NONE) {
        fg_tok_emit(&o, t->eos);
    }

    return (ssize_t) o.n;
}


/*
 * The special tokens of the text, each within one segment (control ones
 * in the segments that allow them), and the fragments between them.
 */
static int
fg_tok_scan(const fg_tokenizer_t *t, const char *text, size_t len,
    const fg_tok_seg_t *segs, size_t n, fg_tok_out_t *o)
{
    int       prev_special;
    size_t    i, k, start, tlen, end;
    int32_t   id;

    /* SentencePiece puts its space in front of the text, and again after
     * each special token, as llama.cpp does */
    prev_special = 1;
    start = 0;
    i = 0;
    k = 0;
    end = n ? segs[0].len : 0;

    while (i < len) {
        while (i >= end && k + 1 < n) {
            end += segs[++k].len;
        }

        id = fg_tok_special_at(t, text + i, len - i, end - i,
                               segs[k].special ? FG_TOK_SPECIAL : 0, &tlen);

        if (id == FG_TOK_NONE) {
            i++;
            continue;
        }

        if (i > start
            && fg_tok_fragment(t, text + start, i - start, prev_special, o)
               != 0)
        {
            return -1;
        }

        fg_tok_emit(o, id);
        prev_special = 1;
        i += tlen;
        start = i;
    }

    if (start < len
        && fg_tok_fragment(t, text + start, len - start, prev_special, o)
           != 0)
    {
        return -1;
    }

    return 0;
}


static int
fg_tok_fragment(const fg_tokenizer_t *t, const char *s, size_t len,
    int prefix, fg_tok_out_t *o)
{
    int       rc;
    char     *esc;
    size_t    i, n;

    if (t->model == FG_TOK_MODEL_BPE) {
        if (!t->nfc) {
            return fg_tok_bpe(t, s, len, o);
        }

        if (fg_tok_nfc(s, len, &esc, &n) != 0) {
            return -1;
        }

        rc = esc ? fg_tok_bpe(t, esc, n, o) : fg_tok_bpe(t, s, len, o);
        free(esc);

        return rc;
    }

    /* SentencePiece's escaping: spaces are U+2581 (3 bytes) */
    esc = malloc(3 * len + 3);
    if (esc == NULL) {
        return -1;
    }

    n = 0;

    if (prefix && t->add_space_prefix) {
        memcpy(esc, "\xe2\x96\x81", 3);
        n = 3;
    }

    for (i = 0; i < len; i++) {
        if (s[i] == ' ') {
            memcpy(esc + n, "\xe2\x96\x81", 3);
            n += 3;

        } else {
            esc[n++] = s[i];
        }
    }

    rc = fg_tok_spm(t, esc, n, o);

    free(esc);

    return rc;
}


/* a float's order as an unsigned integer's: the heap compares keys */
static inline uint32_t
fg_tok_float_order(float f)
{
    uint32_t  u;

    memcpy(&u, &f, sizeof(u));

    return (u & 0x80000000u) ? ~u : u | 0x80000000u;
}


static void
fg_tok_spm_pair(const fg_tokenizer_t *t, const char *s, fg_tok_sym_t *sym,
    int32_t left, fg_tok_heap_t *h)
{
    int32_t        right, id;
    fg_tok_pair_t  p;

    if (left < 0 || sym[left].next < 0) {
        return;
    }

    right = sym[left].next;

    id = fg_tok_lookup(t, s + sym[left].start, sym[left].len + sym[right].len,
                       1);

    if (id == FG_TOK_NONE) {
        return;
    }

    /* best score first, then leftmost: the smallest key */
    p.key = (uint64_t) ~fg_tok_float_order(t->scores[id]) << 32
            | (uint32_t) left;
    p.left = (uint32_t) left;
    p.right = (uint32_t) right;
    p.a = (int32_t) (sym[left].len + sym[right].len);
    p.b = 0;

    fg_tok_heap_push(h, &p);
}


/*
 * A symbol per character.  Strict UTF-8: a broken character is bytes of
 * its own, so that a stray lead byte cannot swallow the U+2581 of a space
 * after it.
 */
static fg_tok_sym_t *
fg_tok_spm_symbols(const char *s, size_t len, size_t *n_sym)
{
    size_t         i, n, clen;
    uint32_t       cp;
    fg_tok_sym_t  *sym;

    n = 0;

    for (i = 0; i < len; i += fg_tok_cp((const uint8_t *) s + i, len - i,
                                        &cp))
    {
        n++;
    }

    sym = malloc(n * sizeof(fg_tok_sym_t));
    if (sym == NULL) {
        return NULL;
    }

    n = 0;

    for (i = 0; i < len; i += clen) {
        clen = fg_tok_cp((const uint8_t *) s + i, len - i, &cp);

        sym[n].start = (uint32_t) i;
        sym[n].len = (uint32_t) clen;
        sym[n].prev = (int32_t) n - 1;
        sym[n].next = i + clen < len ? (int32_t) n + 1 : -1;
        n++;
    }

    *n_sym = n;

    return sym;
}


/* the merged symbols' pieces; a symbol that is no piece: its bytes */
static void
fg_tok_spm_emit(const fg_tokenizer_t *t, const char *s,
    const fg_tok_sym_t *sym, fg_tok_out_t *o)
{
    size_t   i;
    int32_t  id, k;

    for (k = 0; k >= 0; k = sym[k].next) {
        id = fg_tok_lookup(t, s + sym[k].start, sym[k].len, 1);

        if (id != FG_TOK_NONE) {
            fg_tok_emit(o, id);
            continue;
        }

        /* no piece: byte fallback, else unknown */
        for (i = 0; i < sym[k].len; i++) {
            id = t->bytes[(uint8_t) s[sym[k].start + i]];

            if (id != FG_TOK_NONE) {
                fg_tok_emit(o, id);

            } else if (t->unk != FG_TOK_NONE) {
                fg_tok_emit(o, t->unk);
                break;
            }
        }
    }
}


static int
fg_tok_spm(const fg_tokenizer_t *t, const char *s, size_t len,
    fg_tok_out_t *o)
{
    size_t         i, n;
    fg_tok_sym_t  *sym, *l, *r;
    fg_tok_pair_t  top;
    fg_tok_heap_t  h;

    if (len == 0) {
        return 0;
    }

    sym = fg_tok_spm_symbols(s, len, &n);

    if (sym == NULL || fg_tok_heap_init(&h, n) != 0) {
        free(sym);
        return -1;
    }

    for (i = 0; i + 1 < n; i++) {
        fg_tok_spm_pair(t, s, sym, (int32_t) i, &h);
    }

    while (h.n) {
        fg_tok_heap_pop(&h, &top);

        l = &sym[top.left];
        r = &sym[top.right];

        /* stale: one side was merged away, or grew */
        if (l->len == 0 || r->len == 0 || l->next != (int32_t) top.right
            || l->len + r->len != (uint32_t) top.a)
        {
            continue;
        }

        l->len += r->len;
        r->len = 0;
        l->next = r->next;

        if (r->next >= 0) {
            sym[r->next].prev = (int32_t) top.left;
        }

        fg_tok_spm_pair(t, s, sym, l->prev, &h);
        fg_tok_spm_pair(t, s, sym, (int32_t) top.left, &h);
    }

    if (h.failed) {
        free(sym);
        free(h.p);
        return -1;
    }

    fg_tok_spm_emit(t, s, sym, o);

    free(sym);
    free(h.p);

    return 0;
}


/* the rank and result of merging ids a and b, if the merges have them */
static int
fg_tok_merge(const fg_tokenizer_t *t, int32_t a, int32_t b, uint32_t *rank,
    int32_t *result)
{
    uint64_t  h, key;

    key = (uint64_t) (uint32_t) a << 32 | (uint32_t) b;
    h = XXH3_64bits(&key, sizeof(key)) & t->merge_mask;

    while (t->merge_keys[h] != UINT64_MAX) {
        if (t->merge_keys[h] == key) {
            *rank = t->merge_ranks[h];
            *result = t->merge_results[h];
            return 1;
        }

        h = (h + 1) & t->merge_mask;
    }

    return 0;
}


static int
fg_tok_bpe(const fg_tokenizer_t *t, const char *s, size_t len,
    fg_tok_out_t *o)
{
    int             rc;
    char           *mapped;
    size_t          i, n, w, *pos;
    uint8_t        *cat;
    uint32_t       *cp;
    fg_tok_sym_t   *sym;
    fg_tok_heap_t   h;

    if (len == 0) {
        return 0;
    }

    cp = malloc(len * sizeof(uint32_t));
    cat = malloc(len);
    pos = malloc((len + 1) * sizeof(size_t));
    sym = malloc(len * sizeof(fg_tok_sym_t));
    mapped = malloc(2 * len);

    rc = -1;

    if (fg_tok_heap_init(&h, 64) != 0) {
        h.p = NULL;
        goto done;
    }

    if (cp == NULL || cat == NULL || pos == NULL || sym == NULL
        || mapped == NULL)
    {
        goto done;
    }

    n = fg_tok_classify(s, len, cp, cat, pos);

    for (i = 0; i < n; i += w) {
        w = fg_tok_word(t, cp, cat, i, n);

        if (fg_tok_bpe_word(t, s + pos[i], pos[i + w] - pos[i], sym, &h,
                            mapped, o)
            != 0)
        {
            goto done;
        }
    }

    rc = 0;

done:

    free(cp);
    free(cat);
    free(pos);
    free(sym);
    free(h.p);
    free(mapped);

    return rc;
}


static void
fg_tok_bpe_pair(const fg_tokenizer_t *t, fg_tok_sym_t *sym, int32_t left,
    fg_tok_heap_t *h)
{
    int32_t        right, result;
    uint32_t       rank;
    fg_tok_pair_t  p;

    if (left < 0 || sym[left].next < 0) {
        return;
    }

    right = sym[left].next;

    if (sym[left].id < 0 || sym[right].id < 0
        || !fg_tok_merge(t, sym[left].id, sym[right].id, &rank, &result))
    {
        return;
    }

    /* lowest rank first, then leftmost */
    p.key = (uint64_t) rank << 32 | (uint32_t) left;
    p.left = (uint32_t) left;
    p.right = (uint32_t) right;
    p.a = sym[left].id;
    p.b = sym[right].id;

    fg_tok_heap_push(h, &p);
}


static int
fg_tok_bpe_word(const fg_tokenizer_t *t, const char *s, size_t len,
    fg_tok_sym_t *sym, fg_tok_heap_t *h, char *mapped, fg_tok_out_t *o)
{
    size_t          i, n;
    int32_t         id, k, result;
    uint32_t        rank;
    fg_tok_sym_t   *l, *r;
    fg_tok_pair_t   top;

    /* Llama 3: a word that is a token is that token, merges or not */
    if (t->ignore_merges) {
        n = 0;

        for (i = 0; i < len; i++) {
            n += fg_utf8_encode(t->byte_cp[(uint8_t) s[i]],
                                (uint8_t *) mapped + n);
        }

        id = fg_tok_lookup(t, mapped, n, 0);

        if (id != FG_TOK_NONE) {
            fg_tok_emit(o, id);
            return 0;
        }
    }

    /* a symbol per byte (its printable character) */
    for (i = 0; i < len; i++) {
        sym[i].id = t->bytes[(uint8_t) s[i]];
        sym[i].len = 1;
        sym[i].start = (uint32_t) i;
        sym[i].prev = (int32_t) i - 1;
        sym[i].next = i + 1 < len ? (int32_t) i + 1 : -1;
    }

    h->n = 0;

    for (i = 0; i + 1 < len; i++) {
        fg_tok_bpe_pair(t, sym, (int32_t) i, h);
    }

    while (h->n) {
        fg_tok_heap_pop(h, &top);

        l = &sym[top.left];
        r = &sym[top.right];

        if (l->len == 0 || r->len == 0 || l->next != (int32_t) top.right
            || l->id != top.a || r->id != top.b)
        {
            continue;
        }

        if (!fg_tok_merge(t, l->id, r->id, &rank, &result)) {
            continue;
        }

        l->id = result;
        l->len += r->len;
        r->len = 0;
        l->next = r->next;

        if (r->next >= 0) {
            sym[r->next].prev = (int32_t) top.left;
        }

        fg_tok_bpe_pair(t, sym, l->prev, h);
        fg_tok_bpe_pair(t, sym, (int32_t) top.left, h);
    }

    if (h->failed) {
        return -1;
    }

    for (k = 0; len > 0 && k >= 0; k = sym[k].next) {
        if (sym[k].id != FG_TOK_NONE) {
            fg_tok_emit(o, sym[k].id);

        } else if (t->unk != FG_TOK_NONE) {
            fg_tok_emit(o, t->unk);
        }
    }

    return 0;
}
