
/*
 * fairgate: the random-weight model generator, over the GGUF writer.
 *
 * The generator declares every tensor, keeping beside the writer how each
 * is to be filled, then writes their data one row at a time, so that a
 * model of any size is generated in a row's memory.  Each tensor draws
 * from a stream of its own (the seed and its index): a tensor's values do
 * not depend on the tensors before it.
 */


#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fg_gguf_gen.h"
#include "fg_ggml_types.h"
#include "fg_gguf_mix.h"
#include "fg_gguf_quant.h"
#include "fg_gguf_write.h"
#include "fg_llama.h"
#include "fg_rand.h"


#define FG_GEN_ARCHS  "llama qwen2 qwen3 gemma gemma2 gemma3 phi3"


typedef enum {
    FG_GEN_MATRIX = 0,              /* U(-a, a), a = sqrt(3 / fan-in) */
    FG_GEN_EMBD,                    /* U(-1, 1) */
    FG_GEN_NORM,                    /* 1 + U(-0.1, 0.1) */
    FG_GEN_BIAS,                    /* U(-0.1, 0.1) */
    FG_GEN_ROPE,                    /* Llama 3 factors */
    FG_GEN_ROPE_LONG,               /* Phi-3's LongRoPE factors */
    FG_GEN_ROPE_SHORT
} fg_gen_kind_e;


/* a declared tensor and how to fill it */
typedef struct {
    uint32_t                   type;
    uint32_t                   kind;        /* fg_gen_kind_e */
    uint64_t                   ne0;
    uint64_t                   rows;
} fg_gen_tensor_t;


/* one model being generated */
typedef struct {
    const fg_gguf_gen_conf_t  *c;
    fg_gguf_writer_t          *w;
    fg_gen_tensor_t           *t;
    uint32_t                   n_tensors;
    uint32_t                   hd;          /* head size */
    uint32_t                   n_vocab;
    int                        tied;
    float                      embd_scale;  /* gemma: 1 / sqrt(n_embd) */
} fg_gen_t;


/* the architecture is one of a space-separated list */
static int
fg_gen_arch_in(const fg_gguf_gen_conf_t *c, const char *list)
{
    size_t       n;
    const char  *p;

    n = strlen(c->arch);

    for (p = strstr(list, c->arch); p; p = strstr(p + 1, c->arch)) {
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) {
            return 1;
        }
    }

    return 0;
}


/* uniform in [-1, 1) */
static inline float
fg_gen_uniform(fg_rand_t *r)
{
    return (float) (fg_rand_next(r) >> 40) * 0x1p-23f - 1.0f;
}


void
fg_gguf_gen_defaults(fg_gguf_gen_conf_t *c)
{
    memset(c, 0, sizeof(fg_gguf_gen_conf_t));

    c->arch = "llama";
    c->name = "fairgate-random";
    c->type = FG_GGML_F32;
    c->version = 3;
    c->n_ctx = 2048;
    c->n_embd = 64;
    c->n_layer = 5;
    c->n_ff = 172;
    c->n_head = 8;
    c->n_head_kv = 4;
    c->rms_eps = 1e-5f;
    c->rope_base = 10000.0f;
    c->rope_factor = 1.0f;
    c->rope_low = 1.0f;
    c->rope_high = 4.0f;
    c->rope_orig_ctx = 8192;
    c->seed = 1;
}


uint64_t
fg_gguf_gen_params(const fg_gguf_gen_conf_t *c)
{
    int       tied;
    uint64_t  embd, q, kv, hd, layer, vocab;

    embd = c->n_embd;
    hd = c->head_dim ? c->head_dim : (c->n_head ? embd / c->n_head : 0);
    q = (uint64_t) c->n_head * hd;
    kv = (uint64_t) c->n_head_kv * hd;
    vocab = c->n_vocab ? c->n_vocab : 256 + 3;
    tied = c->tied || fg_gen_arch_in(c, "gemma gemma2");

    layer = 2 * embd + embd * q * 2 + embd * kv * 2
            + 3 * embd * c->n_ff;

    if (fg_gen_arch_in(c, "qwen2")) {
        layer += q + 2 * kv;
    }

    if (fg_gen_arch_in(c, "qwen3 gemma3")) {
        layer += 2 * hd;
    }

    if (fg_gen_arch_in(c, "gemma2 gemma3")) {
        layer += 2 * embd;
    }

    return embd * vocab * (tied ? 1 : 2) + embd + layer * c->n_layer;
}


/* every tokenizer.* entry of another GGUF file */
static int
fg_gen_tokenizer_copy(const fg_gguf_gen_conf_t *c, fg_gguf_writer_t *w,
    uint32_t *n_vocab, char *err, size_t errlen)
{
    int                  rc;
    uint64_t             k;
    fg_gguf_t           *g;
    const fg_gguf_kv_t  *kv;

    g = fg_gguf_open(c->tokenizer_from, err, errlen);
    if (g == NULL) {
        return -1;
    }

    if (fg_gguf_get_arr(g, "tokenizer.ggml.tokens", FG_GGUF_STRING, &kv,
                        NULL, 0)
        != 0)
    {
        snprintf(err, errlen, "%s has no tokenizer.ggml.tokens",
                 c->tokenizer_from);
        fg_gguf_close(g);
        return -1;
    }

    *n_vocab = (uint32_t) kv->n;
    rc = 0;

    for (k = 0; rc == 0 && k < g->n_kv; k++) {
        kv = &g->kv[k];

        if (kv->key.len > 10 && memcmp(kv->key.data, "tokenizer.", 10) == 0)
        {
            rc = fg_gguf_w_copy(w, kv);
        }
    }

    fg_gguf_close(g);

    return rc;
}


/*
 * Synthetic: SentencePiece-style with byte fallback only, so that any
 * text encodes (one token per byte); the rest of the vocabulary is
 * unused padding up to the requested size.
 */
static int
fg_gen_tokenizer_bytes(const fg_gguf_gen_conf_t *c, fg_gguf_writer_t *w,
    uint32_t *n_vocab, char *err, size_t errlen)
{
    int        rc;
    char     **strs;
    float     *scores;
    int32_t   *types;
    uint32_t   i, n;

    n = c->n_vocab ? c->n_vocab : 3 + 256;

    if (n < 3 + 256) {
        snprintf(err, errlen, "a vocabulary of %u: the synthetic tokenizer "
                 "needs 259 (unk, bos, eos and 256 bytes)", n);
        return -1;
    }

    strs = calloc(n, sizeof(char *));
    scores = calloc(n, sizeof(float));
    types = calloc(n, sizeof(int32_t));

    rc = -1;

    if (strs == NULL || scores == NULL || types == NULL) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }

    for (i = 0; i < n; i++) {
        strs[i] = malloc(24);

        if (strs[i] == NULL) {
            snprintf(err, errlen, "out of memory");
            goto done;
        }

        if (i < 3) {
            strcpy(strs[i], i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>");
            types[i] = i == 0 ? 2 : 3;

        } else if (i < 3 + 256) {
            snprintf(strs[i], 24, "<0x%02X>", i - 3);
            types[i] = 6;

        } else {
            snprintf(strs[i], 24, "<unused%u>", i - 3 - 256);
            types[i] = 5;
        }
    }

    fg_gguf_w_str(w, "tokenizer.ggml.model", "llama");
    fg_gguf_w_arr_str(w, "tokenizer.ggml.tokens", (const char *const *) strs,
                      NULL, n);
    fg_gguf_w_arr(w, "tokenizer.ggml.scores", FG_GGUF_FLOAT32, scores, n);
    fg_gguf_w_arr(w, "tokenizer.ggml.token_type", FG_GGUF_INT32, types, n);
    fg_gguf_w_u32(w, "tokenizer.ggml.unknown_token_id", 0);
    fg_gguf_w_u32(w, "tokenizer.ggml.bos_token_id", 1);
    fg_gguf_w_u32(w, "tokenizer.ggml.eos_token_id", 2);
    rc = fg_gguf_w_bool(w, "tokenizer.ggml.add_bos_token", 1);

    *n_vocab = n;

done:

    if (strs) {
        for (i = 0; i < n; i++) {
            free(strs[i]);
        }
    }

    free(strs);
    free(scores);
    free(types);

    return rc;
}


/*
 * Phi-3's factors in their shape: the short ones a little above 1, the
 * long ones rising to the context's growth over the original (at least
 * 4), slowest pairs most, as Phi-3-mini-128k's do; the attention factor
 * as its converter computes it.
 */
static void
fg_gen_longrope(const fg_gguf_gen_conf_t *c, int is_long, uint32_t n,
    float *row)
{
    double    x, grow;
    uint32_t  i;

    /* at least 4, so that the two differ whatever the contexts */
    grow = (double) c->n_ctx / c->longrope_ctx;
    grow = grow > 4 ? grow : 4;

    for (i = 0; i < n; i++) {
        x = n > 1 ? (double) i / (n - 1) : 0;
        row[i] = (float) (is_long ? 1 + (grow - 1) * x * x : 1 + 0.5 * x);
    }
}


static float
fg_gen_longrope_attn(const fg_gguf_gen_conf_t *c)
{
    double  grow;

    grow = (double) c->n_ctx / c->longrope_ctx;

    if (grow <= 1 || c->longrope_ctx < 2) {
        return 1.0f;
    }

    return (float) sqrt(1 + log(grow) / log((double) c->longrope_ctx));
}


/* 0, or -1 with the configuration's fault in err */
static int
fg_gen_check(const fg_gguf_gen_conf_t *c, char *err, size_t errlen)
{
    uint32_t  hd;

    if (!fg_gen_arch_in(c, FG_GEN_ARCHS)) {
        snprintf(err, errlen, "architecture '%s' (%s)", c->arch,
                 FG_GEN_ARCHS);
        return -1;
    }

    if (fg_gguf_mix_of(c->type, c->mix) == NULL) {
        snprintf(err, errlen, "tensor type %u, mixture %u (%s)", c->type,
                 c->mix, fg_gguf_mix_names());
        return -1;
    }

    if (c->n_embd == 0 || c->n_layer == 0 || c->n_ff == 0 || c->n_head == 0
        || c->n_head_kv == 0
        || (c->head_dim == 0 && c->n_embd % c->n_head != 0)
        || c->n_head % c->n_head_kv != 0)
    {
        snprintf(err, errlen, "impossible shape: embedding %u, heads %u, "
                 "kv heads %u (the embedding must split into heads, or "
                 "a head size be given, the heads into kv groups)",
                 c->n_embd, c->n_head, c->n_head_kv);
        return -1;
    }

    if (c->longrope_ctx && !fg_gen_arch_in(c, "phi3")) {
        snprintf(err, errlen, "LongRoPE factors are phi3's, not %s's",
                 c->arch);
        return -1;
    }

    hd = c->head_dim ? c->head_dim : c->n_embd / c->n_head;

    if (hd % 2 != 0) {
        snprintf(err, errlen, "heads of %u: RoPE needs an even size", hd);
        return -1;
    }

    /* attn_output's rows are the query's length */
    if (c->type == FG_GGML_Q8_0 && (hd * c->n_head) % 32 != 0) {
        snprintf(err, errlen, "q8_0 needs a query length (%u heads of %u) "
                 "that is a multiple of 32", c->n_head, hd);
        return -1;
    }

    /* k-quants fall back where rows are not whole blocks, as llama.cpp's
     * do (fg_gguf_mix.c); the others refuse */
    if (fg_ggml_block_size(c->type) == 32
        && (c->n_embd % 32 != 0 || c->n_ff % 32 != 0))
    {
        snprintf(err, errlen, "%s needs embedding (%u) and feed-forward "
                 "(%u) lengths that are multiples of 32",
                 fg_ggml_type_name(c->type), c->n_embd, c->n_ff);
        return -1;
    }

    return 0;
}


/* general.* and the architecture's hyperparameters */
static void
fg_gen_metadata(fg_gen_t *g)
{
    char                       key[128];
    uint32_t                   ftype, mt;
    fg_gguf_writer_t          *w;
    const fg_gguf_gen_conf_t  *c;

    c = g->c;
    w = g->w;
    mt = c->type;

    ftype = fg_gguf_mix_of(mt, c->mix)->ftype;

    fg_gguf_w_str(w, "general.architecture", c->arch);
    fg_gguf_w_str(w, "general.name", c->name ? c->name : "fairgate-random");
    fg_gguf_w_u32(w, "general.file_type", ftype);

    if (fg_ggml_block_size(mt) > 1) {
        fg_gguf_w_u32(w, "general.quantization_version", 2);
    }

#define fg_gen_key(suffix, call)                                              \
    snprintf(key, sizeof(key), "%s.%s", c->arch, suffix);                     \
    call

    fg_gen_key("context_length", fg_gguf_w_u32(w, key, c->n_ctx));
    fg_gen_key("embedding_length", fg_gguf_w_u32(w, key, c->n_embd));
    fg_gen_key("block_count", fg_gguf_w_u32(w, key, c->n_layer));
    fg_gen_key("feed_forward_length", fg_gguf_w_u32(w, key, c->n_ff));
    fg_gen_key("attention.head_count", fg_gguf_w_u32(w, key, c->n_head));
    fg_gen_key("attention.head_count_kv",
               fg_gguf_w_u32(w, key, c->n_head_kv));
    fg_gen_key("attention.layer_norm_rms_epsilon",
               fg_gguf_w_f32(w, key, c->rms_eps));
    fg_gen_key("rope.freq_base", fg_gguf_w_f32(w, key, c->rope_base));
    fg_gen_key("rope.dimension_count", fg_gguf_w_u32(w, key, g->hd));

    if (g->hd * c->n_head != c->n_embd) {
        fg_gen_key("attention.key_length", fg_gguf_w_u32(w, key, g->hd));
        fg_gen_key("attention.value_length", fg_gguf_w_u32(w, key, g->hd));
    }

    if (c->n_swa) {
        fg_gen_key("attention.sliding_window",
                   fg_gguf_w_u32(w, key, c->n_swa));
    }

    if (c->rope_base_swa > 0) {
        fg_gen_key("rope.freq_base_swa",
                   fg_gguf_w_f32(w, key, c->rope_base_swa));
    }

    if (c->attn_softcap > 0) {
        fg_gen_key("attn_logit_softcapping",
                   fg_gguf_w_f32(w, key, c->attn_softcap));
    }

    if (c->final_softcap > 0) {
        fg_gen_key("final_logit_softcapping",
                   fg_gguf_w_f32(w, key, c->final_softcap));
    }

    if (c->longrope_ctx) {
        fg_gen_key("rope.scaling.original_context_length",
                   fg_gguf_w_u32(w, key, c->longrope_ctx));
        fg_gen_key("rope.scaling.attn_factor",
                   fg_gguf_w_f32(w, key, fg_gen_longrope_attn(c)));
    }

#undef fg_gen_key
}


/* declares a tensor of ne1 rows (0: a vector) and records how to fill it */
static void
fg_gen_tensor(fg_gen_t *g, const char *name, uint32_t type, uint64_t ne0,
    uint64_t ne1, uint32_t kind)
{
    int               i;
    uint64_t          ne[2];
    fg_gen_tensor_t  *t;

    ne[0] = ne0;
    ne[1] = ne1;

    /* a matrix's type: the file's type or mixture says */
    type = fg_gguf_mix_type(g->c->type, g->c->mix, name, type, ne1 ? 2 : 1,
                            ne0, g->c->n_layer, g->c->tied);

    i = fg_gguf_w_tensor(g->w, name, type, ne1 ? 2 : 1, ne);

    /* after an error the writer refuses the header: nothing is filled */
    if (i < 0) {
        return;
    }

    t = &g->t[i];
    t->type = type;
    t->kind = kind;
    t->ne0 = ne0;
    t->rows = ne1 ? ne1 : 1;
    g->n_tensors = (uint32_t) i + 1;
}


/* the tensors of block i, as the architecture names and shapes them */
static void
fg_gen_block(fg_gen_t *g, uint32_t i)
{
    char                       name[64];
    uint32_t                   mt, e;
    uint64_t                   q, kv;
    const fg_gguf_gen_conf_t  *c;

    c = g->c;
    mt = c->type;
    e = c->n_embd;
    q = (uint64_t) c->n_head * g->hd;
    kv = (uint64_t) c->n_head_kv * g->hd;

#define fg_gen_blk(suffix, type, ne0, ne1, kind)                              \
    snprintf(name, sizeof(name), "blk.%u." suffix, i);                        \
    fg_gen_tensor(g, name, type, ne0, ne1, kind)

    fg_gen_blk("attn_norm.weight", FG_GGML_F32, e, 0, FG_GEN_NORM);

    if (fg_gen_arch_in(c, "phi3")) {
        fg_gen_blk("attn_qkv.weight", mt, e, q + 2 * kv, FG_GEN_MATRIX);

    } else {
        fg_gen_blk("attn_q.weight", mt, e, q, FG_GEN_MATRIX);
        fg_gen_blk("attn_k.weight", mt, e, kv, FG_GEN_MATRIX);
        fg_gen_blk("attn_v.weight", mt, e, kv, FG_GEN_MATRIX);
    }

    if (fg_gen_arch_in(c, "qwen2")) {
        fg_gen_blk("attn_q.bias", FG_GGML_F32, q, 0, FG_GEN_BIAS);
        fg_gen_blk("attn_k.bias", FG_GGML_F32, kv, 0, FG_GEN_BIAS);
        fg_gen_blk("attn_v.bias", FG_GGML_F32, kv, 0, FG_GEN_BIAS);
    }

    if (fg_gen_arch_in(c, "qwen3 gemma3")) {
        fg_gen_blk("attn_q_norm.weight", FG_GGML_F32, g->hd, 0, FG_GEN_NORM);
        fg_gen_blk("attn_k_norm.weight", FG_GGML_F32, g->hd, 0, FG_GEN_NORM);
    }

    fg_gen_blk("attn_output.weight", mt, q, e, FG_GEN_MATRIX);

    if (fg_gen_arch_in(c, "gemma2 gemma3")) {
        fg_gen_blk("post_attention_norm.weight", FG_GGML_F32, e, 0,
                   FG_GEN_NORM);
    }

    fg_gen_blk("ffn_norm.weight", FG_GGML_F32, e, 0, FG_GEN_NORM);

    if (fg_gen_arch_in(c, "phi3")) {
        fg_gen_blk("ffn_up.weight", mt, e, 2 * (uint64_t) c->n_ff,
                   FG_GEN_MATRIX);
        fg_gen_blk("ffn_down.weight", mt, c->n_ff, e, FG_GEN_MATRIX);

    } else {
        fg_gen_blk("ffn_gate.weight", mt, e, c->n_ff, FG_GEN_MATRIX);
        fg_gen_blk("ffn_down.weight", mt, c->n_ff, e, FG_GEN_MATRIX);
        fg_gen_blk("ffn_up.weight", mt, e, c->n_ff, FG_GEN_MATRIX);
    }

    if (fg_gen_arch_in(c, "gemma2 gemma3")) {
        fg_gen_blk("post_ffw_norm.weight", FG_GGML_F32, e, 0, FG_GEN_NORM);
    }

#undef fg_gen_blk
}


/* every tensor, in the order of their data */
static int
fg_gen_declare(fg_gen_t *g, char *err, size_t errlen)
{
    uint32_t                   i, mt;
    const fg_gguf_gen_conf_t  *c;

    c = g->c;
    mt = c->type;

    /* at most 14 tensors a block */
    g->t = calloc(4 + 14 * (size_t) c->n_layer, sizeof(fg_gen_tensor_t));
    if (g->t == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    fg_gen_tensor(g, "token_embd.weight", mt, c->n_embd, g->n_vocab,
                  FG_GEN_EMBD);
    fg_gen_tensor(g, "output_norm.weight", FG_GGML_F32, c->n_embd, 0,
                  FG_GEN_NORM);

    if (!g->tied) {
        fg_gen_tensor(g, "output.weight", mt, c->n_embd, g->n_vocab,
                      FG_GEN_MATRIX);
    }

    if (c->rope_factor > 1) {
        fg_gen_tensor(g, "rope_freqs.weight", FG_GGML_F32, g->hd / 2, 0,
                      FG_GEN_ROPE);
    }

    if (c->longrope_ctx) {
        fg_gen_tensor(g, "rope_factors_long.weight", FG_GGML_F32, g->hd / 2,
                      0, FG_GEN_ROPE_LONG);
        fg_gen_tensor(g, "rope_factors_short.weight", FG_GGML_F32,
                      g->hd / 2, 0, FG_GEN_ROPE_SHORT);
    }

    for (i = 0; i < c->n_layer; i++) {
        fg_gen_block(g, i);
    }

    return 0;
}


/* one row of a tensor, drawn from its stream */
static void
fg_gen_row(const fg_gen_t *g, const fg_gen_tensor_t *t, fg_rand_t *rng,
    float *row)
{
    uint64_t                   j;
    const fg_gguf_gen_conf_t  *c;

    c = g->c;

    if (t->kind == FG_GEN_ROPE) {
        fg_llama3_rope_factors(g->hd, c->rope_base, c->rope_factor,
                               c->rope_low, c->rope_high, c->rope_orig_ctx,
                               row);
        return;
    }

    if (t->kind == FG_GEN_ROPE_LONG || t->kind == FG_GEN_ROPE_SHORT) {
        fg_gen_longrope(c, t->kind == FG_GEN_ROPE_LONG, g->hd / 2, row);
        return;
    }

    for (j = 0; j < t->ne0; j++) {
        row[j] = fg_gen_uniform(rng);

        if (t->kind == FG_GEN_MATRIX) {
            row[j] *= sqrtf(3.0f / t->ne0);

        } else if (t->kind == FG_GEN_NORM) {
            row[j] = 1.0f + 0.1f * row[j];

        } else if (t->kind == FG_GEN_BIAS) {
            row[j] *= 0.1f;

        } else if (t->kind == FG_GEN_EMBD) {
            row[j] *= g->embd_scale;
        }
    }
}


/*
 * The tensors' data, FG_GGUF_QUANT_ROWS rows at a time: drawn in order
 * from the tensor's stream, quantized on the pool, written; any size fits
 * in memory.
 */
static int
fg_gen_data(fg_gen_t *g, FILE *f, char *err, size_t errlen)
{
    int                     rc;
    void                   *out;
    float                  *rows;
    uint32_t                i;
    uint64_t                r, n, k, maxrow, rowbytes;
    fg_rand_t               rng;
    fg_pool_t              *pool;
    const fg_gen_tensor_t  *t;

    maxrow = g->c->n_embd > g->c->n_ff ? g->c->n_embd : g->c->n_ff;
    maxrow = maxrow > (uint64_t) g->c->n_head * g->hd
             ? maxrow : (uint64_t) g->c->n_head * g->hd;
    rows = malloc(FG_GGUF_QUANT_ROWS * maxrow * sizeof(float));
    out = malloc(FG_GGUF_QUANT_ROWS * maxrow * sizeof(float));
    pool = fg_gguf_quant_pool(g->c->threads);

    if (rows == NULL || out == NULL) {
        snprintf(err, errlen, "out of memory");
        free(rows);
        free(out);
        fg_pool_destroy(pool);
        return -1;
    }

    rc = 0;

    for (i = 0; rc == 0 && i < g->n_tensors; i++) {
        t = &g->t[i];
        fg_rand_seed(&rng, g->c->seed * 0x2545f4914f6cdd1dULL + i);
        rowbytes = fg_ggml_row_size(t->type, t->ne0);

        for (r = 0; rc == 0 && r < t->rows; r += n) {
            n = t->rows - r < FG_GGUF_QUANT_ROWS ? t->rows - r
                                                 : FG_GGUF_QUANT_ROWS;

            for (k = 0; k < n; k++) {
                fg_gen_row(g, t, &rng, rows + k * t->ne0);
            }

            fg_gguf_quant_rows(pool, t->type, rows, out, n, t->ne0);
            rc = fg_gguf_w_write_data(g->w, f, out, n * rowbytes);
        }
    }

    free(rows);
    free(out);
    fg_pool_destroy(pool);

    if (rc != 0 || fflush(f) != 0 || ferror(f)) {
        snprintf(err, errlen, "%s", fg_gguf_writer_error(g->w)[0]
                                    ? fg_gguf_writer_error(g->w)
                                    : "write failed");
        return -1;
    }

    return 0;
}


int
fg_gguf_gen(const fg_gguf_gen_conf_t *c, FILE *f, char *err, size_t errlen)
{
    int        rc;
    fg_gen_t   g;

    if (errlen) {
        err[0] = '\0';
    }

    if (fg_gen_check(c, err, errlen) != 0) {
        return -1;
    }

    memset(&g, 0, sizeof(fg_gen_t));
    g.c = c;
    g.hd = c->head_dim ? c->head_dim : c->n_embd / c->n_head;
    g.tied = c->tied || fg_gen_arch_in(c, "gemma gemma2");

    /*
     * Gemma multiplies the embedding by sqrt(n_embd): embeddings drawn
     * that much smaller (as real ones are) keep the residual stream at
     * the scale the layers add to, so a continuation is not the prompt's
     * last token repeated.
     */
    g.embd_scale = fg_gen_arch_in(c, "gemma gemma2 gemma3")
                   ? 1.0f / sqrtf((float) c->n_embd) : 1.0f;

    g.w = fg_gguf_writer_new(c->version, c->alignment);
    if (g.w == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    fg_gen_metadata(&g);

    rc = c->tokenizer_from
         ? fg_gen_tokenizer_copy(c, g.w, &g.n_vocab, err, errlen)
         : c->tokenizer_write
         ? c->tokenizer_write(c, g.w, &g.n_vocab, err, errlen)
         : fg_gen_tokenizer_bytes(c, g.w, &g.n_vocab, err, errlen);

    if (rc != 0) {
        goto failed;
    }

    if (c->n_vocab && c->n_vocab != g.n_vocab) {
        snprintf(err, errlen, "a vocabulary of %u with a tokenizer of %u "
                 "tokens", c->n_vocab, g.n_vocab);
        goto failed;
    }

    if (fg_gen_declare(&g, err, errlen) != 0) {
        goto failed;
    }

    if (fg_gguf_w_write_header(g.w, f) != 0) {
        snprintf(err, errlen, "%s", fg_gguf_writer_error(g.w));
        goto failed;
    }

    rc = fg_gen_data(&g, f, err, errlen);

    free(g.t);
    fg_gguf_writer_free(g.w);

    return rc;

failed:

    /* the writer's first error is the cause of what followed */
    if (fg_gguf_writer_error(g.w)[0]) {
        snprintf(err, errlen, "%s", fg_gguf_writer_error(g.w));
    }

    free(g.t);
    fg_gguf_writer_free(g.w);

    return -1;
}


int
fg_gguf_gen_file(const fg_gguf_gen_conf_t *c, const char *path, char *err,
    size_t errlen)
{
    int    rc;
    FILE  *f;

    f = fopen(path, "wb");
    if (f == NULL) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }

    rc = fg_gguf_gen(c, f, err, errlen);

    if (fclose(f) != 0 && rc == 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        rc = -1;
    }

    if (rc != 0) {
        unlink(path);
    }

    return rc;
}
