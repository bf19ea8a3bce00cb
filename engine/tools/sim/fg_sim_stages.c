
/*
 * fairgate: dependent stages (fg_sim_stages.h): each interaction's
 * requests in stage order, and the released ones in the policy core's
 * heap (fg_heap.h) by due time.
 */


#include <stdlib.h>
#include <string.h>

#include "fg_sim_stages.h"


typedef struct {
    uint32_t   interaction;
    int32_t    stage;
    size_t     id;
} fg_sim_stage_key_t;


static int
fg_sim_stage_cmp(const void *a, const void *b)
{
    const fg_sim_stage_key_t  *x = a, *y = b;

    if (x->interaction != y->interaction) {
        return x->interaction < y->interaction ? -1 : 1;
    }

    if (x->stage != y->stage) {
        return x->stage < y->stage ? -1 : 1;
    }

    return (x->id > y->id) - (x->id < y->id);
}


/* released: in the heap by due time, then by id */
static void
fg_sim_stages_push(fg_sim_stages_t *st, size_t id)
{
    /* never full: each request is released once, and there is room for all */
    (void) fg_heap_insert(&st->released, &st->nodes[id], st->due[id], id);
}


int
fg_sim_stages_init(fg_sim_stages_t *st, const fg_sim_trace_t *tr,
    int open_loop)
{
    size_t               i, j, first, n;
    fg_sim_stage_key_t  *keys;

    memset(st, 0, sizeof(fg_sim_stages_t));

    /* the heap counts in 32 bits; no trace that fits in memory is near */
    if (tr->n >= FG_HEAP_NONE) {
        return -1;
    }

    n = tr->n ? tr->n : 1;

    st->tr = tr;
    st->due = calloc(n, sizeof(double));
    st->wait = calloc(n, sizeof(uint32_t));
    st->failed = calloc(n, 1);
    st->order = calloc(n, sizeof(size_t));
    st->pos = calloc(n, sizeof(size_t));
    st->entries = calloc(n, sizeof(fg_heap_entry_t));
    st->nodes = calloc(n, sizeof(fg_heap_node_t));
    keys = calloc(n, sizeof(fg_sim_stage_key_t));

    if (st->due == NULL || st->wait == NULL || st->failed == NULL
        || st->order == NULL || st->pos == NULL || st->entries == NULL
        || st->nodes == NULL || keys == NULL)
    {
        free(keys);
        fg_sim_stages_free(st);
        return -1;
    }

    fg_heap_init(&st->released, st->entries, (uint32_t) n);

    for (i = 0; i < tr->n; i++) {
        st->due[i] = tr->reqs[i].t;

        if (!open_loop && tr->reqs[i].interaction != 0
            && tr->reqs[i].stage >= 0)
        {
            keys[st->norder].interaction = tr->reqs[i].interaction;
            keys[st->norder].stage = tr->reqs[i].stage;
            keys[st->norder].id = i;
            st->norder++;
        }
    }

    qsort(keys, st->norder, sizeof(fg_sim_stage_key_t), fg_sim_stage_cmp);

    /* each waits for its interaction's requests before its stage */
    first = 0;

    for (j = 0; j < st->norder; j++) {
        if (keys[j].interaction != keys[first].interaction) {
            first = j;
        }

        st->order[j] = keys[j].id;
        st->pos[keys[j].id] = j;

        for (i = first; keys[i].stage < keys[j].stage; i++) {
            st->wait[keys[j].id]++;
        }
    }

    free(keys);

    for (i = 0; i < tr->n; i++) {
        if (st->wait[i] == 0) {
            fg_sim_stages_push(st, i);
        }
    }

    return 0;
}


void
fg_sim_stages_free(fg_sim_stages_t *st)
{
    free(st->due);
    free(st->wait);
    free(st->failed);
    free(st->order);
    free(st->pos);
    free(st->entries);
    free(st->nodes);

    memset(st, 0, sizeof(fg_sim_stages_t));
}


int
fg_sim_stages_peek(fg_sim_stages_t *st, size_t *id, double *due)
{
    fg_heap_entry_t  *top;

    top = fg_heap_top(&st->released);
    if (top == NULL) {
        return 0;
    }

    *id = (size_t) top->tie;
    *due = top->key;

    return 1;
}


int
fg_sim_stages_take(fg_sim_stages_t *st, size_t *id, double *due)
{
    fg_heap_entry_t  *top;

    top = fg_heap_top(&st->released);

    *id = (size_t) top->tie;
    *due = top->key;

    fg_heap_remove(&st->released, top->node);

    return !st->failed[*id];
}


void
fg_sim_stages_done(fg_sim_stages_t *st, size_t id, double t, int ok)
{
    size_t               j, k;
    const fg_sim_req_t  *r, *q;

    r = &st->tr->reqs[id];

    if (r->interaction == 0 || r->stage < 0 || st->norder == 0
        || st->order[st->pos[id]] != id)
    {
        return;
    }

    /* the same interaction's later requests follow it in order */
    for (j = st->pos[id] + 1; j < st->norder; j++) {
        k = st->order[j];
        q = &st->tr->reqs[k];

        if (q->interaction != r->interaction) {
            break;
        }

        if (q->stage == r->stage || st->wait[k] == 0) {
            continue;
        }

        if (!ok) {
            st->failed[k] = 1;
        }

        if (t > st->due[k]) {
            st->due[k] = t;
        }

        if (--st->wait[k] == 0) {
            fg_sim_stages_push(st, k);
        }
    }
}

