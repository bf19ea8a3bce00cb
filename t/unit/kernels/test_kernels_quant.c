
/*
 * fairgate: fg_k_quant_row(), ggml's reference quantizers.
 *
 * The quantizers' choices on fixed blocks, compared with bytes worked out
 * by hand here from ggml's rules (the derivations are in the comments):
 * which value sets the scale and with what sign, how codes round (halves
 * up by truncation, away from zero, or to even), where codes saturate, how
 * the k-quants' sub-block scales are coded and packed.  Then round trips:
 * quantize, dequantize, and the error of each type within a bound on rows
 * of a few distributions (uniform, heavy-tailed, with zero blocks), the
 * bounds a little above what ggml's rules give (they are deterministic:
 * the inputs come from a fixed seed), and the codes each type can hold
 * reproduced exactly (a row that is already on a type's grid comes back
 * as it was).
 */


#include <stdint.h>

#include "fg_tap.h"
#include "fg_kernels.h"
#include "fg_rand.h"


#define ROW     (16 * FG_K_QK_K)


static fg_rand_t  rng = { 0x243f6a8885a308d3ULL };

static float     x[ROW], y[ROW];
static uint8_t   q[2 * ROW * sizeof(float)];


static void
test_q4_q5_q8(void)
{
    size_t                    i;
    const fg_k_block_q4_0_t  *b40;
    const fg_k_block_q4_1_t  *b41;
    const fg_k_block_q5_0_t  *b50;
    const fg_k_block_q8_0_t  *b80;
    const fg_k_block_q8_k_t  *b8k;

    /* Q4_0: the largest magnitude is -4, so d = -4 / -8 = 0.5 and x / d
     * + 8.5 truncates: -4 -> 0, 1 -> 10, 3.9 -> 16.3 -> 15 (saturated),
     * 0.25 -> 9, -0.25 -> 8 */
    memset(x, 0, 32 * sizeof(float));
    x[0] = -4.0f;
    x[1] = 1.0f;
    x[2] = 3.9f;
    x[3] = 0.25f;
    x[16] = -0.25f;
    fg_k_quant_row(FG_K_Q4_0, x, q, 32);
    b40 = (const fg_k_block_q4_0_t *) q;
    ok(b40->d == 0x3800 && b40->qs[0] == 0x80 && b40->qs[1] == 0x8a
       && b40->qs[2] == 0x8f && b40->qs[3] == 0x89 && b40->qs[4] == 0x88,
       "q4_0: d from the signed max (0.5), codes truncated from x/d + 8.5");

    /* the same with the sign turned: d = -0.5, and now 4 is code 0 and
     * -3.9 saturates */
    for (i = 0; i < 32; i++) {
        x[i] = -x[i];
    }

    fg_k_quant_row(FG_K_Q4_0, x, q, 32);
    ok(b40->d == 0xb800 && b40->qs[0] == 0x80 && b40->qs[2] == 0x8f,
       "q4_0: a positive max gives a negative d");

    /* Q4_1: min -1, max 14: d = 1, m = -1; 2.4 -> 3.4 + 0.5 -> 3, 2.5 ->
     * 4, -1 -> 0, 14 -> 15 */
    memset(x, 0, 32 * sizeof(float));
    x[0] = -1.0f;
    x[1] = 14.0f;
    x[2] = 2.4f;
    x[18] = 2.5f;
    fg_k_quant_row(FG_K_Q4_1, x, q, 32);
    b41 = (const fg_k_block_q4_1_t *) q;
    ok(b41->d == 0x3c00 && b41->m == 0xbc00 && b41->qs[0] == 0x10
       && b41->qs[1] == 0x1f && b41->qs[2] == 0x43,
       "q4_1: d = (max - min) / 15, m = min, codes rounded half up");

    /* Q5_0: max -16: d = 1; -16 -> 0, 15 -> 31, 0 -> 16 (fifth bit set
     * in qh for every code >= 16) */
    memset(x, 0, 32 * sizeof(float));
    x[0] = -16.0f;
    x[1] = 15.0f;
    fg_k_quant_row(FG_K_Q5_0, x, q, 32);
    b50 = (const fg_k_block_q5_0_t *) q;
    ok(b50->d == 0x3c00 && b50->qs[0] == 0x00 && b50->qs[1] == 0x0f
       && b50->qs[2] == 0x00 && b50->qh[0] == 0xfe && b50->qh[1] == 0xff
       && b50->qh[3] == 0xff,
       "q5_0: d = max / -16, the fifth bits of all but value 0 in qh");

    /* Q8_0: amax 127: d = 1; 2.5 -> 3 and -2.5 -> -3 (away from zero) */
    memset(x, 0, 32 * sizeof(float));
    x[0] = 127.0f;
    x[1] = 2.5f;
    x[2] = -2.5f;
    fg_k_quant_row(FG_K_Q8_0, x, q, 32);
    b80 = (const fg_k_block_q8_0_t *) q;
    ok(b80->d == 0x3c00 && b80->qs[0] == 127 && b80->qs[1] == 3
       && b80->qs[2] == -3, "q8_0: d = amax / 127, halves away from zero");

    /* Q8_K: max 127: d = -1 (the signed max maps to -127); 2.5 -> -2 and
     * 3.5 -> -4 (ties to even); bsums[0] = -127 - 2 - 4 */
    memset(x, 0, FG_K_QK_K * sizeof(float));
    x[0] = 127.0f;
    x[1] = 2.5f;
    x[2] = 3.5f;
    fg_k_quant_row(FG_K_Q8_K, x, q, FG_K_QK_K);
    b8k = (const fg_k_block_q8_k_t *) q;
    ok(b8k->d == -1.0f && b8k->qs[0] == -127 && b8k->qs[1] == -2
       && b8k->qs[2] == -4 && b8k->bsums[0] == -133 && b8k->bsums[1] == 0,
       "q8_k: d = max / -127, ties to even, sums of 16");
}


/* every byte of n at p is v */
static int
all_bytes(const uint8_t *p, size_t n, uint8_t v)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (p[i] != v) {
            return 0;
        }
    }

    return 1;
}


static void
test_k_constant(void)
{
    size_t                    i;
    const fg_k_block_q2_k_t  *b2;
    const fg_k_block_q3_k_t  *b3;
    const fg_k_block_q4_k_t  *b4;
    const fg_k_block_q5_k_t  *b5;
    const fg_k_block_q6_k_t  *b6;
    static const uint8_t      k4[12] = { 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0,
                                         0x0f, 0x0f, 0x0f, 0x0f };

    for (i = 0; i < FG_K_QK_K; i++) {
        x[i] = 1.0f;
    }

    /* Q2_K: each sub-block's fit is scale 1/3, min 0 (every trial scale
     * gives all codes equal: no least-squares solution); scales code 15,
     * d = half(1/45) = 0x25b0 (0.0222168), dmin 0; 1 / (15 d) = 3.0007
     * rounds to code 3 */
    fg_k_quant_row(FG_K_Q2_K, x, q, FG_K_QK_K);
    b2 = (const fg_k_block_q2_k_t *) q;
    ok(b2->d == 0x25b0 && b2->dmin == 0 && all_bytes(b2->scales, 16, 0x0f)
       && all_bytes(b2->qs, 64, 0xff), "q2_k: a constant block");

    /* Q3_K: codes -4 for the scale -4 / max, which the refinement keeps
     * (every code's own sum is negative): scale -1/4 everywhere; the
     * largest maps to -32, so every scale code is 0 and d = 1/128; x /
     * (d * -32) = -4 is code 0 and no high bit */
    fg_k_quant_row(FG_K_Q3_K, x, q, FG_K_QK_K);
    b3 = (const fg_k_block_q3_k_t *) q;
    ok(b3->d == 0x2000 && all_bytes(b3->scales, 12, 0)
       && all_bytes(b3->hmask, 32, 0) && all_bytes(b3->qs, 64, 0),
       "q3_k: a constant block: scales at -32, codes -4");

    /* Q4_K: scale 1/15 everywhere, min 0: 6-bit scale codes 63 (the top
     * two bits of sub-blocks 4..7 in scales[0..3], their low nibbles in
     * scales[8..11]), mins 0; d = half(1/945) = 0x1456, dmin 0; codes 15 */
    fg_k_quant_row(FG_K_Q4_K, x, q, FG_K_QK_K);
    b4 = (const fg_k_block_q4_k_t *) q;
    ok(b4->d == 0x1456 && b4->dmin == 0
       && memcmp(b4->scales, k4, 12) == 0 && all_bytes(b4->qs, 128, 0xff),
       "q4_k: a constant block: 6-bit scales packed");

    /* Q5_K: scale 1/31: d = half(1/1953) = 0x1032; codes 31, every fifth
     * bit set */
    fg_k_quant_row(FG_K_Q5_K, x, q, FG_K_QK_K);
    b5 = (const fg_k_block_q5_k_t *) q;
    ok(b5->d == 0x1032 && b5->dmin == 0
       && memcmp(b5->scales, k4, 12) == 0 && all_bytes(b5->qs, 128, 0xff)
       && all_bytes(b5->qh, 32, 0xff), "q5_k: a constant block");

    /* Q6_K: scale -1/32 (code -32 for the largest; no trial scale does
     * strictly better), which maps to -128: d = 1/4096, scales -128, and
     * 1 / (d * -128) = -32 is code 0 */
    fg_k_quant_row(FG_K_Q6_K, x, q, FG_K_QK_K);
    b6 = (const fg_k_block_q6_k_t *) q;
    ok(b6->d == 0x0c00 && all_bytes((const uint8_t *) b6->scales, 16, 0x80)
       && all_bytes(b6->ql, 128, 0) && all_bytes(b6->qh, 64, 0),
       "q6_k: a constant block: scale -128, codes 0");

    fg_k_dequant_row(FG_K_Q6_K, q, y, FG_K_QK_K);
    ok(y[0] == 1.0f && y[255] == 1.0f, "q6_k: ... which reads back exact");
}


static void
test_k_scales(void)
{
    size_t                    i;
    const fg_k_block_q4_k_t  *b4;
    static const uint8_t      want[12] = { 0x88, 0x90, 0xd8, 0xe0, 0, 0, 0,
                                           0, 0x07, 0x0f, 0x07, 0x0f };

    /* Q4_K, sub-block j constant j + 1: scales (j + 1) / 15, coded
     * against the largest (8/15) as round(63 (j + 1) / 8): 8, 16, 24, 32,
     * 39, 47, 55, 63; the top bits of the last four (2, 2, 3, 3) go to
     * scales[0..3]'s bits 6-7, their nibbles (7, 15, 7, 15) to
     * scales[8..11]; d = half(8 / 945) = 0x2056; every code still 15 */
    for (i = 0; i < FG_K_QK_K; i++) {
        x[i] = (float) (i / 32 + 1);
    }

    fg_k_quant_row(FG_K_Q4_K, x, q, FG_K_QK_K);
    b4 = (const fg_k_block_q4_k_t *) q;
    ok(b4->d == 0x2056 && b4->dmin == 0
       && memcmp(b4->scales, want, 12) == 0 && all_bytes(b4->qs, 128, 0xff),
       "q4_k: eight scales coded and packed");
}


/* the row of a distribution: 0 uniform, 1 heavy-tailed, 2 with zeros */
static void
make_row(int dist)
{
    size_t  i;
    double  u;

    for (i = 0; i < ROW; i++) {
        u = fg_rand_double(&rng) * 2 - 1;

        x[i] = dist == 1 ? (float) (u * u * u * 8)
               : dist == 2 && i / FG_K_QK_K % 3 == 0 ? 0.0f
               : (float) u;
    }
}


static void
test_round_trip(fg_k_type_e type, const char *name, double rmse_max)
{
    int     dist;
    size_t  i;
    double  se, ss, worst;

    worst = 0;

    for (dist = 0; dist < 3; dist++) {
        make_row(dist);
        fg_k_quant_row(type, x, q, ROW);
        fg_k_dequant_row(type, q, y, ROW);

        se = 0;
        ss = 0;

        for (i = 0; i < ROW; i++) {
            se += ((double) y[i] - x[i]) * ((double) y[i] - x[i]);
            ss += (double) x[i] * x[i];
        }

        worst = fmax(worst, sqrt(se / ss));

        if (dist == 2) {
            ok(y[0] == 0.0f && y[FG_K_QK_K - 1] == 0.0f,
               "%s: a block of zeros comes back zeros", name);
        }
    }

    diag("%s: %.5f", name, worst);

    if (!ok(worst <= rmse_max, "%s: round trip within %.4f relative RMS "
            "error", name, rmse_max))
    {
        diag("worst: %.5f", worst);
    }
}


int
main(void)
{
    fg_k_init();

    test_q4_q5_q8();
    test_k_constant();
    test_k_scales();

    /* the worst of the three rows as ggml's rules quantize them, and 10%:
     * 0.354 (q2_k) .. 0.080 (q4_0) .. 0.0052 (q8_0) */
    test_round_trip(FG_K_Q4_0, "q4_0", 0.09);
    test_round_trip(FG_K_Q4_1, "q4_1", 0.092);
    test_round_trip(FG_K_Q5_0, "q5_0", 0.044);
    test_round_trip(FG_K_Q5_1, "q5_1", 0.043);
    test_round_trip(FG_K_Q8_0, "q8_0", 0.0057);
    test_round_trip(FG_K_Q8_1, "q8_1", 0.0057);
    test_round_trip(FG_K_Q8_K, "q8_k", 0.0062);
    test_round_trip(FG_K_Q2_K, "q2_k", 0.39);
    test_round_trip(FG_K_Q3_K, "q3_k", 0.153);
    test_round_trip(FG_K_Q4_K, "q4_k", 0.079);
    test_round_trip(FG_K_Q5_K, "q5_k", 0.042);
    test_round_trip(FG_K_Q6_K, "q6_k", 0.0192);

    return done_testing();
}
