
/*
 * fairgate: tests of the thread pool's parallel-for: every item runs once,
 * chunks follow the grain, and jobs in quick succession (workers spinning)
 * and after a pause (workers asleep) both complete.
 */


#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "fg_tap.h"
#include "fg_pool.h"


#define MAX_ITEMS  4096


typedef struct {
    atomic_int   hits[MAX_ITEMS];
    atomic_int   bad_chunk;
    atomic_int   bad_thread;
    atomic_int   calls;
    size_t       n;
    size_t       grain;
    unsigned     threads;
} job_t;


static void
task(void *data, size_t begin, size_t end, unsigned thread)
{
    size_t  i;
    job_t  *job;

    job = data;

    atomic_fetch_add(&job->calls, 1);

    if (thread >= job->threads) {
        atomic_fetch_add(&job->bad_thread, 1);
    }

    /* chunks start on the grain, and only the last may be shorter */
    if (begin % job->grain || (end != job->n && (end - begin) % job->grain)
        || begin >= end)
    {
        atomic_fetch_add(&job->bad_chunk, 1);
    }

    for (i = begin; i < end; i++) {
        atomic_fetch_add(&job->hits[i], 1);
    }
}


static int
run(fg_pool_t *pool, job_t *job, size_t n, size_t grain)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        atomic_store(&job->hits[i], 0);
    }

    atomic_store(&job->bad_chunk, 0);
    atomic_store(&job->bad_thread, 0);
    atomic_store(&job->calls, 0);
    job->n = n;
    job->grain = grain ? grain : 1;
    job->threads = fg_pool_threads(pool);

    fg_pool_for(pool, n, grain, task, job);

    for (i = 0; i < n; i++) {
        if (atomic_load(&job->hits[i]) != 1) {
            diag("item %zu ran %d times", i, atomic_load(&job->hits[i]));
            return 0;
        }
    }

    if (atomic_load(&job->bad_chunk) || atomic_load(&job->bad_thread)) {
        diag("bad chunk %d, bad thread %d", atomic_load(&job->bad_chunk),
             atomic_load(&job->bad_thread));
        return 0;
    }

    /* never more chunks than threads, nor than the grain allows */
    if ((unsigned) atomic_load(&job->calls) > job->threads
        || (size_t) atomic_load(&job->calls) > (n + job->grain - 1)
                                               / job->grain)
    {
        diag("%d calls", atomic_load(&job->calls));
        return 0;
    }

    return 1;
}


int
main(void)
{
    int               pass;
    size_t            ni, gi, rep;
    unsigned          threads;
    fg_pool_t        *pool;
    static job_t      job;
    struct timespec   pause = { 0, 5 * 1000 * 1000 };

    static const size_t  ns[] = { 0, 1, 2, 5, 16, 17, 100, 1000, 4096 };
    static const size_t  grains[] = { 0, 1, 7, 16, 64 };

    is_int(fg_pool_threads(NULL), 1, "a NULL pool has one thread");
    ok(run(NULL, &job, 100, 16), "a NULL pool runs everything inline");

    for (threads = 1; threads <= 4; threads++) {
        pool = fg_pool_create(threads);

        if (!ok(pool != NULL, "pool of %u threads created", threads)) {
            continue;
        }

        is_int(fg_pool_threads(pool), threads, "it says %u threads", threads);

        pass = 1;

        for (ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++) {
            for (gi = 0; gi < sizeof(grains) / sizeof(grains[0]); gi++) {
                pass &= run(pool, &job, ns[ni], grains[gi]);
            }
        }

        ok(pass, "%u threads: each item once, chunks on the grain", threads);

        /* back to back: workers still spinning from the previous job */
        pass = 1;

        for (rep = 0; rep < 2000 && pass; rep++) {
            pass &= run(pool, &job, 64 + rep % 7, 1 + rep % 5);
        }

        ok(pass, "%u threads: 2000 jobs back to back", threads);

        /* after a pause: workers asleep on the condition variable */
        pass = 1;

        for (rep = 0; rep < 5 && pass; rep++) {
            nanosleep(&pause, NULL);
            pass &= run(pool, &job, 1000, 8);
        }

        ok(pass, "%u threads: jobs after the workers went to sleep",
           threads);

        fg_pool_destroy(pool);
    }

    fg_pool_destroy(NULL);
    ok(1, "destroying a NULL pool is a no-op");

    return done_testing();
}
