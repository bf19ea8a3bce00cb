
/*
 * fairgate: the cuda backend's products of many rows (prefill, large
 * batches), y[n][out] (+)= x[n][in] W^T by cublasGemmEx, fp32
 * accumulation.  F32 weights multiply in fp32, F16 and BF16 as they are
 * with x rounded to their type; a quantized matrix is dequantized to fp16
 * a tile of rows at a time into b->wh (b->wh_values halves, at most
 * FG_CUDA_TILE_VALUES), each tile a product of its own: the scratch stays
 * bounded whatever the matrix (the output matrix of a large vocabulary
 * would take a GB as a whole), and the extra pass over the weights is
 * small beside a product of this many rows.
 */


#include "fg_cuda_int.h"


static void
fg_cuda_gemm_one(fg_backend_t *b, float *y, size_t ldy, const void *a,
    const void *x, cudaDataType_t type, size_t n, size_t in, size_t out,
    int accumulate)
{
    float           alpha, beta;
    cublasStatus_t  st;

    alpha = 1.0f;
    beta = accumulate ? 1.0f : 0.0f;

    /*
     * Column-major, cuBLAS's view: W [out][in] row-major is W^T in
     * column-major with ld in; y^T (out x n, ld ldy) = W (out x in) x^T.
     */
    st = cublasGemmEx(b->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int) out, (int) n,
                      (int) in, &alpha, a, type, (int) in, x, type, (int) in,
                      &beta, y, CUDA_R_32F, (int) ldy, CUBLAS_COMPUTE_32F,
                      CUBLAS_GEMM_DEFAULT);

    if (st != CUBLAS_STATUS_SUCCESS && b->cu_err == cudaSuccess) {
        b->cu_err = cudaErrorUnknown;
        b->cu_what = cublasGetStatusString(st);
    }
}


void
fg_cuda_gemm(fg_backend_t *b, float *y, const float *x,
    const fg_cuda_mat_t *w, size_t n, int accumulate)
{
    size_t          o, t, tile, row;
    const void     *bx;
    cudaDataType_t  type;

    bx = x;
    type = CUDA_R_32F;

    if (w->type == FG_K_F16 || fg_cuk_type_quant(w->type)) {
        type = CUDA_R_16F;

    } else if (w->type == FG_K_BF16) {
        type = CUDA_R_16BF;
    }

    if (type != CUDA_R_32F) {
        fg_cuda_check(b, fg_cuk_to_half(b->stream, b->xh, x, n * w->in,
                                        type == CUDA_R_16BF ? FG_K_BF16
                                                            : FG_K_F16),
                      "converting activations");
        bx = b->xh;
    }

    if (!fg_cuk_type_quant(w->type)) {
        fg_cuda_gemm_one(b, y, w->out, w->data, bx, type, n, w->in, w->out,
                         accumulate);
        return;
    }

    tile = b->wh_values / w->in;
    row = fg_cuk_row_bytes(w->type, w->in);

    if (tile == 0) {
        fg_cuda_check(b, cudaErrorInvalidValue, "a tile of weights");
        return;
    }

    for (o = 0; o < w->out; o += t) {
        t = w->out - o < tile ? w->out - o : tile;

        fg_cuda_check(b, fg_cuk_dequant_f16(b->stream, b->wh,
                                            (const char *) w->data + o * row,
                                            w->type, t * w->in),
                      "dequantizing weights");

        fg_cuda_gemm_one(b, y + o, w->out, b->wh, bx, type, n, w->in, t,
                         accumulate);
    }
}
