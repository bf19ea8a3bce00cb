
/*
 * fairgate: what tells the Llama family's architectures apart, read as
 * llama.cpp reads it (its src/models/ files are the reference for each
 * default below), so that the same file runs the same graph in both:
 *
 *   qwen3    per-head RMS norms of q and k before RoPE, no biases, NEOX
 *   gemma    embedding * sqrt(n_embd), GeGLU (tanh), output tied
 *   gemma2   gemma's, with norms after attention and the FFN, attention
 *            logits soft-capped (50) and final logits (30), a sliding
 *            window (4096) on even layers, q scaled by 1 / sqrt(head)
 *            (the 27B: by 1 / sqrt(n_embd / n_head))
 *   gemma3   gemma2's norms, q/k norms, final soft-capping only when the
 *            file says, a window on 5 layers of 6 when the file gives
 *            one, those layers rotated with rope.freq_base_swa (10000)
 *            and no scaling
 *   phi3     attn_qkv and ffn_up (gate then up) fused, NEOX; its sliding
 *            window key is ignored (llama.cpp disables it) and long-
 *            context rope factors are refused
 *
 * llama files (Mistral 7B among them) may carry attention.sliding_window:
 * llama.cpp's llama graph never reads it, and neither does this.
 *
 * Gemma's norm weights are stored with gemma's "1 +" already added by
 * llama.cpp's converter, so they multiply as every other norm does.
 */


#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_ggml_types.h"
#include "fg_gguf_int.h"
#include "fg_llama_int.h"


#define FG_ARCH_GEMMA_ALL  (FG_ARCH_GEMMA | FG_ARCH_TIED)


static const fg_llama_arch_t  fg_llama_archs[] = {
    /* GGUF stores llama's Q and K permuted for adjacent pairs */
    { "llama", FG_ROPE_ADJACENT, 0, 0, 0, 0, 0, 0, 0 },
    { "qwen2", FG_ROPE_HALVES, 0, 0, 0, 0, 0, 0, 0 },
    { "qwen3", FG_ROPE_HALVES, FG_ARCH_QK_NORM, 0, 0, 0, 0, 0, 0 },
    { "gemma", FG_ROPE_HALVES, FG_ARCH_GEMMA_ALL, 0, 0, 0, 0, 0, 0 },
    { "gemma2", FG_ROPE_HALVES,
      FG_ARCH_GEMMA_ALL | FG_ARCH_POST_NORM | FG_ARCH_ATTN_CAP
      | FG_ARCH_FINAL_CAP, 50.0f, 30.0f, 2, 4096, 0, 46 },
    { "gemma3", FG_ROPE_HALVES,
      FG_ARCH_GEMMA | FG_ARCH_POST_NORM | FG_ARCH_QK_NORM
      | FG_ARCH_FINAL_CAP, 0, 0, 6, 0, 10000.0f, 62 },
    { "phi3", FG_ROPE_HALVES, FG_ARCH_FUSED_FFN, 0, 0, 0, 0, 0, 0 },
    { NULL, 0, 0, 0, 0, 0, 0, 0, 0 }
};


const fg_llama_arch_t *
fg_llama_arch_find(fg_gguf_str_t s)
{
    const fg_llama_arch_t  *a;

    for (a = fg_llama_archs; a->name; a++) {
        if (fg_gguf_str_eq(s, a->name)) {
            return a;
        }
    }

    return NULL;
}


const char *
fg_llama_arch_names(void)
{
    return "llama, qwen2, qwen3, gemma, gemma2, gemma3, phi3";
}


/* "{arch}.key" into *f (a finite float), if there: 0, or -1 said */
static int
fg_llama_arch_f32(const fg_gguf_t *g, const fg_llama_arch_t *a,
    const char *key, float *f, char *err, size_t errlen)
{
    char  name[128];

    snprintf(name, sizeof(name), "%s.%s", a->name, key);

    if (fg_gguf_get_f32(g, name, f, err, errlen) == -1) {
        return -1;
    }

    if (!isfinite(*f)) {
        fg_err_printf(err, errlen, "metadata '%s' is not finite", name);
        return -1;
    }

    return 0;
}


/* the soft-capping values the architecture reads, positive */
static int
fg_llama_arch_caps(const fg_gguf_t *g, const fg_llama_arch_t *a,
    fg_llama_hparams_t *hp, char *err, size_t errlen)
{
    hp->attn_softcap = a->attn_softcap;
    hp->final_softcap = a->final_softcap;

    if (((a->flags & FG_ARCH_ATTN_CAP)
         && fg_llama_arch_f32(g, a, "attn_logit_softcapping",
                              &hp->attn_softcap, err, errlen))
        || ((a->flags & FG_ARCH_FINAL_CAP)
            && fg_llama_arch_f32(g, a, "final_logit_softcapping",
                                 &hp->final_softcap, err, errlen)))
    {
        return -1;
    }

    if (hp->attn_softcap < 0 || hp->final_softcap < 0) {
        fg_err_printf(err, errlen, "metadata '%s.%s_logit_softcapping' is "
                      "negative", a->name,
                      hp->attn_softcap < 0 ? "attn" : "final");
        return -1;
    }

    return 0;
}


/* the window and the rotation of the sliding-window layers */
static int
fg_llama_arch_swa(const fg_gguf_t *g, const fg_llama_arch_t *a,
    fg_llama_hparams_t *hp, char *err, size_t errlen)
{
    char  name[128];

    hp->rope_base_swa = hp->rope_base;
    hp->rope_factor_swa = hp->rope_factor;

    if (a->swa_pattern == 0) {
        return 0;
    }

    hp->n_swa = a->n_swa;

    snprintf(name, sizeof(name), "%s.attention.sliding_window", a->name);

    if (fg_gguf_get_u32(g, name, &hp->n_swa, err, errlen) == -1) {
        return -1;
    }

    if (a->rope_base_swa != 0) {
        hp->rope_base_swa = a->rope_base_swa;
        hp->rope_factor_swa = 1.0f;
    }

    if (fg_llama_arch_f32(g, a, "rope.freq_base_swa", &hp->rope_base_swa,
                          err, errlen))
    {
        return -1;
    }

    if (!(hp->rope_base_swa > 1)) {
        fg_err_printf(err, errlen, "metadata '%s.rope.freq_base_swa' %g is "
                      "out of range", a->name, (double) hp->rope_base_swa);
        return -1;
    }

    return 0;
}


int
fg_llama_arch_hparams(const fg_gguf_t *g, const fg_llama_arch_t *a,
    fg_llama_hparams_t *hp, char *err, size_t errlen)
{
    char   name[128];
    float  f;

    hp->ffn_act = (a->flags & FG_ARCH_GEMMA) ? FG_FFN_GELU : FG_FFN_SILU;
    hp->embd_scale = (a->flags & FG_ARCH_GEMMA) ? sqrtf((float) hp->n_embd)
                                                : 1.0f;
    hp->attn_scale = 1.0f / sqrtf((float) hp->head_dim);

    if (a->layers_27b && hp->n_layer == a->layers_27b) {
        hp->attn_scale = 1.0f / sqrtf((float) (hp->n_embd / hp->n_head));
    }

    if (fg_llama_arch_caps(g, a, hp, err, errlen) != 0
        || fg_llama_arch_swa(g, a, hp, err, errlen) != 0)
    {
        return -1;
    }

    /*
     * Phi-3's LongRoPE multiplies RoPE's output, q's and k's, by this
     * factor, so q . k by its square: folded into the scale of q . k.
     */
    f = 1.0f;
    snprintf(name, sizeof(name), "%s.rope.scaling.attn_factor", a->name);

    if (fg_gguf_get_f32(g, name, &f, err, errlen) == -1) {
        return -1;
    }

    if (!(f > 0.0f && f <= 16.0f)) {
        fg_err_printf(err, errlen, "metadata '%s' %g is out of range "
                      "(0, 16]", name, (double) f);
        return -1;
    }

    hp->attn_scale *= f * f;

    return 0;
}


/*
 * Whether block i slides: attention.sliding_window_pattern as a per-layer
 * array, else as n (every n-th layer global, the last of each n), else
 * the architecture's n; none without a window.
 */
static int
fg_llama_arch_swa_layer(const fg_gguf_t *g, const fg_llama_arch_t *a,
    const fg_llama_hparams_t *hp, uint32_t i, uint32_t *swa, char *err,
    size_t errlen)
{
    int                  rc;
    char                 name[128];
    uint32_t             n;
    const fg_gguf_kv_t  *kv;

    *swa = 0;

    if (a->swa_pattern == 0 || hp->n_swa == 0) {
        return 0;
    }

    snprintf(name, sizeof(name), "%s.attention.sliding_window_pattern",
             a->name);

    kv = fg_gguf_find_kv(g, name);

    if (kv && kv->type == FG_GGUF_ARRAY) {
        rc = fg_gguf_get_arr(g, name, FG_GGUF_ARR_INT, &kv, err, errlen);

        if (rc != 0 || kv->n != hp->n_layer) {
            if (rc == 0) {
                fg_err_printf(err, errlen, "metadata '%s' has %llu "
                              "elements for %u blocks", name,
                              (unsigned long long) kv->n, hp->n_layer);
            }

            return -1;
        }

        *swa = fg_gguf_arr_i64(kv, i) != 0;
        return 0;
    }

    n = a->swa_pattern;

    if (fg_gguf_get_u32(g, name, &n, err, errlen) == -1) {
        return -1;
    }

    *swa = n == 0 || i % n < n - 1;

    return 0;
}


/* rows [r0, r0 + rows) of t as a tensor of its own */
static const fg_gguf_tensor_t *
fg_llama_view(fg_gguf_tensor_t *v, const fg_gguf_tensor_t *t, uint64_t r0,
    uint64_t rows)
{
    size_t  row;

    row = fg_ggml_row_size(t->type, t->ne[0]);

    *v = *t;
    v->ne[1] = rows;
    v->n_elements = t->ne[0] * rows;
    v->size = row * rows;
    v->offset = t->offset + row * r0;
    v->data = (const char *) t->data + row * r0;

    return v;
}


int
fg_llama_arch_block(const fg_gguf_t *g, const fg_llama_arch_t *a,
    fg_llama_model_t *m, uint32_t i, const fg_gguf_tensor_t *qkv,
    const fg_gguf_tensor_t *up, char *err, size_t errlen)
{
    uint64_t             q, kv;
    fg_gguf_tensor_t    *v;
    fg_llama_layer_t    *l;
    fg_llama_hparams_t  *hp;

    hp = &m->hp;
    l = &m->layers[i];
    v = &m->views[5 * (size_t) i];
    q = (uint64_t) hp->n_head * hp->head_dim;
    kv = (uint64_t) hp->n_head_kv * hp->head_dim;

    if (fg_llama_arch_swa_layer(g, a, hp, i, &l->swa, err, errlen) != 0) {
        return -1;
    }

    if (qkv) {
        l->wq = fg_llama_view(&v[0], qkv, 0, q);
        l->wk = fg_llama_view(&v[1], qkv, q, kv);
        l->wv = fg_llama_view(&v[2], qkv, q + kv, kv);
    }

    if (up) {
        l->w_gate = fg_llama_view(&v[3], up, 0, hp->n_ff);
        l->w_up = fg_llama_view(&v[4], up, hp->n_ff, hp->n_ff);
    }

    return 0;
}


int
fg_llama_arch_refuse(const fg_gguf_t *g, const fg_llama_arch_t *a,
    char *err, size_t errlen)
{
    if ((a->flags & FG_ARCH_TIED) && fg_gguf_find_tensor(g, "output.weight"))
    {
        fg_err_printf(err, errlen, "tensor 'output.weight': %s ties its "
                      "output to token_embd.weight (llama.cpp does not "
                      "read it either)", a->name);
        return -1;
    }

    return 0;
}
