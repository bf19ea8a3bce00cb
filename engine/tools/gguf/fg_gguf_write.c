
/*
 * fairgate: the GGUF writer.  Metadata entries are serialised into one
 * buffer as they come (a duplicate key is refused there); tensor infos
 * are kept until the header is written, and each tensor's data offset is
 * known when it is declared, so the data can follow in a stream.
 */


#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "fg_ggml_types.h"
#include "fg_gguf_write.h"


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


/* the typed scalars: each the bytes of its C type, one definition */
#define FG_GGUF_W_TYPED(name, ctype, type)                                    \
    int                                                                       \
    fg_gguf_w_##name(fg_gguf_writer_t *w, const char *key, ctype v)           \
    {                                                                         \
        return fg_gguf_w_scalar(w, key, type, &v);                            \
    }

FG_GGUF_W_TYPED(u32, uint32_t, FG_GGUF_UINT32)
FG_GGUF_W_TYPED(i32, int32_t, FG_GGUF_INT32)
FG_GGUF_W_TYPED(u64, uint64_t, FG_GGUF_UINT64)
FG_GGUF_W_TYPED(f32, float, FG_GGUF_FLOAT32)


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
