
/*
 * fairgate: the unified KV pool's arena: its memory and a stack of its
 * free head blocks (the one freed last is taken first, so that the
 * resident pages stay few).
 */


#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fg_kv.h"


struct fg_kv_arena_s {
    void             *mem;
    size_t            bytes;
    size_t            head_bytes;
    uint32_t          n;
    uint32_t          n_free;
    uint32_t          peak;
    uint32_t         *free;         /* free[n_free - 1] is taken next */
    pthread_mutex_t   mu;
};


fg_kv_arena_t *
fg_kv_arena_create(uint32_t n, size_t head_bytes, char *err,
    size_t errlen)
{
    uint32_t        i;
    fg_kv_arena_t  *a;

    if (n == 0 || head_bytes == 0 || head_bytes > SIZE_MAX / n) {
        snprintf(err, errlen, "a KV arena of %u head blocks of %zu bytes",
                 n, head_bytes);
        return NULL;
    }

    a = calloc(1, sizeof(fg_kv_arena_t));

    if (a == NULL || (a->free = malloc(n * sizeof(uint32_t))) == NULL) {
        free(a);
        snprintf(err, errlen, "no memory for a KV arena of %u head blocks",
                 n);
        return NULL;
    }

    a->bytes = (size_t) n * head_bytes;

    /* anonymous pages: nothing is resident before a head block is written */
    a->mem = mmap(NULL, a->bytes, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (a->mem == MAP_FAILED) {
        snprintf(err, errlen, "a KV arena of %u head blocks (%zu MiB): %s",
                 n, a->bytes >> 20, strerror(errno));
        free(a->free);
        free(a);
        return NULL;
    }

    a->n = n;
    a->n_free = n;
    a->head_bytes = head_bytes;

    for (i = 0; i < n; i++) {
        a->free[i] = n - 1 - i;
    }

    pthread_mutex_init(&a->mu, NULL);

    return a;
}


void
fg_kv_arena_destroy(fg_kv_arena_t *a)
{
    if (a == NULL) {
        return;
    }

    munmap(a->mem, a->bytes);
    pthread_mutex_destroy(&a->mu);
    free(a->free);
    free(a);
}


void *
fg_kv_arena_base(const fg_kv_arena_t *a)
{
    return a->mem;
}


size_t
fg_kv_arena_head_bytes(const fg_kv_arena_t *a)
{
    return a->head_bytes;
}


uint32_t
fg_kv_arena_size(const fg_kv_arena_t *a)
{
    return a->n;
}


void
fg_kv_arena_conf(const fg_kv_arena_t *a, const uint32_t *map,
    fg_backend_conf_t *conf)
{
    conf->kv_arena = a->mem;
    conf->kv_head_bytes = a->head_bytes;
    conf->kv_map = map;
}


/* one of the arena's counts, read under the lock its takes and gives hold */
static uint32_t
fg_kv_arena_count(fg_kv_arena_t *a, const uint32_t *count)
{
    uint32_t  n;

    pthread_mutex_lock(&a->mu);
    n = *count;
    pthread_mutex_unlock(&a->mu);

    return n;
}


uint32_t
fg_kv_arena_free(fg_kv_arena_t *a)
{
    return fg_kv_arena_count(a, &a->n_free);
}


uint32_t
fg_kv_arena_peak(fg_kv_arena_t *a)
{
    return fg_kv_arena_count(a, &a->peak);
}


int
fg_kv_arena_take(fg_kv_arena_t *a, uint32_t n, uint32_t *out)
{
    uint32_t  i;

    pthread_mutex_lock(&a->mu);

    if (n > a->n_free) {
        pthread_mutex_unlock(&a->mu);
        return -1;
    }

    for (i = 0; i < n; i++) {
        out[i] = a->free[--a->n_free];
    }

    if (a->n - a->n_free > a->peak) {
        a->peak = a->n - a->n_free;
    }

    pthread_mutex_unlock(&a->mu);

    return 0;
}


void
fg_kv_arena_give(fg_kv_arena_t *a, uint32_t n, const uint32_t *in)
{
    uint32_t  i;

    pthread_mutex_lock(&a->mu);

    /* the last of in on top: a block's heads come back in their order */
    for (i = n; i-- > 0; ) {
        a->free[a->n_free++] = in[i];
    }

    pthread_mutex_unlock(&a->mu);
}
