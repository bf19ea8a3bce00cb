
/*
 * fairgate: fairgate-gguf-gen, writes GGUF models of any Llama shape with
 * seeded random weights (the generator, fg_gguf_gen.c, which the tests
 * and benchmarks link without running a process), then loads what it
 * wrote with the engine's own loader: a file it reports is one the engine
 * reads.
 */


#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_gguf_convert.h"
#include "fg_gguf_gen.h"
#include "fg_gguf_mix.h"
#include "fg_gguf_tokjson.h"
#include "fg_ggml_types.h"
#include "fg_llama.h"


/* the command line: the generator's configuration and the command's own */
typedef struct {
    const char          *output;
    const char          *convert;       /* --convert: the model to read */
    fg_gguf_gen_conf_t   c;
    unsigned             quiet:1;
    unsigned             vocab_set:1;
} fg_gen_args_t;


static void
fg_gen_usage(FILE *f)
{
    fprintf(f,
        "usage: fairgate-gguf-gen -o FILE [options]\n"
        "\n"
        "Writes a Llama-family GGUF model with seeded random weights, or\n"
        "converts one to another type.\n"
        "\n"
        "  -o, --output FILE        the file to write\n"
        "  -p, --preset NAME        stories260k (the default shape: "
                                    "embedding 64,\n"
        "                           5 blocks, 8 heads, 4 kv heads, "
                                    "feed-forward 172)\n"
        "                           or 100m (768, 12, 12, 4, 2048, "
                                    "vocabulary 32000,\n"
        "                           tied output: about 100M parameters)\n"
        "  -t, --type TYPE          the matrices' type: f32 (default), "
                                    "f16, bf16,\n"
        "                           q4_0, q4_1, q5_0, q5_1, q8_0, q2_k, "
                                    "q3_k, q4_k,\n"
        "                           q5_k, q6_k; or llama.cpp's mixture "
                                    "q3_k_m, q4_k_s,\n"
        "                           q4_k_m, q5_k_s or q5_k_m\n"
        "      --convert IN         write the f32, f16 or bf16 model IN "
                                    "in --type\n"
        "                           (every other option is ignored)\n"
        "      --arch NAME          llama (default) or qwen2 "
                                    "(q/k/v biases)\n"
        "                           or qwen3 (q/k norms), gemma, gemma2, "
                                    "gemma3\n"
        "                           (gemma and gemma2 always tied), phi3 "
                                    "(fused\n"
        "                           attn_qkv, ffn_up of gate and up)\n"
        "      --head-dim N         head size (default embedding / "
                                    "heads)\n"
        "      --swa N              attention.sliding_window (gemma2, "
                                    "gemma3)\n"
        "      --rope-base-swa F    rope.freq_base_swa (gemma2, gemma3)\n"
        "      --rope-longrope N    Phi-3's LongRoPE from an original "
                                    "context of N\n"
        "                           (phi3): factors long and short, the "
                                    "long ones\n"
        "                           taken where --ctx is larger\n"
        "      --attn-softcap F     attn_logit_softcapping (gemma2)\n"
        "      --final-softcap F    final_logit_softcapping (gemma2, "
                                    "gemma3)\n"
        "      --embd N             embedding length\n"
        "      --layers N           blocks\n"
        "      --heads N            query heads\n"
        "      --kv-heads N         key/value heads\n"
        "      --ff N               feed-forward length\n"
        "      --vocab N            vocabulary size (the synthetic "
                                    "tokenizer pads)\n"
        "      --ctx N              context length (default 2048)\n"
        "      --rms-eps F          RMS-norm epsilon (default 1e-5)\n"
        "      --rope-base F        RoPE frequency base (default 10000)\n"
        "      --rope-llama3 F[,LOW,HIGH,CTX]\n"
        "                           Llama 3 rope scaling "
                                    "(rope_freqs.weight), e.g. 8,1,4,8192\n"
        "      --tied               no output.weight: the embeddings serve\n"
        "      --untied             a separate output.weight\n"
        "      --tokenizer FILE     copy the tokenizer of a GGUF file "
                                    "(default: a\n"
        "                           synthetic byte-fallback tokenizer)\n"
        "      --tokenizer-json FILE  a Hugging Face tokenizer.json, "
                                    "written as\n"
        "                           llama.cpp's converter does\n"
        "      --tokenizer-config FILE  its tokenizer_config.json (chat "
                                    "template,\n"
        "                           BOS, EOS, add_bos_token)\n"
        "      --seed N             weights' seed (default 1)\n"
        "      --name TEXT          general.name\n"
        "      --gguf-version N     2 or 3 (default 3)\n"
        "      --alignment N        data alignment (default 32)\n"
        "  -q, --quiet              no summary\n"
        "  -h, --help\n");
}


static int
fg_gen_u32(const char *opt, const char *s, uint32_t *out)
{
    char               *end;
    unsigned long long  v;

    errno = 0;
    v = strtoull(s, &end, 10);

    if (errno || end == s || *end || v == 0 || v > UINT32_MAX || s[0] == '-')
    {
        fprintf(stderr, "fairgate-gguf-gen: %s: \"%s\" is not a positive "
                "integer\n", opt, s);
        return -1;
    }

    *out = (uint32_t) v;

    return 0;
}


static int
fg_gen_f32(const char *opt, const char *s, float *out)
{
    char  *end;
    float  v;

    errno = 0;
    v = strtof(s, &end);

    if (errno || end == s || *end || !(v > 0)) {
        fprintf(stderr, "fairgate-gguf-gen: %s: \"%s\" is not a positive "
                "number\n", opt, s);
        return -1;
    }

    *out = v;

    return 0;
}


static int
fg_gen_rope(const char *s, fg_gguf_gen_conf_t *c)
{
    int  n;

    n = sscanf(s, "%f,%f,%f,%u", &c->rope_factor, &c->rope_low,
               &c->rope_high, &c->rope_orig_ctx);

    if ((n != 1 && n != 4) || !(c->rope_factor > 1)
        || !(c->rope_high > c->rope_low) || !(c->rope_low > 0)
        || c->rope_orig_ctx == 0)
    {
        fprintf(stderr, "fairgate-gguf-gen: --rope-llama3: \"%s\" is not "
                "FACTOR (> 1) or FACTOR,LOW,HIGH,CTX\n", s);
        return -1;
    }

    return 0;
}


static int
fg_gen_preset(const char *name, fg_gguf_gen_conf_t *c)
{
    if (strcmp(name, "stories260k") == 0) {
        return 0;
    }

    if (strcmp(name, "100m") == 0) {
        c->n_embd = 768;
        c->n_layer = 12;
        c->n_head = 12;
        c->n_head_kv = 4;
        c->n_ff = 2048;
        c->n_vocab = 32000;
        c->tied = 1;
        return 0;
    }

    fprintf(stderr, "fairgate-gguf-gen: unknown preset \"%s\" "
            "(stories260k, 100m)\n", name);
    return -1;
}




/* a type or a mixture (fg_gguf_mix.h) */
static int
fg_gen_type(const char *s, fg_gguf_gen_conf_t *c)
{
    const fg_gguf_mix_t  *mix;

    mix = fg_gguf_mix_find(s);

    if (mix == NULL) {
        fprintf(stderr, "fairgate-gguf-gen: --type: \"%s\" is not %s\n", s,
                fg_gguf_mix_names());
        return -1;
    }

    c->type = mix->type;
    c->mix = mix->mix;

    return 0;
}


static int
fg_gen_arch(const char *s, const char **arch)
{
    size_t  i;

    static const char  *archs[] = {
        "llama", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "phi3"
    };

    for (i = 0; i < sizeof(archs) / sizeof(archs[0]); i++) {
        if (strcmp(s, archs[i]) == 0) {
            *arch = archs[i];
            return 0;
        }
    }

    fprintf(stderr, "fairgate-gguf-gen: --arch: \"%s\" is not llama, "
            "qwen2, qwen3, gemma, gemma2, gemma3 or phi3\n", s);

    return -1;
}


static int
fg_gen_seed(const char *s, uint64_t *seed)
{
    char  *end;

    errno = 0;
    *seed = strtoull(s, &end, 0);

    if (errno || end == s || *end || s[0] == '-') {
        fprintf(stderr, "fairgate-gguf-gen: --seed: \"%s\" is not "
                "an integer\n", s);
        return -1;
    }

    return 0;
}


/* one option: 0, or -1 when it is unknown or its value bad (said so) */
static int
fg_gen_option(int opt, const char *val, fg_gen_args_t *a)
{
    fg_gguf_gen_conf_t  *c;

    c = &a->c;

    switch (opt) {
    case 'o':
        a->output = val;
        return 0;
    case 'p':
        /* applied before the other options */
        return 0;
    case 't':
        return fg_gen_type(val, c);
    case 'c':
        a->convert = val;
        return 0;
    case 'a':
        return fg_gen_arch(val, &c->arch);
    case 'E':
        return fg_gen_u32("--embd", val, &c->n_embd);
    case 'L':
        return fg_gen_u32("--layers", val, &c->n_layer);
    case 'H':
        return fg_gen_u32("--heads", val, &c->n_head);
    case 'K':
        return fg_gen_u32("--kv-heads", val, &c->n_head_kv);
    case 'F':
        return fg_gen_u32("--ff", val, &c->n_ff);
    case 'V':
        a->vocab_set = 1;
        return fg_gen_u32("--vocab", val, &c->n_vocab);
    case 'C':
        return fg_gen_u32("--ctx", val, &c->n_ctx);
    case 'e':
        return fg_gen_f32("--rms-eps", val, &c->rms_eps);
    case 'b':
        return fg_gen_f32("--rope-base", val, &c->rope_base);
    case 'r':
        return fg_gen_rope(val, c);
    case 'D':
        return fg_gen_u32("--head-dim", val, &c->head_dim);
    case 'W':
        return fg_gen_u32("--swa", val, &c->n_swa);
    case 'B':
        return fg_gen_f32("--rope-base-swa", val, &c->rope_base_swa);
    case 'l':
        return fg_gen_u32("--rope-longrope", val, &c->longrope_ctx);
    case 'X':
        return fg_gen_f32("--attn-softcap", val, &c->attn_softcap);
    case 'f':
        return fg_gen_f32("--final-softcap", val, &c->final_softcap);
    case 'T':
        c->tied = 1;
        return 0;
    case 'U':
        c->tied = 0;
        return 0;
    case 'k':
        c->tokenizer_from = val;
        return 0;
    case 'J':
        c->tokenizer_json = val;
        c->tokenizer_write = fg_gguf_tokjson_gen;
        return 0;
    case 'G':
        c->tokenizer_config = val;
        return 0;
    case 's':
        return fg_gen_seed(val, &c->seed);
    case 'n':
        c->name = val;
        return 0;
    case 'v':
        return fg_gen_u32("--gguf-version", val, &c->version);
    case 'A':
        return fg_gen_u32("--alignment", val, &c->alignment);
    case 'q':
        a->quiet = 1;
        return 0;
    default:
        fg_gen_usage(stderr);
        return -1;
    }
}


/* 0, or -1 for a bad command line (said so); --help exits */
static int
fg_gen_parse(int argc, char **argv, fg_gen_args_t *a)
{
    int       opt;
    uint32_t  i;

    static const struct option  options[] = {
        { "output", required_argument, NULL, 'o' },
        { "preset", required_argument, NULL, 'p' },
        { "type", required_argument, NULL, 't' },
        { "convert", required_argument, NULL, 'c' },
        { "arch", required_argument, NULL, 'a' },
        { "embd", required_argument, NULL, 'E' },
        { "layers", required_argument, NULL, 'L' },
        { "heads", required_argument, NULL, 'H' },
        { "kv-heads", required_argument, NULL, 'K' },
        { "ff", required_argument, NULL, 'F' },
        { "vocab", required_argument, NULL, 'V' },
        { "ctx", required_argument, NULL, 'C' },
        { "rms-eps", required_argument, NULL, 'e' },
        { "rope-base", required_argument, NULL, 'b' },
        { "rope-llama3", required_argument, NULL, 'r' },
        { "head-dim", required_argument, NULL, 'D' },
        { "swa", required_argument, NULL, 'W' },
        { "rope-base-swa", required_argument, NULL, 'B' },
        { "rope-longrope", required_argument, NULL, 'l' },
        { "attn-softcap", required_argument, NULL, 'X' },
        { "final-softcap", required_argument, NULL, 'f' },
        { "tied", no_argument, NULL, 'T' },
        { "untied", no_argument, NULL, 'U' },
        { "tokenizer", required_argument, NULL, 'k' },
        { "tokenizer-json", required_argument, NULL, 'J' },
        { "tokenizer-config", required_argument, NULL, 'G' },
        { "seed", required_argument, NULL, 's' },
        { "name", required_argument, NULL, 'n' },
        { "gguf-version", required_argument, NULL, 'v' },
        { "alignment", required_argument, NULL, 'A' },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };

    memset(a, 0, sizeof(fg_gen_args_t));
    fg_gguf_gen_defaults(&a->c);

    /* a preset first, whatever its place, so that options refine it */
    for (i = 1; i + 1 < (uint32_t) argc; i++) {
        if (strcmp(argv[i], "-p") == 0 || strcmp(argv[i], "--preset") == 0) {
            if (fg_gen_preset(argv[i + 1], &a->c) != 0) {
                return -1;
            }
        }
    }

    while ((opt = getopt_long(argc, argv, "o:p:t:qh", options, NULL)) != -1)
    {
        if (opt == 'h') {
            fg_gen_usage(stdout);
            exit(0);
        }

        if (fg_gen_option(opt, optarg, a) != 0) {
            return -1;
        }
    }

    if (a->output == NULL || optind != argc) {
        fg_gen_usage(stderr);
        return -1;
    }

    /* a copied tokenizer sets the vocabulary unless one was asked for */
    if ((a->c.tokenizer_from || a->c.tokenizer_json) && !a->vocab_set) {
        a->c.n_vocab = 0;
    }

    return 0;
}


/* loads what was written, and says what it is unless quiet */
static int
fg_gen_verify(const char *path, int quiet)
{
    char               err[FG_GGUF_ERR_LEN];
    uint32_t           i;
    uint64_t           params;
    fg_gguf_t         *g;
    fg_llama_model_t   m;

    g = fg_gguf_open(path, err, sizeof(err));

    if (g == NULL || fg_llama_load(g, &m, err, sizeof(err)) != 0) {
        fprintf(stderr, "fairgate-gguf-gen: the written file does not load: "
                "%s\n", err);
        fg_gguf_close(g);
        return -1;
    }

    params = 0;

    for (i = 0; i < g->n_tensors; i++) {
        params += g->tensors[i].n_elements;
    }

    if (!quiet) {
        printf("%s: %s, %s, embedding %u, %u blocks, %u/%u heads, "
               "feed-forward %u, vocabulary %u, %s output, "
               "%llu parameters, %zu bytes\n", path, m.hp.arch,
               fg_ggml_type_name(m.tok_embd->type), m.hp.n_embd,
               m.hp.n_layer, m.hp.n_head, m.hp.n_head_kv, m.hp.n_ff,
               m.hp.n_vocab, m.tied ? "tied" : "separate",
               (unsigned long long) params, g->size);
    }

    fg_llama_free(&m);
    fg_gguf_close(g);

    return 0;
}


int
main(int argc, char **argv)
{
    char           err[FG_GGUF_ERR_LEN];
    fg_gen_args_t  a;

    if (fg_gen_parse(argc, argv, &a) != 0) {
        return 2;
    }

    if ((a.convert
         ? fg_gguf_convert(a.convert, a.output, a.c.type, a.c.mix, err,
                           sizeof(err))
         : fg_gguf_gen_file(&a.c, a.output, err, sizeof(err)))
        != 0)
    {
        fprintf(stderr, "fairgate-gguf-gen: %s\n", err);
        return 1;
    }

    /* what was written must load */
    if (fg_gen_verify(a.output, a.quiet) != 0) {
        return 1;
    }

    return 0;
}
