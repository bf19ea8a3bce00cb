
/*
 * fairgate: a GGUF model converted to another type or mixture, as
 * llama-quantize converts one: the metadata copied entry by entry, each
 * tensor declared again with the type fg_gguf_mix.c gives it, then each
 * matrix read a row at a time, widened to float and quantized with the
 * kernels' reference quantizers, the other tensors' bytes copied.  Only
 * F32, F16 and BF16 matrices are read: quantizing a quantized model again
 * would add its errors to the first ones.
 */


#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fg_gguf_convert.h"
#include "fg_gguf_mix.h"
#include "fg_gguf_quant.h"
#include "fg_gguf_write.h"
#include "fg_ggml_types.h"
#include "fg_kernels.h"


/* the conversion under way */
typedef struct {
    const fg_gguf_t      *g;
    fg_gguf_writer_t     *w;
    const fg_gguf_mix_t  *mix;
    uint32_t             *types;        /* each tensor's new type */
    uint32_t              n_layer;
    int                   tied;
} fg_conv_t;


/* blocks: one more than the largest N of the blk.N. tensors */
static uint32_t
fg_conv_layers(const fg_gguf_t *g)
{
    char      name[64];
    unsigned  i, n, layer;

    n = 0;

    for (i = 0; i < g->n_tensors; i++) {
        snprintf(name, sizeof(name), "%.*s", (int) g->tensors[i].name.len,
                 g->tensors[i].name.data);

        if (sscanf(name, "blk.%u.", &layer) == 1 && layer + 1 > n) {
            n = layer + 1;
        }
    }

    return n;
}


/* every entry but those the writer or the new types set */
static int
fg_conv_metadata(fg_conv_t *c)
{
    int                  rc;
    uint64_t             k;
    fg_gguf_str_t        key;
    const fg_gguf_kv_t  *kv;

    rc = 0;

    for (k = 0; rc == 0 && k < c->g->n_kv; k++) {
        kv = &c->g->kv[k];
        key = kv->key;

#define fg_conv_is(s)                                                         \
        (key.len == sizeof(s) - 1 && memcmp(key.data, s, key.len) == 0)

        if (fg_conv_is("general.alignment") || fg_conv_is("general.file_type")
            || fg_conv_is("general.quantization_version"))
        {
            continue;
        }

#undef fg_conv_is

        rc = fg_gguf_w_copy(c->w, kv);
    }

    fg_gguf_w_u32(c->w, "general.file_type", c->mix->ftype);

    if (fg_ggml_block_size(c->mix->type) > 1) {
        fg_gguf_w_u32(c->w, "general.quantization_version", 2);
    }

    return fg_gguf_writer_error(c->w)[0] ? -1 : 0;
}


/* each tensor with its new type: 0, or -1 with the reason in err */
static int
fg_conv_declare(fg_conv_t *c, char *err, size_t errlen)
{
    char                     name[256];
    uint32_t                 type;
    uint64_t                 i;
    const fg_gguf_tensor_t  *t;

    for (i = 0; i < c->g->n_tensors; i++) {
        t = &c->g->tensors[i];
        snprintf(name, sizeof(name), "%.*s", (int) t->name.len,
                 t->name.data);

        type = t->ne[0] == 0
               ? t->type
               : fg_gguf_mix_type(c->mix->type, c->mix->mix, name, t->type,
                                  t->n_dims, t->ne[0], c->n_layer, c->tied);

        if (type != t->type && t->type != FG_GGML_F32
            && t->type != FG_GGML_F16 && t->type != FG_GGML_BF16)
        {
            snprintf(err, errlen, "tensor %s is %s: --convert reads f32, "
                     "f16 and bf16 models", name,
                     fg_ggml_type_name(t->type));
            return -1;
        }

        c->types[i] = type;

        if (fg_gguf_w_tensor(c->w, name, type, t->n_dims, t->ne) < 0) {
            snprintf(err, errlen, "%s", fg_gguf_writer_error(c->w));
            return -1;
        }
    }

    return 0;
}


/* the rows r .. r + n of tensor t widened to float */
static void
fg_conv_widen(const fg_gguf_tensor_t *t, uint64_t r, uint64_t n, void *raw,
    float *rows)
{
    uint64_t  k, in_bytes;

    in_bytes = fg_ggml_row_size(t->type, t->ne[0]);

    /* each row copied first: a file's alignment may be below a half's */
    for (k = 0; k < n; k++) {
        memcpy(raw, (const uint8_t *) t->data + (r + k) * in_bytes,
               in_bytes);
        fg_k_dequant_row((fg_k_type_e) t->type, raw, rows + k * t->ne[0],
                         t->ne[0]);
    }
}


/* the tensors' data, FG_GGUF_QUANT_ROWS rows at a time where the type
 * changes */
static int
fg_conv_data(fg_conv_t *c, FILE *f)
{
    int                      rc;
    void                    *raw, *out;
    float                   *rows;
    uint64_t                 i, r, n, nrows, max;
    fg_pool_t               *pool;
    const fg_gguf_tensor_t  *t;

    max = 1;

    for (i = 0; i < c->g->n_tensors; i++) {
        max = c->g->tensors[i].ne[0] > max ? c->g->tensors[i].ne[0] : max;
    }

    /* 4 bytes a value holds a row of any type */
    rows = malloc(FG_GGUF_QUANT_ROWS * max * sizeof(float));
    out = malloc(FG_GGUF_QUANT_ROWS * max * sizeof(float));
    raw = malloc(max * sizeof(float));
    pool = fg_gguf_quant_pool(0);
    rc = rows && raw && out ? 0 : -1;

    for (i = 0; rc == 0 && i < c->g->n_tensors; i++) {
        t = &c->g->tensors[i];

        if (c->types[i] == t->type) {
            rc = fg_gguf_w_write_data(c->w, f, t->data, t->size);
            continue;
        }

        nrows = t->n_elements / t->ne[0];

        for (r = 0; rc == 0 && r < nrows; r += n) {
            n = nrows - r < FG_GGUF_QUANT_ROWS ? nrows - r
                                               : FG_GGUF_QUANT_ROWS;

            fg_conv_widen(t, r, n, raw, rows);
            fg_gguf_quant_rows(pool, c->types[i], rows, out, n, t->ne[0]);
            rc = fg_gguf_w_write_data(c->w, f, out,
                                      n * fg_ggml_row_size(c->types[i],
                                                           t->ne[0]));
        }
    }

    free(rows);
    free(raw);
    free(out);
    fg_pool_destroy(pool);

    return rc;
}


static int
fg_conv_write(fg_conv_t *c, const char *out, char *err, size_t errlen)
{
    int    rc;
    FILE  *f;

    f = fopen(out, "wb");
    if (f == NULL) {
        snprintf(err, errlen, "%s: %s", out, strerror(errno));
        return -1;
    }

    rc = fg_gguf_w_write_header(c->w, f) == 0 ? fg_conv_data(c, f) : -1;

    if (fclose(f) != 0 || rc != 0) {
        snprintf(err, errlen, "%s: %s", out, fg_gguf_writer_error(c->w)[0]
                                             ? fg_gguf_writer_error(c->w)
                                             : "write failed");
        unlink(out);
        return -1;
    }

    return 0;
}


int
fg_gguf_convert(const char *in, const char *out, uint32_t type,
    uint32_t mix, char *err, size_t errlen)
{
    int         rc;
    fg_conv_t   c;
    fg_gguf_t  *g;

    memset(&c, 0, sizeof(fg_conv_t));

    c.mix = fg_gguf_mix_of(type, mix);
    if (c.mix == NULL) {
        snprintf(err, errlen, "tensor type %u, mixture %u (%s)", type, mix,
                 fg_gguf_mix_names());
        return -1;
    }

    g = fg_gguf_open(in, err, errlen);
    if (g == NULL) {
        return -1;
    }

    c.g = g;
    c.n_layer = fg_conv_layers(g);
    c.tied = fg_gguf_find_tensor(g, "output.weight") == NULL;
    c.types = calloc(g->n_tensors ? g->n_tensors : 1, sizeof(uint32_t));
    c.w = fg_gguf_writer_new(g->version, g->alignment);
    rc = -1;

    if (c.types == NULL || c.w == NULL) {
        snprintf(err, errlen, "out of memory");

    } else if (fg_conv_metadata(&c) != 0) {
        snprintf(err, errlen, "%s", fg_gguf_writer_error(c.w));

    } else if (fg_conv_declare(&c, err, errlen) == 0) {
        rc = fg_conv_write(&c, out, err, errlen);
    }

    fg_gguf_writer_free(c.w);
    free(c.types);
    fg_gguf_close(g);

    return rc;
}
