
/*
 * fairgate: a GGUF file copied with other tensor types, for the cuda
 * tests of quantized models: a generated F32 model made into one with
 * every quantized type (a matrix each), and a quantized model made back
 * into F32, its "twin": the
 * same weights, every value the quantized one's dequantized, which the
 * cpu backend runs as the reference for the cuda backend's kernels.
 */

#ifndef _FG_TEST_QFILE_H_INCLUDED_
#define _FG_TEST_QFILE_H_INCLUDED_


#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_gguf.h"
#include "fg_gguf_write.h"
#include "fg_kernels.h"


/* the type tensor name (of type, rows of ne0) gets in the copy */
typedef uint32_t (*fg_test_qpick_pt)(const char *name, uint32_t type,
    uint64_t ne0);


/* tensor t's rows converted to type, written to f */
static int
fg_test_qrows(fg_gguf_writer_t *w, FILE *f, const fg_gguf_tensor_t *t,
    uint32_t type)
{
    int             rc;
    float          *row;
    size_t          in_bytes, out_bytes;
    uint64_t        r, rows;
    uint8_t        *out;
    const uint8_t  *src;

    in_bytes = fg_k_row_size((fg_k_type_e) t->type, t->ne[0]);
    out_bytes = fg_k_row_size((fg_k_type_e) type, t->ne[0]);
    rows = t->n_elements / t->ne[0];

    row = malloc(t->ne[0] * sizeof(float));
    out = malloc(out_bytes + 1);
    rc = row != NULL && out != NULL && in_bytes != 0 && out_bytes != 0
         ? 0 : -1;

    for (r = 0, src = t->data; r < rows && rc == 0; r++, src += in_bytes) {
        fg_k_dequant_row((fg_k_type_e) t->type, src, row, t->ne[0]);
        fg_k_quant_row((fg_k_type_e) type, row, out, t->ne[0]);
        rc = fg_gguf_w_write_data(w, f, out, out_bytes);
    }

    free(row);
    free(out);

    return rc;
}


/* src copied to dst, each tensor of the type pick gives it */
static int
fg_test_qfile(const char *src, const char *dst, fg_test_qpick_pt pick)
{
    int                rc;
    char               err[FG_GGUF_ERR_LEN], name[128];
    FILE              *f;
    uint32_t          *types;
    uint64_t           i;
    fg_gguf_t         *g;
    fg_gguf_writer_t  *w;
    fg_gguf_tensor_t  *t;

    g = fg_gguf_open(src, err, sizeof(err));
    if (g == NULL) {
        return -1;
    }

    w = fg_gguf_writer_new(g->version, g->alignment);
    types = calloc(g->n_tensors + 1, sizeof(uint32_t));
    f = fopen(dst, "wb");
    rc = w != NULL && types != NULL && f != NULL ? 0 : -1;

    for (i = 0; i < g->n_kv && rc == 0; i++) {
        rc = fg_gguf_w_copy(w, &g->kv[i]);
    }

    for (i = 0; i < g->n_tensors && rc == 0; i++) {
        t = &g->tensors[i];
        snprintf(name, sizeof(name), "%.*s", (int) t->name.len,
                 t->name.data);
        types[i] = pick(name, t->type, t->ne[0]);
        rc = fg_gguf_w_tensor(w, name, types[i], t->n_dims, t->ne) < 0
             ? -1 : 0;
    }

    rc = rc == 0 ? fg_gguf_w_write_header(w, f) : -1;

    for (i = 0; i < g->n_tensors && rc == 0; i++) {
        rc = fg_test_qrows(w, f, &g->tensors[i], types[i]);
    }

    if (f != NULL && fclose(f) != 0) {
        rc = -1;
    }

    fg_gguf_writer_free(w);
    fg_gguf_close(g);
    free(types);

    return rc;
}


/* every quantized type in one model, a matrix each */
static uint32_t
fg_test_pick_every(const char *name, uint32_t type, uint64_t ne0)
{
    size_t  i;

    static const struct {
        const char   *part;
        fg_k_type_e   type;
    }  parts[] = {
        { "token_embd", FG_K_Q5_K }, { "output.", FG_K_Q8_0 },
        { "attn_q.", FG_K_Q4_0 }, { "attn_k.", FG_K_Q4_1 },
        { "attn_v.", FG_K_Q5_0 }, { "attn_output", FG_K_Q5_1 },
        { "ffn_gate", FG_K_Q2_K }, { "ffn_up", FG_K_Q3_K },
        { "ffn_down", FG_K_Q6_K }
    };

    (void) ne0;

    if (strstr(name, "norm") != NULL) {
        return type;
    }

    for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        if (strstr(name, parts[i].part) != NULL) {
            return parts[i].type;
        }
    }

    return type;
}


/* a type no backend runs (Q8_K: activations only) for one matrix */
static uint32_t
fg_test_pick_q8_k(const char *name, uint32_t type, uint64_t ne0)
{
    (void) ne0;

    return strcmp(name, "blk.1.ffn_up.weight") == 0 ? FG_K_Q8_K : type;
}


/*
 * 1 when the CPU kernels multiply type: fg_k_matmul() of a row agrees
 * with its dequantized values within x's rounding to 8 bits, as the cpu
 * backend then runs the type (the row's buffer has room for floats, in
 * case the kernel takes it for one).
 */
static int
fg_test_cpu_runs(fg_k_type_e type)
{
    int       rc;
    char     *work;
    float     x[FG_K_QK_K], w[FG_K_QK_K], y, ref, mag;
    size_t    i, ws;
    uint8_t  *q;

    ws = (fg_k_matmul_work_size(type, 1, FG_K_QK_K, 1) + 64) / 64 * 64;
    q = calloc(FG_K_QK_K, sizeof(float));
    work = aligned_alloc(64, ws);

    if (q == NULL || work == NULL) {
        free(q);
        free(work);
        return 0;
    }

    for (i = 0; i < FG_K_QK_K; i++) {
        x[i] = sinf((float) i);
        w[i] = cosf(0.37f * (float) i);
    }

    fg_k_quant_row(type, w, q, FG_K_QK_K);
    fg_k_dequant_row(type, q, w, FG_K_QK_K);

    ref = 0.0f;
    mag = 0.0f;

    for (i = 0; i < FG_K_QK_K; i++) {
        ref += w[i] * x[i];
        mag += fabsf(w[i] * x[i]);
    }

    y = NAN;
    fg_k_matmul(NULL, &y, x, q, type, 1, FG_K_QK_K, 1, work);
    rc = fabsf(y - ref) <= 0.05f * mag;

    free(q);
    free(work);

    return rc;
}


/* back to F32: the quantized model's values, dequantized */
static uint32_t
fg_test_pick_f32(const char *name, uint32_t type, uint64_t ne0)
{
    (void) name;
    (void) ne0;

    return type == FG_K_F16 || type == FG_K_BF16 ? type : FG_K_F32;
}


#endif /* _FG_TEST_QFILE_H_INCLUDED_ */
