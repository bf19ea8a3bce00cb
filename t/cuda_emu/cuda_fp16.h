
/*
 * fairgate: CUDA's __half on the CPU (see cuda_runtime.h here): IEEE
 * binary16 through the compiler's _Float16, rounded to nearest even.
 */

#ifndef _FG_CUDA_EMU_FP16_H_INCLUDED_
#define _FG_CUDA_EMU_FP16_H_INCLUDED_


#include <stdint.h>
#include <string.h>


struct __half {
    uint16_t  x;
};


static inline float
__half2float(__half h)
{
    _Float16  f;

    memcpy(&f, &h.x, sizeof(f));

    return (float) f;
}


static inline __half
__float2half_rn(float v)
{
    __half    h;
    _Float16  f;

    f = (_Float16) v;
    memcpy(&h.x, &f, sizeof(f));

    return h;
}


static inline __half
__ushort_as_half(unsigned short u)
{
    __half  h;

    h.x = u;

    return h;
}


#endif /* _FG_CUDA_EMU_FP16_H_INCLUDED_ */
