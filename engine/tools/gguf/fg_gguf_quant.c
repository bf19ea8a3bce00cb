
/*
 * fairgate: rows quantized on a pool of threads, a few rows a task.
 */


#include <unistd.h>

#include "fg_gguf_quant.h"
#include "fg_ggml_types.h"
#include "fg_kernels.h"


typedef struct {
    fg_k_type_e   type;
    const float  *src;
    uint8_t      *dst;
    uint64_t      ne0;
    size_t        row_size;
} fg_gguf_quant_t;


static void
fg_gguf_quant_task(void *ctx, size_t begin, size_t end, unsigned thread)
{
    size_t            r;
    fg_gguf_quant_t  *q;

    (void) thread;
    q = ctx;

    for (r = begin; r < end; r++) {
        fg_k_quant_row(q->type, q->src + r * q->ne0, q->dst + r * q->row_size,
                       q->ne0);
    }
}


fg_pool_t *
fg_gguf_quant_pool(unsigned threads)
{
    long  n;

    n = threads ? (long) threads : sysconf(_SC_NPROCESSORS_ONLN);

    return n > 1 ? fg_pool_create((unsigned) (n < 64 ? n : 64)) : NULL;
}


void
fg_gguf_quant_rows(fg_pool_t *pool, uint32_t type, const float *src,
    void *dst, size_t rows, uint64_t ne0)
{
    fg_gguf_quant_t  q;

    q.type = (fg_k_type_e) type;
    q.src = src;
    q.dst = dst;
    q.ne0 = ne0;
    q.row_size = fg_ggml_row_size(type, ne0);

    /* cheap types on the caller alone: the pool's hand-off costs more */
    fg_pool_for(fg_ggml_block_size(type) > 1 ? pool : NULL, rows, 1,
                fg_gguf_quant_task, &q);
}
