
/*
 * fairgate: a model's answer read back as OpenAI tool calls.
 *
 * Pure C, no nginx types.  Each family writes its calls its own way, and
 * the family is known from the model's chat template (the markers it
 * writes for the calls in the history):
 *
 *     hermes   Qwen 2.5 and 3, Hermes and most fine-tunes:
 *              <tool_call>\n{"name": .., "arguments": {..}}\n</tool_call>
 *              one block a call, text before them
 *     llama3   Llama 3.1 to 3.3: {"name": .., "parameters": {..}} as the
 *              whole answer, or after <|python_tag|>
 *     mistral  [TOOL_CALLS] and a JSON array of {"name", "arguments"}
 *     json     any other: the whole answer a JSON call, an array of them,
 *              or {"tool_calls": [..]}, in a ```json fence or not
 *
 * Every family also takes the json form.  A call counts only when its
 * name is one of the request's tools and its arguments are a JSON object
 * (or a string holding one): an answer that is not wholly calls of the
 * request's tools is text, as the model wrote it.
 */

#ifndef _FG_TOOL_PARSE_H_INCLUDED_
#define _FG_TOOL_PARSE_H_INCLUDED_


#include <stddef.h>
#include <sys/types.h>

#include "fg_openai_request.h"


/* the most calls an answer is read for */
#define FG_TOOL_MAX_CALLS  128


typedef enum {
    FG_TOOL_FMT_JSON = 0,
    FG_TOOL_FMT_HERMES,
    FG_TOOL_FMT_LLAMA3,
    FG_TOOL_FMT_MISTRAL
} fg_tool_format_e;


typedef struct {
    char                *name;        /* NUL-terminated */
    char                *arguments;   /* compact JSON of an object */
    size_t               arguments_len;
} fg_tool_call_t;


/* one malloc'd answer: fg_tool_parsed_free() frees it */
typedef struct {
    size_t               content_len; /* the text's first bytes that are
                                         content, trailing space cut */
    fg_tool_call_t      *calls;
    size_t               n_calls;
} fg_tool_parsed_t;


/* the family whose markers the template text has (json: none known) */
fg_tool_format_e fg_tool_format_detect(const char *tmpl, size_t len);

/* "json", "hermes", "llama3", "mistral" */
const char *fg_tool_format_name(fg_tool_format_e fmt);

/* the text a call starts with in that family, NULL for none: the
 * control token a decoder must write out (<|python_tag|>, [TOOL_CALLS]) */
const char *fg_tool_format_marker(fg_tool_format_e fmt);

/*
 * The calls in len bytes of an answer: out->n_calls 0 when there are
 * none (the whole text is content).  names: the request's tools (n 0:
 * any name).  -1 when memory runs out.
 */
int fg_tool_parse(fg_tool_format_e fmt, const char *text, size_t len,
    const fg_oai_str_t *names, size_t n_names, fg_tool_parsed_t *out);

void fg_tool_parsed_free(fg_tool_parsed_t *out);


/*
 * A streamed answer, split as it comes: content that cannot begin a call
 * goes out at once; from a family's marker, or from the first byte of an
 * answer that opens with "{", "[" or "```", the rest is held for
 * fg_tool_parse() at the end (as a possible marker's first bytes are,
 * until the next text decides).  Leading white space is held until the
 * first other byte.
 */
typedef struct {
    const char          *marker;
    size_t               marker_len;
    char                *buf;
    size_t               len;
    size_t               size;
    size_t               sent;        /* of buf, released last time */
    unsigned             content:1;   /* the answer has begun as text */
    unsigned             holding:1;   /* a call may have begun: all held */
} fg_tool_stream_t;

void fg_tool_stream_init(fg_tool_stream_t *s, fg_tool_format_e fmt);

/*
 * Takes len bytes of text; *out, *out_len: the content to send now
 * (valid until the next call).  -1 when memory runs out.
 */
int fg_tool_stream_push(fg_tool_stream_t *s, const char *text, size_t len,
    const char **out, size_t *out_len);

/* the end: what is held, for fg_tool_parse() */
void fg_tool_stream_held(fg_tool_stream_t *s, const char **out,
    size_t *out_len);

void fg_tool_stream_free(fg_tool_stream_t *s);


#endif /* _FG_TOOL_PARSE_H_INCLUDED_ */
