
/*
 * fairgate: a small thread pool with a parallel-for over rows.
 *
 * The engine's step thread owns the pool and calls fg_pool_for() for each
 * kernel it spreads; the caller runs the first chunk itself, so a pool of
 * n threads starts n - 1 workers, and a pool of 1 (or a NULL pool) runs
 * everything inline.  Workers spin briefly after a job (the next kernel of
 * a forward pass usually comes within microseconds), then sleep on a
 * condition variable: an idle engine costs no CPU.
 *
 * One caller at a time: fg_pool_for() is not reentrant and must not be
 * called from inside a task.
 */

#ifndef _FG_POOL_H_INCLUDED_
#define _FG_POOL_H_INCLUDED_


#include <stddef.h>


typedef struct fg_pool_s  fg_pool_t;

/* runs items [begin, end); thread is 0 .. fg_pool_threads() - 1 */
typedef void (*fg_pool_task_pt)(void *ctx, size_t begin, size_t end,
    unsigned thread);


/* n_threads counts the caller; NULL on failure (errno set) */
fg_pool_t *fg_pool_create(unsigned n_threads);

void fg_pool_destroy(fg_pool_t *pool);

/* 1 for a NULL pool */
unsigned fg_pool_threads(const fg_pool_t *pool);

/*
 * Splits [0, n) into contiguous chunks, one per thread, each a multiple of
 * grain items (but the last), and uses fewer threads when n is small, so
 * that no chunk is shorter than grain.  Returns when every chunk is done.
 */
void fg_pool_for(fg_pool_t *pool, size_t n, size_t grain,
    fg_pool_task_pt task, void *ctx);


#endif /* _FG_POOL_H_INCLUDED_ */
