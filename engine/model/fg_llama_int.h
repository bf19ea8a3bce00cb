
/*
 * fairgate: what the Llama binding's two files share, private to
 * engine/model/: fg_llama.c reads what every architecture has (shape,
 * head, RoPE, the tensors of a block), fg_llama_arch.c what tells the
 * architectures apart (the table of them, their scales, soft-capping,
 * sliding windows, norms and fused tensors).
 */

#ifndef _FG_LLAMA_INT_H_INCLUDED_
#define _FG_LLAMA_INT_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_gguf.h"
#include "fg_llama.h"


/* what an architecture has beyond llama's block */
#define FG_ARCH_QK_NORM     0x01    /* attn_q_norm, attn_k_norm: required */
#define FG_ARCH_POST_NORM   0x02    /* post_attention_norm, post_ffw_norm */
#define FG_ARCH_GEMMA       0x04    /* embedding * sqrt(n_embd), GeGLU */
#define FG_ARCH_TIED        0x08    /* the output is token_embd, always */
#define FG_ARCH_FUSED_FFN   0x10    /* ffn_up holds gate and up (phi3) */
#define FG_ARCH_ATTN_CAP    0x20    /* reads attn_logit_softcapping */
#define FG_ARCH_FINAL_CAP   0x40    /* reads final_logit_softcapping */


/* an architecture, with llama.cpp's defaults for what its keys omit */
typedef struct {
    const char  *name;
    uint32_t     rope_pairing;      /* fg_rope_pairing_e */
    uint32_t     flags;
    float        attn_softcap;
    float        final_softcap;
    uint32_t     swa_pattern;       /* every n-th layer is global; 0 no */
    uint32_t     n_swa;             /* without attention.sliding_window */
    float        rope_base_swa;     /* 0: the global base and scaling */
    uint32_t     layers_27b;        /* the 27B's q scale: embd / heads */
} fg_llama_arch_t;


/* the architecture named s, or NULL */
const fg_llama_arch_t *fg_llama_arch_find(fg_gguf_str_t s);

/* the list of names for messages: "llama, qwen2, ..." */
const char *fg_llama_arch_names(void);

/*
 * What the architecture adds to the hyperparameters already read:
 * activation, scales, soft-capping, sliding window; and the keys it
 * refuses.  0, or -1 with the key and the reason in err.
 */
int fg_llama_arch_hparams(const fg_gguf_t *g, const fg_llama_arch_t *a,
    fg_llama_hparams_t *hp, char *err, size_t errlen);

/*
 * Block i's fused tensors (attn_qkv; phi3's ffn_up of 2 n_ff rows), as
 * views of their rows in m->views, and its sliding-window flag.
 */
int fg_llama_arch_block(const fg_gguf_t *g, const fg_llama_arch_t *a,
    fg_llama_model_t *m, uint32_t i, char *err, size_t errlen);

/* the tensors no architecture of the file's kind may have */
int fg_llama_arch_refuse(const fg_gguf_t *g, const fg_llama_arch_t *a,
    char *err, size_t errlen);

/* arch.key as a u32 or f32: 0 (found, or absent and not required), -1 */
int fg_llama_key_u32(const fg_gguf_t *g, const char *arch, const char *key,
    uint32_t *out, int required, char *err, size_t errlen);
int fg_llama_key_f32(const fg_gguf_t *g, const char *arch, const char *key,
    float *out, int required, char *err, size_t errlen);

/* a tensor of ne0 x ne1 (0: a vector) of a type the engine computes */
int fg_llama_tensor(const fg_gguf_t *g, const char *name, uint64_t ne0,
    uint64_t ne1, int required, const fg_gguf_tensor_t **out, char *err,
    size_t errlen);


#endif /* _FG_LLAMA_INT_H_INCLUDED_ */
