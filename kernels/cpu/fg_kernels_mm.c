
/*
 * fairgate: weight types and matrix products of the CPU backend.
 *
 * y = x * W^T is memory-bound when x has few rows (decode: every weight is
 * read once per step and used n times) and compute-bound when it has many
 * (prefill).  So there are two paths, picked by n:
 *
 * - n <= FG_K_MM_SMALL (16): direct kernels read weights in their own
 *   type and use them from registers: F16 and BF16 widened to float (F16C,
 *   shifts), Q8_0 with int8 products on x quantized per 32-block, which
 *   reads 1.06 bytes per weight instead of 4 and multiplies 32 pairs per
 *   instruction.  Blocks of 4 weight rows by 2 tokens share each load and
 *   keep 8 sums in flight.  At n = 1 they run at the memory's speed, about
 *   twice OpenBLAS's sgemm for F32; at n = 8 F16 goes 2.5x faster than
 *   widening tiles for sgemm; at n = 32 sgemm is ahead for F32.
 * - larger n: a tile of weight rows is widened to float in a per-thread
 *   buffer and OpenBLAS's sgemm multiplies it (F32 needs no tile); its
 *   blocked kernels win once each weight is reused enough.  For Q8_0, x
 *   is first rounded per 32-block to the values the direct kernels
 *   quantize it to, so that a row's products see the same inputs whatever
 *   the batch's size and path: the results then differ by float rounding
 *   alone, not by the 8-bit rounding of x.
 *
 * The direct kernels make each output with the same operations whatever
 * the batch and the split over threads, so a row's result does not depend
 * on what it is batched with; fg_k_set_batch_invariant() uses them for
 * every n.  Threads split the output columns (weight rows), the only
 * split that also serves n = 1.  Figures: docs/kernels.md.
 */


#include <math.h>
#include <string.h>

#include <cblas.h>

#include "fg_kernels.h"
#include "fg_kernels_simd.h"

#if FG_K_X86
#include <immintrin.h>
#endif


/* floats of a thread's tile of widened weights: 256 KiB, in L2 */
#define FG_K_MM_TILE        65536

/*
 * The direct kernels read weights a group of 4 rows at a time.  Short
 * groups read faster when the next group is prefetched meanwhile (30-40%
 * for F16, BF16 and Q8_0 rows of 768 here: the hardware prefetcher starts
 * over on each group); long ones already stream at memory speed, and
 * there prefetching a whole group ahead evicts lines still in use (F32
 * rows of 3072 lost 40%).  bench_kernels --n 1 measured both.
 */
#define FG_K_MM_PF_GROUP    16384

/* multiply-adds below which a product runs on one thread */
#define FG_K_MM_PAR_MIN     65536


/* x quantized for Q8_0 products: a float scale, faster than a half here */
typedef struct {
    float           d;
    int8_t          qs[FG_K_QK8_0];
} fg_k_block_q8x_t;


typedef struct {
    float                   *y;
    const float             *x;
    const fg_k_block_q8x_t  *xq;
    const void              *w;
    char                    *tiles;
    fg_k_type_e              type;
    size_t                   n;
    size_t                   in;
    size_t                   out;
    size_t                   tile_rows;
} fg_k_mm_t;


static void fg_k_mm_task(void *data, size_t r0, size_t r1, unsigned thread);
static void fg_k_mm_tiles(const fg_k_mm_t *mm, size_t r0, size_t r1,
    float *tile);
static void fg_k_mm_q8_generic(const fg_k_mm_t *mm, size_t r0, size_t r1);
static void fg_k_mm_float_generic(const fg_k_mm_t *mm, size_t r0,
    size_t r1);
static void fg_k_quant_x(fg_k_block_q8x_t *xq, const float *x, size_t n);
static void fg_k_round_x(float *xr, const float *x, size_t n);

#if FG_K_X86
static void fg_k_quant_x_avx2(fg_k_block_q8x_t *xq, const float *x,
    size_t n);
static void fg_k_round_x_avx2(float *xr, const float *x, size_t n);
static void fg_k_mm_small_avx2(const fg_k_mm_t *mm, size_t r0, size_t r1);
static void fg_k_mm_q8_avx2(const fg_k_mm_t *mm, size_t r0, size_t r1);
static void fg_k_dequant_row_avx2(fg_k_type_e type, const void *src,
    float *dst, size_t n);
#endif


/* OpenBLAS's pthread builds have it, not cblas.h: fg_k_init() says why */
extern int blas_thread_shutdown_(void) __attribute__((weak));


int     fg_k_simd;
size_t  fg_k_mm_direct_max = FG_K_MM_SMALL;

static int  fg_k_mm_invariant;


const char *
fg_k_init(void)
{
    fg_k_simd = 0;

#if FG_K_X86
    __builtin_cpu_init();

    fg_k_simd = __builtin_cpu_supports("avx2")
                && __builtin_cpu_supports("fma")
                && __builtin_cpu_supports("f16c");
#endif

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

    return fg_k_simd ? "avx2" : "generic";
}


void
fg_k_set_simd(int on)
{
    fg_k_simd = 0;

#if FG_K_X86
    if (on) {
        __builtin_cpu_init();

        fg_k_simd = __builtin_cpu_supports("avx2")
                    && __builtin_cpu_supports("fma")
                    && __builtin_cpu_supports("f16c");
    }
#else
    (void) on;
#endif
}


/* ---- conversions ---- */

float
fg_k_fp16_to_f32(uint16_t h)
{
    float     f;
    uint32_t  sign, exp, man, bits;

    sign = (uint32_t) (h & 0x8000) << 16;
    exp = (h >> 10) & 0x1f;
    man = h & 0x3ff;

    if (exp == 0x1f) {
        bits = sign | 0x7f800000 | (man << 13);

    } else if (exp == 0) {
        /* zero or subnormal: man * 2^-24, exact in float */
        f = (float) man * (1.0f / 16777216.0f);
        return sign ? -f : f;

    } else {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    }

    memcpy(&f, &bits, sizeof(float));

    return f;
}


uint16_t
fg_k_f32_to_fp16(float f)
{
    float     a;
    uint32_t  x, sign;

    memcpy(&x, &f, sizeof(float));

    sign = (x >> 16) & 0x8000;
    x &= 0x7fffffff;

    if (x >= 0x7f800000) {
        /* inf stays inf, a NaN stays a (quiet) NaN */
        return (uint16_t) (sign | 0x7c00 | (x > 0x7f800000 ? 0x200 : 0));
    }

    if (x >= 0x477ff000) {
        /* 65520 and above round to infinity */
        return (uint16_t) (sign | 0x7c00);
    }

    if (x < 0x38800000) {
        /* below the smallest normal half: units of 2^-24, rounded even */
        memcpy(&a, &x, sizeof(float));
        return (uint16_t) (sign | (uint32_t) rintf(a * 16777216.0f));
    }

    /* rebias the exponent, round the mantissa to 10 bits, ties to even */
    x -= 112u << 23;
    x += 0xfff + ((x >> 13) & 1);

    return (uint16_t) (sign | (x >> 13));
}


float
fg_k_bf16_to_f32(uint16_t h)
{
    float     f;
    uint32_t  bits;

    bits = (uint32_t) h << 16;
    memcpy(&f, &bits, sizeof(float));

    return f;
}


uint16_t
fg_k_f32_to_bf16(float f)
{
    uint32_t  x;

    memcpy(&x, &f, sizeof(float));

    if ((x & 0x7fffffff) > 0x7f800000) {
        return (uint16_t) ((x >> 16) | 0x40);
    }

    x += 0x7fff + ((x >> 16) & 1);

    return (uint16_t) (x >> 16);
}


size_t
fg_k_row_size(fg_k_type_e type, size_t n)
{
    switch (type) {

    case FG_K_F32:
        return n * sizeof(float);

    case FG_K_F16:
    case FG_K_BF16:
        return n * sizeof(uint16_t);

    case FG_K_Q8_0:
        if (n % FG_K_QK8_0) {
            return 0;
        }

        return n / FG_K_QK8_0 * sizeof(fg_k_block_q8_0_t);
    }

    return 0;
}


void
fg_k_dequant_row(fg_k_type_e type, const void *src, float *dst, size_t n)
{
    size_t                    i, j;
    float                     d;
    const uint16_t           *h;
    const fg_k_block_q8_0_t  *b;

#if FG_K_X86
    if (fg_k_simd) {
        fg_k_dequant_row_avx2(type, src, dst, n);
        return;
    }
#endif

    switch (type) {

    case FG_K_F32:
        memcpy(dst, src, n * sizeof(float));
        break;

    case FG_K_F16:
        h = src;

        for (i = 0; i < n; i++) {
            dst[i] = fg_k_fp16_to_f32(h[i]);
        }

        break;

    case FG_K_BF16:
        h = src;

        for (i = 0; i < n; i++) {
            dst[i] = fg_k_bf16_to_f32(h[i]);
        }

        break;

    case FG_K_Q8_0:
        b = src;

        for (i = 0; i < n / FG_K_QK8_0; i++) {
            d = fg_k_fp16_to_f32(b[i].d);

            for (j = 0; j < FG_K_QK8_0; j++) {
                dst[i * FG_K_QK8_0 + j] = d * b[i].qs[j];
            }
        }

        break;
    }
}


void
fg_k_quant_row(fg_k_type_e type, const float *src, void *dst, size_t n)
{
    size_t              i, j;
    float               amax, d, id;
    uint16_t           *h;
    fg_k_block_q8_0_t  *b;

    switch (type) {

    case FG_K_F32:
        memcpy(dst, src, n * sizeof(float));
        break;

    case FG_K_F16:
        h = dst;

        for (i = 0; i < n; i++) {
            h[i] = fg_k_f32_to_fp16(src[i]);
        }

        break;

    case FG_K_BF16:
        h = dst;

        for (i = 0; i < n; i++) {
            h[i] = fg_k_f32_to_bf16(src[i]);
        }

        break;

    case FG_K_Q8_0:
        b = dst;

        for (i = 0; i < n / FG_K_QK8_0; i++, src += FG_K_QK8_0) {
            amax = 0.0f;

            for (j = 0; j < FG_K_QK8_0; j++) {
                amax = fmaxf(amax, fabsf(src[j]));
            }

            d = amax / 127.0f;
            id = d != 0.0f ? 1.0f / d : 0.0f;

            b[i].d = fg_k_f32_to_fp16(d);

            for (j = 0; j < FG_K_QK8_0; j++) {
                b[i].qs[j] = (int8_t) roundf(src[j] * id);
            }
        }

        break;
    }
}


/* ---- matrix product ---- */

/* one weight of a row of type: row tails, the portable kernel */
static inline __attribute__((always_inline)) float
fg_k_load1(const void *w, size_t i, fg_k_type_e type)
{
    switch (type) {

    case FG_K_F16:
        return fg_k_fp16_to_f32(((const uint16_t *) w)[i]);

    case FG_K_BF16:
        return fg_k_bf16_to_f32(((const uint16_t *) w)[i]);

    default:
        return ((const float *) w)[i];
    }
}



static size_t
fg_k_mm_tile_rows(size_t in)
{
    size_t  rows;

    /* whole blocks of 16 rows, at least one, so y's columns stay aligned */
    rows = FG_K_MM_TILE / (in ? in : 1) / 16 * 16;

    return rows ? rows : 16;
}


/* bytes of x rounded for a Q8_0 sgemm: whole cache lines, tiles after */
static size_t
fg_k_mm_xr_size(size_t n, size_t in)
{
    return (n * in * sizeof(float) + 63) / 64 * 64;
}


static int
fg_k_mm_direct(size_t n)
{
    /*
     * Without AVX2 too, so that small batches are batch-invariant on any
     * CPU; a port to another SIMD would speed up the portable kernels.
     */
    return fg_k_mm_invariant || n <= fg_k_mm_direct_max;
}


void
fg_k_set_batch_invariant(int on)
{
    fg_k_mm_invariant = on;
}


size_t
fg_k_matmul_work_size(fg_k_type_e type, size_t n, size_t in,
    unsigned n_threads)
{
    size_t  xq, xr, tiles;

    /*
     * Any batch of 1 .. n rows: the direct path needs x quantized for
     * Q8_0, the other path a tile per thread and, for Q8_0, x rounded; a
     * product uses one of them.
     */
    xq = 0;
    xr = 0;
    tiles = 0;

    if (type == FG_K_Q8_0) {
        xq = (n < fg_k_mm_direct_max || fg_k_mm_invariant
              ? n : fg_k_mm_direct_max)
             * (in / FG_K_QK8_0) * sizeof(fg_k_block_q8x_t);

        if (!fg_k_mm_invariant && n > fg_k_mm_direct_max) {
            xr = fg_k_mm_xr_size(n, in);
        }
    }

    /* a tile is at most FG_K_MM_TILE floats, or 16 rows if longer */
    if (type != FG_K_F32) {
        tiles = (size_t) (n_threads ? n_threads : 1)
                * (16 * in > FG_K_MM_TILE ? 16 * in : FG_K_MM_TILE)
                * sizeof(float);
    }

    return xq > xr + tiles ? xq : xr + tiles;
}


void
fg_k_matmul(fg_pool_t *pool, float *y, const float *x, const void *w,
    fg_k_type_e type, size_t n, size_t in, size_t out, void *work)
{
    size_t     grain;
    fg_k_mm_t  mm;

    if (n == 0 || out == 0) {
        return;
    }

    mm.y = y;
    mm.x = x;
    mm.xq = NULL;
    mm.w = w;
    mm.tiles = work;
    mm.type = type;
    mm.n = n;
    mm.in = in;
    mm.out = out;
    mm.tile_rows = fg_k_mm_tile_rows(in);

    if (type == FG_K_Q8_0 && fg_k_mm_direct(n)) {
        fg_k_quant_x(work, x, n * in);

        mm.xq = work;

    } else if (type == FG_K_Q8_0) {
        fg_k_round_x(work, x, n * in);

        mm.x = work;
        mm.tiles = (char *) work + fg_k_mm_xr_size(n, in);
    }

    /* 16 rows at least (64 bytes of y), more when rows are short */
    grain = FG_K_MM_PAR_MIN / (n * in + 1) + 1;
    grain = (grain + 15) / 16 * 16;

    fg_pool_for(pool, out, grain, fg_k_mm_task, &mm);
}


static void
fg_k_mm_task(void *data, size_t r0, size_t r1, unsigned thread)
{
    float            *tile;
    const fg_k_mm_t  *mm;

    mm = data;

    if (fg_k_mm_direct(mm->n)) {

#if FG_K_X86
        if (fg_k_simd) {
            if (mm->type == FG_K_Q8_0) {
                fg_k_mm_q8_avx2(mm, r0, r1);

            } else {
                fg_k_mm_small_avx2(mm, r0, r1);
            }

            return;
        }
#endif

        if (mm->type == FG_K_Q8_0) {
            fg_k_mm_q8_generic(mm, r0, r1);

        } else {
            fg_k_mm_float_generic(mm, r0, r1);
        }

        return;
    }

    if (mm->type == FG_K_F32) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans,
                    (int) mm->n, (int) (r1 - r0), (int) mm->in, 1.0f,
                    mm->x, (int) mm->in,
                    (const float *) mm->w + r0 * mm->in, (int) mm->in,
                    0.0f, mm->y + r0, (int) mm->out);
        return;
    }

    tile = (float *) (mm->tiles
                      + (size_t) thread * mm->tile_rows * mm->in
                        * sizeof(float));

    fg_k_mm_tiles(mm, r0, r1, tile);
}


static void
fg_k_mm_tiles(const fg_k_mm_t *mm, size_t r0, size_t r1, float *tile)
{
    size_t       r, j, rows, row_size;
    const char  *w;

    row_size = fg_k_row_size(mm->type, mm->in);
    w = mm->w;

    for (r = r0; r < r1; r += rows) {
        rows = r1 - r < mm->tile_rows ? r1 - r : mm->tile_rows;

        for (j = 0; j < rows; j++) {
            fg_k_dequant_row(mm->type, w + (r + j) * row_size,
                             tile + j * mm->in, mm->in);
        }

        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans,
                    (int) mm->n, (int) rows, (int) mm->in, 1.0f,
                    mm->x, (int) mm->in, tile, (int) mm->in,
                    0.0f, mm->y + r, (int) mm->out);
    }
}


/*
 * A 32-block of x to int8 as fg_k_quant_row() rounds Q8_0 weights, with a
 * float scale: q = round(x * (127 / amax)), ties to even; returns the
 * scale amax / 127.  Both paths of a Q8_0 product see x through it (or
 * through its AVX2 twin, which makes the same operations: the same bits).
 */
static inline __attribute__((always_inline)) float
fg_k_quant_block(int8_t *q, const float *x)
{
    size_t  j;
    float   amax, id;

    amax = 0.0f;

    for (j = 0; j < FG_K_QK8_0; j++) {
        amax = fmaxf(amax, fabsf(x[j]));
    }

    id = amax != 0.0f ? 127.0f / amax : 0.0f;

    for (j = 0; j < FG_K_QK8_0; j++) {
        q[j] = (int8_t) lrintf(x[j] * id);
    }

    return amax / 127.0f;
}


/* x to int8 per 32-block for the direct kernels */
static void
fg_k_quant_x(fg_k_block_q8x_t *xq, const float *x, size_t n)
{
    size_t  i;

#if FG_K_X86
    if (fg_k_simd) {
        fg_k_quant_x_avx2(xq, x, n);
        return;
    }
#endif

    for (i = 0; i < n / FG_K_QK8_0; i++, x += FG_K_QK8_0) {
        xq[i].d = fg_k_quant_block(xq[i].qs, x);
    }
}


/* x as the direct kernels see it, d * q, in float for sgemm */
static void
fg_k_round_x(float *xr, const float *x, size_t n)
{
    size_t  i, j;
    float   d;
    int8_t  q[FG_K_QK8_0];

#if FG_K_X86
    if (fg_k_simd) {
        fg_k_round_x_avx2(xr, x, n);
        return;
    }
#endif

    for (i = 0; i + FG_K_QK8_0 <= n; i += FG_K_QK8_0) {
        d = fg_k_quant_block(q, x + i);

        for (j = 0; j < FG_K_QK8_0; j++) {
            xr[i + j] = d * q[j];
        }
    }
}


static void
fg_k_mm_q8_generic(const fg_k_mm_t *mm, size_t r0, size_t r1)
{
    size_t                    r, t, b, j, nb;
    float                     sum;
    int32_t                   isum;
    const fg_k_block_q8x_t   *xb;
    const fg_k_block_q8_0_t  *wb;

    nb = mm->in / FG_K_QK8_0;

    for (r = r0; r < r1; r++) {
        wb = (const fg_k_block_q8_0_t *) mm->w + r * nb;

        for (t = 0; t < mm->n; t++) {
            xb = mm->xq + t * nb;
            sum = 0.0f;

            for (b = 0; b < nb; b++) {
                isum = 0;

                /* integers: the compiler may vectorize the sum freely */
                for (j = 0; j < FG_K_QK8_0; j++) {
                    isum += wb[b].qs[j] * xb[b].qs[j];
                }

                sum += (float) isum * fg_k_fp16_to_f32(wb[b].d) * xb[b].d;
            }

            mm->y[t * mm->out + r] = sum;
        }
    }
}


/*
 * The portable direct kernel for F32, F16 and BF16; like the AVX2 one,
 * each sum is made the same way whatever the batch.
 */
static void
fg_k_mm_float_generic(const fg_k_mm_t *mm, size_t r0, size_t r1)
{
    size_t        r, t, i, in, rs;
    float         s0, s1, s2, s3;
    const char   *w;
    const float  *x;

    in = mm->in;
    rs = fg_k_row_size(mm->type, in);

    for (r = r0; r < r1; r++) {
        w = (const char *) mm->w + r * rs;

        for (t = 0; t < mm->n; t++) {
            x = mm->x + t * in;
            s0 = s1 = s2 = s3 = 0.0f;

            for (i = 0; i + 4 <= in; i += 4) {
                s0 += fg_k_load1(w, i, mm->type) * x[i];
                s1 += fg_k_load1(w, i + 1, mm->type) * x[i + 1];
                s2 += fg_k_load1(w, i + 2, mm->type) * x[i + 2];
                s3 += fg_k_load1(w, i + 3, mm->type) * x[i + 3];
            }

            for ( /* void */ ; i < in; i++) {
                s0 += fg_k_load1(w, i, mm->type) * x[i];
            }

            mm->y[t * mm->out + r] = (s0 + s1) + (s2 + s3);
        }
    }
}


/* ---- shared float helpers ---- */

#if FG_K_X86

FG_K_AVX2 static inline float
fg_k_hsum_avx2(__m256 v)
{
    __m128  s;

    s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));

    return _mm_cvtss_f32(s);
}


FG_K_AVX2 static float
fg_k_dot_avx2(const float *a, const float *b, size_t n)
{
    size_t  i;
    float   sum;
    __m256  s0, s1;

    s0 = _mm256_setzero_ps();
    s1 = _mm256_setzero_ps();

    for (i = 0; i + 16 <= n; i += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i),
                             s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8),
                             _mm256_loadu_ps(b + i + 8), s1);
    }

    if (i + 8 <= n) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i),
                             s0);
        i += 8;
    }

    sum = fg_k_hsum_avx2(_mm256_add_ps(s0, s1));

    for ( /* void */ ; i < n; i++) {
        sum += a[i] * b[i];
    }

    return sum;
}


FG_K_AVX2 static void
fg_k_axpy_avx2(float *y, float a, const float *x, size_t n)
{
    size_t  i;
    __m256  va;

    va = _mm256_set1_ps(a);

    for (i = 0; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i),
                                                _mm256_loadu_ps(y + i)));
    }

    for ( /* void */ ; i < n; i++) {
        y[i] += a * x[i];
    }
}

#endif


float
fg_k_dot(const float *a, const float *b, size_t n)
{
    size_t  i;
    float   s0, s1, s2, s3;

#if FG_K_X86
    if (fg_k_simd) {
        return fg_k_dot_avx2(a, b, n);
    }
#endif

    /* four sums: shorter dependency chains, and what SIMD would do */
    s0 = s1 = s2 = s3 = 0.0f;

    for (i = 0; i + 4 <= n; i += 4) {
        s0 += a[i] * b[i];
        s1 += a[i + 1] * b[i + 1];
        s2 += a[i + 2] * b[i + 2];
        s3 += a[i + 3] * b[i + 3];
    }

    for ( /* void */ ; i < n; i++) {
        s0 += a[i] * b[i];
    }

    return (s0 + s1) + (s2 + s3);
}


void
fg_k_axpy(float *y, float a, const float *x, size_t n)
{
    size_t  i;

#if FG_K_X86
    if (fg_k_simd) {
        fg_k_axpy_avx2(y, a, x, n);
        return;
    }
#endif

    for (i = 0; i < n; i++) {
        y[i] += a * x[i];
    }
}


/* ---- AVX2 paths ---- */

#if FG_K_X86

FG_K_AVX2 static inline __attribute__((always_inline)) float
fg_k_hmax_avx2(__m256 v)
{
    v = _mm256_max_ps(v, _mm256_permute2f128_ps(v, v, 1));
    v = _mm256_max_ps(v, _mm256_shuffle_ps(v, v, 0x4e));
    v = _mm256_max_ps(v, _mm256_shuffle_ps(v, v, 0xb1));

    return _mm256_cvtss_f32(v);
}


/* fg_k_quant_block(), q as 4 vectors of int32 */
FG_K_AVX2 static inline __attribute__((always_inline)) float
fg_k_quant_block_avx2(__m256i *q, const float *x)
{
    size_t  k;
    float   amax, id;
    __m256  v[4], a, sign;

    sign = _mm256_set1_ps(-0.0f);

#pragma GCC unroll 4
    for (k = 0; k < 4; k++) {
        v[k] = _mm256_loadu_ps(x + 8 * k);
    }

    a = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]),
                                    _mm256_andnot_ps(sign, v[1])),
                      _mm256_max_ps(_mm256_andnot_ps(sign, v[2]),
                                    _mm256_andnot_ps(sign, v[3])));

    amax = fg_k_hmax_avx2(a);
    id = amax != 0.0f ? 127.0f / amax : 0.0f;

    /* the conversion rounds as lrintf() does: to nearest, ties to even */
#pragma GCC unroll 4
    for (k = 0; k < 4; k++) {
        q[k] = _mm256_cvtps_epi32(_mm256_mul_ps(v[k], _mm256_set1_ps(id)));
    }

    return amax / 127.0f;
}


FG_K_AVX2 static void
fg_k_quant_x_avx2(fg_k_block_q8x_t *xq, const float *x, size_t n)
{
    size_t   i;
    __m256i  q[4], p;

    for (i = 0; i < n / FG_K_QK8_0; i++, x += FG_K_QK8_0) {
        xq[i].d = fg_k_quant_block_avx2(q, x);

        /* packs work within 128-bit lanes: dwords 0 4 1 5 2 6 3 7 */
        p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]),
                               _mm256_packs_epi32(q[2], q[3]));
        p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5,
                                                             2, 6, 3, 7));

        _mm256_storeu_si256((__m256i *) xq[i].qs, p);
    }
}


FG_K_AVX2 static void
fg_k_round_x_avx2(float *xr, const float *x, size_t n)
{
    size_t   i, k;
    __m256   d;
    __m256i  q[4];

    for (i = 0; i + FG_K_QK8_0 <= n; i += FG_K_QK8_0) {
        d = _mm256_set1_ps(fg_k_quant_block_avx2(q, x + i));

#pragma GCC unroll 4
        for (k = 0; k < 4; k++) {
            _mm256_storeu_ps(xr + i + 8 * k,
                             _mm256_mul_ps(d, _mm256_cvtepi32_ps(q[k])));
        }
    }
}

/* 8 weights from element i of a row of type, as floats */
FG_K_AVX2 static inline __attribute__((always_inline)) __m256
fg_k_load8_avx2(const void *w, size_t i, fg_k_type_e type)
{
    __m128i  h;

    switch (type) {

    case FG_K_F16:
        h = _mm_loadu_si128((const __m128i *) ((const uint16_t *) w + i));
        return _mm256_cvtph_ps(h);

    case FG_K_BF16:
        h = _mm_loadu_si128((const __m128i *) ((const uint16_t *) w + i));
        return _mm256_castsi256_ps(
                   _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));

    default:
        return _mm256_loadu_ps((const float *) w + i);
    }
}


/*
 * y[t .. t+nt-1][r .. r+nr-1] for rows of type.  nr and nt are constants
 * where this is inlined, so the loops over them unroll and the sums stay
 * in registers (a sum in memory waits on a store each step, which cost
 * these kernels 3x).  4 x 2 keeps 8 sums going, enough to hide the FMA
 * latency, and each load of x or of a weight feeds 4 or 2 products.
 */
FG_K_AVX2 static inline __attribute__((always_inline)) void
fg_k_mm_block_avx2(const fg_k_mm_t *mm, size_t r, size_t t, size_t nr,
    size_t nt, fg_k_type_e type)
{
    int           pf;
    size_t        i, j, k, o, in, rs, es;
    float         s, w1;
    __m256        a[4][2], x[2], wv;
    const char   *w;
    const float  *xr;

    in = mm->in;
    es = type == FG_K_F32 ? 4 : 2;
    rs = in * es;
    w = (const char *) mm->w + r * rs;
    xr = mm->x + t * in;
    pf = nr * rs <= FG_K_MM_PF_GROUP;

#pragma GCC unroll 4
    for (j = 0; j < nr; j++) {
#pragma GCC unroll 2
        for (k = 0; k < nt; k++) {
            a[j][k] = _mm256_setzero_ps();
        }
    }

    for (i = 0; i + 8 <= in; i += 8) {
        if (pf) {
#pragma GCC unroll 4
            for (o = 0; o < nr * 8 * es; o += 64) {
                _mm_prefetch(w + nr * rs + i * nr * es + o, _MM_HINT_T0);
            }
        }

#pragma GCC unroll 2
        for (k = 0; k < nt; k++) {
            x[k] = _mm256_loadu_ps(xr + k * in + i);
        }

#pragma GCC unroll 4
        for (j = 0; j < nr; j++) {
            wv = fg_k_load8_avx2(w + j * rs, i, type);

#pragma GCC unroll 2
            for (k = 0; k < nt; k++) {
                a[j][k] = _mm256_fmadd_ps(wv, x[k], a[j][k]);
            }
        }
    }

#pragma GCC unroll 4
    for (j = 0; j < nr; j++) {
#pragma GCC unroll 2
        for (k = 0; k < nt; k++) {
            s = fg_k_hsum_avx2(a[j][k]);

            for (i = in & ~(size_t) 7; i < in; i++) {
                w1 = fg_k_load1(w + j * rs, i, type);
                s += w1 * xr[k * in + i];
            }

            mm->y[(t + k) * mm->out + r + j] = s;
        }
    }
}


FG_K_AVX2 static inline __attribute__((always_inline)) void
fg_k_mm_small_type_avx2(const fg_k_mm_t *mm, size_t r0, size_t r1,
    fg_k_type_e type)
{
    size_t  r, t;

    for (r = r0; r + 4 <= r1; r += 4) {
        for (t = 0; t + 2 <= mm->n; t += 2) {
            fg_k_mm_block_avx2(mm, r, t, 4, 2, type);
        }

        if (t < mm->n) {
            fg_k_mm_block_avx2(mm, r, t, 4, 1, type);
        }
    }

    for ( /* void */ ; r < r1; r++) {
        for (t = 0; t < mm->n; t++) {
            fg_k_mm_block_avx2(mm, r, t, 1, 1, type);
        }
    }
}


FG_K_AVX2 static void
fg_k_mm_small_avx2(const fg_k_mm_t *mm, size_t r0, size_t r1)
{
    /* one copy of the loops per type, its loads resolved at compile time */
    switch (mm->type) {

    case FG_K_F16:
        fg_k_mm_small_type_avx2(mm, r0, r1, FG_K_F16);
        break;

    case FG_K_BF16:
        fg_k_mm_small_type_avx2(mm, r0, r1, FG_K_BF16);
        break;

    default:
        fg_k_mm_small_type_avx2(mm, r0, r1, FG_K_F32);
        break;
    }
}


/*
 * The sum of 32 products of signed bytes as 8 int32 sums in floats.
 * maddubs multiplies unsigned by signed bytes, so w's signs move onto x:
 * |w| * (x * sign(w)).  |-128| reads as 128 unsigned, still right; x is
 * never -128, so its negation never overflows, and a pair of products
 * (at most 2 * 128 * 127) fits the int16 sums.
 */
FG_K_AVX2 static inline __attribute__((always_inline)) __m256
fg_k_dot32_avx2(__m256i aw, __m256i w, __m256i x)
{
    __m256i  p;

    p = _mm256_maddubs_epi16(aw, _mm256_sign_epi8(x, w));
    p = _mm256_madd_epi16(p, _mm256_set1_epi16(1));

    return _mm256_cvtepi32_ps(p);
}


/* Q8_0 rows r .. r+nr-1 by tokens t .. t+nt-1, as fg_k_mm_block_avx2() */
FG_K_AVX2 static inline __attribute__((always_inline)) void
fg_k_mm_q8_block_avx2(const fg_k_mm_t *mm, size_t r, size_t t, size_t nr,
    size_t nt)
{
    int                       pf;
    size_t                    b, j, k, o, nb;
    float                     wd;
    __m256                    a[4][2];
    __m256i                   x[2], wv, aw;
    const fg_k_block_q8x_t   *xb;
    const fg_k_block_q8_0_t  *wb;

    nb = mm->in / FG_K_QK8_0;
    wb = (const fg_k_block_q8_0_t *) mm->w + r * nb;
    xb = mm->xq + t * nb;
    pf = nr * nb * sizeof(fg_k_block_q8_0_t) <= FG_K_MM_PF_GROUP;

#pragma GCC unroll 4
    for (j = 0; j < nr; j++) {
#pragma GCC unroll 2
        for (k = 0; k < nt; k++) {
            a[j][k] = _mm256_setzero_ps();
        }
    }

    for (b = 0; b < nb; b++) {
        if (pf) {
#pragma GCC unroll 4
            for (o = 0; o < nr * sizeof(fg_k_block_q8_0_t); o += 64) {
                _mm_prefetch((const char *) (wb + nr * nb + b * nr) + o,
                             _MM_HINT_T0);
            }
        }

#pragma GCC unroll 2
        for (k = 0; k < nt; k++) {
            x[k] = _mm256_loadu_si256((const __m256i *) xb[k * nb + b].qs);
        }

#pragma GCC unroll 4
        for (j = 0; j < nr; j++) {
            wv = _mm256_loadu_si256((const __m256i *) wb[j * nb + b].qs);
            aw = _mm256_sign_epi8(wv, wv);
            wd = _cvtsh_ss(wb[j * nb + b].d);

#pragma GCC unroll 2
            for (k = 0; k < nt; k++) {
                a[j][k] = _mm256_fmadd_ps(
                              fg_k_dot32_avx2(aw, wv, x[k]),
                              _mm256_set1_ps(wd * xb[k * nb + b].d),
                              a[j][k]);
            }
        }
    }

#pragma GCC unroll 4
    for (j = 0; j < nr; j++) {
#pragma GCC unroll 2
        for (k = 0; k < nt; k++) {
            mm->y[(t + k) * mm->out + r + j] = fg_k_hsum_avx2(a[j][k]);
        }
    }
}


FG_K_AVX2 static void
fg_k_mm_q8_avx2(const fg_k_mm_t *mm, size_t r0, size_t r1)
{
    size_t  r, t;

    for (r = r0; r + 4 <= r1; r += 4) {
        for (t = 0; t + 2 <= mm->n; t += 2) {
            fg_k_mm_q8_block_avx2(mm, r, t, 4, 2);
        }

        if (t < mm->n) {
            fg_k_mm_q8_block_avx2(mm, r, t, 4, 1);
        }
    }

    for ( /* void */ ; r < r1; r++) {
        for (t = 0; t < mm->n; t++) {
            fg_k_mm_q8_block_avx2(mm, r, t, 1, 1);
        }
    }
}


FG_K_AVX2 static void
fg_k_dequant_row_avx2(fg_k_type_e type, const void *src, float *dst,
    size_t n)
{
    size_t                    i, j;
    __m256                    d;
    const fg_k_block_q8_0_t  *b;

    switch (type) {

    case FG_K_F32:
        memcpy(dst, src, n * sizeof(float));
        return;

    case FG_K_F16:
    case FG_K_BF16:
        for (i = 0; i + 8 <= n; i += 8) {
            _mm256_storeu_ps(dst + i, type == FG_K_F16
                                      ? fg_k_load8_avx2(src, i, FG_K_F16)
                                      : fg_k_load8_avx2(src, i, FG_K_BF16));
        }

        for ( /* void */ ; i < n; i++) {
            dst[i] = type == FG_K_F16
                     ? fg_k_fp16_to_f32(((const uint16_t *) src)[i])
                     : fg_k_bf16_to_f32(((const uint16_t *) src)[i]);
        }

        return;

    case FG_K_Q8_0:
        b = src;

        for (i = 0; i < n / FG_K_QK8_0; i++) {
            d = _mm256_set1_ps(_cvtsh_ss(b[i].d));

            for (j = 0; j < FG_K_QK8_0; j += 8) {
                _mm256_storeu_ps(dst + i * FG_K_QK8_0 + j,
                    _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                        _mm_loadl_epi64((const __m128i *) (b[i].qs + j))))));
            }
        }

        return;
    }
}

#endif
