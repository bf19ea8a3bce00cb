
/*
 * fairgate: the tokenizer's side of t/115-tokenizer-real.t: a GGUF
 * file's tokenizer over a corpus of JSON strings, one a line, writing for
 * each line what t/node/tok-ref.mjs writes for the reference:
 *
 *     S ids|T ids|D hex
 *
 * S: encoded with control tokens matched (FG_TOK_SPECIAL), T: as text,
 * D: the T tokens decoded (the UTF-8 bytes in hex).  No BOS, no EOS.
 * Not a TAP program: the perl test compares the two files.
 *
 * usage: tok_check MODEL.gguf CORPUS.jsonl OUT
 *        tok_check --meta MODEL.gguf [TOKEN...]
 *
 * --meta writes what the tokenizer read: "model M pre P vocab N bos B
 * eos E add_bos A", then "type TOKEN T" for each token named, with
 * " eog" after it when it ends generation.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fg_gguf.h"
#include "fg_tokenizer.h"


static int
tok_ids(FILE *o, const fg_tokenizer_t *t, const char *s, size_t len,
    int flags, int32_t *ids, size_t max, char tag)
{
    ssize_t  n, i;

    n = fg_tokenizer_encode(t, s, len, flags | FG_TOK_NO_BOS, ids, max);

    if (n < 0 || (size_t) n > max) {
        return -1;
    }

    fprintf(o, "%c", tag);

    for (i = 0; i < n; i++) {
        fprintf(o, " %d", ids[i]);
    }

    return (int) n;
}


static int
tok_line(FILE *o, const fg_tokenizer_t *t, const char *s, size_t len)
{
    int            n;
    char          *out;
    size_t         i, max, size;
    ssize_t        d;
    int32_t       *ids;

    max = 3 * len + 8;
    size = max * (fg_tokenizer_max_piece(t) + 4) + 1;
    ids = malloc(max * sizeof(int32_t));
    out = malloc(size);

    if (ids == NULL || out == NULL
        || tok_ids(o, t, s, len, FG_TOK_SPECIAL, ids, max, 'S') < 0)
    {
        free(ids);
        free(out);
        return -1;
    }

    fprintf(o, "|");
    n = tok_ids(o, t, s, len, 0, ids, max, 'T');

    d = n < 0 ? -1 : fg_tokenizer_decode(t, ids, n, FG_TOK_STRIP_SPACE
                                         | FG_TOK_SPECIAL, out, size);

    if (d < 0 || (size_t) d >= size) {
        free(ids);
        free(out);
        return -1;
    }

    fprintf(o, "|D ");

    for (i = 0; i < (size_t) d; i++) {
        fprintf(o, "%02x", (uint8_t) out[i]);
    }

    fprintf(o, "\n");

    free(ids);
    free(out);

    return 0;
}


static int
tok_meta(const fg_tokenizer_t *t, int argc, char **argv)
{
    int      i;
    int32_t  id;

    printf("model %d pre %d vocab %u bos %d eos %d add_bos %d\n",
           fg_tokenizer_model(t), fg_tokenizer_pre(t),
           fg_tokenizer_n_vocab(t), fg_tokenizer_bos(t), fg_tokenizer_eos(t),
           fg_tokenizer_add_bos(t));

    for (i = 0; i < argc; i++) {
        id = fg_tokenizer_find(t, argv[i], strlen(argv[i]));
        printf("type %s %d%s\n", argv[i], fg_tokenizer_type(t, id),
               fg_tokenizer_is_eog(t, id) ? " eog" : "");
    }

    return 0;
}


int
main(int argc, char **argv)
{
    int              meta;
    char             err[256], *line;
    FILE            *in, *o;
    size_t           cap, k;
    json_t          *j;
    ssize_t          len;
    fg_gguf_t       *g;
    json_error_t     e;
    fg_tokenizer_t  *t;

    meta = argc >= 3 && strcmp(argv[1], "--meta") == 0;

    if (argc != 4 && !meta) {
        fprintf(stderr, "usage: tok_check MODEL.gguf CORPUS.jsonl OUT\n"
                "       tok_check --meta MODEL.gguf [TOKEN...]\n");
        return 2;
    }

    g = fg_gguf_open(argv[1 + meta], err, sizeof(err));
    t = g ? fg_tokenizer_load(g, err, sizeof(err)) : NULL;

    if (t == NULL) {
        fprintf(stderr, "tok_check: %s: %s\n", argv[1 + meta], err);
        return 1;
    }

    if (meta) {
        return tok_meta(t, argc - 3, argv + 3);
    }

    in = fopen(argv[2], "r");
    o = fopen(argv[3], "w");

    if (in == NULL || o == NULL) {
        fprintf(stderr, "tok_check: cannot open %s or %s\n", argv[2],
                argv[3]);
        return 1;
    }

    line = NULL;
    cap = 0;

    for (k = 1; (len = getline(&line, &cap, in)) > 0; k++) {
        if (len <= 1) {
            continue;
        }

        j = json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);

        if (!json_is_string(j)
            || tok_line(o, t, json_string_value(j), json_string_length(j))
               != 0)
        {
            fprintf(stderr, "tok_check: %s: line %zu fails\n", argv[2], k);
            return 1;
        }

        json_decref(j);
    }

    free(line);
    fclose(in);
    fg_tokenizer_free(t);
    fg_gguf_close(g);

    return fclose(o) == 0 ? 0 : 1;
}
