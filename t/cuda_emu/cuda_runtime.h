
/*
 * fairgate: CUDA C++'s device side on the CPU, so that the real kernels
 * (the .cu files of kernels/cuda/) run in make test on machines without a
 * GPU.
 * Force-included, as nvcc force-includes its cuda_runtime.h, when g++
 * compiles a .cu (t/cuda_emu/cuda_emu.mk), after a rewrite of its
 * launches:
 *
 *     kernel<<<grid, block, smem, stream>>>(args)
 *         -> kernel % fg_simt_launch(grid, block, smem, stream)(args)
 *     extern __shared__ T name[];
 *         -> T *name = (T *) fg_simt_dyn_smem();
 *
 * Each thread of a block is a fiber (fg_simt.cc): __syncthreads() and the
 * warp shuffles are barriers at which fibers yield, so the kernels run as
 * written, barriers, shuffles and shared memory included, and barrier
 * divergence, partial-warp shuffles and bad launch shapes are reported as
 * a GPU would fail on them.  __shared__ variables are function statics,
 * one per CPU thread: a CPU thread runs one block at a time.
 */

#ifndef _FG_CUDA_EMU_DEVICE_H_INCLUDED_
#define _FG_CUDA_EMU_DEVICE_H_INCLUDED_


#ifndef __cplusplus
#error "cuda_runtime.h (emulated) is for the kernels' C++ only"
#endif

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <tuple>
#include <type_traits>

#include "cuda_runtime_api.h"


#define __global__
#define __device__
#define __host__
#define __forceinline__         inline
#define __launch_bounds__(...)
#define __shared__              static thread_local


struct uint3 {
    unsigned  x, y, z;
};

struct dim3 {
    unsigned  x, y, z;

    dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1)
        : x(vx), y(vy), z(vz) {}
};

struct alignas(16) uint4 {
    unsigned  x, y, z, w;
};

struct alignas(16) float4 {
    float  x, y, z, w;
};


/* ---- the running thread (fg_simt.cc) ---- */

extern thread_local const uint3  *fg_simt_tid;
extern thread_local uint3         fg_simt_bid;
extern thread_local dim3          fg_simt_bdim;
extern thread_local dim3          fg_simt_gdim;

#define threadIdx  (*fg_simt_tid)
#define blockIdx   fg_simt_bid
#define blockDim   fg_simt_bdim
#define gridDim    fg_simt_gdim

void __syncthreads(void);

/* this warp's exchange slots for a shuffle under mask, and its lane */
uint64_t *fg_simt_shfl_slots(unsigned mask, int *lane);
void fg_simt_warp_wait(void);

/* the launch's dynamic shared memory, filled with NaNs at each block */
void *fg_simt_dyn_smem(void);

/* reports a load not aligned to align bytes, as a GPU's fault */
void fg_simt_misaligned(const void *p, size_t align);

static inline void
fg_simt_aligned(const void *p, size_t align)
{
    if ((uintptr_t) p % align != 0) {
        fg_simt_misaligned(p, align);
    }
}

/*
 * The order in which a block's threads are queued: FG_SIMT_ORDER_MIXED
 * (the default) alternates first-first and last-first by block and
 * launch, so that a kernel missing a barrier reads stale values in some
 * of its blocks; the others force one order (FG_SIMT_ORDER=forward or
 * reverse in the environment, or this call in a test).
 */
#define FG_SIMT_ORDER_FORWARD  0
#define FG_SIMT_ORDER_REVERSE  1
#define FG_SIMT_ORDER_MIXED    2

void fg_simt_set_order(int order);


/* ---- intrinsics ---- */

template <typename T>
static inline T
min(T a, T b)
{
    return b < a ? b : a;
}


template <typename T>
static inline T
max(T a, T b)
{
    return a < b ? b : a;
}


static inline float
__uint_as_float(uint32_t u)
{
    float  f;

    memcpy(&f, &u, sizeof(f));

    return f;
}


static inline uint32_t
__float_as_uint(float f)
{
    uint32_t  u;

    memcpy(&u, &f, sizeof(u));

    return u;
}


/*
 * Cached and streaming loads: plain loads here, but a GPU faults on one
 * that is not aligned to its size (16 bytes for uint4 and float4), where
 * x86 does not: checked.
 */
template <typename T>
static inline T
__ldg(const T *p)
{
    fg_simt_aligned(p, alignof(T));

    return *p;
}


template <typename T>
static inline T
__ldcs(const T *p)
{
    fg_simt_aligned(p, alignof(T));

    return *p;
}


/*
 * A shuffle: each lane leaves its value in the warp's slots, waits for
 * the whole warp, and reads the source lane's; a lane outside the width's
 * segment (or before it, for up) keeps its own value, as on a GPU.
 */
template <typename T>
static inline T
fg_simt_shfl(unsigned mask, T v, int lane_delta, int mode, int width)
{
    T          r;
    int        lane, src, base;
    uint64_t  *slot;

    static_assert(sizeof(T) <= sizeof(uint64_t), "a shuffle moves 8 bytes");

    slot = fg_simt_shfl_slots(mask, &lane);
    memcpy(&slot[lane], &v, sizeof(T));

    fg_simt_warp_wait();

    base = lane - lane % width;
    src = mode ? lane - lane_delta : lane ^ lane_delta;

    if (src < base || src >= base + width) {
        return v;
    }

    memcpy(&r, &slot[src], sizeof(T));

    return r;
}


template <typename T>
static inline T
__shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32)
{
    return fg_simt_shfl(mask, v, lane_mask, 0, width);
}


template <typename T>
static inline T
__shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32)
{
    return fg_simt_shfl(mask, v, (int) delta, 1, width);
}


/* ---- launches ---- */

typedef struct {
    dim3          grid;
    dim3          block;
    size_t        smem;
    cudaStream_t  stream;
} fg_simt_cfg_t;


/*
 * Runs body(arg) in each thread of each block of cfg, or records it in a
 * graph being captured (fg_cuda_emu.c); a bad shape sets the launch's
 * error and runs nothing.
 */
void fg_simt_submit(const fg_simt_cfg_t *cfg, void (*run)(const void *arg),
    const void *arg, size_t size);
void fg_simt_run(const fg_simt_cfg_t *cfg, void (*body)(const void *arg),
    const void *arg);


/* a launch: the kernel, its shape and its arguments, copied as they are */
template <typename... P>
struct fg_simt_call_t {
    fg_simt_cfg_t       cfg;
    void              (*kernel)(P...);
    std::tuple<P...>    args;
};


template <typename... P>
static void
fg_simt_call_thread(const void *arg)
{
    const fg_simt_call_t<P...>  *c = (const fg_simt_call_t<P...> *) arg;

    std::apply(c->kernel, c->args);
}


template <typename... P>
static void
fg_simt_call_run(const void *arg)
{
    const fg_simt_call_t<P...>  *c = (const fg_simt_call_t<P...> *) arg;

    fg_simt_run(&c->cfg, fg_simt_call_thread<P...>, c);
}


template <typename... A>
struct fg_simt_bound_t {
    fg_simt_cfg_t     cfg;
    std::tuple<A...>  args;
};


struct fg_simt_launch_t {
    fg_simt_cfg_t  cfg;

    template <typename... A>
    fg_simt_bound_t<A...>
    operator()(A... a) const
    {
        return fg_simt_bound_t<A...>{cfg, std::tuple<A...>(a...)};
    }
};


static inline fg_simt_launch_t
fg_simt_launch(dim3 grid, dim3 block, size_t smem = 0, cudaStream_t s = 0)
{
    return fg_simt_launch_t{{grid, block, smem, s}};
}


/* kernel % fg_simt_launch(...)(args): converts args to the kernel's types */
template <typename... P, typename... A>
static inline void
operator%(void (*kernel)(P...), const fg_simt_bound_t<A...> &b)
{
    fg_simt_call_t<P...>  c{b.cfg, kernel, b.args};

    static_assert((std::is_trivially_copyable<P>::value && ...),
                  "a graph records a launch's arguments as bytes");

    fg_simt_submit(&c.cfg, fg_simt_call_run<P...>, &c, sizeof(c));
}


#endif /* _FG_CUDA_EMU_DEVICE_H_INCLUDED_ */
