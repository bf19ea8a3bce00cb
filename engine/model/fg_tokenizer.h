
/*
 * fairgate: tokenizer built from a GGUF file's metadata.
 *
 * Pure C, no nginx types, no global state: the gateway links it to count
 * and tokenize prompts in its workers, the engine to decode.  A loaded
 * tokenizer is read-only and may be shared by threads; it keeps copies of
 * what it needs, so the GGUF file may be closed after fg_tokenizer_load().
 *
 * Two models, as GGUF's tokenizer.ggml.model names them:
 *
 *   "llama"  SentencePiece-style: spaces become U+2581, a space is put in
 *            front of the text, adjacent pieces merge by score (best first,
 *            leftmost on ties), and what no piece covers falls back to the
 *            <0xXX> byte tokens.
 *
 *   "gpt2"   byte-level BPE: a pre-tokenizer splits the text into words
 *            (GPT-2's, Llama 3's or Qwen 2's rules, tokenizer.ggml.pre),
 *            each word's bytes map to printable characters, and adjacent
 *            symbols merge by rank (tokenizer.ggml.merges).
 */

#ifndef _FG_TOKENIZER_H_INCLUDED_
#define _FG_TOKENIZER_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fg_gguf.h"


/* flags */

/* encode: control tokens written in the text ("<s>", "<|im_start|>") are
 * those tokens; decode: control tokens print their text */
#define FG_TOK_SPECIAL      0x01
/* encode: add BOS whatever the metadata says; or never add it */
#define FG_TOK_BOS          0x02
#define FG_TOK_NO_BOS       0x04
/* encode: append EOS */
#define FG_TOK_EOS          0x08
/* decode: drop the space that encoding put in front ("llama" models) */
#define FG_TOK_STRIP_SPACE  0x10


typedef enum {
    FG_TOK_MODEL_SPM = 1,           /* "llama" */
    FG_TOK_MODEL_BPE                /* "gpt2" */
} fg_tok_model_e;


typedef enum {
    FG_TOK_PRE_NONE = 0,            /* SentencePiece: no pre-tokenizer */
    FG_TOK_PRE_GPT2,
    FG_TOK_PRE_LLAMA3,
    FG_TOK_PRE_QWEN2
} fg_tok_pre_e;


/* token types, as GGUF numbers them */
typedef enum {
    FG_TOK_NORMAL = 1,
    FG_TOK_UNKNOWN,
    FG_TOK_CONTROL,
    FG_TOK_USER_DEFINED,
    FG_TOK_UNUSED,
    FG_TOK_BYTE
} fg_tok_type_e;


typedef struct fg_tokenizer_s  fg_tokenizer_t;


/*
 * The decoder state of one output stream: token pieces go in, complete
 * UTF-8 characters come out; a character split across tokens (byte
 * tokens, or byte-level BPE pieces) waits for its last byte.
 */
typedef struct {
    uint8_t   pending[4];
    uint8_t   n_pending;
    uint8_t   started;
} fg_tok_stream_t;


fg_tokenizer_t *fg_tokenizer_load(const fg_gguf_t *g, char *err,
    size_t errlen);
void fg_tokenizer_free(fg_tokenizer_t *t);

uint32_t fg_tokenizer_n_vocab(const fg_tokenizer_t *t);
int fg_tokenizer_model(const fg_tokenizer_t *t);
int fg_tokenizer_pre(const fg_tokenizer_t *t);

/* -1 when the vocabulary has none */
int32_t fg_tokenizer_bos(const fg_tokenizer_t *t);
int32_t fg_tokenizer_eos(const fg_tokenizer_t *t);
int32_t fg_tokenizer_unk(const fg_tokenizer_t *t);

/* whether encoding adds BOS unless told otherwise */
int fg_tokenizer_add_bos(const fg_tokenizer_t *t);

/* end of generation: EOS, EOT, EOM, and the usual end-of-turn tokens */
int fg_tokenizer_is_eog(const fg_tokenizer_t *t, int32_t id);

/* the token's type (fg_tok_type_e), or -1 for an id out of range */
int fg_tokenizer_type(const fg_tokenizer_t *t, int32_t id);

/* the token's text as stored in the vocabulary; NULL when out of range */
const char *fg_tokenizer_text(const fg_tokenizer_t *t, int32_t id,
    size_t *len);

/* the id of a token by its stored text, or -1 */
int32_t fg_tokenizer_find(const fg_tokenizer_t *t, const char *text,
    size_t len);

/*
 * Encodes len bytes of text (any bytes: invalid UTF-8 falls back to bytes)
 * and returns the number of tokens; ids gets at most max of them, so a
 * return above max asks for a bigger array (3 * len + 8 always fits; ids
 * may be NULL just to count).  -1 when out of memory.
 */
ssize_t fg_tokenizer_encode(const fg_tokenizer_t *t, const char *text,
    size_t len, int flags, int32_t *ids, size_t max);

/*
 * A piece of a text to encode: a chat template's own text, whose control
 * tokens ("<|im_start|>") are those tokens, or what a client sent, where
 * they are text like any other, so that no message can forge a turn.
 * User-defined tokens are matched in both, and across their bounds.
 */
typedef struct {
    const char   *text;
    size_t        len;
    unsigned      special:1;        /* control tokens written are tokens */
} fg_tok_seg_t;

/*
 * Encodes n segments as one text: the same tokens as fg_tokenizer_encode()
 * of their concatenation (words and merges run across the segments'
 * bounds), but a control token is matched only where it lies within one
 * segment that has special set.  flags: BOS and EOS as for
 * fg_tokenizer_encode(); FG_TOK_SPECIAL is the segments' to say.  Returns
 * as fg_tokenizer_encode() does (3 * total + 8 ids always fit).
 */
ssize_t fg_tokenizer_encode_segs(const fg_tokenizer_t *t,
    const fg_tok_seg_t *segs, size_t n, int flags, int32_t *ids,
    size_t max);

/*
 * The pre-tokenizer alone (gpt2 models): the byte offsets where the words
 * of the text end; returns their number, at most max written.  A
 * SentencePiece model has no pre-tokenizer: one word.  -1 when out of
 * memory.
 */
ssize_t fg_tokenizer_split(const fg_tokenizer_t *t, const char *text,
    size_t len, size_t *ends, size_t max);

/*
 * The bytes a token stands for (not NUL-terminated): the length, with at
 * most size bytes written; -1 for an id out of range.
 */
ssize_t fg_tokenizer_piece(const fg_tokenizer_t *t, int32_t id, int flags,
    char *buf, size_t size);

/* the longest piece of the vocabulary, in bytes */
size_t fg_tokenizer_max_piece(const fg_tokenizer_t *t);

/*
 * The bytes of n tokens, as fg_tokenizer_piece(), NUL-terminated when
 * there is room; -1 for an id out of range.
 */
ssize_t fg_tokenizer_decode(const fg_tokenizer_t *t, const int32_t *ids,
    size_t n, int flags, char *buf, size_t size);


/*
 * Streaming decode.  push() writes the complete characters that the token
 * makes available and returns how many bytes; invalid sequences come out
 * as U+FFFD, so the output is always valid UTF-8.  out must hold
 * FG_TOK_STREAM_OUT(max_piece) bytes, else -1 (also for a bad id), and
 * the state is unchanged.  flush() ends the stream: an unfinished
 * character becomes U+FFFD (out: 3 bytes).
 */
#define FG_TOK_STREAM_OUT(max_piece)  (3 * ((max_piece) + 4))

void fg_tok_stream_init(fg_tok_stream_t *s);
ssize_t fg_tok_stream_push(const fg_tokenizer_t *t, fg_tok_stream_t *s,
    int32_t id, int flags, char *out, size_t size);
ssize_t fg_tok_stream_flush(fg_tok_stream_t *s, char *out, size_t size);


#endif /* _FG_TOKENIZER_H_INCLUDED_ */
