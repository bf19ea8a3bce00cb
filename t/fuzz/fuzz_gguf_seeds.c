
/*
 * fairgate: writes small seed files for fuzz_gguf into a directory: tiny
 * models of several types and versions, and tokenizer-only files of each
 * tokenizer model and pre-tokenizer, so that the fuzzer starts from every
 * path rather than having to find them.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_ggml_types.h"
#include "fg_gguf_gen.h"
#include "fg_gguf_write.h"

#include "../unit/fg_test_bpe.h"
#include "../unit/fg_test_gguf.h"


static int
write_file(const char *dir, const char *name, fg_gguf_writer_t *w)
{
    int    rc;
    char   path[512];
    FILE  *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);

    f = fopen(path, "wb");
    if (f == NULL) {
        perror(path);
        return -1;
    }

    rc = fg_gguf_w_write_header(w, f);

    if (fclose(f) != 0 || rc != 0) {
        fprintf(stderr, "%s: %s\n", path, fg_gguf_writer_error(w));
        return -1;
    }

    return 0;
}


static int
spm(const char *dir)
{
    int                rc;
    fg_gguf_writer_t  *w;

    static const char *const  tokens[] = {
        "<unk>", "<s>", "</s>", "<0x0A>", "<0x41>", "<0xC3>", "<0xA9>",
        "<0xE2>", "\xe2\x96\x81", "\xe2\x96\x81t", "he", "\xe2\x96\x81the",
        "a", "e", "h", "t", "\xc3\xa9", "<tool>"
    };
    static const float    scores[] = {
        0, 0, 0, 0, 0, 0, 0, 0, -1, -2, -3, -4, -5, -6, -7, -8, -9, 0
    };
    static const int32_t  types[] = {
        2, 3, 3, 6, 6, 6, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4
    };

    w = fg_gguf_writer_new(3, 0);
    fg_gguf_w_str(w, "tokenizer.ggml.model", "llama");
    fg_gguf_w_arr_str(w, "tokenizer.ggml.tokens", tokens, NULL, 18);
    fg_gguf_w_arr(w, "tokenizer.ggml.scores", FG_GGUF_FLOAT32, scores, 18);
    fg_gguf_w_arr(w, "tokenizer.ggml.token_type", FG_GGUF_INT32, types, 18);
    fg_gguf_w_u32(w, "tokenizer.ggml.bos_token_id", 1);
    fg_gguf_w_u32(w, "tokenizer.ggml.eos_token_id", 2);
    fg_gguf_w_bool(w, "tokenizer.ggml.add_bos_token", 1);

    rc = write_file(dir, "tok-spm.gguf", w);
    fg_gguf_writer_free(w);

    return rc;
}


static int
bpe(const char *dir, const char *name, const char *pre)
{
    int                i, rc;
    char               bytes[256][4];
    int32_t            types[256 + 6];
    const char        *tokens[256 + 6];
    fg_gguf_writer_t  *w;

    static const char *const  extra[] = {
        "he", "ll", "hell", "hello", "<|endoftext|>", "<|im_start|>"
    };
    static const char *const  merges[] = {
        "h e", "l l", "he ll", "hell o"
    };

    fg_test_byte_tokens(bytes, tokens, types);

    for (i = 0; i < 6; i++) {
        tokens[256 + i] = extra[i];
        types[256 + i] = i < 4 ? 1 : 3;
    }

    w = fg_test_bpe_writer("gpt2", pre, tokens, types, 262, merges, 4);
    fg_gguf_w_u32(w, "tokenizer.ggml.eos_token_id", 260);

    rc = write_file(dir, name, w);
    fg_gguf_writer_free(w);

    return rc;
}


static int
model(const char *dir, const char *name, const char *arch, uint32_t type,
    uint32_t embd, uint32_t version)
{
    char                path[512], err[FG_GGUF_ERR_LEN];
    fg_gguf_gen_conf_t  c;

    fg_test_gguf_shape(&c, type, embd, 1, embd, 2, 1);
    c.arch = arch;
    c.version = version;
    c.tied = 1;
    c.rope_factor = type == FG_GGML_Q8_0 ? 8 : 1;

    snprintf(path, sizeof(path), "%s/%s", dir, name);

    if (fg_gguf_gen_file(&c, path, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s: %s\n", path, err);
        return -1;
    }

    return 0;
}


int
main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_gguf_seeds DIR\n");
        return 2;
    }

    if (spm(argv[1]) != 0
        || bpe(argv[1], "tok-llama3.gguf", "llama-bpe") != 0
        || bpe(argv[1], "tok-qwen2.gguf", "qwen2") != 0
        || bpe(argv[1], "tok-gpt2.gguf", "gpt2") != 0
        || model(argv[1], "model-f16.gguf", "llama", FG_GGML_F16, 8, 3) != 0
        || model(argv[1], "model-bf16.gguf", "llama", FG_GGML_BF16, 8, 2)
           != 0
        || model(argv[1], "model-q8.gguf", "qwen2", FG_GGML_Q8_0, 32, 3)
           != 0
        || model(argv[1], "model-q4.gguf", "llama", FG_GGML_Q4_0, 32, 3)
           != 0
        || model(argv[1], "model-q5.gguf", "llama", FG_GGML_Q5_1, 32, 3)
           != 0)
    {
        return 1;
    }

    return 0;
}
