
/*
 * fairgate: the x86 products of quantized weights and activations, one
 * source for two builds: fg_kernels_qdot_avx2.c and
 * fg_kernels_qdot_avx512.c define, before including it,
 *
 *   FG_K_QD_TARGET          the target attribute of every function
 *   FG_K_QD_FN(name)        name with the build's suffix
 *   fg_k_qd_dpbusd(a, u, s) a + the sums of 4 products of unsigned u and
 *                           signed s bytes, as 8 int32 (VNNI's vpdpbusd)
 *   fg_k_qd_dpwssd(a, p, s) a + the sums of 2 products of int16 p and s,
 *                           as 8 int32 (VNNI's vpdpwssd)
 *
 * Weights are unpacked into 32 bytes at a time; those with a scale per 16
 * or 32 values meet x through maddubs (unsigned by signed bytes into
 * int16 pairs: at most 2 * 63 * 127, no saturation) and then their scale
 * through dpwssd; the others through dpbusd.  A block's integer sums go to
 * float once, scaled by d_w * d_x.  Every integer is exact, so the result
 * differs from the portable one by the order of the float sums only.
 */


#define FG_K_QD_INLINE  FG_K_QD_TARGET static inline \
                        __attribute__((always_inline))


FG_K_QD_INLINE __m256i
fg_k_qd_set16(int hi, int lo)
{
    return _mm256_inserti128_si256(
               _mm256_castsi128_si256(_mm_set1_epi16((short) lo)),
               _mm_set1_epi16((short) hi), 1);
}


/* 16 bytes of nibbles as 32 values: the low nibbles first */
FG_K_QD_INLINE __m256i
fg_k_qd_nibbles(const uint8_t *qs)
{
    __m128i  v, m;

    v = _mm_loadu_si128((const __m128i *) qs);
    m = _mm_set1_epi8(0xf);

    return _mm256_inserti128_si256(
               _mm256_castsi128_si256(_mm_and_si128(v, m)),
               _mm_and_si128(_mm_srli_epi16(v, 4), m), 1);
}


/* bit j of the 32 bits at qh as byte j: 0x10 where set, else 0 */
FG_K_QD_INLINE __m256i
fg_k_qd_bits16(const uint8_t *qh)
{
    int32_t  h;
    __m256i  v, m;

    memcpy(&h, qh, 4);

    /* byte j gets byte j / 8 of h, then tests bit j % 8 of it */
    v = _mm256_shuffle_epi8(_mm256_set1_epi32(h),
                            _mm256_setr_epi64x(0, 0x0101010101010101,
                                               0x0202020202020202,
                                               0x0303030303030303));
    m = _mm256_set1_epi64x(0x8040201008040201);
    v = _mm256_cmpeq_epi8(_mm256_and_si256(v, m), m);

    return _mm256_and_si256(v, _mm256_set1_epi8(0x10));
}


/* signed by signed bytes: the signs of w move onto x */
FG_K_QD_INLINE __m256i
fg_k_qd_dot_ss(__m256i acc, __m256i w, __m256i x)
{
    return fg_k_qd_dpbusd(acc, _mm256_sign_epi8(w, w),
                          _mm256_sign_epi8(x, w));
}


FG_K_QD_INLINE __m256i
fg_k_qd_load(const int8_t *p)
{
    return _mm256_loadu_si256((const __m256i *) p);
}


/* ---- x ---- */

FG_K_QD_INLINE int32_t
fg_k_qd_sum16(const int8_t *q)
{
    size_t   j;
    int32_t  sum;

    sum = 0;

    for (j = 0; j < 16; j++) {
        sum += q[j];
    }

    return sum;
}


/* n (32 or 256) values to int8 as fg_k_qd_quant_block() does */
FG_K_QD_INLINE float
fg_k_qd_quant_vec(int8_t *q, const float *x, size_t n)
{
    size_t   i;
    float    amax;
    __m256   a, id, sign;
    __m256i  v[4], p;

    sign = _mm256_set1_ps(-0.0f);
    a = _mm256_setzero_ps();

    for (i = 0; i < n; i += 8) {
        a = _mm256_max_ps(a, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
    }

    amax = fg_k_hmax8_avx2(a);
    id = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);

    for (i = 0; i < n; i += 32) {
        v[0] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i), id));
        v[1] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8),
                                                id));
        v[2] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i + 16),
                                                id));
        v[3] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i + 24),
                                                id));

        /* packs work within 128-bit lanes: dwords 0 4 1 5 2 6 3 7 */
        p = _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]),
                               _mm256_packs_epi32(v[2], v[3]));
        p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5,
                                                             2, 6, 3, 7));
        _mm256_storeu_si256((__m256i *) (q + i), p);
    }

    return amax / 127.0f;
}


FG_K_QD_TARGET void
FG_K_QD_FN(fg_k_qd_quant)(fg_k_type_e type, void *xq, const float *x,
    size_t in)
{
    size_t              b, j;
    float               d;
    int32_t             sum;
    fg_k_block_q8_1x_t  *b1;
    fg_k_block_q8_k_t  *bk;

    switch (type) {

    case FG_K_Q4_0:
    case FG_K_Q5_0:
        fg_k_quant_x(xq, x, in);
        return;

    case FG_K_Q4_1:
    case FG_K_Q5_1:
        b1 = xq;

        for (b = 0; b < in / FG_K_QK8_1; b++, x += FG_K_QK8_1) {
            d = fg_k_qd_quant_vec(b1[b].qs, x, FG_K_QK8_1);
            sum = 0;

            for (j = 0; j < FG_K_QK8_1; j++) {
                sum += b1[b].qs[j];
            }

            b1[b].d = d;
            b1[b].s = d * (float) sum;
        }

        return;

    default:
        bk = xq;

        for (b = 0; b < in / FG_K_QK_K; b++, x += FG_K_QK_K) {
            bk[b].d = fg_k_qd_quant_vec(bk[b].qs, x, FG_K_QK_K);

            for (j = 0; j < FG_K_QK_K / 16; j++) {
                bk[b].bsums[j] = (int16_t) fg_k_qd_sum16(bk[b].qs + 16 * j);
            }
        }

        return;
    }
}


/* ---- the 32-blocks ---- */

FG_K_QD_TARGET static float
fg_k_qd_q4_0_x86(const fg_k_block_q4_0_t *w, const fg_k_block_q8x_t *x,
    size_t nb)
{
    size_t   b;
    __m256   acc;
    __m256i  p;

    acc = _mm256_setzero_ps();

    for (b = 0; b < nb; b++) {
        p = fg_k_qd_dot_ss(_mm256_setzero_si256(),
                           _mm256_sub_epi8(fg_k_qd_nibbles(w[b].qs),
                                           _mm256_set1_epi8(8)),
                           fg_k_qd_load(x[b].qs));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p),
                              _mm256_set1_ps(_cvtsh_ss(w[b].d) * x[b].d),
                              acc);
    }

    return fg_k_hsum8_avx2(acc);
}


FG_K_QD_TARGET static float
fg_k_qd_q5_0_x86(const fg_k_block_q5_0_t *w, const fg_k_block_q8x_t *x,
    size_t nb)
{
    size_t   b;
    __m256   acc;
    __m256i  p, q;

    acc = _mm256_setzero_ps();

    for (b = 0; b < nb; b++) {
        q = _mm256_or_si256(fg_k_qd_nibbles(w[b].qs),
                            fg_k_qd_bits16(w[b].qh));
        p = fg_k_qd_dot_ss(_mm256_setzero_si256(),
                           _mm256_sub_epi8(q, _mm256_set1_epi8(16)),
                           fg_k_qd_load(x[b].qs));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p),
                              _mm256_set1_ps(_cvtsh_ss(w[b].d) * x[b].d),
                              acc);
    }

    return fg_k_hsum8_avx2(acc);
}


/* Q4_1 (qh NULL) and Q5_1: unsigned values, the mins meet x's sums */
FG_K_QD_INLINE float
fg_k_qd_q1_x86(const char *w, size_t bs, const fg_k_block_q8_1x_t *x,
    size_t nb, int five)
{
    size_t                    b;
    float                     summ;
    __m256                    acc;
    __m256i                   p, q;
    const fg_k_block_q4_1_t  *w4;
    const fg_k_block_q5_1_t  *w5;

    acc = _mm256_setzero_ps();
    summ = 0.0f;

    for (b = 0; b < nb; b++, w += bs) {
        w4 = (const fg_k_block_q4_1_t *) w;
        w5 = (const fg_k_block_q5_1_t *) w;

        if (five) {
            q = _mm256_or_si256(fg_k_qd_nibbles(w5->qs),
                                fg_k_qd_bits16(w5->qh));
        } else {
            q = fg_k_qd_nibbles(w4->qs);
        }

        p = fg_k_qd_dpbusd(_mm256_setzero_si256(), q, fg_k_qd_load(x[b].qs));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p),
                              _mm256_set1_ps(_cvtsh_ss(w4->d) * x[b].d),
                              acc);
        summ += _cvtsh_ss(w4->m) * x[b].s;
    }

    return fg_k_hsum8_avx2(acc) + summ;
}


/* ---- the k-quants ---- */

/* sum over the sub-blocks of mn[s] * bsums[s] (16 of each) */
FG_K_QD_INLINE int32_t
fg_k_qd_mins(const int16_t *bsums, const int16_t *mn)
{
    __m256i  p;
    __m128i  s;

    p = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *) bsums),
                          _mm256_loadu_si256((const __m256i *) mn));
    s = _mm_add_epi32(_mm256_castsi256_si128(p),
                      _mm256_extracti128_si256(p, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));

    return _mm_cvtsi128_si32(s);
}


FG_K_QD_TARGET static float
fg_k_qd_q2_k_x86(const fg_k_block_q2_k_t *w, const fg_k_block_q8_k_t *x,
    size_t nb)
{
    size_t   b, h, j, s;
    float    summ;
    int16_t  mn[16];
    __m256   acc;
    __m256i  v, isum;

    acc = _mm256_setzero_ps();
    summ = 0.0f;

    for (b = 0; b < nb; b++) {
        isum = _mm256_setzero_si256();

        for (s = 0; s < 16; s++) {
            mn[s] = w[b].scales[s] >> 4;
        }

        for (h = 0; h < 2; h++) {
            v = _mm256_loadu_si256((const __m256i *) (w[b].qs + 32 * h));

#pragma GCC unroll 4
            for (j = 0; j < 4; j++) {
                s = 8 * h + 2 * j;
                isum = fg_k_qd_dpwssd(isum,
                           _mm256_maddubs_epi16(
                               _mm256_and_si256(
                                   _mm256_srli_epi16(v, 2 * j),
                                   _mm256_set1_epi8(3)),
                               fg_k_qd_load(x[b].qs + 128 * h + 32 * j)),
                           fg_k_qd_set16(w[b].scales[s + 1] & 0xf,
                                         w[b].scales[s] & 0xf));
            }
        }

        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum),
                              _mm256_set1_ps(_cvtsh_ss(w[b].d) * x[b].d),
                              acc);
        summ += _cvtsh_ss(w[b].dmin) * x[b].d
                * (float) fg_k_qd_mins(x[b].bsums, mn);
    }

    return fg_k_hsum8_avx2(acc) - summ;
}


FG_K_QD_TARGET static float
fg_k_qd_q3_k_x86(const fg_k_block_q3_k_t *w, const fg_k_block_q8_k_t *x,
    size_t nb)
{
    size_t   b, h, j, s;
    int8_t   sc[16];
    __m256   acc;
    __m256i  v, hv, m, h4, xv, p;
    __m256i  isum;

    acc = _mm256_setzero_ps();

    for (b = 0; b < nb; b++) {
        isum = _mm256_setzero_si256();
        fg_k_qd_scales_k3(w[b].scales, sc);
        hv = _mm256_loadu_si256((const __m256i *) w[b].hmask);

        for (h = 0; h < 2; h++) {
            v = _mm256_loadu_si256((const __m256i *) (w[b].qs + 32 * h));

#pragma GCC unroll 4
            for (j = 0; j < 4; j++) {
                s = 8 * h + 2 * j;
                m = _mm256_set1_epi8((char) (1 << (4 * h + j)));

                /* 4 where the high bit is clear: q - 4, in two products */
                h4 = _mm256_andnot_si256(
                         _mm256_cmpeq_epi8(_mm256_and_si256(hv, m), m),
                         _mm256_set1_epi8(4));
                xv = fg_k_qd_load(x[b].qs + 128 * h + 32 * j);
                p = _mm256_sub_epi16(
                        _mm256_maddubs_epi16(
                            _mm256_and_si256(_mm256_srli_epi16(v, 2 * j),
                                             _mm256_set1_epi8(3)),
                            xv),
                        _mm256_maddubs_epi16(h4, xv));
                isum = fg_k_qd_dpwssd(isum, p,
                                      fg_k_qd_set16(sc[s + 1], sc[s]));
            }
        }

        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum),
                              _mm256_set1_ps(_cvtsh_ss(w[b].d) * x[b].d),
                              acc);
    }

    return fg_k_hsum8_avx2(acc);
}


/* Q4_K, and Q5_K when qh is given; bs: the bytes of a block */
FG_K_QD_INLINE float
fg_k_qd_q45_k_x86(const char *w, size_t bs, const fg_k_block_q8_k_t *x,
    size_t nb, int five)
{
    size_t                    b, c, s;
    float                     summ;
    uint8_t                   sc[8], mn8[8];
    int16_t                   mn[16];
    __m256                    acc;
    __m256i                   v, hv, lo, hi, m, isum;
    const uint8_t            *qs;
    const fg_k_block_q4_k_t  *w4;
    const fg_k_block_q5_k_t  *w5;

    acc = _mm256_setzero_ps();
    summ = 0.0f;
    hv = _mm256_setzero_si256();

    for (b = 0; b < nb; b++, w += bs) {
        w4 = (const fg_k_block_q4_k_t *) w;
        w5 = (const fg_k_block_q5_k_t *) w;
        qs = five ? w5->qs : w4->qs;

        if (five) {
            hv = _mm256_loadu_si256((const __m256i *) w5->qh);
        }

        fg_k_qd_scales_k4(w4->scales, sc, mn8);

        for (s = 0; s < 16; s++) {
            mn[s] = mn8[s / 2];
        }

        isum = _mm256_setzero_si256();

#pragma GCC unroll 4
        for (c = 0; c < 4; c++) {
            v = _mm256_loadu_si256((const __m256i *) (qs + 32 * c));
            lo = _mm256_and_si256(v, _mm256_set1_epi8(0xf));
            hi = _mm256_and_si256(_mm256_srli_epi16(v, 4),
                                  _mm256_set1_epi8(0xf));

            if (five) {
                m = _mm256_set1_epi8((char) (1 << (2 * c)));
                lo = _mm256_or_si256(lo, _mm256_and_si256(
                         _mm256_cmpeq_epi8(_mm256_and_si256(hv, m), m),
                         _mm256_set1_epi8(0x10)));
                m = _mm256_set1_epi8((char) (2 << (2 * c)));
                hi = _mm256_or_si256(hi, _mm256_and_si256(
                         _mm256_cmpeq_epi8(_mm256_and_si256(hv, m), m),
                         _mm256_set1_epi8(0x10)));
            }

            isum = fg_k_qd_dpwssd(isum,
                       _mm256_maddubs_epi16(lo,
                           fg_k_qd_load(x[b].qs + 64 * c)),
                       _mm256_set1_epi16(sc[2 * c]));
            isum = fg_k_qd_dpwssd(isum,
                       _mm256_maddubs_epi16(hi,
                           fg_k_qd_load(x[b].qs + 64 * c + 32)),
                       _mm256_set1_epi16(sc[2 * c + 1]));
        }

        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum),
                              _mm256_set1_ps(_cvtsh_ss(w4->d) * x[b].d),
                              acc);
        summ += _cvtsh_ss(w4->dmin) * x[b].d
                * (float) fg_k_qd_mins(x[b].bsums, mn);
    }

    return fg_k_hsum8_avx2(acc) - summ;
}


FG_K_QD_TARGET static float
fg_k_qd_q6_k_x86(const fg_k_block_q6_k_t *w, const fg_k_block_q8_k_t *x,
    size_t nb)
{
    size_t   b, h, k, s;
    float    summ;
    int16_t  sc[16];
    __m256   acc;
    __m256i  l0, l1, qh, q[4], m4, m3, isum;

    acc = _mm256_setzero_ps();
    summ = 0.0f;
    m4 = _mm256_set1_epi8(0xf);
    m3 = _mm256_set1_epi8(3);

    for (b = 0; b < nb; b++) {
        isum = _mm256_setzero_si256();

        for (s = 0; s < 16; s++) {
            sc[s] = w[b].scales[s];
        }

        for (h = 0; h < 2; h++) {
            l0 = _mm256_loadu_si256((const __m256i *) (w[b].ql + 64 * h));
            l1 = _mm256_loadu_si256((const __m256i *) (w[b].ql + 64 * h
                                                       + 32));
            qh = _mm256_loadu_si256((const __m256i *) (w[b].qh + 32 * h));

            /* values 0..63: the offset 32 meets x's sums below */
            q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4),
                       _mm256_slli_epi16(_mm256_and_si256(qh, m3), 4));
            q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4),
                       _mm256_slli_epi16(_mm256_and_si256(
                           _mm256_srli_epi16(qh, 2), m3), 4));
            q[2] = _mm256_or_si256(
                       _mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                       _mm256_slli_epi16(_mm256_and_si256(
                           _mm256_srli_epi16(qh, 4), m3), 4));
            q[3] = _mm256_or_si256(
                       _mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                       _mm256_slli_epi16(_mm256_and_si256(
                           _mm256_srli_epi16(qh, 6), m3), 4));

#pragma GCC unroll 4
            for (k = 0; k < 4; k++) {
                s = 8 * h + 2 * k;
                isum = fg_k_qd_dpwssd(isum,
                           _mm256_maddubs_epi16(q[k],
                               fg_k_qd_load(x[b].qs + 128 * h + 32 * k)),
                           fg_k_qd_set16(sc[s + 1], sc[s]));
            }
        }

        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum),
                              _mm256_set1_ps(_cvtsh_ss(w[b].d) * x[b].d),
                              acc);
        summ += 32.0f * _cvtsh_ss(w[b].d) * x[b].d
                * (float) fg_k_qd_mins(x[b].bsums, sc);
    }

    return fg_k_hsum8_avx2(acc) - summ;
}


FG_K_QD_TARGET float
FG_K_QD_FN(fg_k_qd_dot)(fg_k_type_e type, const void *w, const void *xq,
    size_t in)
{
    size_t  nb;

    nb = in / fg_k_qd_block(type);

    switch (type) {

    case FG_K_Q4_0:
        return fg_k_qd_q4_0_x86(w, xq, nb);

    case FG_K_Q5_0:
        return fg_k_qd_q5_0_x86(w, xq, nb);

    case FG_K_Q4_1:
        return fg_k_qd_q1_x86(w, sizeof(fg_k_block_q4_1_t), xq, nb, 0);

    case FG_K_Q5_1:
        return fg_k_qd_q1_x86(w, sizeof(fg_k_block_q5_1_t), xq, nb, 1);

    case FG_K_Q2_K:
        return fg_k_qd_q2_k_x86(w, xq, nb);

    case FG_K_Q3_K:
        return fg_k_qd_q3_k_x86(w, xq, nb);

    case FG_K_Q4_K:
        return fg_k_qd_q45_k_x86(w, sizeof(fg_k_block_q4_k_t), xq, nb, 0);

    case FG_K_Q5_K:
        return fg_k_qd_q45_k_x86(w, sizeof(fg_k_block_q5_k_t), xq, nb, 1);

    default:
        return fg_k_qd_q6_k_x86(w, xq, nb);
    }
}
