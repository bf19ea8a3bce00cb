
/*
 * fairgate: tokenizer.json to GGUF tokenizer metadata (see the header):
 * the vocabulary with its types and scores, the merges, and the special
 * ids, flags and chat template of tokenizer_config.json.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fg_gguf_tokjson.h"


#define FG_TJ_MAX_VOCAB  (1u << 24)
#define FG_TJ_PAD_LEN    24

/* GGUF's token types */
#define FG_TJ_NORMAL        1
#define FG_TJ_UNKNOWN       2
#define FG_TJ_CONTROL       3
#define FG_TJ_USER_DEFINED  4
#define FG_TJ_UNUSED        5
#define FG_TJ_BYTE          6


typedef struct {
    const char   *path;
    json_t       *tok;              /* tokenizer.json */
    json_t       *conf;             /* tokenizer_config.json, or NULL */
    json_t       *vocab;            /* model.vocab: text -> id */
    json_t       *added;            /* added_tokens */
    int           spm;              /* SentencePiece BPE, byte fallback */

    uint32_t      n;
    const char  **strs;
    size_t       *lens;
    char         *pads;             /* "[PADn]" texts */
    int32_t      *types;
    float        *scores;

    char        **merges;
    size_t        n_merges;

    char         *err;
    size_t        errlen;
} fg_tj_t;


static int fg_tj_load(fg_tj_t *tj, const char *config);
static int fg_tj_tokens(fg_tj_t *tj);
static void fg_tj_types(fg_tj_t *tj);
static int fg_tj_merges(fg_tj_t *tj);
static const char *fg_tj_pre(fg_tj_t *tj);
static int fg_tj_write(fg_tj_t *tj, fg_gguf_writer_t *w);
static void fg_tj_specials(fg_tj_t *tj, fg_gguf_writer_t *w);
static void fg_tj_template(fg_tj_t *tj, fg_gguf_writer_t *w);
static void fg_tj_free(fg_tj_t *tj);


int
fg_gguf_tokjson_write(fg_gguf_writer_t *w, const char *path,
    const char *config, uint32_t *n_vocab, char *err, size_t errlen)
{
    int       rc;
    fg_tj_t   tj;

    memset(&tj, 0, sizeof(fg_tj_t));
    tj.n = *n_vocab;
    tj.path = path;
    tj.err = err;
    tj.errlen = errlen;

    rc = -1;

    if (fg_tj_load(&tj, config) == 0 && fg_tj_tokens(&tj) == 0
        && fg_tj_merges(&tj) == 0)
    {
        fg_tj_types(&tj);
        rc = fg_tj_write(&tj, w);
        *n_vocab = tj.n;
    }

    fg_tj_free(&tj);

    return rc;
}


int
fg_gguf_tokjson_gen(const fg_gguf_gen_conf_t *c, fg_gguf_writer_t *w,
    uint32_t *n_vocab, char *err, size_t errlen)
{
    *n_vocab = c->n_vocab;

    return fg_gguf_tokjson_write(w, c->tokenizer_json, c->tokenizer_config,
                                 n_vocab, err, errlen);
}


static json_t *
fg_tj_parse(const char *path, size_t flags, char *err, size_t errlen)
{
    json_t        *j;
    json_error_t   e;

    j = json_load_file(path, JSON_ALLOW_NUL | flags, &e);

    if (j == NULL) {
        snprintf(err, errlen, "%s: line %d: %s", path, e.line, e.text);
        return NULL;
    }

    if (!json_is_object(j)) {
        snprintf(err, errlen, "%s: not a JSON object", path);
        json_decref(j);
        return NULL;
    }

    return j;
}


/* the files, and the model's kind: only BPE models are read */
static int
fg_tj_load(fg_tj_t *tj, const char *config)
{
    json_t      *model, *fallback;
    const char  *type;

    tj->tok = fg_tj_parse(tj->path, 0, tj->err, tj->errlen);
    if (tj->tok == NULL) {
        return -1;
    }

    if (config) {
        /* its integers are no ids: model_max_length is often 1e30 */
        tj->conf = fg_tj_parse(config, JSON_DECODE_INT_AS_REAL, tj->err,
                               tj->errlen);
        if (tj->conf == NULL) {
            return -1;
        }
    }

    model = json_object_get(tj->tok, "model");
    type = json_string_value(json_object_get(model, "type"));

    if (type == NULL || strcmp(type, "BPE") != 0) {
        snprintf(tj->err, tj->errlen, "%s: model.type is %s: fairgate "
                 "reads BPE tokenizers only", tj->path,
                 type ? type : "missing");
        return -1;
    }

    tj->vocab = json_object_get(model, "vocab");

    if (!json_is_object(tj->vocab) || json_object_size(tj->vocab) == 0) {
        snprintf(tj->err, tj->errlen, "%s: model.vocab is not an object of "
                 "tokens", tj->path);
        return -1;
    }

    tj->added = json_object_get(tj->tok, "added_tokens");

    if (tj->added && !json_is_array(tj->added)) {
        snprintf(tj->err, tj->errlen, "%s: added_tokens is not an array",
                 tj->path);
        return -1;
    }

    fallback = json_object_get(model, "byte_fallback");
    tj->spm = json_is_true(fallback);

    return 0;
}


/* an id of the file: 0 to the largest vocabulary, else -1 (said so) */
static int64_t
fg_tj_id(fg_tj_t *tj, json_t *v, const char *what)
{
    json_int_t  id;

    id = json_is_integer(v) ? json_integer_value(v) : -1;

    if (id < 0 || id >= FG_TJ_MAX_VOCAB) {
        snprintf(tj->err, tj->errlen, "%s: %s has no id from 0 to %u",
                 tj->path, what, FG_TJ_MAX_VOCAB - 1);
        return -1;
    }

    return id;
}


static int
fg_tj_alloc(fg_tj_t *tj)
{
    uint32_t  i;

    tj->strs = calloc(tj->n, sizeof(char *));
    tj->lens = calloc(tj->n, sizeof(size_t));
    tj->types = calloc(tj->n, sizeof(int32_t));
    tj->scores = calloc(tj->n, sizeof(float));
    tj->pads = malloc((size_t) tj->n * FG_TJ_PAD_LEN);

    if (tj->strs == NULL || tj->lens == NULL || tj->types == NULL
        || tj->scores == NULL || tj->pads == NULL)
    {
        snprintf(tj->err, tj->errlen, "out of memory");
        return -1;
    }

    for (i = 0; i < tj->n; i++) {
        tj->types[i] = FG_TJ_NORMAL;
    }

    return 0;
}


/* every id's text: the model's vocabulary, then the added tokens */
static int
fg_tj_tokens(fg_tj_t *tj)
{
    size_t       k;
    json_t      *v, *a;
    int64_t      id, max;
    uint32_t     i;
    const char  *key;

    max = -1;

    json_object_foreach(tj->vocab, key, v) {
        id = fg_tj_id(tj, v, "a token of model.vocab");
        if (id < 0) {
            return -1;
        }

        max = id > max ? id : max;
    }

    json_array_foreach(tj->added, k, a) {
        id = fg_tj_id(tj, json_object_get(a, "id"), "an added token");
        if (id < 0 || !json_is_string(json_object_get(a, "content"))) {
            snprintf(tj->err, tj->errlen, "%s: added_tokens[%zu] has no id "
                     "or no content", tj->path, k);
            return -1;
        }

        max = id > max ? id : max;
    }

    /* a larger size asked for is padded */
    if (tj->n < (uint64_t) max + 1) {
        tj->n = (uint32_t) max + 1;
    }

    if (tj->n > FG_TJ_MAX_VOCAB) {
        snprintf(tj->err, tj->errlen, "a vocabulary of %u tokens (at most "
                 "%u)", tj->n, FG_TJ_MAX_VOCAB);
        return -1;
    }

    if (fg_tj_alloc(tj) != 0) {
        return -1;
    }

    json_object_foreach(tj->vocab, key, v) {
        id = json_integer_value(v);
        tj->strs[id] = key;
        tj->lens[id] = strlen(key);
    }

    json_array_foreach(tj->added, k, a) {
        id = json_integer_value(json_object_get(a, "id"));
        v = json_object_get(a, "content");
        tj->strs[id] = json_string_value(v);
        tj->lens[id] = json_string_length(v);
    }

    /* ids that no token has, as the converter fills them */
    for (i = 0; i < tj->n; i++) {
        if (tj->strs[i] == NULL) {
            tj->strs[i] = tj->pads + (size_t) i * FG_TJ_PAD_LEN;
            tj->lens[i] = snprintf(tj->pads + (size_t) i * FG_TJ_PAD_LEN,
                                   FG_TJ_PAD_LEN, "[PAD%u]", i);
            tj->types[i] = FG_TJ_UNUSED;
        }
    }

    return 0;
}


/* the converter's list of added tokens that are control tokens whatever
 * their "special" says */
static int
fg_tj_looks_special(const char *s, size_t len)
{
    size_t  i;

    static const char *const  names[] = {
        "<pad>", "<mask>", "<2mass>", "[@BOS@]", NULL
    };

    for (i = 0; names[i]; i++) {
        if (strcmp(s, names[i]) == 0) {
            return 1;
        }
    }

    return (len >= 4 && memcmp(s, "<|", 2) == 0
            && memcmp(s + len - 2, "|>", 2) == 0)
           || (len >= 8 && memcmp(s, "<\xef\xbd\x9c", 4) == 0
               && memcmp(s + len - 4, "\xef\xbd\x9c>", 4) == 0)
           || (len >= 8 && memcmp(s, "<unused", 7) == 0 && s[len - 1] == '>');
}


static int
fg_tj_is_byte(const char *s, size_t len)
{
    return len == 6 && memcmp(s, "<0x", 3) == 0 && s[5] == '>'
           && strchr("0123456789abcdefABCDEF", s[3]) && s[3]
           && strchr("0123456789abcdefABCDEF", s[4]) && s[4];
}


static void
fg_tj_types(fg_tj_t *tj)
{
    size_t       k;
    json_t      *a;
    int64_t      id;
    uint32_t     i;
    const char  *unk;

    if (tj->spm) {
        for (i = 0; i < tj->n; i++) {
            if (fg_tj_is_byte(tj->strs[i], tj->lens[i])) {
                tj->types[i] = FG_TJ_BYTE;
            }
        }
    }

    json_array_foreach(tj->added, k, a) {
        id = json_integer_value(json_object_get(a, "id"));

        if (tj->types[id] == FG_TJ_BYTE) {
            continue;
        }

        tj->types[id] = json_is_true(json_object_get(a, "special"))
                        || fg_tj_looks_special(tj->strs[id], tj->lens[id])
                        ? FG_TJ_CONTROL : FG_TJ_USER_DEFINED;

        if (tj->scores[id] == 0) {
            tj->scores[id] = -1000.0f;
        }
    }

    /* SentencePiece's unknown piece */
    unk = json_string_value(json_object_get(json_object_get(tj->tok,
                                                            "model"),
                                            "unk_token"));

    if (tj->spm && unk) {
        id = json_integer_value(json_object_get(tj->vocab, unk));

        if (json_object_get(tj->vocab, unk) && id < tj->n) {
            tj->types[id] = FG_TJ_UNKNOWN;
        }
    }
}


/* a part of an array-form merge, its spaces as U+0120 (the converter's) */
static size_t
fg_tj_part(char *dst, const char *s)
{
    size_t  n;

    for (n = 0; *s; s++) {
        if (*s == ' ') {
            dst[n++] = (char) 0xc4;
            dst[n++] = (char) 0xa0;

        } else {
            dst[n++] = *s;
        }
    }

    return n;
}


/* merge m as "left right", and the piece it makes, scored by rank */
static int
fg_tj_merge(fg_tj_t *tj, size_t m, json_t *v)
{
    char        *s, *sp, *piece;
    json_t      *id;
    size_t       n, a;
    const char  *l, *r;

    if (json_is_string(v)) {
        s = strdup(json_string_value(v));
        sp = s ? strchr(s, ' ') : NULL;
        a = sp ? (size_t) (sp - s) : 0;

    } else {
        l = json_string_value(json_array_get(v, 0));
        r = json_string_value(json_array_get(v, 1));

        if (l == NULL || r == NULL || json_array_size(v) != 2) {
            snprintf(tj->err, tj->errlen, "%s: model.merges[%zu] is not a "
                     "pair of strings", tj->path, m);
            return -1;
        }

        s = malloc(2 * (strlen(l) + strlen(r)) + 2);
        sp = s;

        if (s) {
            a = fg_tj_part(s, l);
            s[a] = ' ';
            s[a + 1 + fg_tj_part(s + a + 1, r)] = '\0';
        }
    }

    if (s == NULL || sp == NULL) {
        snprintf(tj->err, tj->errlen, s ? "%s: model.merges[%zu] has no "
                 "space" : "out of memory", tj->path, m);
        free(s);
        return -1;
    }

    tj->merges[m] = s;

    if (!tj->spm) {
        return 0;
    }

    /* the first merge that makes a piece gives it its score */
    n = strlen(s);
    piece = malloc(n);

    if (piece == NULL) {
        snprintf(tj->err, tj->errlen, "out of memory");
        return -1;
    }

    memcpy(piece, s, a);
    memcpy(piece + a, s + a + 1, n - a - 1);

    id = json_object_getn(tj->vocab, piece, n - 1);
    free(piece);

    if (id && json_integer_value(id) < tj->n
        && tj->scores[json_integer_value(id)] == 0)
    {
        tj->scores[json_integer_value(id)] = -(float) (m + 1);
    }

    return 0;
}


static int
fg_tj_merges(fg_tj_t *tj)
{
    size_t   m;
    json_t  *merges, *v;

    merges = json_object_get(json_object_get(tj->tok, "model"), "merges");

    if (!json_is_array(merges) || json_array_size(merges) == 0) {
        snprintf(tj->err, tj->errlen, "%s: model.merges is missing or "
                 "empty", tj->path);
        return -1;
    }

    tj->n_merges = json_array_size(merges);
    tj->merges = calloc(tj->n_merges, sizeof(char *));

    if (tj->merges == NULL) {
        snprintf(tj->err, tj->errlen, "out of memory");
        return -1;
    }

    json_array_foreach(merges, m, v) {
        if (fg_tj_merge(tj, m, v) != 0) {
            return -1;
        }
    }

    return 0;
}


/* the split regex of a pre-tokenizer, in a Sequence or alone */
static const char *
fg_tj_split_regex(json_t *pre, int *byte_level)
{
    size_t       i;
    json_t      *p;
    const char  *type, *re;

    re = NULL;

    for (i = 0; ; i++) {
        p = json_object_get(pre, "pretokenizers");
        p = p ? json_array_get(p, i) : (i == 0 ? pre : NULL);

        if (p == NULL) {
            return re;
        }

        type = json_string_value(json_object_get(p, "type"));

        if (type && strcmp(type, "Split") == 0) {
            re = json_string_value(json_object_get(
                     json_object_get(p, "pattern"), "Regex"));

        } else if (type && strcmp(type, "ByteLevel") == 0) {
            *byte_level = json_is_false(json_object_get(p, "use_regex"))
                          ? 1 : 2;
        }
    }
}


/* llama.cpp's name of the pre-tokenizer, from its regular expression */
static const char *
fg_tj_pre(fg_tj_t *tj)
{
    int          byte_level;
    const char  *re;

    static const char  llama3[] =
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+"
        "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+"
        "|\\s+(?!\\S)|\\s+";
    static const char  qwen2[] =
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+"
        "|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+"
        "|\\s+(?!\\S)|\\s+";

    byte_level = 0;
    re = fg_tj_split_regex(json_object_get(tj->tok, "pre_tokenizer"),
                           &byte_level);

    if (re && strcmp(re, llama3) == 0 && byte_level == 1) {
        return "llama-bpe";
    }

    if (re && strcmp(re, qwen2) == 0 && byte_level == 1) {
        return "qwen2";
    }

    if (re == NULL && byte_level == 2) {
        return "gpt2";
    }

    snprintf(tj->err, tj->errlen, "%s: pre_tokenizer: %s%.80s: fairgate "
             "has those of GPT-2, Llama 3 and Qwen 2", tj->path,
             re ? "the regular expression " : "not byte-level",
             re ? re : "");

    return NULL;
}


/* whether the SentencePiece normalizer puts U+2581 in front */
static int
fg_tj_prepends(json_t *norm)
{
    size_t       i;
    json_t      *n;
    const char  *type, *pre;

    for (i = 0; ; i++) {
        n = json_object_get(norm, "normalizers");
        n = n ? json_array_get(n, i) : (i == 0 ? norm : NULL);

        if (n == NULL) {
            return 0;
        }

        type = json_string_value(json_object_get(n, "type"));
        pre = json_string_value(json_object_get(n, "prepend"));

        if (type && strcmp(type, "Prepend") == 0 && pre
            && strcmp(pre, "\xe2\x96\x81") == 0)
        {
            return 1;
        }
    }
}


static int
fg_tj_write(fg_tj_t *tj, fg_gguf_writer_t *w)
{
    const char  *pre;

    if (tj->spm) {
        fg_gguf_w_str(w, "tokenizer.ggml.model", "llama");

    } else {
        pre = fg_tj_pre(tj);
        if (pre == NULL) {
            return -1;
        }

        fg_gguf_w_str(w, "tokenizer.ggml.model", "gpt2");
        fg_gguf_w_str(w, "tokenizer.ggml.pre", pre);
    }

    fg_gguf_w_arr_str(w, "tokenizer.ggml.tokens", tj->strs, tj->lens, tj->n);

    if (tj->spm) {
        fg_gguf_w_arr(w, "tokenizer.ggml.scores", FG_GGUF_FLOAT32,
                      tj->scores, tj->n);
    }

    fg_gguf_w_arr(w, "tokenizer.ggml.token_type", FG_GGUF_INT32, tj->types,
                  tj->n);
    /* a SentencePiece vocabulary merges by score, as the converter
     * writes it: no merges */
    if (!tj->spm) {
        fg_gguf_w_arr_str(w, "tokenizer.ggml.merges",
                          (const char *const *) tj->merges, NULL,
                          tj->n_merges);
    }

    fg_tj_specials(tj, w);

    if (tj->spm) {
        fg_gguf_w_bool(w, "tokenizer.ggml.add_space_prefix",
                       fg_tj_prepends(json_object_get(tj->tok,
                                                      "normalizer")));
    }

    fg_tj_template(tj, w);

    if (fg_gguf_writer_error(w)[0]) {
        snprintf(tj->err, tj->errlen, "%s", fg_gguf_writer_error(w));
        return -1;
    }

    return 0;
}


/* a token named by tokenizer_config.json: a string or {"content": ...} */
static const char *
fg_tj_conf_token(fg_tj_t *tj, const char *key)
{
    json_t  *v;

    v = json_object_get(tj->conf, key);

    if (json_is_object(v)) {
        v = json_object_get(v, "content");
    }

    return json_string_value(v);
}


/* the id of an added token by its text, the first one; -1 if none */
static int64_t
fg_tj_added_id(fg_tj_t *tj, const char *s)
{
    size_t   k;
    json_t  *a;

    if (s == NULL) {
        return -1;
    }

    json_array_foreach(tj->added, k, a) {
        if (strcmp(json_string_value(json_object_get(a, "content")), s) == 0)
        {
            return json_integer_value(json_object_get(a, "id"));
        }
    }

    return -1;
}


/* the special token at one end of a TemplateProcessing's "single" */
static const char *
fg_tj_tp_end(json_t *pp, int last)
{
    size_t       i, n;
    json_t      *p, *single;
    const char  *type;

    for (i = 0; ; i++) {
        p = json_object_get(pp, "processors");
        p = p ? json_array_get(p, i) : (i == 0 ? pp : NULL);

        if (p == NULL) {
            return NULL;
        }

        type = json_string_value(json_object_get(p, "type"));
        single = json_object_get(p, "single");
        n = json_array_size(single);

        if (type && strcmp(type, "TemplateProcessing") == 0 && n > 1) {
            return json_string_value(json_object_get(json_object_get(
                       json_array_get(single, last ? n - 1 : 0),
                       "SpecialToken"), "id"));
        }
    }
}


/*
 * BOS and EOS as the converter finds them: the post-processor's template
 * says whether they are added (and which they are, without a config), the
 * config's add_bos_token and add_eos_token have the last word.
 */
static void
fg_tj_add_flags(fg_tj_t *tj, fg_gguf_writer_t *w, const char **bos,
    const char **eos)
{
    json_t      *pp, *v;
    const char  *first, *last;

    pp = json_object_get(tj->tok, "post_processor");
    first = fg_tj_tp_end(pp, 0);
    last = fg_tj_tp_end(pp, 1);

    if (tj->conf == NULL) {
        *bos = first ? first : *bos;
        *eos = last ? last : *eos;
    }

    v = json_object_get(tj->conf, "add_bos_token");

    if (json_is_boolean(v)) {
        fg_gguf_w_bool(w, "tokenizer.ggml.add_bos_token", json_is_true(v));

    } else if (first) {
        fg_gguf_w_bool(w, "tokenizer.ggml.add_bos_token",
                       *bos && strcmp(first, *bos) == 0);
    }

    v = json_object_get(tj->conf, "add_eos_token");

    if (json_is_boolean(v)) {
        fg_gguf_w_bool(w, "tokenizer.ggml.add_eos_token", json_is_true(v));

    } else if (last) {
        fg_gguf_w_bool(w, "tokenizer.ggml.add_eos_token",
                       *eos && strcmp(last, *eos) == 0);
    }
}


static void
fg_tj_specials(fg_tj_t *tj, fg_gguf_writer_t *w)
{
    int64_t      id;
    uint32_t     i;
    const char  *names[4];

    static const char *const  keys[] = {
        "bos_token", "eos_token", "unk_token", "pad_token"
    };
    static const char *const  gguf_keys[] = {
        "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
        "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id"
    };

    for (i = 0; i < 4; i++) {
        names[i] = fg_tj_conf_token(tj, keys[i]);
    }

    fg_tj_add_flags(tj, w, &names[0], &names[1]);

    for (i = 0; i < 4; i++) {
        id = fg_tj_added_id(tj, names[i]);

        if (id >= 0 && id < tj->n) {
            fg_gguf_w_u32(w, gguf_keys[i], (uint32_t) id);
        }
    }
}


/* the chat template: a string, or a list of named ones */
static void
fg_tj_template(fg_tj_t *tj, fg_gguf_writer_t *w)
{
    char         key[128];
    size_t       k;
    json_t      *t, *e;
    const char  *name, *text;

    t = json_object_get(tj->conf, "chat_template");

    if (json_is_string(t)) {
        fg_gguf_w_str(w, "tokenizer.chat_template", json_string_value(t));
        return;
    }

    json_array_foreach(t, k, e) {
        name = json_string_value(json_object_get(e, "name"));
        text = json_string_value(json_object_get(e, "template"));

        if (name == NULL || text == NULL || strlen(name) > 64) {
            continue;
        }

        if (strcmp(name, "default") == 0) {
            fg_gguf_w_str(w, "tokenizer.chat_template", text);

        } else {
            snprintf(key, sizeof(key), "tokenizer.chat_template.%s", name);
            fg_gguf_w_str(w, key, text);
        }
    }
}


static void
fg_tj_free(fg_tj_t *tj)
{
    size_t  m;

    if (tj->merges) {
        for (m = 0; m < tj->n_merges; m++) {
            free(tj->merges[m]);
        }
    }

    free(tj->merges);
    free(tj->strs);
    free(tj->lens);
    free(tj->pads);
    free(tj->types);
    free(tj->scores);
    json_decref(tj->tok);
    json_decref(tj->conf);
}
