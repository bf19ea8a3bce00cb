
/*
 * fairgate: GGUF reader (versions 2 and 3) over a read-only mapping: the
 * metadata with its typed getters, and the tensor infos with their data in
 * place.  What the tensors mean is fg_llama.h's; their types,
 * fg_ggml_types.h's.
 *
 * Pure C, no nginx types: the gateway links it to read the tokenizer.
 *
 * Nothing in a file is trusted: every length, count, offset and size is
 * checked against the bytes that are really there before it is used, and a
 * failure leaves a message naming the problem in the caller's buffer.
 * Strings point into the mapping and are not NUL-terminated.
 */

#ifndef _FG_GGUF_H_INCLUDED_
#define _FG_GGUF_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


#define FG_GGUF_MAGIC             0x46554747    /* "GGUF" little-endian */
#define FG_GGUF_MAX_DIMS          4
#define FG_GGUF_MAX_NAME          63            /* ggml's GGML_MAX_NAME - 1 */
#define FG_GGUF_DEFAULT_ALIGNMENT 32

/* a good size for the error buffers that the functions below fill */
#define FG_GGUF_ERR_LEN           256


/* metadata value types, as numbered in GGUF */
typedef enum {
    FG_GGUF_UINT8 = 0,
    FG_GGUF_INT8,
    FG_GGUF_UINT16,
    FG_GGUF_INT16,
    FG_GGUF_UINT32,
    FG_GGUF_INT32,
    FG_GGUF_FLOAT32,
    FG_GGUF_BOOL,
    FG_GGUF_STRING,
    FG_GGUF_ARRAY,
    FG_GGUF_UINT64,
    FG_GGUF_INT64,
    FG_GGUF_FLOAT64,
    FG_GGUF_NTYPES
} fg_gguf_vtype_e;


typedef struct {
    size_t           len;
    const char      *data;
} fg_gguf_str_t;


typedef struct {
    fg_gguf_str_t    key;
    uint32_t         type;          /* fg_gguf_vtype_e */

    /* scalars: integers widened to 64 bits, floats to double */
    union {
        uint64_t     u;
        int64_t      i;
        double       f;
        fg_gguf_str_t s;
    } v;

    /* arrays: element type and count; numeric elements stay in the file
     * (little-endian, unaligned: read them with fg_gguf_arr_*()), string
     * elements are indexed once at open */
    uint32_t         arr_type;
    uint64_t         n;
    const uint8_t   *arr;
    fg_gguf_str_t   *strs;
} fg_gguf_kv_t;


typedef struct {
    fg_gguf_str_t    name;
    uint32_t         type;          /* fg_ggml_type_e (fg_ggml_types.h) */
    uint32_t         n_dims;
    uint64_t         ne[FG_GGUF_MAX_DIMS];  /* unused dimensions are 1 */
    uint64_t         n_elements;
    uint64_t         offset;        /* from the start of the data section */
    uint64_t         size;          /* bytes */
    const void      *data;
} fg_gguf_tensor_t;


typedef struct {
    uint32_t         version;
    uint32_t         alignment;

    uint64_t         n_kv;
    fg_gguf_kv_t    *kv;

    uint64_t         n_tensors;
    fg_gguf_tensor_t *tensors;

    uint64_t         data_offset;   /* in the file */
    const uint8_t   *base;
    size_t           size;

    /* private: open-addressing indexes (position + 1, 0 when empty) */
    uint32_t        *kv_index;
    uint32_t        *tensor_index;
    uint64_t         kv_mask;
    uint64_t         tensor_mask;
    int              mapped;
} fg_gguf_t;


/*
 * Opens and validates a file (mmap) or a buffer that the caller keeps alive
 * until fg_gguf_close().  NULL with a message in err on any problem.
 */
fg_gguf_t *fg_gguf_open(const char *path, char *err, size_t errlen);
fg_gguf_t *fg_gguf_open_mem(const void *buf, size_t size, char *err,
    size_t errlen);
void fg_gguf_close(fg_gguf_t *g);

const fg_gguf_tensor_t *fg_gguf_find_tensor(const fg_gguf_t *g,
    const char *name);

/*
 * The entry of a key as the file holds it, or NULL: for what copies or
 * lists entries.  Values are read with the typed getters below.
 */
const fg_gguf_kv_t *fg_gguf_find_kv(const fg_gguf_t *g, const char *key);

/*
 * Typed getters, the one way to read a value: 0 when found (integers of
 * any width and sign are accepted when the value fits), 1 when the key is
 * absent (out is left alone), -1 with a message when the key has another
 * type or does not fit.
 *
 * fg_gguf_get_kv() is the entry when its value has exactly the type given,
 * for a value whose width says something (an id of -1 written as int32).
 * fg_gguf_get_arr() is an array of arr_type elements, or of any integer
 * type, bool included (FG_GGUF_ARR_INT), or of any type (FG_GGUF_ARR_ANY).
 */
#define FG_GGUF_ARR_INT           (FG_GGUF_NTYPES + 1)
#define FG_GGUF_ARR_ANY           (FG_GGUF_NTYPES + 2)

int fg_gguf_get_kv(const fg_gguf_t *g, const char *key, uint32_t type,
    const fg_gguf_kv_t **out, char *err, size_t errlen);
int fg_gguf_get_u32(const fg_gguf_t *g, const char *key, uint32_t *out,
    char *err, size_t errlen);
int fg_gguf_get_i64(const fg_gguf_t *g, const char *key, int64_t *out,
    char *err, size_t errlen);
int fg_gguf_get_f32(const fg_gguf_t *g, const char *key, float *out,
    char *err, size_t errlen);
int fg_gguf_get_bool(const fg_gguf_t *g, const char *key, int *out,
    char *err, size_t errlen);
int fg_gguf_get_str(const fg_gguf_t *g, const char *key, fg_gguf_str_t *out,
    char *err, size_t errlen);
int fg_gguf_get_arr(const fg_gguf_t *g, const char *key, uint32_t arr_type,
    const fg_gguf_kv_t **out, char *err, size_t errlen);

/* element i (< kv->n) of a numeric array, converted */
int64_t fg_gguf_arr_i64(const fg_gguf_kv_t *kv, uint64_t i);
double fg_gguf_arr_f64(const fg_gguf_kv_t *kv, uint64_t i);

const char *fg_gguf_vtype_name(uint32_t type);
int fg_gguf_str_eq(fg_gguf_str_t s, const char *cstr);


#endif /* _FG_GGUF_H_INCLUDED_ */
