
/*
 * fairgate: fairgate-gguf-gen, writes GGUF models of any Llama shape with
 * seeded random weights.
 *
 * It lives in engine/ beside the reader because it is the engine's tool:
 * the engine's tests and benchmarks make their models with it (and link the
 * same generator, fg_gguf_gen(), without running a process), and it checks
 * what it wrote with the engine's own loader.
 */


#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_gguf_write.h"


static void
fg_gen_usage(FILE *f)
{
    fprintf(f,
        "usage: fairgate-gguf-gen -o FILE [options]\n"
        "\n"
        "Writes a Llama-family GGUF model with seeded random weights.\n"
        "\n"
        "  -o, --output FILE        the file to write\n"
        "  -p, --preset NAME        stories260k (the default shape: "
                                    "embedding 64,\n"
        "                           5 blocks, 8 heads, 4 kv heads, "
                                    "feed-forward 172)\n"
        "                           or 100m (768, 12, 12, 4, 2048, "
                                    "vocabulary 32000,\n"
        "                           tied output: about 100M parameters)\n"
        "  -t, --type TYPE          f32 (default), f16, bf16 or q8_0, "
                                    "for the matrices\n"
        "      --arch NAME          llama (default) or qwen2 "
                                    "(q/k/v biases)\n"
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


int
main(int argc, char **argv)
{
    int                      opt, quiet, rc, vocab_set;
    char                     err[FG_GGUF_ERR_LEN], *end;
    uint32_t                 i;
    uint64_t                 params;
    const char              *output;
    fg_gguf_t               *g;
    fg_llama_model_t         m;
    fg_gguf_gen_conf_t       c;

    static const struct option  options[] = {
        { "output", required_argument, NULL, 'o' },
        { "preset", required_argument, NULL, 'p' },
        { "type", required_argument, NULL, 't' },
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
        { "tied", no_argument, NULL, 'T' },
        { "untied", no_argument, NULL, 'U' },
        { "tokenizer", required_argument, NULL, 'k' },
        { "seed", required_argument, NULL, 's' },
        { "name", required_argument, NULL, 'n' },
        { "gguf-version", required_argument, NULL, 'v' },
        { "alignment", required_argument, NULL, 'A' },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };

    fg_gguf_gen_defaults(&c);
    output = NULL;
    quiet = 0;
    rc = 0;
    vocab_set = 0;

    /* a preset first, whatever its place, so that options refine it */
    for (i = 1; i + 1 < (uint32_t) argc; i++) {
        if (strcmp(argv[i], "-p") == 0 || strcmp(argv[i], "--preset") == 0) {
            if (fg_gen_preset(argv[i + 1], &c) != 0) {
                return 2;
            }
        }
    }

    while ((opt = getopt_long(argc, argv, "o:p:t:qh", options, NULL)) != -1)
    {
        switch (opt) {
        case 'o':
            output = optarg;
            break;
        case 'p':
            break;
        case 't':
            if (strcmp(optarg, "f32") == 0) {
                c.type = FG_GGML_F32;
            } else if (strcmp(optarg, "f16") == 0) {
                c.type = FG_GGML_F16;
            } else if (strcmp(optarg, "bf16") == 0) {
                c.type = FG_GGML_BF16;
            } else if (strcmp(optarg, "q8_0") == 0) {
                c.type = FG_GGML_Q8_0;
            } else {
                fprintf(stderr, "fairgate-gguf-gen: --type: \"%s\" is not "
                        "f32, f16, bf16 or q8_0\n", optarg);
                return 2;
            }
            break;
        case 'a':
            if (strcmp(optarg, "llama") != 0 && strcmp(optarg, "qwen2") != 0)
            {
                fprintf(stderr, "fairgate-gguf-gen: --arch: \"%s\" is not "
                        "llama or qwen2\n", optarg);
                return 2;
            }
            c.arch = optarg;
            break;
        case 'E':
            rc = fg_gen_u32("--embd", optarg, &c.n_embd);
            break;
        case 'L':
            rc = fg_gen_u32("--layers", optarg, &c.n_layer);
            break;
        case 'H':
            rc = fg_gen_u32("--heads", optarg, &c.n_head);
            break;
        case 'K':
            rc = fg_gen_u32("--kv-heads", optarg, &c.n_head_kv);
            break;
        case 'F':
            rc = fg_gen_u32("--ff", optarg, &c.n_ff);
            break;
        case 'V':
            rc = fg_gen_u32("--vocab", optarg, &c.n_vocab);
            vocab_set = 1;
            break;
        case 'C':
            rc = fg_gen_u32("--ctx", optarg, &c.n_ctx);
            break;
        case 'e':
            rc = fg_gen_f32("--rms-eps", optarg, &c.rms_eps);
            break;
        case 'b':
            rc = fg_gen_f32("--rope-base", optarg, &c.rope_base);
            break;
        case 'r':
            rc = fg_gen_rope(optarg, &c);
            break;
        case 'T':
            c.tied = 1;
            break;
        case 'U':
            c.tied = 0;
            break;
        case 'k':
            c.tokenizer_from = optarg;
            break;
        case 's':
            errno = 0;
            c.seed = strtoull(optarg, &end, 0);

            if (errno || end == optarg || *end || optarg[0] == '-') {
                fprintf(stderr, "fairgate-gguf-gen: --seed: \"%s\" is not "
                        "an integer\n", optarg);
                return 2;
            }

            break;
        case 'n':
            c.name = optarg;
            break;
        case 'v':
            rc = fg_gen_u32("--gguf-version", optarg, &c.version);
            break;
        case 'A':
            rc = fg_gen_u32("--alignment", optarg, &c.alignment);
            break;
        case 'q':
            quiet = 1;
            break;
        case 'h':
            fg_gen_usage(stdout);
            return 0;
        default:
            fg_gen_usage(stderr);
            return 2;
        }

        if (rc != 0) {
            return 2;
        }
    }

    if (output == NULL || optind != argc) {
        fg_gen_usage(stderr);
        return 2;
    }

    /* a copied tokenizer sets the vocabulary unless one was asked for */
    if (c.tokenizer_from && !vocab_set) {
        c.n_vocab = 0;
    }

    if (fg_gguf_gen_file(&c, output, err, sizeof(err)) != 0) {
        fprintf(stderr, "fairgate-gguf-gen: %s\n", err);
        return 1;
    }

    /* what was written must load */
    g = fg_gguf_open(output, err, sizeof(err));

    if (g == NULL || fg_llama_load(g, &m, err, sizeof(err)) != 0) {
        fprintf(stderr, "fairgate-gguf-gen: the written file does not load: "
                "%s\n", err);
        fg_gguf_close(g);
        return 1;
    }

    params = 0;

    for (i = 0; i < g->n_tensors; i++) {
        params += g->tensors[i].n_elements;
    }

    if (!quiet) {
        printf("%s: %s, %s, embedding %u, %u blocks, %u/%u heads, "
               "feed-forward %u, vocabulary %u, %s output, "
               "%llu parameters, %zu bytes\n", output, m.hp.arch,
               fg_ggml_type_name(m.tok_embd->type), m.hp.n_embd,
               m.hp.n_layer, m.hp.n_head, m.hp.n_head_kv, m.hp.n_ff,
               m.hp.n_vocab, m.tied ? "tied" : "separate",
               (unsigned long long) params, g->size);
    }

    fg_llama_free(&m);
    fg_gguf_close(g);

    return 0;
}
