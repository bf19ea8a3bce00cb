
/*
 * fairgate: the typed getters of GGUF metadata, the one way its values are
 * read: a value of the type asked for, or of any integer type when it
 * fits, or a message that names the key and what it holds instead.  Also
 * the elements of numeric arrays, which stay in the file as written.
 */


#include <float.h>
#include <math.h>


#include "fg_gguf.h"
#include "fg_gguf_int.h"


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
    fg_err_printf(err, errlen, "metadata '%s' has type %s, not %s", key,
                  fg_gguf_vtype_name(kv->type), want);
    return -1;
}


int
fg_gguf_get_kv(const fg_gguf_t *g, const char *key, uint32_t type,
    const fg_gguf_kv_t **out, char *err, size_t errlen)
{
    const fg_gguf_kv_t  *kv;

    kv = fg_gguf_find_kv(g, key);
    if (kv == NULL) {
        return 1;
    }

    if (kv->type != type) {
        return fg_gguf_wrong_type(kv, key, fg_gguf_vtype_name(type), err,
                                  errlen);
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
        fg_err_printf(err, errlen, "metadata '%s' = %lld is out of range",
                      key, (long long) i);
        return -1;
    }

    if (rc != 2 && u > max) {
        fg_err_printf(err, errlen, "metadata '%s' = %llu is out of range",
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

    rc = fg_gguf_get_kv(g, key, FG_GGUF_BOOL, &kv, err, errlen);
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

    rc = fg_gguf_get_kv(g, key, FG_GGUF_STRING, &kv, err, errlen);
    if (rc != 0) {
        return rc;
    }

    *out = kv->v.s;

    return 0;
}


/* whether elements of type have the type or the class wanted */
static int
fg_gguf_arr_is(uint32_t type, uint32_t want)
{
    switch (want) {
    case FG_GGUF_ARR_ANY:
        return 1;
    case FG_GGUF_ARR_INT:
        return type != FG_GGUF_STRING && type != FG_GGUF_FLOAT32
               && type != FG_GGUF_FLOAT64;
    default:
        return type == want;
    }
}


int
fg_gguf_get_arr(const fg_gguf_t *g, const char *key, uint32_t arr_type,
    const fg_gguf_kv_t **out, char *err, size_t errlen)
{
    int                  rc;
    const fg_gguf_kv_t  *kv;

    rc = fg_gguf_get_kv(g, key, FG_GGUF_ARRAY, &kv, err, errlen);
    if (rc != 0) {
        return rc;
    }

    if (!fg_gguf_arr_is(kv->arr_type, arr_type)) {
        fg_err_printf(err, errlen,
                      "metadata '%s' is an array of %s, not of %s", key,
                      fg_gguf_vtype_name(kv->arr_type),
                      arr_type == FG_GGUF_ARR_INT
                          ? "integers" : fg_gguf_vtype_name(arr_type));
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
