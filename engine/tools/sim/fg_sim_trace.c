
/*
 * fairgate: the simulator's traces in memory: requests, client names and
 * the optional fields' strings, each string once.
 */


#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_sim_trace.h"


void
fg_sim_error(char *err, size_t size, const char *fmt, ...)
{
    va_list  args;

    va_start(args, fmt);
    vsnprintf(err, size, fmt, args);
    va_end(args);
}


void
fg_sim_trace_init(fg_sim_trace_t *tr)
{
    memset(tr, 0, sizeof(fg_sim_trace_t));
}


void
fg_sim_trace_free(fg_sim_trace_t *tr)
{
    uint32_t  i;

    for (i = 0; i < tr->nclients; i++) {
        free(tr->clients[i].name);
    }

    for (i = 1; i < tr->nstrs; i++) {
        free(tr->strs[i]);
    }

    free(tr->clients);
    free(tr->reqs);
    free(tr->strs);
    free(tr->str_index);

    fg_sim_trace_init(tr);
}


/* FNV-1a: strings are short names, this is enough to spread them */
static uint32_t
fg_sim_str_hash(const char *s)
{
    uint32_t  h;

    for (h = 2166136261u; *s != '\0'; s++) {
        h = (h ^ (unsigned char) *s) * 16777619u;
    }

    return h;
}


static int
fg_sim_str_rehash(fg_sim_trace_t *tr, uint32_t slots)
{
    uint32_t   i, j, *index;

    index = calloc(slots, sizeof(uint32_t));
    if (index == NULL) {
        return -1;
    }

    for (i = 1; i < tr->nstrs; i++) {
        j = fg_sim_str_hash(tr->strs[i]) & (slots - 1);

        while (index[j] != 0) {
            j = (j + 1) & (slots - 1);
        }

        index[j] = i;
    }

    free(tr->str_index);
    tr->str_index = index;
    tr->str_slots = slots;

    return 0;
}


int64_t
fg_sim_trace_str(fg_sim_trace_t *tr, const char *s)
{
    char      **strs;
    uint32_t    j;

    /* at most half full: probes stay short */
    if (2 * (tr->nstrs + 1) > tr->str_slots
        && fg_sim_str_rehash(tr, tr->str_slots ? 2 * tr->str_slots : 64)
           != 0)
    {
        return -1;
    }

    j = fg_sim_str_hash(s) & (tr->str_slots - 1);

    while (tr->str_index[j] != 0) {
        if (strcmp(tr->strs[tr->str_index[j]], s) == 0) {
            return tr->str_index[j];
        }

        j = (j + 1) & (tr->str_slots - 1);
    }

    /* room for strs[0] too */
    strs = fg_sim_grow(tr->strs, tr->nstrs + 2, &tr->nalloc_strs,
                       sizeof(char *), 64);
    if (strs == NULL) {
        return -1;
    }

    tr->strs = strs;

    if (tr->nstrs == 0) {
        tr->strs[0] = NULL;
        tr->nstrs = 1;
    }

    tr->strs[tr->nstrs] = strdup(s);
    if (tr->strs[tr->nstrs] == NULL) {
        return -1;
    }

    tr->str_index[j] = tr->nstrs;

    return tr->nstrs++;
}


const char *
fg_sim_trace_str_get(const fg_sim_trace_t *tr, uint32_t i)
{
    return i > 0 && i < tr->nstrs ? tr->strs[i] : NULL;
}


int64_t
fg_sim_trace_client(fg_sim_trace_t *tr, const char *name)
{
    uint32_t               i;
    fg_sim_client_info_t  *c;

    /* linear: traces have tens of clients, and this runs once a line */
    for (i = 0; i < tr->nclients; i++) {
        if (strcmp(tr->clients[i].name, name) == 0) {
            return i;
        }
    }

    c = fg_sim_grow(tr->clients, tr->nclients + 1, &tr->nalloc_clients,
                    sizeof(fg_sim_client_info_t), 8);
    if (c == NULL) {
        return -1;
    }

    tr->clients = c;
    c = &tr->clients[tr->nclients];
    memset(c, 0, sizeof(fg_sim_client_info_t));

    c->name = strdup(name);
    if (c->name == NULL) {
        return -1;
    }

    c->weight = 1.0;

    return tr->nclients++;
}


int
fg_sim_trace_add(fg_sim_trace_t *tr, double t, uint32_t client,
    uint32_t input_tokens, uint32_t output_tokens,
    uint32_t max_output_tokens)
{
    fg_sim_req_t  *r;

    r = fg_sim_grow(tr->reqs, tr->n + 1, &tr->nalloc, sizeof(fg_sim_req_t),
                    1024);
    if (r == NULL) {
        return -1;
    }

    tr->reqs = r;
    r = &tr->reqs[tr->n++];

    memset(r, 0, sizeof(fg_sim_req_t));

    r->t = t;
    r->client = client;
    r->input_tokens = input_tokens;
    r->output_tokens = output_tokens;
    r->max_output_tokens = max_output_tokens;
    r->stage = -1;
    r->stream = -1;

    return 0;
}


static int
fg_sim_cmp_arrival(const void *a, const void *b)
{
    const fg_sim_req_t  *ra = *(fg_sim_req_t * const *) a;
    const fg_sim_req_t  *rb = *(fg_sim_req_t * const *) b;

    if (ra->t != rb->t) {
        return ra->t < rb->t ? -1 : 1;
    }

    /* qsort is not stable: the address keeps the order of addition */
    return (ra > rb) - (ra < rb);
}


int
fg_sim_trace_sort(fg_sim_trace_t *tr)
{
    size_t          i;
    fg_sim_req_t   *sorted, **order;

    if (tr->n < 2) {
        return 0;
    }

    order = malloc(tr->n * sizeof(fg_sim_req_t *));
    sorted = malloc(tr->n * sizeof(fg_sim_req_t));

    if (order == NULL || sorted == NULL) {
        free(order);
        free(sorted);
        return -1;
    }

    for (i = 0; i < tr->n; i++) {
        order[i] = &tr->reqs[i];
    }

    qsort(order, tr->n, sizeof(fg_sim_req_t *), fg_sim_cmp_arrival);

    for (i = 0; i < tr->n; i++) {
        sorted[i] = *order[i];
    }

    free(order);
    free(tr->reqs);

    tr->reqs = sorted;
    tr->nalloc = tr->n;

    return 0;
}
