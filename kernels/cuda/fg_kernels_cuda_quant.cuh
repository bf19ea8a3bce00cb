
/*
 * fairgate: ggml's quantized blocks on the device (fg_kernels_quant.h
 * holds their layouts and formulas), shared by the GEMV kernel and the
 * dequantization kernels, so that both read a block the same way.
 *
 * A row of a quantized type is read in chunks of 32 values: the chunk
 * is the unit a lane (GEMV) or a thread (dequantization) takes.  A
 * chunk's values are not always contiguous in the row: they are the
 * values whose bits lie together in the block, so that each byte of the
 * block is read once, by one lane:
 *
 *   Q4_0..Q5_1, Q8_0   a whole block, runs of 16 at 0 and 16
 *   Q4_K, Q5_K         16 bytes of qs: runs of 16 at l0 and l0 + 32 of a
 *                      64-value group (low and high nibbles)
 *   Q2_K, Q3_K, Q6_K   8 bytes of qs (ql): runs of 8 at l0, l0 + 32,
 *                      l0 + 64 and l0 + 96 of a 128-value half
 *
 * fg_cuk_chunk() gives the 32 values in run order and where the first
 * run starts; run k starts fg_cuk_qstride(T) * k values after it.
 *
 * Every value is one fmaf of its integer q: w = q * a + b, which is
 * ggml's formula rounded once (d * (q - 8) is q * d + (-8 * d) exactly,
 * -8 * d being exact), so that a value matches the CPU's dequantization
 * to the last bit or, where ggml rounds twice (d * q + m), one rounding.
 * q becomes a float by its bits (2^23 + q, minus 2^23), not by a
 * conversion instruction, which has a quarter of the throughput.
 */

#ifndef _FG_KERNELS_CUDA_QUANT_CUH_INCLUDED_
#define _FG_KERNELS_CUDA_QUANT_CUH_INCLUDED_


#include "fg_kernels_cuda_int.cuh"


#define FG_CUK_CHUNK        32


/* the block types, which go by chunks */
static __host__ __device__ constexpr int
fg_cuk_is_quant(int t)
{
    return t == FG_K_Q4_0 || t == FG_K_Q4_1 || t == FG_K_Q5_0
           || t == FG_K_Q5_1 || t == FG_K_Q8_0 || t == FG_K_Q2_K
           || t == FG_K_Q3_K || t == FG_K_Q4_K || t == FG_K_Q5_K
           || t == FG_K_Q6_K;
}


static __host__ __device__ constexpr int
fg_cuk_qk(int t)
{
    return t == FG_K_Q2_K || t == FG_K_Q3_K || t == FG_K_Q4_K
           || t == FG_K_Q5_K || t == FG_K_Q6_K ? FG_K_QK_K : 32;
}


static __host__ __device__ constexpr int
fg_cuk_qbytes(int t)
{
    return t == FG_K_Q4_0 ? (int) sizeof(fg_k_block_q4_0_t)
           : t == FG_K_Q4_1 ? (int) sizeof(fg_k_block_q4_1_t)
           : t == FG_K_Q5_0 ? (int) sizeof(fg_k_block_q5_0_t)
           : t == FG_K_Q5_1 ? (int) sizeof(fg_k_block_q5_1_t)
           : t == FG_K_Q8_0 ? (int) sizeof(fg_k_block_q8_0_t)
           : t == FG_K_Q2_K ? (int) sizeof(fg_k_block_q2_k_t)
           : t == FG_K_Q3_K ? (int) sizeof(fg_k_block_q3_k_t)
           : t == FG_K_Q4_K ? (int) sizeof(fg_k_block_q4_k_t)
           : t == FG_K_Q5_K ? (int) sizeof(fg_k_block_q5_k_t)
           : t == FG_K_Q6_K ? (int) sizeof(fg_k_block_q6_k_t) : 0;
}


/* values in a run of a chunk, and from one run's start to the next's */
static __host__ __device__ constexpr int
fg_cuk_qrun(int t)
{
    return t == FG_K_Q2_K || t == FG_K_Q3_K || t == FG_K_Q6_K ? 8 : 16;
}


static __host__ __device__ constexpr int
fg_cuk_qstride(int t)
{
    return t == FG_K_Q2_K || t == FG_K_Q3_K || t == FG_K_Q4_K
           || t == FG_K_Q5_K || t == FG_K_Q6_K ? 32 : 16;
}


/* q < 2^23 as a float, by its bits */
static __device__ __forceinline__ float
fg_cuk_qf(uint32_t q)
{
    return __uint_as_float(0x4b000000u | q) - 8388608.0f;
}


static __device__ __forceinline__ uint32_t
fg_cuk_ld16(const uint8_t *p)
{
    return __ldg((const unsigned short *) p);
}


static __device__ __forceinline__ uint32_t
fg_cuk_ld32(const uint8_t *p)
{
    return __ldg((const unsigned int *) p);
}


/* n bytes (a multiple of 2) at p, 2-byte aligned, into q */
static __device__ __forceinline__ void
fg_cuk_ldb(const uint8_t *p, uint8_t *q, int n)
{
    int       i;
    uint32_t  u;

#pragma unroll
    for (i = 0; i < n; i += 2) {
        u = fg_cuk_ld16(p + i);
        q[i] = (uint8_t) u;
        q[i + 1] = (uint8_t) (u >> 8);
    }
}


/* 16 bytes at p, 16-byte aligned, into q */
static __device__ __forceinline__ void
fg_cuk_ldb16(const uint8_t *p, uint8_t *q)
{
    int       i;
    uint4     v;
    uint32_t  u[4];

    v = __ldg((const uint4 *) p);
    u[0] = v.x;
    u[1] = v.y;
    u[2] = v.z;
    u[3] = v.w;

#pragma unroll
    for (i = 0; i < 16; i++) {
        q[i] = (uint8_t) (u[i / 4] >> (8 * (i % 4)));
    }
}


/* Q4_0, Q4_1, Q5_0, Q5_1, Q8_0: chunk c is block c */
template <int T>
static __device__ __forceinline__ size_t
fg_cuk_chunk_small(const uint8_t *row, size_t c, float *w)
{
    int             i;
    float           d, m;
    uint8_t         qs[32];
    uint32_t        qh, q;
    const uint8_t  *blk;

    blk = row + c * fg_cuk_qbytes(T);
    qh = 0;

    if (T == FG_K_Q4_1 || T == FG_K_Q5_1) {
        q = fg_cuk_ld32(blk);
        d = fg_cuk_h2f((uint16_t) q);
        m = fg_cuk_h2f((uint16_t) (q >> 16));

    } else {
        d = fg_cuk_h2f((uint16_t) fg_cuk_ld16(blk));
        m = T == FG_K_Q4_0 ? -8.0f * d : -16.0f * d;
    }

    if (T == FG_K_Q8_0) {
        fg_cuk_ldb(blk + 2, qs, 32);

        /* q + 128 by its bits, then d * q exactly as d * (float) q */
#pragma unroll
        for (i = 0; i < 32; i++) {
            w[i] = fmaf(fg_cuk_qf(qs[i] ^ 0x80u), d, -128.0f * d);
        }

        return c * 32;
    }

    if (T == FG_K_Q5_0) {
        qh = fg_cuk_ld16(blk + 2) | fg_cuk_ld16(blk + 4) << 16;
        fg_cuk_ldb(blk + 6, qs, 16);

    } else if (T == FG_K_Q5_1) {
        qh = fg_cuk_ld32(blk + 4);
        fg_cuk_ldb(blk + 8, qs, 16);

    } else {
        fg_cuk_ldb(blk + (T == FG_K_Q4_1 ? 4 : 2), qs, 16);
    }

#pragma unroll
    for (i = 0; i < 16; i++) {
        w[i] = fmaf(fg_cuk_qf((qs[i] & 0xfu) | (qh >> i & 1u) << 4), d, m);
        w[16 + i] = fmaf(fg_cuk_qf((uint32_t) (qs[i] >> 4)
                                   | (qh >> (16 + i) & 1u) << 4), d, m);
    }

    return c * 32;
}


/* ggml's 6-bit scale and min j of Q4_K and Q5_K, from scales[12] */
static __device__ __forceinline__ void
fg_cuk_scale_k4(const uint8_t *sc, int j, uint32_t *s, uint32_t *m)
{
    if (j < 4) {
        *s = __ldg(sc + j) & 63u;
        *m = __ldg(sc + j + 4) & 63u;

    } else {
        *s = (__ldg(sc + j + 4) & 0xfu) | (__ldg(sc + j - 4) >> 6) << 4;
        *m = (__ldg(sc + j + 4) >> 4) | (__ldg(sc + j) >> 6) << 4;
    }
}


/* Q4_K, Q5_K: chunk c is 16 bytes of qs of one 64-value group */
template <int T>
static __device__ __forceinline__ size_t
fg_cuk_chunk_k45(const uint8_t *row, size_t c, float *w)
{
    int             i, g, l0;
    float           d, dmin, a[2], b[2];
    uint8_t         qs[16], qh[16];
    uint32_t        u, s, m;
    const uint8_t  *blk;

    blk = row + (c >> 3) * fg_cuk_qbytes(T);
    g = (int) (c >> 1 & 3);
    l0 = (int) (c & 1) * 16;

    u = fg_cuk_ld32(blk);
    d = fg_cuk_h2f((uint16_t) u);
    dmin = fg_cuk_h2f((uint16_t) (u >> 16));

#pragma unroll
    for (i = 0; i < 2; i++) {
        fg_cuk_scale_k4(blk + 4, 2 * g + i, &s, &m);
        a[i] = d * (float) s;
        b[i] = -dmin * (float) m;
    }

    if (T == FG_K_Q5_K) {
        fg_cuk_ldb16(blk + 16 + l0, qh);
        fg_cuk_ldb16(blk + 48 + 32 * g + l0, qs);

    } else {
        fg_cuk_ldb16(blk + 16 + 32 * g + l0, qs);
    }

#pragma unroll
    for (i = 0; i < 16; i++) {
        if (T == FG_K_Q5_K) {
            u = (uint32_t) qh[i] >> (2 * g);

        } else {
            u = 0;
        }

        w[i] = fmaf(fg_cuk_qf((qs[i] & 0xfu) | (u & 1u) << 4), a[0], b[0]);
        w[16 + i] = fmaf(fg_cuk_qf((uint32_t) (qs[i] >> 4) | (u & 2u) << 3),
                         a[1], b[1]);
    }

    return (c >> 3) * FG_K_QK_K + 64 * g + l0;
}


/* Q3_K's 6-bit scale s (less 32) from scales[12] */
static __device__ __forceinline__ int
fg_cuk_scale_q3k(const uint8_t *sc, int s)
{
    uint32_t  lo, hi;

    lo = __ldg(sc + (s & 7));
    lo = s < 8 ? lo & 0xfu : lo >> 4;
    hi = (uint32_t) __ldg(sc + 8 + (s & 3)) >> (2 * (s >> 2)) & 3u;

    return (int) (lo | hi << 4) - 32;
}


/* 8 bytes at p, 2-byte aligned (4-byte for Q2_K), as 4 halfwords */
static __device__ __forceinline__ void
fg_cuk_ldw(const uint8_t *p, uint32_t *w)
{
    int  i;

#pragma unroll
    for (i = 0; i < 4; i++) {
        w[i] = fg_cuk_ld16(p + 2 * i);
    }
}


/* Q2_K, Q3_K, Q6_K: chunk c is 8 bytes of qs (ql) of one 128-value half */
template <int T>
static __device__ __forceinline__ size_t
fg_cuk_chunk_k236(const uint8_t *row, size_t c, float *w)
{
    int             i, j, h, l0, is;
    float           d, dmin, a, b;
    uint32_t        q[4], q2[4], qh[4], v, sc;
    const uint8_t  *blk;

    blk = row + (c >> 3) * fg_cuk_qbytes(T);
    h = (int) (c >> 2 & 1);
    l0 = (int) (c & 3) * 8;
    is = l0 >> 4;

    if (T == FG_K_Q2_K) {
        v = fg_cuk_ld32(blk + 80);
        d = fg_cuk_h2f((uint16_t) v);
        dmin = fg_cuk_h2f((uint16_t) (v >> 16));
        fg_cuk_ldw(blk + 16 + 32 * h + l0, q);

    } else if (T == FG_K_Q3_K) {
        d = fg_cuk_h2f((uint16_t) fg_cuk_ld16(blk + 108));
        dmin = 0.0f;
        fg_cuk_ldw(blk + 32 + 32 * h + l0, q);
        fg_cuk_ldw(blk + l0, qh);

    } else {
        d = fg_cuk_h2f((uint16_t) fg_cuk_ld16(blk + 208));
        dmin = 0.0f;
        fg_cuk_ldw(blk + 64 * h + l0, q);
        fg_cuk_ldw(blk + 64 * h + 32 + l0, q2);
        fg_cuk_ldw(blk + 128 + 32 * h + l0, qh);
    }

#pragma unroll
    for (j = 0; j < 4; j++) {
        if (T == FG_K_Q2_K) {
            sc = __ldg(blk + 8 * h + 2 * j + is);
            a = d * (float) (sc & 0xfu);
            b = -dmin * (float) (sc >> 4);

        } else if (T == FG_K_Q3_K) {
            a = d * (float) fg_cuk_scale_q3k(blk + 96, 8 * h + 2 * j + is);
            b = -4.0f * a;

        } else {
            a = d * (float) (int8_t) __ldg(blk + 192 + 8 * h + is + 2 * j);
            b = -32.0f * a;
        }

        /* byte i of the 8 is bits 8 * (i & 1) of halfword i >> 1 */
#pragma unroll
        for (i = 0; i < 8; i++) {
            if (T == FG_K_Q2_K) {
                v = q[i >> 1] >> (8 * (i & 1) + 2 * j) & 3u;

            } else if (T == FG_K_Q3_K) {
                v = (q[i >> 1] >> (8 * (i & 1) + 2 * j) & 3u)
                    | (qh[i >> 1] >> (8 * (i & 1) + 4 * h + j) & 1u) << 2;

            } else {
                v = ((j & 1 ? q2[i >> 1] : q[i >> 1])
                     >> (8 * (i & 1) + 4 * (j >> 1)) & 0xfu)
                    | (qh[i >> 1] >> (8 * (i & 1) + 2 * j) & 3u) << 4;
            }

            w[8 * j + i] = fmaf(fg_cuk_qf(v), a, b);
        }
    }

    return (c >> 3) * FG_K_QK_K + 128 * h + l0;
}


/*
 * The 32 values of chunk c of a row of type T into w, in run order;
 * returns the row index of the first run's first value.
 */
template <int T>
static __device__ __forceinline__ size_t
fg_cuk_chunk(const uint8_t *row, size_t c, float *w)
{
    if (T == FG_K_Q4_K || T == FG_K_Q5_K) {
        return fg_cuk_chunk_k45<T>(row, c, w);
    }

    if (T == FG_K_Q2_K || T == FG_K_Q3_K || T == FG_K_Q6_K) {
        return fg_cuk_chunk_k236<T>(row, c, w);
    }

    return fg_cuk_chunk_small<T>(row, c, w);
}


#endif /* _FG_KERNELS_CUDA_QUANT_CUH_INCLUDED_ */
