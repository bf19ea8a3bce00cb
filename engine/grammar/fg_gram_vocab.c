
/*
 * fairgate: a vocabulary's tokens as a byte trie, for the masks.
 *
 * The tokens are sorted by their bytes and the trie laid out in
 * depth-first order, each node with the index after its subtree, so that
 * a walk is one pass over an array and skips a refused subtree in one
 * jump.  Tokens of the same bytes share a node (a list); tokens of no
 * bytes are in no node, and tokens longer than FG_GRAM_MAX_PIECE bytes
 * neither: no grammar allows them.
 */


#define _GNU_SOURCE                         /* qsort_r() */

#include <stdlib.h>
#include <string.h>

#include "fg_gram_int.h"


#define FG_GRAM_MAX_PIECE  1024


static int fg_gram_trie(fg_gram_vocab_t *v);


static int
fg_gram_cmp(const void *a, const void *b, void *ctx)
{
    int                     c;
    uint32_t                x, y, n;
    const fg_gram_vocab_t  *v;

    v = ctx;
    x = *(const uint32_t *) a;
    y = *(const uint32_t *) b;
    n = v->lens[x] < v->lens[y] ? v->lens[x] : v->lens[y];
    c = memcmp(v->pieces[x], v->pieces[y], n);

    if (c != 0) {
        return c;
    }

    return v->lens[x] < v->lens[y] ? -1 : v->lens[x] > v->lens[y];
}


fg_gram_vocab_t *
fg_gram_vocab_new(uint32_t n, const char *const *pieces,
    const uint32_t *lens, const uint8_t *eog)
{
    char             *p;
    size_t            total;
    uint32_t          i;
    fg_gram_vocab_t  *v;

    v = calloc(1, sizeof(fg_gram_vocab_t));

    if (v == NULL) {
        return NULL;
    }

    v->n_vocab = n;
    total = 0;

    for (i = 0; i < n; i++) {
        total += lens[i] + 1;
    }

    v->pieces = malloc((n + 1) * sizeof(char *));
    v->lens = malloc((n + 1) * sizeof(uint32_t));
    v->tok_next = malloc((n + 1) * sizeof(uint32_t));
    v->is_eog = calloc(n + 1, 1);
    v->eog = malloc((n + 1) * sizeof(uint32_t));
    p = malloc(total + 1);

    if (v->pieces == NULL || v->lens == NULL || v->tok_next == NULL
        || v->is_eog == NULL || v->eog == NULL || p == NULL)
    {
        free(p);
        fg_gram_vocab_free(v);
        return NULL;
    }

    v->store = p;

    for (i = 0; i < n; i++) {
        v->pieces[i] = p;
        v->lens[i] = lens[i];
        memcpy(p, pieces[i], lens[i]);
        p += lens[i] + 1;
        v->tok_next[i] = FG_GRAM_NIL;

        if (eog != NULL && eog[i]) {
            v->is_eog[i] = 1;
            v->eog[v->n_eog++] = i;
        }

        if (lens[i] <= FG_GRAM_MAX_PIECE && lens[i] > v->max_len) {
            v->max_len = lens[i];
        }
    }

    if (fg_gram_trie(v) != 0) {
        fg_gram_vocab_free(v);
        return NULL;
    }

    return v;
}


static int
fg_gram_trie(fg_gram_vocab_t *v)
{
    size_t            total;
    uint32_t          i, k, id, prev, lcp, d, n, *ids, *path;
    fg_gram_tnode_t  *t;

    ids = malloc((v->n_vocab + 1) * sizeof(uint32_t));
    path = malloc((v->max_len + 2) * sizeof(uint32_t));
    total = 1;
    k = 0;

    for (i = 0; i < v->n_vocab; i++) {
        if (v->lens[i] > 0 && v->lens[i] <= FG_GRAM_MAX_PIECE) {
            total += v->lens[i];
            ids[k++] = i;
        }
    }

    v->nodes = malloc(total * sizeof(fg_gram_tnode_t));

    if (ids == NULL || path == NULL || v->nodes == NULL) {
        free(ids);
        free(path);
        return -1;
    }

    qsort_r(ids, k, sizeof(uint32_t), fg_gram_cmp, v);
    prev = FG_GRAM_NIL;
    n = 0;
    t = v->nodes;

    for (i = 0; i < k; i++) {
        id = ids[i];
        lcp = 0;

        if (prev != FG_GRAM_NIL) {
            while (lcp < v->lens[prev] && lcp < v->lens[id]
                   && v->pieces[prev][lcp] == v->pieces[id][lcp])
            {
                lcp++;
            }

            for (d = v->lens[prev]; d > lcp; d--) {
                t[path[d]].skip = n;
            }
        }

        /* sorted: the same bytes again, or a new branch below lcp */
        for (d = lcp + 1; d <= v->lens[id]; d++) {
            t[n].skip = 0;
            t[n].tok = FG_GRAM_NIL;
            t[n].depth = d;
            t[n].byte = (uint8_t) v->pieces[id][d - 1];
            t[n].pad = 0;
            path[d] = n++;
        }

        v->tok_next[id] = t[path[v->lens[id]]].tok;
        t[path[v->lens[id]]].tok = id;
        prev = id;
    }

    for (d = prev != FG_GRAM_NIL ? v->lens[prev] : 0; d > 0; d--) {
        t[path[d]].skip = n;
    }

    v->n_nodes = n;
    free(ids);
    free(path);

    return 0;
}


fg_gram_vocab_t *
fg_gram_vocab_from_tokenizer(const fg_tokenizer_t *t)
{
    char             *buf, **pieces;
    size_t            max;
    ssize_t           len;
    uint8_t          *eog;
    uint32_t          n, i, *lens;
    fg_gram_vocab_t  *v;

    n = fg_tokenizer_n_vocab(t);
    max = fg_tokenizer_max_piece(t) + 8;
    v = NULL;
    buf = malloc((size_t) n * max);
    pieces = malloc((n + 1) * sizeof(char *));
    lens = calloc(n + 1, sizeof(uint32_t));
    eog = calloc(n + 1, 1);

    if (buf == NULL || pieces == NULL || lens == NULL || eog == NULL) {
        goto done;
    }

    for (i = 0; i < n; i++) {
        pieces[i] = buf + (size_t) i * max;
        len = fg_tokenizer_piece(t, i, 0, pieces[i], max);
        lens[i] = len > 0 && (size_t) len <= max ? len : 0;
        eog[i] = fg_tokenizer_is_eog(t, i) ? 1 : 0;
    }

    v = fg_gram_vocab_new(n, (const char *const *) pieces, lens, eog);

done:

    free(buf);
    free(pieces);
    free(lens);
    free(eog);

    return v;
}


uint32_t
fg_gram_vocab_size(const fg_gram_vocab_t *v)
{
    return v->n_vocab;
}


void
fg_gram_vocab_free(fg_gram_vocab_t *v)
{
    if (v == NULL) {
        return;
    }

    free(v->store);
    free(v->pieces);
    free(v->lens);
    free(v->tok_next);
    free(v->is_eog);
    free(v->eog);
    free(v->nodes);
    free(v);
}
