
/*
 * fairgate: indexed min-heap.
 *
 * Pure C, no nginx types.  Items embed an fg_heap_node_t that records their
 * position, so an item's key can change and be fixed in O(log n), and an
 * item can leave from anywhere in the heap.  Keys live in the entry array,
 * not in the items, so comparisons touch one contiguous array.  The array is
 * given by the caller, sized once: no allocation here.
 */

#ifndef _FG_HEAP_H_INCLUDED_
#define _FG_HEAP_H_INCLUDED_


#include <stdint.h>


#define FG_HEAP_NONE  UINT32_MAX


typedef struct {
    uint32_t          index;           /* FG_HEAP_NONE when not in a heap */
} fg_heap_node_t;


/* ordered by key, then by tie: both ascending */
typedef struct {
    double            key;
    uint64_t          tie;
    fg_heap_node_t   *node;
} fg_heap_entry_t;


typedef struct {
    fg_heap_entry_t  *entries;
    uint32_t          n;
    uint32_t          capacity;
} fg_heap_t;


void fg_heap_init(fg_heap_t *h, fg_heap_entry_t *entries, uint32_t capacity);

/* returns 0, or -1 when the heap is full */
int fg_heap_insert(fg_heap_t *h, fg_heap_node_t *node, double key,
    uint64_t tie);

void fg_heap_remove(fg_heap_t *h, fg_heap_node_t *node);

/* changes a member's key and tie, moving it up or down as needed */
void fg_heap_update(fg_heap_t *h, fg_heap_node_t *node, double key,
    uint64_t tie);

static inline fg_heap_entry_t *
fg_heap_top(fg_heap_t *h)
{
    return h->n ? &h->entries[0] : NULL;
}


#endif /* _FG_HEAP_H_INCLUDED_ */
