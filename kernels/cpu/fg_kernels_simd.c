
/*
 * fairgate: the CPU kernels' start: which paths run (the SIMD ones where
 * the CPU has AVX2, FMA and F16C, and the quantized products' AVX-512
 * ones where it has AVX512-VNNI too), and OpenBLAS kept off threads of its
 * own.  Every other file of kernels/cpu reads fg_k_simd; this one calls
 * none of them.
 */


#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "fg_kernels.h"
#include "fg_kernels_simd.h"


/* OpenBLAS's pthread builds have it, not cblas.h: fg_k_init() says why */
extern int blas_thread_shutdown_(void) __attribute__((weak));


int  fg_k_simd;
int  fg_k_simd512;
int  fg_k_simd_bf16;


/* the paths the CPU has, AVX-512 only when avx512 is set */
static void
fg_k_simd_detect(int avx512)
{
    fg_k_simd = 0;
    fg_k_simd512 = 0;
    fg_k_simd_bf16 = 0;

#if FG_K_X86
    __builtin_cpu_init();

    fg_k_simd = __builtin_cpu_supports("avx2")
                && __builtin_cpu_supports("fma")
                && __builtin_cpu_supports("f16c");

    fg_k_simd512 = avx512 && fg_k_simd
                   && __builtin_cpu_supports("avx512f")
                   && __builtin_cpu_supports("avx512vl")
                   && __builtin_cpu_supports("avx512bw")
                   && __builtin_cpu_supports("avx512vnni");

    fg_k_simd_bf16 = fg_k_simd512 && __builtin_cpu_supports("avx512bf16");
#else
    (void) avx512;
#endif
}


const char *
fg_k_init(void)
{
    const char  *env;

    /*
     * FAIRGATE_CPU_SIMD=avx2 or generic holds the engine to a lesser path
     * than the CPU has: to measure it beside a build of llama.cpp for that
     * level, or to match a fleet's oldest machine.
     */
    env = getenv("FAIRGATE_CPU_SIMD");

    if (env && strcmp(env, "generic") == 0) {
        fg_k_set_simd(0);

    } else {
        fg_k_simd_detect(env == NULL || strcmp(env, "avx2") != 0);
    }

    /*
     * OpenBLAS would otherwise start its own threads (which spin after
     * each call) on top of the pool's, each product on every core.
     */
    openblas_set_num_threads(1);

    /*
     * That only keeps later calls off its threads: its pthread build
     * starts one per further core when it is loaded, before main(), and
     * each spins on sched_yield() for 2^28 cycles (0.13 s here) before it
     * sleeps.  A 1-thread run then had a second core busy for its first
     * tenth of a second (bench_engine's first cases showed 2 CPUs for 1
     * thread).  blas_thread_shutdown_(), which OpenBLAS itself runs
     * before a fork(), ends them, and with one thread no call starts them
     * again; openblas_set_num_threads() does, so it comes first.  Other
     * builds (OpenMP, serial) lack it: a weak reference.
     * OPENBLAS_NUM_THREADS=1 in the environment avoids them altogether.
     */
    if (blas_thread_shutdown_ != NULL) {
        blas_thread_shutdown_();
    }

    return fg_k_simd512 ? "avx512vnni" : fg_k_simd ? "avx2" : "generic";
}


void
fg_k_set_simd(int on)
{
    if (on) {
        fg_k_simd_detect(on != FG_K_SIMD_AVX2);

    } else {
        fg_k_simd = 0;
        fg_k_simd512 = 0;
        fg_k_simd_bf16 = 0;
    }
}
