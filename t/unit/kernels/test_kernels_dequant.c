
/*
 * fairgate: ggml's quantized blocks dequantized, each type on a block
 * built by hand: a few bits set where ggml's layout puts a value, the
 * others left at a code whose value is known, and the values checked
 * exactly against ggml's formula worked out by hand here (scales are
 * powers of two, so every product is exact).  A nibble, shift or bit
 * plane read from the wrong place gives another value.  fg_k_row_size()
 * is checked against ggml's block sizes, both paths (AVX2 and portable)
 * alike.
 */


#include <stdint.h>

#include "fg_tap.h"
#include "fg_kernels.h"


#define H_0_125   0x3000        /* halves: 0.125, 0.25, 0.5, 1, 2, -1 */
#define H_0_25    0x3400
#define H_0_5     0x3800
#define H_1       0x3c00
#define H_2       0x4000
#define H_M1      0xbc00


static float  out[FG_K_QK_K];


/* dequantizes one block of type and checks value i */
static void
check(fg_k_type_e type, const void *block, size_t n, size_t i, float want,
    const char *what)
{
    fg_k_dequant_row(type, block, out, n);

    if (!ok(out[i] == want, "%s", what)) {
        diag("value %zu: got %.9g, expected %.9g", i, out[i], want);
    }
}


static void
test_q4_q5(void)
{
    fg_k_block_q4_0_t  q40;
    fg_k_block_q4_1_t  q41;
    fg_k_block_q5_0_t  q50;
    fg_k_block_q5_1_t  q51;

    memset(&q40, 0x88, sizeof(q40));
    q40.d = H_0_5;
    q40.qs[3] = 0xa1;
    check(FG_K_Q4_0, &q40, 32, 3, -3.5f, "q4_0: value 3 is (1 - 8) d");
    check(FG_K_Q4_0, &q40, 32, 19, 1.0f,
          "q4_0: value 19 is qs[3]'s high nibble, (10 - 8) d");
    check(FG_K_Q4_0, &q40, 32, 4, 0.0f, "q4_0: 8 is zero");

    memset(&q41, 0, sizeof(q41));
    q41.d = H_0_5;
    q41.m = H_M1;
    q41.qs[0] = 0x2f;
    check(FG_K_Q4_1, &q41, 32, 0, 6.5f, "q4_1: value 0 is 15 d + m");
    check(FG_K_Q4_1, &q41, 32, 16, 0.0f, "q4_1: value 16 is 2 d + m");
    check(FG_K_Q4_1, &q41, 32, 1, -1.0f, "q4_1: a zero code is m");

    memset(&q50, 0, sizeof(q50));
    q50.d = H_1;
    q50.qs[0] = 0x05;
    q50.qs[1] = 0x30;
    q50.qh[0] = 0x01;
    q50.qh[2] = 0x02;
    check(FG_K_Q5_0, &q50, 32, 0, 5.0f,
          "q5_0: value 0: bit 0 of qh is its fifth bit, (21 - 16) d");
    check(FG_K_Q5_0, &q50, 32, 17, 3.0f,
          "q5_0: value 17: qs[1]'s high nibble, bit 17 of qh");
    check(FG_K_Q5_0, &q50, 32, 1, -16.0f, "q5_0: value 1 is (0 - 16) d");

    memset(&q51, 0, sizeof(q51));
    q51.d = H_2;
    q51.m = H_1;
    q51.qs[15] = 0xf0;
    q51.qh[3] = 0x80;
    check(FG_K_Q5_1, &q51, 32, 31, 63.0f,
          "q5_1: value 31: qs[15]'s high nibble, bit 31 of qh: 31 d + m");
    check(FG_K_Q5_1, &q51, 32, 15, 1.0f, "q5_1: value 15 is m");
}


static void
test_q8(void)
{
    fg_k_block_q8_0_t  q80;
    fg_k_block_q8_1_t  q81;
    fg_k_block_q8_k_t  q8k;

    memset(&q80, 0, sizeof(q80));
    q80.d = H_0_25;
    q80.qs[7] = -4;
    check(FG_K_Q8_0, &q80, 32, 7, -1.0f, "q8_0: d q");

    memset(&q81, 0, sizeof(q81));
    q81.d = H_0_5;
    q81.qs[31] = 127;
    check(FG_K_Q8_1, &q81, 32, 31, 63.5f, "q8_1: d q");

    memset(&q8k, 0, sizeof(q8k));
    q8k.d = 0.125f;
    q8k.qs[255] = -128;
    check(FG_K_Q8_K, &q8k, 256, 255, -16.0f, "q8_k: d (a float) q");
}


static void
test_q2_q3(void)
{
    fg_k_block_q2_k_t  q2;
    fg_k_block_q3_k_t  q3;

    memset(&q2, 0, sizeof(q2));
    q2.d = H_1;
    q2.dmin = H_0_5;
    q2.scales[5] = 0x32;            /* sub-block 5: scale 2, min 3 */
    q2.scales[12] = 0x01;           /* sub-block 12: scale 1, min 0 */
    q2.qs[16] = 0x30;               /* value 80: shift 4 of qs[16] */
    q2.qs[40] = 0x20;               /* value 200: shift 4 of qs[40] */
    check(FG_K_Q2_K, &q2, 256, 80, 4.5f, "q2_k: value 80 is d 2 3 - dmin 3");
    check(FG_K_Q2_K, &q2, 256, 81, -1.5f, "q2_k: value 81 is - dmin 3");
    check(FG_K_Q2_K, &q2, 256, 16, 0.0f, "q2_k: value 16 (shift 0) is 0");
    check(FG_K_Q2_K, &q2, 256, 200, 2.0f,
          "q2_k: value 200 is in the second half's qs");

    /* every 6-bit scale 32 (0) but 9 (35: 3) and 2 (0: -32) */
    memset(&q3, 0, sizeof(q3));
    q3.d = H_1;
    memset(q3.scales + 8, 0xaa, 4);
    q3.scales[1] = 0x30;
    q3.scales[10] = 0xa8;
    q3.qs[54] = 0x01;               /* value 150: shift 0 of qs[54] */
    q3.hmask[22] = 0x10;            /* its high bit: bit 4 of hmask[22] */
    q3.qs[8] = 0x0c;                /* value 40: shift 2 of qs[8] */
    q3.hmask[8] = 0x02;
    check(FG_K_Q3_K, &q3, 256, 150, 3.0f,
          "q3_k: value 150: scale 9 from its split nibble, high bit set");
    check(FG_K_Q3_K, &q3, 256, 151, -12.0f,
          "q3_k: value 151: high bit clear is q - 4");
    check(FG_K_Q3_K, &q3, 256, 40, -96.0f,
          "q3_k: value 40: scale 2 is -32, code 3");
    check(FG_K_Q3_K, &q3, 256, 41, 128.0f, "q3_k: value 41: -32 * -4");
    check(FG_K_Q3_K, &q3, 256, 0, 0.0f, "q3_k: scale 32 is zero");
}


static void
test_q4k_q5k(void)
{
    fg_k_block_q4_k_t  q4;
    fg_k_block_q5_k_t  q5;

    /* sub-block 1: scale 5, min 4; sub-block 6: scale 17, min 50 from
     * scales[10]'s nibbles and the top bits of scales[2] and [6] */
    memset(&q4, 0, sizeof(q4));
    q4.d = H_1;
    q4.dmin = H_0_25;
    q4.scales[1] = 5;
    q4.scales[5] = 4;
    q4.scales[10] = 0x21;
    q4.scales[2] = 0x40;
    q4.scales[6] = 0xc0;
    q4.qs[3] = 0x70;                /* value 35: qs[3]'s high nibble */
    q4.qs[100] = 0x09;              /* value 196: qs[100]'s low nibble */
    check(FG_K_Q4_K, &q4, 256, 35, 34.0f, "q4_k: value 35 is 5 7 - 1");
    check(FG_K_Q4_K, &q4, 256, 196, 140.5f,
          "q4_k: value 196 is 17 9 - 50 / 4 (packed 6-bit scales)");
    check(FG_K_Q4_K, &q4, 256, 197, -12.5f, "q4_k: value 197 is the min");
    check(FG_K_Q4_K, &q4, 256, 64, 0.0f,
          "q4_k: sub-block 2's scale and min are the low 6 bits: 0");

    memset(&q5, 0, sizeof(q5));
    q5.d = q4.d;
    q5.dmin = q4.dmin;
    memcpy(q5.scales, q4.scales, sizeof(q5.scales));
    q5.qs[3] = 0x70;
    q5.qs[100] = 0x09;
    q5.qh[4] = 0x40;                /* value 196: bit 6 of qh[4] */
    q5.qh[3] = 0x02;                /* value 35: bit 1 of qh[3] */
    check(FG_K_Q5_K, &q5, 256, 196, 412.5f, "q5_k: value 196: 17 25 - 12.5");
    check(FG_K_Q5_K, &q5, 256, 35, 114.0f, "q5_k: value 35: 5 23 - 1");
    check(FG_K_Q5_K, &q5, 256, 36, -1.0f, "q5_k: value 36: the min");
}


static void
test_q6k(void)
{
    fg_k_block_q6_k_t  q6;

    memset(&q6, 0, sizeof(q6));
    q6.d = H_0_5;
    q6.scales[12] = -3;
    q6.scales[2] = 2;
    q6.ql[72] = 0x50;               /* value 200: ql[72]'s high nibble */
    q6.qh[40] = 0x20;               /* its top bits at shift 4 of qh[40] */
    q6.ql[33] = 0x0f;               /* value 33: ql[33]'s low nibble */
    q6.qh[1] = 0x0c;                /* its top bits at shift 2 of qh[1] */
    check(FG_K_Q6_K, &q6, 256, 200, -7.5f, "q6_k: value 200: d -3 (37 - 32)");
    check(FG_K_Q6_K, &q6, 256, 33, 31.0f, "q6_k: value 33: d 2 (63 - 32)");
    check(FG_K_Q6_K, &q6, 256, 34, -32.0f, "q6_k: value 34: d 2 (0 - 32)");
}


static void
test_row_size(void)
{
    is_int(fg_k_row_size(FG_K_Q4_0, 64), 36, "q4_0: 18 bytes a block");
    is_int(fg_k_row_size(FG_K_Q4_1, 64), 40, "q4_1: 20");
    is_int(fg_k_row_size(FG_K_Q5_0, 64), 44, "q5_0: 22");
    is_int(fg_k_row_size(FG_K_Q5_1, 64), 48, "q5_1: 24");
    is_int(fg_k_row_size(FG_K_Q8_0, 64), 68, "q8_0: 34");
    is_int(fg_k_row_size(FG_K_Q8_1, 64), 72, "q8_1: 36");
    is_int(fg_k_row_size(FG_K_Q2_K, 512), 168, "q2_k: 84");
    is_int(fg_k_row_size(FG_K_Q3_K, 512), 220, "q3_k: 110");
    is_int(fg_k_row_size(FG_K_Q4_K, 512), 288, "q4_k: 144");
    is_int(fg_k_row_size(FG_K_Q5_K, 512), 352, "q5_k: 176");
    is_int(fg_k_row_size(FG_K_Q6_K, 512), 420, "q6_k: 210");
    is_int(fg_k_row_size(FG_K_Q8_K, 512), 584, "q8_k: 292");
    is_int(fg_k_row_size(FG_K_BF16, 3), 6, "bf16: 2 a value");
    is_int(fg_k_row_size(FG_K_Q4_K, 288), 0, "a partial block: 0");
    is_int(fg_k_row_size(FG_K_Q4_0, 48), 0, "a partial block of 32: 0");
    is_int(fg_k_row_size((fg_k_type_e) 5, 64), 0, "a retired number: 0");
    is_int(fg_k_row_size((fg_k_type_e) 99, 64), 0, "an unknown one: 0");
}


int
main(void)
{
    int  simd;

    fg_k_init();

    for (simd = 0; simd < 2; simd++) {
        fg_k_set_simd(simd);
        diag("%s path", simd ? "the best" : "the portable");

        test_q4_q5();
        test_q8();
        test_q2_q3();
        test_q4k_q5k();
        test_q6k();
    }

    test_row_size();

    return done_testing();
}
