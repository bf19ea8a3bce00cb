
/*
 * fairgate: the types of a written model's tensors, as llama.cpp's
 * quantizer (llama-quantize, llama_tensor_get_type()) chooses them for
 * the dense models fairgate writes:
 *
 *   - vectors (norms, biases, rope_freqs) keep their type: F32;
 *   - output.weight (token_embd.weight where the output is tied to it)
 *     is Q6_K in a mixture, Q8_0 where its rows are not whole blocks of
 *     the mixture's type;
 *   - every other matrix has the mixture's base type, but where the rules
 *     table below gives attn_v, ffn_down, attn_output or a fused qkv more
 *     bits, by layer;
 *   - a k-quant whose rows are not a multiple of 256 falls back as
 *     llama.cpp does: Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0, Q2_K and
 *     Q3_K to Q4_0 (llama.cpp's IQ4_NL, a type fairgate does not compute,
 *     of Q4_0's size and block), and to F16 where rows are not whole
 *     blocks of 32 either.
 *
 * A plain type (--type q4_k) is llama-quantize --pure: every matrix in
 * that type, with the same fallback.
 */


#include <stdio.h>
#include <string.h>

#include "fg_gguf_mix.h"
#include "fg_ggml_types.h"


static const fg_gguf_mix_t  fg_gguf_mixes[] = {
    { "f32",    FG_GGML_F32,  0, 0 },
    { "f16",    FG_GGML_F16,  0, 1 },
    { "bf16",   FG_GGML_BF16, 0, 32 },
    { "q4_0",   FG_GGML_Q4_0, 0, 2 },
    { "q4_1",   FG_GGML_Q4_1, 0, 3 },
    { "q5_0",   FG_GGML_Q5_0, 0, 8 },
    { "q5_1",   FG_GGML_Q5_1, 0, 9 },
    { "q8_0",   FG_GGML_Q8_0, 0, 7 },
    { "q2_k",   FG_GGML_Q2_K, 0, 10 },
    { "q3_k",   FG_GGML_Q3_K, 0, 11 },
    { "q4_k",   FG_GGML_Q4_K, 0, 14 },
    { "q5_k",   FG_GGML_Q5_K, 0, 16 },
    { "q6_k",   FG_GGML_Q6_K, 0, 18 },
    { "q3_k_m", FG_GGML_Q3_K, FG_GGUF_MIX_Q3_K_M, FG_GGUF_MIX_Q3_K_M },
    { "q4_k_s", FG_GGML_Q4_K, FG_GGUF_MIX_Q4_K_S, FG_GGUF_MIX_Q4_K_S },
    { "q4_k_m", FG_GGML_Q4_K, FG_GGUF_MIX_Q4_K_M, FG_GGUF_MIX_Q4_K_M },
    { "q5_k_s", FG_GGML_Q5_K, FG_GGUF_MIX_Q5_K_S, FG_GGUF_MIX_Q5_K_S },
    { "q5_k_m", FG_GGML_Q5_K, FG_GGUF_MIX_Q5_K_M, FG_GGUF_MIX_Q5_K_M },
};

#define FG_GGUF_N_MIXES  (sizeof(fg_gguf_mixes) / sizeof(fg_gguf_mixes[0]))


/* when a rule's more-bits type applies, by the tensor's layer i of n */
typedef enum {
    FG_MIX_ALWAYS = 0,
    FG_MIX_BELOW,               /* i < arg */
    FG_MIX_BELOW_FRAC,          /* i < n / arg */
    FG_MIX_MORE_BITS            /* llama.cpp's use_more_bits(i, n) */
} fg_mix_when_e;


/*
 * llama.cpp's rules for the mixtures, for dense llama-family models:
 * tensor names ending in suffix get type when the condition holds, else
 * other (0: the base type).
 */
static const struct {
    uint32_t        mix;
    const char     *suffix;
    fg_mix_when_e   when;
    uint32_t        arg;
    uint32_t        type;
    uint32_t        other;
} fg_mix_rules[] = {
    { FG_GGUF_MIX_Q3_K_M, "attn_v.weight", FG_MIX_BELOW, 2,
      FG_GGML_Q5_K, FG_GGML_Q4_K },
    { FG_GGUF_MIX_Q3_K_M, "ffn_down.weight", FG_MIX_BELOW_FRAC, 16,
      FG_GGML_Q5_K, FG_GGML_Q4_K },
    { FG_GGUF_MIX_Q3_K_M, "attn_output.weight", FG_MIX_ALWAYS, 0,
      FG_GGML_Q4_K, 0 },
    { FG_GGUF_MIX_Q3_K_M, "attn_qkv.weight", FG_MIX_ALWAYS, 0,
      FG_GGML_Q4_K, 0 },

    { FG_GGUF_MIX_Q4_K_S, "attn_v.weight", FG_MIX_BELOW, 4,
      FG_GGML_Q5_K, 0 },
    { FG_GGUF_MIX_Q4_K_S, "ffn_down.weight", FG_MIX_BELOW_FRAC, 8,
      FG_GGML_Q5_K, 0 },

    { FG_GGUF_MIX_Q4_K_M, "attn_v.weight", FG_MIX_MORE_BITS, 0,
      FG_GGML_Q6_K, 0 },
    { FG_GGUF_MIX_Q4_K_M, "ffn_down.weight", FG_MIX_MORE_BITS, 0,
      FG_GGML_Q6_K, 0 },
    { FG_GGUF_MIX_Q4_K_M, "attn_qkv.weight", FG_MIX_ALWAYS, 0,
      FG_GGML_Q5_K, 0 },

    { FG_GGUF_MIX_Q5_K_M, "attn_v.weight", FG_MIX_MORE_BITS, 0,
      FG_GGML_Q6_K, 0 },
    { FG_GGUF_MIX_Q5_K_M, "ffn_down.weight", FG_MIX_MORE_BITS, 0,
      FG_GGML_Q6_K, 0 },
    { FG_GGUF_MIX_Q5_K_M, "attn_qkv.weight", FG_MIX_ALWAYS, 0,
      FG_GGML_Q6_K, 0 },
};

#define FG_MIX_N_RULES  (sizeof(fg_mix_rules) / sizeof(fg_mix_rules[0]))


const fg_gguf_mix_t *
fg_gguf_mix_find(const char *name)
{
    size_t  i;

    for (i = 0; i < FG_GGUF_N_MIXES; i++) {
        if (strcmp(fg_gguf_mixes[i].name, name) == 0) {
            return &fg_gguf_mixes[i];
        }
    }

    return NULL;
}


const fg_gguf_mix_t *
fg_gguf_mix_of(uint32_t type, uint32_t mix)
{
    size_t  i;

    for (i = 0; i < FG_GGUF_N_MIXES; i++) {
        if (fg_gguf_mixes[i].type == type && fg_gguf_mixes[i].mix == mix) {
            return &fg_gguf_mixes[i];
        }
    }

    return NULL;
}


const char *
fg_gguf_mix_names(void)
{
    return "f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_k, q3_k, q4_k, "
           "q5_k, q6_k, q3_k_m, q4_k_s, q4_k_m, q5_k_s or q5_k_m";
}


/* llama.cpp's use_more_bits(): the first and last eighth, and every
 * third layer between */
static int
fg_mix_more_bits(uint32_t i, uint32_t n)
{
    return i < n / 8 || i >= 7 * n / 8
           || ((int) i - (int) (n / 8)) % 3 == 2;
}


static int
fg_mix_ends_with(const char *s, const char *suffix)
{
    size_t  ls, lx;

    ls = strlen(s);
    lx = strlen(suffix);

    return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}


/* the rules table's type for a tensor of layer i (0 outside blocks) */
static uint32_t
fg_mix_rule(uint32_t mix, uint32_t base, const char *name, uint32_t i,
    uint32_t n)
{
    int     hit;
    size_t  r;

    for (r = 0; r < FG_MIX_N_RULES; r++) {
        if (fg_mix_rules[r].mix != mix
            || !fg_mix_ends_with(name, fg_mix_rules[r].suffix))
        {
            continue;
        }

        switch (fg_mix_rules[r].when) {
        case FG_MIX_BELOW:
            hit = i < fg_mix_rules[r].arg;
            break;
        case FG_MIX_BELOW_FRAC:
            hit = i < n / fg_mix_rules[r].arg;
            break;
        case FG_MIX_MORE_BITS:
            hit = fg_mix_more_bits(i, n);
            break;
        default:
            hit = 1;
            break;
        }

        return hit ? fg_mix_rules[r].type
                   : fg_mix_rules[r].other ? fg_mix_rules[r].other : base;
    }

    return base;
}


/* a type whose block does not divide the rows: llama.cpp's fallback */
static uint32_t
fg_mix_fallback(uint32_t type, uint64_t ne0)
{
    if (ne0 % fg_ggml_block_size(type) == 0) {
        return type;
    }

    switch (type) {
    case FG_GGML_Q2_K:
    case FG_GGML_Q3_K:
        type = FG_GGML_Q4_0;
        break;
    case FG_GGML_Q4_K:
        type = FG_GGML_Q5_0;
        break;
    case FG_GGML_Q5_K:
        type = FG_GGML_Q5_1;
        break;
    case FG_GGML_Q6_K:
        type = FG_GGML_Q8_0;
        break;
    default:
        break;
    }

    return ne0 % fg_ggml_block_size(type) == 0 ? type : FG_GGML_F16;
}


uint32_t
fg_gguf_mix_type(uint32_t type, uint32_t mix, const char *name,
    uint32_t declared, uint32_t n_dims, uint64_t ne0, uint32_t n_layer,
    int tied)
{
    unsigned  layer;

    if (n_dims < 2 || fg_mix_ends_with(name, "_norm.weight")) {
        return declared;
    }

    if (mix == 0) {
        return fg_mix_fallback(type, ne0);
    }

    if (strcmp(name, "output.weight") == 0
        || (tied && strcmp(name, "token_embd.weight") == 0))
    {
        return fg_mix_fallback(ne0 % fg_ggml_block_size(type)
                               ? FG_GGML_Q8_0 : FG_GGML_Q6_K, ne0);
    }

    if (sscanf(name, "blk.%u.", &layer) != 1) {
        layer = 0;
    }

    return fg_mix_fallback(fg_mix_rule(mix, type, name, layer, n_layer),
                           ne0);
}
