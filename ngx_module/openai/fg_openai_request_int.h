
/*
 * fairgate: what the pieces of the request parser share, private to
 * them: the state of one parse, the error and memory helpers, and the
 * checks that fg_openai_request.c's table of fields names.
 *
 * Every check has the same shape: the parse, the field's key (its param
 * in errors), its JSON value, and the reason a refused field is refused.
 * It returns 0 when the value is accepted (and stored in the request),
 * -1 with p->err filled when it is not.
 */

#ifndef _FG_OPENAI_REQUEST_INT_H_INCLUDED_
#define _FG_OPENAI_REQUEST_INT_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "fg_openai_request.h"


/* which endpoints a field belongs to */
#define FG_OAI_K_CHAT        0x01
#define FG_OAI_K_COMPLETION  0x02
#define FG_OAI_K_BOTH        (FG_OAI_K_CHAT|FG_OAI_K_COMPLETION)
#define FG_OAI_K_RESPONSES   0x04
#define FG_OAI_K_EMBEDDING   0x08


typedef struct {
    fg_oai_request_t        *req;
    const fg_oai_limits_t   *lim;
    fg_oai_error_t          *err;
    unsigned                 kind;            /* FG_OAI_K_* */
    size_t                   text;            /* message bytes so far */
    int64_t                  max_tokens;      /* -1: not given */
    int64_t                  max_completion;
    const json_t            *stream_options;
    json_t                  *input;           /* /v1/responses */
    json_t                  *instructions;
    const json_t            *tool_choice;     /* checked once tools are */
    unsigned                 top_p_zero:1;
    unsigned                 top_logprobs:1;   /* given, not null */
} fg_oai_parse_t;


/*
 * The JSON type a field's value must have, checked by the walk before the
 * field's check (null, the field's default, skips both); FG_OAI_T_ANY: the
 * check sees every value.
 */
typedef enum {
    FG_OAI_T_ANY = 0,
    FG_OAI_T_INTEGER,
    FG_OAI_T_NUMBER,
    FG_OAI_T_STRING,
    FG_OAI_T_OBJECT,
    FG_OAI_T_ARRAY
} fg_oai_type_e;


/* a field's check, of the shape said above: the checks below are
 * declared with it, and fg_openai_request.c's table holds them by it */
typedef int fg_oai_field_fn(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why);


/* a row of a table of fields: for which endpoints, the JSON type its value
 * must have, its check, and the reason a refused field is refused */
typedef struct {
    const char              *name;
    unsigned                 kinds;
    fg_oai_type_e            type;
    fg_oai_field_fn         *check;
    const char              *why;
} fg_oai_field_t;


/* fg_openai_check.c: errors, types, memory, booleans, array sizes */

int fg_oai_fail(fg_oai_parse_t *p, const char *code, const char *param,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int fg_oai_nomem(fg_oai_parse_t *p);
int fg_oai_bad_type(fg_oai_parse_t *p, const char *param, const char *want,
    const json_t *v);
void *fg_oai_alloc(fg_oai_request_t *r, size_t size);
int fg_oai_copy(fg_oai_parse_t *p, fg_oai_str_t *dst, const char *s,
    size_t len);

/* a content part j of item i checked: its text, or NULL (refused) */
typedef json_t *(*fg_oai_part_pt)(fg_oai_parse_t *p, size_t i, size_t j,
    json_t *part);

/* an item's content, a string or parts (fg_openai_messages.c; the
 * Responses API's input too): checked, counted and copied into out */
int fg_oai_content_text(fg_oai_parse_t *p, const char *what, size_t i,
    json_t *v, fg_oai_part_pt part_text, fg_oai_str_t *out);
/* checked content parts' texts, len bytes in all, joined with "\n" into
 * out */
int fg_oai_content_join(fg_oai_parse_t *p, json_t *parts, size_t len,
    fg_oai_str_t *out);
int fg_oai_bool(fg_oai_parse_t *p, const char *param, json_t *v, int *out);
int fg_oai_array_size(fg_oai_parse_t *p, const char *param, size_t n,
    size_t max);
void *fg_oai_array(fg_oai_parse_t *p, const char *param, size_t n,
    size_t max, size_t size);
const char *fg_oai_type_name(const json_t *v);
int fg_oai_typed(fg_oai_parse_t *p, const char *key, json_t *v,
    fg_oai_type_e type);


/* fg_openai_params.c: the fields fairgate implements, both endpoints */

/* a number in [min, max] into out: 0; 1 for null; -1 refused */
int fg_oai_number(fg_oai_parse_t *p, const char *key, json_t *v, double min,
    double max, double *out);

fg_oai_field_fn  fg_oai_field_model;
fg_oai_field_fn  fg_oai_field_max_tokens;
fg_oai_field_fn  fg_oai_field_temperature;
fg_oai_field_fn  fg_oai_field_top_p;
fg_oai_field_fn  fg_oai_field_top_k;
fg_oai_field_fn  fg_oai_field_seed;
fg_oai_field_fn  fg_oai_field_stop;
fg_oai_field_fn  fg_oai_field_flag;
fg_oai_field_fn  fg_oai_field_stream_options;
fg_oai_field_fn  fg_oai_field_user;
fg_oai_field_fn  fg_oai_field_n;
fg_oai_field_fn  fg_oai_field_best_of;

/* n and best_of against each other and what n > 1 cannot go with */
int fg_oai_choices_check(fg_oai_parse_t *p);


/* fg_openai_sampling.c: the logits' adjustments, the log-probabilities */

fg_oai_field_fn  fg_oai_field_penalty;
fg_oai_field_fn  fg_oai_field_repetition;
fg_oai_field_fn  fg_oai_field_min_p;
fg_oai_field_fn  fg_oai_field_logit_bias;
fg_oai_field_fn  fg_oai_field_logprobs;
fg_oai_field_fn  fg_oai_field_top_logprobs;
fg_oai_field_fn  fg_oai_field_echo;

/* what the fields say together: top_logprobs needs logprobs; no echo
 * with logprobs */
int fg_oai_sampling_check(fg_oai_parse_t *p);


/* fg_openai_messages.c: chat */

fg_oai_field_fn  fg_oai_field_messages;


/* fg_openai_tools.c: tool calling, its fields and its messages */

fg_oai_field_fn  fg_oai_field_tools;
fg_oai_field_fn  fg_oai_field_tools_choice;
fg_oai_field_fn  fg_oai_field_parallel_tool_calls;
fg_oai_field_fn  fg_oai_field_functions;

int fg_oai_message_tools(fg_oai_parse_t *p, size_t i, json_t *m,
    fg_oai_message_t *out);
int fg_oai_tools_check(fg_oai_parse_t *p);


/* fg_openai_prompt.c: completions */

fg_oai_field_fn  fg_oai_field_prompt;


/* fg_openai_responses.c: /v1/responses's own table of fields, its
 * checks, and its input turned into messages once every field is read */

extern const fg_oai_field_t  fg_oai_responses_fields[];

int fg_oai_responses_build(fg_oai_parse_t *p);


/* fg_openai_resp_tools.c: tools, tool_choice and the input's calls */

/* "tools" and "tool_choice" (e: the request's echo, which says them
 * back) */
int fg_oai_resp_tools(fg_oai_parse_t *p, fg_oai_responses_t *e,
    const char *key, json_t *v);
int fg_oai_resp_tool_choice(fg_oai_parse_t *p, fg_oai_responses_t *e,
    const char *key, json_t *v);

/* a function_call or function_call_output item */
int fg_oai_input_is_call(json_t *item);

/* item i as message *k, or a call of message *k - 1 (messages from
 * first on are the input's) */
int fg_oai_input_call(fg_oai_parse_t *p, size_t i, json_t *item,
    fg_oai_message_t *msgs, size_t *k, size_t first);

/* the input's calls and their outputs answer each other, and the chat's
 * checks of tools pass (fg_oai_tools_check()) */
int fg_oai_input_calls_check(fg_oai_parse_t *p);


/* fg_openai_input.c: the input (p->input), after the instructions */

int fg_oai_input_messages(fg_oai_parse_t *p,
    const fg_oai_str_t *instructions);


/* fg_openai_embed.c: /v1/embeddings's own table of fields */

extern const fg_oai_field_t  fg_oai_embedding_fields[];


/* fg_openai_unsupported.c: harmless with the values allowed, or refused */

fg_oai_field_fn  fg_oai_field_zero;
fg_oai_field_fn  fg_oai_field_false;
fg_oai_field_fn  fg_oai_field_any;
fg_oai_field_fn  fg_oai_field_any_bool;
fg_oai_field_fn  fg_oai_field_empty_string;
fg_oai_field_fn  fg_oai_field_response_format;
fg_oai_field_fn  fg_oai_field_grammar;

/* fg_openai_format.c: a response format made the request's grammar */
int fg_oai_format(fg_oai_parse_t *p, const char *base, json_t *v, int flat);
int fg_oai_format_tools(fg_oai_parse_t *p);
fg_oai_field_fn  fg_oai_field_modalities;
fg_oai_field_fn  fg_oai_field_refuse;


#endif /* _FG_OPENAI_REQUEST_INT_H_INCLUDED_ */
