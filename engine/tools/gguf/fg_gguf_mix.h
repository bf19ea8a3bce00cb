
/*
 * fairgate: which type each tensor of a written model gets: one type for
 * every matrix (f32 .. q6_k), or one of llama.cpp's mixtures (q4_k_m and
 * the others), whose rules are llama.cpp's llama_tensor_get_type() for
 * the models fairgate writes.  The generator and --convert ask it tensor
 * by tensor.
 */

#ifndef _FG_GGUF_MIX_H_INCLUDED_
#define _FG_GGUF_MIX_H_INCLUDED_


#include <stdint.h>


/* llama.cpp's file types (general.file_type) of the mixtures */
#define FG_GGUF_MIX_Q3_K_M   12
#define FG_GGUF_MIX_Q4_K_S   14
#define FG_GGUF_MIX_Q4_K_M   15
#define FG_GGUF_MIX_Q5_K_S   16
#define FG_GGUF_MIX_Q5_K_M   17


/* a name --type takes */
typedef struct {
    const char  *name;          /* "q4_k_m", "q8_0", "f16" ... */
    uint32_t     type;          /* the matrices' type (fg_ggml_type_e) */
    uint32_t     mix;           /* 0: every matrix in type; a mixture */
    uint32_t     ftype;         /* general.file_type */
} fg_gguf_mix_t;


/* the entry of a name, NULL when there is none */
const fg_gguf_mix_t *fg_gguf_mix_find(const char *name);

/* the entry of a type and mixture, NULL when there is none */
const fg_gguf_mix_t *fg_gguf_mix_of(uint32_t type, uint32_t mix);

/* every name, for messages: "f32, f16, ..." */
const char *fg_gguf_mix_names(void);

/*
 * The type of tensor name, n_dims dimensions of rows of ne0 values, in a
 * model of n_layer blocks written as type and mix; tied: no output.weight
 * (the embeddings serve as output and get its type).  Vectors and norms
 * keep their own type (given as declared).
 */
uint32_t fg_gguf_mix_type(uint32_t type, uint32_t mix, const char *name,
    uint32_t declared, uint32_t n_dims, uint64_t ne0, uint32_t n_layer,
    int tied);


#endif /* _FG_GGUF_MIX_H_INCLUDED_ */
