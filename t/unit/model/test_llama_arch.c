
/*
 * fairgate: the binding of each architecture (engine/model/fg_llama.c,
 * fg_llama_arch.c) on files the generator writes: the hyperparameters
 * llama.cpp would read (activation, embedding scale, query scale with the
 * 27B's rule, soft-capping and its defaults, sliding-window layers and
 * their RoPE base, fused tensors as views of the file's rows), and the
 * refusals, each one line naming the key or tensor: an unknown
 * architecture, gemma2 with an output matrix, a rope attention factor
 * out of range, a q norm missing, a window pattern of the wrong length;
 * and Phi-3's LongRoPE factors, long or short as the context says.
 */


#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "fg_tap.h"
#include "fg_test_file.h"
#include "fg_test_gen.h"
#include "fg_ggml_types.h"
#include "fg_gguf_gen.h"
#include "fg_gguf_write.h"
#include "fg_llama.h"


/* what a copy of a file changes: a key set (u32, f32 or string), a
 * tensor added (F32 zeros of n values) or left out */
typedef struct {
    const char  *key;
    uint32_t     u;
    float        f;
    const char  *s;
    const char  *add_tensor;
    uint64_t     add_n;
    const char  *drop_tensor;
    int          arr;               /* key: a bool array of u elements */
} edit_t;


/* src copied into dst with e applied: 0, or -1 said */
static int
copy_edit(const char *src, const char *dst, const edit_t *e)
{
    int                      rc;
    char                     err[FG_GGUF_ERR_LEN], name[64];
    FILE                    *f;
    uint8_t                  flags[64];
    uint64_t                 i, ne[4];
    fg_gguf_t               *g;
    fg_gguf_writer_t        *w;
    const fg_gguf_kv_t      *kv;
    const fg_gguf_tensor_t  *t;

    static float  zeros[4096];

    g = fg_gguf_open(src, err, sizeof(err));
    if (g == NULL) {
        diag("%s", err);
        return -1;
    }

    w = fg_gguf_writer_new(3, 0);

    for (i = 0; i < g->n_kv; i++) {
        kv = &g->kv[i];

        if (e->key && fg_gguf_str_eq(kv->key, e->key)) {
            continue;
        }

        fg_gguf_w_copy(w, kv);
    }

    if (e->key && e->arr) {
        memset(flags, 1, sizeof(flags));
        fg_gguf_w_arr(w, e->key, FG_GGUF_BOOL, flags, e->u);

    } else if (e->key && e->s) {
        fg_gguf_w_str(w, e->key, e->s);

    } else if (e->key && e->f != 0) {
        fg_gguf_w_f32(w, e->key, e->f);

    } else if (e->key) {
        fg_gguf_w_u32(w, e->key, e->u);
    }

    for (i = 0; i < g->n_tensors; i++) {
        t = &g->tensors[i];
        snprintf(name, sizeof(name), "%.*s", (int) t->name.len,
                 t->name.data);

        if (e->drop_tensor && strcmp(name, e->drop_tensor) == 0) {
            continue;
        }

        fg_gguf_w_tensor(w, name, t->type, t->n_dims, t->ne);
    }

    if (e->add_tensor) {
        ne[0] = e->add_n;
        fg_gguf_w_tensor(w, e->add_tensor, FG_GGML_F32, 1, ne);
    }

    f = fopen(dst, "wb");
    rc = f && fg_gguf_w_write_header(w, f) == 0 ? 0 : -1;

    for (i = 0; rc == 0 && i < g->n_tensors; i++) {
        t = &g->tensors[i];
        snprintf(name, sizeof(name), "%.*s", (int) t->name.len,
                 t->name.data);

        if (e->drop_tensor && strcmp(name, e->drop_tensor) == 0) {
            continue;
        }

        rc = fg_gguf_w_write_data(w, f, t->data, t->size);
    }

    if (rc == 0 && e->add_tensor) {
        rc = fg_gguf_w_write_data(w, f, zeros, e->add_n * sizeof(float));
    }

    if (f) {
        fclose(f);
    }

    if (rc != 0) {
        diag("copy: %s", fg_gguf_writer_error(w));
    }

    fg_gguf_writer_free(w);
    fg_gguf_close(g);

    return rc;
}


/* loads path: 0 and m filled, or -1 with the message in err */
static int
load(const char *path, fg_gguf_t **g, fg_llama_model_t *m, char *err,
    size_t len)
{
    return fg_llama_open(path, g, m, err, len);
}


static void
gen(const char *file, const char *arch, fg_gguf_gen_conf_t *c, char *path,
    size_t len)
{
    fg_gguf_gen_defaults(c);
    c->arch = arch;
    c->n_layer = 6;

    if (fg_test_gen(file, c, path, len) != 0) {
        diag("cannot generate %s", file);
        exit(1);
    }
}


static void
test_qwen3(void)
{
    char                path[256], err[FG_GGUF_ERR_LEN];
    fg_gguf_t          *g;
    fg_llama_model_t    m;
    fg_gguf_gen_conf_t  c;

    fg_gguf_gen_defaults(&c);
    c.arch = "qwen3";
    c.head_dim = 16;
    c.n_head_kv = 2;
    fg_test_gen("q3.gguf", &c, path, sizeof(path));

    if (!ok(load(path, &g, &m, err, sizeof(err)) == 0, "qwen3 loads")) {
        diag("%s", err);
        return;
    }

    ok(m.hp.head_dim == 16 && m.hp.n_head * m.hp.head_dim == 128
       && m.hp.n_embd == 64, "qwen3: heads of 16 from key_length, q of "
       "128 beside an embedding of 64");
    ok(m.hp.rope_pairing == FG_ROPE_HALVES && m.hp.ffn_act == FG_FFN_SILU
       && m.hp.embd_scale == 1.0f && m.layers[0].bq == NULL,
       "qwen3: NEOX pairs, SwiGLU, no embedding scale, no biases");
    ok(m.layers[4].q_norm && m.layers[4].k_norm
       && m.layers[4].q_norm->ne[0] == 16
       && m.layers[0].attn_post_norm == NULL,
       "qwen3: q and k norms of a head's size, no post norms");
    ok(fabsf(m.hp.attn_scale - 0.25f) < 1e-7f && m.hp.n_swa == 0
       && m.hp.final_softcap == 0 && m.hp.attn_softcap == 0,
       "qwen3: q scaled by 1 / sqrt(16), no window, no caps");

    fg_llama_close(g, &m);

    snprintf(err, sizeof(err), "%s/q3-bad.gguf", dir);
    copy_edit(path, err, &(edit_t) {
        .drop_tensor = "blk.3.attn_q_norm.weight" });

    ok(load(err, &g, &m, path, sizeof(path)) == -1
       && strstr(path, "tensor 'blk.3.attn_q_norm.weight' is missing"),
       "qwen3 without a q norm: %s", path);
}


static void
test_gemma(void)
{
    int                 swa;
    char                path[256], bad[256], err[FG_GGUF_ERR_LEN];
    uint32_t            i;
    fg_gguf_t          *g;
    fg_llama_model_t    m;
    fg_gguf_gen_conf_t  c;

    gen("g2.gguf", "gemma2", &c, path, sizeof(path));

    if (!ok(load(path, &g, &m, err, sizeof(err)) == 0, "gemma2 loads")) {
        diag("%s", err);
        return;
    }

    ok(m.tied && m.hp.ffn_act == FG_FFN_GELU
       && fabsf(m.hp.embd_scale - 8.0f) < 1e-6f,
       "gemma2: tied, GeGLU, embedding times sqrt(64)");
    ok(m.hp.attn_softcap == 50.0f && m.hp.final_softcap == 30.0f
       && m.hp.n_swa == 4096 && m.hp.rope_base_swa == m.hp.rope_base,
       "gemma2 without the keys: llama.cpp's caps 50 and 30, window 4096, "
       "the global base");

    swa = 1;

    for (i = 0; i < 6; i++) {
        swa &= m.layers[i].swa == (i % 2 == 0);
    }

    ok(swa && m.layers[1].attn_post_norm && m.layers[1].ffn_post_norm,
       "gemma2: even layers slide; post norms");
    fg_llama_close(g, &m);

    snprintf(bad, sizeof(bad), "%s/g2-out.gguf", dir);
    copy_edit(path, bad, &(edit_t) { .add_tensor = "output.weight",
                                     .add_n = 64 });
    ok(load(bad, &g, &m, err, sizeof(err)) == -1
       && strstr(err, "g2-out.gguf: tensor 'output.weight': gemma2 ties "
                 "its output to token_embd.weight"),
       "gemma2 with output.weight refused: %s", err);

    snprintf(bad, sizeof(bad), "%s/g2-pat.gguf", dir);
    copy_edit(path, bad, &(edit_t) {
        .key = "gemma2.attention.sliding_window_pattern", .u = 5,
        .arr = 1 });
    ok(load(bad, &g, &m, err, sizeof(err)) == -1
       && strstr(err, "metadata 'gemma2.attention.sliding_window_pattern' "
                 "has 5 elements for 6 blocks"),
       "a window pattern of 5 for 6 blocks refused: %s", err);

    /* gemma3: a window only when the file gives one, 5 layers of 6 */
    fg_gguf_gen_defaults(&c);
    c.arch = "gemma3";
    c.n_layer = 7;
    c.n_swa = 16;
    c.rope_base = 1e6f;
    c.tied = 1;
    fg_test_gen("g3.gguf", &c, path, sizeof(path));

    if (!ok(load(path, &g, &m, err, sizeof(err)) == 0, "gemma3 loads")) {
        diag("%s", err);
        return;
    }

    swa = 1;

    for (i = 0; i < 7; i++) {
        swa &= m.layers[i].swa == (i != 5);
    }

    ok(swa && m.hp.n_swa == 16 && m.hp.rope_base_swa == 10000.0f
       && m.hp.rope_factor_swa == 1.0f && m.hp.rope_base == 1e6f,
       "gemma3: layers 0-4 and 6 slide over 16, rotated with base 10000");
    ok(m.hp.attn_softcap == 0 && m.hp.final_softcap == 0
       && m.layers[0].q_norm && m.layers[0].attn_post_norm,
       "gemma3: no caps unless given; q/k norms and post norms");
    fg_llama_close(g, &m);

    c.n_swa = 0;
    c.final_softcap = 30;
    fg_test_gen("g3b.gguf", &c, path, sizeof(path));
    ok(load(path, &g, &m, err, sizeof(err)) == 0 && m.hp.n_swa == 0
       && !m.layers[0].swa && m.hp.final_softcap == 30.0f,
       "gemma3 without a window: no layer slides; its final cap read");
    fg_llama_close(g, &m);
}


/*
 * Phi-3's LongRoPE: the long factors where the trained context exceeds
 * the original one, else the short; the attention factor squared into the
 * scale of q . k; factors of the wrong size refused.
 */
static void
test_phi3_longrope(void)
{
    char                path[256], bad[256], err[FG_GGUF_ERR_LEN];
    float               f;
    fg_gguf_t          *g;
    fg_llama_model_t    m;
    fg_gguf_gen_conf_t  c;
    const fg_gguf_tensor_t  *t;

    fg_gguf_gen_defaults(&c);
    c.arch = "phi3";
    c.longrope_ctx = 256;
    fg_test_gen("p3-long.gguf", &c, path, sizeof(path));

    if (!ok(load(path, &g, &m, err, sizeof(err)) == 0, "phi3 with LongRoPE "
            "loads"))
    {
        diag("%s", err);
        return;
    }

    t = fg_gguf_find_tensor(g, "rope_factors_long.weight");
    f = sqrtf(1.0f + logf(2048.0f / 256) / logf(256.0f));
    ok(t && m.hp.rope_freqs == t->data && m.hp.rope_freqs[3] == 8.0f
       && fabsf(m.hp.attn_scale - f * f / sqrtf(8.0f)) < 1e-6f,
       "a context of 2048 over 256: the long factors, 8 for the last "
       "pair, and q . k scaled by the attention factor %g squared",
       (double) f);
    fg_llama_close(g, &m);

    c.longrope_ctx = 2048;
    fg_test_gen("p3-short.gguf", &c, path, sizeof(path));
    ok(load(path, &g, &m, err, sizeof(err)) == 0
       && (t = fg_gguf_find_tensor(g, "rope_factors_short.weight"))
       && m.hp.rope_freqs == t->data
       && fabsf(m.hp.attn_scale - 1 / sqrtf(8.0f)) < 1e-6f,
       "within the original context: the short factors, no attention "
       "factor");
    fg_llama_close(g, &m);

    snprintf(bad, sizeof(bad), "%s/p3-short4.gguf", dir);
    copy_edit(path, bad, &(edit_t) { .key = "phi3.context_length",
                                     .u = 1024 });
    ok(load(bad, &g, &m, err, sizeof(err)) == 0
       && m.hp.rope_freqs
          == fg_gguf_find_tensor(g, "rope_factors_short.weight")->data,
       "a trained context below the original: the short factors");
    fg_llama_close(g, &m);
}


static void
test_phi3(void)
{
    int                 same;
    char                path[256], bad[256], err[FG_GGUF_ERR_LEN];
    fg_gguf_t          *g;
    fg_llama_model_t    m;
    fg_gguf_gen_conf_t  c;
    const fg_gguf_tensor_t  *qkv, *up;

    gen("p3.gguf", "phi3", &c, path, sizeof(path));

    if (!ok(load(path, &g, &m, err, sizeof(err)) == 0, "phi3 loads")) {
        diag("%s", err);
        return;
    }

    qkv = fg_gguf_find_tensor(g, "blk.2.attn_qkv.weight");
    up = fg_gguf_find_tensor(g, "blk.2.ffn_up.weight");

    same = qkv && up
           && m.layers[2].wq->data == qkv->data
           && (const char *) m.layers[2].wk->data
              == (const char *) qkv->data + 64 * 64 * 4
           && (const char *) m.layers[2].wv->data
              == (const char *) qkv->data + (64 + 32) * 64 * 4
           && m.layers[2].wk->ne[1] == 32
           && m.layers[2].w_gate->data == up->data
           && (const char *) m.layers[2].w_up->data
              == (const char *) up->data + 172 * 64 * 4
           && m.layers[2].w_up->ne[1] == 172;

    ok(same, "phi3: q, k, v and gate, up are the fused tensors' rows in "
       "order");
    ok(m.hp.rope_pairing == FG_ROPE_HALVES && m.hp.ffn_act == FG_FFN_SILU
       && !m.tied, "phi3: NEOX, SwiGLU, its own output");
    fg_llama_close(g, &m);

    snprintf(bad, sizeof(bad), "%s/p3-attn.gguf", dir);
    copy_edit(path, bad, &(edit_t) { .key = "phi3.rope.scaling.attn_factor",
                                     .f = -1.0f });
    ok(load(bad, &g, &m, err, sizeof(err)) == -1
       && strstr(err, "metadata 'phi3.rope.scaling.attn_factor' -1 is out "
                 "of range"),
       "a negative rope attention factor refused: %s", err);

    /* phi3's window key is read by nobody (llama.cpp disables it) */
    snprintf(bad, sizeof(bad), "%s/p3-swa.gguf", dir);
    copy_edit(path, bad, &(edit_t) { .key = "phi3.attention.sliding_window",
                                     .u = 2047 });
    ok(load(bad, &g, &m, err, sizeof(err)) == 0 && m.hp.n_swa == 0,
       "phi3's sliding_window key is ignored, as llama.cpp does");
    fg_llama_close(g, &m);
}


static void
test_llama(void)
{
    char                path[256], bad[256], err[FG_GGUF_ERR_LEN];
    fg_gguf_t          *g;
    fg_llama_model_t    m;
    fg_gguf_gen_conf_t  c;

    /* Mistral 7B: llama with a window llama.cpp does not apply */
    fg_gguf_gen_defaults(&c);
    c.n_swa = 4096;
    fg_test_gen("mistral.gguf", &c, path, sizeof(path));
    ok(load(path, &g, &m, err, sizeof(err)) == 0 && m.hp.n_swa == 0
       && !m.layers[0].swa && m.hp.embd_scale == 1.0f
       && m.hp.ffn_act == FG_FFN_SILU && m.layers[0].q_norm == NULL,
       "llama with llama.attention.sliding_window loads, no window");
    fg_llama_close(g, &m);

    snprintf(bad, sizeof(bad), "%s/arch.gguf", dir);
    copy_edit(path, bad, &(edit_t) { .key = "general.architecture",
                                     .s = "mamba" });
    ok(load(bad, &g, &m, err, sizeof(err)) == -1
       && strstr(err, "arch.gguf: metadata 'general.architecture': "
                 "unsupported architecture 'mamba' (fairgate runs llama, "
                 "qwen2, qwen3, gemma, gemma2, gemma3, phi3)"),
       "an unknown architecture: %s", err);
}


int
main(void)
{
    fg_test_dir_make("llama_arch");

    test_qwen3();
    test_gemma();
    test_phi3();
    test_phi3_longrope();
    test_llama();

    fg_test_dir_remove();

    return done_testing();
}
