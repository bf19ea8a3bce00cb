
/*
 * fairgate: constrained decoding.  A grammar (llama.cpp's GBNF, or one
 * compiled from a JSON Schema) and, per sequence, a matcher that says
 * which tokens of the vocabulary may come next, so that every output
 * parses.
 *
 * Three objects, each with its own life:
 *
 *   fg_gram_t        a compiled grammar: read-only once made, shared by
 *                    every sequence (and thread) that uses it;
 *   fg_gram_vocab_t  a vocabulary's token bytes as a byte trie, built once
 *                    per model and shared the same way;
 *   fg_gram_match_t  one sequence's position in the grammar: the stacks of
 *                    the pushdown automaton and a cache of recent masks;
 *                    one thread at a time.
 *
 * A step of decoding: fg_gram_mask() (or fg_gram_bias()) before sampling,
 * fg_gram_accept() with the token sampled.  End of generation is allowed
 * only where the grammar is complete.  Pure C, no nginx types.
 */

#ifndef _FG_GRAMMAR_H_INCLUDED_
#define _FG_GRAMMAR_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "fg_tokenizer.h"


/* what a grammar may hold, checked when it is compiled */
#define FG_GRAM_MAX_TEXT      (1 << 20)     /* GBNF bytes */
#define FG_GRAM_MAX_ELEMS     (1 << 20)     /* elements of all rules */
#define FG_GRAM_MAX_REPEAT    1000          /* m and n of {m,n} */
#define FG_GRAM_MAX_NEST      64            /* nested groups */

/* what a matcher's state may hold: over them a path is dropped (too deep)
 * or the matcher fails (too many stacks, too much work in a step), never
 * more memory or time */
#define FG_GRAM_MAX_DEPTH     256           /* a stack's frames */
#define FG_GRAM_MAX_STACKS    256           /* stacks of one state */
#define FG_GRAM_MAX_WORK      (1 << 18)     /* a step's stacks made,
                                             * frames compared, classes
                                             * checked */


typedef struct fg_gram_s        fg_gram_t;
typedef struct fg_gram_vocab_s  fg_gram_vocab_t;
typedef struct fg_gram_match_s  fg_gram_match_t;
typedef struct fg_gram_cache_s  fg_gram_cache_t;


/*
 * GBNF text (llama.cpp's format, root rule "root").  NULL on an error,
 * which err tells with its line and column.
 */
fg_gram_t *fg_gram_from_gbnf(const char *text, size_t len, char *err,
    size_t errlen);

/*
 * A JSON Schema (OpenAI's response_format json_schema, the "schema"
 * member), or any JSON object when schema is NULL (response_format
 * json_object).  NULL when the schema asks for what the compiler does not
 * do: err then starts with the keyword in quotes, e.g. "\"pattern\" is not
 * supported (at #/properties/code)", for a 400 that names it.
 */
fg_gram_t *fg_gram_from_schema(const json_t *schema, char *err,
    size_t errlen);

/* the GBNF text that fg_gram_from_schema() compiles (free() it) */
char *fg_gram_schema_gbnf(const json_t *schema, char *err, size_t errlen);

void fg_gram_free(fg_gram_t *g);


/*
 * A vocabulary: n tokens' bytes (pieces[i], lens[i] bytes; a token of no
 * bytes, as control tokens are, is never allowed) and which of them end
 * the generation (eog[i] nonzero).  The arrays are copied.
 */
fg_gram_vocab_t *fg_gram_vocab_new(uint32_t n, const char *const *pieces,
    const uint32_t *lens, const uint8_t *eog);

/* a tokenizer's vocabulary: each token's decoded bytes, its EOG tokens */
fg_gram_vocab_t *fg_gram_vocab_from_tokenizer(const fg_tokenizer_t *t);

uint32_t fg_gram_vocab_size(const fg_gram_vocab_t *v);
void fg_gram_vocab_free(fg_gram_vocab_t *v);


/*
 * A sequence's matcher at the grammar's start.  cache: how many masks it
 * keeps by state (0: none), each n_vocab / 8 bytes; a state met again (the
 * inside of a string, a number's digits) then costs a copy.  NULL when out
 * of memory, or when the grammar's start already has too many stacks.
 */
fg_gram_match_t *fg_gram_match_new(const fg_gram_t *g,
    const fg_gram_vocab_t *v, uint32_t cache);
void fg_gram_match_free(fg_gram_match_t *m);

/*
 * Masks kept by state for all the matchers of one grammar and vocabulary
 * (a batch's sequences of one schema meet the same states): entries masks
 * of n_vocab / 8 bytes, the least recently used replaced.  The matchers
 * that share it, and it, are used by one thread at a time; it outlives
 * them.
 */
fg_gram_cache_t *fg_gram_cache_new(const fg_gram_t *g,
    const fg_gram_vocab_t *v, uint32_t entries);
void fg_gram_cache_free(fg_gram_cache_t *c);
/* a matcher whose masks are kept in c (NULL when c is another grammar's) */
fg_gram_match_t *fg_gram_match_shared(const fg_gram_t *g,
    const fg_gram_vocab_t *v, fg_gram_cache_t *c);

/*
 * The tokens allowed next, as bits (token i: bits[i / 32] >> (i % 32) & 1),
 * (n_vocab + 31) / 32 words written.  Returns the number allowed; 0 says
 * the sequence cannot go on (a matcher that failed, or one done); -1 when
 * out of memory or past a bound (FG_GRAM_MAX_STACKS, the walk's states):
 * the matcher has failed.
 */
int64_t fg_gram_mask(fg_gram_match_t *m, uint32_t *bits);

/* the same as a bias: logits of the tokens not allowed become -INFINITY */
int64_t fg_gram_bias(fg_gram_match_t *m, float *logits);

/*
 * The sampled token: the matcher advances over its bytes (an EOG token:
 * the matcher is done).  -1 when the grammar does not allow it (the state
 * is unchanged) or the matcher failed.
 */
int fg_gram_accept(fg_gram_match_t *m, int32_t token);

/* bytes given as they are, whatever the tokens: for prefills and tests */
int fg_gram_accept_bytes(fg_gram_match_t *m, const char *s, size_t len);

/* whether the text so far is a whole sentence of the grammar */
int fg_gram_complete(const fg_gram_match_t *m);

/* whether an EOG token was accepted */
int fg_gram_done(const fg_gram_match_t *m);


#endif /* _FG_GRAMMAR_H_INCLUDED_ */
