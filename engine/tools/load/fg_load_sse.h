
/*
 * fairgate: the load generator's parser of OpenAI streams (Server-Sent
 * Events), fed what each read brings.
 *
 * SSE as the WHATWG spec frames it: lines end in LF, CRLF or CR (a CRLF
 * may be split between two reads); "field: value" (one space after the
 * colon dropped); ":" starts a comment; a blank line ends an event, whose
 * data is its "data" lines joined by LF.  Strict where OpenAI streams are
 * fixed: fields other than data, event, id and retry are refused; an
 * event's data is "[DONE]" or a JSON object; nothing may follow [DONE];
 * the stream must end with [DONE] and no event half sent; a chunk with an
 * "error" ends it as an error.
 *
 * A chunk is a token when one of its choices carries non-empty "content"
 * or "reasoning_content" in "delta" (chat) or "text" (completions): a
 * chunk a token, as servers send them; a server that packs several
 * tokens into a chunk makes counted tokens fewer than generated ones, and
 * its "usage" is what to trust.  A chunk's "usage" (the last one's, with
 * stream_options.include_usage) gives prompt and completion tokens, and
 * the prompt tokens taken from a prefix cache when it has OpenAI's
 * "prompt_tokens_details": {"cached_tokens": N}.
 */

#ifndef _FG_LOAD_SSE_H_INCLUDED_
#define _FG_LOAD_SSE_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include <jansson.h>


/* an event longer than this is refused: a broken server, not a stream */
#define FG_LOAD_SSE_MAX  (1024 * 1024)


typedef void (*fg_load_sse_token_pt)(void *data);


typedef struct {
    char                  *line;         /* the line being read */
    size_t                 len;
    size_t                 cap;
    char                  *data;         /* the event's data so far */
    size_t                 dlen;
    size_t                 dcap;
    unsigned               has_data:1;
    unsigned               cr:1;         /* the last byte was a CR */
    unsigned               done:1;       /* [DONE] came */
    unsigned               failed:1;

    uint64_t               events;       /* with data, [DONE] included */
    uint64_t               tokens;       /* chunks with content */
    int64_t                prompt_tokens;        /* usage; -1 without */
    int64_t                completion_tokens;
    int64_t                cached_tokens;        /* -1 without */

    fg_load_sse_token_pt   on_token;
    void                  *data_ctx;

    char                   err[160];
} fg_load_sse_t;


void fg_load_sse_init(fg_load_sse_t *sse, fg_load_sse_token_pt on_token,
    void *data);
void fg_load_sse_free(fg_load_sse_t *sse);

/* 0, or -1 when the stream is broken (sse->err says how; it stays so) */
int fg_load_sse_feed(fg_load_sse_t *sse, const char *buf, size_t len);

/* at the end of the body: 0 when it ended as a stream must, else -1 */
int fg_load_sse_finish(fg_load_sse_t *sse);

/*
 * usage.prompt_tokens_details.cached_tokens (usage may be NULL): -1 when
 * absent or not an integer >= 0.
 */
int64_t fg_load_usage_cached(const json_t *usage);


#endif /* _FG_LOAD_SSE_H_INCLUDED_ */
