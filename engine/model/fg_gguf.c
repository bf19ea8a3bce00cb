
/*
 * fairgate: GGUF reader: the file's header, metadata entries and tensor
 * infos, read and checked once at open into arrays with hash indexes; the
 * values are then read with the typed getters of fg_gguf_get.c.
 *
 * The layout (GGUF v2 and v3 are the same but for v3's big-endian variant,
 * which is refused): "GGUF", u32 version, u64 tensor count, u64 metadata
 * count, the metadata entries (string key, u32 type, value), the tensor
 * infos (string name, u32 dims, u64 dims[], u32 type, u64 offset), padding
 * to the alignment, then the tensor data.  Strings are a u64 length and
 * bytes without NUL.  Everything is little-endian.
 */


#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>


#include "fg_hash.h"
#include "fg_ggml_types.h"
#include "fg_gguf.h"
#include "fg_gguf_int.h"
#include "fg_mem.h"


/*
 * The smallest metadata entry has a one-byte key (8 + 1 bytes), its type
 * (4) and a one-byte value; the smallest tensor info, a one-byte name
 * (8 + 1), no dimensions (4 for the count), its type (4) and offset (8).
 * A count that cannot fit in the bytes left is refused before anything is
 * allocated for it.
 */
#define FG_GGUF_MIN_KV       14
#define FG_GGUF_MIN_TENSOR   25
#define FG_GGUF_MAX_COUNT    (1ULL << 30)
#define FG_GGUF_MAX_KEY      65535


static const char  *fg_gguf_vtype_names[FG_GGUF_NTYPES] = {
    "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
    "bool", "string", "array", "uint64", "int64", "float64"
};


const uint8_t  fg_gguf_vtype_size[FG_GGUF_NTYPES] = {
    1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8
};


typedef struct {
    const uint8_t  *base;
    size_t          pos;
    size_t          size;
    char           *err;
    size_t          errlen;
    char            ctx[96 + FG_GGUF_MAX_NAME];   /* what is being read */
} fg_gguf_rd_t;


static int fg_gguf_need(fg_gguf_rd_t *rd, uint64_t n, const char *what);
static int fg_gguf_read_str(fg_gguf_rd_t *rd, fg_gguf_str_t *s,
    const char *what);
static int fg_gguf_read_value(fg_gguf_rd_t *rd, fg_gguf_kv_t *kv);
static int fg_gguf_read_scalar(fg_gguf_rd_t *rd, fg_gguf_kv_t *kv);
static int fg_gguf_read_array(fg_gguf_rd_t *rd, fg_gguf_kv_t *kv);
static int fg_gguf_read_strings(fg_gguf_rd_t *rd, fg_gguf_kv_t *kv);
static int fg_gguf_parse(fg_gguf_t *g, char *err, size_t errlen);
static int fg_gguf_parse_header(fg_gguf_rd_t *rd, fg_gguf_t *g);
static int fg_gguf_parse_counts(fg_gguf_rd_t *rd, fg_gguf_t *g);
static int fg_gguf_parse_kv(fg_gguf_rd_t *rd, fg_gguf_t *g, uint64_t i);
static int fg_gguf_parse_alignment(fg_gguf_t *g, char *err, size_t errlen);
static int fg_gguf_parse_tensor(fg_gguf_rd_t *rd, fg_gguf_t *g, uint64_t i);
static int fg_gguf_tensor_name(fg_gguf_rd_t *rd, fg_gguf_t *g,
    fg_gguf_tensor_t *t, uint64_t i);
static int fg_gguf_tensor_dims(fg_gguf_rd_t *rd, fg_gguf_tensor_t *t);
static int fg_gguf_tensor_size(fg_gguf_rd_t *rd, fg_gguf_t *g,
    fg_gguf_tensor_t *t);
static int fg_gguf_check_data(fg_gguf_t *g, char *err, size_t errlen);
static int fg_gguf_check_overlaps(fg_gguf_t *g, char *err, size_t errlen);
static uint32_t *fg_gguf_index_new(uint64_t n, uint64_t *mask);
static const void *fg_gguf_index_find(const uint32_t *index, uint64_t mask,
    const void *items, size_t stride, const char *s, size_t len,
    uint32_t **slot);


static int
fg_gguf_need(fg_gguf_rd_t *rd, uint64_t n, const char *what)
{
    if (n <= rd->size - rd->pos) {
        return 0;
    }

    fg_err_printf(rd->err, rd->errlen,
                  "truncated file: %s%s%s at offset %zu needs %llu bytes, "
                  "%zu left", rd->ctx, rd->ctx[0] ? ": " : "", what,
                  rd->pos, (unsigned long long) n, rd->size - rd->pos);
    return -1;
}


static int
fg_gguf_read_u32(fg_gguf_rd_t *rd, uint32_t *v, const char *what)
{
    if (fg_gguf_need(rd, 4, what) != 0) {
        return -1;
    }

    *v = fg_gguf_u32(rd->base + rd->pos);
    rd->pos += 4;

    return 0;
}


static int
fg_gguf_read_u64(fg_gguf_rd_t *rd, uint64_t *v, const char *what)
{
    if (fg_gguf_need(rd, 8, what) != 0) {
        return -1;
    }

    *v = fg_gguf_u64(rd->base + rd->pos);
    rd->pos += 8;

    return 0;
}


static int
fg_gguf_read_str(fg_gguf_rd_t *rd, fg_gguf_str_t *s, const char *what)
{
    uint64_t  len;

    if (fg_gguf_read_u64(rd, &len, what) != 0) {
        return -1;
    }

    if (fg_gguf_need(rd, len, what) != 0) {
        return -1;
    }

    s->len = len;
    s->data = (const char *) rd->base + rd->pos;
    rd->pos += len;

    return 0;
}


static int
fg_gguf_read_value(fg_gguf_rd_t *rd, fg_gguf_kv_t *kv)
{
    if (kv->type >= FG_GGUF_NTYPES) {
        fg_err_printf(rd->err, rd->errlen, "%s: unknown value type %u",
                      rd->ctx, kv->type);
        return -1;
    }

    if (kv->type == FG_GGUF_STRING) {
        return fg_gguf_read_str(rd, &kv->v.s, "string value");
    }

    if (kv->type == FG_GGUF_ARRAY) {
        return fg_gguf_read_array(rd, kv);
    }

    return fg_gguf_read_scalar(rd, kv);
}


/* a number or a bool, widened to 64 bits or to double */
static int
fg_gguf_read_scalar(fg_gguf_rd_t *rd, fg_gguf_kv_t *kv)
{
    uint64_t        n;
    const uint8_t  *p;

    n = fg_gguf_vtype_size[kv->type];

    if (fg_gguf_need(rd, n, "value") != 0) {
        return -1;
    }

    p = rd->base + rd->pos;
    rd->pos += n;

    switch (kv->type) {
    case FG_GGUF_UINT8:
    case FG_GGUF_BOOL:
        kv->v.u = p[0];
        break;
    case FG_GGUF_INT8:
        kv->v.i = (int8_t) p[0];
        break;
    case FG_GGUF_UINT16:
        kv->v.u = fg_gguf_u16(p);
        break;
    case FG_GGUF_INT16:
        kv->v.i = (int16_t) fg_gguf_u16(p);
        break;
    case FG_GGUF_UINT32:
        kv->v.u = fg_gguf_u32(p);
        break;
    case FG_GGUF_INT32:
        kv->v.i = (int32_t) fg_gguf_u32(p);
        break;
    case FG_GGUF_FLOAT32: {
        float  f;

        memcpy(&f, p, 4);
        kv->v.f = f;
        break;
    }
    case FG_GGUF_UINT64:
        kv->v.u = fg_gguf_u64(p);
        break;
    case FG_GGUF_INT64:
        kv->v.i = (int64_t) fg_gguf_u64(p);
        break;
    default: /* FG_GGUF_FLOAT64 */
        memcpy(&kv->v.f, p, 8);
        break;
    }

    return 0;
}


/* numeric elements stay in the file; strings are indexed */
static int
fg_gguf_read_array(fg_gguf_rd_t *rd, fg_gguf_kv_t *kv)
{
    uint64_t  n;
    uint32_t  atype;

    if (fg_gguf_read_u32(rd, &atype, "array element type") != 0
        || fg_gguf_read_u64(rd, &n, "array length") != 0)
    {
        return -1;
    }

    if (atype >= FG_GGUF_NTYPES) {
        fg_err_printf(rd->err, rd->errlen,
                      "%s: unknown array element type %u", rd->ctx, atype);
        return -1;
    }

    /* ggml refuses them too: no model has one */
    if (atype == FG_GGUF_ARRAY) {
        fg_err_printf(rd->err, rd->errlen,
                      "%s: arrays of arrays are not supported", rd->ctx);
        return -1;
    }

    kv->arr_type = atype;
    kv->n = n;

    if (atype == FG_GGUF_STRING) {
        return fg_gguf_read_strings(rd, kv);
    }

    /* n * size without overflow: compare n with what is left */
    if (n > (rd->size - rd->pos) / fg_gguf_vtype_size[atype]) {
        fg_err_printf(rd->err, rd->errlen,
                      "truncated file: %s: array of %llu %s elements "
                      "at offset %zu needs more than the %zu bytes left",
                      rd->ctx, (unsigned long long) n,
                      fg_gguf_vtype_names[atype], rd->pos,
                      rd->size - rd->pos);
        return -1;
    }

    kv->arr = rd->base + rd->pos;
    rd->pos += n * fg_gguf_vtype_size[atype];

    return 0;
}


static int
fg_gguf_read_strings(fg_gguf_rd_t *rd, fg_gguf_kv_t *kv)
{
    size_t    len;
    uint64_t  i, n;

    n = kv->n;

    if (n > (rd->size - rd->pos) / 8) {
        fg_err_printf(rd->err, rd->errlen,
                      "truncated file: %s: array of %llu strings at offset "
                      "%zu needs more than the %zu bytes left", rd->ctx,
                      (unsigned long long) n, rd->pos, rd->size - rd->pos);
        return -1;
    }

    kv->strs = malloc((n ? n : 1) * sizeof(fg_gguf_str_t));
    if (kv->strs == NULL) {
        fg_err_printf(rd->err, rd->errlen, "%s: out of memory", rd->ctx);
        return -1;
    }

    for (i = 0; i < n; i++) {
        if (fg_gguf_read_str(rd, &kv->strs[i], "string element") != 0) {
            /* say which element, after what fg_gguf_need() wrote */
            len = rd->err ? strlen(rd->err) : 0;

            if (rd->err && len < rd->errlen) {
                snprintf(rd->err + len, rd->errlen - len, " (element %llu)",
                         (unsigned long long) i);
            }

            return -1;
        }
    }

    return 0;
}


static uint32_t *
fg_gguf_index_new(uint64_t n, uint64_t *mask)
{
    uint64_t  cap;

    /* load factor at most one half: short probe runs */
    for (cap = 16; cap < 2 * n; cap *= 2) { /* void */ }

    *mask = cap - 1;

    return calloc(cap, sizeof(uint32_t));
}


/*
 * Finds s among items (each starting with an fg_gguf_str_t, stride bytes
 * apart); when slot is not NULL and s is absent, *slot is the empty slot
 * where it belongs.
 */
static const void *
fg_gguf_index_find(const uint32_t *index, uint64_t mask, const void *items,
    size_t stride, const char *s, size_t len, uint32_t **slot)
{
    uint64_t              h;
    const fg_gguf_str_t  *name;

    h = XXH3_64bits(s, len) & mask;

    for ( ;; ) {
        if (index[h] == 0) {
            if (slot) {
                *slot = (uint32_t *) &index[h];
            }

            return NULL;
        }

        name = (const fg_gguf_str_t *)
                   ((const char *) items + (size_t) (index[h] - 1) * stride);

        if (name->len == len && memcmp(name->data, s, len) == 0) {
            return name;
        }

        h = (h + 1) & mask;
    }
}


static int
fg_gguf_parse(fg_gguf_t *g, char *err, size_t errlen)
{
    uint64_t      i;
    fg_gguf_rd_t  rd;

    memset(&rd, 0, sizeof(rd));
    rd.base = g->base;
    rd.size = g->size;
    rd.err = err;
    rd.errlen = errlen;

    if (fg_gguf_parse_header(&rd, g) != 0
        || fg_gguf_parse_counts(&rd, g) != 0)
    {
        return -1;
    }

    for (i = 0; i < g->n_kv; i++) {
        if (fg_gguf_parse_kv(&rd, g, i) != 0) {
            return -1;
        }
    }

    if (fg_gguf_parse_alignment(g, err, errlen) != 0) {
        return -1;
    }

    for (i = 0; i < g->n_tensors; i++) {
        if (fg_gguf_parse_tensor(&rd, g, i) != 0) {
            return -1;
        }
    }

    /* pos <= size < 2^63: the sum cannot wrap */
    g->data_offset = ((uint64_t) rd.pos + g->alignment - 1)
                     & ~((uint64_t) g->alignment - 1);

    return fg_gguf_check_data(g, err, errlen);
}


/* the magic and the version */
static int
fg_gguf_parse_header(fg_gguf_rd_t *rd, fg_gguf_t *g)
{
    if (fg_gguf_need(rd, 4, "magic") != 0) {
        return -1;
    }

    if (memcmp(g->base, "GGUF", 4) != 0) {
        fg_err_printf(rd->err, rd->errlen,
                      "bad magic: not a GGUF file (starts with "
                      "%02x %02x %02x %02x, not \"GGUF\")", g->base[0],
                      g->base[1], g->base[2], g->base[3]);
        return -1;
    }

    rd->pos = 4;

    if (fg_gguf_read_u32(rd, &g->version, "version") != 0) {
        return -1;
    }

    /* a big-endian v3 file reads as a version with its low half zero */
    if ((g->version & 0xffff) == 0 && (g->version >> 16) != 0) {
        fg_err_printf(rd->err, rd->errlen,
                      "big-endian GGUF files are not supported (version "
                      "field 0x%08x)", g->version);
        return -1;
    }

    if (g->version != 2 && g->version != 3) {
        fg_err_printf(rd->err, rd->errlen,
                      "unsupported GGUF version %u (versions 2 and 3 are "
                      "supported)", g->version);
        return -1;
    }

    return 0;
}


/* the counts of entries and tensors, and the arrays that hold them */
static int
fg_gguf_parse_counts(fg_gguf_rd_t *rd, fg_gguf_t *g)
{
    if (fg_gguf_read_u64(rd, &g->n_tensors, "tensor count") != 0
        || fg_gguf_read_u64(rd, &g->n_kv, "metadata count") != 0)
    {
        return -1;
    }

    if (g->n_kv > FG_GGUF_MAX_COUNT
        || g->n_kv > (rd->size - rd->pos) / FG_GGUF_MIN_KV)
    {
        fg_err_printf(rd->err, rd->errlen,
                      "metadata count %llu is absurd for a file of %zu "
                      "bytes (or the file is truncated)",
                      (unsigned long long) g->n_kv, g->size);
        return -1;
    }

    if (g->n_tensors > FG_GGUF_MAX_COUNT
        || g->n_tensors > (rd->size - rd->pos) / FG_GGUF_MIN_TENSOR)
    {
        fg_err_printf(rd->err, rd->errlen,
                      "tensor count %llu is absurd for a file of %zu bytes "
                      "(or the file is truncated)",
                      (unsigned long long) g->n_tensors, g->size);
        return -1;
    }

    g->kv = calloc(g->n_kv ? g->n_kv : 1, sizeof(fg_gguf_kv_t));
    g->tensors = calloc(g->n_tensors ? g->n_tensors : 1,
                        sizeof(fg_gguf_tensor_t));
    g->kv_index = fg_gguf_index_new(g->n_kv, &g->kv_mask);
    g->tensor_index = fg_gguf_index_new(g->n_tensors, &g->tensor_mask);

    if (g->kv == NULL || g->tensors == NULL || g->kv_index == NULL
        || g->tensor_index == NULL)
    {
        fg_err_printf(rd->err, rd->errlen, "out of memory");
        return -1;
    }

    return 0;
}


/* metadata entry i: its key, unique, then its typed value */
static int
fg_gguf_parse_kv(fg_gguf_rd_t *rd, fg_gguf_t *g, uint64_t i)
{
    uint32_t      *slot;
    fg_gguf_kv_t  *kv;

    kv = &g->kv[i];

    snprintf(rd->ctx, sizeof(rd->ctx), "metadata entry %llu",
             (unsigned long long) i);

    if (fg_gguf_read_str(rd, &kv->key, "key") != 0) {
        return -1;
    }

    if (kv->key.len == 0 || kv->key.len > FG_GGUF_MAX_KEY) {
        fg_err_printf(rd->err, rd->errlen, "%s: key of %zu bytes (1 to %d)",
                      rd->ctx, kv->key.len, FG_GGUF_MAX_KEY);
        return -1;
    }

    snprintf(rd->ctx, sizeof(rd->ctx), "metadata '%.*s'",
             (int) (kv->key.len < 96 ? kv->key.len : 96), kv->key.data);

    if (fg_gguf_index_find(g->kv_index, g->kv_mask, g->kv,
                           sizeof(fg_gguf_kv_t), kv->key.data,
                           kv->key.len, &slot)
        != NULL)
    {
        fg_err_printf(rd->err, rd->errlen, "duplicate metadata key '%.*s'",
                      (int) (kv->key.len < 96 ? kv->key.len : 96),
                      kv->key.data);
        return -1;
    }

    *slot = (uint32_t) i + 1;

    if (fg_gguf_read_u32(rd, &kv->type, "value type") != 0
        || fg_gguf_read_value(rd, kv) != 0)
    {
        return -1;
    }

    return 0;
}


/* general.alignment: uint32 alone, as ggml reads it, and a power of two */
static int
fg_gguf_parse_alignment(fg_gguf_t *g, char *err, size_t errlen)
{
    const fg_gguf_kv_t  *kv;

    g->alignment = FG_GGUF_DEFAULT_ALIGNMENT;

    kv = fg_gguf_find_kv(g, "general.alignment");

    if (kv == NULL) {
        return 0;
    }

    if (kv->type != FG_GGUF_UINT32) {
        fg_err_printf(err, errlen,
                      "general.alignment has type %s, not uint32",
                      fg_gguf_vtype_name(kv->type));
        return -1;
    }

    if (kv->v.u == 0 || (kv->v.u & (kv->v.u - 1)) != 0) {
        fg_err_printf(err, errlen,
                      "general.alignment %llu is not a power of two",
                      (unsigned long long) kv->v.u);
        return -1;
    }

    g->alignment = (uint32_t) kv->v.u;

    return 0;
}


/* tensor info i: name, dimensions, type and offset */
static int
fg_gguf_parse_tensor(fg_gguf_rd_t *rd, fg_gguf_t *g, uint64_t i)
{
    fg_gguf_tensor_t  *t;

    t = &g->tensors[i];

    if (fg_gguf_tensor_name(rd, g, t, i) != 0
        || fg_gguf_tensor_dims(rd, t) != 0)
    {
        return -1;
    }

    if (fg_gguf_read_u32(rd, &t->type, "type") != 0
        || fg_gguf_read_u64(rd, &t->offset, "offset") != 0)
    {
        return -1;
    }

    return fg_gguf_tensor_size(rd, g, t);
}


static int
fg_gguf_tensor_name(fg_gguf_rd_t *rd, fg_gguf_t *g, fg_gguf_tensor_t *t,
    uint64_t i)
{
    uint32_t  *slot;

    snprintf(rd->ctx, sizeof(rd->ctx), "tensor info %llu",
             (unsigned long long) i);

    if (fg_gguf_read_str(rd, &t->name, "name") != 0) {
        return -1;
    }

    if (t->name.len == 0) {
        fg_err_printf(rd->err, rd->errlen, "%s: empty tensor name", rd->ctx);
        return -1;
    }

    if (t->name.len > FG_GGUF_MAX_NAME) {
        fg_err_printf(rd->err, rd->errlen,
                      "%s: tensor name '%.*s...' is too long (%zu bytes, at "
                      "most %d)", rd->ctx, FG_GGUF_MAX_NAME, t->name.data,
                      t->name.len, FG_GGUF_MAX_NAME);
        return -1;
    }

    snprintf(rd->ctx, sizeof(rd->ctx), "tensor '%.*s'", (int) t->name.len,
             t->name.data);

    if (fg_gguf_index_find(g->tensor_index, g->tensor_mask, g->tensors,
                           sizeof(fg_gguf_tensor_t), t->name.data,
                           t->name.len, &slot)
        != NULL)
    {
        fg_err_printf(rd->err, rd->errlen, "duplicate tensor name '%.*s'",
                      (int) t->name.len, t->name.data);
        return -1;
    }

    *slot = (uint32_t) i + 1;

    return 0;
}


static int
fg_gguf_tensor_dims(fg_gguf_rd_t *rd, fg_gguf_tensor_t *t)
{
    uint32_t  d;
    uint64_t  n;

    if (fg_gguf_read_u32(rd, &t->n_dims, "dimension count") != 0) {
        return -1;
    }

    if (t->n_dims > FG_GGUF_MAX_DIMS) {
        fg_err_printf(rd->err, rd->errlen,
                      "%s: %u dimensions (at most %d)", rd->ctx, t->n_dims,
                      FG_GGUF_MAX_DIMS);
        return -1;
    }

    n = 1;

    for (d = 0; d < FG_GGUF_MAX_DIMS; d++) {
        t->ne[d] = 1;

        if (d >= t->n_dims) {
            continue;
        }

        if (fg_gguf_read_u64(rd, &t->ne[d], "dimension") != 0) {
            return -1;
        }

        /* ggml counts elements in int64_t */
        if (t->ne[d] == 0 || t->ne[d] > (uint64_t) INT64_MAX / n) {
            fg_err_printf(rd->err, rd->errlen,
                          "%s: dimension %u of %llu %s", rd->ctx, d,
                          (unsigned long long) t->ne[d],
                          t->ne[d] == 0 ? "is empty"
                                        : "overflows the element count");
            return -1;
        }

        n *= t->ne[d];
    }

    t->n_elements = n;

    return 0;
}


/* the byte size its type gives, and an aligned offset */
static int
fg_gguf_tensor_size(fg_gguf_rd_t *rd, fg_gguf_t *g, fg_gguf_tensor_t *t)
{
    uint32_t     blck, size;
    uint64_t     n;
    const char  *name;

    name = fg_ggml_type_name(t->type);

    if (name == NULL) {
        fg_err_printf(rd->err, rd->errlen, "%s: unknown tensor type %u",
                      rd->ctx, t->type);
        return -1;
    }

    n = t->n_elements;
    blck = fg_ggml_block_size(t->type);
    size = fg_ggml_type_size(t->type);

    if (t->ne[0] % blck != 0) {
        fg_err_printf(rd->err, rd->errlen,
                      "%s: first dimension %llu is not a multiple of %s's "
                      "block of %u", rd->ctx, (unsigned long long) t->ne[0],
                      name, blck);
        return -1;
    }

    if (n / blck > (uint64_t) INT64_MAX / size) {
        fg_err_printf(rd->err, rd->errlen,
                      "%s: %llu elements of %s overflow the byte size",
                      rd->ctx, (unsigned long long) n, name);
        return -1;
    }

    t->size = n / blck * size;

    if (t->offset % g->alignment != 0) {
        fg_err_printf(rd->err, rd->errlen,
                      "%s: data offset %llu is not a multiple of the "
                      "alignment %u", rd->ctx,
                      (unsigned long long) t->offset, g->alignment);
        return -1;
    }

    return 0;
}


/* every tensor's bytes lie in the file's data section */
static int
fg_gguf_check_data(fg_gguf_t *g, char *err, size_t errlen)
{
    uint64_t           i, data_size;
    fg_gguf_tensor_t  *t;

    if (g->n_tensors == 0) {
        return 0;
    }

    if (g->data_offset > g->size) {
        fg_err_printf(err, errlen,
                      "truncated file: the tensor data would start at "
                      "offset %llu, past the end of the file (%zu bytes)",
                      (unsigned long long) g->data_offset, g->size);
        return -1;
    }

    data_size = g->size - g->data_offset;

    for (i = 0; i < g->n_tensors; i++) {
        t = &g->tensors[i];

        if (t->offset > data_size || t->size > data_size - t->offset) {
            fg_err_printf(err, errlen,
                          "truncated file: tensor '%.*s' (%s, %llu bytes at "
                          "data offset %llu) lies outside the %llu bytes of "
                          "tensor data", (int) t->name.len, t->name.data,
                          fg_ggml_type_name(t->type),
                          (unsigned long long) t->size,
                          (unsigned long long) t->offset,
                          (unsigned long long) data_size);
            return -1;
        }

        t->data = g->base + g->data_offset + t->offset;
    }

    return fg_gguf_check_overlaps(g, err, errlen);
}


static int
fg_gguf_cmp_offset(const void *a, const void *b)
{
    const fg_gguf_tensor_t  *ta, *tb;

    ta = *(const fg_gguf_tensor_t * const *) a;
    tb = *(const fg_gguf_tensor_t * const *) b;

    return (ta->offset > tb->offset) - (ta->offset < tb->offset);
}


/* a tensor's bytes must be its own: no overlaps */
static int
fg_gguf_check_overlaps(fg_gguf_t *g, char *err, size_t errlen)
{
    uint64_t            i;
    fg_gguf_tensor_t  **sorted;

    sorted = malloc(g->n_tensors * sizeof(fg_gguf_tensor_t *));
    if (sorted == NULL) {
        fg_err_printf(err, errlen, "out of memory");
        return -1;
    }

    for (i = 0; i < g->n_tensors; i++) {
        sorted[i] = &g->tensors[i];
    }

    qsort(sorted, g->n_tensors, sizeof(fg_gguf_tensor_t *),
          fg_gguf_cmp_offset);

    for (i = 1; i < g->n_tensors; i++) {
        if (sorted[i - 1]->offset + sorted[i - 1]->size > sorted[i]->offset)
        {
            fg_err_printf(err, errlen,
                          "tensors '%.*s' and '%.*s' overlap (%llu bytes at "
                          "%llu, data at %llu): wrong tensor sizes",
                          (int) sorted[i - 1]->name.len,
                          sorted[i - 1]->name.data,
                          (int) sorted[i]->name.len, sorted[i]->name.data,
                          (unsigned long long) sorted[i - 1]->size,
                          (unsigned long long) sorted[i - 1]->offset,
                          (unsigned long long) sorted[i]->offset);
            free(sorted);
            return -1;
        }
    }

    free(sorted);

    return 0;
}


fg_gguf_t *
fg_gguf_open_mem(const void *buf, size_t size, char *err, size_t errlen)
{
    fg_gguf_t  *g;

    g = calloc(1, sizeof(fg_gguf_t));
    if (g == NULL) {
        fg_err_printf(err, errlen, "out of memory");
        return NULL;
    }

    g->base = buf;
    g->size = size;

    if (fg_gguf_parse(g, err, errlen) != 0) {
        fg_gguf_close(g);
        return NULL;
    }

    return g;
}


fg_gguf_t *
fg_gguf_open(const char *path, char *err, size_t errlen)
{
    int          fd;
    void        *p;
    size_t       len, plen;
    fg_gguf_t   *g;
    struct stat  st;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd == -1) {
        fg_err_printf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }

    if (fstat(fd, &st) == -1) {
        fg_err_printf(err, errlen, "%s: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }

    if (!S_ISREG(st.st_mode)) {
        fg_err_printf(err, errlen, "%s: not a regular file", path);
        close(fd);
        return NULL;
    }

    if (st.st_size < 4) {
        fg_err_printf(err, errlen, "%s: truncated file: %lld bytes, not "
                      "even the magic", path, (long long) st.st_size);
        close(fd);
        return NULL;
    }

    p = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);

    if (p == MAP_FAILED) {
        fg_err_printf(err, errlen, "%s: mmap: %s", path, strerror(errno));
        return NULL;
    }

    g = fg_gguf_open_mem(p, st.st_size, err, errlen);

    if (g == NULL) {
        munmap(p, st.st_size);

        /* put the path in front of the message */
        plen = strlen(path) + 2;

        if (err && plen < errlen) {
            len = strnlen(err, errlen - 1);

            if (len > errlen - 1 - plen) {
                len = errlen - 1 - plen;
            }

            memmove(err + plen, err, len);
            err[plen + len] = '\0';
            memcpy(err, path, plen - 2);
            memcpy(err + plen - 2, ": ", 2);
        }

        return NULL;
    }

    g->mapped = 1;

    return g;
}


void
fg_gguf_close(fg_gguf_t *g)
{
    uint64_t  i;

    if (g == NULL) {
        return;
    }

    if (g->kv) {
        for (i = 0; i < g->n_kv; i++) {
            free(g->kv[i].strs);
        }
    }

    fg_free_all(g->kv, g->tensors, g->kv_index, g->tensor_index);

    if (g->mapped) {
        munmap((void *) g->base, g->size);
    }

    free(g);
}


const fg_gguf_kv_t *
fg_gguf_find_kv(const fg_gguf_t *g, const char *key)
{
    return fg_gguf_index_find(g->kv_index, g->kv_mask, g->kv,
                              sizeof(fg_gguf_kv_t), key, strlen(key), NULL);
}


const fg_gguf_tensor_t *
fg_gguf_find_tensor(const fg_gguf_t *g, const char *name)
{
    return fg_gguf_index_find(g->tensor_index, g->tensor_mask, g->tensors,
                              sizeof(fg_gguf_tensor_t), name, strlen(name),
                              NULL);
}


const char *
fg_gguf_vtype_name(uint32_t type)
{
    return type < FG_GGUF_NTYPES ? fg_gguf_vtype_names[type] : "unknown";
}


int
fg_gguf_str_eq(fg_gguf_str_t s, const char *cstr)
{
    size_t  len;

    len = strlen(cstr);

    return s.len == len && memcmp(s.data, cstr, len) == 0;
}
