
/*
 * fairgate: the tokenizer's insides, shared by its files and private to
 * engine/model/: the loaded tokenizer and the small lookups that loading,
 * encoding and decoding all make.  The lookups are static inline:
 * encoding calls them for each candidate merge.
 */

#ifndef _FG_TOK_INT_H_INCLUDED_
#define _FG_TOK_INT_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fg_hash.h"
#include "fg_tokenizer.h"
#include "fg_utf8.h"


#define FG_TOK_MAX_VOCAB  (1u << 24)
#define FG_TOK_MAX_EOG    8
#define FG_TOK_NONE       (-1)

/* a code point that is not one: an invalid UTF-8 byte */
#define FG_TOK_BAD_CP     0x110000


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
    uint8_t       nfc;              /* Qwen 2: NFC before pre-tokenizing */

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


/*
 * NFC (fg_tok_nfc.c): *out NULL when the text is NFC already, else the
 * normalized text, malloc'd; -1 when out of memory.
 */
int fg_tok_nfc(const char *s, size_t len, char **out, size_t *out_len);

/* the pre-tokenizer (fg_tok_pre.c), for byte-level BPE encoding */
size_t fg_tok_classify(const char *s, size_t len, uint32_t *cp,
    uint8_t *cat, size_t *pos);
size_t fg_tok_word(const fg_tokenizer_t *t, const uint32_t *cp,
    const uint8_t *cat, size_t i, size_t n);


static inline uint32_t
fg_tok_len(const fg_tokenizer_t *t, uint32_t id)
{
    return t->off[id + 1] - t->off[id];
}


/*
 * The code point at s and its length, as the tokenizer splits text: an
 * invalid byte is a code point of its own (FG_TOK_BAD_CP), one byte long,
 * so that bad bytes fall back to byte tokens one by one.
 */
static inline size_t
fg_tok_cp(const uint8_t *s, size_t len, uint32_t *cp)
{
    size_t  n;

    n = fg_utf8_decode(s, len, cp);

    if (n == 0) {
        *cp = FG_TOK_BAD_CP;
        return 1;
    }

    return n;
}


/* the id of a token's text; text_only: normal and user-defined ones */
static inline int32_t
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


static inline int
fg_tok_hex(char c)
{
    return c >= '0' && c <= '9' ? c - '0'
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
           : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}


/* the byte of a "<0xXX>" token, or -1 */
static inline int
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


#endif /* _FG_TOK_INT_H_INCLUDED_ */
