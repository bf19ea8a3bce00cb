
/*
 * fairgate: 16-bit floats, IEEE half (fp16) and bfloat16, to and from
 * float: one copy for the GGUF reader's tensor types, the CPU kernels and
 * the tests.  To 16 bits rounds to nearest, ties to even; infinities stay,
 * and a NaN stays a (quiet) NaN.
 */

#ifndef _FG_HALF_H_INCLUDED_
#define _FG_HALF_H_INCLUDED_


#include <math.h>
#include <stdint.h>
#include <string.h>


static inline float
fg_fp16_to_f32(uint16_t h)
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


static inline uint16_t
fg_f32_to_fp16(float f)
{
    float     a;
    uint32_t  x, sign;

    memcpy(&x, &f, sizeof(float));

    sign = (x >> 16) & 0x8000;
    x &= 0x7fffffff;

    if (x >= 0x7f800000) {
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


static inline float
fg_bf16_to_f32(uint16_t h)
{
    float     f;
    uint32_t  bits;

    bits = (uint32_t) h << 16;
    memcpy(&f, &bits, sizeof(float));

    return f;
}


static inline uint16_t
fg_f32_to_bf16(float f)
{
    uint32_t  x;

    memcpy(&x, &f, sizeof(float));

    if ((x & 0x7fffffff) > 0x7f800000) {
        return (uint16_t) ((x >> 16) | 0x40);
    }

    x += 0x7fff + ((x >> 16) & 1);

    return (uint16_t) (x >> 16);
}


#endif /* _FG_HALF_H_INCLUDED_ */
