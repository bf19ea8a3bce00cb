
/*
 * fairgate: the tokenizer's merge candidates, a binary min-heap of pairs
 * of adjacent symbols on a 64-bit key (SentencePiece: best score first;
 * BPE: lowest rank first; then leftmost).  Private to the encoder.
 *
 * Not ngx_module/core's fg_heap: that one indexes items that change keys
 * and leave from anywhere, in an array sized once; this one holds plain
 * values that are only pushed and popped, grows as merges are found, and
 * runs for every candidate pair on the gateway's request path, so all of
 * it is inline here.
 */

#ifndef _FG_TOK_HEAP_H_INCLUDED_
#define _FG_TOK_HEAP_H_INCLUDED_


#include <stdint.h>
#include <stdlib.h>


typedef struct {
    uint64_t      key;              /* smallest first */
    uint32_t      left;
    uint32_t      right;
    int32_t       a;                /* SPM: the pair's bytes; BPE: ids */
    int32_t       b;
} fg_tok_pair_t;


typedef struct {
    fg_tok_pair_t  *p;
    size_t          n;
    size_t          cap;
    int             failed;         /* out of memory: encode fails */
} fg_tok_heap_t;


static inline int
fg_tok_heap_init(fg_tok_heap_t *h, size_t cap)
{
    h->cap = cap ? cap : 1;
    h->n = 0;
    h->failed = 0;
    h->p = malloc(h->cap * sizeof(fg_tok_pair_t));

    return h->p ? 0 : -1;
}


static inline void
fg_tok_heap_push(fg_tok_heap_t *h, const fg_tok_pair_t *p)
{
    size_t          i, parent;
    fg_tok_pair_t  *a;

    /* it grows: most candidate pairs are no token, few are pushed */
    if (h->n == h->cap) {
        a = realloc(h->p, 2 * h->cap * sizeof(fg_tok_pair_t));

        if (a == NULL) {
            h->failed = 1;
            return;
        }

        h->p = a;
        h->cap *= 2;
    }

    a = h->p;
    i = h->n++;

    while (i > 0) {
        parent = (i - 1) / 2;

        if (a[parent].key <= p->key) {
            break;
        }

        a[i] = a[parent];
        i = parent;
    }

    a[i] = *p;
}


static inline void
fg_tok_heap_pop(fg_tok_heap_t *h, fg_tok_pair_t *top)
{
    size_t          i, c;
    fg_tok_pair_t  *a, last;

    a = h->p;
    *top = a[0];
    last = a[--h->n];
    i = 0;

    for ( ;; ) {
        c = 2 * i + 1;

        if (c >= h->n) {
            break;
        }

        if (c + 1 < h->n && a[c + 1].key < a[c].key) {
            c++;
        }

        if (last.key <= a[c].key) {
            break;
        }

        a[i] = a[c];
        i = c;
    }

    a[i] = last;
}


#endif /* _FG_TOK_HEAP_H_INCLUDED_ */
