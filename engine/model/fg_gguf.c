
/*
 * fairgate: GGUF reader.
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
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>


#include "fg_hash.h"
#include "fg_gguf.h"


#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "fg_gguf reads little-endian files in place: little-endian hosts only"
#endif


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


typedef struct {
    const char  *name;
    uint32_t     blck;
    uint32_t     size;
} fg_ggml_type_info_t;


/*
 * Block sizes and bytes per block of every type ggml has numbered, so that
 * a file with types the engine cannot compute still parses (and says which
 * tensor is the problem); numbers that ggml retired stay unknown.
 */
static const fg_ggml_type_info_t  fg_ggml_types[FG_GGML_NTYPES] = {
    [0]  = { "f32",     1,   4 },
    [1]  = { "f16",     1,   2 },
    [2]  = { "q4_0",    32,  18 },
    [3]  = { "q4_1",    32,  20 },
    [6]  = { "q5_0",    32,  22 },
    [7]  = { "q5_1",    32,  24 },
    [8]  = { "q8_0",    32,  34 },
    [9]  = { "q8_1",    32,  36 },
    [10] = { "q2_K",    256, 84 },
    [11] = { "q3_K",    256, 110 },
    [12] = { "q4_K",    256, 144 },
    [13] = { "q5_K",    256, 176 },
    [14] = { "q6_K",    256, 210 },
    [15] = { "q8_K",    256, 292 },
    [16] = { "iq2_xxs", 256, 66 },
    [17] = { "iq2_xs",  256, 74 },
    [18] = { "iq3_xxs", 256, 98 },
    [19] = { "iq1_s",   256, 50 },
    [20] = { "iq4_nl",  32,  18 },
    [21] = { "iq3_s",   256, 110 },
    [22] = { "iq2_s",   256, 82 },
    [23] = { "iq4_xs",  256, 136 },
    [24] = { "i8",      1,   1 },
    [25] = { "i16",     1,   2 },
    [26] = { "i32",     1,   4 },
    [27] = { "i64",     1,   8 },
    [28] = { "f64",     1,   8 },
    [29] = { "iq1_m",   256, 56 },
    [30] = { "bf16",    1,   2 },
    [34] = { "tq1_0",   256, 54 },
    [35] = { "tq2_0",   256, 66 },
    [39] = { "mxfp4",   32,  17 },
};


static const char  *fg_gguf_vtype_names[FG_GGUF_NTYPES] = {
    "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
    "bool", "string", "array", "uint64", "int64", "float64"
};


/* bytes of one scalar of each value type; strings and arrays vary */
static const uint8_t  fg_gguf_vtype_size[FG_GGUF_NTYPES] = {
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


static void fg_gguf_error(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fg_gguf_need(fg_gguf_rd_t *rd, uint64_t n, const char *what);
static int fg_gguf_read_str(fg_gguf_rd_t *rd, fg_gguf_str_t *s,
    const char *what);
static int fg_gguf_read_value(fg_gguf_rd_t *rd, fg_gguf_kv_t *kv);
static int fg_gguf_parse(fg_gguf_t *g, char *err, size_t errlen);
static int fg_gguf_parse_tensor(fg_gguf_rd_t *rd, fg_gguf_t *g, uint64_t i);
static int fg_gguf_check_data(fg_gguf_t *g, char *err, size_t errlen);
static uint32_t *fg_gguf_index_new(uint64_t n, uint64_t *mask);
static const void *fg_gguf_index_find(const uint32_t *index, uint64_t mask,
    const void *items, size_t stride, const char *s, size_t len,
    uint32_t **slot);
static int fg_gguf_kv_int(const fg_gguf_kv_t *kv, int64_t *i, uint64_t *u);


static void
fg_gguf_error(char *err, size_t errlen, const char *fmt, ...)
{
    va_list  args;

    if (err == NULL || errlen == 0) {
        return;
    }

    va_start(args, fmt);
    vsnprintf(err, errlen, fmt, args);
    va_end(args);
}


static inline uint16_t
fg_gguf_u16(const uint8_t *p)
{
    uint16_t  v;

    memcpy(&v, p, sizeof(v));
    return v;
}


static inline uint32_t
fg_gguf_u32(const uint8_t *p)
{
    uint32_t  v;

    memcpy(&v, p, sizeof(v));
    return v;
}


static inline uint64_t
fg_gguf_u64(const uint8_t *p)
{
    uint64_t  v;

    memcpy(&v, p, sizeof(v));
    return v;
}


static int
fg_gguf_need(fg_gguf_rd_t *rd, uint64_t n, const char *what)
{
    if (n <= rd->size - rd->pos) {
        return 0;
    }

    fg_gguf_error(rd->err, rd->errlen,
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
    uint64_t        i, n;
    uint32_t        atype;
    const uint8_t  *p;

    if (kv->type >= FG_GGUF_NTYPES) {
        fg_gguf_error(rd->err, rd->errlen, "%s: unknown value type %u",
                      rd->ctx, kv->type);
        return -1;
    }

    if (kv->type == FG_GGUF_STRING) {
        return fg_gguf_read_str(rd, &kv->v.s, "string value");
    }

    if (kv->type != FG_GGUF_ARRAY) {
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

    if (fg_gguf_read_u32(rd, &atype, "array element type") != 0
        || fg_gguf_read_u64(rd, &n, "array length") != 0)
    {
        return -1;
    }

    if (atype >= FG_GGUF_NTYPES) {
        fg_gguf_error(rd->err, rd->errlen,
                      "%s: unknown array element type %u", rd->ctx, atype);
        return -1;
    }

    /* ggml refuses them too: no model has one */
    if (atype == FG_GGUF_ARRAY) {
        fg_gguf_error(rd->err, rd->errlen,
                      "%s: arrays of arrays are not supported", rd->ctx);
        return -1;
    }

    kv->arr_type = atype;
    kv->n = n;

    if (atype != FG_GGUF_STRING) {
        /* n * size without overflow: compare n with what is left */
        if (n > (rd->size - rd->pos) / fg_gguf_vtype_size[atype]) {
            fg_gguf_error(rd->err, rd->errlen,
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

    if (n > (rd->size - rd->pos) / 8) {
        fg_gguf_error(rd->err, rd->errlen,
                      "truncated file: %s: array of %llu strings at offset "
                      "%zu needs more than the %zu bytes left", rd->ctx,
                      (unsigned long long) n, rd->pos, rd->size - rd->pos);
        return -1;
    }

    kv->strs = malloc((n ? n : 1) * sizeof(fg_gguf_str_t));
    if (kv->strs == NULL) {
        fg_gguf_error(rd->err, rd->errlen, "%s: out of memory", rd->ctx);
        return -1;
    }

    for (i = 0; i < n; i++) {
        if (fg_gguf_read_str(rd, &kv->strs[i], "string element") != 0) {
            /* say which element, after what fg_gguf_need() wrote */
            size_t  len = strlen(rd->err);

            if (len < rd->errlen) {
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
    uint32_t       *slot;
    uint64_t        i;
    fg_gguf_kv_t   *kv;
    fg_gguf_rd_t    rd;

    memset(&rd, 0, sizeof(rd));
    rd.base = g->base;
    rd.size = g->size;
    rd.err = err;
    rd.errlen = errlen;

    if (fg_gguf_need(&rd, 4, "magic") != 0) {
        return -1;
    }

    if (memcmp(g->base, "GGUF", 4) != 0) {
        fg_gguf_error(err, errlen,
                      "bad magic: not a GGUF file (starts with "
                      "%02x %02x %02x %02x, not \"GGUF\")", g->base[0],
                      g->base[1], g->base[2], g->base[3]);
        return -1;
    }

    rd.pos = 4;

    if (fg_gguf_read_u32(&rd, &g->version, "version") != 0) {
        return -1;
    }

    /* a big-endian v3 file reads as a version with its low half zero */
    if ((g->version & 0xffff) == 0 && (g->version >> 16) != 0) {
        fg_gguf_error(err, errlen,
                      "big-endian GGUF files are not supported (version "
                      "field 0x%08x)", g->version);
        return -1;
    }

    if (g->version != 2 && g->version != 3) {
        fg_gguf_error(err, errlen,
                      "unsupported GGUF version %u (versions 2 and 3 are "
                      "supported)", g->version);
        return -1;
    }

    if (fg_gguf_read_u64(&rd, &g->n_tensors, "tensor count") != 0
        || fg_gguf_read_u64(&rd, &g->n_kv, "metadata count") != 0)
    {
        return -1;
    }

    if (g->n_kv > FG_GGUF_MAX_COUNT
        || g->n_kv > (rd.size - rd.pos) / FG_GGUF_MIN_KV)
    {
        fg_gguf_error(err, errlen,
                      "metadata count %llu is absurd for a file of %zu "
                      "bytes (or the file is truncated)",
                      (unsigned long long) g->n_kv, g->size);
        return -1;
    }

    if (g->n_tensors > FG_GGUF_MAX_COUNT
        || g->n_tensors > (rd.size - rd.pos) / FG_GGUF_MIN_TENSOR)
    {
        fg_gguf_error(err, errlen,
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
        fg_gguf_error(err, errlen, "out of memory");
        return -1;
    }

    for (i = 0; i < g->n_kv; i++) {
        kv = &g->kv[i];

        snprintf(rd.ctx, sizeof(rd.ctx), "metadata entry %llu",
                 (unsigned long long) i);

        if (fg_gguf_read_str(&rd, &kv->key, "key") != 0) {
            return -1;
        }

        if (kv->key.len == 0 || kv->key.len > FG_GGUF_MAX_KEY) {
            fg_gguf_error(err, errlen, "%s: key of %zu bytes (1 to %d)",
                          rd.ctx, kv->key.len, FG_GGUF_MAX_KEY);
            return -1;
        }

        snprintf(rd.ctx, sizeof(rd.ctx), "metadata '%.*s'",
                 (int) (kv->key.len < 96 ? kv->key.len : 96), kv->key.data);

        if (fg_gguf_index_find(g->kv_index, g->kv_mask, g->kv,
                               sizeof(fg_gguf_kv_t), kv->key.data,
                               kv->key.len, &slot)
            != NULL)
        {
            fg_gguf_error(err, errlen, "duplicate metadata key '%.*s'",
                          (int) (kv->key.len < 96 ? kv->key.len : 96),
                          kv->key.data);
            return -1;
        }

        *slot = (uint32_t) i + 1;

        if (fg_gguf_read_u32(&rd, &kv->type, "value type") != 0
            || fg_gguf_read_value(&rd, kv) != 0)
        {
            return -1;
        }
    }

    g->alignment = FG_GGUF_DEFAULT_ALIGNMENT;

    kv = (fg_gguf_kv_t *) fg_gguf_find_kv(g, "general.alignment");

    if (kv) {
        if (kv->type != FG_GGUF_UINT32) {
            fg_gguf_error(err, errlen,
                          "general.alignment has type %s, not uint32",
                          fg_gguf_vtype_name(kv->type));
            return -1;
        }

        if (kv->v.u == 0 || (kv->v.u & (kv->v.u - 1)) != 0) {
            fg_gguf_error(err, errlen,
                          "general.alignment %llu is not a power of two",
                          (unsigned long long) kv->v.u);
            return -1;
        }

        g->alignment = (uint32_t) kv->v.u;
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


static int
fg_gguf_parse_tensor(fg_gguf_rd_t *rd, fg_gguf_t *g, uint64_t i)
{
    uint32_t                  *slot, d, blck;
    uint64_t                   n;
    fg_gguf_tensor_t          *t;
    const fg_ggml_type_info_t *ti;

    t = &g->tensors[i];

    snprintf(rd->ctx, sizeof(rd->ctx), "tensor info %llu",
             (unsigned long long) i);

    if (fg_gguf_read_str(rd, &t->name, "name") != 0) {
        return -1;
    }

    if (t->name.len == 0) {
        fg_gguf_error(rd->err, rd->errlen, "%s: empty tensor name", rd->ctx);
        return -1;
    }

    if (t->name.len > FG_GGUF_MAX_NAME) {
        fg_gguf_error(rd->err, rd->errlen,
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
        fg_gguf_error(rd->err, rd->errlen, "duplicate tensor name '%.*s'",
                      (int) t->name.len, t->name.data);
        return -1;
    }

    *slot = (uint32_t) i + 1;

    if (fg_gguf_read_u32(rd, &t->n_dims, "dimension count") != 0) {
        return -1;
    }

    if (t->n_dims > FG_GGUF_MAX_DIMS) {
        fg_gguf_error(rd->err, rd->errlen,
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
            fg_gguf_error(rd->err, rd->errlen,
                          "%s: dimension %u of %llu %s", rd->ctx, d,
                          (unsigned long long) t->ne[d],
                          t->ne[d] == 0 ? "is empty"
                                        : "overflows the element count");
            return -1;
        }

        n *= t->ne[d];
    }

    t->n_elements = n;

    if (fg_gguf_read_u32(rd, &t->type, "type") != 0
        || fg_gguf_read_u64(rd, &t->offset, "offset") != 0)
    {
        return -1;
    }

    ti = t->type < FG_GGML_NTYPES ? &fg_ggml_types[t->type] : NULL;

    if (ti == NULL || ti->name == NULL) {
        fg_gguf_error(rd->err, rd->errlen, "%s: unknown tensor type %u",
                      rd->ctx, t->type);
        return -1;
    }

    blck = ti->blck;

    if (t->ne[0] % blck != 0) {
        fg_gguf_error(rd->err, rd->errlen,
                      "%s: first dimension %llu is not a multiple of %s's "
                      "block of %u", rd->ctx, (unsigned long long) t->ne[0],
                      ti->name, blck);
        return -1;
    }

    if (n / blck > (uint64_t) INT64_MAX / ti->size) {
        fg_gguf_error(rd->err, rd->errlen,
                      "%s: %llu elements of %s overflow the byte size",
                      rd->ctx, (unsigned long long) n, ti->name);
        return -1;
    }

    t->size = n / blck * ti->size;

    if (t->offset % g->alignment != 0) {
        fg_gguf_error(rd->err, rd->errlen,
                      "%s: data offset %llu is not a multiple of the "
                      "alignment %u", rd->ctx,
                      (unsigned long long) t->offset, g->alignment);
        return -1;
    }

    return 0;
}


static int
fg_gguf_cmp_offset(const void *a, const void *b)
{
    const fg_gguf_tensor_t  *ta, *tb;

    ta = *(const fg_gguf_tensor_t * const *) a;
    tb = *(const fg_gguf_tensor_t * const *) b;

    return (ta->offset > tb->offset) - (ta->offset < tb->offset);
}


static int
fg_gguf_check_data(fg_gguf_t *g, char *err, size_t errlen)
{
    uint64_t           i, data_size;
    fg_gguf_tensor_t  *t, **sorted;

    if (g->n_tensors == 0) {
        return 0;
    }

    if (g->data_offset > g->size) {
        fg_gguf_error(err, errlen,
                      "truncated file: the tensor data would start at "
                      "offset %llu, past the end of the file (%zu bytes)",
                      (unsigned long long) g->data_offset, g->size);
        return -1;
    }

    data_size = g->size - g->data_offset;

    for (i = 0; i < g->n_tensors; i++) {
        t = &g->tensors[i];

        if (t->offset > data_size || t->size > data_size - t->offset) {
            fg_gguf_error(err, errlen,
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

    /* a tensor's bytes must be its own: no overlaps */
    sorted = malloc(g->n_tensors * sizeof(fg_gguf_tensor_t *));
    if (sorted == NULL) {
        fg_gguf_error(err, errlen, "out of memory");
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
            fg_gguf_error(err, errlen,
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
        fg_gguf_error(err, errlen, "out of memory");
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
        fg_gguf_error(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }

    if (fstat(fd, &st) == -1) {
        fg_gguf_error(err, errlen, "%s: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }

    if (!S_ISREG(st.st_mode)) {
        fg_gguf_error(err, errlen, "%s: not a regular file", path);
        close(fd);
        return NULL;
    }

    if (st.st_size < 4) {
        fg_gguf_error(err, errlen, "%s: truncated file: %lld bytes, not "
                      "even the magic", path, (long long) st.st_size);
        close(fd);
        return NULL;
    }

    p = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);

    if (p == MAP_FAILED) {
        fg_gguf_error(err, errlen, "%s: mmap: %s", path, strerror(errno));
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

    free(g->kv);
    free(g->tensors);
    free(g->kv_index);
    free(g->tensor_index);

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


/* the integer in kv as both signed and unsigned; -1 when not an integer */
static int
fg_gguf_kv_int(const fg_gguf_kv_t *kv, int64_t *i, uint64_t *u)
{
    switch (kv->type) {
    case FG_GGUF_UINT8:
    case FG_GGUF_UINT16:
    case FG_GGUF_UINT32:
    case FG_GGUF_UINT64:
        *u = kv->v.u;
        *i = kv->v.u > (uint64_t) INT64_MAX ? -1 : (int64_t) kv->v.u;
        return kv->v.u > (uint64_t) INT64_MAX ? 1 : 0;

    case FG_GGUF_INT8:
    case FG_GGUF_INT16:
    case FG_GGUF_INT32:
    case FG_GGUF_INT64:
        *i = kv->v.i;
        *u = kv->v.i < 0 ? 0 : (uint64_t) kv->v.i;
        return kv->v.i < 0 ? 2 : 0;

    default:
        return -1;
    }
}


static int
fg_gguf_wrong_type(const fg_gguf_kv_t *kv, const char *key, const char *want,
    char *err, size_t errlen)
{
    fg_gguf_error(err, errlen, "metadata '%s' has type %s, not %s", key,
                  fg_gguf_vtype_name(kv->type), want);
    return -1;
}


/* the kv of key if it has the type: 1 when missing, -1 when another type */
static int
fg_gguf_typed_kv(const fg_gguf_t *g, const char *key, uint32_t type,
    const char *want, const fg_gguf_kv_t **out, char *err, size_t errlen)
{
    const fg_gguf_kv_t  *kv;

    kv = fg_gguf_find_kv(g, key);
    if (kv == NULL) {
        return 1;
    }

    if (kv->type != type) {
        return fg_gguf_wrong_type(kv, key, want, err, errlen);
    }

    *out = kv;

    return 0;
}


/* the integer at key, in [min, max]: 1 when missing, -1 when not so */
static int
fg_gguf_get_int(const fg_gguf_t *g, const char *key, int64_t min,
    uint64_t max, int64_t *out, char *err, size_t errlen)
{
    int                  rc;
    int64_t              i;
    uint64_t             u;
    const fg_gguf_kv_t  *kv;

    kv = fg_gguf_find_kv(g, key);
    if (kv == NULL) {
        return 1;
    }

    rc = fg_gguf_kv_int(kv, &i, &u);

    if (rc == -1) {
        return fg_gguf_wrong_type(kv, key, "an integer", err, errlen);
    }

    /* a negative value is only in i, one above INT64_MAX only in u */
    if (rc == 2 && i < min) {
        fg_gguf_error(err, errlen, "metadata '%s' = %lld is out of range",
                      key, (long long) i);
        return -1;
    }

    if (rc != 2 && u > max) {
        fg_gguf_error(err, errlen, "metadata '%s' = %llu is out of range",
                      key, (unsigned long long) u);
        return -1;
    }

    *out = i;

    return 0;
}


int
fg_gguf_get_u32(const fg_gguf_t *g, const char *key, uint32_t *out,
    char *err, size_t errlen)
{
    int      rc;
    int64_t  v;

    rc = fg_gguf_get_int(g, key, 0, UINT32_MAX, &v, err, errlen);
    if (rc != 0) {
        return rc;
    }

    *out = (uint32_t) v;

    return 0;
}


int
fg_gguf_get_i64(const fg_gguf_t *g, const char *key, int64_t *out,
    char *err, size_t errlen)
{
    return fg_gguf_get_int(g, key, INT64_MIN, INT64_MAX, out, err, errlen);
}


int
fg_gguf_get_f32(const fg_gguf_t *g, const char *key, float *out,
    char *err, size_t errlen)
{
    int64_t              i;
    uint64_t             u;
    const fg_gguf_kv_t  *kv;

    kv = fg_gguf_find_kv(g, key);
    if (kv == NULL) {
        return 1;
    }

    if (kv->type == FG_GGUF_FLOAT32 || kv->type == FG_GGUF_FLOAT64) {
        /* a double beyond float's range is infinite, not undefined */
        *out = kv->v.f > FLT_MAX ? INFINITY
               : kv->v.f < -FLT_MAX ? -INFINITY : (float) kv->v.f;
        return 0;
    }

    switch (fg_gguf_kv_int(kv, &i, &u)) {
    case -1:
        return fg_gguf_wrong_type(kv, key, "a number", err, errlen);
    case 1:
        *out = (float) u;
        return 0;
    default:
        *out = (float) i;
        return 0;
    }
}


int
fg_gguf_get_bool(const fg_gguf_t *g, const char *key, int *out,
    char *err, size_t errlen)
{
    int                  rc;
    const fg_gguf_kv_t  *kv;

    rc = fg_gguf_typed_kv(g, key, FG_GGUF_BOOL, "bool", &kv, err, errlen);
    if (rc != 0) {
        return rc;
    }

    *out = kv->v.u != 0;

    return 0;
}


int
fg_gguf_get_str(const fg_gguf_t *g, const char *key, fg_gguf_str_t *out,
    char *err, size_t errlen)
{
    int                  rc;
    const fg_gguf_kv_t  *kv;

    rc = fg_gguf_typed_kv(g, key, FG_GGUF_STRING, "string", &kv, err, errlen);
    if (rc != 0) {
        return rc;
    }

    *out = kv->v.s;

    return 0;
}


int
fg_gguf_get_arr(const fg_gguf_t *g, const char *key, uint32_t arr_type,
    const fg_gguf_kv_t **out, char *err, size_t errlen)
{
    int                  rc;
    const fg_gguf_kv_t  *kv;

    rc = fg_gguf_typed_kv(g, key, FG_GGUF_ARRAY, "array", &kv, err, errlen);
    if (rc != 0) {
        return rc;
    }

    if (kv->arr_type != arr_type) {
        fg_gguf_error(err, errlen,
                      "metadata '%s' is an array of %s, not of %s", key,
                      fg_gguf_vtype_name(kv->arr_type),
                      fg_gguf_vtype_name(arr_type));
        return -1;
    }

    *out = kv;

    return 0;
}


int64_t
fg_gguf_arr_i64(const fg_gguf_kv_t *kv, uint64_t i)
{
    double          d;
    const uint8_t  *p;

    p = kv->arr + i * fg_gguf_vtype_size[kv->arr_type];

    switch (kv->arr_type) {
    case FG_GGUF_UINT8:
    case FG_GGUF_BOOL:
        return p[0];
    case FG_GGUF_INT8:
        return (int8_t) p[0];
    case FG_GGUF_UINT16:
        return fg_gguf_u16(p);
    case FG_GGUF_INT16:
        return (int16_t) fg_gguf_u16(p);
    case FG_GGUF_UINT32:
        return fg_gguf_u32(p);
    case FG_GGUF_INT32:
        return (int32_t) fg_gguf_u32(p);
    case FG_GGUF_UINT64:
    case FG_GGUF_INT64:
        return (int64_t) fg_gguf_u64(p);
    }

    /* floats saturate: a cast of what does not fit is undefined */
    d = fg_gguf_arr_f64(kv, i);

    if (!(d > -9.2e18)) {
        return isnan(d) ? 0 : INT64_MIN;
    }

    return d < 9.2e18 ? (int64_t) d : INT64_MAX;
}


double
fg_gguf_arr_f64(const fg_gguf_kv_t *kv, uint64_t i)
{
    float           f;
    double          d;
    const uint8_t  *p;

    p = kv->arr + i * fg_gguf_vtype_size[kv->arr_type];

    switch (kv->arr_type) {
    case FG_GGUF_FLOAT32:
        memcpy(&f, p, 4);
        return f;
    case FG_GGUF_FLOAT64:
        memcpy(&d, p, 8);
        return d;
    case FG_GGUF_UINT64:
        return (double) fg_gguf_u64(p);
    default:
        return (double) fg_gguf_arr_i64(kv, i);
    }
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


const char *
fg_ggml_type_name(uint32_t type)
{
    return type < FG_GGML_NTYPES ? fg_ggml_types[type].name : NULL;
}


int
fg_ggml_type_supported(uint32_t type)
{
    return type == FG_GGML_F32 || type == FG_GGML_F16
           || type == FG_GGML_BF16 || type == FG_GGML_Q8_0;
}


uint32_t
fg_ggml_block_size(uint32_t type)
{
    return type < FG_GGML_NTYPES ? fg_ggml_types[type].blck : 0;
}


uint32_t
fg_ggml_type_size(uint32_t type)
{
    return type < FG_GGML_NTYPES ? fg_ggml_types[type].size : 0;
}


uint64_t
fg_ggml_row_size(uint32_t type, uint64_t n)
{
    uint32_t  blck;

    blck = fg_ggml_block_size(type);

    return blck ? n / blck * fg_ggml_types[type].size : 0;
}


float
fg_fp16_to_f32(uint16_t h)
{
    float     f;
    uint32_t  sign, exp, man, bits;

    sign = (uint32_t) (h & 0x8000) << 16;
    exp = (h >> 10) & 0x1f;
    man = h & 0x3ff;

    if (exp == 0) {
        /* zero and subnormals: man * 2^-24 is exact in a float */
        f = (float) man * 0x1p-24f;
        return sign ? -f : f;
    }

    if (exp == 31) {
        bits = sign | 0x7f800000 | (man << 13);

    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }

    memcpy(&f, &bits, sizeof(f));

    return f;
}


uint16_t
fg_f32_to_fp16(float f)
{
    int       e;
    uint32_t  x, sign, exp, man, half, rem, shift;

    memcpy(&x, &f, sizeof(x));

    sign = (x >> 16) & 0x8000;
    exp = (x >> 23) & 0xff;
    man = x & 0x7fffff;

    if (exp == 0xff) {
        return sign | 0x7c00 | (man ? 0x200 : 0);
    }

    e = (int) exp - 127 + 15;

    if (e >= 31) {
        return sign | 0x7c00;
    }

    if (e <= 0) {
        /* a subnormal half, or zero: round (1.man * 2^e) to 2^-24 units */
        if (e < -10) {
            return sign;
        }

        man |= 0x800000;
        shift = 14 - e;
        half = man >> shift;
        rem = man & ((1u << shift) - 1);

        if (rem > (1u << (shift - 1))
            || (rem == (1u << (shift - 1)) && (half & 1)))
        {
            half++;
        }

        return sign | half;
    }

    half = ((uint32_t) e << 10) | (man >> 13);
    rem = man & 0x1fff;

    /* to nearest, ties to even; a carry rolls into the exponent (or inf) */
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) {
        half++;
    }

    return sign | half;
}


float
fg_bf16_to_f32(uint16_t h)
{
    float     f;
    uint32_t  bits;

    bits = (uint32_t) h << 16;
    memcpy(&f, &bits, sizeof(f));

    return f;
}


uint16_t
fg_f32_to_bf16(float f)
{
    uint32_t  x;

    memcpy(&x, &f, sizeof(x));

    if ((x & 0x7fffffff) > 0x7f800000) {
        return (x >> 16) | 0x40;        /* a quiet NaN stays a NaN */
    }

    return (x + 0x7fff + ((x >> 16) & 1)) >> 16;
}


int
fg_ggml_to_f32(uint32_t type, const void *src, float *dst, size_t n)
{
    size_t          i, j;
    float           d;
    const uint8_t  *p;

    p = src;

    switch (type) {
    case FG_GGML_F32:
        memcpy(dst, src, n * sizeof(float));
        return 0;

    case FG_GGML_F16:
        for (i = 0; i < n; i++) {
            dst[i] = fg_fp16_to_f32(fg_gguf_u16(p + 2 * i));
        }
        return 0;

    case FG_GGML_BF16:
        for (i = 0; i < n; i++) {
            dst[i] = fg_bf16_to_f32(fg_gguf_u16(p + 2 * i));
        }
        return 0;

    case FG_GGML_Q8_0:
        /* blocks of an f16 scale and 32 int8 */
        for (i = 0; i < n / 32; i++, p += 34) {
            d = fg_fp16_to_f32(fg_gguf_u16(p));

            for (j = 0; j < 32; j++) {
                dst[i * 32 + j] = d * (int8_t) p[2 + j];
            }
        }
        return 0;
    }

    return -1;
}


int
fg_ggml_from_f32(uint32_t type, const float *src, void *dst, size_t n)
{
    size_t    i, j;
    float     amax, d, id;
    uint8_t  *p;
    uint16_t  h;

    p = dst;

    switch (type) {
    case FG_GGML_F32:
        memcpy(dst, src, n * sizeof(float));
        return 0;

    case FG_GGML_F16:
    case FG_GGML_BF16:
        for (i = 0; i < n; i++) {
            h = type == FG_GGML_F16 ? fg_f32_to_fp16(src[i])
                                    : fg_f32_to_bf16(src[i]);
            memcpy(p + 2 * i, &h, 2);
        }
        return 0;

    case FG_GGML_Q8_0:
        if (n % 32) {
            return -1;
        }

        for (i = 0; i < n / 32; i++, p += 34, src += 32) {
            amax = 0;

            for (j = 0; j < 32; j++) {
                amax = fmaxf(amax, fabsf(src[j]));
            }

            d = amax / 127;
            id = d != 0 ? 1 / d : 0;
            h = fg_f32_to_fp16(d);
            memcpy(p, &h, 2);

            for (j = 0; j < 32; j++) {
                p[2 + j] = (uint8_t) (int8_t) lrintf(src[j] * id);
            }
        }
        return 0;
    }

    return -1;
}


/* the Llama family */

typedef struct {
    const char  *name;
    uint32_t     rope_pairing;
} fg_llama_arch_t;


/* GGUF stores llama's Q and K permuted for adjacent pairs, qwen2's not */
static const fg_llama_arch_t  fg_llama_archs[] = {
    { "llama", FG_ROPE_ADJACENT },
    { "qwen2", FG_ROPE_HALVES },
    { NULL, 0 }
};


static int
fg_llama_key_u32(const fg_gguf_t *g, const char *arch, const char *key,
    uint32_t *out, int required, char *err, size_t errlen)
{
    int   rc;
    char  name[128];

    snprintf(name, sizeof(name), "%s.%s", arch, key);

    rc = fg_gguf_get_u32(g, name, out, err, errlen);

    if (rc == 1 && required) {
        fg_gguf_error(err, errlen, "metadata '%s' is missing", name);
        return -1;
    }

    return rc == -1 ? -1 : 0;
}


static int
fg_llama_key_f32(const fg_gguf_t *g, const char *arch, const char *key,
    float *out, int required, char *err, size_t errlen)
{
    int   rc;
    char  name[128];

    snprintf(name, sizeof(name), "%s.%s", arch, key);

    rc = fg_gguf_get_f32(g, name, out, err, errlen);

    if (rc == 1 && required) {
        fg_gguf_error(err, errlen, "metadata '%s' is missing", name);
        return -1;
    }

    if (rc == 0 && !isfinite(*out)) {
        fg_gguf_error(err, errlen, "metadata '%s' is not finite", name);
        return -1;
    }

    return rc == -1 ? -1 : 0;
}


/*
 * Finds a tensor the forward pass reads: ne0 x ne1 (ne1 == 0 for vectors),
 * of a type the engine computes with.
 */
static int
fg_llama_tensor(const fg_gguf_t *g, const char *name, uint64_t ne0,
    uint64_t ne1, int required, const fg_gguf_tensor_t **out, char *err,
    size_t errlen)
{
    const fg_gguf_tensor_t  *t;

    t = fg_gguf_find_tensor(g, name);
    *out = t;

    if (t == NULL) {
        if (required) {
            fg_gguf_error(err, errlen, "tensor '%s' is missing", name);
            return -1;
        }

        return 0;
    }

    if (t->ne[0] != ne0 || t->ne[1] != (ne1 ? ne1 : 1) || t->ne[2] != 1
        || t->ne[3] != 1)
    {
        fg_gguf_error(err, errlen,
                      "tensor '%s' has shape [%llu, %llu, %llu, %llu], "
                      "expected [%llu, %llu]", name,
                      (unsigned long long) t->ne[0],
                      (unsigned long long) t->ne[1],
                      (unsigned long long) t->ne[2],
                      (unsigned long long) t->ne[3],
                      (unsigned long long) ne0,
                      (unsigned long long) (ne1 ? ne1 : 1));
        return -1;
    }

    if (!fg_ggml_type_supported(t->type)) {
        fg_gguf_error(err, errlen,
                      "unsupported tensor type %u (%s) in tensor %s "
                      "(fairgate computes with f32, f16, bf16, q8_0)",
                      t->type, fg_ggml_type_name(t->type), name);
        return -1;
    }

    return 0;
}


static int
fg_llama_hparams(const fg_gguf_t *g, fg_llama_hparams_t *hp, char *err,
    size_t errlen)
{
    int                      rc;
    char                     name[128];
    uint32_t                 v, n;
    const char              *arch;
    fg_gguf_str_t            s;
    const fg_gguf_kv_t      *kv;
    const fg_llama_arch_t   *a;

    memset(hp, 0, sizeof(fg_llama_hparams_t));

    rc = fg_gguf_get_str(g, "general.architecture", &s, err, errlen);

    if (rc == 1) {
        fg_gguf_error(err, errlen, "metadata 'general.architecture' is "
                      "missing");
        return -1;
    }

    if (rc == -1) {
        return -1;
    }

    for (a = fg_llama_archs; a->name; a++) {
        if (fg_gguf_str_eq(s, a->name)) {
            break;
        }
    }

    if (a->name == NULL) {
        fg_gguf_error(err, errlen, "unsupported architecture '%.*s' "
                      "(fairgate runs llama and qwen2)",
                      (int) (s.len < 64 ? s.len : 64), s.data);
        return -1;
    }

    arch = a->name;
    snprintf(hp->arch, sizeof(hp->arch), "%s", arch);
    hp->rope_pairing = a->rope_pairing;

    if (fg_llama_key_u32(g, arch, "context_length", &hp->n_ctx_train, 1,
                         err, errlen)
        || fg_llama_key_u32(g, arch, "embedding_length", &hp->n_embd, 1,
                            err, errlen)
        || fg_llama_key_u32(g, arch, "block_count", &hp->n_layer, 1, err,
                            errlen)
        || fg_llama_key_u32(g, arch, "feed_forward_length", &hp->n_ff, 1,
                            err, errlen)
        || fg_llama_key_u32(g, arch, "attention.head_count", &hp->n_head, 1,
                            err, errlen)
        || fg_llama_key_f32(g, arch, "attention.layer_norm_rms_epsilon",
                            &hp->rms_eps, 1, err, errlen))
    {
        return -1;
    }

    hp->n_head_kv = hp->n_head;

    if (fg_llama_key_u32(g, arch, "attention.head_count_kv", &hp->n_head_kv,
                         0, err, errlen))
    {
        return -1;
    }

    /* absurd shapes would only fail later, in an allocation */
    if (hp->n_embd == 0 || hp->n_embd > (1u << 20) || hp->n_layer == 0
        || hp->n_layer > 4096 || hp->n_ff == 0 || hp->n_ff > (1u << 22)
        || hp->n_head == 0 || hp->n_head > hp->n_embd
        || hp->n_head_kv == 0 || hp->n_head_kv > hp->n_head
        || hp->n_head % hp->n_head_kv != 0 || hp->n_ctx_train == 0)
    {
        fg_gguf_error(err, errlen,
                      "impossible shape: embedding %u, blocks %u, "
                      "feed-forward %u, heads %u, kv heads %u, context %u",
                      hp->n_embd, hp->n_layer, hp->n_ff, hp->n_head,
                      hp->n_head_kv, hp->n_ctx_train);
        return -1;
    }

    hp->head_dim = hp->n_embd / hp->n_head;

    if (fg_llama_key_u32(g, arch, "attention.key_length", &hp->head_dim, 0,
                         err, errlen))
    {
        return -1;
    }

    v = hp->head_dim;

    if (fg_llama_key_u32(g, arch, "attention.value_length", &v, 0, err,
                         errlen))
    {
        return -1;
    }

    if (v != hp->head_dim || hp->head_dim == 0 || hp->head_dim > 1024
        || hp->head_dim % 2 != 0)
    {
        fg_gguf_error(err, errlen, "unsupported head size: key %u, value %u",
                      hp->head_dim, v);
        return -1;
    }

    hp->n_rot = hp->head_dim;

    if (fg_llama_key_u32(g, arch, "rope.dimension_count", &hp->n_rot, 0,
                         err, errlen))
    {
        return -1;
    }

    if (hp->n_rot == 0 || hp->n_rot > hp->head_dim || hp->n_rot % 2 != 0) {
        fg_gguf_error(err, errlen, "rope dimension count %u does not fit a "
                      "head of %u", hp->n_rot, hp->head_dim);
        return -1;
    }

    if (!(hp->rms_eps > 0 && hp->rms_eps < 1)) {
        fg_gguf_error(err, errlen, "RMS-norm epsilon %g is out of range",
                      (double) hp->rms_eps);
        return -1;
    }

    hp->rope_base = 10000.0f;

    if (fg_llama_key_f32(g, arch, "rope.freq_base", &hp->rope_base, 0, err,
                         errlen))
    {
        return -1;
    }

    if (!(hp->rope_base > 1)) {
        fg_gguf_error(err, errlen, "rope frequency base %g is out of range",
                      (double) hp->rope_base);
        return -1;
    }

    /*
     * Rope scaling: the types llama.cpp writes, and its older key for the
     * linear factor.  Llama 3.1's rule arrives as the rope_freqs tensor.
     */
    hp->rope_factor = 1.0f;
    hp->rope_scaling = FG_ROPE_SCALING_NONE;

    if (fg_llama_key_f32(g, arch, "rope.scale_linear", &hp->rope_factor, 0,
                         err, errlen))
    {
        return -1;
    }

    if (hp->rope_factor != 1.0f) {
        hp->rope_scaling = FG_ROPE_SCALING_LINEAR;
    }

    snprintf(name, sizeof(name), "%s.rope.scaling.type", arch);

    rc = fg_gguf_get_str(g, name, &s, err, errlen);

    if (rc == -1) {
        return -1;
    }

    if (rc == 0) {
        if (fg_gguf_str_eq(s, "none")) {
            hp->rope_scaling = FG_ROPE_SCALING_NONE;

        } else if (fg_gguf_str_eq(s, "linear")) {
            hp->rope_scaling = FG_ROPE_SCALING_LINEAR;

        } else if (fg_gguf_str_eq(s, "yarn")) {
            fg_gguf_error(err, errlen, "rope scaling 'yarn' is not "
                          "supported");
            return -1;

        } else {
            fg_gguf_error(err, errlen, "unknown rope scaling '%.*s'",
                          (int) (s.len < 64 ? s.len : 64), s.data);
            return -1;
        }
    }

    if (fg_llama_key_f32(g, arch, "rope.scaling.factor", &hp->rope_factor,
                         0, err, errlen)
        || fg_llama_key_u32(g, arch, "rope.scaling.original_context_length",
                            &hp->rope_orig_ctx, 0, err, errlen))
    {
        return -1;
    }

    if (hp->rope_scaling == FG_ROPE_SCALING_NONE) {
        hp->rope_factor = 1.0f;
    }

    if (!(hp->rope_factor >= 1 && hp->rope_factor <= 1024)) {
        fg_gguf_error(err, errlen, "rope scaling factor %g is out of range",
                      (double) hp->rope_factor);
        return -1;
    }

    /* the vocabulary: the tokenizer's, else the key, else the embedding */
    n = 0;
    kv = fg_gguf_find_kv(g, "tokenizer.ggml.tokens");

    if (kv && kv->type == FG_GGUF_ARRAY) {
        n = kv->n > UINT32_MAX ? UINT32_MAX : (uint32_t) kv->n;

    } else if (fg_llama_key_u32(g, arch, "vocab_size", &n, 0, err, errlen)) {
        return -1;
    }

    hp->n_vocab = n;

    return 0;
}


enum {
    FG_LLAMA_NONE = 0,
    FG_LLAMA_EMBD,
    FG_LLAMA_Q,
    FG_LLAMA_KV,
    FG_LLAMA_FF,
    FG_LLAMA_NDIMS
};


typedef struct {
    const char  *suffix;
    size_t       field;
    uint8_t      ne0;
    uint8_t      ne1;
    uint8_t      required;
} fg_llama_blk_tensor_t;


/* each block's tensors: name after "blk.N.", shape [ne0, ne1] */
static const fg_llama_blk_tensor_t  fg_llama_blk_tensors[] = {
    { "attn_norm.weight", offsetof(fg_llama_layer_t, attn_norm),
      FG_LLAMA_EMBD, FG_LLAMA_NONE, 1 },
    { "attn_q.weight", offsetof(fg_llama_layer_t, wq),
      FG_LLAMA_EMBD, FG_LLAMA_Q, 1 },
    { "attn_k.weight", offsetof(fg_llama_layer_t, wk),
      FG_LLAMA_EMBD, FG_LLAMA_KV, 1 },
    { "attn_v.weight", offsetof(fg_llama_layer_t, wv),
      FG_LLAMA_EMBD, FG_LLAMA_KV, 1 },
    { "attn_output.weight", offsetof(fg_llama_layer_t, wo),
      FG_LLAMA_Q, FG_LLAMA_EMBD, 1 },
    { "attn_q.bias", offsetof(fg_llama_layer_t, bq),
      FG_LLAMA_Q, FG_LLAMA_NONE, 0 },
    { "attn_k.bias", offsetof(fg_llama_layer_t, bk),
      FG_LLAMA_KV, FG_LLAMA_NONE, 0 },
    { "attn_v.bias", offsetof(fg_llama_layer_t, bv),
      FG_LLAMA_KV, FG_LLAMA_NONE, 0 },
    { "ffn_norm.weight", offsetof(fg_llama_layer_t, ffn_norm),
      FG_LLAMA_EMBD, FG_LLAMA_NONE, 1 },
    { "ffn_gate.weight", offsetof(fg_llama_layer_t, w_gate),
      FG_LLAMA_EMBD, FG_LLAMA_FF, 1 },
    { "ffn_up.weight", offsetof(fg_llama_layer_t, w_up),
      FG_LLAMA_EMBD, FG_LLAMA_FF, 1 },
    { "ffn_down.weight", offsetof(fg_llama_layer_t, w_down),
      FG_LLAMA_FF, FG_LLAMA_EMBD, 1 },
    { NULL, 0, 0, 0, 0 }
};


int
fg_llama_load(const fg_gguf_t *g, fg_llama_model_t *m, char *err,
    size_t errlen)
{
    char                          name[64];
    uint32_t                      i;
    uint64_t                      dims[FG_LLAMA_NDIMS];
    fg_llama_hparams_t           *hp;
    const fg_gguf_tensor_t       *t;
    const fg_llama_blk_tensor_t  *b;

    memset(m, 0, sizeof(fg_llama_model_t));
    hp = &m->hp;

    if (fg_llama_hparams(g, hp, err, errlen) != 0) {
        return -1;
    }

    t = fg_gguf_find_tensor(g, "token_embd.weight");

    if (hp->n_vocab == 0 && t) {
        hp->n_vocab = t->ne[1] > UINT32_MAX ? 0 : (uint32_t) t->ne[1];
    }

    if (hp->n_vocab == 0) {
        fg_gguf_error(err, errlen, "no vocabulary: neither "
                      "tokenizer.ggml.tokens nor token_embd.weight");
        return -1;
    }

    if (t && t->ne[1] != hp->n_vocab) {
        fg_gguf_error(err, errlen, "token_embd.weight has %llu rows but the "
                      "vocabulary has %u tokens",
                      (unsigned long long) t->ne[1], hp->n_vocab);
        return -1;
    }

    if (fg_llama_tensor(g, "token_embd.weight", hp->n_embd, hp->n_vocab, 1,
                        &m->tok_embd, err, errlen)
        || fg_llama_tensor(g, "output_norm.weight", hp->n_embd, 0, 1,
                           &m->output_norm, err, errlen)
        || fg_llama_tensor(g, "output.weight", hp->n_embd, hp->n_vocab, 0,
                           &m->output, err, errlen))
    {
        return -1;
    }

    if (m->output == NULL) {
        m->output = m->tok_embd;
        m->tied = 1;
    }

    if (fg_llama_tensor(g, "rope_freqs.weight", hp->n_rot / 2, 0, 0, &t, err,
                        errlen))
    {
        return -1;
    }

    if (t) {
        if (t->type != FG_GGML_F32) {
            fg_gguf_error(err, errlen, "tensor 'rope_freqs.weight' must be "
                          "f32, not %s", fg_ggml_type_name(t->type));
            return -1;
        }

        if ((uintptr_t) t->data % sizeof(float) != 0) {
            fg_gguf_error(err, errlen, "tensor 'rope_freqs.weight' is not "
                          "aligned for floats");
            return -1;
        }

        hp->rope_freqs = t->data;
        hp->rope_scaling = FG_ROPE_SCALING_LLAMA3;
    }

    m->layers = calloc(hp->n_layer, sizeof(fg_llama_layer_t));
    if (m->layers == NULL) {
        fg_gguf_error(err, errlen, "out of memory");
        return -1;
    }

    dims[FG_LLAMA_NONE] = 0;
    dims[FG_LLAMA_EMBD] = hp->n_embd;
    dims[FG_LLAMA_Q] = (uint64_t) hp->n_head * hp->head_dim;
    dims[FG_LLAMA_KV] = (uint64_t) hp->n_head_kv * hp->head_dim;
    dims[FG_LLAMA_FF] = hp->n_ff;

    for (i = 0; i < hp->n_layer; i++) {
        for (b = fg_llama_blk_tensors; b->suffix; b++) {
            snprintf(name, sizeof(name), "blk.%u.%s", i, b->suffix);

            if (fg_llama_tensor(g, name, dims[b->ne0], dims[b->ne1],
                                b->required,
                                (const fg_gguf_tensor_t **)
                                    ((char *) &m->layers[i] + b->field),
                                err, errlen))
            {
                fg_llama_free(m);
                return -1;
            }
        }
    }

    return 0;
}


void
fg_llama_free(fg_llama_model_t *m)
{
    free(m->layers);
    m->layers = NULL;
}


void
fg_llama_rope_freqs(const fg_llama_hparams_t *hp, float *freqs)
{
    uint32_t  i;
    double    f;

    for (i = 0; i < hp->n_rot / 2; i++) {
        f = pow(hp->rope_base, -2.0 * i / hp->n_rot);

        if (hp->rope_scaling == FG_ROPE_SCALING_LINEAR) {
            f /= hp->rope_factor;
        }

        if (hp->rope_freqs) {
            f /= hp->rope_freqs[i];
        }

        freqs[i] = (float) f;
    }
}


void
fg_llama3_rope_factors(uint32_t n_rot, float base, float factor,
    float low_freq_factor, float high_freq_factor, uint32_t orig_ctx,
    float *factors)
{
    double    freq, wavelen, low_wavelen, high_wavelen, smooth, scaled;
    uint32_t  i;

    /* wavelengths above low_wavelen are scaled fully, below high_ not */
    low_wavelen = orig_ctx / low_freq_factor;
    high_wavelen = orig_ctx / high_freq_factor;

    for (i = 0; i < n_rot / 2; i++) {
        freq = pow(base, -2.0 * i / n_rot);
        wavelen = 2 * M_PI / freq;

        if (wavelen < high_wavelen) {
            factors[i] = 1.0f;

        } else if (wavelen > low_wavelen) {
            factors[i] = factor;

        } else {
            smooth = (orig_ctx / wavelen - low_freq_factor)
                     / (high_freq_factor - low_freq_factor);
            scaled = (1 - smooth) * freq / factor + smooth * freq;
            factors[i] = (float) (freq / scaled);
        }
    }
}
