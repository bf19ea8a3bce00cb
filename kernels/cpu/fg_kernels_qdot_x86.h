
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
 *   fg_k_qd_hi32(q, qh)     q + 16 in byte j where bit j of the 32 bits at
 *                           qh is set (Q5_0's and Q5_1's fifth bits)
 *
 * Weights are unpacked into 32 bytes at a time; those with a scale per 16
 * or 32 values meet x through maddubs (unsigned by signed bytes into
 * int16 pairs: at most 2 * 63 * 127, no saturation) and then their scale
 * through dpwssd; the others through dpbusd.  Offsets of the values
 * (Q6_K's 32, Q3_K's 4) meet x's sums of 16 instead of each value.  A
 * block's integer sums go to float once, scaled by d_w * d_x.  Every
 * integer is exact, so the result differs from the portable one by the
 * order of the float sums only.
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
    __m256i  v;

    /* the 16 bytes in both halves, the high half shifted by 4: 2 ops */
    v = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *) qs));

    return _mm256_and_si256(_mm256_srlv_epi32(v, _mm256_setr_epi32(0, 0, 0,
                                                  0, 4, 4, 4, 4)),
                            _mm256_set1_epi8(0xf));
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


/*
 * The largest magnitude of n (32 or 256) values, and with its sign the
 * first value of that magnitude, as fg_kernels_qdot.c's scan finds it:
 * the largest or the smallest value, whichever is further from 0; a scan
 * only where they tie (x and -x both there)
 */
FG_K_QD_INLINE float
fg_k_qd_max_vec(const float *x, size_t n, int sign)
{
    int      m;
    size_t   i;
    float    hi, lo;
    __m256   v, a, b, s;

    s = _mm256_set1_ps(-0.0f);

    if (!sign) {
        a = _mm256_setzero_ps();

        for (i = 0; i < n; i += 8) {
            a = _mm256_max_ps(a, _mm256_andnot_ps(s,
                                                  _mm256_loadu_ps(x + i)));
        }

        return fg_k_hmax8_avx2(a);
    }

    a = _mm256_setzero_ps();
    b = _mm256_setzero_ps();

    for (i = 0; i < n; i += 8) {
        v = _mm256_loadu_ps(x + i);
        a = _mm256_max_ps(a, v);
        b = _mm256_max_ps(b, _mm256_xor_ps(s, v));
    }

    hi = fg_k_hmax8_avx2(a);
    lo = fg_k_hmax8_avx2(b);

    if (hi != lo) {
        return hi > lo ? hi : -lo;
    }

    for (i = 0; i < n && hi != 0.0f; i += 8) {
        m = _mm256_movemask_ps(_mm256_cmp_ps(
                _mm256_andnot_ps(s, _mm256_loadu_ps(x + i)),
                _mm256_set1_ps(hi), _CMP_EQ_OQ));

        if (m != 0) {
            return x[i + (size_t) __builtin_ctz((unsigned) m)];
        }
    }

    return hi;
}


/*
 * n values to int8, q = round(x * id), ties to even as the conversion
 * rounds, at most 127 as the packs saturate: fg_k_qd_quant_ints()'s
 */
FG_K_QD_INLINE int32_t
fg_k_qd_quant_vec(int8_t *q, const float *x, size_t n, float f)
{
    size_t   i;
    __m128i  h;
    __m256   id;
    __m256i  v[4], p, sum;

    id = _mm256_set1_ps(f);
    sum = _mm256_setzero_si256();

    for (i = 0; i < n; i += 32) {
        v[0] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i), id));
        v[1] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8),
                                                id));
        v[2] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i + 16),
                                                id));
        v[3] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i + 24),
                                                id));
        sum = _mm256_add_epi32(sum, _mm256_add_epi32(
                  _mm256_add_epi32(v[0], v[1]), _mm256_add_epi32(v[2], v[3])));

        /* packs work within 128-bit lanes: dwords 0 4 1 5 2 6 3 7 */
        p = _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]),
                               _mm256_packs_epi32(v[2], v[3]));
        p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5,
                                                             2, 6, 3, 7));
        _mm256_storeu_si256((__m256i *) (q + i), p);
    }

    /* the values are within -127 .. 127: the packs kept them, sum(q) */
    h = _mm_add_epi32(_mm256_castsi256_si128(sum),
                      _mm256_extracti128_si256(sum, 1));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4e));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xb1));

    return _mm_cvtsi128_si32(h);
}


FG_K_QD_TARGET void
FG_K_QD_FN(fg_k_qd_quant)(fg_k_type_e type, void *xq, const float *x,
    size_t in)
{
    size_t               b, j;
    float                amax, id;
    __m128               h;
    int32_t              sum;
    fg_k_block_q8_k_t   *bk;
    fg_k_block_q8_1x_t  *b1;

    switch (type) {

    case FG_K_Q4_0:
    case FG_K_Q4_1:
    case FG_K_Q5_0:
    case FG_K_Q5_1:
        b1 = xq;

        for (b = 0; b < in / FG_K_QK8_1; b++, x += FG_K_QK8_1) {
            amax = fg_k_qd_max_vec(x, FG_K_QK8_1, 0);
            sum = fg_k_qd_quant_vec(b1[b].qs, x, FG_K_QK8_1,
                                    fg_k_qd_id_8(amax));

            /* fg_k_qd_scales_8()'s, both halves in one conversion */
            h = fg_k_via_half4_avx2(_mm_setr_ps(amax / 127.0f,
                                                amax / 127.0f * (float) sum,
                                                0.0f, 0.0f));
            b1[b].d = _mm_cvtss_f32(h);
            b1[b].s = _mm_cvtss_f32(_mm_movehdup_ps(h));
            b1[b].sum = sum;
        }

        return;

    default:
        bk = xq;

        for (b = 0; b < in / FG_K_QK_K; b++, x += FG_K_QK_K) {
            id = fg_k_qd_id_k(fg_k_qd_max_vec(x, FG_K_QK_K, 1));
            (void) fg_k_qd_quant_vec(bk[b].qs, x, FG_K_QK_K, id);
            bk[b].d = fg_k_qd_d_k(id);

            for (j = 0; j < FG_K_QK_K / 16; j++) {
                bk[b].bsums[j] = (int16_t) fg_k_qd_sum16(bk[b].qs + 16 * j);
            }
        }

        return;
    }
}


/* ---- the 32-blocks ---- */

/*
 * A group of nt (1 to FG_K_QD_NT) rows of x meets one weight row: each
 * weight block is unpacked once for all of them.  Row t of x is at xa +
 * t * xs, its result goes to y[t * ys].  Each row's floats are summed in
 * the same order whatever nt, so a row's result has the same bits alone
 * or in a group (batch invariance); integer sums are exact in any order.
 * type and nt are constants where these inline.
 */

/* the min of a Q4_1 or Q5_1 block times x's sum, in lane 1 of accm */
FG_K_QD_INLINE __m128
fg_k_qd_min1(const void *wd, const float *xds, __m128 accm)
{
    int32_t  dm;

    /* d and m, two halves side by side, meet x's d and s */
    memcpy(&dm, wd, 4);

    return _mm_fmadd_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(dm)),
                        _mm_castsi128_ps(_mm_loadl_epi64(
                            (const __m128i *) xds)),
                        accm);
}


/*
 * block wb of the row meets nt rows of x, into acc[t] and accm[t]; Q4_0's
 * d and quants where wr says, the others' in the block
 */
FG_K_QD_INLINE void
fg_k_qd_b32(fg_k_type_e type, const char *wb, const fg_k_qd_wrow_t *wr,
    const char *xa, size_t xs, size_t nt, __m256 *acc, __m128 *accm)
{
    int                        one;
    size_t                     t;
    __m256                     dw;
    __m256i                    q, p;
    const fg_k_block_q4_1_t   *b41;
    const fg_k_block_q5_0_t   *b50;
    const fg_k_block_q5_1_t   *b51;
    const fg_k_block_q8_1x_t  *x;

    one = type == FG_K_Q4_1 || type == FG_K_Q5_1;
    b41 = (const fg_k_block_q4_1_t *) wb;
    b50 = (const fg_k_block_q5_0_t *) wb;
    b51 = (const fg_k_block_q5_1_t *) wb;

    /*
     * every type's d comes first, converted in all lanes at once: d_w *
     * d_x is then one multiply by x's d from memory, not a scalar product
     * and a broadcast for each row of x (the same product, the same bits)
     */
    dw = _mm256_cvtph_ps(_mm_set1_epi16(*(const short *) (wb + wr->od)));

    switch (type) {
    case FG_K_Q4_0:
        q = fg_k_qd_nibbles((const uint8_t *) wb + wr->oq);
        break;
    case FG_K_Q5_0:
        q = fg_k_qd_hi32(fg_k_qd_nibbles(b50->qs), b50->qh);
        break;
    case FG_K_Q4_1:
        q = fg_k_qd_nibbles(b41->qs);
        break;
    default:
        q = fg_k_qd_hi32(fg_k_qd_nibbles(b51->qs), b51->qh);
        break;
    }

#pragma GCC unroll 8
    for (t = 0; t < nt; t++) {
        x = (const fg_k_block_q8_1x_t *) (xa + t * xs);

        /* Q4_0's and Q5_0's offsets: sum((q - o) x) = sum(q x) - o sum(x) */
        p = fg_k_qd_dpbusd(one ? _mm256_setzero_si256()
                               : _mm256_zextsi128_si256(_mm_cvtsi32_si128(
                                     -(type == FG_K_Q4_0 ? 8 : 16)
                                     * x->sum)),
                           q, fg_k_qd_load(x->qs));
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p),
                                 _mm256_mul_ps(dw, _mm256_set1_ps(x->d)),
                                 acc[t]);

        if (one) {
            accm[t] = fg_k_qd_min1(&b41->d, &x->d, accm[t]);
        }
    }
}


/* two blocks at a time into two sums: a block takes less than an FMA */
FG_K_QD_INLINE void
fg_k_qd_g32(fg_k_type_e type, const fg_k_qd_wrow_t *wr, const char *xa,
    size_t xs, size_t nb, size_t nt, float *y, size_t ys)
{
    size_t       b, t, xb, bs;
    const char  *w;
    __m128  accm[FG_K_QD_NT];
    __m256  a0[FG_K_QD_NT], a1[FG_K_QD_NT];

    xb = sizeof(fg_k_block_q8_1x_t);
    w = wr->w;
    bs = wr->bs;

#pragma GCC unroll 8
    for (t = 0; t < nt; t++) {
        a0[t] = _mm256_setzero_ps();
        a1[t] = _mm256_setzero_ps();
        accm[t] = _mm_setzero_ps();
    }

    for (b = 0; b + 2 <= nb; b += 2) {
        fg_k_qd_b32(type, w + b * bs, wr, xa + b * xb, xs, nt, a0, accm);
        fg_k_qd_b32(type, w + (b + 1) * bs, wr, xa + (b + 1) * xb, xs, nt,
                    a1, accm);
    }

    if (b < nb) {
        fg_k_qd_b32(type, w + b * bs, wr, xa + b * xb, xs, nt, a0, accm);
    }

#pragma GCC unroll 8
    for (t = 0; t < nt; t++) {
        y[t * ys] = _mm_cvtss_f32(_mm_add_ss(
                        _mm_set_ss(fg_k_hsum8_avx2(_mm256_add_ps(a0[t],
                                                                 a1[t]))),
                        _mm_shuffle_ps(accm[t], accm[t], 1)));
    }
}


/* ---- the k-quants ---- */

/*
 * Scales as int16, 8 in each 128-bit lane (sc: the same 8 in both): the
 * 16 lanes of a maddubs product take word lo of them in the low half and
 * word hi in the high half.  lo and hi are constants where this inlines.
 */
FG_K_QD_INLINE __m256i
fg_k_qd_pick16(__m256i sc, int lo, int hi)
{
    return _mm256_shuffle_epi8(sc, _mm256_inserti128_si256(
               _mm256_castsi128_si256(
                   _mm_set1_epi16((short) (0x0100 + 0x0202 * lo))),
               _mm_set1_epi16((short) (0x0100 + 0x0202 * hi)), 1));
}


/* 32 2-bit values of 32 bytes, the pair of bits at 2 * j */
FG_K_QD_INLINE __m256i
fg_k_qd_crumbs(__m256i v, int j)
{
    return _mm256_and_si256(_mm256_srli_epi16(v, 2 * j),
                            _mm256_set1_epi8(3));
}


/*
 * Bit c of each byte of hv moved to bit b, the others 0: one 16-bit
 * shift, the bits crossing into the other byte masked off; 10% faster
 * than a test into a mask register and a masked add (AVX-512), 30% than
 * a compare (AVX2), for Q5_K's fifth bits
 */
FG_K_QD_INLINE __m256i
fg_k_qd_bit(__m256i hv, int c, int b)
{
    __m256i  h;

    h = c < b ? _mm256_slli_epi16(hv, b - c) : _mm256_srli_epi16(hv, c - b);

    return _mm256_and_si256(h, _mm256_set1_epi8((char) (1 << b)));
}


/* q + 16 in the bytes whose bit c of hv is set (Q5_K's fifth bits) */
FG_K_QD_INLINE __m256i
fg_k_qd_hibit(__m256i q, __m256i hv, int c)
{
    return _mm256_or_si256(q, fg_k_qd_bit(hv, c, 4));
}


/*
 * Q3_K's values c * 32 .. c * 32 + 31 with 4 added where bit c of hv is
 * set, 0 .. 7
 */
FG_K_QD_INLINE __m256i
fg_k_qd_crumbs3(__m256i v, __m256i hv, int c)
{
    return _mm256_or_si256(fg_k_qd_crumbs(v, c % 4), fg_k_qd_bit(hv, c, 2));
}


/*
 * The 16 6-bit scales of a Q3_K block less 32, as int8: low nibbles of
 * bytes 0-7, then their high nibbles, each with 2 bits of bytes 8-11
 * (fg_k_qd_scales_k3()), worked 4 at a time in 32-bit words.
 */
FG_K_QD_INLINE __m128i
fg_k_qd_scales3(const uint8_t *s)
{
    uint32_t  u[3], a[4];

    memcpy(u, s, 12);

    a[0] = (u[0] & 0x0f0f0f0f) | (u[2] & 0x03030303) << 4;
    a[1] = (u[1] & 0x0f0f0f0f) | ((u[2] >> 2) & 0x03030303) << 4;
    a[2] = ((u[0] >> 4) & 0x0f0f0f0f) | ((u[2] >> 4) & 0x03030303) << 4;
    a[3] = ((u[1] >> 4) & 0x0f0f0f0f) | ((u[2] >> 6) & 0x03030303) << 4;

    return _mm_sub_epi8(_mm_setr_epi32((int) a[0], (int) a[1], (int) a[2],
                                       (int) a[3]),
                        _mm_set1_epi8(32));
}


/*
 * Q4_K's and Q5_K's 8 scales (sc) and mins (mn) as int16, unpacked 4 at
 * a time in 32-bit words (fg_k_qd_scales_k4() says where they are).
 */
FG_K_QD_INLINE void
fg_k_qd_scales4(const uint8_t *s, __m128i *sc, __m128i *mn)
{
    uint32_t  u[3];

    memcpy(u, s, 12);

    *sc = _mm_cvtepu8_epi16(_mm_setr_epi32(
              (int) (u[0] & 0x3f3f3f3f),
              (int) ((u[2] & 0x0f0f0f0f) | ((u[0] >> 6) & 0x03030303) << 4),
              0, 0));
    *mn = _mm_cvtepu8_epi16(_mm_setr_epi32(
              (int) (u[1] & 0x3f3f3f3f),
              (int) (((u[2] >> 4) & 0x0f0f0f0f)
                     | ((u[1] >> 6) & 0x03030303) << 4),
              0, 0));
}


/* a k-quant block as the group kernel takes it, unpacked per 32 values */
typedef struct {
    const uint8_t   *qs;
    const uint8_t   *qh;
    const uint8_t   *ql;
    __m256i          hv;
    __m256i          sc[2];         /* int16 scales, per 128 values */
    __m256i          mn;            /* int16 mins, per 16 values */
    __m128i          mn4;           /* Q4_K, Q5_K: int16 mins, per 32 */
    float            d;
    float            dmin;
} fg_k_qd_kblock_t;


FG_K_QD_INLINE void
fg_k_qd_kprep(fg_k_type_e type, const char *wb, const fg_k_qd_wrow_t *wr,
    fg_k_qd_kblock_t *k)
{
    __m128i                   s16, sc;
    const fg_k_block_q2_k_t  *b2;
    const fg_k_block_q3_k_t  *b3;
    const fg_k_block_q5_k_t  *b5;
    const fg_k_block_q6_k_t  *b6;

    switch (type) {

    case FG_K_Q2_K:
        b2 = (const fg_k_block_q2_k_t *) wb;
        s16 = _mm_loadu_si128((const __m128i *) b2->scales);
        sc = _mm_and_si128(s16, _mm_set1_epi8(0xf));
        k->mn = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s16, 4),
                                                   _mm_set1_epi8(0xf)));
        k->sc[0] = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sc));
        k->sc[1] = _mm256_broadcastsi128_si256(
                       _mm_cvtepu8_epi16(_mm_srli_si128(sc, 8)));
        k->qs = b2->qs;
        k->d = _cvtsh_ss(b2->d);
        k->dmin = _cvtsh_ss(b2->dmin);
        break;

    case FG_K_Q3_K:
        b3 = (const fg_k_block_q3_k_t *) wb;
        s16 = fg_k_qd_scales3(b3->scales);
        k->mn = _mm256_cvtepi8_epi16(s16);
        k->sc[0] = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(s16));
        k->sc[1] = _mm256_broadcastsi128_si256(
                       _mm_cvtepi8_epi16(_mm_srli_si128(s16, 8)));
        k->hv = _mm256_loadu_si256((const __m256i *) b3->hmask);
        k->qs = b3->qs;
        k->d = _cvtsh_ss(b3->d);
        break;

    case FG_K_Q4_K:
        /* where wr says */
        fg_k_qd_scales4((const uint8_t *) wb + wr->os, &sc, &k->mn4);
        k->sc[0] = _mm256_broadcastsi128_si256(sc);
        k->qs = (const uint8_t *) wb + wr->oq;
        k->d = _cvtsh_ss(*(const uint16_t *) (wb + wr->od));
        k->dmin = _cvtsh_ss(*(const uint16_t *) (wb + wr->om));
        break;

    case FG_K_Q5_K:
        b5 = (const fg_k_block_q5_k_t *) wb;
        fg_k_qd_scales4(b5->scales, &sc, &k->mn4);
        k->sc[0] = _mm256_broadcastsi128_si256(sc);
        k->hv = _mm256_loadu_si256((const __m256i *) b5->qh);
        k->qs = b5->qs;
        k->d = _cvtsh_ss(b5->d);
        k->dmin = _cvtsh_ss(b5->dmin);
        break;

    default:
        b6 = (const fg_k_block_q6_k_t *) wb;
        s16 = _mm_loadu_si128((const __m128i *) b6->scales);
        k->mn = _mm256_cvtepi8_epi16(s16);
        k->sc[0] = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(s16));
        k->sc[1] = _mm256_broadcastsi128_si256(
                       _mm_cvtepi8_epi16(_mm_srli_si128(s16, 8)));
        k->ql = b6->ql;
        k->qh = b6->qh;
        k->d = _cvtsh_ss(b6->d);
        k->dmin = 32.0f * k->d;
        break;
    }
}


/*
 * Values c * 32 .. c * 32 + 31 of a k-quant block as unsigned bytes (q),
 * Q3_K's and Q6_K's offsets not taken (fg_k_qd_koffset()), and their
 * scales (sc).
 */
FG_K_QD_INLINE void
fg_k_qd_kchunk(fg_k_type_e type, const fg_k_qd_kblock_t *k, int c,
    __m256i *q, __m256i *sc)
{
    int      h, j;
    __m256i  v, l;

    h = c / 4;
    j = c % 4;

    switch (type) {

    case FG_K_Q2_K:
    case FG_K_Q3_K:
        v = _mm256_loadu_si256((const __m256i *) (k->qs + 32 * h));
        *q = type == FG_K_Q3_K ? fg_k_qd_crumbs3(v, k->hv, c)
                               : fg_k_qd_crumbs(v, j);
        *sc = fg_k_qd_pick16(k->sc[h], 2 * j, 2 * j + 1);
        return;

    case FG_K_Q4_K:
    case FG_K_Q5_K:
        v = _mm256_loadu_si256((const __m256i *) (k->qs + 32 * (c / 2)));
        *q = _mm256_and_si256(c % 2 ? _mm256_srli_epi16(v, 4) : v,
                              _mm256_set1_epi8(0xf));

        if (type == FG_K_Q5_K) {
            *q = fg_k_qd_hibit(*q, k->hv, c);
        }

        *sc = fg_k_qd_pick16(k->sc[0], c, c);
        return;

    default:
        l = _mm256_loadu_si256((const __m256i *) (k->ql + 64 * h
                                                  + 32 * (j % 2)));
        v = _mm256_loadu_si256((const __m256i *) (k->qh + 32 * h));
        *q = _mm256_or_si256(
                 _mm256_and_si256(j / 2 ? _mm256_srli_epi16(l, 4) : l,
                                  _mm256_set1_epi8(0xf)),
                 _mm256_slli_epi16(_mm256_and_si256(
                     _mm256_srli_epi16(v, 2 * j), _mm256_set1_epi8(3)), 4));
        *sc = fg_k_qd_pick16(k->sc[h], 2 * j, 2 * j + 1);
        return;
    }
}


/*
 * Q3_K's offset 4 against x's sums of 16, taken from the block's integer
 * sums: 4 * sum(scale * sum(x)) exactly, the products' scaled values
 * being sum(scale * sum((q + 4) * x))
 */
FG_K_QD_INLINE __m256i
fg_k_qd_koffset(fg_k_type_e type, const fg_k_qd_kblock_t *k,
    const fg_k_block_q8_k_t *x, __m256i isum)
{
    if (type != FG_K_Q3_K) {
        return isum;
    }

    return _mm256_sub_epi32(isum, _mm256_slli_epi32(_mm256_madd_epi16(
               _mm256_loadu_si256((const __m256i *) x->bsums), k->mn), 2));
}


/* a block's mins (Q6_K: its offset 32) against x's sums, as floats */
FG_K_QD_INLINE __m256
fg_k_qd_kmins(fg_k_type_e type, const fg_k_qd_kblock_t *k,
    const fg_k_block_q8_k_t *x, __m256 accm)
{
    __m128i  bp;

    if (type == FG_K_Q3_K) {
        return accm;
    }

    if (type == FG_K_Q4_K || type == FG_K_Q5_K) {
        /* mins per 32: pairs of x's sums of 16, in the low lane */
        bp = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *) x->bsums),
                            _mm_loadu_si128((const __m128i *) (x->bsums
                                                               + 8)));

        return _mm256_fmadd_ps(
                   _mm256_zextps128_ps256(_mm_cvtepi32_ps(
                       _mm_madd_epi16(bp, k->mn4))),
                   _mm256_set1_ps(k->dmin * x->d), accm);
    }

    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(
               _mm256_loadu_si256((const __m256i *) x->bsums), k->mn)),
               _mm256_set1_ps(k->dmin * x->d), accm);
}


FG_K_QD_INLINE void
fg_k_qd_gk(fg_k_type_e type, const fg_k_qd_wrow_t *wr, const char *xa,
    size_t xs, size_t nb, size_t nt, float *y, size_t ys)
{
    int                        c;
    size_t                     b, t;
    __m256                     acc[FG_K_QD_NT], accm[FG_K_QD_NT];
    __m256i                    q, sc, xv, p, isum[FG_K_QD_NT][2];
    fg_k_qd_kblock_t           k;
    const fg_k_block_q8_k_t   *x;

    for (t = 0; t < nt; t++) {
        acc[t] = _mm256_setzero_ps();
        accm[t] = _mm256_setzero_ps();
    }

    for (b = 0; b < nb; b++) {
        fg_k_qd_kprep(type, wr->w + b * wr->bs, wr, &k);

#pragma GCC unroll 8
        for (t = 0; t < nt; t++) {
            isum[t][0] = _mm256_setzero_si256();
            isum[t][1] = _mm256_setzero_si256();
        }

#pragma GCC unroll 8
        for (c = 0; c < 8; c++) {
            fg_k_qd_kchunk(type, &k, c, &q, &sc);

#pragma GCC unroll 8
            for (t = 0; t < nt; t++) {
                x = (const fg_k_block_q8_k_t *) (xa + t * xs) + b;
                xv = fg_k_qd_load(x->qs + 32 * c);
                p = _mm256_maddubs_epi16(q, xv);

                /* two chains for one row, one each for more: exact */
                isum[t][nt == 1 ? c % 2 : 0] =
                    fg_k_qd_dpwssd(isum[t][nt == 1 ? c % 2 : 0], p, sc);
            }
        }

#pragma GCC unroll 8
        for (t = 0; t < nt; t++) {
            x = (const fg_k_block_q8_k_t *) (xa + t * xs) + b;
            acc[t] = _mm256_fmadd_ps(
                         _mm256_cvtepi32_ps(fg_k_qd_koffset(type, &k, x,
                             _mm256_add_epi32(isum[t][0], isum[t][1]))),
                         _mm256_set1_ps(k.d * x->d), acc[t]);
            accm[t] = fg_k_qd_kmins(type, &k, x, accm[t]);
        }
    }

#pragma GCC unroll 8
    for (t = 0; t < nt; t++) {
        y[t * ys] = fg_k_hsum8_avx2(_mm256_sub_ps(acc[t], accm[t]));
    }
}


/*
 * one weight row (w) by nt rows of x, nt a constant in each copy, whose
 * offsets and steps are then constants
 */
FG_K_QD_INLINE void
fg_k_qd_group(fg_k_type_e type, const void *w, const char *xa,
    size_t xs, size_t in, size_t nt, float *y, size_t ys)
{
    fg_k_qd_wrow_t  wr;

    fg_k_qd_wrow(&wr, type, w, in, 0);

    switch (type) {

    case FG_K_Q4_0:
        fg_k_qd_g32(FG_K_Q4_0, &wr, xa, xs, in / 32, nt, y, ys);
        return;

    case FG_K_Q4_1:
        fg_k_qd_g32(FG_K_Q4_1, &wr, xa, xs, in / 32, nt, y, ys);
        return;

    case FG_K_Q5_0:
        fg_k_qd_g32(FG_K_Q5_0, &wr, xa, xs, in / 32, nt, y, ys);
        return;

    case FG_K_Q5_1:
        fg_k_qd_g32(FG_K_Q5_1, &wr, xa, xs, in / 32, nt, y, ys);
        return;

    case FG_K_Q2_K:
        fg_k_qd_gk(FG_K_Q2_K, &wr, xa, xs, in / FG_K_QK_K, nt, y, ys);
        return;

    case FG_K_Q3_K:
        fg_k_qd_gk(FG_K_Q3_K, &wr, xa, xs, in / FG_K_QK_K, nt, y, ys);
        return;

    case FG_K_Q4_K:
        fg_k_qd_gk(FG_K_Q4_K, &wr, xa, xs, in / FG_K_QK_K, nt, y, ys);
        return;

    case FG_K_Q5_K:
        fg_k_qd_gk(FG_K_Q5_K, &wr, xa, xs, in / FG_K_QK_K, nt, y, ys);
        return;

    default:
        fg_k_qd_gk(FG_K_Q6_K, &wr, xa, xs, in / FG_K_QK_K, nt, y, ys);
        return;
    }
}


FG_K_QD_TARGET static void
FG_K_QD_FN(fg_k_qd_group1)(fg_k_type_e type, const void *w,
    const char *xa, size_t xs, size_t in, float *y, size_t ys)
{
    fg_k_qd_group(type, w, xa, xs, in, 1, y, ys);
}


FG_K_QD_TARGET static void
FG_K_QD_FN(fg_k_qd_group2)(fg_k_type_e type, const void *w,
    const char *xa, size_t xs, size_t in, float *y, size_t ys)
{
    fg_k_qd_group(type, w, xa, xs, in, 2, y, ys);
}


FG_K_QD_TARGET static void
FG_K_QD_FN(fg_k_qd_group4)(fg_k_type_e type, const void *w,
    const char *xa, size_t xs, size_t in, float *y, size_t ys)
{
    fg_k_qd_group(type, w, xa, xs, in, 4, y, ys);
}


#if (FG_K_QD_WIDE)

/* 8 rows where 32 vector registers hold their sums: AVX-512's */
FG_K_QD_TARGET static void
FG_K_QD_FN(fg_k_qd_group8)(fg_k_type_e type, const void *w,
    const char *xa, size_t xs, size_t in, float *y, size_t ys)
{
    fg_k_qd_group(type, w, xa, xs, in, 8, y, ys);
}

#endif


FG_K_QD_TARGET float
FG_K_QD_FN(fg_k_qd_dot)(fg_k_type_e type, const void *w, const void *xq,
    size_t in)
{
    float  y;

    FG_K_QD_FN(fg_k_qd_group1)(type, w, xq, 0, in, &y, 0);

    return y;
}


/*
 * rows [t0, t1) of x by weight row r (w): 8 at a time where the build
 * has the registers, 4, 2 and 1 for the rest
 */
FG_K_QD_INLINE void
fg_k_qd_row(const fg_k_mm_t *mm, const void *w, size_t r, size_t t0,
    size_t t1)
{
    size_t  t;

    t = t0;

#if (FG_K_QD_WIDE)
    for ( /* void */ ; t + 8 <= t1; t += 8) {
        FG_K_QD_FN(fg_k_qd_group8)(mm->type, w,
                                   mm->xa + t * mm->xa_row,
                                   mm->xa_row, mm->in,
                                   mm->y + t * mm->out + r, mm->out);
    }
#endif

    for ( /* void */ ; t + 4 <= t1; t += 4) {
        FG_K_QD_FN(fg_k_qd_group4)(mm->type, w,
                                   mm->xa + t * mm->xa_row,
                                   mm->xa_row, mm->in,
                                   mm->y + t * mm->out + r, mm->out);
    }

    for ( /* void */ ; t + 2 <= t1; t += 2) {
        FG_K_QD_FN(fg_k_qd_group2)(mm->type, w,
                                   mm->xa + t * mm->xa_row,
                                   mm->xa_row, mm->in,
                                   mm->y + t * mm->out + r, mm->out);
    }

    for ( /* void */ ; t < t1; t++) {
        FG_K_QD_FN(fg_k_qd_group1)(mm->type, w,
                                   mm->xa + t * mm->xa_row,
                                   mm->xa_row, mm->in,
                                   mm->y + t * mm->out + r, mm->out);
    }
}


#include "fg_kernels_qdot_lanes.h"


/*
 * Rows [r0, r1) of y.  A weight row is read from memory once and meets
 * the rows of x from the first-level cache; for a prefill's many rows of
 * x, tiles of FG_K_QD_TILE_R weight rows by FG_K_QD_TILE_T rows of x
 * keep x in the second-level cache instead of streaming all of it past
 * every weight row.  A row of x meets each weight row in a group of 4
 * (tiles are multiples of 4), as without tiles: the same bits.  Packed
 * matrices have kernels of their own (fg_kernels_qdot_lanes.h).
 */
FG_K_QD_TARGET void
FG_K_QD_FN(fg_k_qd_mm)(const fg_k_mm_t *mm, size_t r0, size_t r1)
{
    size_t       r, rt, t, tn, rs;
    const char  *w;

    rs = fg_k_qd_row_size(mm->type, mm->in);

    for (rt = r0; rt < r1; rt += FG_K_QD_TILE_R) {
        for (t = 0; t < mm->n; t += FG_K_QD_TILE_T) {
            tn = mm->n - t < FG_K_QD_TILE_T ? mm->n - t : FG_K_QD_TILE_T;

            for (r = rt; r < r1 && r < rt + FG_K_QD_TILE_R; r++) {
                w = (const char *) mm->w + r * rs;
                fg_k_qd_row(mm, w, r, t, t + tn);
            }
        }
    }
}
