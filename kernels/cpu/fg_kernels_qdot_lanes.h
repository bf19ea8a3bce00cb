
/*
 * fairgate: the x86 products of Q4_0 and Q8_0 matrices packed in lanes
 * (fg_kernels_qdot.h says how), part of fg_kernels_qdot_x86.h's two
 * builds.  Lane j of every vector is row j of a group of 8: one dpbusd
 * multiplies 4 positions of the 8 rows by the same 4 bytes of x (a
 * broadcast), so a block's 8 integer sums come out as one vector, and
 * one conversion, one product d_w * d_x and one multiply-add scale them
 * for the 8 rows, where the per-row kernels take those for each row.
 * A group's block is unpacked once for FG_K_QL_NT rows of x.
 *
 * A row's float sum is the same whatever the rows of x beside it, the
 * tile or the thread (each row of x has its own accumulator, and integer
 * sums are exact in any grouping): fg_k_qd_lanes_generic()'s order, so
 * these give its bits, at every n.
 */


#if (FG_K_QD_WIDE)
#define FG_K_QL_NT  4
#else
#define FG_K_QL_NT  2
#endif


/* 4 bytes of x in every lane */
FG_K_QD_INLINE __m256i
fg_k_ql_x4(const int8_t *q)
{
    int32_t  v;

    memcpy(&v, q, 4);

    return _mm256_set1_epi32(v);
}


/*
 * The 8 rows' integer sums of a block (its pieces w, unpacked) by x's
 * block, in two chains.  Q8_0's bytes are unsigned, + 128: VNNI takes
 * them so, the offset meeting x's sum; AVX2's maddubs, which saturates
 * at 2 * 255 * 127, takes them signed again, their signs moved onto x.
 */
FG_K_QD_INLINE __m256i
fg_k_ql_ints(fg_k_type_e type, const __m256i *w, const fg_k_block_q8_1x_t *x)
{
    int      k;
    __m256i  a[2], s;

    if (type == FG_K_Q4_0) {
        a[0] = _mm256_set1_epi32(-8 * x->sum);
        a[1] = _mm256_setzero_si256();

#pragma GCC unroll 4
        for (k = 0; k < 4; k++) {
            a[0] = fg_k_qd_dpbusd(a[0], w[2 * k], fg_k_ql_x4(x->qs + 4 * k));
            a[1] = fg_k_qd_dpbusd(a[1], w[2 * k + 1],
                                  fg_k_ql_x4(x->qs + 16 + 4 * k));
        }

        return _mm256_add_epi32(a[0], a[1]);
    }

    a[0] = FG_K_QD_WIDE ? _mm256_set1_epi32(-128 * x->sum)
                        : _mm256_setzero_si256();
    a[1] = _mm256_setzero_si256();

#pragma GCC unroll 8
    for (k = 0; k < 8; k++) {
        if (FG_K_QD_WIDE) {
            a[k % 2] = fg_k_qd_dpbusd(a[k % 2], w[k],
                                      fg_k_ql_x4(x->qs + 4 * k));

        } else {
            s = _mm256_xor_si256(w[k], _mm256_set1_epi8((char) 0x80));
            a[k % 2] = fg_k_qd_dot_ss(a[k % 2], s,
                                      fg_k_ql_x4(x->qs + 4 * k));
        }
    }

    return _mm256_add_epi32(a[0], a[1]);
}


/* block lb of a group by block b of nt rows of x (xa, xs apart) */
FG_K_QD_INLINE void
fg_k_ql_block(fg_k_type_e type, const char *lb, const char *xa, size_t xs,
    size_t b, size_t nt, __m256 *acc)
{
    int                        k;
    size_t                     t;
    __m256                     dw;
    __m256i                    w[8], v;
    const fg_k_block_q8_1x_t  *x;

    dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) lb));
    lb += 2 * FG_K_PACK_ROWS;

#pragma GCC unroll 8
    for (k = 0; k < 8; k++) {
        if (k >= FG_K_LANES_PIECES(type)) {
            break;
        }

        v = _mm256_loadu_si256((const __m256i *) (lb + 32 * k));

        if (type == FG_K_Q4_0) {
            w[2 * k] = _mm256_and_si256(v, _mm256_set1_epi8(0xf));
            w[2 * k + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4),
                                            _mm256_set1_epi8(0xf));

        } else {
            w[k] = v;
        }
    }

#pragma GCC unroll 4
    for (t = 0; t < nt; t++) {
        x = (const fg_k_block_q8_1x_t *) (xa + t * xs) + b;
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(fg_k_ql_ints(type, w,
                                                                   x)),
                                 _mm256_mul_ps(dw, _mm256_set1_ps(x->d)),
                                 acc[t]);
    }
}


/*
 * A Q4_K block's scales and mins (fg_kernels_qdot.h's layout) as bytes,
 * sub-block i's of row j at 8 * i + j: the scales in s[0 .. 63], the mins
 * in s[64 .. 127]
 */
FG_K_QD_INLINE void
fg_k_ql_k_meta(const char *lb, uint8_t *s)
{
    __m256i  lo, mn, hi, m4, m3;

    m4 = _mm256_set1_epi8(0xf);
    m3 = _mm256_set1_epi8(3);
    lo = _mm256_loadu_si256((const __m256i *) (lb + FG_K_LANES_K_SC));
    mn = _mm256_loadu_si256((const __m256i *) (lb + FG_K_LANES_K_SC + 32));
    hi = _mm256_loadu_si256((const __m256i *) (lb + FG_K_LANES_K_SC + 64));

    /* the top 2 bits shifted by 16-bit lanes: each stays in its byte */
    _mm256_storeu_si256((__m256i *) s, _mm256_or_si256(
        _mm256_and_si256(lo, m4),
        _mm256_slli_epi16(_mm256_and_si256(hi, m3), 4)));
    _mm256_storeu_si256((__m256i *) (s + 32), _mm256_or_si256(
        _mm256_and_si256(_mm256_srli_epi16(lo, 4), m4),
        _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hi, 2), m3),
                          4)));
    _mm256_storeu_si256((__m256i *) (s + 64), _mm256_or_si256(
        _mm256_and_si256(mn, m4),
        _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hi, 4), m3),
                          4)));
    _mm256_storeu_si256((__m256i *) (s + 96), _mm256_or_si256(
        _mm256_and_si256(_mm256_srli_epi16(mn, 4), m4),
        _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hi, 6), m3),
                          4)));
}


/* sub-block i's 8 bytes of s (fg_k_ql_k_meta()'s) as 8 int32 */
FG_K_QD_INLINE __m256i
fg_k_ql_k_lane(const uint8_t *s, int i)
{
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)
                                                (s + 8 * i)));
}


/*
 * Sub-block i (8 pieces w, unpacked) of a Q4_K group by nt rows of x:
 * the 8 rows' integers times their scale sc, added to s[t]
 */
FG_K_QD_INLINE void
fg_k_ql_k_sub(const __m256i *w, __m256i sc, const char *xa, size_t xs,
    size_t b, int i, size_t nt, __m256i *s)
{
    int                       k;
    size_t                    t;
    __m256i                   a[4];
    const fg_k_block_q8_k_t  *x;

#pragma GCC unroll 4
    for (t = 0; t < nt; t++) {
        x = (const fg_k_block_q8_k_t *) (xa + t * xs) + b;

#pragma GCC unroll 4
        for (k = 0; k < 4; k++) {
            a[k] = _mm256_setzero_si256();
        }

#pragma GCC unroll 8
        for (k = 0; k < 8; k++) {
            a[k % 4] = fg_k_qd_dpbusd(a[k % 4], w[k],
                                      fg_k_ql_x4(x->qs + 32 * i + 4 * k));
        }

        s[t] = _mm256_add_epi32(s[t], _mm256_mullo_epi32(
                                          _mm256_add_epi32(
                                              _mm256_add_epi32(a[0], a[1]),
                                              _mm256_add_epi32(a[2], a[3])),
                                          sc));
    }
}


/*
 * Q4_K's block lb of a group by block b of nt rows of x: sub-block by
 * sub-block the integers and their scales, then the mins against x's
 * sums of 16 (pairs of mins as int16 by pairs of x's sums of 32), and
 * the two float multiply-adds
 */
FG_K_QD_INLINE void
fg_k_ql_block_k(const char *lb, const char *xa, size_t xs, size_t b,
    size_t nt, __m256 *acc)
{
    int                       i, k;
    size_t                    t;
    uint8_t                   s8[128] __attribute__((aligned(32)));
    __m256                    dw, dm, xd;
    __m256i                   w[8], v, s[FG_K_QL_NT], mp[4], m, bp;
    const fg_k_block_q8_k_t  *x;

    dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) lb));
    dm = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (lb + 16)));
    fg_k_ql_k_meta(lb, s8);

#pragma GCC unroll 4
    for (i = 0; i < 4; i++) {
        mp[i] = _mm256_or_si256(fg_k_ql_k_lane(s8 + 64, 2 * i),
                                _mm256_slli_epi32(fg_k_ql_k_lane(s8 + 64,
                                                                 2 * i + 1),
                                                  16));
    }

#pragma GCC unroll 4
    for (t = 0; t < nt; t++) {
        s[t] = _mm256_setzero_si256();
    }

    for (i = 0; i < 8; i++) {
#pragma GCC unroll 8
        for (k = 0; k < 8; k++) {
            v = _mm256_loadu_si256((const __m256i *) (lb + FG_K_LANES_K_QS
                                                      + 256 * (i / 2)
                                                      + 32 * k));
            w[k] = _mm256_and_si256(i % 2 ? _mm256_srli_epi16(v, 4) : v,
                                    _mm256_set1_epi8(0xf));
        }

        fg_k_ql_k_sub(w, fg_k_ql_k_lane(s8, i), xa, xs, b, i, nt, s);
    }

#pragma GCC unroll 4
    for (t = 0; t < nt; t++) {
        x = (const fg_k_block_q8_k_t *) (xa + t * xs) + b;
        bp = _mm256_broadcastsi128_si256(_mm_hadd_epi16(
                 _mm_loadu_si128((const __m128i *) x->bsums),
                 _mm_loadu_si128((const __m128i *) (x->bsums + 8))));
        m = _mm256_add_epi32(
                _mm256_add_epi32(
                    _mm256_madd_epi16(mp[0], _mm256_shuffle_epi32(bp, 0x00)),
                    _mm256_madd_epi16(mp[1], _mm256_shuffle_epi32(bp, 0x55))),
                _mm256_add_epi32(
                    _mm256_madd_epi16(mp[2], _mm256_shuffle_epi32(bp, 0xaa)),
                    _mm256_madd_epi16(mp[3],
                                      _mm256_shuffle_epi32(bp, 0xff))));
        xd = _mm256_set1_ps(x->d);
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[t]),
                                 _mm256_mul_ps(dw, xd), acc[t]);
        acc[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(m),
                                  _mm256_mul_ps(dm, xd), acc[t]);
    }
}


/* a group (g, nb blocks) by nt rows of x: y[t * ys + j] for its 8 rows */
FG_K_QD_INLINE void
fg_k_ql_group(fg_k_type_e type, const char *g, size_t nb, const char *xa,
    size_t xs, size_t nt, float *y, size_t ys)
{
    size_t  b, t;
    __m256  acc[FG_K_QL_NT];

#pragma GCC unroll 4
    for (t = 0; t < nt; t++) {
        acc[t] = _mm256_setzero_ps();
    }

    for (b = 0; b < nb; b++) {
        if (type == FG_K_Q4_K) {
            fg_k_ql_block_k(g + b * FG_K_LANES_BLOCK(type), xa, xs, b, nt,
                            acc);
            continue;
        }

        fg_k_ql_block(type, g + b * FG_K_LANES_BLOCK(type), xa, xs, b, nt,
                      acc);
    }

#pragma GCC unroll 4
    for (t = 0; t < nt; t++) {
        _mm256_storeu_ps(y + t * ys, acc[t]);
    }
}


FG_K_QD_TARGET static void
FG_K_QD_FN(fg_k_ql_q4_0)(const char *g, size_t nb, const char *xa,
    size_t xs, size_t nt, float *y, size_t ys)
{
    if (nt == FG_K_QL_NT) {
        fg_k_ql_group(FG_K_Q4_0, g, nb, xa, xs, FG_K_QL_NT, y, ys);
        return;
    }

    fg_k_ql_group(FG_K_Q4_0, g, nb, xa, xs, 1, y, ys);
}


FG_K_QD_TARGET static void
FG_K_QD_FN(fg_k_ql_q8_0)(const char *g, size_t nb, const char *xa,
    size_t xs, size_t nt, float *y, size_t ys)
{
    if (nt == FG_K_QL_NT) {
        fg_k_ql_group(FG_K_Q8_0, g, nb, xa, xs, FG_K_QL_NT, y, ys);
        return;
    }

    fg_k_ql_group(FG_K_Q8_0, g, nb, xa, xs, 1, y, ys);
}


FG_K_QD_TARGET static void
FG_K_QD_FN(fg_k_ql_q4_k)(const char *g, size_t nb, const char *xa,
    size_t xs, size_t nt, float *y, size_t ys)
{
    if (nt == FG_K_QL_NT) {
        fg_k_ql_group(FG_K_Q4_K, g, nb, xa, xs, FG_K_QL_NT, y, ys);
        return;
    }

    fg_k_ql_group(FG_K_Q4_K, g, nb, xa, xs, 1, y, ys);
}


/*
 * Rows [r0, r1) of y, whole groups, in tiles of FG_K_QD_TILE_R weight
 * rows by FG_K_QD_TILE_T rows of x as the per-row kernels take them: a
 * group stays in the first-level cache while the tile's rows of x meet
 * it, FG_K_QL_NT at a time and the rest one by one.
 */
FG_K_QD_TARGET void
FG_K_QD_FN(fg_k_qd_lanes)(const fg_k_mm_t *mm, size_t r0, size_t r1)
{
    size_t       r, rt, t0, t, tn, nt, nb, rs;
    const char  *g;

    rs = fg_k_row_size(mm->type, mm->in);
    nb = mm->in / fg_k_qd_block(mm->type);

    for (rt = r0; rt < r1; rt += FG_K_QD_TILE_R) {
        for (t0 = 0; t0 < mm->n; t0 += FG_K_QD_TILE_T) {
            tn = mm->n - t0 < FG_K_QD_TILE_T ? mm->n - t0 : FG_K_QD_TILE_T;

            for (r = rt; r < r1 && r < rt + FG_K_QD_TILE_R;
                 r += FG_K_PACK_ROWS)
            {
                g = (const char *) mm->w + r * rs;

                for (t = t0; t < t0 + tn; t += nt) {
                    nt = t0 + tn - t >= FG_K_QL_NT ? FG_K_QL_NT : 1;

                    if (mm->type == FG_K_Q4_0) {
                        FG_K_QD_FN(fg_k_ql_q4_0)(g, nb,
                                                 mm->xa + t * mm->xa_row,
                                                 mm->xa_row, nt,
                                                 mm->y + t * mm->out + r,
                                                 mm->out);

                    } else if (mm->type == FG_K_Q4_K) {
                        FG_K_QD_FN(fg_k_ql_q4_k)(g, nb,
                                                 mm->xa + t * mm->xa_row,
                                                 mm->xa_row, nt,
                                                 mm->y + t * mm->out + r,
                                                 mm->out);

                    } else {
                        FG_K_QD_FN(fg_k_ql_q8_0)(g, nb,
                                                 mm->xa + t * mm->xa_row,
                                                 mm->xa_row, nt,
                                                 mm->y + t * mm->out + r,
                                                 mm->out);
                    }
                }
            }
        }
    }
}
