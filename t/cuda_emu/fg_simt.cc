
/*
 * fairgate: the threads of each CUDA block as fibers on a CPU thread, for
 * the kernels compiled against the emulated cuda_runtime.h here.
 *
 * A thread runs until it waits (__syncthreads(), a shuffle) or returns,
 * then switches straight to the next thread in the run queue.  The last
 * lane of a warp to reach a shuffle queues the warp again; the last
 * thread to reach __syncthreads() queues the block.  A queue that runs
 * dry otherwise is what would hang or be undefined on a GPU (lanes of a
 * warp split between a shuffle and a barrier), as is a shuffle naming
 * lanes that have returned or do not exist: it is reported with the
 * kernel's shape and the process aborts.  Threads that returned count as
 * arrived at __syncthreads(), as on the hardware.
 *
 * A block's threads are queued first first or last first, alternating by
 * block and launch (FG_SIMT_ORDER=forward or reverse forces one): a
 * kernel missing a barrier then reads stale values in some blocks, and
 * the tests' comparisons fail.
 *
 * Blocks are shared out among CPU threads (FG_SIMT_THREADS, by default
 * one per CPU), each with its own fibers, on stacks of 64 KiB with a
 * guard page mapped once; a launch returns when all its blocks have run.
 * Fibers are Boost.Context's.
 */


#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <boost/context/fiber.hpp>

/* where valgrind's header is, the fibers' stacks are made known to it */
#if defined __has_include
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif

#ifndef VALGRIND_STACK_REGISTER
#define VALGRIND_STACK_REGISTER(lo, hi)  0
#endif

#include "cuda_runtime.h"


#define FG_SIMT_MAX_THREADS  1024
#define FG_SIMT_MAX_WARPS    (FG_SIMT_MAX_THREADS / 32)
#define FG_SIMT_STACK        (64 * 1024)
#define FG_SIMT_SMEM         (48 * 1024)


namespace fg_ctx = boost::context;


enum {
    FG_SIMT_RUN = 0,
    FG_SIMT_BARRIER,
    FG_SIMT_SHUFFLE,
    FG_SIMT_DONE
};


typedef struct {
    fg_ctx::fiber   self;           /* resumed to run the thread */
    uint3           tid;
    unsigned        lin;            /* tid as one number: warp, lane */
    unsigned        shuffles;       /* done: the parity of its slots */
    int             state;
} fg_simt_thread_t;


/* a CPU thread's fibers and the block they run */
typedef struct {
    fg_simt_thread_t    th[FG_SIMT_MAX_THREADS];
    fg_simt_thread_t    sched;              /* fg_simt_run() itself */
    fg_simt_thread_t   *cur;
    fg_simt_thread_t   *prev;               /* what switched to cur */
    unsigned            n;
    unsigned            runq[FG_SIMT_MAX_THREADS];
    unsigned            head;
    unsigned            queued;
    unsigned            shuffling[FG_SIMT_MAX_WARPS];
    unsigned            returned[FG_SIMT_MAX_WARPS];
    unsigned            at_barrier;
    unsigned            done;
    uint64_t            slots[FG_SIMT_MAX_WARPS][2][32];
    char               *stacks;
    size_t              stack_size;         /* with its guard page */
    unsigned char      *smem;
    const fg_simt_cfg_t *cfg;
    void              (*body)(const void *arg);
    const void         *arg;
    unsigned long       launch;
    int                 reverse;
} fg_simt_cpu_t;


/* Boost.Context's stack allocator, handing out the stacks mapped once */
struct fg_simt_stack_t {
    char    *top;
    size_t   size;

    fg_ctx::stack_context
    allocate()
    {
        fg_ctx::stack_context  sc;

        sc.sp = top;
        sc.size = size;

        return sc;
    }

    void
    deallocate(fg_ctx::stack_context &) noexcept
    {
    }
};


/* the launch that the CPU threads share */
typedef struct {
    std::mutex                   mu;
    std::condition_variable      go;
    std::condition_variable      idle;
    unsigned                     helpers;
    unsigned                     busy;          /* helpers still running */
    unsigned long                launch;        /* wakes the helpers */
    const fg_simt_cfg_t         *cfg;
    void                       (*body)(const void *arg);
    const void                  *arg;
    unsigned long                seq;           /* this launch's number */
    size_t                       blocks;
    std::atomic<size_t>          next;
} fg_simt_pool_t;


thread_local const uint3  *fg_simt_tid;
thread_local uint3         fg_simt_bid;
thread_local dim3          fg_simt_bdim;
thread_local dim3          fg_simt_gdim;

static thread_local fg_simt_cpu_t  *fg_simt_cpu;
static fg_simt_pool_t              *fg_simt_pool;
static std::atomic<int>             fg_simt_order(-1);


void
fg_simt_set_order(int order)
{
    fg_simt_order = order;
}


static void fg_simt_fail(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));


static void
fg_simt_fail(const char *fmt, ...)
{
    va_list               ap;
    const fg_simt_cfg_t  *c;

    c = fg_simt_cpu->cfg;

    fprintf(stderr, "fg_simt: kernel <<<(%u,%u,%u), (%u,%u,%u), %zu>>>, "
            "block (%u,%u,%u): ", c->grid.x, c->grid.y, c->grid.z,
            c->block.x, c->block.y, c->block.z, c->smem, fg_simt_bid.x,
            fg_simt_bid.y, fg_simt_bid.z);

    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);

    fputc('\n', stderr);
    abort();
}


static fg_simt_cpu_t *
fg_simt_cpu_create(void)
{
    char           *p;
    size_t          page, i;
    fg_simt_cpu_t  *cpu;

    cpu = new fg_simt_cpu_t();

    page = (size_t) sysconf(_SC_PAGESIZE);
    cpu->stack_size = FG_SIMT_STACK + page;

    p = (char *) mmap(NULL, cpu->stack_size * FG_SIMT_MAX_THREADS,
                      PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS
                      | MAP_NORESERVE, -1, 0);

    if (p == MAP_FAILED) {
        perror("fg_simt: mmap stacks");
        abort();
    }

    /* a guard page under each stack: an overflow faults, not corrupts */
    for (i = 0; i < FG_SIMT_MAX_THREADS; i++) {
        if (mprotect(p + i * cpu->stack_size, page, PROT_NONE) != 0) {
            perror("fg_simt: mprotect");
            abort();
        }

        (void) VALGRIND_STACK_REGISTER(p + i * cpu->stack_size + page,
                                       p + (i + 1) * cpu->stack_size);
    }

    cpu->stacks = p;
    cpu->smem = (unsigned char *) aligned_alloc(16, FG_SIMT_SMEM);

    if (cpu->smem == NULL) {
        abort();
    }

    return cpu;
}


static void
fg_simt_queue(fg_simt_cpu_t *cpu, fg_simt_thread_t *t)
{
    t->state = FG_SIMT_RUN;
    cpu->runq[(cpu->head + cpu->queued++) % FG_SIMT_MAX_THREADS] = t->lin;
}


static unsigned
fg_simt_lanes(fg_simt_cpu_t *cpu, unsigned warp)
{
    return cpu->n - warp * 32 < 32 ? cpu->n - warp * 32 : 32;
}


/* what runs next: the queue's head, or the block's end */
static fg_simt_thread_t *
fg_simt_next(fg_simt_cpu_t *cpu)
{
    unsigned           w, i, end, shuffle, barrier;
    fg_simt_thread_t  *t;

    if (cpu->queued) {
        t = &cpu->th[cpu->runq[cpu->head]];
        cpu->head = (cpu->head + 1) % FG_SIMT_MAX_THREADS;
        cpu->queued--;

        return t;
    }

    if (cpu->done == cpu->n) {
        return &cpu->sched;
    }

    /* nothing can run and the block has not ended: say where it hangs */
    for (w = 0; w * 32 < cpu->n; w++) {
        end = w * 32 + fg_simt_lanes(cpu, w);
        shuffle = 0;
        barrier = 0;

        for (i = w * 32; i < end; i++) {
            shuffle += cpu->th[i].state == FG_SIMT_SHUFFLE;
            barrier += cpu->th[i].state == FG_SIMT_BARRIER;
        }

        if (shuffle && barrier) {
            fg_simt_fail("warp %u: %u lanes at a shuffle, %u at "
                         "__syncthreads()", w, shuffle, barrier);
        }
    }

    fg_simt_fail("the block hangs: %u threads at __syncthreads(), %u "
                 "returned", cpu->at_barrier, cpu->done);
}


static void
fg_simt_switch(fg_simt_cpu_t *cpu, fg_simt_thread_t *to)
{
    fg_ctx::fiber  c;

    cpu->prev = cpu->cur;
    cpu->cur = to;
    fg_simt_tid = &to->tid;

    c = std::move(to->self).resume();

    /* running again, switched to by cpu->prev: keep where it stopped */
    cpu->prev->self = std::move(c);
}


static void
fg_simt_release_barrier(fg_simt_cpu_t *cpu)
{
    unsigned  k, i;

    cpu->at_barrier = 0;

    for (k = 0; k < cpu->n; k++) {
        i = cpu->reverse ? cpu->n - 1 - k : k;

        if (cpu->th[i].state == FG_SIMT_BARRIER) {
            fg_simt_queue(cpu, &cpu->th[i]);
        }
    }
}


static void
fg_simt_wait(int state)
{
    unsigned           w, k, i;
    fg_simt_cpu_t     *cpu;
    fg_simt_thread_t  *t, *next;

    cpu = fg_simt_cpu;
    t = cpu->cur;
    t->state = state;
    w = t->lin / 32;

    switch (state) {

    case FG_SIMT_SHUFFLE:
        if (++cpu->shuffling[w] + cpu->returned[w] == fg_simt_lanes(cpu, w))
        {
            if (cpu->returned[w]) {
                fg_simt_fail("warp %u: a shuffle with %u of its lanes "
                             "returned", w, cpu->returned[w]);
            }

            cpu->shuffling[w] = 0;

            for (k = 0; k < fg_simt_lanes(cpu, w); k++) {
                i = w * 32 + (cpu->reverse ? 31 - k : k);
                fg_simt_queue(cpu, &cpu->th[i]);
            }
        }

        break;

    case FG_SIMT_BARRIER:
        if (++cpu->at_barrier + cpu->done == cpu->n) {
            fg_simt_release_barrier(cpu);
        }

        break;

    default: /* FG_SIMT_DONE */
        cpu->returned[w]++;
        cpu->done++;

        if (cpu->shuffling[w]
            && cpu->shuffling[w] + cpu->returned[w] == fg_simt_lanes(cpu, w))
        {
            fg_simt_fail("warp %u: a shuffle with %u of its lanes returned",
                         w, cpu->returned[w]);
        }

        if (cpu->at_barrier && cpu->at_barrier + cpu->done == cpu->n) {
            fg_simt_release_barrier(cpu);
        }
    }

    next = fg_simt_next(cpu);

    if (next != t) {
        fg_simt_switch(cpu, next);
    }
}


void
__syncthreads(void)
{
    fg_simt_wait(FG_SIMT_BARRIER);
}


void
fg_simt_warp_wait(void)
{
    fg_simt_wait(FG_SIMT_SHUFFLE);
}


uint64_t *
fg_simt_shfl_slots(unsigned mask, int *lane)
{
    unsigned           warp, lanes, full;
    fg_simt_cpu_t     *cpu;
    fg_simt_thread_t  *t;

    cpu = fg_simt_cpu;
    t = cpu->cur;
    warp = t->lin / 32;
    lanes = fg_simt_lanes(cpu, warp);
    full = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;

    if (mask & ~full) {
        fg_simt_fail("warp %u: a shuffle's mask 0x%08x names lanes that "
                     "do not exist (the warp has %u)", warp, mask, lanes);
    }

    if (mask != full) {
        fg_simt_fail("warp %u: a shuffle over part of the warp (mask "
                     "0x%08x) is not emulated", warp, mask);
    }

    *lane = (int) (t->lin % 32);

    return cpu->slots[warp][t->shuffles++ & 1];
}


void
fg_simt_misaligned(const void *p, size_t align)
{
    fg_simt_fail("thread (%u,%u,%u): a load from %p, not aligned to its %zu "
                 "bytes (a GPU's misaligned address fault)",
                 fg_simt_tid->x, fg_simt_tid->y, fg_simt_tid->z, p, align);
}


void *
fg_simt_dyn_smem(void)
{
    return fg_simt_cpu->smem;
}


/*
 * A fiber runs its thread in every block and launch: when the kernel
 * returns it waits, done, until a later block queues it again, so that a
 * block costs no fiber set-up.
 */
static void
fg_simt_block(fg_simt_cpu_t *cpu)
{
    unsigned           k, i;
    fg_simt_stack_t    st;
    fg_simt_thread_t  *t;

    cpu->reverse = fg_simt_order == FG_SIMT_ORDER_MIXED
                   ? (int) ((cpu->launch + fg_simt_bid.x + fg_simt_bid.y
                             + fg_simt_bid.z) & 1)
                   : fg_simt_order == FG_SIMT_ORDER_REVERSE;
    memset(cpu->smem, 0xff, cpu->cfg->smem);
    memset(cpu->shuffling, 0, sizeof(cpu->shuffling));
    memset(cpu->returned, 0, sizeof(cpu->returned));
    cpu->at_barrier = 0;
    cpu->done = 0;
    cpu->head = 0;
    cpu->queued = 0;

    for (i = 0; i < cpu->n; i++) {
        t = &cpu->th[i];
        t->tid.x = i % cpu->cfg->block.x;
        t->tid.y = i / cpu->cfg->block.x % cpu->cfg->block.y;
        t->tid.z = i / (cpu->cfg->block.x * cpu->cfg->block.y);
        t->shuffles = 0;

        if (t->self) {
            continue;
        }

        t->lin = i;
        st.top = cpu->stacks + (i + 1) * cpu->stack_size;
        st.size = FG_SIMT_STACK;

        t->self = fg_ctx::fiber(std::allocator_arg, st,
            [cpu, t](fg_ctx::fiber &&c) {
                cpu->prev->self = std::move(c);

                for ( ;; ) {
                    cpu->body(cpu->arg);
                    fg_simt_wait(FG_SIMT_DONE);
                }

                return fg_ctx::fiber();
            });
    }

    for (k = 0; k < cpu->n; k++) {
        fg_simt_queue(cpu, &cpu->th[cpu->reverse ? cpu->n - 1 - k : k]);
    }

    /* back here when the last thread returns */
    cpu->cur = &cpu->sched;
    fg_simt_switch(cpu, fg_simt_next(cpu));

    cpu->cur = NULL;
    fg_simt_tid = NULL;
}


/* a CPU thread's share of a launch: blocks taken in turn */
static void
fg_simt_work(fg_simt_pool_t *pool)
{
    size_t               b, grid_xy;
    fg_simt_cpu_t       *cpu;
    const fg_simt_cfg_t *cfg;

    if (fg_simt_cpu == NULL) {
        fg_simt_cpu = fg_simt_cpu_create();
    }

    cpu = fg_simt_cpu;
    cfg = pool->cfg;

    cpu->cfg = cfg;
    cpu->body = pool->body;
    cpu->arg = pool->arg;
    cpu->launch = pool->seq;
    cpu->n = cfg->block.x * cfg->block.y * cfg->block.z;
    fg_simt_bdim = cfg->block;
    fg_simt_gdim = cfg->grid;
    grid_xy = (size_t) cfg->grid.x * cfg->grid.y;

    while ((b = pool->next++) < pool->blocks) {
        fg_simt_bid.x = (unsigned) (b % cfg->grid.x);
        fg_simt_bid.y = (unsigned) (b / cfg->grid.x % cfg->grid.y);
        fg_simt_bid.z = (unsigned) (b / grid_xy);

        fg_simt_block(cpu);
    }

    cpu->cfg = NULL;
}


static void
fg_simt_worker(fg_simt_pool_t *pool)
{
    unsigned long  seen;

    seen = 0;

    for ( ;; ) {
        {
            std::unique_lock<std::mutex>  lock(pool->mu);

            pool->go.wait(lock, [pool, seen] { return pool->launch != seen; });
            seen = pool->launch;
        }

        fg_simt_work(pool);

        {
            std::lock_guard<std::mutex>  lock(pool->mu);

            if (--pool->busy == 0) {
                pool->idle.notify_one();
            }
        }
    }
}


/* FG_SIMT_THREADS: CPU threads running blocks (the CPUs online, up to 8) */
static fg_simt_pool_t *
fg_simt_pool_create(void)
{
    long             n;
    char            *env;
    unsigned         i;
    fg_simt_pool_t  *pool;

    if (fg_simt_order < 0) {
        env = getenv("FG_SIMT_ORDER");
        fg_simt_order = env == NULL ? FG_SIMT_ORDER_MIXED
                        : strcmp(env, "reverse") == 0 ? FG_SIMT_ORDER_REVERSE
                        : strcmp(env, "forward") == 0 ? FG_SIMT_ORDER_FORWARD
                        : FG_SIMT_ORDER_MIXED;
    }

    env = getenv("FG_SIMT_THREADS");
    n = env != NULL ? atol(env) : sysconf(_SC_NPROCESSORS_ONLN);
    n = n < 1 ? 1 : (n > 8 ? 8 : n);

    pool = new fg_simt_pool_t();
    pool->helpers = (unsigned) n - 1;

    /* detached and never joined: they wait for launches until exit */
    for (i = 0; i < pool->helpers; i++) {
        std::thread(fg_simt_worker, pool).detach();
    }

    return pool;
}


void
fg_simt_run(const fg_simt_cfg_t *cfg, void (*body)(const void *arg),
    const void *arg)
{
    fg_simt_pool_t     *pool;
    static std::mutex   one;

    /* the emulated device runs one launch at a time, as a stream does */
    std::lock_guard<std::mutex>  launch(one);

    if (fg_simt_cpu != NULL && fg_simt_cpu->cfg != NULL) {
        fg_simt_fail("a launch from inside a kernel");
    }

    if (fg_simt_pool == NULL) {
        fg_simt_pool = fg_simt_pool_create();
    }

    pool = fg_simt_pool;

    pool->cfg = cfg;
    pool->body = body;
    pool->arg = arg;
    pool->seq++;
    pool->blocks = (size_t) cfg->grid.x * cfg->grid.y * cfg->grid.z;
    pool->next = 0;

    if (pool->helpers == 0 || pool->blocks == 1) {
        fg_simt_work(pool);
        return;
    }

    {
        std::lock_guard<std::mutex>  lock(pool->mu);

        pool->busy = pool->helpers;
        pool->launch++;
    }

    pool->go.notify_all();

    fg_simt_work(pool);

    std::unique_lock<std::mutex>  lock(pool->mu);

    pool->idle.wait(lock, [pool] { return pool->busy == 0; });
}


/* the limits of compute capability 8.x and 9.0 without opt-ins */
void
fg_simt_submit(const fg_simt_cfg_t *cfg, void (*run)(const void *arg),
    const void *arg, size_t size)
{
    const dim3  *g, *b;

    g = &cfg->grid;
    b = &cfg->block;

    if (b->x == 0 || b->y == 0 || b->z == 0 || b->x > 1024 || b->y > 1024
        || b->z > 64 || (size_t) b->x * b->y * b->z > FG_SIMT_MAX_THREADS
        || g->x == 0 || g->y == 0 || g->z == 0 || g->x > 0x7fffffffu
        || g->y > 65535 || g->z > 65535)
    {
        fg_emu_set_error(cudaErrorInvalidConfiguration);
        return;
    }

    if (cfg->smem > FG_SIMT_SMEM) {
        fg_emu_set_error(cudaErrorInvalidValue);
        return;
    }

    fg_emu_set_error(fg_emu_launch(run, arg, size));
}
