
/*
 * fairgate: the Llama binding: a Llama-family model (llama, qwen2, qwen3,
 * gemma, gemma2, gemma3, phi3) as a GGUF file describes it.  The
 * hyperparameters come from the "{arch}." metadata keys with llama.cpp's
 * defaults, checked for shapes the forward pass can run; the tensors are
 * found by name and checked for shape and type, so that a backend never
 * meets a surprise in the weights.  What sets the architectures apart is
 * in fg_llama_arch.c.
 */


#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "fg_ggml_types.h"
#include "fg_gguf_int.h"
#include "fg_llama_int.h"


static const fg_llama_arch_t *fg_llama_hparams(const fg_gguf_t *g,
    fg_llama_hparams_t *hp, char *err, size_t errlen);
static int fg_llama_vocab(const fg_gguf_t *g, fg_llama_hparams_t *hp,
    char *err, size_t errlen);
static int fg_llama_globals(const fg_gguf_t *g, fg_llama_model_t *m,
    char *err, size_t errlen);
static int fg_llama_rope_tensor(const fg_gguf_t *g, fg_llama_hparams_t *hp,
    char *err, size_t errlen);
static int fg_llama_layers(const fg_gguf_t *g, const fg_llama_arch_t *a,
    fg_llama_model_t *m, char *err, size_t errlen);


/* arch.key into u or f (the other NULL): 0, found or absent and not
 * required; -1 said in err */
static int
fg_llama_key(const fg_gguf_t *g, const char *arch, const char *key,
    uint32_t *u, float *f, int required, char *err, size_t errlen)
{
    int   rc;
    char  name[128];

    snprintf(name, sizeof(name), "%s.%s", arch, key);

    rc = u ? fg_gguf_get_u32(g, name, u, err, errlen)
           : fg_gguf_get_f32(g, name, f, err, errlen);

    if (rc == 1 && required) {
        fg_err_printf(err, errlen, "metadata '%s' is missing", name);
        return -1;
    }

    if (rc == 0 && f && !isfinite(*f)) {
        fg_err_printf(err, errlen, "metadata '%s' is not finite", name);
        return -1;
    }

    return rc == -1 ? -1 : 0;
}


static int
fg_llama_key_u32(const fg_gguf_t *g, const char *arch, const char *key,
    uint32_t *out, int required, char *err, size_t errlen)
{
    return fg_llama_key(g, arch, key, out, NULL, required, err, errlen);
}


static int
fg_llama_key_f32(const fg_gguf_t *g, const char *arch, const char *key,
    float *out, int required, char *err, size_t errlen)
{
    return fg_llama_key(g, arch, key, NULL, out, required, err, errlen);
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
            fg_err_printf(err, errlen, "tensor '%s' is missing", name);
            return -1;
        }

        return 0;
    }

    if (t->ne[0] != ne0 || t->ne[1] != (ne1 ? ne1 : 1) || t->ne[2] != 1
        || t->ne[3] != 1)
    {
        fg_err_printf(err, errlen,
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
        fg_err_printf(err, errlen,
                      "unsupported tensor type %u (%s) in tensor %s "
                      "(fairgate computes with f32, f16, bf16, q4_0, q4_1, "
                      "q5_0, q5_1, q8_0, q2_K, q3_K, q4_K, q5_K, q6_K)",
                      t->type, fg_ggml_type_name(t->type), name);
        return -1;
    }

    return 0;
}


/* general.architecture: one of fg_llama_arch.c's; NULL with a message */
static const fg_llama_arch_t *
fg_llama_arch(const fg_gguf_t *g, fg_llama_hparams_t *hp, char *err,
    size_t errlen)
{
    int                     rc;
    fg_gguf_str_t           s;
    const fg_llama_arch_t  *a;

    rc = fg_gguf_get_str(g, "general.architecture", &s, err, errlen);

    if (rc == 1) {
        fg_err_printf(err, errlen, "metadata 'general.architecture' is "
                      "missing");
        return NULL;
    }

    if (rc == -1) {
        return NULL;
    }

    a = fg_llama_arch_find(s);

    if (a == NULL) {
        fg_err_printf(err, errlen, "metadata 'general.architecture': "
                      "unsupported architecture '%.*s' (fairgate runs %s)",
                      (int) (s.len < 64 ? s.len : 64), s.data,
                      fg_llama_arch_names());
        return NULL;
    }

    snprintf(hp->arch, sizeof(hp->arch), "%s", a->name);
    hp->rope_pairing = a->rope_pairing;

    return a;
}


/* the model's dimensions: embedding, blocks, feed-forward, heads */
static int
fg_llama_shape(const fg_gguf_t *g, const char *arch, fg_llama_hparams_t *hp,
    char *err, size_t errlen)
{
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
        fg_err_printf(err, errlen,
                      "impossible shape: embedding %u, blocks %u, "
                      "feed-forward %u, heads %u, kv heads %u, context %u",
                      hp->n_embd, hp->n_layer, hp->n_ff, hp->n_head,
                      hp->n_head_kv, hp->n_ctx_train);
        return -1;
    }

    return 0;
}


/* a head's key and value length, and how many of its dimensions rotate */
static int
fg_llama_head(const fg_gguf_t *g, const char *arch, fg_llama_hparams_t *hp,
    char *err, size_t errlen)
{
    uint32_t  v;

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
        fg_err_printf(err, errlen, "unsupported head size: key %u, value %u",
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
        fg_err_printf(err, errlen, "rope dimension count %u does not fit a "
                      "head of %u", hp->n_rot, hp->head_dim);
        return -1;
    }

    return 0;
}


/* {arch}.rope.scaling.type, if there: none or linear */
static int
fg_llama_rope_type(const fg_gguf_t *g, const char *arch,
    fg_llama_hparams_t *hp, char *err, size_t errlen)
{
    int            rc;
    char           name[128];
    fg_gguf_str_t  s;

    snprintf(name, sizeof(name), "%s.rope.scaling.type", arch);

    rc = fg_gguf_get_str(g, name, &s, err, errlen);

    if (rc != 0) {
        return rc == -1 ? -1 : 0;
    }

    if (fg_gguf_str_eq(s, "none")) {
        hp->rope_scaling = FG_ROPE_SCALING_NONE;

    } else if (fg_gguf_str_eq(s, "linear")) {
        hp->rope_scaling = FG_ROPE_SCALING_LINEAR;

    } else if (fg_gguf_str_eq(s, "yarn")) {
        fg_err_printf(err, errlen, "metadata '%s': rope scaling 'yarn' is "
                      "not supported", name);
        return -1;

    } else {
        fg_err_printf(err, errlen, "metadata '%s': unknown rope scaling "
                      "'%.*s'", name, (int) (s.len < 64 ? s.len : 64),
                      s.data);
        return -1;
    }

    return 0;
}


/*
 * The rotation's base and scaling: the types llama.cpp writes, and its
 * older key for the linear factor.  Llama 3.1's rule arrives as the
 * rope_freqs tensor (fg_llama_load()).
 */
static int
fg_llama_rope(const fg_gguf_t *g, const char *arch, fg_llama_hparams_t *hp,
    char *err, size_t errlen)
{
    hp->rope_base = 10000.0f;

    if (fg_llama_key_f32(g, arch, "rope.freq_base", &hp->rope_base, 0, err,
                         errlen))
    {
        return -1;
    }

    if (!(hp->rope_base > 1)) {
        fg_err_printf(err, errlen, "rope frequency base %g is out of range",
                      (double) hp->rope_base);
        return -1;
    }

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

    if (fg_llama_rope_type(g, arch, hp, err, errlen)
        || fg_llama_key_f32(g, arch, "rope.scaling.factor", &hp->rope_factor,
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
        fg_err_printf(err, errlen, "rope scaling factor %g is out of range",
                      (double) hp->rope_factor);
        return -1;
    }

    return 0;
}


static const fg_llama_arch_t *
fg_llama_hparams(const fg_gguf_t *g, fg_llama_hparams_t *hp, char *err,
    size_t errlen)
{
    uint32_t                n;
    const char             *arch;
    const fg_gguf_kv_t     *tokens;
    const fg_llama_arch_t  *a;

    memset(hp, 0, sizeof(fg_llama_hparams_t));

    a = fg_llama_arch(g, hp, err, errlen);
    arch = a ? a->name : NULL;

    if (arch == NULL
        || fg_llama_shape(g, arch, hp, err, errlen) != 0
        || fg_llama_head(g, arch, hp, err, errlen) != 0)
    {
        return NULL;
    }

    if (!(hp->rms_eps > 0 && hp->rms_eps < 1)) {
        fg_err_printf(err, errlen, "RMS-norm epsilon %g is out of range",
                      (double) hp->rms_eps);
        return NULL;
    }

    if (fg_llama_rope(g, arch, hp, err, errlen) != 0
        || fg_llama_arch_hparams(g, a, hp, err, errlen) != 0)
    {
        return NULL;
    }

    /*
     * The vocabulary: the tokenizer's (an array of any type counts), else
     * the key, else the embedding (fg_llama_load()).
     */
    n = 0;

    if (fg_gguf_get_arr(g, "tokenizer.ggml.tokens", FG_GGUF_ARR_ANY, &tokens,
                        NULL, 0)
        == 0)
    {
        n = tokens->n > UINT32_MAX ? UINT32_MAX : (uint32_t) tokens->n;

    } else if (fg_llama_key_u32(g, arch, "vocab_size", &n, 0, err, errlen)) {
        return NULL;
    }

    hp->n_vocab = n;

    return a;
}


enum {
    FG_LLAMA_NONE = 0,
    FG_LLAMA_EMBD,
    FG_LLAMA_Q,
    FG_LLAMA_KV,
    FG_LLAMA_FF,
    FG_LLAMA_HEAD,
    FG_LLAMA_NDIMS
};


typedef struct {
    const char  *suffix;
    size_t       field;
    uint8_t      ne0;
    uint8_t      ne1;
    uint8_t      required;
    uint8_t      arch;              /* FG_ARCH_*: only there, required */
} fg_llama_blk_tensor_t;


/*
 * Each block's tensors: name after "blk.N.", shape [ne0, ne1]; those of
 * an architecture's flag are looked for in its files only, as llama.cpp
 * does.  A fused tensor's views (fg_llama_fused()) come first.
 */
static const fg_llama_blk_tensor_t  fg_llama_blk_tensors[] = {
    { "attn_norm.weight", offsetof(fg_llama_layer_t, attn_norm),
      FG_LLAMA_EMBD, FG_LLAMA_NONE, 1, 0 },
    { "attn_q.weight", offsetof(fg_llama_layer_t, wq),
      FG_LLAMA_EMBD, FG_LLAMA_Q, 1, 0 },
    { "attn_k.weight", offsetof(fg_llama_layer_t, wk),
      FG_LLAMA_EMBD, FG_LLAMA_KV, 1, 0 },
    { "attn_v.weight", offsetof(fg_llama_layer_t, wv),
      FG_LLAMA_EMBD, FG_LLAMA_KV, 1, 0 },
    { "attn_output.weight", offsetof(fg_llama_layer_t, wo),
      FG_LLAMA_Q, FG_LLAMA_EMBD, 1, 0 },
    { "attn_q.bias", offsetof(fg_llama_layer_t, bq),
      FG_LLAMA_Q, FG_LLAMA_NONE, 0, 0 },
    { "attn_k.bias", offsetof(fg_llama_layer_t, bk),
      FG_LLAMA_KV, FG_LLAMA_NONE, 0, 0 },
    { "attn_v.bias", offsetof(fg_llama_layer_t, bv),
      FG_LLAMA_KV, FG_LLAMA_NONE, 0, 0 },
    { "ffn_norm.weight", offsetof(fg_llama_layer_t, ffn_norm),
      FG_LLAMA_EMBD, FG_LLAMA_NONE, 1, 0 },
    { "ffn_gate.weight", offsetof(fg_llama_layer_t, w_gate),
      FG_LLAMA_EMBD, FG_LLAMA_FF, 1, 0 },
    { "ffn_up.weight", offsetof(fg_llama_layer_t, w_up),
      FG_LLAMA_EMBD, FG_LLAMA_FF, 1, 0 },
    { "ffn_down.weight", offsetof(fg_llama_layer_t, w_down),
      FG_LLAMA_FF, FG_LLAMA_EMBD, 1, 0 },
    { "attn_q_norm.weight", offsetof(fg_llama_layer_t, q_norm),
      FG_LLAMA_HEAD, FG_LLAMA_NONE, 1, FG_ARCH_QK_NORM },
    { "attn_k_norm.weight", offsetof(fg_llama_layer_t, k_norm),
      FG_LLAMA_HEAD, FG_LLAMA_NONE, 1, FG_ARCH_QK_NORM },
    { "post_attention_norm.weight",
      offsetof(fg_llama_layer_t, attn_post_norm), FG_LLAMA_EMBD,
      FG_LLAMA_NONE, 1, FG_ARCH_POST_NORM },
    { "post_ffw_norm.weight", offsetof(fg_llama_layer_t, ffn_post_norm),
      FG_LLAMA_EMBD, FG_LLAMA_NONE, 1, FG_ARCH_POST_NORM },
    { NULL, 0, 0, 0, 0, 0 }
};


int
fg_llama_load(const fg_gguf_t *g, fg_llama_model_t *m, char *err,
    size_t errlen)
{
    const fg_llama_arch_t  *a;

    memset(m, 0, sizeof(fg_llama_model_t));

    a = fg_llama_hparams(g, &m->hp, err, errlen);

    if (a == NULL
        || fg_llama_arch_refuse(g, a, err, errlen) != 0
        || fg_llama_vocab(g, &m->hp, err, errlen) != 0
        || fg_llama_globals(g, m, err, errlen) != 0
        || fg_llama_rope_tensor(g, &m->hp, err, errlen) != 0
        || fg_llama_layers(g, a, m, err, errlen) != 0)
    {
        return -1;
    }

    return 0;
}


/* the vocabulary's size, from the embedding when the metadata has none */
static int
fg_llama_vocab(const fg_gguf_t *g, fg_llama_hparams_t *hp, char *err,
    size_t errlen)
{
    const fg_gguf_tensor_t  *t;

    t = fg_gguf_find_tensor(g, "token_embd.weight");

    if (hp->n_vocab == 0 && t) {
        hp->n_vocab = t->ne[1] > UINT32_MAX ? 0 : (uint32_t) t->ne[1];
    }

    if (hp->n_vocab == 0) {
        fg_err_printf(err, errlen, "no vocabulary: neither "
                      "tokenizer.ggml.tokens nor token_embd.weight");
        return -1;
    }

    if (t && t->ne[1] != hp->n_vocab) {
        fg_err_printf(err, errlen, "token_embd.weight has %llu rows but the "
                      "vocabulary has %u tokens",
                      (unsigned long long) t->ne[1], hp->n_vocab);
        return -1;
    }

    return 0;
}


/* the embedding, the final norm and the output (or the tied embedding) */
static int
fg_llama_globals(const fg_gguf_t *g, fg_llama_model_t *m, char *err,
    size_t errlen)
{
    fg_llama_hparams_t  *hp;

    hp = &m->hp;

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

    return 0;
}


/*
 * Per-pair divisors of the rotation's frequencies, f32, if the file has
 * them: Llama 3.1's rope_freqs.weight, or Phi-3's LongRoPE pair.  Of that
 * pair, llama.cpp takes the long factors when a sequence's context is
 * longer than the original one, else the short; the engine gives each
 * sequence the trained context, so the trained context decides.
 */
static const char *
fg_llama_rope_tensor_name(const fg_gguf_t *g, const fg_llama_hparams_t *hp)
{
    uint32_t  orig;

    if (fg_gguf_find_tensor(g, "rope_freqs.weight")) {
        return "rope_freqs.weight";
    }

    orig = hp->rope_orig_ctx ? hp->rope_orig_ctx : hp->n_ctx_train;

    return hp->n_ctx_train > orig ? "rope_factors_long.weight"
                                  : "rope_factors_short.weight";
}


static int
fg_llama_rope_tensor(const fg_gguf_t *g, fg_llama_hparams_t *hp, char *err,
    size_t errlen)
{
    const char              *name;
    const fg_gguf_tensor_t  *t;

    name = fg_llama_rope_tensor_name(g, hp);

    if (fg_llama_tensor(g, name, hp->n_rot / 2, 0, 0, &t, err, errlen)) {
        return -1;
    }

    if (t == NULL) {
        return 0;
    }

    if (t->type != FG_GGML_F32) {
        fg_err_printf(err, errlen, "tensor '%s' must be f32, not %s", name,
                      fg_ggml_type_name(t->type));
        return -1;
    }

    if ((uintptr_t) t->data % sizeof(float) != 0) {
        fg_err_printf(err, errlen, "tensor '%s' is not aligned for floats",
                      name);
        return -1;
    }

    hp->rope_freqs = t->data;
    hp->rope_scaling = FG_ROPE_SCALING_LLAMA3;

    return 0;
}


/*
 * Block i's fused tensors, made views of by fg_llama_arch_block(): an
 * attn_qkv (llama.cpp takes one in any architecture), phi3's ffn_up of
 * gate and up.
 */
static int
fg_llama_fused(const fg_gguf_t *g, const fg_llama_arch_t *a,
    fg_llama_model_t *m, uint32_t i, char *err, size_t errlen)
{
    char                     name[64];
    uint64_t                 qkv;
    fg_llama_hparams_t      *hp;
    const fg_gguf_tensor_t  *t, *up;

    hp = &m->hp;
    qkv = (uint64_t) (hp->n_head + 2 * hp->n_head_kv) * hp->head_dim;
    up = NULL;

    snprintf(name, sizeof(name), "blk.%u.attn_qkv.weight", i);

    if (fg_llama_tensor(g, name, hp->n_embd, qkv, 0, &t, err, errlen)) {
        return -1;
    }

    snprintf(name, sizeof(name), "blk.%u.ffn_up.weight", i);

    if ((a->flags & FG_ARCH_FUSED_FFN)
        && fg_llama_tensor(g, name, hp->n_embd, 2 * (uint64_t) hp->n_ff, 1,
                           &up, err, errlen))
    {
        return -1;
    }

    return fg_llama_arch_block(g, a, m, i, t, up, err, errlen);
}


/* each block's tensors, as fg_llama_blk_tensors lists them */
static int
fg_llama_layers(const fg_gguf_t *g, const fg_llama_arch_t *a,
    fg_llama_model_t *m, char *err, size_t errlen)
{
    char                          name[64];
    uint32_t                      i;
    uint64_t                      dims[FG_LLAMA_NDIMS];
    fg_llama_hparams_t           *hp;
    const fg_gguf_tensor_t      **t;
    const fg_llama_blk_tensor_t  *b;

    hp = &m->hp;

    m->layers = calloc(hp->n_layer, sizeof(fg_llama_layer_t));
    m->views = calloc(5 * (size_t) hp->n_layer, sizeof(fg_gguf_tensor_t));

    if (m->layers == NULL || m->views == NULL) {
        fg_err_printf(err, errlen, "out of memory");
        fg_llama_free(m);
        return -1;
    }

    dims[FG_LLAMA_NONE] = 0;
    dims[FG_LLAMA_EMBD] = hp->n_embd;
    dims[FG_LLAMA_Q] = (uint64_t) hp->n_head * hp->head_dim;
    dims[FG_LLAMA_KV] = (uint64_t) hp->n_head_kv * hp->head_dim;
    dims[FG_LLAMA_FF] = hp->n_ff;
    dims[FG_LLAMA_HEAD] = hp->head_dim;

    for (i = 0; i < hp->n_layer; i++) {
        if (fg_llama_fused(g, a, m, i, err, errlen) != 0) {
            fg_llama_free(m);
            return -1;
        }

        for (b = fg_llama_blk_tensors; b->suffix; b++) {
            t = (const fg_gguf_tensor_t **) ((char *) &m->layers[i]
                                             + b->field);

            if (*t != NULL || (b->arch && !(a->flags & b->arch))) {
                continue;
            }

            snprintf(name, sizeof(name), "blk.%u.%s", i, b->suffix);

            if (fg_llama_tensor(g, name, dims[b->ne0], dims[b->ne1],
                                b->required, t, err, errlen))
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
    free(m->views);
    m->layers = NULL;
    m->views = NULL;
}


int
fg_llama_open(const char *path, fg_gguf_t **g, fg_llama_model_t *m,
    char *err, size_t errlen)
{
    char  e[FG_GGUF_ERR_LEN];

    *g = fg_gguf_open(path, e, sizeof(e));
    if (*g == NULL) {
        fg_err_printf(err, errlen, "%s", e);
        return -1;
    }

    if (fg_llama_load(*g, m, e, sizeof(e)) != 0) {
        fg_err_printf(err, errlen, "%s: %s", path, e);
        fg_gguf_close(*g);
        *g = NULL;
        return -1;
    }

    return 0;
}


void
fg_llama_close(fg_gguf_t *g, fg_llama_model_t *m)
{
    fg_llama_free(m);
    fg_gguf_close(g);
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
fg_llama_rope_freqs_swa(const fg_llama_hparams_t *hp, float *freqs)
{
    uint32_t  i;

    for (i = 0; i < hp->n_rot / 2; i++) {
        freqs[i] = (float) (pow(hp->rope_base_swa, -2.0 * i / hp->n_rot)
                            / hp->rope_factor_swa);
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


uint32_t
fg_llama_meta_u32(const fg_gguf_t *g, const char *key, uint32_t dflt)
{
    char           arch[64];
    uint32_t       v;
    fg_gguf_str_t  s;

    if (fg_gguf_get_str(g, "general.architecture", &s, NULL, 0) != 0
        || s.len >= sizeof(arch))
    {
        return dflt;
    }

    memcpy(arch, s.data, s.len);
    arch[s.len] = '\0';

    v = dflt;

    if (fg_llama_key_u32(g, arch, key, &v, 0, NULL, 0) != 0) {
        v = dflt;
    }

    return v;
}
