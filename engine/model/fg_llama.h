
/*
 * fairgate: the Llama family as a GGUF file describes it (llama, qwen2,
 * qwen3, gemma, gemma2, gemma3, phi3):
 * the hyperparameters from the "{arch}." metadata keys, and every tensor
 * the forward pass reads, found by name and checked for shape and type.
 * The backends build their models from it; the generator writes what it
 * reads.
 *
 * A model points into the GGUF file it was loaded from: nothing is copied.
 */

#ifndef _FG_LLAMA_H_INCLUDED_
#define _FG_LLAMA_H_INCLUDED_


#include <stdint.h>

#include "fg_gguf.h"


typedef enum {
    FG_ROPE_ADJACENT = 0,           /* llama: pairs (2i, 2i + 1) */
    FG_ROPE_HALVES                  /* qwen2 (neox): pairs (i, i + n / 2) */
} fg_rope_pairing_e;


/* the feed-forward block's activation of the gate */
typedef enum {
    FG_FFN_SILU = 0,                /* SwiGLU: llama, qwen, phi3 */
    FG_FFN_GELU                     /* GeGLU, tanh approximation: gemma */
} fg_ffn_act_e;


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

    uint32_t                ffn_act;        /* fg_ffn_act_e */
    float                   embd_scale;     /* of embedding rows: 1, or
                                               sqrt(n_embd) (gemma) */
    float                   attn_scale;     /* of q . k: 1 / sqrt(head) */
    float                   attn_softcap;   /* c tanh(s / c); 0: none */
    float                   final_softcap;  /* of the logits; 0: none */

    /* sliding-window layers (fg_llama_layer_t.swa) see the n_swa last
     * positions only, rotated with their own base and no scaling */
    uint32_t                n_swa;
    float                   rope_base_swa;
    float                   rope_factor_swa;    /* linear, 1: none */
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
    const fg_gguf_tensor_t *q_norm;         /* [head_dim], per head, before
                                               RoPE (qwen3, gemma3) */
    const fg_gguf_tensor_t *k_norm;
    const fg_gguf_tensor_t *attn_post_norm; /* [n_embd], on attention's and
                                               the FFN's outputs (gemma2,
                                               gemma3), or NULL */
    const fg_gguf_tensor_t *ffn_post_norm;
    uint32_t                swa;            /* a sliding-window layer */
} fg_llama_layer_t;


typedef struct {
    fg_llama_hparams_t      hp;

    const fg_gguf_tensor_t *tok_embd;
    const fg_gguf_tensor_t *output_norm;
    const fg_gguf_tensor_t *output;         /* == tok_embd when tied */
    int                     tied;

    fg_llama_layer_t       *layers;         /* hp.n_layer of them */

    /* q, k and v of a fused attn_qkv, gate and up of a fused ffn_up
     * (phi3): row ranges of the file's tensor, described here */
    fg_gguf_tensor_t       *views;
} fg_llama_model_t;


/*
 * Reads the hyperparameters from the "{arch}." keys and
 * finds every tensor the forward pass needs, checking shapes and types
 * ("unsupported tensor type 12 (q4_K) in tensor blk.0.attn_q.weight").
 * The model points into g: close g after fg_llama_free().
 */
int fg_llama_load(const fg_gguf_t *g, fg_llama_model_t *m, char *err,
    size_t errlen);
void fg_llama_free(fg_llama_model_t *m);

/*
 * The file at path opened and its model loaded, as the backends that run
 * its weights begin: 0, or -1 with "path: why" in err and nothing left
 * open.  fg_llama_close() lets both go (either may be NULL or unloaded).
 */
int fg_llama_open(const char *path, fg_gguf_t **g, fg_llama_model_t *m,
    char *err, size_t errlen);
void fg_llama_close(fg_gguf_t *g, fg_llama_model_t *m);

/*
 * The value of "{arch}.key", arch being the file's general.architecture
 * ("llama.context_length"), or dflt where the file has no such u32: what
 * readers that only want a model's shape (the sim backend, the gateway's
 * context length) need, without loading the model.
 */
uint32_t fg_llama_meta_u32(const fg_gguf_t *g, const char *key,
    uint32_t dflt);

/*
 * The rotation frequency of each of the n_rot / 2 pairs of a head:
 * base^(-2i / n_rot), divided by the linear factor or by rope_freqs.
 */
void fg_llama_rope_freqs(const fg_llama_hparams_t *hp, float *freqs);

/* the same for the sliding-window layers: rope_base_swa, rope_factor_swa */
void fg_llama_rope_freqs_swa(const fg_llama_hparams_t *hp, float *freqs);

/*
 * Llama 3's rope-scaling rule (factor 8, low 1, high 4, original context
 * 8192 for Llama 3.1) as n_rot / 2 divisors, written by the generator into
 * rope_freqs.weight as llama.cpp's converter does.
 */
void fg_llama3_rope_factors(uint32_t n_rot, float base, float factor,
    float low_freq_factor, float high_freq_factor, uint32_t orig_ctx,
    float *factors);


#endif /* _FG_LLAMA_H_INCLUDED_ */
