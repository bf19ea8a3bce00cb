
/*
 * fairgate: CUDA's __nv_bfloat16 on the CPU (see cuda_runtime.h here):
 * the top half of a float, rounded to nearest even, NaNs kept quiet.
 */

#ifndef _FG_CUDA_EMU_BF16_H_INCLUDED_
#define _FG_CUDA_EMU_BF16_H_INCLUDED_


#include <stdint.h>
#include <string.h>


struct __nv_bfloat16 {
    uint16_t  x;
};


static inline float
__bfloat162float(__nv_bfloat16 b)
{
    float     f;
    uint32_t  u;

    u = (uint32_t) b.x << 16;
    memcpy(&f, &u, sizeof(f));

    return f;
}


static inline __nv_bfloat16
__float2bfloat16_rn(float v)
{
    uint32_t       u;
    __nv_bfloat16  b;

    memcpy(&u, &v, sizeof(u));

    if ((u & 0x7fffffffu) > 0x7f800000u) {
        b.x = (uint16_t) ((u >> 16) | 0x40);
        return b;
    }

    u += 0x7fffu + ((u >> 16) & 1);
    b.x = (uint16_t) (u >> 16);

    return b;
}


#endif /* _FG_CUDA_EMU_BF16_H_INCLUDED_ */
