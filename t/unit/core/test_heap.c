
/*
 * fairgate: tests of the indexed heap against a brute-force minimum.
 */


#include <stdint.h>

#include "fg_tap.h"
#include "fg_heap.h"
#include "fg_rand.h"


#define N  500


typedef struct {
    fg_heap_node_t  node;
    int             in;
    double          key;
    uint64_t        tie;
} item_t;


static fg_rand_t  rng = { 42 };


static uint64_t
next(void)
{
    return fg_rand_next(&rng);
}


static int
check(fg_heap_t *h, item_t *items)
{
    int       i, best;
    uint32_t  k;

    best = -1;

    for (i = 0; i < N; i++) {
        if (!items[i].in) {
            continue;
        }

        if (items[i].node.index >= h->n
            || h->entries[items[i].node.index].node != &items[i].node)
        {
            return 0;
        }

        if (best < 0 || items[i].key < items[best].key
            || (items[i].key == items[best].key
                && items[i].tie < items[best].tie))
        {
            best = i;
        }
    }

    for (k = 1; k < h->n; k++) {
        if (h->entries[k].key < h->entries[(k - 1) / 2].key) {
            return 0;
        }
    }

    if (best < 0) {
        return h->n == 0;
    }

    /* equal (key, tie) pairs may come out in either order */
    return fg_heap_top(h)->key == items[best].key
           && fg_heap_top(h)->tie == items[best].tie;
}


int
main(void)
{
    int              i, op, good, in;
    item_t           items[N];
    fg_heap_t        h;
    fg_heap_entry_t  entries[N];

    fg_heap_init(&h, entries, N);

    for (i = 0; i < N; i++) {
        items[i].node.index = FG_HEAP_NONE;
        items[i].in = 0;
    }

    ok(fg_heap_top(&h) == NULL, "empty heap has no top");

    good = 1;
    in = 0;

    for (op = 0; op < 200000; op++) {
        i = next() % N;

        if (!items[i].in) {
            items[i].key = (double) (next() % 1000);
            items[i].tie = next() % 1000;
            fg_heap_insert(&h, &items[i].node, items[i].key, items[i].tie);
            items[i].in = 1;
            in++;

        } else if (next() % 3 == 0) {
            fg_heap_remove(&h, &items[i].node);
            items[i].in = 0;
            in--;

            if (items[i].node.index != FG_HEAP_NONE) {
                good = 0;
            }

        } else {
            items[i].key = (double) (next() % 1000);
            items[i].tie = next() % 1000;
            fg_heap_update(&h, &items[i].node, items[i].key, items[i].tie);
        }

        if ((uint32_t) in != h.n || !check(&h, items)) {
            good = 0;
            diag("heap wrong after operation %d", op);
            break;
        }
    }

    ok(good, "200000 random insert/update/remove keep min and indexes");

    fg_heap_init(&h, entries, 2);
    ok(fg_heap_insert(&h, &items[0].node, 1, 0) == 0
       && fg_heap_insert(&h, &items[1].node, 2, 0) == 0
       && fg_heap_insert(&h, &items[2].node, 3, 0) == -1,
       "a full heap refuses an insert");

    return done_testing();
}
