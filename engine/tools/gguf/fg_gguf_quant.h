
/*
 * fairgate: rows of floats quantized on a thread pool, for the generator
 * and --convert: the k-quants' scale searches cost about 70 ns a value on
 * one thread, a minute for a 1B model.  Each row is quantized alone, so
 * the bytes do not depend on the threads.
 */

#ifndef _FG_GGUF_QUANT_H_INCLUDED_
#define _FG_GGUF_QUANT_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_pool.h"


/* rows written at once: 64 rows of floats and their quantized bytes */
#define FG_GGUF_QUANT_ROWS  64


/* a pool of threads threads (0: one per CPU); NULL: the caller's alone */
fg_pool_t *fg_gguf_quant_pool(unsigned threads);

/* rows rows of ne0 floats at src to type at dst, rows after rows */
void fg_gguf_quant_rows(fg_pool_t *pool, uint32_t type, const float *src,
    void *dst, size_t rows, uint64_t ne0);


#endif /* _FG_GGUF_QUANT_H_INCLUDED_ */
