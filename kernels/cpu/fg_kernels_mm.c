
/*
 * fairgate: matrix products of the CPU backend: which path a product
 * takes, and the sgemm path.  The direct kernels are in fg_kernels_gemv.c,
 * the weight types in fg_kernels_types.c, the choice of SIMD paths in
 * fg_kernels_simd.c.
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

#include "fg_kernels_gemv.h"
#include "fg_kernels_qdot.h"


/* floats of a thread's tile of widened weights: 256 KiB, in L2 */
#define FG_K_MM_TILE        65536

/* multiply-adds below which a product runs on one thread */
#define FG_K_MM_PAR_MIN     65536


static void fg_k_mm_run(fg_pool_t *pool, float *y, const float *x,
    const void *w, fg_k_type_e type, size_t n, size_t in, size_t out,
    void *work, int packed);
static void fg_k_mm_task(void *data, size_t r0, size_t r1, unsigned thread);
static void fg_k_mm_quant_task(void *data, size_t t0, size_t t1,
    unsigned thread);
#if FG_K_X86
static void fg_k_mm_bf16_task(void *data, size_t t0, size_t t1,
    unsigned thread);
#endif
static void fg_k_mm_lanes(const fg_k_mm_t *mm, size_t r0, size_t r1);
static void fg_k_mm_tiles(const fg_k_mm_t *mm, size_t r0, size_t r1,
    float *tile);


size_t  fg_k_mm_direct_max = FG_K_MM_SMALL;
size_t  fg_k_mm_half_max = FG_K_MM_HALF;
size_t  fg_k_mm_qd_max_32 = FG_K_MM_QD_32;
size_t  fg_k_mm_qd_max_k = FG_K_MM_QD_K;
size_t  fg_k_mm_qd_max_0 = FG_K_MM_QD_0;

static int  fg_k_mm_invariant;


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


/*
 * Rows up to which the SIMD kernels of ggml's quantized types
 * (fg_kernels_qdot.h) beat widened tiles and sgemm: they read x 4 rows
 * at a time per weight block, while the tiles' dequantization costs as
 * much as the products below a few hundred rows.  Measured by
 * bench_kernels (docs/kernels.md) on one thread: the k-quants 1.1-1.6x
 * faster direct at 512 rows, the 32-blocks even at 128 and 10% slower
 * at 512.  With AVX-512 VNNI, Q4_0 and Q5_0 (one vpdpbusd a block and
 * row, their offset in its accumulator) go direct 1.0-1.3x faster than
 * sgemm at 512 too; Q4_1 and Q5_1, with their mins, do not everywhere.
 */
static size_t
fg_k_mm_qd_bound(fg_k_type_e type, int vnni)
{
    if (!fg_k_qd_type(type)) {
        return 0;
    }

    if (vnni && (type == FG_K_Q4_0 || type == FG_K_Q5_0)
        && fg_k_mm_qd_max_0 > fg_k_mm_qd_max_32)
    {
        return fg_k_mm_qd_max_0;
    }

    return fg_k_qd_block(type) == FG_K_QK_K ? fg_k_mm_qd_max_k
                                            : fg_k_mm_qd_max_32;
}


/*
 * F16 and BF16 with SIMD: the direct kernels convert each weight once per
 * 2 or 4 rows of x, the tiles once per product and then write and read
 * them as floats.  Measured end to end (fg_engine_drive, one thread): 32
 * sequences decoded 1.6x faster direct on the 1b shape, 1.2x on the
 * 100m; prompts of 64 tokens 1.3x and 1.03x; at 128 the tiles were level
 * or ahead, at 512 1.2x ahead.  BF16 with AVX512-BF16 has its own kernel
 * beyond FG_K_MM_SMALL rows, faster than both (32 sequences 2.3x the
 * direct kernels on the 1b shape; 1.8x at 100m).
 */
static size_t
fg_k_mm_half_bound(fg_k_type_e type)
{
    if (type == FG_K_BF16 && fg_k_simd_bf16) {
        return 0;
    }

    return type == FG_K_F16 || type == FG_K_BF16 ? fg_k_mm_half_max : 0;
}


int
fg_k_mm_takes_direct(fg_k_type_e type, size_t n)
{
    /*
     * Without AVX2 too, so that small batches are batch-invariant on any
     * CPU; a port to another SIMD would speed up the portable kernels.
     */
    return fg_k_mm_invariant || n <= fg_k_mm_direct_max
           || (fg_k_simd && n <= fg_k_mm_half_bound(type))
           || (fg_k_simd && n <= fg_k_mm_qd_bound(type, fg_k_simd512));
}


/* a packed matrix has one path for every n */
static int
fg_k_mm_direct(const fg_k_mm_t *mm)
{
    return mm->packed || fg_k_mm_takes_direct(mm->type, mm->n);
}


void
fg_k_set_batch_invariant(int on)
{
    fg_k_mm_invariant = on;
}


int
fg_k_bf16_rounds_x(void)
{
    return fg_k_simd_bf16 && !fg_k_mm_invariant;
}


size_t
fg_k_matmul_work_size(fg_k_type_e type, size_t n, size_t in,
    unsigned n_threads)
{
    size_t  xq, xr, tiles, direct;

    /*
     * Any batch of 1 .. n rows: the direct path needs x quantized for
     * Q8_0 and ggml's quantized types, the other path a tile per thread
     * and, for those, x rounded; a product uses one of them.  With or
     * without SIMD (tests switch it after sizing): the most rows that
     * may go direct, and x rounded beyond the fewest.
     */
    xq = 0;
    xr = 0;
    tiles = 0;

    if (type == FG_K_Q8_0 || fg_k_qd_type(type)) {
        /*
         * the most of any path, VNNI's or not (tests switch them); a
         * matrix packed in lanes quantizes every row of x, as for Q4_0
         */
        direct = fg_k_mm_qd_bound(type, 1) > fg_k_mm_direct_max
                 ? fg_k_mm_qd_bound(type, 1) : fg_k_mm_direct_max;
        xq = fg_k_mm_invariant || n < direct || fg_k_lanes_type(type)
             ? n : direct;
        xq *= type == FG_K_Q8_0 ? fg_k_qd_xrow_size(FG_K_Q4_0, in)
                                : fg_k_qd_xrow_size(type, in);

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

#if FG_K_X86
    /* BF16 with AVX512-BF16: x rounded instead of tiles */
    if (type == FG_K_BF16) {
        xq = n * fg_k_bf16_xrow_size(in);
    }
#endif

    return xq > xr + tiles ? xq : xr + tiles;
}


void
fg_k_matmul(fg_pool_t *pool, float *y, const float *x, const void *w,
    fg_k_type_e type, size_t n, size_t in, size_t out, void *work)
{
    fg_k_mm_run(pool, y, x, w, type, n, in, out, work, 0);
}


void
fg_k_matmul_packed(fg_pool_t *pool, float *y, const float *x, const void *w,
    fg_k_type_e type, size_t n, size_t in, size_t out, void *work)
{
    fg_k_mm_run(pool, y, x, w, type, n, in, out, work, 1);
}


static void
fg_k_mm_run(fg_pool_t *pool, float *y, const float *x, const void *w,
    fg_k_type_e type, size_t n, size_t in, size_t out, void *work,
    int packed)
{
    size_t     grain;
    fg_k_mm_t  mm;

    if (n == 0 || out == 0) {
        return;
    }

    mm.y = y;
    mm.x = x;
    mm.xq = NULL;
    mm.xa = NULL;
    mm.xa_row = 0;
    mm.w = w;
    mm.tiles = work;
    mm.type = type;
    mm.n = n;
    mm.in = in;
    mm.out = out;
    mm.tile_rows = fg_k_mm_tile_rows(in);
    mm.packed = packed;

    if (packed) {
        /* Q8_0's x as Q4_0's: the same values, with their sums */
        mm.xa = work;
        mm.xa_row = fg_k_qd_xrow_size(type == FG_K_Q8_0 ? FG_K_Q4_0 : type,
                                      in);

        fg_pool_for(n >= FG_K_MM_SMALL ? pool : NULL, n, FG_K_MM_SMALL / 2,
                    fg_k_mm_quant_task, &mm);

    } else if (type == FG_K_Q8_0 && fg_k_mm_direct(&mm)) {
        fg_k_quant_x(work, x, n * in);

        mm.xq = work;

    } else if (type == FG_K_Q8_0) {
        fg_k_round_x(work, x, n * in);

        mm.x = work;
        mm.tiles = (char *) work + fg_k_mm_xr_size(n, in);

    } else if (fg_k_qd_type(type) && fg_k_mm_direct(&mm)) {
        mm.xa = work;
        mm.xa_row = fg_k_qd_xrow_size(type, in);

        /*
         * A prefill's x over the threads too (a row's bytes are the same
         * on any thread): 512 rows of 2048 take 0.25-0.3 ms on one,
         * against 16 ms for their Q4_K product by 768 rows there, and
         * would be a quarter of it on 16 threads.
         */
        fg_pool_for(n >= FG_K_MM_SMALL ? pool : NULL, n, FG_K_MM_SMALL / 2,
                    fg_k_mm_quant_task, &mm);

    } else if (fg_k_qd_type(type)) {
        fg_k_qd_round_x(type, work, x, n, in);

        mm.x = work;
        mm.tiles = (char *) work + fg_k_mm_xr_size(n, in);

#if FG_K_X86
    } else if (type == FG_K_BF16 && fg_k_simd_bf16 && !fg_k_mm_direct(&mm)) {
        mm.xa = work;
        mm.xa_row = fg_k_bf16_xrow_size(in);

        fg_pool_for(pool, n, FG_K_MM_SMALL / 2, fg_k_mm_bf16_task, &mm);
#endif
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

    if (fg_k_mm_direct(mm)) {
        if (mm->packed) {
            fg_k_mm_lanes(mm, r0, r1);

        } else if (fg_k_qd_type(mm->type)) {
            fg_k_qd_mm_rows(mm, r0, r1);

        } else {
            fg_k_mm_direct_rows(mm, r0, r1);
        }

        return;
    }

#if FG_K_X86
    if (mm->type == FG_K_BF16 && mm->xa != NULL) {
        fg_k_mm_bf16_avx512(mm, r0, r1);
        return;
    }
#endif

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


/* rows [r0, r1) by a matrix packed in lanes, on the best path */
static void
fg_k_mm_lanes(const fg_k_mm_t *mm, size_t r0, size_t r1)
{
#if FG_K_X86
    if (fg_k_simd512) {
        fg_k_qd_lanes_avx512(mm, r0, r1);
        return;
    }

    if (fg_k_simd) {
        fg_k_qd_lanes_avx2(mm, r0, r1);
        return;
    }
#endif

    fg_k_qd_lanes_generic(mm, r0, r1);
}


#if FG_K_X86

/* rows [t0, t1) of x rounded to BF16 */
static void
fg_k_mm_bf16_task(void *data, size_t t0, size_t t1, unsigned thread)
{
    (void) thread;

    fg_k_bf16_round_x(data, t0, t1);
}

#endif


/* rows [t0, t1) of x quantized for the quantized products */
static void
fg_k_mm_quant_task(void *data, size_t t0, size_t t1, unsigned thread)
{
    const fg_k_mm_t  *mm;

    (void) thread;
    mm = data;

    fg_k_qd_quant_x(mm->type == FG_K_Q8_0 ? FG_K_Q4_0 : mm->type,
                    (char *) mm->xa + t0 * mm->xa_row,
                    mm->x + t0 * mm->in, t1 - t0, mm->in);
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
