
/*
 * fairgate: activations rounded as a Q8_0 product sees them.
 *
 * fg_k_matmul() multiplies Q8_0 weights by x two ways: up to a few rows
 * it quantizes x to 8 bits per block of 32 and takes integer dot
 * products; for more rows it widens the weights and multiplies float x
 * with sgemm.  A token's result then depends on how many rows shared its
 * step, and a sequence's greedy tokens on who else was in the batch.
 * Rounding x first, as the integer path would, makes both paths compute
 * the same products (to float rounding): the integer path quantizes the
 * rounded values back to the same 8-bit values and scale.
 */

#ifndef _FG_KERNELS_Q8X_H_INCLUDED_
#define _FG_KERNELS_Q8X_H_INCLUDED_


#include <stddef.h>


/*
 * y = x with each block of 32 values replaced by d * q, d = amax / 127 of
 * the block, q = round(x * 127 / amax) in -127 .. 127; n a multiple of
 * 32; y may be x.
 */
void fg_k_q8_round(float *y, const float *x, size_t n);


#endif /* _FG_KERNELS_Q8X_H_INCLUDED_ */
