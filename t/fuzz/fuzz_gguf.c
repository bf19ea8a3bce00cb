
/*
 * fairgate: libFuzzer target for the GGUF reader, the Llama loader and the
 * tokenizer built from the file's metadata.  Not part of `make test`:
 *
 *     make fuzz-gguf && build/fuzz/fuzz_gguf build/fuzz/corpus
 *
 * (`make fuzz-gguf-run FUZZ_TIME=300` seeds the corpus and runs it.)
 * Everything a file can make the code do must stay in bounds, under ASan
 * and UBSan, whatever the bytes.
 */


#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fg_ggml_types.h"
#include "fg_kernels.h"
#include "fg_gguf.h"
#include "fg_llama.h"
#include "fg_tokenizer.h"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static void
fuzz_tokenizer(const fg_gguf_t *g)
{
    char             err[FG_GGUF_ERR_LEN], out[4096];
    int32_t          ids[600];
    size_t           i;
    ssize_t          n, k;
    fg_tokenizer_t  *tok;
    fg_tok_stream_t  st;

    static const char *const  texts[] = {
        "Once upon a time, there was a little dragon.",
        " \t\n\n  x  ",
        "h\xc3\xa9llo w\xc3\xb6rld \xe4\xbd\xa0\xe5\xa5\xbd \xf0\x9f\x98\x80!",
        "I'm 12345 <s></s><|endoftext|>'LL \xff\xfe\x80",
        ""
    };

    tok = fg_tokenizer_load(g, err, sizeof(err));
    if (tok == NULL) {
        return;
    }

    for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        n = fg_tokenizer_encode(tok, texts[i], strlen(texts[i]),
                                i % 2 ? FG_TOK_SPECIAL : 0, ids, 600);

        if (n < 0 || n > 600) {
            continue;
        }

        fg_tokenizer_decode(tok, ids, n, FG_TOK_STRIP_SPACE, out,
                            sizeof(out));

        fg_tok_stream_init(&st);

        for (k = 0; k < n; k++) {
            if (fg_tok_stream_push(tok, &st, ids[k], 0, out, sizeof(out))
                < 0)
            {
                break;
            }
        }

        fg_tok_stream_flush(&st, out, sizeof(out));
    }

    /* every id, including ones out of range */
    for (k = -2; k < (ssize_t) fg_tokenizer_n_vocab(tok) + 2 && k < 70000;
         k++)
    {
        fg_tokenizer_piece(tok, (int32_t) k, FG_TOK_SPECIAL, out,
                           sizeof(out));
    }

    fg_tokenizer_free(tok);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char                     err[FG_GGUF_ERR_LEN];
    float                    row[256], raw[256], freqs[512];
    uint8_t                 *copy;
    uint32_t                 u;
    uint64_t                 i, n;
    fg_gguf_t               *g;
    fg_gguf_str_t            s;
    fg_llama_model_t         m;
    const fg_gguf_kv_t      *kv;
    const fg_gguf_tensor_t  *t;

    /* a buffer of exactly the input's size: a read past it is caught */
    copy = malloc(size ? size : 1);
    if (copy == NULL) {
        return 0;
    }

    memcpy(copy, data, size);

    g = fg_gguf_open_mem(copy, size, err, sizeof(err));

    if (g == NULL) {
        free(copy);
        return 0;
    }

    for (i = 0; i < g->n_kv; i++) {
        kv = &g->kv[i];

        if (kv->type == FG_GGUF_ARRAY && kv->arr_type != FG_GGUF_STRING
            && kv->n > 0)
        {
            (void) fg_gguf_arr_i64(kv, kv->n - 1);
            (void) fg_gguf_arr_f64(kv, 0);
        }
    }

    (void) fg_gguf_get_u32(g, "llama.block_count", &u, err, sizeof(err));
    (void) fg_gguf_get_str(g, "general.architecture", &s, err, sizeof(err));

    for (i = 0; i < g->n_tensors; i++) {
        t = &g->tensors[i];

        /* the kernels read a row's blocks in place: from aligned bytes */
        if (fg_ggml_type_supported(t->type)) {
            n = t->ne[0] < 256 ? t->ne[0] : 256;
            n -= n % fg_ggml_block_size(t->type);
            memcpy(raw, t->data, fg_ggml_row_size(t->type, n));
            fg_k_dequant_row((fg_k_type_e) t->type, raw, row, n);
        }
    }

    if (fg_llama_load(g, &m, err, sizeof(err)) == 0) {
        if (m.hp.n_rot <= 1024) {
            fg_llama_rope_freqs(&m.hp, freqs);
        }

        fg_llama_free(&m);
    }

    fuzz_tokenizer(g);

    fg_gguf_close(g);
    free(copy);

    return 0;
}
