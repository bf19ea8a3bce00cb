
/*
 * fairgate: the tokenizer's loading from GGUF metadata (vocabulary,
 * special ids, byte tokens, BPE merges, the special-token table) and its
 * queries.
 *
 * Loading copies what encoding needs into flat arrays with hash indexes
 * (xxHash3, open addressing): the vocabulary's text back to back, the
 * merges by pair of ids, the special tokens by first byte, longest first.
 * A loaded tokenizer is read-only, so threads may share it.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "fg_gguf_int.h"
#include "fg_mem.h"
#include "fg_tok_int.h"


typedef struct {
    uint32_t  first;
    uint32_t  len;
    int32_t   id;
} fg_tok_special_t;


static int fg_tok_load_vocab(fg_tokenizer_t *t, const fg_gguf_t *g,
    char *err, size_t errlen);
static int fg_tok_vocab_arrays(const fg_gguf_t *g,
    const fg_gguf_kv_t **tokens, const fg_gguf_kv_t **scores,
    const fg_gguf_kv_t **types, char *err, size_t errlen);
static int fg_tok_vocab_copy(fg_tokenizer_t *t, const fg_gguf_kv_t *tokens,
    const fg_gguf_kv_t *scores, const fg_gguf_kv_t *types, char *err,
    size_t errlen);
static void fg_tok_vocab_index(fg_tokenizer_t *t);
static int fg_tok_load_ids(fg_tokenizer_t *t, const fg_gguf_t *g,
    char *err, size_t errlen);
static void fg_tok_load_eog(fg_tokenizer_t *t, int32_t eot, int32_t eom);
static void fg_tok_load_bytes(fg_tokenizer_t *t, const fg_gguf_t *g);
static int fg_tok_load_bpe(fg_tokenizer_t *t, const fg_gguf_t *g,
    char *err, size_t errlen);
static int fg_tok_load_pre(fg_tokenizer_t *t, const fg_gguf_t *g,
    char *err, size_t errlen);
static void fg_tok_load_byte_map(fg_tokenizer_t *t);
static int fg_tok_load_merges(fg_tokenizer_t *t, const fg_gguf_kv_t *merges,
    char *err, size_t errlen);
static int fg_tok_load_special(fg_tokenizer_t *t);


fg_tokenizer_t *
fg_tokenizer_load(const fg_gguf_t *g, char *err, size_t errlen)
{
    int              rc;
    fg_gguf_str_t    s;
    fg_tokenizer_t  *t;

    rc = fg_gguf_get_str(g, "tokenizer.ggml.model", &s, err, errlen);

    if (rc == 1) {
        fg_err_printf(err, errlen, "no tokenizer: metadata "
                      "'tokenizer.ggml.model' is missing");
        return NULL;
    }

    if (rc == -1) {
        return NULL;
    }

    t = calloc(1, sizeof(fg_tokenizer_t));
    if (t == NULL) {
        fg_err_printf(err, errlen, "out of memory");
        return NULL;
    }

    if (fg_gguf_str_eq(s, "llama")) {
        t->model = FG_TOK_MODEL_SPM;
        t->pre = FG_TOK_PRE_NONE;

    } else if (fg_gguf_str_eq(s, "gpt2")) {
        t->model = FG_TOK_MODEL_BPE;

    } else {
        fg_err_printf(err, errlen, "unsupported tokenizer model '%.*s' "
                      "(fairgate reads llama and gpt2)",
                      (int) (s.len < 64 ? s.len : 64), s.data);
        goto failed;
    }

    if (fg_tok_load_vocab(t, g, err, errlen) != 0
        || fg_tok_load_ids(t, g, err, errlen) != 0)
    {
        goto failed;
    }

    if (t->model == FG_TOK_MODEL_BPE
        && fg_tok_load_bpe(t, g, err, errlen) != 0)
    {
        goto failed;
    }

    if (fg_tok_load_special(t) != 0) {
        fg_err_printf(err, errlen, "out of memory");
        goto failed;
    }

    return t;

failed:

    fg_tokenizer_free(t);

    return NULL;
}


static int
fg_tok_load_vocab(fg_tokenizer_t *t, const fg_gguf_t *g, char *err,
    size_t errlen)
{
    const fg_gguf_kv_t  *tokens, *scores, *types;

    if (fg_tok_vocab_arrays(g, &tokens, &scores, &types, err, errlen) != 0
        || fg_tok_vocab_copy(t, tokens, scores, types, err, errlen) != 0)
    {
        return -1;
    }

    fg_tok_vocab_index(t);

    return 0;
}


/* the tokens, and their scores and types if there, of matching lengths */
static int
fg_tok_vocab_arrays(const fg_gguf_t *g, const fg_gguf_kv_t **tokens,
    const fg_gguf_kv_t **scores, const fg_gguf_kv_t **types, char *err,
    size_t errlen)
{
    int       rc;
    uint64_t  n;

    rc = fg_gguf_get_arr(g, "tokenizer.ggml.tokens", FG_GGUF_STRING, tokens,
                         err, errlen);

    if (rc != 0) {
        if (rc == 1) {
            fg_err_printf(err, errlen, "metadata 'tokenizer.ggml.tokens' is "
                          "missing");
        }

        return -1;
    }

    n = (*tokens)->n;

    if (n == 0 || n > FG_TOK_MAX_VOCAB) {
        fg_err_printf(err, errlen, "a vocabulary of %llu tokens (1 to %u)",
                      (unsigned long long) n, FG_TOK_MAX_VOCAB);
        return -1;
    }

    *scores = NULL;

    rc = fg_gguf_get_arr(g, "tokenizer.ggml.scores", FG_GGUF_FLOAT32, scores,
                         err, errlen);

    if (rc == -1) {
        return -1;
    }

    if (rc == 0 && (*scores)->n != n) {
        fg_err_printf(err, errlen, "tokenizer.ggml.scores has %llu entries "
                      "for %u tokens", (unsigned long long) (*scores)->n,
                      (uint32_t) n);
        return -1;
    }

    *types = NULL;

    rc = fg_gguf_get_arr(g, "tokenizer.ggml.token_type", FG_GGUF_ARR_INT,
                         types, err, errlen);

    if (rc == -1) {
        fg_err_printf(err, errlen, "tokenizer.ggml.token_type is not an "
                      "array of integers");
        return -1;
    }

    if (rc == 0 && (*types)->n != n) {
        fg_err_printf(err, errlen, "tokenizer.ggml.token_type has %llu "
                      "entries for %u tokens",
                      (unsigned long long) (*types)->n, (uint32_t) n);
        return -1;
    }

    return 0;
}


/* every token's text back to back, its score and its type */
static int
fg_tok_vocab_copy(fg_tokenizer_t *t, const fg_gguf_kv_t *tokens,
    const fg_gguf_kv_t *scores, const fg_gguf_kv_t *types, char *err,
    size_t errlen)
{
    int64_t   type;
    uint32_t  i, n;
    uint64_t  total, h;

    n = (uint32_t) tokens->n;
    t->n_vocab = n;

    total = 0;

    for (i = 0; i < n; i++) {
        total += tokens->strs[i].len;
    }

    if (total >= UINT32_MAX) {
        fg_err_printf(err, errlen, "the vocabulary's text is too large");
        return -1;
    }

    t->text = malloc(total + 1);
    t->off = malloc((n + 1) * sizeof(uint32_t));
    t->scores = calloc(n, sizeof(float));
    t->types = malloc(n);

    for (h = 16; h < 2 * (uint64_t) n; h *= 2) { /* void */ }

    t->mask = h - 1;
    t->index = calloc(h, sizeof(uint32_t));

    if (t->text == NULL || t->off == NULL || t->scores == NULL
        || t->types == NULL || t->index == NULL)
    {
        fg_err_printf(err, errlen, "out of memory");
        return -1;
    }

    total = 0;

    for (i = 0; i < n; i++) {
        t->off[i] = (uint32_t) total;
        memcpy(t->text + total, tokens->strs[i].data, tokens->strs[i].len);
        total += tokens->strs[i].len;

        if (t->max_piece < tokens->strs[i].len) {
            t->max_piece = tokens->strs[i].len;
        }

        if (scores) {
            t->scores[i] = (float) fg_gguf_arr_f64(scores, i);
        }

        type = types ? fg_gguf_arr_i64(types, i) : FG_TOK_NORMAL;

        if (type < 0 || type > FG_TOK_BYTE) {
            fg_err_printf(err, errlen, "token %u has type %lld (0 to 6)", i,
                          (long long) type);
            return -1;
        }

        /* 0 is "undefined": a plain token */
        t->types[i] = type == 0 ? FG_TOK_NORMAL : (uint8_t) type;
    }

    t->off[n] = (uint32_t) total;

    /* "⁇" for unknown tokens is 3 bytes */
    if (t->max_piece < 3) {
        t->max_piece = 3;
    }

    return 0;
}


/*
 * The index of texts: text tokens first, so that a control token that
 * happens to have a text token's text does not hide it.
 */
static void
fg_tok_vocab_index(fg_tokenizer_t *t)
{
    int        pass, text_type;
    uint32_t   i, *slot;
    uint64_t   h;

    for (pass = 0; pass < 2; pass++) {
        for (i = 0; i < t->n_vocab; i++) {
            text_type = t->types[i] == FG_TOK_NORMAL
                        || t->types[i] == FG_TOK_USER_DEFINED;

            if (text_type != (pass == 0)) {
                continue;
            }

            h = XXH3_64bits(t->text + t->off[i], fg_tok_len(t, i)) & t->mask;

            for ( ;; ) {
                slot = &t->index[h];

                if (*slot == 0) {
                    *slot = i + 1;
                    break;
                }

                if (fg_tok_len(t, *slot - 1) == fg_tok_len(t, i)
                    && memcmp(t->text + t->off[*slot - 1], t->text + t->off[i],
                              fg_tok_len(t, i)) == 0)
                {
                    break;      /* a duplicate: the first one stays */
                }

                h = (h + 1) & t->mask;
            }
        }
    }
}


static int
fg_tok_id(const fg_tokenizer_t *t, const fg_gguf_t *g, const char *key,
    int32_t *id, char *err, size_t errlen)
{
    int                  rc;
    uint32_t             v;
    const fg_gguf_kv_t  *kv;

    rc = fg_gguf_get_u32(g, key, &v, err, errlen);

    if (rc == -1) {
        /* an id of -1 written as int32 means "none" too */
        if (fg_gguf_get_kv(g, key, FG_GGUF_INT32, &kv, NULL, 0) == 0
            && kv->v.i == -1)
        {
            *id = FG_TOK_NONE;
            return 0;
        }

        return -1;
    }

    if (rc == 1) {
        return 0;
    }

    if (v == UINT32_MAX) {
        *id = FG_TOK_NONE;
        return 0;
    }

    if (v >= t->n_vocab) {
        fg_err_printf(err, errlen, "%s %u is out of the vocabulary (%u "
                      "tokens)", key, v, t->n_vocab);
        return -1;
    }

    *id = (int32_t) v;

    return 0;
}


/* the special ids, whether to add BOS, EOS and a space, the ends */
static int
fg_tok_load_ids(fg_tokenizer_t *t, const fg_gguf_t *g, char *err,
    size_t errlen)
{
    int      b, spm;
    int32_t  eot, eom;

    spm = t->model == FG_TOK_MODEL_SPM;

    /* llama.cpp's defaults for SentencePiece vocabularies */
    t->bos = spm && t->n_vocab > 1 ? 1 : FG_TOK_NONE;
    t->eos = spm && t->n_vocab > 2 ? 2 : FG_TOK_NONE;
    t->unk = spm ? 0 : FG_TOK_NONE;
    eot = FG_TOK_NONE;
    eom = FG_TOK_NONE;

    b = spm;
    t->add_eos = 0;
    t->add_space_prefix = spm;

    if (fg_tok_id(t, g, "tokenizer.ggml.bos_token_id", &t->bos, err, errlen)
        || fg_tok_id(t, g, "tokenizer.ggml.eos_token_id", &t->eos, err,
                     errlen)
        || fg_tok_id(t, g, "tokenizer.ggml.unknown_token_id", &t->unk, err,
                     errlen)
        || fg_tok_id(t, g, "tokenizer.ggml.eot_token_id", &eot, err, errlen)
        || fg_tok_id(t, g, "tokenizer.ggml.eom_token_id", &eom, err, errlen)
        || fg_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &b, err,
                            errlen) == -1)
    {
        return -1;
    }

    t->add_bos = b != 0;
    b = 0;

    if (fg_gguf_get_bool(g, "tokenizer.ggml.add_eos_token", &b, err, errlen)
        == -1)
    {
        return -1;
    }

    t->add_eos = b != 0;
    b = t->add_space_prefix;

    if (fg_gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", &b, err,
                         errlen) == -1)
    {
        return -1;
    }

    t->add_space_prefix = b != 0;

    fg_tok_load_eog(t, eot, eom);
    fg_tok_load_bytes(t, g);

    return 0;
}


/* the ends of generation: the ids given, and the usual turn ends */
static void
fg_tok_load_eog(fg_tokenizer_t *t, int32_t eot, int32_t eom)
{
    int32_t      id;
    uint32_t     i;
    const char  *s;

    /* Llama 3's base models end with <|end_of_text|>, Gemma's with <eos>,
     * though their instruct configs name the end of a turn as EOS */
    static const char *const  eog_texts[] = {
        "<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|end|>",
        "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<eos>", NULL
    };

    t->n_eog = 0;

    if (t->eos != FG_TOK_NONE) {
        t->eog[t->n_eog++] = t->eos;
    }

    if (eot != FG_TOK_NONE) {
        t->eog[t->n_eog++] = eot;
    }

    if (eom != FG_TOK_NONE) {
        t->eog[t->n_eog++] = eom;
    }

    for (i = 0; eog_texts[i] && t->n_eog < FG_TOK_MAX_EOG; i++) {
        s = eog_texts[i];
        id = fg_tok_lookup(t, s, strlen(s), 0);

        if (id != FG_TOK_NONE && t->types[id] == FG_TOK_CONTROL
            && !fg_tokenizer_is_eog(t, id))
        {
            t->eog[t->n_eog++] = id;
        }
    }
}


/* SentencePiece's byte fallback tokens, <0xXX> */
static void
fg_tok_load_bytes(fg_tokenizer_t *t, const fg_gguf_t *g)
{
    int                  b, untyped;
    uint32_t             id;
    const fg_gguf_kv_t  *types;

    for (b = 0; b < 256; b++) {
        t->bytes[b] = FG_TOK_NONE;
    }

    if (t->model != FG_TOK_MODEL_SPM) {
        return;
    }

    /* without token types, byte tokens are known by their text */
    untyped = fg_gguf_get_arr(g, "tokenizer.ggml.token_type",
                              FG_GGUF_ARR_INT, &types, NULL, 0)
              == 1;

    for (id = 0; id < t->n_vocab; id++) {
        if (t->types[id] == FG_TOK_BYTE
            || (untyped && t->types[id] == FG_TOK_NORMAL))
        {
            b = fg_tok_byte_of(t, id);

            if (b >= 0 && t->bytes[b] == FG_TOK_NONE) {
                t->bytes[b] = (int32_t) id;
            }
        }
    }
}


/* byte-level BPE: the pre-tokenizer, the byte map and the merges */
static int
fg_tok_load_bpe(fg_tokenizer_t *t, const fg_gguf_t *g, char *err,
    size_t errlen)
{
    int                  rc;
    const fg_gguf_kv_t  *merges;

    if (fg_tok_load_pre(t, g, err, errlen) != 0) {
        return -1;
    }

    fg_tok_load_byte_map(t);

    rc = fg_gguf_get_arr(g, "tokenizer.ggml.merges", FG_GGUF_STRING, &merges,
                         err, errlen);

    if (rc != 0) {
        if (rc == 1) {
            fg_err_printf(err, errlen, "metadata 'tokenizer.ggml.merges' is "
                          "missing (a gpt2 tokenizer needs it)");
        }

        return -1;
    }

    return fg_tok_load_merges(t, merges, err, errlen);
}


/* the pre-tokenizer: llama.cpp's names for these three rule sets */
static int
fg_tok_load_pre(fg_tokenizer_t *t, const fg_gguf_t *g, char *err,
    size_t errlen)
{
    int            rc;
    fg_gguf_str_t  s;

    rc = fg_gguf_get_str(g, "tokenizer.ggml.pre", &s, err, errlen);

    if (rc == -1) {
        return -1;
    }

    if (rc == 1 || fg_gguf_str_eq(s, "default") || fg_gguf_str_eq(s, "gpt2")
        || fg_gguf_str_eq(s, "gpt-2"))
    {
        t->pre = FG_TOK_PRE_GPT2;

    } else if (fg_gguf_str_eq(s, "llama-bpe") || fg_gguf_str_eq(s, "llama3")
               || fg_gguf_str_eq(s, "llama-v3"))
    {
        t->pre = FG_TOK_PRE_LLAMA3;
        t->ignore_merges = 1;

    } else if (fg_gguf_str_eq(s, "qwen2")
               || fg_gguf_str_eq(s, "deepseek-r1-qwen"))
    {
        t->pre = FG_TOK_PRE_QWEN2;

        /* every Qwen 2 and 3 tokenizer.json normalizes its text so; GGUF
         * has no key to say it */
        t->nfc = 1;

    } else {
        fg_err_printf(err, errlen, "unsupported pre-tokenizer '%.*s' "
                      "(fairgate has default, gpt2, llama-bpe, qwen2)",
                      (int) (s.len < 64 ? s.len : 64), s.data);
        return -1;
    }

    return 0;
}


/*
 * GPT-2's map: printable bytes stand for themselves, the others for
 * U+0100 and up, in order; each byte's token is its character's.
 */
static void
fg_tok_load_byte_map(fg_tokenizer_t *t)
{
    uint8_t   u[4];
    uint32_t  i, n;

    n = 0;

    for (i = 0; i < 324; i++) {
        t->cp_byte[i] = -1;
    }

    for (i = 0; i < 256; i++) {
        if ((i >= 0x21 && i <= 0x7e) || (i >= 0xa1 && i <= 0xac)
            || (i >= 0xae && i <= 0xff))
        {
            t->byte_cp[i] = (uint16_t) i;

        } else {
            t->byte_cp[i] = (uint16_t) (256 + n++);
        }

        t->cp_byte[t->byte_cp[i]] = (int16_t) i;
    }

    for (i = 0; i < 256; i++) {
        n = (uint32_t) fg_utf8_encode(t->byte_cp[i], u);
        t->bytes[i] = fg_tok_lookup(t, (char *) u, n, 0);
    }
}


/* merge m, "left right", into the table if its pieces are tokens */
static void
fg_tok_merge_add(fg_tokenizer_t *t, uint64_t m, fg_gguf_str_t s, char *buf,
    size_t cap)
{
    int32_t      a, b, r;
    uint64_t     h, key;
    const char  *sp;

    /*
     * Byte-level texts have no raw spaces, so the first one separates; a
     * merge of unknown pieces, or into one, cannot happen.
     */
    sp = memchr(s.data, ' ', s.len);

    if (sp == NULL) {
        return;
    }

    a = fg_tok_lookup(t, s.data, sp - s.data, 0);
    b = fg_tok_lookup(t, sp + 1, s.len - (sp - s.data) - 1, 0);

    if (a < 0 || b < 0 || s.len - 1 > cap) {
        return;
    }

    memcpy(buf, s.data, sp - s.data);
    memcpy(buf + (sp - s.data), sp + 1, s.len - (sp - s.data) - 1);
    r = fg_tok_lookup(t, buf, s.len - 1, 0);

    if (r < 0) {
        return;
    }

    key = (uint64_t) (uint32_t) a << 32 | (uint32_t) b;
    h = XXH3_64bits(&key, sizeof(key)) & t->merge_mask;

    while (t->merge_keys[h] != UINT64_MAX && t->merge_keys[h] != key) {
        h = (h + 1) & t->merge_mask;
    }

    /* a repeated pair keeps its first (best) rank */
    if (t->merge_keys[h] == UINT64_MAX) {
        t->merge_keys[h] = key;
        t->merge_ranks[h] = (uint32_t) m;
        t->merge_results[h] = r;
    }
}


/* the merges by pair of ids, with their rank and result */
static int
fg_tok_load_merges(fg_tokenizer_t *t, const fg_gguf_kv_t *merges, char *err,
    size_t errlen)
{
    char      *buf;
    size_t     cap;
    uint64_t   m, h;

    if (merges->n > FG_TOK_MAX_VOCAB * 4ULL) {
        fg_err_printf(err, errlen, "%llu merges is absurd",
                      (unsigned long long) merges->n);
        return -1;
    }

    for (h = 16; h < 2 * merges->n; h *= 2) { /* void */ }

    t->merge_mask = h - 1;
    t->merge_keys = malloc(h * sizeof(uint64_t));
    t->merge_ranks = malloc(h * sizeof(uint32_t));
    t->merge_results = malloc(h * sizeof(int32_t));

    cap = 2 * t->max_piece + 2;
    buf = malloc(cap);

    if (t->merge_keys == NULL || t->merge_ranks == NULL
        || t->merge_results == NULL || buf == NULL)
    {
        free(buf);
        fg_err_printf(err, errlen, "out of memory");
        return -1;
    }

    memset(t->merge_keys, 0xff, h * sizeof(uint64_t));

    for (m = 0; m < merges->n; m++) {
        fg_tok_merge_add(t, m, merges->strs[m], buf, cap);
    }

    free(buf);

    return 0;
}


static int
fg_tok_cmp_special(const void *a, const void *b)
{
    const fg_tok_special_t  *x, *y;

    x = a;
    y = b;

    /* by first byte, longest first, then by id for a stable order */
    if (x->first != y->first) {
        return x->first < y->first ? -1 : 1;
    }

    if (x->len != y->len) {
        return x->len > y->len ? -1 : 1;
    }

    return (x->id > y->id) - (x->id < y->id);
}


static int
fg_tok_load_special(fg_tokenizer_t *t)
{
    uint32_t           i, n, c;
    fg_tok_special_t  *sp;

    sp = malloc(t->n_vocab * sizeof(fg_tok_special_t));
    t->special = malloc(t->n_vocab * sizeof(int32_t));

    if (sp == NULL || t->special == NULL) {
        free(sp);
        return -1;
    }

    n = 0;

    for (i = 0; i < t->n_vocab; i++) {
        if ((t->types[i] == FG_TOK_CONTROL || t->types[i] == FG_TOK_UNKNOWN
             || t->types[i] == FG_TOK_USER_DEFINED)
            && fg_tok_len(t, i) > 0)
        {
            sp[n].first = (uint8_t) t->text[t->off[i]];
            sp[n].len = fg_tok_len(t, i);
            sp[n].id = (int32_t) i;
            n++;
        }
    }

    qsort(sp, n, sizeof(fg_tok_special_t), fg_tok_cmp_special);

    memset(t->special_start, 0, sizeof(t->special_start));

    for (i = 0; i < n; i++) {
        t->special[i] = sp[i].id;
        t->special_start[sp[i].first + 1]++;
    }

    for (c = 0; c < 256; c++) {
        t->special_start[c + 1] += t->special_start[c];
    }

    free(sp);

    return 0;
}


void
fg_tokenizer_free(fg_tokenizer_t *t)
{
    if (t == NULL) {
        return;
    }

    fg_free_all(t->text, t->off, t->scores, t->types, t->index, t->merge_keys,
                t->merge_ranks, t->merge_results, t->special, t);
}


uint32_t
fg_tokenizer_n_vocab(const fg_tokenizer_t *t)
{
    return t->n_vocab;
}


int
fg_tokenizer_model(const fg_tokenizer_t *t)
{
    return (int) t->model;
}


int
fg_tokenizer_pre(const fg_tokenizer_t *t)
{
    return (int) t->pre;
}


int32_t
fg_tokenizer_bos(const fg_tokenizer_t *t)
{
    return t->bos;
}


int32_t
fg_tokenizer_eos(const fg_tokenizer_t *t)
{
    return t->eos;
}


int32_t
fg_tokenizer_unk(const fg_tokenizer_t *t)
{
    return t->unk;
}


int
fg_tokenizer_add_bos(const fg_tokenizer_t *t)
{
    return t->add_bos && t->bos != FG_TOK_NONE;
}


int
fg_tokenizer_is_eog(const fg_tokenizer_t *t, int32_t id)
{
    uint32_t  i;

    for (i = 0; i < t->n_eog; i++) {
        if (t->eog[i] == id) {
            return 1;
        }
    }

    return 0;
}


int
fg_tokenizer_type(const fg_tokenizer_t *t, int32_t id)
{
    return id >= 0 && (uint32_t) id < t->n_vocab ? t->types[id] : -1;
}


const char *
fg_tokenizer_text(const fg_tokenizer_t *t, int32_t id, size_t *len)
{
    if (id < 0 || (uint32_t) id >= t->n_vocab) {
        return NULL;
    }

    *len = fg_tok_len(t, id);

    return t->text + t->off[id];
}


int32_t
fg_tokenizer_find(const fg_tokenizer_t *t, const char *text, size_t len)
{
    return fg_tok_lookup(t, text, len, 0);
}


size_t
fg_tokenizer_max_piece(const fg_tokenizer_t *t)
{
    return t->max_piece;
}
