
/*
 * fairgate: fairgate-gguf-gen's types and mixtures, read back with the
 * engine's GGUF reader: every weight type written whole (each matrix in
 * it, vectors F32, general.file_type as llama.cpp numbers it, and a
 * matrix's bytes those of the kernels' quantizer on the F32 model's
 * values); llama.cpp's mixtures tensor by tensor against the types its
 * rules give, worked out here by hand for 8 blocks (use_more_bits: blocks
 * 0, 3, 6 and 7); the fallback of k-quants on rows that are not whole
 * blocks; and --convert, whose file must hold the tensors the generator
 * writes for the same model.
 */


#include <stdint.h>
#include <unistd.h>

#include "fg_tap.h"
#include "fg_test_file.h"
#include "fg_ggml_types.h"
#include "fg_gguf.h"
#include "fg_gguf_convert.h"
#include "fg_gguf_gen.h"
#include "fg_gguf_mix.h"
#include "fg_kernels.h"


#define LAYERS  8


static char  path[256], err[FG_GGUF_ERR_LEN];


/* generates the test's model in the named type or mixture */
static fg_gguf_t *
gen(const char *mix, uint32_t n_ff, int tied, const char *name)
{
    fg_gguf_t            *g;
    fg_gguf_gen_conf_t    c;
    const fg_gguf_mix_t  *m;

    m = fg_gguf_mix_find(mix);

    fg_gguf_gen_defaults(&c);
    c.type = m->type;
    c.mix = m->mix;
    c.n_embd = 256;
    c.n_ff = n_ff;
    c.n_layer = LAYERS;
    c.n_head = 4;
    c.n_head_kv = 2;
    c.n_vocab = 300;
    c.tied = tied;

    snprintf(path, sizeof(path), "%s/%s.gguf", dir, name);

    if (fg_gguf_gen_file(&c, path, err, sizeof(err)) != 0) {
        diag("%s: %s", mix, err);
        return NULL;
    }

    g = fg_gguf_open(path, err, sizeof(err));
    if (g == NULL) {
        diag("%s: %s", path, err);
    }

    return g;
}


static uint32_t
type_of(const fg_gguf_t *g, const char *name)
{
    const fg_gguf_tensor_t  *t;

    t = fg_gguf_find_tensor(g, name);

    return t ? t->type : 999;
}


static uint32_t
layer_type(const fg_gguf_t *g, uint32_t i, const char *suffix)
{
    char  name[64];

    snprintf(name, sizeof(name), "blk.%u.%s", i, suffix);

    return type_of(g, name);
}


static int64_t
u32_of(const fg_gguf_t *g, const char *key)
{
    uint32_t  v;

    return fg_gguf_get_u32(g, key, &v, err, sizeof(err)) == 0 ? (int64_t) v
                                                               : -1;
}


/* every matrix in type, every vector F32, the quantizer's bytes */
static void
test_plain(const fg_gguf_t *f32)
{
    size_t                   i, k, bad, rows;
    uint8_t                 *want;
    fg_gguf_t               *g;
    const fg_gguf_mix_t     *m;
    const fg_gguf_tensor_t  *t, *t32;

    static const char *const  names[] = {
        "f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_k",
        "q3_k", "q4_k", "q5_k", "q6_k"
    };
    static const uint32_t     ftypes[] = { 1, 32, 2, 3, 8, 9, 7, 10, 11,
                                           14, 16, 18 };

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        m = fg_gguf_mix_find(names[i]);
        g = gen(names[i], 512, 0, names[i]);

        if (!ok(g != NULL, "%s: written and opened", names[i])) {
            continue;
        }

        for (bad = 0, k = 0; k < g->n_tensors; k++) {
            t = &g->tensors[k];
            bad += t->type != (t->n_dims == 2 ? m->type : FG_GGML_F32);
        }

        ok(bad == 0 && g->n_tensors == 3 + 9 * LAYERS,
           "%s: every matrix %s, every vector f32", names[i],
           fg_ggml_type_name(m->type));
        is_int(u32_of(g, "general.file_type"), ftypes[i],
               "%s: general.file_type %u", names[i], ftypes[i]);
        is_int(u32_of(g, "general.quantization_version"),
               fg_ggml_block_size(m->type) > 1 ? 2 : -1,
               "%s: a quantization version where quantized", names[i]);

        /* blk.5.ffn_down.weight, 256 rows of 512, quantized here again */
        t = fg_gguf_find_tensor(g, "blk.5.ffn_down.weight");
        t32 = fg_gguf_find_tensor(f32, "blk.5.ffn_down.weight");
        rows = t32->ne[1];
        want = malloc(t->size);

        for (k = 0; k < rows; k++) {
            fg_k_quant_row((fg_k_type_e) m->type,
                           (const float *) t32->data + k * 512,
                           want + k * (t->size / rows), 512);
        }

        ok(memcmp(want, t->data, t->size) == 0,
           "%s: a matrix's bytes are the quantizer's on the f32 values",
           names[i]);

        free(want);
        fg_gguf_close(g);
    }
}


/* llama.cpp's q4_k_m for 8 blocks, by hand: use_more_bits(i, 8) is
 * i < 1, i >= 7, or (i - 1) % 3 == 2: blocks 0, 3, 6, 7 */
static void
test_q4_k_m(void)
{
    uint32_t    i, more, bad;
    fg_gguf_t  *g;

    g = gen("q4_k_m", 512, 0, "q4_k_m");

    if (!ok(g != NULL, "q4_k_m written")) {
        return;
    }

    is_int(type_of(g, "output.weight"), FG_GGML_Q6_K, "q4_k_m: output q6_K");
    is_int(type_of(g, "token_embd.weight"), FG_GGML_Q4_K,
           "q4_k_m: token_embd q4_K");
    is_int(type_of(g, "output_norm.weight"), FG_GGML_F32,
           "q4_k_m: norms f32");
    is_int(u32_of(g, "general.file_type"), 15, "q4_k_m: file type 15");

    for (bad = 0, i = 0; i < LAYERS; i++) {
        more = i == 0 || i == 3 || i == 6 || i == 7;

        bad += layer_type(g, i, "attn_v.weight")
               != (more ? FG_GGML_Q6_K : FG_GGML_Q4_K);
        bad += layer_type(g, i, "ffn_down.weight")
               != (more ? FG_GGML_Q6_K : FG_GGML_Q4_K);
        bad += layer_type(g, i, "attn_q.weight") != FG_GGML_Q4_K;
        bad += layer_type(g, i, "attn_k.weight") != FG_GGML_Q4_K;
        bad += layer_type(g, i, "attn_output.weight") != FG_GGML_Q4_K;
        bad += layer_type(g, i, "ffn_gate.weight") != FG_GGML_Q4_K;
        bad += layer_type(g, i, "ffn_up.weight") != FG_GGML_Q4_K;
        bad += layer_type(g, i, "attn_norm.weight") != FG_GGML_F32;
    }

    ok(bad == 0, "q4_k_m: attn_v and ffn_down q6_K in blocks 0, 3, 6, 7, "
       "the other matrices q4_K");

    fg_gguf_close(g);

    /* tied: the embeddings are the output, and get its q6_K */
    g = gen("q4_k_m", 512, 1, "q4_k_m_tied");

    if (ok(g != NULL, "q4_k_m, tied, written")) {
        is_int(type_of(g, "token_embd.weight"), FG_GGML_Q6_K,
               "q4_k_m, tied: token_embd q6_K");
        fg_gguf_close(g);
    }
}


static void
test_other_mixes(void)
{
    fg_gguf_t  *g;

    /* q3_k_m: attn_v q5_K in blocks 0-1, q4_K after; ffn_down q5_K below
     * 8 / 16 = 0 blocks, so q4_K; attn_output q4_K; the rest q3_K */
    g = gen("q3_k_m", 512, 0, "q3_k_m");

    if (ok(g != NULL, "q3_k_m written")) {
        ok(layer_type(g, 1, "attn_v.weight") == FG_GGML_Q5_K
           && layer_type(g, 2, "attn_v.weight") == FG_GGML_Q4_K
           && layer_type(g, 0, "ffn_down.weight") == FG_GGML_Q4_K
           && layer_type(g, 5, "attn_output.weight") == FG_GGML_Q4_K
           && layer_type(g, 5, "attn_q.weight") == FG_GGML_Q3_K
           && type_of(g, "output.weight") == FG_GGML_Q6_K,
           "q3_k_m: attn_v, ffn_down, attn_output by llama.cpp's rules");
        fg_gguf_close(g);
    }

    /* q4_k_s: attn_v q5_K in blocks 0-3; ffn_down q5_K below 8 / 8 */
    g = gen("q4_k_s", 512, 0, "q4_k_s");

    if (ok(g != NULL, "q4_k_s written")) {
        ok(layer_type(g, 3, "attn_v.weight") == FG_GGML_Q5_K
           && layer_type(g, 4, "attn_v.weight") == FG_GGML_Q4_K
           && layer_type(g, 0, "ffn_down.weight") == FG_GGML_Q5_K
           && layer_type(g, 1, "ffn_down.weight") == FG_GGML_Q4_K,
           "q4_k_s: attn_v in blocks 0-3, ffn_down in block 0 q5_K");
        fg_gguf_close(g);
    }

    /* q5_k_m as q4_k_m, on q5_K */
    g = gen("q5_k_m", 512, 0, "q5_k_m");

    if (ok(g != NULL, "q5_k_m written")) {
        ok(layer_type(g, 3, "ffn_down.weight") == FG_GGML_Q6_K
           && layer_type(g, 4, "ffn_down.weight") == FG_GGML_Q5_K
           && layer_type(g, 4, "ffn_up.weight") == FG_GGML_Q5_K,
           "q5_k_m: ffn_down q6_K where use_more_bits, else q5_K");
        fg_gguf_close(g);
    }
}


/* rows not a multiple of 256: Q6_K to Q8_0, Q4_K to Q5_0; not of 32 */
static void
test_fallback(void)
{
    fg_gguf_t  *g;

    g = gen("q4_k_m", 288, 0, "fallback");

    if (ok(g != NULL, "q4_k_m with feed-forward 288 written")) {
        ok(layer_type(g, 0, "ffn_down.weight") == FG_GGML_Q8_0
           && layer_type(g, 1, "ffn_down.weight") == FG_GGML_Q5_0
           && layer_type(g, 1, "ffn_up.weight") == FG_GGML_Q4_K,
           "ffn_down's rows of 288: q6_K falls back to q8_0, q4_K to q5_0;"
           " ffn_up's rows of 256 stay q4_K");
        fg_gguf_close(g);
    }

    g = gen("q2_k", 100, 0, "fallback100");

    if (ok(g != NULL, "q2_k with feed-forward 100 written")) {
        ok(layer_type(g, 2, "ffn_down.weight") == FG_GGML_F16
           && layer_type(g, 2, "ffn_gate.weight") == FG_GGML_Q2_K,
           "rows of 100 are f16; rows of 256 q2_K");
        fg_gguf_close(g);
    }

    g = gen("q3_k", 288, 0, "fallback_q3");

    if (ok(g != NULL, "q3_k with feed-forward 288 written")) {
        is_int(layer_type(g, 0, "ffn_down.weight"), FG_GGML_Q4_0,
               "q3_k's fallback is q4_0 (llama.cpp's iq4_nl)");
        fg_gguf_close(g);
    }
}


/* tensors of a and b: same names, types and bytes */
static int
same_tensors(const fg_gguf_t *a, const fg_gguf_t *b)
{
    uint64_t                 k, bad;
    const fg_gguf_tensor_t  *t, *r;

    if (a->n_tensors != b->n_tensors) {
        return 0;
    }

    for (bad = 0, k = 0; k < a->n_tensors; k++) {
        t = &a->tensors[k];
        r = &b->tensors[k];
        bad += t->type != r->type || t->size != r->size
               || t->name.len != r->name.len
               || memcmp(t->name.data, r->name.data, r->name.len) != 0
               || memcmp(t->data, r->data, r->size) != 0;
    }

    return bad == 0;
}


static void
test_convert(void)
{
    char                     in[256], out[256];
    size_t                   k, rows;
    float                    row[256];
    uint8_t                 *want;
    fg_gguf_t               *g, *ref;
    const fg_gguf_tensor_t  *t, *t16;

    /* the f32 model converted: the generator's q4_k_m file, tensor for
     * tensor and byte for byte, and every metadata entry */
    snprintf(in, sizeof(in), "%s/f32.gguf", dir);
    snprintf(out, sizeof(out), "%s/conv.gguf", dir);

    if (!ok(fg_gguf_convert(in, out, FG_GGML_Q4_K, FG_GGUF_MIX_Q4_K_M, err,
                            sizeof(err)) == 0, "f32 converted to q4_k_m"))
    {
        diag("%s", err);
        return;
    }

    snprintf(in, sizeof(in), "%s/q4_k_m.gguf", dir);
    ref = fg_gguf_open(in, err, sizeof(err));
    g = fg_gguf_open(out, err, sizeof(err));

    if (ok(g != NULL && ref != NULL, "both open")) {
        ok(same_tensors(g, ref), "the generator's q4_k_m tensors exactly");
        ok(g->n_kv == ref->n_kv && u32_of(g, "general.file_type") == 15
           && fg_gguf_find_kv(g, "tokenizer.ggml.tokens") != NULL,
           "every metadata entry, general.file_type q4_k_m's");
    }

    fg_gguf_close(g);
    fg_gguf_close(ref);

    /* an f16 model's rows are widened, then quantized */
    snprintf(in, sizeof(in), "%s/f16.gguf", dir);

    if (!ok(fg_gguf_convert(in, out, FG_GGML_Q8_0, 0, err, sizeof(err)) == 0,
            "f16 converted to q8_0"))
    {
        diag("%s", err);
        return;
    }

    ref = fg_gguf_open(in, err, sizeof(err));
    g = fg_gguf_open(out, err, sizeof(err));

    if (ok(g != NULL && ref != NULL, "both open")) {
        t = fg_gguf_find_tensor(g, "blk.2.attn_k.weight");
        t16 = fg_gguf_find_tensor(ref, "blk.2.attn_k.weight");
        rows = t16->ne[1];
        want = malloc(t->size);

        for (k = 0; k < rows; k++) {
            fg_k_dequant_row(FG_K_F16, (const uint16_t *) t16->data
                             + k * 256, row, 256);
            fg_k_quant_row(FG_K_Q8_0, row, want + k * (t->size / rows), 256);
        }

        ok(t->type == FG_GGML_Q8_0 && memcmp(want, t->data, t->size) == 0,
           "q8_0 of the f16 values");
        free(want);
    }

    fg_gguf_close(g);
    fg_gguf_close(ref);

    /* a quantized model is not read again */
    snprintf(out, sizeof(out), "%s/conv_bad.gguf", dir);
    snprintf(in, sizeof(in), "%s/q4_k_m.gguf", dir);
    ok(fg_gguf_convert(in, out, FG_GGML_Q8_0, 0, err, sizeof(err)) == -1
       && strstr(err, "reads f32, f16 and bf16") != NULL
       && access(out, F_OK) != 0, "a q4_k_m model is refused: %s", err);
}


int
main(void)
{
    fg_gguf_t  *f32;

    fg_k_init();
    fg_test_dir_make("gguf_mix");

    f32 = gen("f32", 512, 0, "f32");

    if (ok(f32 != NULL, "the f32 model")) {
        test_plain(f32);
        fg_gguf_close(f32);
    }

    test_q4_k_m();
    test_other_mixes();
    test_fallback();
    test_convert();

    fg_test_dir_remove();

    return done_testing();
}
