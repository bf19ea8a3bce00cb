
/*
 * fairgate: a small thread pool with a parallel-for over rows.
 *
 * A job is published by bumping a generation counter under the mutex; every
 * worker acknowledges every generation (even one it has no chunk in), so a
 * slow worker can never read the fields of the next job for its own.
 */


#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "fg_pool.h"


/*
 * Pauses a waiting thread spins before it sleeps: some tens of microseconds
 * on current x86 (a pause is 10 to 150 cycles), about the gap between two
 * kernels of a forward pass, and far below a condition variable's wake-up
 * cost for a small model's step.
 */
#define FG_POOL_SPIN  2048


struct fg_pool_s {
    pthread_mutex_t   mutex;
    pthread_cond_t    wake;         /* workers: a new generation */
    pthread_cond_t    done;         /* the caller: pending reached 0 */
    pthread_t        *threads;
    unsigned          n_threads;    /* the caller included */
    unsigned          started;      /* workers running */
    int               stop;

    /* the job, written before gen changes and read after */
    fg_pool_task_pt   task;
    void             *ctx;
    size_t            n;
    size_t            per;
    unsigned          active;

    atomic_uint       gen;
    atomic_uint       pending;
};


typedef struct {
    fg_pool_t        *pool;
    unsigned          index;
} fg_pool_arg_t;


static void *fg_pool_worker(void *data);


static inline void
fg_pool_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__ ("yield");
#endif
}


fg_pool_t *
fg_pool_create(unsigned n_threads)
{
    int             err;
    unsigned        i;
    fg_pool_t      *pool;
    fg_pool_arg_t  *args;

    if (n_threads == 0) {
        n_threads = 1;
    }

    pool = calloc(1, sizeof(fg_pool_t)
                     + (n_threads - 1) * (sizeof(pthread_t)
                                          + sizeof(fg_pool_arg_t)));
    if (pool == NULL) {
        return NULL;
    }

    pool->threads = (pthread_t *) (pool + 1);
    args = (fg_pool_arg_t *) (pool->threads + (n_threads - 1));
    pool->n_threads = n_threads;

    atomic_init(&pool->gen, 0);
    atomic_init(&pool->pending, 0);

    if (pthread_mutex_init(&pool->mutex, NULL) != 0) {
        free(pool);
        return NULL;
    }

    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done, NULL);

    for (i = 1; i < n_threads; i++) {
        args[i - 1].pool = pool;
        args[i - 1].index = i;

        err = pthread_create(&pool->threads[i - 1], NULL, fg_pool_worker,
                             &args[i - 1]);
        if (err != 0) {
            fg_pool_destroy(pool);
            errno = err;
            return NULL;
        }

        pool->started++;
    }

    return pool;
}


void
fg_pool_destroy(fg_pool_t *pool)
{
    unsigned  i;

    if (pool == NULL) {
        return;
    }

    pthread_mutex_lock(&pool->mutex);
    pool->stop = 1;
    atomic_fetch_add_explicit(&pool->gen, 1, memory_order_release);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mutex);

    for (i = 0; i < pool->started; i++) {
        pthread_join(pool->threads[i], NULL);
    }

    pthread_cond_destroy(&pool->wake);
    pthread_cond_destroy(&pool->done);
    pthread_mutex_destroy(&pool->mutex);

    free(pool);
}


unsigned
fg_pool_threads(const fg_pool_t *pool)
{
    return pool ? pool->n_threads : 1;
}


void
fg_pool_for(fg_pool_t *pool, size_t n, size_t grain, fg_pool_task_pt task,
    void *ctx)
{
    size_t    per, chunks;
    unsigned  i;

    if (n == 0) {
        return;
    }

    if (grain == 0) {
        grain = 1;
    }

    chunks = (n + grain - 1) / grain;

    if (pool == NULL || pool->n_threads == 1 || chunks == 1) {
        task(ctx, 0, n, 0);
        return;
    }

    if (chunks > pool->n_threads) {
        chunks = pool->n_threads;
    }

    /* equal chunks rounded up to the grain; rounding may leave fewer */
    per = (n + chunks - 1) / chunks;
    per = (per + grain - 1) / grain * grain;

    pool->task = task;
    pool->ctx = ctx;
    pool->n = n;
    pool->per = per;
    pool->active = (unsigned) ((n + per - 1) / per);

    atomic_store_explicit(&pool->pending, pool->n_threads - 1,
                          memory_order_relaxed);

    pthread_mutex_lock(&pool->mutex);
    atomic_fetch_add_explicit(&pool->gen, 1, memory_order_release);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mutex);

    task(ctx, 0, per < n ? per : n, 0);

    for (i = 0; i < FG_POOL_SPIN; i++) {
        if (atomic_load_explicit(&pool->pending, memory_order_acquire) == 0) {
            return;
        }

        fg_pool_relax();
    }

    pthread_mutex_lock(&pool->mutex);

    while (atomic_load_explicit(&pool->pending, memory_order_acquire) != 0) {
        pthread_cond_wait(&pool->done, &pool->mutex);
    }

    pthread_mutex_unlock(&pool->mutex);
}


static void *
fg_pool_worker(void *data)
{
    size_t          begin, end;
    unsigned        i, seen, gen, index;
    fg_pool_t      *pool;
    fg_pool_arg_t  *arg;

    arg = data;
    pool = arg->pool;
    index = arg->index;
    seen = 0;

    for ( ;; ) {
        gen = seen;

        for (i = 0; i < FG_POOL_SPIN; i++) {
            gen = atomic_load_explicit(&pool->gen, memory_order_acquire);
            if (gen != seen) {
                break;
            }

            fg_pool_relax();
        }

        if (gen == seen) {
            pthread_mutex_lock(&pool->mutex);

            for ( ;; ) {
                gen = atomic_load_explicit(&pool->gen, memory_order_acquire);
                if (gen != seen) {
                    break;
                }

                pthread_cond_wait(&pool->wake, &pool->mutex);
            }

            pthread_mutex_unlock(&pool->mutex);
        }

        seen = gen;

        if (pool->stop) {
            return NULL;
        }

        if (index < pool->active) {
            begin = index * pool->per;
            end = begin + pool->per;

            if (end > pool->n) {
                end = pool->n;
            }

            pool->task(pool->ctx, begin, end, index);
        }

        if (atomic_fetch_sub_explicit(&pool->pending, 1, memory_order_acq_rel)
            == 1)
        {
            pthread_mutex_lock(&pool->mutex);
            pthread_cond_signal(&pool->done);
            pthread_mutex_unlock(&pool->mutex);
        }
    }
}
