
/*
 * fairgate: tool calling, for local mode: whether a request's answer is
 * read for calls, the calls read (fg_tool_parse.h), and written back in
 * OpenAI's shapes (fg_openai_tool_resp.c).  The request's side, its
 * fields and messages, is fg_openai_tools.c's, inside the parser.
 */

#ifndef _FG_OPENAI_TOOLS_H_INCLUDED_
#define _FG_OPENAI_TOOLS_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_gguf.h"
#include "fg_tokenizer.h"
#include "fg_openai_request.h"
#include "fg_openai_response.h"
#include "fg_tool_parse.h"


/* a call's id and its NUL */
#define FG_OAI_CALL_ID_LEN  32


/* a model's tool calling, from its chat template (fg_chat_tools.c) */
typedef struct {
    fg_tool_format_e     format;
    int32_t              marker;       /* the token starting a call, -1 */
    unsigned             takes_tools:1; /* the template reads "tools" */
} fg_chat_tools_t;

void fg_chat_tools_init(fg_chat_tools_t *ct, const fg_gguf_t *g,
    const fg_tokenizer_t *tok);


/* fg_openai_tools.c */

/* the request has tools, tool calls or tool messages: it needs a chat
 * template that takes them */
int fg_oai_request_uses_tools(const fg_oai_request_t *r);

/* the answer is read for calls: tools given, tool_choice not "none" */
int fg_oai_request_reads_calls(const fg_oai_request_t *r);

/* the answer's calls of the request's tools (a named choice: of that
 * one; parallel_tool_calls false: the first only), as fg_tool_parse()
 * reads them; -1 out of memory */
int fg_oai_tools_answer(const fg_oai_request_t *r, fg_tool_format_e fmt,
    const char *text, size_t len, fg_tool_parsed_t *out);


/* fg_openai_tool_resp.c */

/*
 * A call's id from 128 random bits: "call_" and 24 of [0-9A-Za-z], as
 * OpenAI's look; for Mistral, whose template takes no other, 9 of them.
 */
void fg_oai_tool_call_id(char *buf, size_t size, fg_tool_format_e fmt,
    uint64_t r0, uint64_t r1);

/*
 * The non-stream body of an answer with calls (ids[i]: call i's): the
 * text before them as content (null when none), finish_reason
 * "tool_calls".  malloc'd, *len bytes; NULL when memory runs out.
 */
char *fg_oai_resp_tools_json(const fg_oai_resp_t *r, const char *content,
    size_t content_len, const fg_tool_parsed_t *p,
    char (*ids)[FG_OAI_CALL_ID_LEN], const fg_oai_usage_t *usage,
    size_t *len);

/*
 * The same for n choices (fg_oai_resp_choices()), each with its calls
 * (p[i] NULL or without calls: a choice of text alone), their content
 * c[i]'s text, their finish c[i]'s (FG_OAI_FINISH_TOOL_CALLS for those
 * with calls).
 */
char *fg_oai_resp_choices_tools(const fg_oai_resp_t *r,
    const fg_oai_choice_t *c, size_t n, const fg_tool_parsed_t *const *p,
    char (*const *ids)[FG_OAI_CALL_ID_LEN], const fg_oai_usage_t *usage,
    size_t *len);

/*
 * A stream's chunks for the calls, two a call (its name, its arguments),
 * after the role chunk; the finish is fg_oai_sse_finish()'s with
 * FG_OAI_FINISH_TOOL_CALLS.  malloc'd, *len bytes; NULL when memory runs
 * out or there is no call.
 */
char *fg_oai_sse_tool_calls(fg_oai_resp_t *r, const fg_tool_parsed_t *p,
    char (*ids)[FG_OAI_CALL_ID_LEN], size_t *len);


/* fg_openai_resp_calls.c: the same for /v1/responses */

/*
 * The Response whose answer has calls: the content, when there is some,
 * a message item, and each call a function_call item.  malloc'd, *len
 * bytes; NULL when memory runs out.
 */
char *fg_oai_rsp_tools_json(const fg_oai_resp_t *r, const char *content,
    size_t content_len, const fg_tool_parsed_t *p,
    char (*ids)[FG_OAI_CALL_ID_LEN], const fg_oai_usage_t *usage,
    size_t *len);

/*
 * A stream's last events when its answer has calls: the message's
 * closing (content: its whole text, sent already) when one was opened,
 * the Response's opening otherwise; each call's events; and
 * response.completed.  malloc'd, *len bytes; NULL when memory runs out.
 */
char *fg_oai_rsp_sse_tools(fg_oai_resp_t *r, const char *content,
    size_t content_len, const fg_tool_parsed_t *p,
    char (*ids)[FG_OAI_CALL_ID_LEN], const fg_oai_usage_t *usage,
    size_t *len);


#endif /* _FG_OPENAI_TOOLS_H_INCLUDED_ */
