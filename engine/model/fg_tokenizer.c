
/*
 * fairgate: tokenizer (SentencePiece-style and byte-level BPE).
 *
 * Both models merge adjacent symbols through a min-heap of candidate pairs:
 * a merge is taken when its pair is still there when it reaches the top
 * (a pair whose symbols changed meanwhile is stale and dropped), and the
 * merged symbol's new pairs go into the heap.  n symbols cost O(n log n).
 *
 * The pre-tokenizer regular expressions of GPT-2, Llama 3 and Qwen 2 are
 * written out by hand as the matchers they amount to: every alternative is
 * a run of one character class with an optional first character, so no
 * regex engine (and no PCRE dependency for the gateway) is needed.  The
 * letter and number classes come from fg_unicode.h.
 */


#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "fg_hash.h"
#include "fg_tokenizer.h"
#include "fg_unicode.h"


#define FG_TOK_MAX_VOCAB  (1u << 24)
#define FG_TOK_MAX_EOG    8
#define FG_TOK_NONE       (-1)

/* a code point that is not one: an invalid UTF-8 byte */
#define FG_TOK_BAD_CP     0x110000

/* character classes of the pre-tokenizers */
#define FG_CAT_OTHER      0
#define FG_CAT_LETTER     1
#define FG_CAT_NUMBER     2
#define FG_CAT_SPACE      3


struct fg_tokenizer_s {
    uint32_t      model;
    uint32_t      pre;
    uint32_t      n_vocab;

    char         *text;             /* every token's text, back to back */
    uint32_t     *off;              /* n_vocab + 1 offsets into text */
    float        *scores;
    uint8_t      *types;

    uint32_t     *index;            /* text -> id + 1, open addressing */
    uint64_t      mask;

    int32_t       bos;
    int32_t       eos;
    int32_t       unk;
    int32_t       eog[FG_TOK_MAX_EOG];
    uint32_t      n_eog;

    uint8_t       add_bos;
    uint8_t       add_eos;
    uint8_t       add_space_prefix;
    uint8_t       ignore_merges;

    /* the token of each byte: <0xXX> (SPM) or the byte's character (BPE) */
    int32_t       bytes[256];

    /* BPE: merges by (left id, right id), their rank and result */
    uint64_t     *merge_keys;
    uint32_t     *merge_ranks;
    int32_t      *merge_results;
    uint64_t      merge_mask;

    /* BPE: byte <-> printable code point */
    uint16_t      byte_cp[256];
    int16_t       cp_byte[324];

    /* control and user-defined tokens by first byte, longest first */
    int32_t      *special;
    uint32_t      special_start[257];

    size_t        max_piece;
};


typedef struct {
    int32_t      *ids;
    size_t        max;
    size_t        n;
} fg_tok_out_t;


typedef struct {
    uint64_t      key;              /* smallest first */
    uint32_t      left;
    uint32_t      right;
    int32_t       a;                /* SPM: the pair's bytes; BPE: ids */
    int32_t       b;
} fg_tok_pair_t;


typedef struct {
    fg_tok_pair_t  *p;
    size_t          n;
    size_t          cap;
    int             failed;         /* out of memory: encode fails */
} fg_tok_heap_t;


typedef struct {
    int32_t       prev;
    int32_t       next;
    uint32_t      start;
    uint32_t      len;
    int32_t       id;               /* BPE */
} fg_tok_sym_t;


typedef struct {
    uint8_t      *p;
    size_t        cap;
    size_t        n;
    int           strip;            /* drop a space that comes first */
} fg_tok_sink_t;


static void fg_tok_error(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fg_tok_load_vocab(fg_tokenizer_t *t, const fg_gguf_t *g,
    char *err, size_t errlen);
static int fg_tok_load_ids(fg_tokenizer_t *t, const fg_gguf_t *g,
    char *err, size_t errlen);
static int fg_tok_load_bpe(fg_tokenizer_t *t, const fg_gguf_t *g,
    char *err, size_t errlen);
static int fg_tok_load_special(fg_tokenizer_t *t);
static int32_t fg_tok_lookup(const fg_tokenizer_t *t, const char *s,
    size_t len, int text_only);
static int fg_tok_fragment(const fg_tokenizer_t *t, const char *s,
    size_t len, int prefix, fg_tok_out_t *o);
static int fg_tok_spm(const fg_tokenizer_t *t, const char *s, size_t len,
    fg_tok_out_t *o);
static int fg_tok_bpe(const fg_tokenizer_t *t, const char *s, size_t len,
    fg_tok_out_t *o);
static int fg_tok_bpe_word(const fg_tokenizer_t *t, const char *s,
    size_t len, fg_tok_sym_t *sym, fg_tok_heap_t *h, char *mapped,
    fg_tok_out_t *o);
static void fg_tok_piece(const fg_tokenizer_t *t, int32_t id, int flags,
    fg_tok_sink_t *k);


static void
fg_tok_error(char *err, size_t errlen, const char *fmt, ...)
{
    va_list  args;

    if (err == NULL || errlen == 0) {
        return;
    }

    va_start(args, fmt);
    vsnprintf(err, errlen, fmt, args);
    va_end(args);
}


static inline void
fg_tok_emit(fg_tok_out_t *o, int32_t id)
{
    if (o->n < o->max) {
        o->ids[o->n] = id;
    }

    o->n++;
}


static inline void
fg_tok_put(fg_tok_sink_t *k, const void *p, size_t n)
{
    size_t  m;

    if (k->strip && n > 0) {
        k->strip = 0;

        if (*(const uint8_t *) p == ' ') {
            p = (const uint8_t *) p + 1;
            n--;
        }
    }

    if (k->n < k->cap) {
        m = k->cap - k->n < n ? k->cap - k->n : n;
        memcpy(k->p + k->n, p, m);
    }

    k->n += n;
}


static inline uint32_t
fg_tok_len(const fg_tokenizer_t *t, uint32_t id)
{
    return t->off[id + 1] - t->off[id];
}


/* the merge candidates: a binary min-heap on key */

static int
fg_tok_heap_init(fg_tok_heap_t *h, size_t cap)
{
    h->cap = cap ? cap : 1;
    h->n = 0;
    h->failed = 0;
    h->p = malloc(h->cap * sizeof(fg_tok_pair_t));

    return h->p ? 0 : -1;
}


static void
fg_tok_heap_push(fg_tok_heap_t *h, const fg_tok_pair_t *p)
{
    size_t          i, parent;
    fg_tok_pair_t  *a;

    /* it grows: most candidate pairs are no token, few are pushed */
    if (h->n == h->cap) {
        a = realloc(h->p, 2 * h->cap * sizeof(fg_tok_pair_t));

        if (a == NULL) {
            h->failed = 1;
            return;
        }

        h->p = a;
        h->cap *= 2;
    }

    a = h->p;
    i = h->n++;

    while (i > 0) {
        parent = (i - 1) / 2;

        if (a[parent].key <= p->key) {
            break;
        }

        a[i] = a[parent];
        i = parent;
    }

    a[i] = *p;
}


static void
fg_tok_heap_pop(fg_tok_heap_t *h, fg_tok_pair_t *top)
{
    size_t          i, c;
    fg_tok_pair_t  *a, last;

    a = h->p;
    *top = a[0];
    last = a[--h->n];
    i = 0;

    for ( ;; ) {
        c = 2 * i + 1;

        if (c >= h->n) {
            break;
        }

        if (c + 1 < h->n && a[c + 1].key < a[c].key) {
            c++;
        }

        if (last.key <= a[c].key) {
            break;
        }

        a[i] = a[c];
        i = c;
    }

    a[i] = last;
}


/* UTF-8 */

/* bytes of the character a lead byte starts (1 for stray bytes) */
static inline size_t
fg_utf8_len(uint8_t c)
{
    return c < 0xc0 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : c < 0xf8 ? 4 : 1;
}


/* decodes one strict UTF-8 character; FG_TOK_BAD_CP for a bad byte */
static size_t
fg_utf8_decode(const uint8_t *s, size_t len, uint32_t *cp)
{
    size_t    n, i;
    uint8_t   c, lo, hi;
    uint32_t  v;

    c = s[0];

    if (c < 0x80) {
        *cp = c;
        return 1;
    }

    if (c < 0xc2 || c > 0xf4) {
        *cp = FG_TOK_BAD_CP;
        return 1;
    }

    n = fg_utf8_len(c);
    v = c & (0x7f >> n);

    /* the second byte's range excludes overlongs and surrogates */
    lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
    hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;

    for (i = 1; i < n; i++) {
        if (i >= len || s[i] < lo || s[i] > hi) {
            *cp = FG_TOK_BAD_CP;
            return 1;
        }

        v = (v << 6) | (s[i] & 0x3f);
        lo = 0x80;
        hi = 0xbf;
    }

    *cp = v;

    return n;
}


static size_t
fg_utf8_encode(uint32_t cp, uint8_t *out)
{
    if (cp < 0x80) {
        out[0] = (uint8_t) cp;
        return 1;
    }

    if (cp < 0x800) {
        out[0] = (uint8_t) (0xc0 | (cp >> 6));
        out[1] = (uint8_t) (0x80 | (cp & 0x3f));
        return 2;
    }

    if (cp < 0x10000) {
        out[0] = (uint8_t) (0xe0 | (cp >> 12));
        out[1] = (uint8_t) (0x80 | ((cp >> 6) & 0x3f));
        out[2] = (uint8_t) (0x80 | (cp & 0x3f));
        return 3;
    }

    out[0] = (uint8_t) (0xf0 | (cp >> 18));
    out[1] = (uint8_t) (0x80 | ((cp >> 12) & 0x3f));
    out[2] = (uint8_t) (0x80 | ((cp >> 6) & 0x3f));
    out[3] = (uint8_t) (0x80 | (cp & 0x3f));

    return 4;
}


/* \p{L}, \p{N}, \s (White_Space) or something else */
static uint8_t
fg_uni_cat(uint32_t cp)
{
    size_t  lo, hi, mid;

    if (cp < 0x80) {
        if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) {
            return FG_CAT_LETTER;
        }

        if (cp >= '0' && cp <= '9') {
            return FG_CAT_NUMBER;
        }

        return (cp >= 9 && cp <= 13) || cp == ' ' ? FG_CAT_SPACE
                                                  : FG_CAT_OTHER;
    }

    /* Unicode's White_Space property beyond ASCII */
    if (cp == 0x85 || cp == 0xa0 || cp == 0x1680
        || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029
        || cp == 0x202f || cp == 0x205f || cp == 0x3000)
    {
        return FG_CAT_SPACE;
    }

    lo = 0;
    hi = sizeof(fg_unicode_ranges) / sizeof(fg_unicode_ranges[0]);

    while (lo < hi) {
        mid = (lo + hi) / 2;

        if (cp < fg_unicode_ranges[mid][0]) {
            hi = mid;

        } else if (cp > fg_unicode_ranges[mid][1]) {
            lo = mid + 1;

        } else {
            return (uint8_t) fg_unicode_ranges[mid][2];
        }
    }

    return FG_CAT_OTHER;
}


/* loading */

fg_tokenizer_t *
fg_tokenizer_load(const fg_gguf_t *g, char *err, size_t errlen)
{
    int              rc;
    fg_gguf_str_t    s;
    fg_tokenizer_t  *t;

    rc = fg_gguf_get_str(g, "tokenizer.ggml.model", &s, err, errlen);

    if (rc == 1) {
        fg_tok_error(err, errlen, "no tokenizer: metadata "
                     "'tokenizer.ggml.model' is missing");
        return NULL;
    }

    if (rc == -1) {
        return NULL;
    }

    t = calloc(1, sizeof(fg_tokenizer_t));
    if (t == NULL) {
        fg_tok_error(err, errlen, "out of memory");
        return NULL;
    }

    if (fg_gguf_str_eq(s, "llama")) {
        t->model = FG_TOK_MODEL_SPM;
        t->pre = FG_TOK_PRE_NONE;

    } else if (fg_gguf_str_eq(s, "gpt2")) {
        t->model = FG_TOK_MODEL_BPE;

    } else {
        fg_tok_error(err, errlen, "unsupported tokenizer model '%.*s' "
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
        fg_tok_error(err, errlen, "out of memory");
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
    int                  pass, text_type;
    int64_t              type;
    uint32_t             i, n, *slot;
    uint64_t             total, h;
    const fg_gguf_kv_t  *tokens, *scores, *types;

    if (fg_gguf_get_arr(g, "tokenizer.ggml.tokens", FG_GGUF_STRING, &tokens,
                        err, errlen) != 0)
    {
        if (fg_gguf_find_kv(g, "tokenizer.ggml.tokens") == NULL) {
            fg_tok_error(err, errlen, "metadata 'tokenizer.ggml.tokens' is "
                         "missing");
        }

        return -1;
    }

    if (tokens->n == 0 || tokens->n > FG_TOK_MAX_VOCAB) {
        fg_tok_error(err, errlen, "a vocabulary of %llu tokens (1 to %u)",
                     (unsigned long long) tokens->n, FG_TOK_MAX_VOCAB);
        return -1;
    }

    n = (uint32_t) tokens->n;
    t->n_vocab = n;

    scores = NULL;

    if (fg_gguf_find_kv(g, "tokenizer.ggml.scores")
        && (fg_gguf_get_arr(g, "tokenizer.ggml.scores", FG_GGUF_FLOAT32,
                            &scores, err, errlen) != 0
            || scores->n != n))
    {
        if (scores) {
            fg_tok_error(err, errlen, "tokenizer.ggml.scores has %llu "
                         "entries for %u tokens",
                         (unsigned long long) scores->n, n);
        }

        return -1;
    }

    types = fg_gguf_find_kv(g, "tokenizer.ggml.token_type");

    if (types) {
        if (types->type != FG_GGUF_ARRAY
            || types->arr_type == FG_GGUF_STRING
            || types->arr_type == FG_GGUF_FLOAT32
            || types->arr_type == FG_GGUF_FLOAT64)
        {
            fg_tok_error(err, errlen, "tokenizer.ggml.token_type is not an "
                         "array of integers");
            return -1;
        }

        if (types->n != n) {
            fg_tok_error(err, errlen, "tokenizer.ggml.token_type has %llu "
                         "entries for %u tokens",
                         (unsigned long long) types->n, n);
            return -1;
        }
    }

    total = 0;

    for (i = 0; i < n; i++) {
        total += tokens->strs[i].len;
    }

    if (total >= UINT32_MAX) {
        fg_tok_error(err, errlen, "the vocabulary's text is too large");
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
        fg_tok_error(err, errlen, "out of memory");
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
            fg_tok_error(err, errlen, "token %u has type %lld (0 to 6)", i,
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

    /*
     * The index: text tokens first, so that a control token that happens
     * to have a text token's text does not hide it.
     */
    for (pass = 0; pass < 2; pass++) {
        for (i = 0; i < n; i++) {
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

    return 0;
}


static int
fg_tok_hex(char c)
{
    return c >= '0' && c <= '9' ? c - '0'
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
           : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}


/* the byte of a "<0xXX>" token, or -1 */
static int
fg_tok_byte_of(const fg_tokenizer_t *t, uint32_t id)
{
    const char  *s;

    if (fg_tok_len(t, id) != 6) {
        return -1;
    }

    s = t->text + t->off[id];

    if (memcmp(s, "<0x", 3) != 0 || s[5] != '>' || fg_tok_hex(s[3]) < 0
        || fg_tok_hex(s[4]) < 0)
    {
        return -1;
    }

    return fg_tok_hex(s[3]) * 16 + fg_tok_hex(s[4]);
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
        kv = fg_gguf_find_kv(g, key);

        if (kv && kv->type == FG_GGUF_INT32 && kv->v.i == -1) {
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
        fg_tok_error(err, errlen, "%s %u is out of the vocabulary (%u "
                     "tokens)", key, v, t->n_vocab);
        return -1;
    }

    *id = (int32_t) v;

    return 0;
}


static int
fg_tok_load_ids(fg_tokenizer_t *t, const fg_gguf_t *g, char *err,
    size_t errlen)
{
    int          b, i, spm, untyped;
    int32_t      eot, eom;
    uint32_t     id;
    const char  *s;

    static const char *const  eog_texts[] = {
        "<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|end|>",
        "<end_of_turn>", "<|endoftext|>", NULL
    };

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

    /* the ends of generation: the ids given, and the usual turn ends */
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
        eot = fg_tok_lookup(t, s, strlen(s), 0);

        if (eot != FG_TOK_NONE && t->types[eot] == FG_TOK_CONTROL
            && !fg_tokenizer_is_eog(t, eot))
        {
            t->eog[t->n_eog++] = eot;
        }
    }

    /* byte fallback tokens */
    for (i = 0; i < 256; i++) {
        t->bytes[i] = FG_TOK_NONE;
    }

    /* without token types, byte tokens are known by their text */
    untyped = fg_gguf_find_kv(g, "tokenizer.ggml.token_type") == NULL;

    if (spm) {
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

    return 0;
}


static int
fg_tok_load_bpe(fg_tokenizer_t *t, const fg_gguf_t *g, char *err,
    size_t errlen)
{
    int                  rc;
    char                *buf;
    size_t               cap;
    uint8_t              u[4];
    uint32_t             i, n;
    uint64_t             m, h, key;
    int32_t              a, b, r;
    const char          *sp;
    fg_gguf_str_t        s;
    const fg_gguf_kv_t  *merges;

    /* the pre-tokenizer: llama.cpp's names for these three rule sets */
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

    } else {
        fg_tok_error(err, errlen, "unsupported pre-tokenizer '%.*s' "
                     "(fairgate has default, gpt2, llama-bpe, qwen2)",
                     (int) (s.len < 64 ? s.len : 64), s.data);
        return -1;
    }

    /* GPT-2's map: printable bytes stand for themselves, the others for
     * U+0100 and up, in order */
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

    if (fg_gguf_get_arr(g, "tokenizer.ggml.merges", FG_GGUF_STRING, &merges,
                        err, errlen) != 0)
    {
        if (fg_gguf_find_kv(g, "tokenizer.ggml.merges") == NULL) {
            fg_tok_error(err, errlen, "metadata 'tokenizer.ggml.merges' is "
                         "missing (a gpt2 tokenizer needs it)");
        }

        return -1;
    }

    if (merges->n > FG_TOK_MAX_VOCAB * 4ULL) {
        fg_tok_error(err, errlen, "%llu merges is absurd",
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
        fg_tok_error(err, errlen, "out of memory");
        return -1;
    }

    memset(t->merge_keys, 0xff, h * sizeof(uint64_t));

    /*
     * "left right": byte-level texts have no raw spaces, so the first one
     * separates; a merge of unknown pieces, or into one, cannot happen.
     */
    for (m = 0; m < merges->n; m++) {
        s = merges->strs[m];
        sp = memchr(s.data, ' ', s.len);

        if (sp == NULL) {
            continue;
        }

        a = fg_tok_lookup(t, s.data, sp - s.data, 0);
        b = fg_tok_lookup(t, sp + 1, s.len - (sp - s.data) - 1, 0);

        if (a < 0 || b < 0 || s.len - 1 > cap) {
            continue;
        }

        memcpy(buf, s.data, sp - s.data);
        memcpy(buf + (sp - s.data), sp + 1, s.len - (sp - s.data) - 1);
        r = fg_tok_lookup(t, buf, s.len - 1, 0);

        if (r < 0) {
            continue;
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

    free(buf);

    return 0;
}


typedef struct {
    uint32_t  first;
    uint32_t  len;
    int32_t   id;
} fg_tok_special_t;


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

    free(t->text);
    free(t->off);
    free(t->scores);
    free(t->types);
    free(t->index);
    free(t->merge_keys);
    free(t->merge_ranks);
    free(t->merge_results);
    free(t->special);
    free(t);
}


/* lookups */

static int32_t
fg_tok_lookup(const fg_tokenizer_t *t, const char *s, size_t len,
    int text_only)
{
    uint32_t  id;
    uint64_t  h;

    h = XXH3_64bits(s, len) & t->mask;

    while (t->index[h]) {
        id = t->index[h] - 1;

        if (fg_tok_len(t, id) == len
            && memcmp(t->text + t->off[id], s, len) == 0)
        {
            if (text_only && t->types[id] != FG_TOK_NORMAL
                && t->types[id] != FG_TOK_USER_DEFINED)
            {
                return FG_TOK_NONE;
            }

            return (int32_t) id;
        }

        h = (h + 1) & t->mask;
    }

    return FG_TOK_NONE;
}


static int
fg_tok_merge(const fg_tokenizer_t *t, int32_t a, int32_t b, uint32_t *rank,
    int32_t *result)
{
    uint64_t  h, key;

    key = (uint64_t) (uint32_t) a << 32 | (uint32_t) b;
    h = XXH3_64bits(&key, sizeof(key)) & t->merge_mask;

    while (t->merge_keys[h] != UINT64_MAX) {
        if (t->merge_keys[h] == key) {
            *rank = t->merge_ranks[h];
            *result = t->merge_results[h];
            return 1;
        }

        h = (h + 1) & t->merge_mask;
    }

    return 0;
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


/* encoding */

/* the special token written at s, if any: longest first */
static int32_t
fg_tok_special_at(const fg_tokenizer_t *t, const char *s, size_t len,
    int flags, size_t *tlen)
{
    int32_t   id;
    uint8_t   c;
    uint32_t  i, n;

    c = (uint8_t) s[0];

    for (i = t->special_start[c]; i < t->special_start[c + 1]; i++) {
        id = t->special[i];

        /* user-defined tokens always match, control ones when asked */
        if (t->types[id] != FG_TOK_USER_DEFINED && !(flags & FG_TOK_SPECIAL))
        {
            continue;
        }

        n = fg_tok_len(t, id);

        if (n <= len && memcmp(s, t->text + t->off[id], n) == 0) {
            *tlen = n;
            return id;
        }
    }

    return FG_TOK_NONE;
}


ssize_t
fg_tokenizer_encode(const fg_tokenizer_t *t, const char *text, size_t len,
    int flags, int32_t *ids, size_t max)
{
    int           bos, prev_special;
    size_t        i, start, tlen;
    int32_t       id;
    fg_tok_out_t  o;

    o.ids = ids;
    o.max = ids ? max : 0;
    o.n = 0;

    bos = (flags & FG_TOK_NO_BOS) ? 0
          : (flags & FG_TOK_BOS) ? 1 : t->add_bos;

    if (bos && t->bos != FG_TOK_NONE) {
        fg_tok_emit(&o, t->bos);
    }

    /* SentencePiece puts its space in front of the text, and again after
     * each special token, as llama.cpp does */
    prev_special = 1;
    start = 0;
    i = 0;

    while (i < len) {
        id = fg_tok_special_at(t, text + i, len - i, flags, &tlen);

        if (id == FG_TOK_NONE) {
            i++;
            continue;
        }

        if (i > start) {
            if (fg_tok_fragment(t, text + start, i - start, prev_special, &o)
                != 0)
            {
                return -1;
            }
        }

        fg_tok_emit(&o, id);
        prev_special = 1;
        i += tlen;
        start = i;
    }

    if (start < len
        && fg_tok_fragment(t, text + start, len - start, prev_special, &o)
           != 0)
    {
        return -1;
    }

    if (((flags & FG_TOK_EOS) || t->add_eos) && t->eos != FG_TOK_NONE) {
        fg_tok_emit(&o, t->eos);
    }

    return (ssize_t) o.n;
}


static int
fg_tok_fragment(const fg_tokenizer_t *t, const char *s, size_t len,
    int prefix, fg_tok_out_t *o)
{
    int       rc;
    char     *esc;
    size_t    i, n;

    if (t->model == FG_TOK_MODEL_BPE) {
        return fg_tok_bpe(t, s, len, o);
    }

    /* SentencePiece's escaping: spaces are U+2581 (3 bytes) */
    esc = malloc(3 * len + 3);
    if (esc == NULL) {
        return -1;
    }

    n = 0;

    if (prefix && t->add_space_prefix) {
        memcpy(esc, "\xe2\x96\x81", 3);
        n = 3;
    }

    for (i = 0; i < len; i++) {
        if (s[i] == ' ') {
            memcpy(esc + n, "\xe2\x96\x81", 3);
            n += 3;

        } else {
            esc[n++] = s[i];
        }
    }

    rc = fg_tok_spm(t, esc, n, o);

    free(esc);

    return rc;
}


/* a float's order as an unsigned integer's: the heap compares keys */
static inline uint32_t
fg_tok_float_order(float f)
{
    uint32_t  u;

    memcpy(&u, &f, sizeof(u));

    return (u & 0x80000000u) ? ~u : u | 0x80000000u;
}


static void
fg_tok_spm_pair(const fg_tokenizer_t *t, const char *s, fg_tok_sym_t *sym,
    int32_t left, fg_tok_heap_t *h)
{
    int32_t        right, id;
    fg_tok_pair_t  p;

    if (left < 0 || sym[left].next < 0) {
        return;
    }

    right = sym[left].next;

    id = fg_tok_lookup(t, s + sym[left].start, sym[left].len + sym[right].len,
                       1);

    if (id == FG_TOK_NONE) {
        return;
    }

    /* best score first, then leftmost: the smallest key */
    p.key = (uint64_t) ~fg_tok_float_order(t->scores[id]) << 32
            | (uint32_t) left;
    p.left = (uint32_t) left;
    p.right = (uint32_t) right;
    p.a = (int32_t) (sym[left].len + sym[right].len);
    p.b = 0;

    fg_tok_heap_push(h, &p);
}


static int
fg_tok_spm(const fg_tokenizer_t *t, const char *s, size_t len,
    fg_tok_out_t *o)
{
    size_t         i, n, clen;
    int32_t        id, k;
    uint32_t       cp;
    fg_tok_sym_t  *sym, *l, *r;
    fg_tok_pair_t  top;
    fg_tok_heap_t  h;

    if (len == 0) {
        return 0;
    }

    /* a symbol per character */
    n = 0;

    for (i = 0; i < len; i += fg_utf8_decode((const uint8_t *) s + i,
                                              len - i, &cp))
    {
        n++;
    }

    sym = malloc(n * sizeof(fg_tok_sym_t));

    if (sym == NULL || fg_tok_heap_init(&h, n) != 0) {
        free(sym);
        return -1;
    }

    n = 0;

    /*
     * Strict UTF-8: a broken character is bytes of its own, so that a
     * stray lead byte cannot swallow the U+2581 of a space after it.
     */
    for (i = 0; i < len; i += clen) {
        clen = fg_utf8_decode((const uint8_t *) s + i, len - i, &cp);

        sym[n].start = (uint32_t) i;
        sym[n].len = (uint32_t) clen;
        sym[n].prev = (int32_t) n - 1;
        sym[n].next = i + clen < len ? (int32_t) n + 1 : -1;
        n++;
    }

    for (i = 0; i + 1 < n; i++) {
        fg_tok_spm_pair(t, s, sym, (int32_t) i, &h);
    }

    while (h.n) {
        fg_tok_heap_pop(&h, &top);

        l = &sym[top.left];
        r = &sym[top.right];

        /* stale: one side was merged away, or grew */
        if (l->len == 0 || r->len == 0 || l->next != (int32_t) top.right
            || l->len + r->len != (uint32_t) top.a)
        {
            continue;
        }

        l->len += r->len;
        r->len = 0;
        l->next = r->next;

        if (r->next >= 0) {
            sym[r->next].prev = (int32_t) top.left;
        }

        fg_tok_spm_pair(t, s, sym, l->prev, &h);
        fg_tok_spm_pair(t, s, sym, (int32_t) top.left, &h);
    }

    if (h.failed) {
        free(sym);
        free(h.p);
        return -1;
    }

    for (k = 0; k >= 0; k = sym[k].next) {
        id = fg_tok_lookup(t, s + sym[k].start, sym[k].len, 1);

        if (id != FG_TOK_NONE) {
            fg_tok_emit(o, id);
            continue;
        }

        /* no piece: byte fallback, else unknown */
        for (i = 0; i < sym[k].len; i++) {
            id = t->bytes[(uint8_t) s[sym[k].start + i]];

            if (id != FG_TOK_NONE) {
                fg_tok_emit(o, id);

            } else if (t->unk != FG_TOK_NONE) {
                fg_tok_emit(o, t->unk);
                break;
            }
        }
    }

    free(sym);
    free(h.p);

    return 0;
}


/*
 * The pre-tokenizers.  Each returns the length, in code points, of the
 * word at i; cp and cat hold the text's code points and their classes.
 *
 * GPT-2:    's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+
 *           |\s+(?!\S)|\s+
 * Llama 3:  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+
 *           |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * Qwen 2:   the same with \p{N} alone instead of \p{N}{1,3}
 *
 * Alternatives are tried in order and the first that matches wins, as in
 * the regex engines these come from.
 */

static inline uint32_t
fg_tok_lower(uint32_t c)
{
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}


static size_t
fg_tok_contraction(const uint32_t *cp, size_t i, size_t n, int icase)
{
    uint32_t  c1, c2;

    if (cp[i] != '\'' || i + 1 >= n) {
        return 0;
    }

    c1 = icase ? fg_tok_lower(cp[i + 1]) : cp[i + 1];

    if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') {
        return 2;
    }

    if (i + 2 >= n) {
        return 0;
    }

    c2 = icase ? fg_tok_lower(cp[i + 2]) : cp[i + 2];

    if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e')
        || (c1 == 'l' && c2 == 'l'))
    {
        return 3;
    }

    return 0;
}


/* \s+(?!\S)|\s+ at a white-space run [i, e) */
static inline size_t
fg_tok_spaces(size_t i, size_t e, size_t n)
{
    /* leave the last space to the word after it */
    return e < n && e - i >= 2 ? e - i - 1 : e - i;
}


static size_t
fg_tok_pre_gpt2(const uint32_t *cp, const uint8_t *cat, size_t i, size_t n)
{
    size_t   j, k;
    uint8_t  c;

    k = fg_tok_contraction(cp, i, n, 0);
    if (k) {
        return k;
    }

    /* ' ?' then a run of letters, of numbers, or of other characters */
    j = cp[i] == ' ' && i + 1 < n && cat[i + 1] != FG_CAT_SPACE ? i + 1 : i;
    c = cat[j];

    if (c != FG_CAT_SPACE) {
        for (k = j + 1; k < n && cat[k] == c; k++) { /* void */ }
        return k - i;
    }

    for (k = i; k < n && cat[k] == FG_CAT_SPACE; k++) { /* void */ }

    return fg_tok_spaces(i, k, n);
}


static size_t
fg_tok_pre_llama3(const uint32_t *cp, const uint8_t *cat, size_t i,
    size_t n, size_t max_digits)
{
    size_t  j, k;

    k = fg_tok_contraction(cp, i, n, 1);
    if (k) {
        return k;
    }

    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    j = i;

    if (cat[j] != FG_CAT_LETTER && cat[j] != FG_CAT_NUMBER && cp[j] != '\r'
        && cp[j] != '\n' && j + 1 < n && cat[j + 1] == FG_CAT_LETTER)
    {
        j++;
    }

    if (cat[j] == FG_CAT_LETTER) {
        for (k = j + 1; k < n && cat[k] == FG_CAT_LETTER; k++) { /* void */ }
        return k - i;
    }

    /* \p{N}{1,3} */
    if (cat[i] == FG_CAT_NUMBER) {
        for (k = i + 1; k < n && k < i + max_digits && cat[k] == FG_CAT_NUMBER;
             k++)
        {
            /* void */
        }

        return k - i;
    }

    /*  ?[^\s\p{L}\p{N}]+[\r\n]* */
    j = cp[i] == ' ' && i + 1 < n && cat[i + 1] == FG_CAT_OTHER ? i + 1 : i;

    if (cat[j] == FG_CAT_OTHER) {
        for (k = j + 1; k < n && cat[k] == FG_CAT_OTHER; k++) { /* void */ }
        for ( /* void */ ; k < n && (cp[k] == '\r' || cp[k] == '\n'); k++) {
            /* void */
        }

        return k - i;
    }

    /* white space: \s*[\r\n]+ ends at the run's last line break */
    for (k = i; k < n && cat[k] == FG_CAT_SPACE; k++) { /* void */ }

    for (j = k; j > i; j--) {
        if (cp[j - 1] == '\r' || cp[j - 1] == '\n') {
            return j - i;
        }
    }

    return fg_tok_spaces(i, k, n);
}


/* the text's code points and their classes; pos: their byte offsets */
static size_t
fg_tok_classify(const char *s, size_t len, uint32_t *cp, uint8_t *cat,
    size_t *pos)
{
    size_t  i, n, clen;

    n = 0;

    /* a bad byte is a code point of its own, in no class */
    for (i = 0; i < len; i += clen) {
        clen = fg_utf8_decode((const uint8_t *) s + i, len - i, &cp[n]);
        cat[n] = cp[n] == FG_TOK_BAD_CP ? FG_CAT_OTHER : fg_uni_cat(cp[n]);
        pos[n++] = i;
    }

    pos[n] = len;

    return n;
}


static inline size_t
fg_tok_word(const fg_tokenizer_t *t, const uint32_t *cp, const uint8_t *cat,
    size_t i, size_t n)
{
    return t->pre == FG_TOK_PRE_GPT2 ? fg_tok_pre_gpt2(cp, cat, i, n)
           : fg_tok_pre_llama3(cp, cat, i, n,
                               t->pre == FG_TOK_PRE_QWEN2 ? 1 : 3);
}


ssize_t
fg_tokenizer_split(const fg_tokenizer_t *t, const char *text, size_t len,
    size_t *ends, size_t max)
{
    size_t    i, n, w, k, *pos;
    uint8_t  *cat;
    uint32_t *cp;

    if (len == 0) {
        return 0;
    }

    if (t->model != FG_TOK_MODEL_BPE) {
        if (max > 0) {
            ends[0] = len;
        }

        return 1;
    }

    cp = malloc(len * sizeof(uint32_t));
    cat = malloc(len);
    pos = malloc((len + 1) * sizeof(size_t));

    if (cp == NULL || cat == NULL || pos == NULL) {
        free(cp);
        free(cat);
        free(pos);
        return -1;
    }

    n = fg_tok_classify(text, len, cp, cat, pos);
    k = 0;

    for (i = 0; i < n; i += w) {
        w = fg_tok_word(t, cp, cat, i, n);

        if (k < max) {
            ends[k] = pos[i + w];
        }

        k++;
    }

    free(cp);
    free(cat);
    free(pos);

    return (ssize_t) k;
}


static int
fg_tok_bpe(const fg_tokenizer_t *t, const char *s, size_t len,
    fg_tok_out_t *o)
{
    int             rc;
    char           *mapped;
    size_t          i, n, w, *pos;
    uint8_t        *cat;
    uint32_t       *cp;
    fg_tok_sym_t   *sym;
    fg_tok_heap_t   h;

    if (len == 0) {
        return 0;
    }

    cp = malloc(len * sizeof(uint32_t));
    cat = malloc(len);
    pos = malloc((len + 1) * sizeof(size_t));
    sym = malloc(len * sizeof(fg_tok_sym_t));
    mapped = malloc(2 * len);

    rc = -1;

    if (fg_tok_heap_init(&h, 64) != 0) {
        h.p = NULL;
        goto done;
    }

    if (cp == NULL || cat == NULL || pos == NULL || sym == NULL
        || mapped == NULL)
    {
        goto done;
    }

    n = fg_tok_classify(s, len, cp, cat, pos);

    for (i = 0; i < n; i += w) {
        w = fg_tok_word(t, cp, cat, i, n);

        if (fg_tok_bpe_word(t, s + pos[i], pos[i + w] - pos[i], sym, &h,
                            mapped, o)
            != 0)
        {
            goto done;
        }
    }

    rc = 0;

done:

    free(cp);
    free(cat);
    free(pos);
    free(sym);
    free(h.p);
    free(mapped);

    return rc;
}


static void
fg_tok_bpe_pair(const fg_tokenizer_t *t, fg_tok_sym_t *sym, int32_t left,
    fg_tok_heap_t *h)
{
    int32_t        right, result;
    uint32_t       rank;
    fg_tok_pair_t  p;

    if (left < 0 || sym[left].next < 0) {
        return;
    }

    right = sym[left].next;

    if (sym[left].id < 0 || sym[right].id < 0
        || !fg_tok_merge(t, sym[left].id, sym[right].id, &rank, &result))
    {
        return;
    }

    /* lowest rank first, then leftmost */
    p.key = (uint64_t) rank << 32 | (uint32_t) left;
    p.left = (uint32_t) left;
    p.right = (uint32_t) right;
    p.a = sym[left].id;
    p.b = sym[right].id;

    fg_tok_heap_push(h, &p);
}


static int
fg_tok_bpe_word(const fg_tokenizer_t *t, const char *s, size_t len,
    fg_tok_sym_t *sym, fg_tok_heap_t *h, char *mapped, fg_tok_out_t *o)
{
    size_t          i, n;
    int32_t         id, k, result;
    uint32_t        rank;
    fg_tok_sym_t   *l, *r;
    fg_tok_pair_t   top;

    /* Llama 3: a word that is a token is that token, merges or not */
    if (t->ignore_merges) {
        n = 0;

        for (i = 0; i < len; i++) {
            n += fg_utf8_encode(t->byte_cp[(uint8_t) s[i]],
                                (uint8_t *) mapped + n);
        }

        id = fg_tok_lookup(t, mapped, n, 0);

        if (id != FG_TOK_NONE) {
            fg_tok_emit(o, id);
            return 0;
        }
    }

    /* a symbol per byte (its printable character) */
    for (i = 0; i < len; i++) {
        sym[i].id = t->bytes[(uint8_t) s[i]];
        sym[i].len = 1;
        sym[i].start = (uint32_t) i;
        sym[i].prev = (int32_t) i - 1;
        sym[i].next = i + 1 < len ? (int32_t) i + 1 : -1;
    }

    h->n = 0;

    for (i = 0; i + 1 < len; i++) {
        fg_tok_bpe_pair(t, sym, (int32_t) i, h);
    }

    while (h->n) {
        fg_tok_heap_pop(h, &top);

        l = &sym[top.left];
        r = &sym[top.right];

        if (l->len == 0 || r->len == 0 || l->next != (int32_t) top.right
            || l->id != top.a || r->id != top.b)
        {
            continue;
        }

        if (!fg_tok_merge(t, l->id, r->id, &rank, &result)) {
            continue;
        }

        l->id = result;
        l->len += r->len;
        r->len = 0;
        l->next = r->next;

        if (r->next >= 0) {
            sym[r->next].prev = (int32_t) top.left;
        }

        fg_tok_bpe_pair(t, sym, l->prev, h);
        fg_tok_bpe_pair(t, sym, (int32_t) top.left, h);
    }

    if (h->failed) {
        return -1;
    }

    for (k = 0; len > 0 && k >= 0; k = sym[k].next) {
        if (sym[k].id != FG_TOK_NONE) {
            fg_tok_emit(o, sym[k].id);

        } else if (t->unk != FG_TOK_NONE) {
            fg_tok_emit(o, t->unk);
        }
    }

    return 0;
}


/* decoding */

static void
fg_tok_piece(const fg_tokenizer_t *t, int32_t id, int flags,
    fg_tok_sink_t *k)
{
    int             b;
    size_t          i, n, clen;
    uint8_t         c;
    uint32_t        cp;
    const uint8_t  *s;

    s = (const uint8_t *) t->text + t->off[id];
    n = fg_tok_len(t, id);

    switch (t->types[id]) {

    case FG_TOK_CONTROL:
    case FG_TOK_UNUSED:
        if (flags & FG_TOK_SPECIAL) {
            fg_tok_put(k, s, n);
        }

        return;

    case FG_TOK_UNKNOWN:
        if (flags & FG_TOK_SPECIAL) {
            fg_tok_put(k, s, n);

        } else {
            /* what SentencePiece prints for it: U+2047 */
            fg_tok_put(k, "\xe2\x81\x87", 3);
        }

        return;

    case FG_TOK_BYTE:
        b = fg_tok_byte_of(t, id);

        if (b >= 0) {
            c = (uint8_t) b;
            fg_tok_put(k, &c, 1);
            return;
        }

        break;

    case FG_TOK_USER_DEFINED:
        if (t->model == FG_TOK_MODEL_BPE) {
            fg_tok_put(k, s, n);
            return;
        }

        break;
    }

    if (t->model == FG_TOK_MODEL_SPM) {
        for (i = 0; i < n; i++) {
            if (i + 2 < n && s[i] == 0xe2 && s[i + 1] == 0x96
                && s[i + 2] == 0x81)
            {
                fg_tok_put(k, " ", 1);
                i += 2;

            } else {
                fg_tok_put(k, &s[i], 1);
            }
        }

        return;
    }

    /* byte-level: each character stands for a byte */
    for (i = 0; i < n; i += clen) {
        clen = fg_utf8_decode(s + i, n - i, &cp);

        if (cp < 324 && t->cp_byte[cp] >= 0) {
            c = (uint8_t) t->cp_byte[cp];
            fg_tok_put(k, &c, 1);

        } else {
            fg_tok_put(k, s + i, clen);
        }
    }
}


ssize_t
fg_tokenizer_piece(const fg_tokenizer_t *t, int32_t id, int flags,
    char *buf, size_t size)
{
    fg_tok_sink_t  k;

    if (id < 0 || (uint32_t) id >= t->n_vocab) {
        return -1;
    }

    k.p = (uint8_t *) buf;
    k.cap = size;
    k.n = 0;
    k.strip = 0;

    fg_tok_piece(t, id, flags, &k);

    return (ssize_t) k.n;
}


ssize_t
fg_tokenizer_decode(const fg_tokenizer_t *t, const int32_t *ids, size_t n,
    int flags, char *buf, size_t size)
{
    size_t         i;
    fg_tok_sink_t  k;

    k.p = (uint8_t *) buf;
    k.cap = size ? size - 1 : 0;
    k.n = 0;
    k.strip = (flags & FG_TOK_STRIP_SPACE) && t->add_space_prefix;

    for (i = 0; i < n; i++) {
        if (ids[i] < 0 || (uint32_t) ids[i] >= t->n_vocab) {
            return -1;
        }

        fg_tok_piece(t, ids[i], flags, &k);
    }

    if (size) {
        buf[k.n < size ? k.n : size - 1] = '\0';
    }

    return (ssize_t) k.n;
}


/* streaming */

void
fg_tok_stream_init(fg_tok_stream_t *s)
{
    memset(s, 0, sizeof(fg_tok_stream_t));
}


static inline size_t
fg_tok_fffd(uint8_t *out)
{
    memcpy(out, "\xef\xbf\xbd", 3);
    return 3;
}


/* one byte into the stream: what it completes comes out */
static size_t
fg_tok_stream_byte(fg_tok_stream_t *s, uint8_t c, uint8_t *o)
{
    size_t   w, need;
    uint8_t  lo, hi;

    w = 0;

    if (s->n_pending > 0) {
        /* the allowed range of this continuation byte */
        lo = 0x80;
        hi = 0xbf;

        if (s->n_pending == 1) {
            lo = s->pending[0] == 0xe0 ? 0xa0
                 : s->pending[0] == 0xf0 ? 0x90 : 0x80;
            hi = s->pending[0] == 0xed ? 0x9f
                 : s->pending[0] == 0xf4 ? 0x8f : 0xbf;
        }

        if (c >= lo && c <= hi) {
            s->pending[s->n_pending++] = c;
            need = fg_utf8_len(s->pending[0]);

            if (s->n_pending < need) {
                return 0;
            }

            memcpy(o, s->pending, need);
            s->n_pending = 0;

            return need;
        }

        /* the character broke off: replace it, then start afresh */
        w = fg_tok_fffd(o);
        s->n_pending = 0;
    }

    if (c < 0x80) {
        o[w++] = c;

    } else if (c >= 0xc2 && c <= 0xf4) {
        s->pending[s->n_pending++] = c;

    } else {
        w += fg_tok_fffd(o + w);
    }

    return w;
}


ssize_t
fg_tok_stream_push(const fg_tokenizer_t *t, fg_tok_stream_t *s, int32_t id,
    int flags, char *out, size_t size)
{
    int             strip;
    size_t          i, w;
    uint8_t         local[1024], *piece;
    fg_tok_sink_t   k;

    if (id < 0 || (uint32_t) id >= t->n_vocab
        || size < FG_TOK_STREAM_OUT(t->max_piece))
    {
        return -1;
    }

    piece = t->max_piece <= sizeof(local) ? local : malloc(t->max_piece);
    if (piece == NULL) {
        return -1;
    }

    strip = !s->started && (flags & FG_TOK_STRIP_SPACE)
            && t->add_space_prefix;

    k.p = piece;
    k.cap = t->max_piece;
    k.n = 0;
    k.strip = strip;

    fg_tok_piece(t, id, flags, &k);

    /* any byte, even a stripped space, starts the text */
    if (k.n > 0 || (strip && !k.strip)) {
        s->started = 1;
    }

    w = 0;

    for (i = 0; i < k.n; i++) {
        w += fg_tok_stream_byte(s, piece[i], (uint8_t *) out + w);
    }

    if (piece != local) {
        free(piece);
    }

    return (ssize_t) w;
}


ssize_t
fg_tok_stream_flush(fg_tok_stream_t *s, char *out, size_t size)
{
    if (s->n_pending == 0) {
        return 0;
    }

    if (size < 3) {
        return -1;
    }

    s->n_pending = 0;

    return (ssize_t) fg_tok_fffd((uint8_t *) out);
}
