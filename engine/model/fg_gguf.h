
/*
 * fairgate: GGUF reader (versions 2 and 3) over a read-only mapping, the
 * tensor types the engine computes with, and the Llama-family model
 * description taken from a GGUF file.
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


/* tensor types, as numbered by ggml; the engine computes with four */
typedef enum {
    FG_GGML_F32 = 0,
    FG_GGML_F16 = 1,
    FG_GGML_Q8_0 = 8,
    FG_GGML_BF16 = 30,
    FG_GGML_NTYPES = 40
} fg_ggml_type_e;


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
    uint32_t         type;          /* fg_ggml_type_e */
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

const fg_gguf_kv_t *fg_gguf_find_kv(const fg_gguf_t *g, const char *key);
const fg_gguf_tensor_t *fg_gguf_find_tensor(const fg_gguf_t *g,
    const char *name);

/*
 * Typed getters: 0 when found (integers of any width and sign are accepted
 * when the value fits), 1 when the key is absent (out is left alone),
 * -1 with a message when the key has another type or does not fit.
 */
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


/* tensor types */
const char *fg_ggml_type_name(uint32_t type);   /* NULL when unknown */
int fg_ggml_type_supported(uint32_t type);      /* F32, F16, BF16, Q8_0 */
uint32_t fg_ggml_block_size(uint32_t type);     /* 0 when unknown */
uint32_t fg_ggml_type_size(uint32_t type);      /* bytes per block */

/* bytes of n elements (n a multiple of the block size) */
uint64_t fg_ggml_row_size(uint32_t type, uint64_t n);

/* converts n elements of a supported type; -1 for other types */
int fg_ggml_to_f32(uint32_t type, const void *src, float *dst, size_t n);

/* from f32: n a multiple of 32 for Q8_0; -1 for unsupported types */
int fg_ggml_from_f32(uint32_t type, const float *src, void *dst, size_t n);

float fg_fp16_to_f32(uint16_t h);
uint16_t fg_f32_to_fp16(float f);
float fg_bf16_to_f32(uint16_t h);
uint16_t fg_f32_to_bf16(float f);


/* the Llama family */

typedef enum {
    FG_ROPE_ADJACENT = 0,           /* llama: pairs (2i, 2i + 1) */
    FG_ROPE_HALVES                  /* qwen2 (neox): pairs (i, i + n / 2) */
} fg_rope_pairing_e;


typedef enum {
    FG_ROPE_SCALING_NONE = 0,
    FG_ROPE_SCALING_LINEAR,
    FG_ROPE_SCALING_YARN,
    FG_ROPE_SCALING_LLAMA3          /* per-pair factors (rope_freqs) */
} fg_rope_scaling_e;


typedef struct {
    char                    arch[16];
    uint32_t                rope_pairing;   /* fg_rope_pairing_e */

    uint32_t                n_vocab;
    uint32_t                n_ctx_train;
    uint32_t                n_embd;
    uint32_t                n_layer;
    uint32_t                n_ff;
    uint32_t                n_head;
    uint32_t                n_head_kv;
    uint32_t                head_dim;       /* key and value length */
    uint32_t                n_rot;          /* rotated dimensions per head */

    float                   rms_eps;
    float                   rope_base;

    uint32_t                rope_scaling;   /* fg_rope_scaling_e */
    float                   rope_factor;    /* linear and yarn: > 1 */
    uint32_t                rope_orig_ctx;

    /* Llama 3.1 style: n_rot / 2 divisors of the pairs' frequencies,
     * (rope_freqs.weight, F32) or NULL */
    const float            *rope_freqs;
} fg_llama_hparams_t;


typedef struct {
    const fg_gguf_tensor_t *attn_norm;
    const fg_gguf_tensor_t *wq;
    const fg_gguf_tensor_t *wk;
    const fg_gguf_tensor_t *wv;
    const fg_gguf_tensor_t *wo;
    const fg_gguf_tensor_t *bq;             /* biases: qwen2, or NULL */
    const fg_gguf_tensor_t *bk;
    const fg_gguf_tensor_t *bv;
    const fg_gguf_tensor_t *ffn_norm;
    const fg_gguf_tensor_t *w_gate;
    const fg_gguf_tensor_t *w_up;
    const fg_gguf_tensor_t *w_down;
} fg_llama_layer_t;


typedef struct {
    fg_llama_hparams_t      hp;

    const fg_gguf_tensor_t *tok_embd;
    const fg_gguf_tensor_t *output_norm;
    const fg_gguf_tensor_t *output;         /* == tok_embd when tied */
    int                     tied;

    fg_llama_layer_t       *layers;         /* hp.n_layer of them */
} fg_llama_model_t;


/*
 * Reads the hyperparameters from the "{arch}." keys (llama, qwen2) and
 * finds every tensor the forward pass needs, checking shapes and types
 * ("unsupported tensor type 12 (q4_K) in tensor blk.0.attn_q.weight").
 * The model points into g: close g after fg_llama_free().
 */
int fg_llama_load(const fg_gguf_t *g, fg_llama_model_t *m, char *err,
    size_t errlen);
void fg_llama_free(fg_llama_model_t *m);

/*
 * The rotation frequency of each of the n_rot / 2 pairs of a head:
 * base^(-2i / n_rot), divided by the linear factor or by rope_freqs.
 */
void fg_llama_rope_freqs(const fg_llama_hparams_t *hp, float *freqs);

/*
 * Llama 3's rope-scaling rule (factor 8, low 1, high 4, original context
 * 8192 for Llama 3.1) as n_rot / 2 divisors, written by the generator into
 * rope_freqs.weight as llama.cpp's converter does.
 */
void fg_llama3_rope_factors(uint32_t n_rot, float base, float factor,
    float low_freq_factor, float high_freq_factor, uint32_t orig_ctx,
    float *factors);


#endif /* _FG_GGUF_H_INCLUDED_ */
