
/*
 * fairgate: the x86 products of packed Q4_K matrices
 * (fg_kernels_qdot.h says how a group of 8 rows is laid out) by few rows
 * of x, part of fg_kernels_qdot_x86.h's two builds.  A group's rows meet
 * one row of x together: x's block is loaded once for them, the 8 rows'
 * halves are widened by one conversion and multiplied by x's d in one
 * product, and each row takes its own from memory, where the plain
 * kernels convert, multiply and broadcast row by row.
 *
 * Each row's sums are those of fg_k_qd_gk() for one row
 * of x, the same operations in the same order (integer sums are exact in
 * any order; the floats are not reordered), so a row's result has the
 * same bits as from the plain matrix, alone or in any batch (tested).
 * AVX-512's 32 registers hold 8 rows' sums; AVX2's 16, half of them,
 * made it spill, and its Q4_K keeps the per-row kernels.
 */


#if (FG_K_QD_WIDE)
#define FG_K_QD_PACK_NR  8
#else
#define FG_K_QD_PACK_NR  4
#endif


/* a Q4_K row's 8 chunks of 32 values by x's (fg_k_qd_gk()'s, one row) */
FG_K_QD_INLINE __m256i
fg_k_qd_p4k_ints(const uint8_t *qs, __m256i sc, const fg_k_block_q8_k_t *x)
{
    int      c;
    __m256i  v, q, isum[2];

    isum[0] = _mm256_setzero_si256();
    isum[1] = _mm256_setzero_si256();

#pragma GCC unroll 8
    for (c = 0; c < 8; c++) {
        v = _mm256_loadu_si256((const __m256i *) (qs + 32 * (c / 2)));
        q = _mm256_and_si256(c % 2 ? _mm256_srli_epi16(v, 4) : v,
                             _mm256_set1_epi8(0xf));
        isum[c % 2] = fg_k_qd_dpwssd(isum[c % 2],
                                     _mm256_maddubs_epi16(q,
                                         fg_k_qd_load(x->qs + 32 * c)),
                                     fg_k_qd_pick16(sc, c, c));
    }

    return _mm256_add_epi32(isum[0], isum[1]);
}


/* block b (wb) of rows j0 .. j0 + nr of a Q4_K group by x's block b */
FG_K_QD_INLINE void
fg_k_qd_p4k_block(const char *wb, const fg_k_block_q8_k_t *x, size_t j0,
    size_t nr, __m256 *acc, __m256 *accm)
{
    size_t   j, r;
    float    s[2][FG_K_PACK_ROWS] __attribute__((aligned(32)));
    __m128i  bp, sc, mn4;
    __m256   xd;

    /* mins per 32 meet pairs of x's sums of 16: fg_k_qd_kmins()'s */
    bp = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *) x->bsums),
                        _mm_loadu_si128((const __m128i *) (x->bsums + 8)));

    /* d * d_x and dmin * d_x of the 8 rows, each as fg_k_qd_gk() has it */
    xd = _mm256_set1_ps(x->d);
    _mm256_store_ps(s[0], _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128(
                                            (const __m128i *) wb)), xd));
    _mm256_store_ps(s[1], _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128(
                                            (const __m128i *) (wb + 16))),
                                        xd));

#pragma GCC unroll 8
    for (j = 0; j < nr; j++) {
        r = j0 + j;
        fg_k_qd_scales4((const uint8_t *) wb + 4 * FG_K_PACK_ROWS
                        + FG_K_K_SCALE_SIZE * r, &sc, &mn4);

        acc[j] = _mm256_fmadd_ps(
                     _mm256_cvtepi32_ps(fg_k_qd_p4k_ints(
                         (const uint8_t *) wb + 16 * FG_K_PACK_ROWS
                         + 128 * r, _mm256_broadcastsi128_si256(sc), x)),
                     _mm256_broadcast_ss(s[0] + r), acc[j]);
        accm[j] = _mm256_fmadd_ps(
                      _mm256_zextps128_ps256(_mm_cvtepi32_ps(
                          _mm_madd_epi16(bp, mn4))),
                      _mm256_broadcast_ss(s[1] + r), accm[j]);
    }
}


/* rows j0 .. j0 + nr of a Q4_K group (g) by a row of x, into y[j] */
FG_K_QD_INLINE void
fg_k_qd_p4k(const char *g, size_t nb, size_t j0, size_t nr, const char *xa,
    float *y)
{
    size_t  b, j, bs;
    __m256  acc[FG_K_QD_PACK_NR], accm[FG_K_QD_PACK_NR];

    bs = FG_K_PACK_ROWS * sizeof(fg_k_block_q4_k_t);

#pragma GCC unroll 8
    for (j = 0; j < nr; j++) {
        acc[j] = _mm256_setzero_ps();
        accm[j] = _mm256_setzero_ps();
    }

    for (b = 0; b < nb; b++) {
        fg_k_qd_p4k_block(g + b * bs, (const fg_k_block_q8_k_t *) xa + b,
                          j0, nr, acc, accm);
    }

#pragma GCC unroll 8
    for (j = 0; j < nr; j++) {
        y[j] = fg_k_hsum8_avx2(_mm256_sub_ps(acc[j], accm[j]));
    }
}


FG_K_QD_TARGET static void
FG_K_QD_FN(fg_k_qd_pack_q4_k)(const char *g, size_t nb, size_t j0,
    const char *xa, float *y)
{
    fg_k_qd_p4k(g, nb, j0, FG_K_QD_PACK_NR, xa, y);
}


/*
 * Rows [r0, r1) of y by a packed matrix, group by group, each row of x on
 * its own: 1 where done, 0 where the rows are not whole groups.
 */
FG_K_QD_TARGET static int
FG_K_QD_FN(fg_k_qd_pack_mm)(const fg_k_mm_t *mm, size_t r0, size_t r1)
{
    size_t       r, t, j, rs, nb;
    float        y[FG_K_PACK_ROWS];
    const char  *g, *xa;

    /* AVX2's Q4_K ran at half the plain kernels' speed: spills, taken */
    if (r0 % FG_K_PACK_ROWS != 0 || r1 % FG_K_PACK_ROWS != 0
        || mm->type != FG_K_Q4_K || !FG_K_QD_WIDE)
    {
        return 0;
    }

    rs = fg_k_qd_row_size(mm->type, mm->in);
    nb = mm->in / fg_k_qd_block(mm->type);

    for (r = r0; r < r1; r += FG_K_PACK_ROWS) {
        g = (const char *) mm->w + r * rs;

        for (t = 0; t < mm->n; t++) {
            xa = mm->xa + t * mm->xa_row;

            for (j = 0; j < FG_K_PACK_ROWS; j += FG_K_QD_PACK_NR) {
                FG_K_QD_FN(fg_k_qd_pack_q4_k)(g, nb, j, xa, y + j);
            }

            memcpy(mm->y + t * mm->out + r, y, sizeof(y));
        }
    }

    return 1;
}
