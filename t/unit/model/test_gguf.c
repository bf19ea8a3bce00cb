
/*
 * fairgate: tests of the GGUF reader, writer and generator on valid files:
 * stories260K, generated models of every tensor type, every metadata type.
 */


#include <stdint.h>
#include <unistd.h>

#include "fg_tap.h"
#include "fg_test_file.h"
#include "fg_test_model.h"
#include "fg_test_gen.h"
#include "fg_test_gguf.h"
#include "fg_ggml_types.h"
#include "fg_kernels.h"
#include "fg_gguf.h"
#include "fg_gguf_gen.h"
#include "fg_gguf_write.h"
#include "fg_llama.h"




static void
test_stories(void)
{
    char                     err[FG_GGUF_ERR_LEN];
    float                    f, freqs[4];
    uint32_t                 u;
    fg_gguf_t               *g;
    fg_gguf_str_t            s;
    fg_llama_model_t         m;
    const fg_gguf_kv_t      *kv;
    const fg_gguf_tensor_t  *t;

    if (access(fg_test_stories(), R_OK) != 0) {
        ok(1, "stories260K # SKIP %s is not there", fg_test_stories());
        return;
    }

    g = fg_gguf_open(fg_test_stories(), err, sizeof(err));
    if (!ok(g != NULL, "stories260K opens")) {
        diag("%s", err);
        return;
    }

    is_int(g->version, 3, "version 3");
    is_int(g->n_tensors, 48, "48 tensors");
    is_int(g->n_kv, 19, "19 metadata entries");
    is_int(g->alignment, 32, "default alignment");
    is_int(g->data_offset % 32, 0, "data section aligned");
    is_int(g->size, 1185376, "size as the README says");

    ok(fg_gguf_get_str(g, "general.architecture", &s, err, sizeof(err)) == 0
       && fg_gguf_str_eq(s, "llama"), "general.architecture = llama");
    ok(fg_gguf_get_u32(g, "llama.block_count", &u, err, sizeof(err)) == 0
       && u == 5, "llama.block_count = 5");
    ok(fg_gguf_get_u32(g, "no.such.key", &u, err, sizeof(err)) == 1,
       "an absent key is 1");
    ok(fg_gguf_get_u32(g, "general.name", &u, err, sizeof(err)) == -1,
       "a string read as an integer fails");
    ok(strstr(err, "'general.name' has type string, not an integer") != NULL,
       "... saying so: %s", err);
    ok(fg_gguf_get_u32(g, "tokenizer.ggml.padding_token_id", &u, err,
                       sizeof(err)) == 0 && u == UINT32_MAX,
       "padding id is 0xffffffff (none)");

    ok(fg_gguf_get_arr(g, "tokenizer.ggml.tokens", FG_GGUF_STRING, &kv, err,
                       sizeof(err)) == 0 && kv->n == 512
       && fg_gguf_str_eq(kv->strs[1], "<s>")
       && fg_gguf_str_eq(kv->strs[403], "\xe2\x96\x81Once"),
       "512 token strings; 1 is <s>, 403 is \"\\u2581Once\"");
    ok(fg_gguf_get_arr(g, "tokenizer.ggml.scores", FG_GGUF_FLOAT32, &kv, err,
                       sizeof(err)) == 0
       && fg_gguf_arr_f64(kv, 260) == -1.0, "score of 'he' is -1");
    ok(fg_gguf_get_arr(g, "tokenizer.ggml.token_type", FG_GGUF_INT32, &kv,
                       err, sizeof(err)) == 0
       && fg_gguf_arr_i64(kv, 0) == 2 && fg_gguf_arr_i64(kv, 3) == 6,
       "token types: unk 2, byte 6");
    ok(fg_gguf_get_arr(g, "tokenizer.ggml.scores", FG_GGUF_INT32, &kv, err,
                       sizeof(err)) == -1
       && strstr(err, "array of float32, not of int32") != NULL,
       "array element type is checked: %s", err);

    t = fg_gguf_find_tensor(g, "blk.4.ffn_down.weight");
    ok(t && t->type == FG_GGML_F32 && t->n_dims == 2 && t->ne[0] == 172
       && t->ne[1] == 64 && t->size == 172 * 64 * 4,
       "blk.4.ffn_down.weight is f32 [172, 64]");
    ok(fg_gguf_find_tensor(g, "blk.5.ffn_down.weight") == NULL,
       "no block 5");

    if (!ok(fg_llama_load(g, &m, err, sizeof(err)) == 0,
            "stories260K loads as a llama model"))
    {
        diag("%s", err);
        fg_gguf_close(g);
        return;
    }

    is_str(m.hp.arch, "llama", "arch");
    is_int(m.hp.n_embd, 64, "embedding 64");
    is_int(m.hp.n_layer, 5, "5 blocks");
    is_int(m.hp.n_head, 8, "8 heads");
    is_int(m.hp.n_head_kv, 4, "4 kv heads");
    is_int(m.hp.head_dim, 8, "head size 8");
    is_int(m.hp.n_rot, 8, "rope over the whole head");
    is_int(m.hp.n_ff, 172, "feed-forward 172");
    is_int(m.hp.n_vocab, 512, "vocabulary 512");
    is_int(m.hp.n_ctx_train, 2048, "context_length 2048 (converter's)");
    is_int(fg_llama_meta_u32(g, "context_length", 7), 2048,
           "the same read alone, as the sim backend and the gateway do");
    is_int(fg_llama_meta_u32(g, "attention.head_count_kv", 7), 4,
           "... and the kv heads");
    is_int(fg_llama_meta_u32(g, "no.such_key", 7), 7,
           "... a key the file lacks: the default");
    is_int(fg_llama_meta_u32(g, "attention.layer_norm_rms_epsilon", 7), 7,
           "... a key that is no u32: the default");
    is_num(m.hp.rms_eps, 1e-5, 1e-9, "RMS-norm epsilon 1e-5");
    is_num(m.hp.rope_base, 10000, 0, "rope base 10000 when absent");
    is_int(m.hp.rope_pairing, FG_ROPE_ADJACENT, "llama pairs adjacent");
    is_int(m.hp.rope_scaling, FG_ROPE_SCALING_NONE, "no rope scaling");
    ok(!m.tied && m.output != m.tok_embd, "separate output.weight");
    ok(m.output->size == m.tok_embd->size
       && memcmp(m.output->data, m.tok_embd->data, m.output->size) == 0,
       "output.weight's bytes equal token_embd.weight's");
    ok(m.layers[4].w_down == t && m.layers[0].bq == NULL,
       "layer tensors found, no biases");

    fg_llama_rope_freqs(&m.hp, freqs);
    is_num(freqs[0], 1, 0, "first pair turns at 1 rad/position");
    is_num(freqs[3], pow(10000, -6.0 / 8), 1e-7, "last at base^(-6/8)");

    f = 0;
    fg_k_dequant_row(FG_K_F32, m.output_norm->data, &f, 1);
    ok(isfinite(f) && f != 0, "output_norm[0] = %g", (double) f);

    fg_llama_free(&m);
    fg_gguf_close(g);
}


static const int16_t      meta_a16[3] = { -1, 2, -30000 };
static const double       meta_af64[2] = { 0.5, -1e300 };
static const uint64_t     meta_au64[2] = { 0, UINT64_MAX };
static const char *const  meta_strs[3] = { "", "two", "\xc3\xa9t\xc3\xa9" };


/* one entry of every metadata type, 17 of them */
static void
put_every_type(fg_gguf_writer_t *w)
{
    int       b;
    double    f64;
    int64_t   i64;
    uint8_t   u8;
    int8_t    i8;
    int16_t   i16;
    uint16_t  u16;
    uint64_t  u64;

    u8 = 200; i8 = -100; u16 = 65000; i16 = -32000;
    f64 = 3.25; i64 = INT64_MIN; u64 = UINT64_MAX; b = 1;

    fg_gguf_w_scalar(w, "t.u8", FG_GGUF_UINT8, &u8);
    fg_gguf_w_scalar(w, "t.i8", FG_GGUF_INT8, &i8);
    fg_gguf_w_scalar(w, "t.u16", FG_GGUF_UINT16, &u16);
    fg_gguf_w_scalar(w, "t.i16", FG_GGUF_INT16, &i16);
    fg_gguf_w_u32(w, "t.u32", 4000000000u);
    fg_gguf_w_i32(w, "t.i32", -2000000000);
    fg_gguf_w_f32(w, "t.f32", 0.125f);
    fg_gguf_w_bool(w, "t.bool", b);
    fg_gguf_w_str(w, "t.str", "h\xc3\xa9llo");
    fg_gguf_w_u64(w, "t.u64", u64);
    fg_gguf_w_scalar(w, "t.i64", FG_GGUF_INT64, &i64);
    fg_gguf_w_scalar(w, "t.f64", FG_GGUF_FLOAT64, &f64);
    fg_gguf_w_arr(w, "t.a16", FG_GGUF_INT16, meta_a16, 3);
    fg_gguf_w_arr(w, "t.af64", FG_GGUF_FLOAT64, meta_af64, 2);
    fg_gguf_w_arr(w, "t.au64", FG_GGUF_UINT64, meta_au64, 2);
    fg_gguf_w_arr(w, "t.empty", FG_GGUF_UINT8, NULL, 0);
    fg_gguf_w_arr_str(w, "t.strs", meta_strs, NULL, 3);
}


/* what put_every_type() wrote, read back */
static void
check_every_type(fg_gguf_t *g)
{
    int                  b;
    char                 err[FG_GGUF_ERR_LEN];
    float                f32;
    int64_t              i64;
    uint32_t             u32;
    fg_gguf_str_t        s;
    const fg_gguf_kv_t  *kv;

    ok(fg_gguf_find_kv(g, "t.u8")->type == FG_GGUF_UINT8
       && fg_gguf_find_kv(g, "t.u8")->v.u == 200, "uint8 200");
    ok(fg_gguf_find_kv(g, "t.i8")->v.i == -100, "int8 -100");
    ok(fg_gguf_find_kv(g, "t.u16")->v.u == 65000, "uint16 65000");
    ok(fg_gguf_find_kv(g, "t.i16")->v.i == -32000, "int16 -32000");
    ok(fg_gguf_get_u32(g, "t.u32", &u32, err, sizeof(err)) == 0
       && u32 == 4000000000u, "uint32 4e9");
    ok(fg_gguf_get_u32(g, "t.i32", &u32, err, sizeof(err)) == -1
       && strstr(err, "-2000000000 is out of range") != NULL,
       "a negative int32 is not a uint32: %s", err);
    ok(fg_gguf_get_i64(g, "t.i32", &i64, err, sizeof(err)) == 0
       && i64 == -2000000000, "int32 -2e9 as int64");
    ok(fg_gguf_get_f32(g, "t.f32", &f32, err, sizeof(err)) == 0
       && f32 == 0.125f, "float32 0.125");
    ok(fg_gguf_get_bool(g, "t.bool", &b, err, sizeof(err)) == 0 && b == 1,
       "bool true");
    ok(fg_gguf_get_str(g, "t.str", &s, err, sizeof(err)) == 0
       && fg_gguf_str_eq(s, "h\xc3\xa9llo"), "string");
    ok(fg_gguf_get_i64(g, "t.u64", &i64, err, sizeof(err)) == -1,
       "uint64 max does not fit int64: %s", err);
    ok(fg_gguf_find_kv(g, "t.u64")->v.u == UINT64_MAX, "uint64 max");
    ok(fg_gguf_get_i64(g, "t.i64", &i64, err, sizeof(err)) == 0
       && i64 == INT64_MIN, "int64 min");
    ok(fg_gguf_get_f32(g, "t.f64", &f32, err, sizeof(err)) == 0
       && f32 == 3.25f, "float64 3.25");

    kv = fg_gguf_find_kv(g, "t.a16");
    ok(kv->type == FG_GGUF_ARRAY && kv->arr_type == FG_GGUF_INT16
       && kv->n == 3 && fg_gguf_arr_i64(kv, 0) == -1
       && fg_gguf_arr_i64(kv, 2) == -30000, "int16 array");
    kv = fg_gguf_find_kv(g, "t.af64");
    ok(kv->n == 2 && fg_gguf_arr_f64(kv, 1) == -1e300, "float64 array");
    kv = fg_gguf_find_kv(g, "t.au64");
    ok(kv->n == 2 && (uint64_t) fg_gguf_arr_i64(kv, 1) == UINT64_MAX,
       "uint64 array");
    kv = fg_gguf_find_kv(g, "t.empty");
    ok(kv->n == 0 && kv->arr_type == FG_GGUF_UINT8, "empty array");
    kv = fg_gguf_find_kv(g, "t.strs");
    ok(kv->n == 3 && kv->strs[0].len == 0
       && fg_gguf_str_eq(kv->strs[1], "two")
       && fg_gguf_str_eq(kv->strs[2], "\xc3\xa9t\xc3\xa9"), "string array");
}


/* the exact-type getter and the classes of array elements */
static void
check_getters(fg_gguf_t *g)
{
    char                 err[FG_GGUF_ERR_LEN];
    const fg_gguf_kv_t  *kv;

    ok(fg_gguf_get_kv(g, "t.i32", FG_GGUF_INT32, &kv, err, sizeof(err)) == 0
       && kv->v.i == -2000000000, "get_kv: int32 as int32");
    ok(fg_gguf_get_kv(g, "t.u32", FG_GGUF_INT32, &kv, err, sizeof(err))
       == -1 && strstr(err, "'t.u32' has type uint32, not int32") != NULL,
       "get_kv: the type must be the one asked: %s", err);
    is_int(fg_gguf_get_kv(g, "t.none", FG_GGUF_INT32, &kv, err, sizeof(err)),
           1, "get_kv: absent is 1");
    ok(fg_gguf_get_arr(g, "t.a16", FG_GGUF_ARR_INT, &kv, err, sizeof(err))
       == 0 && kv->n == 3, "get_arr: int16 elements are integers");
    ok(fg_gguf_get_arr(g, "t.af64", FG_GGUF_ARR_INT, &kv, err, sizeof(err))
       == -1 && strstr(err, "array of float64, not of integers") != NULL,
       "get_arr: float64 elements are not: %s", err);
    ok(fg_gguf_get_arr(g, "t.strs", FG_GGUF_ARR_ANY, &kv, err, sizeof(err))
       == 0 && kv->n == 3, "get_arr: strings are elements of any type");
    ok(fg_gguf_get_arr(g, "t.u8", FG_GGUF_ARR_ANY, &kv, err, sizeof(err))
       == -1 && strstr(err, "has type uint8, not array") != NULL,
       "get_arr: a scalar is no array: %s", err);
}


/* every metadata type written, read back */
static void
test_metadata_types(void)
{
    char               *buf, err[FG_GGUF_ERR_LEN];
    FILE               *f;
    size_t              size;
    fg_gguf_t          *g;
    fg_gguf_writer_t   *w;

    w = fg_gguf_writer_new(3, 0);
    put_every_type(w);
    ok(fg_gguf_w_u32(w, "t.u32", 1) == -1
       && strstr(fg_gguf_writer_error(w), "duplicate") != NULL,
       "the writer refuses a duplicate key");

    f = open_memstream(&buf, &size);
    ok(fg_gguf_w_write_header(w, f) == -1,
       "and then refuses to write: %s", fg_gguf_writer_error(w));
    fclose(f);
    free(buf);
    fg_gguf_writer_free(w);

    /* again without the duplicate */
    w = fg_gguf_writer_new(2, 0);
    put_every_type(w);

    f = open_memstream(&buf, &size);
    ok(fg_gguf_w_write_header(w, f) == 0, "a v2 file of every type");
    fclose(f);
    fg_gguf_writer_free(w);

    g = fg_gguf_open_mem(buf, size, err, sizeof(err));
    if (!ok(g != NULL, "it opens")) {
        diag("%s", err);
        free(buf);
        return;
    }

    is_int(g->version, 2, "version 2");
    is_int(g->n_kv, 17, "17 entries");
    is_int(g->n_tensors, 0, "no tensors");

    check_every_type(g);
    check_getters(g);

    fg_gguf_close(g);
    free(buf);
}


/* the halves, but NaNs, that do not come back through f32 */
static int
round_trips_lost(float (*to_f32)(uint16_t), uint16_t (*from_f32)(float))
{
    int       bad;
    float     f;
    uint32_t  h;

    bad = 0;

    for (h = 0; h < 65536; h++) {
        f = to_f32((uint16_t) h);

        if (!isnan(f) && from_f32(f) != h) {
            bad++;
        }
    }

    return bad;
}


static void
test_halves(void)
{
    is_int(round_trips_lost(fg_fp16_to_f32, fg_f32_to_fp16), 0,
           "every f16 survives f16 -> f32 -> f16");
    is_int(round_trips_lost(fg_bf16_to_f32, fg_f32_to_bf16), 0,
           "every bf16 survives bf16 -> f32 -> bf16");

    is_int(fg_f32_to_fp16(1.0f), 0x3c00, "f16(1) = 0x3c00");
    is_int(fg_f32_to_fp16(65504.0f), 0x7bff, "f16 max");
    is_int(fg_f32_to_fp16(65520.0f), 0x7c00, "65520 rounds to inf");
    is_int(fg_f32_to_fp16(1.0f + 0x1p-11f), 0x3c00, "tie rounds to even");
    is_int(fg_f32_to_fp16(1.0f + 3 * 0x1p-11f), 0x3c02, "tie rounds up");
    is_int(fg_f32_to_fp16(0x1p-24f), 0x0001, "smallest subnormal");
    is_int(fg_f32_to_fp16(0x1p-25f), 0x0000, "half of it rounds to 0");
    is_int(fg_f32_to_fp16(-2.0f), 0xc000, "-2");
    ok(isnan(fg_fp16_to_f32(fg_f32_to_fp16(NAN))), "NaN stays NaN");
    is_int(fg_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80, "bf16 tie to even");
}


/*
 * Every matrix of g, every row, against the f32 file g32: 0 when each
 * value is the f32 one within the type's precision, else the worst excess
 * over that precision (1e30 when the files' tensors differ).
 */
static float
worst_excess(const fg_gguf_t *g, const fg_gguf_t *g32, uint32_t type)
{
    char                     name[64];
    float                    a[192], b[192], tol, amax, worst;
    uint32_t                 j, k, r;
    const fg_gguf_tensor_t  *t, *t32;

    worst = 0;

    for (j = 0; j < g->n_tensors; j++) {
        t = &g->tensors[j];
        snprintf(name, sizeof(name), "%.*s", (int) t->name.len,
                 t->name.data);
        t32 = fg_gguf_find_tensor(g32, name);

        if (t32 == NULL || t32->ne[0] != t->ne[0]
            || t32->ne[1] != t->ne[1] || t->ne[0] > 192)
        {
            worst = 1e30f;
            break;
        }

        for (r = 0; r < t->ne[1]; r++) {
            fg_k_dequant_row((fg_k_type_e) t->type, (const uint8_t *) t->data
                             + r * fg_ggml_row_size(t->type, t->ne[0]),
                             a, t->ne[0]);
            fg_k_dequant_row(FG_K_F32, (const float *) t32->data
                             + r * t->ne[0], b, t->ne[0]);

            amax = 0;

            for (k = 0; k < t->ne[0]; k++) {
                amax = fmaxf(amax, fabsf(b[k]));
            }

            for (k = 0; k < t->ne[0]; k++) {
                /* f16: 11 bits; bf16: 8; q8_0: half a step of
                 * amax / 127 per block of 32 (amax of the row bounds
                 * it), plus the f16 scale's rounding */
                tol = type == FG_GGML_F16 ? fabsf(b[k]) * 0x1p-11f
                      : type == FG_GGML_BF16 ? fabsf(b[k]) * 0x1p-8f
                      : amax / 127 * 0.5f + amax * 0x1p-11f;

                tol = fmaxf(tol * 1.0001f, 0x1p-25f);

                if (fabsf(a[k] - b[k]) > tol) {
                    worst = fmaxf(worst, fabsf(a[k] - b[k]) / tol);
                }
            }
        }
    }

    return worst;
}


/*
 * The model of c generated as file name and loaded into m, its file open
 * in *g: 0, or -1 told ("what generated", "what generated and loaded")
 */
static int
gen_load(const char *name, fg_gguf_gen_conf_t *c, const char *what,
    fg_gguf_t **g, fg_llama_model_t *m)
{
    char  path[512], err[FG_GGUF_ERR_LEN];

    if (fg_test_gen(name, c, path, sizeof(path)) != 0) {
        ok(0, "%s generated", what);
        return -1;
    }

    *g = fg_gguf_open(path, err, sizeof(err));
    if (!ok(*g && fg_llama_load(*g, m, err, sizeof(err)) == 0,
            "%s generated and loaded", what))
    {
        diag("%s", err);
        fg_gguf_close(*g);
        return -1;
    }

    return 0;
}


/*
 * Generated models of every type against the f32 one of the same seed:
 * the converted values must be the f32 ones within the type's precision.
 */
static void
test_generated(const char *arch)
{
    char                 name[64], what[64];
    float                worst;
    uint32_t             i;
    fg_gguf_t           *g, *g32;
    fg_llama_model_t     m, m32;
    fg_gguf_gen_conf_t   c;

    static const uint32_t  types[] = {
        FG_GGML_F32, FG_GGML_F16, FG_GGML_BF16, FG_GGML_Q8_0
    };

    fg_gguf_gen_defaults(&c);
    c.arch = arch;
    c.n_ff = 192;               /* q8_0 needs multiples of 32 */
    c.n_vocab = 300;
    c.seed = 7;

    snprintf(name, sizeof(name), "%s-f32.gguf", arch);
    snprintf(what, sizeof(what), "%s f32", arch);

    if (gen_load(name, &c, what, &g32, &m32) != 0) {
        return;
    }

    is_int(m32.hp.n_vocab, 300, "%s: vocabulary 300 (synthetic, padded)",
           arch);
    is_int(m32.hp.rope_pairing,
           strcmp(arch, "qwen2") == 0 ? FG_ROPE_HALVES : FG_ROPE_ADJACENT,
           "%s: rope pairing", arch);
    ok(strcmp(arch, "qwen2") == 0 ? m32.layers[4].bv != NULL
                                  : m32.layers[4].bv == NULL,
       "%s: q/k/v biases for qwen2 only", arch);

    for (i = 1; i < sizeof(types) / sizeof(types[0]); i++) {
        c.type = types[i];
        snprintf(name, sizeof(name), "%s-%s.gguf", arch,
                 fg_ggml_type_name(types[i]));

        if (gen_load(name, &c, name, &g, &m) != 0) {
            continue;
        }

        ok(m.layers[2].wq->type == types[i]
           && m.layers[2].attn_norm->type == FG_GGML_F32
           && m.tok_embd->type == types[i],
           "%s: matrices in %s, norms in f32", name,
           fg_ggml_type_name(types[i]));

        worst = worst_excess(g, g32, types[i]);

        ok(worst == 0, "%s: every value is the f32 one within the type's "
           "precision (worst excess %g)", name, (double) worst);

        fg_llama_free(&m);
        fg_gguf_close(g);
    }

    fg_llama_free(&m32);
    fg_gguf_close(g32);
}


/* a tokenizer taken from a file that has none: refused, saying so */
static void
test_tokenizer_from_none(void)
{
    char                 path[512], bare[512], err[FG_GGUF_ERR_LEN];
    FILE                *f;
    fg_gguf_writer_t    *w;
    fg_gguf_gen_conf_t   c;

    snprintf(bare, sizeof(bare), "%s/no-tokens.gguf", dir);

    w = fg_gguf_writer_new(3, 0);
    fg_gguf_w_str(w, "general.architecture", "llama");
    f = fopen(bare, "w");
    ok(f && fg_gguf_w_write_header(w, f) == 0 && fclose(f) == 0,
       "a GGUF file without tokenizer.ggml.tokens");
    fg_gguf_writer_free(w);

    fg_gguf_gen_defaults(&c);
    c.tokenizer_from = bare;
    snprintf(path, sizeof(path), "%s/from-none.gguf", dir);

    ok(fg_gguf_gen_file(&c, path, err, sizeof(err)) == -1
       && strstr(err, "has no tokenizer.ggml.tokens") != NULL,
       "a tokenizer from it is refused: %s", err);
    ok(access(path, F_OK) != 0, "... and no file is left behind");
}


static void
test_generated_options(void)
{
    char                     path[512], err[FG_GGUF_ERR_LEN];
    float                    freqs[16], factors[16];
    uint32_t                 i;
    fg_gguf_t               *g;
    fg_llama_model_t         m;
    fg_gguf_gen_conf_t       c;

    /* tied, GGUF v2, alignment 64, a copied tokenizer, Llama 3 rope */
    fg_test_gguf_shape(&c, FG_GGML_F32, 128, 5, 172, 4, 2);
    c.tied = 1;
    c.version = 2;
    c.alignment = 64;
    c.rope_base = 500000;
    c.rope_factor = 8;
    c.tokenizer_from = access(fg_test_stories(), R_OK) == 0 ? fg_test_stories()
                                                         : NULL;

    if (fg_test_gen("tied.gguf", &c, path, sizeof(path)) != 0) {
        ok(0, "tied model generated");
        return;
    }

    g = fg_gguf_open(path, err, sizeof(err));
    if (!ok(g && fg_llama_load(g, &m, err, sizeof(err)) == 0,
            "tied v2 model loads"))
    {
        diag("%s", err);
        fg_gguf_close(g);
        return;
    }

    is_int(g->version, 2, "version 2");
    is_int(g->alignment, 64, "general.alignment 64");
    is_int(g->data_offset % 64, 0, "data section aligned to 64");

    for (i = 0; i < g->n_tensors; i++) {
        if ((uintptr_t) g->tensors[i].data % 64 != 0) {
            break;
        }
    }

    is_int(i, g->n_tensors, "every tensor aligned to 64");
    ok(m.tied && m.output == m.tok_embd, "tied: output is token_embd");
    is_int(m.hp.head_dim, 32, "head size 32");
    is_int(m.hp.n_vocab, c.tokenizer_from ? 512 : 259,
           "vocabulary of the tokenizer");

    if (c.tokenizer_from) {
        ok(fg_gguf_find_kv(g, "tokenizer.ggml.scores") != NULL
           && fg_gguf_find_kv(g, "tokenizer.ggml.model")->type
              == FG_GGUF_STRING, "tokenizer copied from stories260K");
    }

    is_int(m.hp.rope_scaling, FG_ROPE_SCALING_LLAMA3, "Llama 3 rope");
    ok(m.hp.rope_freqs != NULL, "rope_freqs.weight read");

    fg_llama3_rope_factors(32, 500000, 8, 1, 4, 8192, factors);
    fg_llama_rope_freqs(&m.hp, freqs);

    is_num(factors[0], 1, 0, "high frequencies are not scaled");
    is_num(factors[15], 8, 0, "low frequencies are divided by 8");
    for (i = 1; i < 16; i++) {
        if (factors[i] < factors[i - 1]) {
            break;
        }
    }

    ok(i == 16 && factors[8] > 1 && factors[8] < 8,
       "factors grow, smoothly between: %g at pair 8", (double) factors[8]);
    is_num(freqs[15], pow(500000, -30.0 / 32) / 8, 1e-12,
           "scaled frequency of the last pair");
    is_num(freqs[0], 1, 0, "first pair unchanged");

    fg_llama_free(&m);
    fg_gguf_close(g);

    /* the generator's own errors */
    fg_gguf_gen_defaults(&c);
    c.type = FG_GGML_Q8_0;
    snprintf(path, sizeof(path), "%s/bad.gguf", dir);
    ok(fg_gguf_gen_file(&c, path, err, sizeof(err)) == -1
       && strstr(err, "multiples of 32") != NULL && access(path, F_OK) != 0,
       "q8_0 with feed-forward 172 is refused, no file left: %s", err);

    fg_gguf_gen_defaults(&c);
    c.n_head = 6;
    ok(fg_gguf_gen_file(&c, path, err, sizeof(err)) == -1
       && strstr(err, "impossible shape") != NULL, "%s", err);

    fg_gguf_gen_defaults(&c);
    c.n_vocab = 100;
    ok(fg_gguf_gen_file(&c, path, err, sizeof(err)) == -1
       && strstr(err, "needs 259") != NULL, "%s", err);

    fg_test_gguf_shape(&c, FG_GGML_F32, 768, 12, 2048, 12, 4);
    c.n_vocab = 32000;
    c.tied = 1;
    is_int(fg_gguf_gen_params(&c), 100092672, "the 100m preset's size");
}


/* a file needing a type the engine does not compute: opens, won't load */
static void
test_unsupported_type(void)
{
    int                  i;
    char                *buf, err[FG_GGUF_ERR_LEN], name[64];
    FILE                *f;
    size_t               size;
    uint8_t             *zeros;
    uint64_t             ne[2];
    fg_gguf_t           *g;
    fg_gguf_writer_t    *w;
    fg_llama_model_t     m;

    static const char *const  names[] = {
        "token_embd.weight", "output_norm.weight", "blk.0.attn_norm.weight",
        "blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight",
        "blk.0.attn_output.weight", "blk.0.ffn_norm.weight",
        "blk.0.ffn_gate.weight", "blk.0.ffn_up.weight",
        "blk.0.ffn_down.weight"
    };

    w = fg_gguf_writer_new(3, 0);
    fg_test_gguf_llama(w, 128, 256, 1, 256, 2);
    fg_gguf_w_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-6f);
    fg_gguf_w_u32(w, "llama.vocab_size", 16);

    for (i = 0; i < 11; i++) {
        ne[0] = 256;
        ne[1] = i == 0 ? 16 : 256;
        snprintf(name, sizeof(name), "%s", names[i]);

        fg_gguf_w_tensor(w, name, strstr(name, "norm") ? FG_GGML_F32
                                  : i == 3 ? 23 : FG_GGML_F16,
                         strstr(name, "norm") ? 1 : 2, ne);
    }

    f = open_memstream(&buf, &size);
    fg_gguf_w_write_header(w, f);
    zeros = calloc(1, 256 * 256 * 4);

    for (i = 0; i < 11; i++) {
        fg_gguf_w_write_data(w, f, zeros, fg_gguf_w_tensor_size(w, i));
    }

    fclose(f);
    free(zeros);
    ok(fg_gguf_writer_error(w)[0] == '\0', "a file with an iq4_xs tensor");
    fg_gguf_writer_free(w);

    g = fg_gguf_open_mem(buf, size, err, sizeof(err));
    ok(g != NULL, "it opens: the type is known, its size checked");

    if (g) {
        is_int(fg_gguf_find_tensor(g, "blk.0.attn_q.weight")->size,
               256 * 136, "iq4_xs: 136 bytes per 256");
        ok(fg_llama_load(g, &m, err, sizeof(err)) == -1, "it won't load");
        is_str(err, "unsupported tensor type 23 (iq4_xs) in tensor "
               "blk.0.attn_q.weight (fairgate computes with f32, f16, bf16, "
               "q4_0, q4_1, q5_0, q5_1, q8_0, q2_K, q3_K, q4_K, q5_K, q6_K)",
               "the message names type and tensor");
        fg_gguf_close(g);
    }

    free(buf);
}


int
main(void)
{
    fg_test_dir_make("gguf");

    test_stories();
    test_metadata_types();
    test_halves();
    test_generated("llama");
    test_generated("qwen2");
    test_generated_options();
    test_tokenizer_from_none();
    test_unsupported_type();

    fg_test_dir_remove();

    return done_testing();
}
