
/*
 * fairgate: what local mode sends back: OpenAI response bodies, SSE
 * chunks and error bodies (fg_openai_response.c: every OpenAI body the
 * gateway writes, its own errors included), and the stop-string matcher
 * that decides how much streamed text goes out (fg_openai_stop.c).
 *
 * Pure C, no nginx types, no allocation: every writer takes the caller's
 * buffer and returns the bytes it needs, like snprintf(); when that is
 * more than the buffer's size nothing valid was written and the state is
 * unchanged.  fg_oai_resp_bound() gives a size that always suffices, so
 * the nginx glue allocates once from its pool and writes once.
 *
 * Text in is UTF-8 from the tokenizer's streaming decoder; whatever comes
 * in, what goes out is valid UTF-8 (a stray byte becomes U+FFFD) inside
 * valid JSON.
 *
 * A stream, as OpenAI sends it (chat):
 *
 *   fg_oai_sse_delta()   data: {... "delta":{"role":"assistant",
 *                        "content":"","refusal":null} ...}   (first call)
 *                        data: {... "delta":{"content":"Once"} ...}
 *   fg_oai_sse_finish()  data: {... "delta":{},"finish_reason":"stop"}
 *                        data: {... "choices":[],"usage":{...}}  (usage)
 *                        data: [DONE]
 *   fg_oai_sse_error()   data: {"error":{...}}  then  data: [DONE]
 *
 * Completions stream "text_completion" objects with "text" instead of
 * "delta", and no role chunk.
 */

#ifndef _FG_OPENAI_RESPONSE_H_INCLUDED_
#define _FG_OPENAI_RESPONSE_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_openai_request.h"


#define FG_OAI_ID_LEN        64
#define FG_OAI_MODEL_JSON    1600     /* a model name of 256 bytes, escaped */
#define FG_OAI_FP_JSON       400      /* the system fingerprint, escaped */

/* an error body (fg_oai_error_json) never needs more */
#define FG_OAI_ERROR_MAX     4096


typedef enum {
    FG_OAI_FINISH_STOP = 0,   /* EOS, a stop token or a stop string */
    FG_OAI_FINISH_LENGTH,     /* max_tokens, or the context's end */
    FG_OAI_FINISH_TOOL_CALLS  /* the answer was tool calls */
} fg_oai_finish_e;


/*
 * usage: {"prompt_tokens":P,"completion_tokens":C,"total_tokens":P+C,
 * "prompt_tokens_details":{"cached_tokens":N}}, as OpenAI writes it; the
 * details always, N 0 when nothing was cached
 */
typedef struct {
    uint32_t         prompt_tokens;
    uint32_t         completion_tokens;
    uint32_t         cached_tokens;   /* of prompt_tokens: the engine's
                                         prefix cache held them */
} fg_oai_usage_t;


/* one response: what every chunk repeats, escaped once */
typedef struct {
    fg_oai_kind_e    kind;
    int64_t          created;
    unsigned         include_usage:1;
    unsigned         started:1;       /* the role chunk is out (responses:
                                         the opening events) */
    unsigned         msg_open:1;      /* responses: the message item was
                                         added (with tools: at the first
                                         text, no call being a message) */

    size_t           id_len;
    size_t           model_len;
    size_t           fp_len;
    char             id[FG_OAI_ID_LEN];          /* JSON, with quotes */
    char             model[FG_OAI_MODEL_JSON];   /* JSON, with quotes */
    char             fp[FG_OAI_FP_JSON];         /* JSON string or null */

    /* /v1/responses: the request said back, the events' next sequence
     * number, the message's id (JSON), the Response's size but its text */
    const fg_oai_request_t  *req;
    uint64_t         seq;
    size_t           msg_id_len;
    size_t           object_bound;
    char             msg_id[FG_OAI_ID_LEN];

    /* the "logprobs" of the next body or text chunk, JSON from
     * fg_oai_lp_json() (NULL: null); the caller's memory, set and cleared
     * around each write */
    const char      *lp;
    size_t           lp_len;

    /* choices: how many (0 or 1: one), and the one the next chunk is of
     * (a stream's role chunks say them all at once) */
    uint32_t         n;
    uint32_t         index;
} fg_oai_resp_t;


/* one choice of a non-stream body with several (fg_oai_resp_choices);
 * lp: its "logprobs" JSON (fg_oai_lp_json()), NULL: the response's */
typedef struct {
    const char      *text;
    size_t           len;
    fg_oai_finish_e  finish;
    const char      *lp;
    size_t           lp_len;
} fg_oai_choice_t;


/*
 * A token's log-probabilities as a response reports them: its bytes (the
 * tokenizer's piece, which may be part of a UTF-8 character) and the
 * log-probability, and the same for the best alternatives.
 */
typedef struct {
    const char      *bytes;
    size_t           len;
    float            logprob;
} fg_oai_lp_tok_t;

typedef struct {
    fg_oai_lp_tok_t  tok;
    size_t           n_top;
    fg_oai_lp_tok_t  top[FG_OAI_MAX_TOP_CHAT];
} fg_oai_lp_t;


/*
 * An id as OpenAI's look: "chatcmpl-" (chat), "cmpl-" or "resp_" and 22
 * characters [0-9A-Za-z] from 128 random bits the caller draws.
 */
void fg_oai_make_id(char *buf, size_t size, fg_oai_kind_e kind, uint64_t r0,
    uint64_t r1);

/*
 * Sets up a response: the id, the model name to report, the system
 * fingerprint (NULL: null; fairgate uses the engine's generation), the
 * creation time (Unix seconds), whether a usage chunk ends the stream.
 * -1 when the id, model or fingerprint is too long.
 */
int fg_oai_resp_init(fg_oai_resp_t *r, fg_oai_kind_e kind, const char *id,
    const char *model, size_t model_len, const char *fingerprint,
    int64_t created, int include_usage);

/*
 * The "logprobs" value of n tokens in OpenAI's shape: chat
 *     {"content":[{"token":T,"logprob":L,"bytes":[..],
 *                  "top_logprobs":[{"token":..,"logprob":..,"bytes":..}]}],
 *      "refusal":null}
 * completions (offset: the first token's place in the choice's text)
 *     {"tokens":[..],"token_logprobs":[..],"top_logprobs":[{T:L,..}],
 *      "text_offset":[..]}
 * where each map holds the best alternatives and the sampled token, when
 * it is not one of them (up to n_top + 1 keys, as at OpenAI), each text
 * once
 * A token's text is its bytes, a byte that is no whole character as
 * U+FFFD; a log-probability below -9999 (or -inf) is -9999, OpenAI's
 * floor.  Call it with size 0 to measure.
 */
size_t fg_oai_lp_json(fg_oai_kind_e kind, const fg_oai_lp_t *lp, size_t n,
    size_t offset, char *out, size_t size);

/* a buffer size enough for any writer below given len bytes of text (and
 * r->lp) */
size_t fg_oai_resp_bound(const fg_oai_resp_t *r, size_t len);

/* the whole non-stream body: chat.completion or text_completion */
size_t fg_oai_resp_json(const fg_oai_resp_t *r, const char *text,
    size_t len, fg_oai_finish_e finish, const fg_oai_usage_t *usage,
    char *out, size_t size);

/*
 * SSE events for len bytes of new text (chat: the role chunk first, on
 * the first call, even with no text); 0 when there is nothing to send.
 */
size_t fg_oai_sse_delta(fg_oai_resp_t *r, const char *text, size_t len,
    char *out, size_t size);

/* the end: the finish chunk, the usage chunk if asked for, [DONE] */
size_t fg_oai_sse_finish(fg_oai_resp_t *r, fg_oai_finish_e finish,
    const fg_oai_usage_t *usage, char *out, size_t size);

/*
 * Several choices: the finish chunk of choice r->index as it ends; when
 * the last has, the usage chunk if asked for, and [DONE].
 */
size_t fg_oai_sse_choice_end(fg_oai_resp_t *r, fg_oai_finish_e finish,
    char *out, size_t size);
size_t fg_oai_sse_done(fg_oai_resp_t *r, const fg_oai_usage_t *usage,
    char *out, size_t size);

/* the non-stream body of n choices, in their order */
size_t fg_oai_resp_choices(const fg_oai_resp_t *r, const fg_oai_choice_t *c,
    size_t n, const fg_oai_usage_t *usage, char *out, size_t size);

/* a failure mid-stream: an error event as OpenAI's clients read it, then
 * [DONE] */
size_t fg_oai_sse_error(fg_oai_resp_t *r, const fg_oai_error_t *err,
    char *out, size_t size);

/*
 * /v1/responses (fg_openai_responses_out.c): OpenAI's Response object, and
 * its stream of named events, each "event: NAME" and "data: {...,
 * "sequence_number": N}":
 *
 *   fg_oai_rsp_sse_delta()   response.created, response.in_progress,
 *                            response.output_item.added,
 *                            response.content_part.added (first call),
 *                            response.output_text.delta
 *   fg_oai_rsp_sse_finish()  response.output_text.done,
 *                            response.content_part.done,
 *                            response.output_item.done, then
 *                            response.completed, or response.incomplete
 *                            (finish "length": max_output_tokens)
 *   fg_oai_rsp_sse_error()   error, then response.failed
 *
 * No [DONE]: the Responses API's streams end with their last event.  The
 * chat writers above hand a response of kind FG_OAI_RESPONSES to these
 * (fg_oai_resp_json, fg_oai_sse_delta, fg_oai_sse_error,
 * fg_oai_resp_bound); the finish needs the whole text, so it is called by
 * its own name.
 */

/* after fg_oai_resp_init(): the request the Response says back; req must
 * outlive r.  -1 when r is not of FG_OAI_RESPONSES */
int fg_oai_rsp_init(fg_oai_resp_t *r, const fg_oai_request_t *req);

/* a buffer size enough for len bytes of text: whole, for the events that
 * carry the Response (the opening ones, the finish, a failure); else a
 * delta's */
size_t fg_oai_rsp_bound(const fg_oai_resp_t *r, size_t len, int whole);

size_t fg_oai_rsp_json(const fg_oai_resp_t *r, const char *text, size_t len,
    fg_oai_finish_e finish, const fg_oai_usage_t *usage, char *out,
    size_t size);
size_t fg_oai_rsp_sse_delta(fg_oai_resp_t *r, const char *text, size_t len,
    char *out, size_t size);

/* text: all of the response's text, as the deltas sent it */
size_t fg_oai_rsp_sse_finish(fg_oai_resp_t *r, const char *text, size_t len,
    fg_oai_finish_e finish, const fg_oai_usage_t *usage, char *out,
    size_t size);
size_t fg_oai_rsp_sse_error(fg_oai_resp_t *r, const fg_oai_error_t *err,
    char *out, size_t size);


/*
 * GET /v1/models: {"object":"list","data":[{"id":..,"object":"model",
 * "created":..,"owned_by":"fairgate"}, ...]} and a newline, for n model
 * ids.  Call it with size 0 to measure.
 */
size_t fg_oai_models_json(const fg_oai_str_t *ids, size_t n, int64_t created,
    char *out, size_t size);

/*
 * The one writer of OpenAI's error body, for the API layer's errors and
 * the gateway's own (401, 429, 503 ...):
 *     {"error":{"message":M,"type":T,"param":P,"code":C}} and a newline
 * param and code NULL are written as null (so is a NULL message or type,
 * which no caller should give, rather than read).  No bound is known in
 * advance (the message is the caller's): call it with size 0 to measure.
 */
size_t fg_oai_error_body(const char *type, const char *param,
    const char *code, const char *message, char *out, size_t size);

/* the same for err (param "" is null); never more than FG_OAI_ERROR_MAX */
size_t fg_oai_error_json(const fg_oai_error_t *err, char *out, size_t size);

const char *fg_oai_finish_name(fg_oai_finish_e finish);


/*
 * Stop strings on streamed text.  The engine stops on token ids; a stop
 * string can span tokens and land anywhere in one, so the gateway matches
 * text: push() releases what can no longer be the start of a stop string
 * and holds back the rest (and an unfinished UTF-8 character, so released
 * text always ends on a character boundary).  When a stop string is
 * complete, stopped is set and the text before it is the last released;
 * the stop string itself is never sent, as OpenAI does.  The first stop
 * string to be complete wins, as the text arrives.
 */
typedef struct {
    size_t           n;
    size_t           len[FG_OAI_MAX_STOP];
    size_t           held;
    unsigned         stopped:1;
    char             stop[FG_OAI_MAX_STOP][FG_OAI_STOP_MAX_LEN];
    char             hold[FG_OAI_STOP_MAX_LEN + 4];
} fg_oai_stop_t;

/* the size out must have for push() of len bytes, or flush() (len 0) */
#define FG_OAI_STOP_OUT(len)  ((len) + FG_OAI_STOP_MAX_LEN + 4)

/* -1 for an empty stop string or one longer than FG_OAI_STOP_MAX_LEN */
int fg_oai_stop_init(fg_oai_stop_t *s, const fg_oai_str_t *stops, size_t n);

/* the bytes released into out; nothing once stopped */
size_t fg_oai_stop_push(fg_oai_stop_t *s, const char *text, size_t len,
    char *out);

/* the end of the text: what was held back, released */
size_t fg_oai_stop_flush(fg_oai_stop_t *s, char *out);


/*
 * Embeddings (fg_openai_embed_resp.c): one item of a response's data,
 * {"object":"embedding","index":I,"embedding":E}, E the n floats as JSON
 * numbers (9 significant digits: a float32 read back is the same float)
 * or, b64 not NULL, the string of b64_len bytes the caller encoded.
 * Returns the bytes written, at most FG_OAI_EMBED_ITEM_MAX(n, b64_len);
 * 0 when size is short of it.
 */
#define FG_OAI_EMBED_ITEM_MAX(n, b64_len)  (96 + (size_t) (n) * 17 + (b64_len))

size_t fg_oai_embed_item(size_t index, const float *v, uint32_t n,
    const char *b64, size_t b64_len, char *out, size_t size);


#endif /* _FG_OPENAI_RESPONSE_H_INCLUDED_ */
