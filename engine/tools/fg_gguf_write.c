
/*
 * fairgate: GGUF writer and random-weight model generator.
 */


#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fg_ggml_types.h"
#include "fg_gguf_write.h"
#include "fg_llama.h"


typedef struct {
    char         name[FG_GGUF_MAX_NAME + 1];
    uint32_t     type;
    uint32_t     n_dims;
    uint64_t     ne[FG_GGUF_MAX_DIMS];
    uint64_t     offset;
    uint64_t     size;
} fg_gguf_w_tensor_t;


struct fg_gguf_writer_s {
    uint32_t             version;
    uint32_t             alignment;

    /* metadata entries, serialised as they come */
    uint8_t             *kv;
    size_t               kv_len;
    size_t               kv_cap;
    uint64_t             n_kv;
    char               **keys;

    fg_gguf_w_tensor_t  *tensors;
    uint32_t             n_tensors;
    uint32_t             cap_tensors;
    uint64_t             data_size;

    /* streaming state: the tensor being written and its bytes so far */
    uint32_t             next;
    uint64_t             written;
    int                  header_done;

    char                 err[FG_GGUF_ERR_LEN];
};


static int fg_gguf_w_fail(fg_gguf_writer_t *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));


static const uint8_t  fg_gguf_w_scalar_size[FG_GGUF_NTYPES] = {
    1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8
};


static int
fg_gguf_w_fail(fg_gguf_writer_t *w, const char *fmt, ...)
{
    va_list  args;

    if (w->err[0] == '\0') {
        va_start(args, fmt);
        vsnprintf(w->err, sizeof(w->err), fmt, args);
        va_end(args);
    }

    return -1;
}


static int
fg_gguf_w_put(fg_gguf_writer_t *w, const void *p, size_t n)
{
    size_t    cap;
    uint8_t  *kv;

    if (n == 0) {
        return 0;
    }

    if (w->kv_len + n > w->kv_cap) {
        for (cap = w->kv_cap ? w->kv_cap : 4096; cap < w->kv_len + n;
             cap *= 2)
        {
            /* void */
        }

        kv = realloc(w->kv, cap);
        if (kv == NULL) {
            return fg_gguf_w_fail(w, "out of memory");
        }

        w->kv = kv;
        w->kv_cap = cap;
    }

    memcpy(w->kv + w->kv_len, p, n);
    w->kv_len += n;

    return 0;
}


static int
fg_gguf_w_put_u32(fg_gguf_writer_t *w, uint32_t v)
{
    return fg_gguf_w_put(w, &v, 4);
}


static int
fg_gguf_w_put_u64(fg_gguf_writer_t *w, uint64_t v)
{
    return fg_gguf_w_put(w, &v, 8);
}


static int
fg_gguf_w_put_str(fg_gguf_writer_t *w, const char *s, size_t len)
{
    if (fg_gguf_w_put_u64(w, len) != 0) {
        return -1;
    }

    return fg_gguf_w_put(w, s, len);
}


/* starts an entry: checks the key, writes it and the value type */
static int
fg_gguf_w_key(fg_gguf_writer_t *w, const char *key, uint32_t type)
{
    char     **keys;
    size_t     len;
    uint64_t   i;

    if (w->err[0]) {
        return -1;
    }

    if (w->header_done) {
        return fg_gguf_w_fail(w, "metadata '%s' after the header", key);
    }

    len = strlen(key);

    if (len == 0) {
        return fg_gguf_w_fail(w, "empty metadata key");
    }

    for (i = 0; i < w->n_kv; i++) {
        if (strcmp(w->keys[i], key) == 0) {
            return fg_gguf_w_fail(w, "duplicate metadata key '%s'", key);
        }
    }

    keys = realloc(w->keys, (w->n_kv + 1) * sizeof(char *));
    if (keys == NULL) {
        return fg_gguf_w_fail(w, "out of memory");
    }

    w->keys = keys;
    w->keys[w->n_kv] = strdup(key);

    if (w->keys[w->n_kv] == NULL) {
        return fg_gguf_w_fail(w, "out of memory");
    }

    w->n_kv++;

    if (fg_gguf_w_put_str(w, key, len) != 0) {
        return -1;
    }

    return fg_gguf_w_put_u32(w, type);
}


fg_gguf_writer_t *
fg_gguf_writer_new(uint32_t version, uint32_t alignment)
{
    fg_gguf_writer_t  *w;

    w = calloc(1, sizeof(fg_gguf_writer_t));
    if (w == NULL) {
        return NULL;
    }

    w->version = version ? version : 3;
    w->alignment = alignment ? alignment : FG_GGUF_DEFAULT_ALIGNMENT;

    if (w->version != 2 && w->version != 3) {
        fg_gguf_w_fail(w, "GGUF version %u (2 or 3)", w->version);
    }

    if ((w->alignment & (w->alignment - 1)) != 0) {
        fg_gguf_w_fail(w, "alignment %u is not a power of two",
                       w->alignment);
    }

    /* written like any entry: the reader sees it before the tensor infos */
    if (alignment && alignment != FG_GGUF_DEFAULT_ALIGNMENT) {
        fg_gguf_w_u32(w, "general.alignment", alignment);
    }

    return w;
}


void
fg_gguf_writer_free(fg_gguf_writer_t *w)
{
    uint64_t  i;

    if (w == NULL) {
        return;
    }

    for (i = 0; i < w->n_kv; i++) {
        free(w->keys[i]);
    }

    free(w->keys);
    free(w->kv);
    free(w->tensors);
    free(w);
}


const char *
fg_gguf_writer_error(const fg_gguf_writer_t *w)
{
    return w->err;
}


int
fg_gguf_w_scalar(fg_gguf_writer_t *w, const char *key, uint32_t type,
    const void *value)
{
    if (type >= FG_GGUF_NTYPES || fg_gguf_w_scalar_size[type] == 0) {
        return fg_gguf_w_fail(w, "'%s': %u is not a scalar type", key, type);
    }

    if (fg_gguf_w_key(w, key, type) != 0) {
        return -1;
    }

    return fg_gguf_w_put(w, value, fg_gguf_w_scalar_size[type]);
}


int
fg_gguf_w_u32(fg_gguf_writer_t *w, const char *key, uint32_t v)
{
    return fg_gguf_w_scalar(w, key, FG_GGUF_UINT32, &v);
}


int
fg_gguf_w_i32(fg_gguf_writer_t *w, const char *key, int32_t v)
{
    return fg_gguf_w_scalar(w, key, FG_GGUF_INT32, &v);
}


int
fg_gguf_w_u64(fg_gguf_writer_t *w, const char *key, uint64_t v)
{
    return fg_gguf_w_scalar(w, key, FG_GGUF_UINT64, &v);
}


int
fg_gguf_w_f32(fg_gguf_writer_t *w, const char *key, float v)
{
    return fg_gguf_w_scalar(w, key, FG_GGUF_FLOAT32, &v);
}


int
fg_gguf_w_bool(fg_gguf_writer_t *w, const char *key, int v)
{
    uint8_t  b;

    b = v ? 1 : 0;

    return fg_gguf_w_scalar(w, key, FG_GGUF_BOOL, &b);
}


int
fg_gguf_w_str(fg_gguf_writer_t *w, const char *key, const char *s)
{
    if (fg_gguf_w_key(w, key, FG_GGUF_STRING) != 0) {
        return -1;
    }

    return fg_gguf_w_put_str(w, s, strlen(s));
}


int
fg_gguf_w_arr(fg_gguf_writer_t *w, const char *key, uint32_t type,
    const void *elems, uint64_t n)
{
    if (type >= FG_GGUF_NTYPES || fg_gguf_w_scalar_size[type] == 0) {
        return fg_gguf_w_fail(w, "'%s': arrays of type %u are not numeric",
                              key, type);
    }

    if (fg_gguf_w_key(w, key, FG_GGUF_ARRAY) != 0
        || fg_gguf_w_put_u32(w, type) != 0
        || fg_gguf_w_put_u64(w, n) != 0)
    {
        return -1;
    }

    return fg_gguf_w_put(w, elems, n * fg_gguf_w_scalar_size[type]);
}


int
fg_gguf_w_arr_str(fg_gguf_writer_t *w, const char *key,
    const char *const *strs, const size_t *lens, uint64_t n)
{
    uint64_t  i;

    if (fg_gguf_w_key(w, key, FG_GGUF_ARRAY) != 0
        || fg_gguf_w_put_u32(w, FG_GGUF_STRING) != 0
        || fg_gguf_w_put_u64(w, n) != 0)
    {
        return -1;
    }

    for (i = 0; i < n; i++) {
        if (fg_gguf_w_put_str(w, strs[i], lens ? lens[i] : strlen(strs[i]))
            != 0)
        {
            return -1;
        }
    }

    return 0;
}


int
fg_gguf_w_copy(fg_gguf_writer_t *w, const fg_gguf_kv_t *kv)
{
    int       rc;
    char      key[256];
    uint64_t  i;

    if (kv->key.len >= sizeof(key)) {
        return fg_gguf_w_fail(w, "key of %zu bytes is too long to copy",
                              kv->key.len);
    }

    memcpy(key, kv->key.data, kv->key.len);
    key[kv->key.len] = '\0';

    switch (kv->type) {
    case FG_GGUF_STRING:
        if (fg_gguf_w_key(w, key, FG_GGUF_STRING) != 0) {
            return -1;
        }

        return fg_gguf_w_put_str(w, kv->v.s.data, kv->v.s.len);

    case FG_GGUF_ARRAY:
        if (kv->arr_type != FG_GGUF_STRING) {
            return fg_gguf_w_arr(w, key, kv->arr_type, kv->arr, kv->n);
        }

        rc = fg_gguf_w_key(w, key, FG_GGUF_ARRAY);

        if (rc == 0) {
            rc = fg_gguf_w_put_u32(w, FG_GGUF_STRING);
        }

        if (rc == 0) {
            rc = fg_gguf_w_put_u64(w, kv->n);
        }

        for (i = 0; rc == 0 && i < kv->n; i++) {
            rc = fg_gguf_w_put_str(w, kv->strs[i].data, kv->strs[i].len);
        }

        return rc;

    default: {
        /* scalars were widened at reading: narrow them back */
        uint8_t   b[8];
        uint16_t  h;
        uint32_t  u;
        float     f;

        switch (kv->type) {
        case FG_GGUF_UINT8:
        case FG_GGUF_INT8:
        case FG_GGUF_BOOL:
            b[0] = (uint8_t) kv->v.u;
            break;
        case FG_GGUF_UINT16:
        case FG_GGUF_INT16:
            h = (uint16_t) kv->v.u;
            memcpy(b, &h, 2);
            break;
        case FG_GGUF_UINT32:
        case FG_GGUF_INT32:
            u = (uint32_t) kv->v.u;
            memcpy(b, &u, 4);
            break;
        case FG_GGUF_FLOAT32:
            f = (float) kv->v.f;
            memcpy(b, &f, 4);
            break;
        case FG_GGUF_FLOAT64:
            memcpy(b, &kv->v.f, 8);
            break;
        default:
            memcpy(b, &kv->v.u, 8);
            break;
        }

        return fg_gguf_w_scalar(w, key, kv->type, b);
    }
    }
}


int
fg_gguf_w_tensor(fg_gguf_writer_t *w, const char *name, uint32_t type,
    uint32_t n_dims, const uint64_t *ne)
{
    uint32_t             d;
    uint64_t             n;
    fg_gguf_w_tensor_t  *t;

    if (w->err[0]) {
        return -1;
    }

    if (w->header_done) {
        return fg_gguf_w_fail(w, "tensor '%s' after the header", name);
    }

    if (strlen(name) == 0 || strlen(name) > FG_GGUF_MAX_NAME) {
        return fg_gguf_w_fail(w, "tensor name '%s' is empty or too long",
                              name);
    }

    if (fg_ggml_type_name(type) == NULL || n_dims > FG_GGUF_MAX_DIMS) {
        return fg_gguf_w_fail(w, "tensor '%s': type %u, %u dimensions",
                              name, type, n_dims);
    }

    for (d = 0; d < w->n_tensors; d++) {
        if (strcmp(w->tensors[d].name, name) == 0) {
            return fg_gguf_w_fail(w, "duplicate tensor '%s'", name);
        }
    }

    if (w->n_tensors == w->cap_tensors) {
        w->cap_tensors = w->cap_tensors ? 2 * w->cap_tensors : 64;
        t = realloc(w->tensors, w->cap_tensors * sizeof(fg_gguf_w_tensor_t));

        if (t == NULL) {
            return fg_gguf_w_fail(w, "out of memory");
        }

        w->tensors = t;
    }

    t = &w->tensors[w->n_tensors];
    memset(t, 0, sizeof(fg_gguf_w_tensor_t));
    strcpy(t->name, name);
    t->type = type;
    t->n_dims = n_dims;

    n = 1;

    for (d = 0; d < FG_GGUF_MAX_DIMS; d++) {
        t->ne[d] = d < n_dims ? ne[d] : 1;
        n *= t->ne[d];
    }

    if (t->ne[0] % fg_ggml_block_size(type) != 0) {
        return fg_gguf_w_fail(w, "tensor '%s': %llu is not a multiple of "
                              "%s's block of %u", name,
                              (unsigned long long) t->ne[0],
                              fg_ggml_type_name(type),
                              fg_ggml_block_size(type));
    }

    t->size = fg_ggml_row_size(type, n);
    t->offset = w->data_size;
    w->data_size += (t->size + w->alignment - 1)
                    & ~((uint64_t) w->alignment - 1);

    return (int) w->n_tensors++;
}


uint64_t
fg_gguf_w_tensor_size(const fg_gguf_writer_t *w, uint32_t i)
{
    return i < w->n_tensors ? w->tensors[i].size : 0;
}


static int
fg_gguf_w_pad(fg_gguf_writer_t *w, FILE *f, uint64_t pos)
{
    static const uint8_t  zeros[256];
    uint64_t              pad;

    pad = (w->alignment - pos % w->alignment) % w->alignment;

    while (pad) {
        if (fwrite(zeros, 1, pad > 256 ? 256 : pad, f)
            != (pad > 256 ? 256 : pad))
        {
            return fg_gguf_w_fail(w, "write failed");
        }

        pad -= pad > 256 ? 256 : pad;
    }

    return 0;
}


int
fg_gguf_w_write_header(fg_gguf_writer_t *w, FILE *f)
{
    uint32_t             i, u;
    uint64_t             pos, v;
    fg_gguf_w_tensor_t  *t;

    if (w->err[0]) {
        return -1;
    }

    /* the tensor infos go after the metadata, in the same buffer */
    pos = w->kv_len;

    for (i = 0; i < w->n_tensors; i++) {
        t = &w->tensors[i];

        if (fg_gguf_w_put_str(w, t->name, strlen(t->name)) != 0
            || fg_gguf_w_put_u32(w, t->n_dims) != 0)
        {
            return -1;
        }

        for (u = 0; u < t->n_dims; u++) {
            if (fg_gguf_w_put_u64(w, t->ne[u]) != 0) {
                return -1;
            }
        }

        if (fg_gguf_w_put_u32(w, t->type) != 0
            || fg_gguf_w_put_u64(w, t->offset) != 0)
        {
            return -1;
        }
    }

    v = w->n_tensors;

    if (fwrite("GGUF", 1, 4, f) != 4
        || fwrite(&w->version, 4, 1, f) != 1
        || fwrite(&v, 8, 1, f) != 1
        || fwrite(&w->n_kv, 8, 1, f) != 1
        || (w->kv_len && fwrite(w->kv, 1, w->kv_len, f) != w->kv_len))
    {
        return fg_gguf_w_fail(w, "write failed");
    }

    /* magic, version and the two counts: 24 bytes */
    v = 24 + w->kv_len;

    w->kv_len = pos;
    w->header_done = 1;

    return fg_gguf_w_pad(w, f, v);
}


int
fg_gguf_w_write_data(fg_gguf_writer_t *w, FILE *f, const void *data,
    uint64_t len)
{
    fg_gguf_w_tensor_t  *t;

    if (w->err[0]) {
        return -1;
    }

    if (!w->header_done || w->next >= w->n_tensors) {
        return fg_gguf_w_fail(w, "tensor data out of order");
    }

    t = &w->tensors[w->next];

    if (len > t->size - w->written) {
        return fg_gguf_w_fail(w, "tensor '%s': %llu bytes past its size",
                              t->name, (unsigned long long) len);
    }

    if (len && fwrite(data, 1, len, f) != len) {
        return fg_gguf_w_fail(w, "write failed");
    }

    w->written += len;

    if (w->written == t->size) {
        w->next++;
        w->written = 0;

        return fg_gguf_w_pad(w, f, t->size);
    }

    return 0;
}


/* the generator */

typedef struct {
    uint64_t  s;
} fg_gen_rng_t;


/* splitmix64: tiny, seedable, and good enough for random weights */
static inline uint64_t
fg_gen_next(fg_gen_rng_t *r)
{
    uint64_t  z;

    z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;

    return z ^ (z >> 31);
}


/* uniform in [-1, 1) */
static inline float
fg_gen_uniform(fg_gen_rng_t *r)
{
    return (float) (fg_gen_next(r) >> 40) * 0x1p-23f - 1.0f;
}


typedef enum {
    FG_GEN_MATRIX = 0,              /* U(-a, a), a = sqrt(3 / fan-in) */
    FG_GEN_EMBD,                    /* U(-1, 1) */
    FG_GEN_NORM,                    /* 1 + U(-0.1, 0.1) */
    FG_GEN_BIAS,                    /* U(-0.1, 0.1) */
    FG_GEN_ROPE                     /* Llama 3 factors */
} fg_gen_kind_e;


void
fg_gguf_gen_defaults(fg_gguf_gen_conf_t *c)
{
    memset(c, 0, sizeof(fg_gguf_gen_conf_t));

    c->arch = "llama";
    c->name = "fairgate-random";
    c->type = FG_GGML_F32;
    c->version = 3;
    c->n_ctx = 2048;
    c->n_embd = 64;
    c->n_layer = 5;
    c->n_ff = 172;
    c->n_head = 8;
    c->n_head_kv = 4;
    c->rms_eps = 1e-5f;
    c->rope_base = 10000.0f;
    c->rope_factor = 1.0f;
    c->rope_low = 1.0f;
    c->rope_high = 4.0f;
    c->rope_orig_ctx = 8192;
    c->seed = 1;
}


uint64_t
fg_gguf_gen_params(const fg_gguf_gen_conf_t *c)
{
    uint64_t  embd, q, kv, layer, vocab;

    embd = c->n_embd;
    q = embd;
    kv = (uint64_t) c->n_head_kv * (c->n_head ? embd / c->n_head : 0);
    vocab = c->n_vocab ? c->n_vocab : 256 + 3;

    layer = 2 * embd + embd * q * 2 + embd * kv * 2
            + 3 * embd * c->n_ff;

    if (strcmp(c->arch, "qwen2") == 0) {
        layer += q + 2 * kv;
    }

    return embd * vocab * (c->tied ? 1 : 2) + embd + layer * c->n_layer;
}


static int
fg_gen_tokenizer(const fg_gguf_gen_conf_t *c, fg_gguf_writer_t *w,
    uint32_t *n_vocab, char *err, size_t errlen)
{
    int                  rc;
    char               **strs;
    float               *scores;
    int32_t             *types;
    uint32_t             i, n;
    uint64_t             k;
    fg_gguf_t           *g;
    const fg_gguf_kv_t  *kv;

    if (c->tokenizer_from) {
        g = fg_gguf_open(c->tokenizer_from, err, errlen);
        if (g == NULL) {
            return -1;
        }

        kv = fg_gguf_find_kv(g, "tokenizer.ggml.tokens");

        if (kv == NULL || kv->type != FG_GGUF_ARRAY
            || kv->arr_type != FG_GGUF_STRING)
        {
            snprintf(err, errlen, "%s has no tokenizer.ggml.tokens",
                     c->tokenizer_from);
            fg_gguf_close(g);
            return -1;
        }

        *n_vocab = (uint32_t) kv->n;
        rc = 0;

        for (k = 0; rc == 0 && k < g->n_kv; k++) {
            kv = &g->kv[k];

            if (kv->key.len > 10 && memcmp(kv->key.data, "tokenizer.", 10)
                                    == 0)
            {
                rc = fg_gguf_w_copy(w, kv);
            }
        }

        fg_gguf_close(g);

        return rc;
    }

    /*
     * Synthetic: SentencePiece-style with byte fallback only, so that any
     * text encodes (one token per byte); the rest of the vocabulary is
     * unused padding up to the requested size.
     */
    n = c->n_vocab ? c->n_vocab : 3 + 256;

    if (n < 3 + 256) {
        snprintf(err, errlen, "a vocabulary of %u: the synthetic tokenizer "
                 "needs 259 (unk, bos, eos and 256 bytes)", n);
        return -1;
    }

    strs = calloc(n, sizeof(char *));
    scores = calloc(n, sizeof(float));
    types = calloc(n, sizeof(int32_t));

    rc = -1;

    if (strs == NULL || scores == NULL || types == NULL) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }

    for (i = 0; i < n; i++) {
        strs[i] = malloc(24);

        if (strs[i] == NULL) {
            snprintf(err, errlen, "out of memory");
            goto done;
        }

        if (i < 3) {
            strcpy(strs[i], i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>");
            types[i] = i == 0 ? 2 : 3;

        } else if (i < 3 + 256) {
            snprintf(strs[i], 24, "<0x%02X>", i - 3);
            types[i] = 6;

        } else {
            snprintf(strs[i], 24, "<unused%u>", i - 3 - 256);
            types[i] = 5;
        }
    }

    fg_gguf_w_str(w, "tokenizer.ggml.model", "llama");
    fg_gguf_w_arr_str(w, "tokenizer.ggml.tokens", (const char *const *) strs,
                      NULL, n);
    fg_gguf_w_arr(w, "tokenizer.ggml.scores", FG_GGUF_FLOAT32, scores, n);
    fg_gguf_w_arr(w, "tokenizer.ggml.token_type", FG_GGUF_INT32, types, n);
    fg_gguf_w_u32(w, "tokenizer.ggml.unknown_token_id", 0);
    fg_gguf_w_u32(w, "tokenizer.ggml.bos_token_id", 1);
    fg_gguf_w_u32(w, "tokenizer.ggml.eos_token_id", 2);
    rc = fg_gguf_w_bool(w, "tokenizer.ggml.add_bos_token", 1);

    *n_vocab = n;

done:

    if (strs) {
        for (i = 0; i < n; i++) {
            free(strs[i]);
        }
    }

    free(strs);
    free(scores);
    free(types);

    return rc;
}


static int
fg_gen_tensor(fg_gguf_writer_t *w, const char *name, uint32_t type,
    uint64_t ne0, uint64_t ne1)
{
    uint64_t  ne[2];

    ne[0] = ne0;
    ne[1] = ne1;

    return fg_gguf_w_tensor(w, name, type, ne1 ? 2 : 1, ne);
}


int
fg_gguf_gen(const fg_gguf_gen_conf_t *c, FILE *f, char *err, size_t errlen)
{
    int                rc, qwen2;
    char               key[128], name[64];
    void              *out;
    float             *row;
    uint8_t           *kinds;
    uint32_t           i, n_vocab, hd, ftype, mt;
    uint64_t           q, kv, r, j, ne0, ne1, maxrow, rowbytes;
    fg_gen_rng_t       rng;
    fg_gguf_writer_t  *w;

    if (errlen) {
        err[0] = '\0';
    }

    qwen2 = strcmp(c->arch, "qwen2") == 0;
    mt = c->type;

    if (!qwen2 && strcmp(c->arch, "llama") != 0) {
        snprintf(err, errlen, "architecture '%s' (llama or qwen2)", c->arch);
        return -1;
    }

    if (!fg_ggml_type_supported(mt)) {
        snprintf(err, errlen, "tensor type %u (f32, f16, bf16 or q8_0)", mt);
        return -1;
    }

    if (c->n_embd == 0 || c->n_layer == 0 || c->n_ff == 0 || c->n_head == 0
        || c->n_head_kv == 0 || c->n_embd % c->n_head != 0
        || c->n_head % c->n_head_kv != 0 || (c->n_embd / c->n_head) % 2 != 0)
    {
        snprintf(err, errlen, "impossible shape: embedding %u, heads %u, "
                 "kv heads %u (the embedding must split into heads of even "
                 "size, the heads into kv groups)", c->n_embd, c->n_head,
                 c->n_head_kv);
        return -1;
    }

    if (mt == FG_GGML_Q8_0 && (c->n_embd % 32 != 0 || c->n_ff % 32 != 0)) {
        snprintf(err, errlen, "q8_0 needs embedding (%u) and feed-forward "
                 "(%u) lengths that are multiples of 32", c->n_embd,
                 c->n_ff);
        return -1;
    }

    hd = c->n_embd / c->n_head;
    q = c->n_embd;
    kv = (uint64_t) c->n_head_kv * hd;

    w = fg_gguf_writer_new(c->version, c->alignment);
    if (w == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    ftype = mt == FG_GGML_F32 ? 0 : mt == FG_GGML_F16 ? 1
            : mt == FG_GGML_Q8_0 ? 7 : 32;

    fg_gguf_w_str(w, "general.architecture", c->arch);
    fg_gguf_w_str(w, "general.name", c->name ? c->name : "fairgate-random");
    fg_gguf_w_u32(w, "general.file_type", ftype);

    if (mt == FG_GGML_Q8_0) {
        fg_gguf_w_u32(w, "general.quantization_version", 2);
    }

#define fg_gen_key(suffix, call)                                              \
    snprintf(key, sizeof(key), "%s.%s", c->arch, suffix);                     \
    call

    fg_gen_key("context_length", fg_gguf_w_u32(w, key, c->n_ctx));
    fg_gen_key("embedding_length", fg_gguf_w_u32(w, key, c->n_embd));
    fg_gen_key("block_count", fg_gguf_w_u32(w, key, c->n_layer));
    fg_gen_key("feed_forward_length", fg_gguf_w_u32(w, key, c->n_ff));
    fg_gen_key("attention.head_count", fg_gguf_w_u32(w, key, c->n_head));
    fg_gen_key("attention.head_count_kv",
               fg_gguf_w_u32(w, key, c->n_head_kv));
    fg_gen_key("attention.layer_norm_rms_epsilon",
               fg_gguf_w_f32(w, key, c->rms_eps));
    fg_gen_key("rope.freq_base", fg_gguf_w_f32(w, key, c->rope_base));
    fg_gen_key("rope.dimension_count", fg_gguf_w_u32(w, key, hd));

#undef fg_gen_key

    if (fg_gen_tokenizer(c, w, &n_vocab, err, errlen) != 0) {
        goto failed;
    }

    if (c->n_vocab && c->n_vocab != n_vocab) {
        snprintf(err, errlen, "a vocabulary of %u with a tokenizer of %u "
                 "tokens", c->n_vocab, n_vocab);
        goto failed;
    }

    /* declare every tensor; kinds[] says how to fill each */
    kinds = calloc(4 + 12 * (size_t) c->n_layer, 1);
    if (kinds == NULL) {
        snprintf(err, errlen, "out of memory");
        goto failed;
    }

    rc = fg_gen_tensor(w, "token_embd.weight", mt, c->n_embd, n_vocab);
    kinds[rc < 0 ? 0 : rc] = FG_GEN_EMBD;
    rc = fg_gen_tensor(w, "output_norm.weight", FG_GGML_F32, c->n_embd, 0);
    kinds[rc < 0 ? 0 : rc] = FG_GEN_NORM;

    if (!c->tied) {
        rc = fg_gen_tensor(w, "output.weight", mt, c->n_embd, n_vocab);
        kinds[rc < 0 ? 0 : rc] = FG_GEN_MATRIX;
    }

    if (c->rope_factor > 1) {
        rc = fg_gen_tensor(w, "rope_freqs.weight", FG_GGML_F32, hd / 2, 0);
        kinds[rc < 0 ? 0 : rc] = FG_GEN_ROPE;
    }

    for (i = 0; i < c->n_layer; i++) {

#define fg_gen_blk(suffix, type, ne0, ne1, kind)                              \
        snprintf(name, sizeof(name), "blk.%u." suffix, i);                    \
        rc = fg_gen_tensor(w, name, type, ne0, ne1);                          \
        kinds[rc < 0 ? 0 : rc] = kind

        fg_gen_blk("attn_norm.weight", FG_GGML_F32, c->n_embd, 0,
                   FG_GEN_NORM);
        fg_gen_blk("attn_q.weight", mt, c->n_embd, q, FG_GEN_MATRIX);
        fg_gen_blk("attn_k.weight", mt, c->n_embd, kv, FG_GEN_MATRIX);
        fg_gen_blk("attn_v.weight", mt, c->n_embd, kv, FG_GEN_MATRIX);

        if (qwen2) {
            fg_gen_blk("attn_q.bias", FG_GGML_F32, q, 0, FG_GEN_BIAS);
            fg_gen_blk("attn_k.bias", FG_GGML_F32, kv, 0, FG_GEN_BIAS);
            fg_gen_blk("attn_v.bias", FG_GGML_F32, kv, 0, FG_GEN_BIAS);
        }

        fg_gen_blk("attn_output.weight", mt, q, c->n_embd, FG_GEN_MATRIX);
        fg_gen_blk("ffn_norm.weight", FG_GGML_F32, c->n_embd, 0,
                   FG_GEN_NORM);
        fg_gen_blk("ffn_gate.weight", mt, c->n_embd, c->n_ff,
                   FG_GEN_MATRIX);
        fg_gen_blk("ffn_down.weight", mt, c->n_ff, c->n_embd,
                   FG_GEN_MATRIX);
        fg_gen_blk("ffn_up.weight", mt, c->n_embd, c->n_ff, FG_GEN_MATRIX);

#undef fg_gen_blk
    }

    if (fg_gguf_w_write_header(w, f) != 0) {
        snprintf(err, errlen, "%s", fg_gguf_writer_error(w));
        free(kinds);
        goto failed;
    }

    /* one row at a time: any size fits in memory */
    maxrow = c->n_embd > c->n_ff ? c->n_embd : c->n_ff;
    row = malloc(maxrow * sizeof(float));
    out = malloc(maxrow * sizeof(float));

    if (row == NULL || out == NULL) {
        snprintf(err, errlen, "out of memory");
        free(row);
        free(out);
        free(kinds);
        goto failed;
    }

    rc = 0;

    for (i = 0; rc == 0 && i < w->n_tensors; i++) {
        /* each tensor its own stream: a tensor does not depend on order */
        rng.s = c->seed * 0x2545f4914f6cdd1dULL + i;
        ne0 = w->tensors[i].ne[0];
        ne1 = w->tensors[i].ne[1];
        rowbytes = fg_ggml_row_size(w->tensors[i].type, ne0);

        for (r = 0; rc == 0 && r < ne1; r++) {
            switch (kinds[i]) {
            case FG_GEN_ROPE:
                fg_llama3_rope_factors(hd, c->rope_base, c->rope_factor,
                                       c->rope_low, c->rope_high,
                                       c->rope_orig_ctx, row);
                break;

            default:
                for (j = 0; j < ne0; j++) {
                    row[j] = fg_gen_uniform(&rng);

                    if (kinds[i] == FG_GEN_MATRIX) {
                        row[j] *= sqrtf(3.0f / ne0);

                    } else if (kinds[i] == FG_GEN_NORM) {
                        row[j] = 1.0f + 0.1f * row[j];

                    } else if (kinds[i] == FG_GEN_BIAS) {
                        row[j] *= 0.1f;
                    }
                }
            }

            fg_ggml_from_f32(w->tensors[i].type, row, out, ne0);
            rc = fg_gguf_w_write_data(w, f, out, rowbytes);
        }
    }

    free(row);
    free(out);
    free(kinds);

    if (rc != 0 || fflush(f) != 0 || ferror(f)) {
        snprintf(err, errlen, "%s", w->err[0] ? w->err : "write failed");
        fg_gguf_writer_free(w);
        return -1;
    }

    fg_gguf_writer_free(w);

    return 0;

failed:

    /* the writer's first error is the cause of what followed */
    if (w->err[0]) {
        snprintf(err, errlen, "%s", w->err);
    }

    fg_gguf_writer_free(w);

    return -1;
}


int
fg_gguf_gen_file(const fg_gguf_gen_conf_t *c, const char *path, char *err,
    size_t errlen)
{
    int    rc;
    FILE  *f;

    f = fopen(path, "wb");
    if (f == NULL) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }

    rc = fg_gguf_gen(c, f, err, errlen);

    if (fclose(f) != 0 && rc == 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        rc = -1;
    }

    if (rc != 0) {
        unlink(path);
    }

    return rc;
}
