
/*
 * fairgate: indexed min-heap.
 */


#include <stddef.h>

#include "fg_heap.h"


static void fg_heap_up(fg_heap_t *h, uint32_t i);
static void fg_heap_down(fg_heap_t *h, uint32_t i);


static inline int
fg_heap_less(const fg_heap_entry_t *a, const fg_heap_entry_t *b)
{
    return a->key < b->key || (a->key == b->key && a->tie < b->tie);
}


void
fg_heap_init(fg_heap_t *h, fg_heap_entry_t *entries, uint32_t capacity)
{
    h->entries = entries;
    h->n = 0;
    h->capacity = capacity;
}


int
fg_heap_insert(fg_heap_t *h, fg_heap_node_t *node, double key, uint64_t tie)
{
    fg_heap_entry_t  *e;

    if (h->n == h->capacity) {
        return -1;
    }

    e = &h->entries[h->n];
    e->key = key;
    e->tie = tie;
    e->node = node;
    node->index = h->n++;

    fg_heap_up(h, node->index);

    return 0;
}


void
fg_heap_remove(fg_heap_t *h, fg_heap_node_t *node)
{
    uint32_t          i;
    fg_heap_entry_t   last;

    i = node->index;
    node->index = FG_HEAP_NONE;

    if (--h->n == i) {
        return;
    }

    /* the last entry fills the hole, then moves whichever way it must */
    last = h->entries[h->n];
    h->entries[i] = last;
    last.node->index = i;

    if (i > 0 && fg_heap_less(&last, &h->entries[(i - 1) / 2])) {
        fg_heap_up(h, i);

    } else {
        fg_heap_down(h, i);
    }
}


void
fg_heap_update(fg_heap_t *h, fg_heap_node_t *node, double key, uint64_t tie)
{
    uint32_t          i;
    fg_heap_entry_t  *e;

    i = node->index;
    e = &h->entries[i];

    if (key > e->key || (key == e->key && tie > e->tie)) {
        e->key = key;
        e->tie = tie;
        fg_heap_down(h, i);

    } else {
        e->key = key;
        e->tie = tie;
        fg_heap_up(h, i);
    }
}


/* moves entry i towards the root; holds it aside to write each move once */
static void
fg_heap_up(fg_heap_t *h, uint32_t i)
{
    uint32_t          parent;
    fg_heap_entry_t   e;

    e = h->entries[i];

    while (i > 0) {
        parent = (i - 1) / 2;

        if (!fg_heap_less(&e, &h->entries[parent])) {
            break;
        }

        h->entries[i] = h->entries[parent];
        h->entries[i].node->index = i;
        i = parent;
    }

    h->entries[i] = e;
    e.node->index = i;
}


/*
 * Floyd's bottom-up sift: an entry that moves down usually goes most of
 * the way (a client just served jumps past the others), so walk the hole
 * to a leaf along the smaller children, one comparison a level instead of
 * two, then let the entry climb back the few levels it must.
 */
static void
fg_heap_down(fg_heap_t *h, uint32_t i)
{
    uint32_t          child;
    fg_heap_entry_t   e;

    e = h->entries[i];

    for ( ;; ) {
        child = 2 * i + 1;

        if (child >= h->n) {
            break;
        }

        if (child + 1 < h->n) {
            child += fg_heap_less(&h->entries[child + 1], &h->entries[child]);
        }

        h->entries[i] = h->entries[child];
        h->entries[i].node->index = i;
        i = child;
    }

    h->entries[i] = e;
    e.node->index = i;

    fg_heap_up(h, i);
}
