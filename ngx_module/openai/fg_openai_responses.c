
/*
 * fairgate: the request body of POST /v1/responses, OpenAI's Responses
 * API, served as a chat underneath: its input (fg_openai_input.c) and
 * instructions become the chat's messages, max_output_tokens its
 * max_tokens, and the sampling fields are the chat's own checks.
 *
 * The API has fields of its own, so it has a table of its own, walked by
 * fg_openai_request.c as the chat's is.  Nothing is stored: a field that
 * needs a stored response or conversation (previous_response_id,
 * conversation, prompt, background) is refused saying so, and store is
 * accepted either way (the Response says "store": false).  Function
 * tools are the chat's (fg_openai_resp_tools.c); structured output is
 * refused until fairgate has it; the fields that only echo back
 * (metadata, truncation) are kept for the Response.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_openai_request_int.h"


/* OpenAI's bounds on metadata: 16 pairs, keys of 64, values of 512 */
#define FG_OAI_META_PAIRS    16
#define FG_OAI_META_KEY      64
#define FG_OAI_META_VALUE    512


static fg_oai_field_fn  fg_oai_resp_input;
static fg_oai_field_fn  fg_oai_resp_instructions;
static fg_oai_field_fn  fg_oai_resp_metadata;
static fg_oai_field_fn  fg_oai_resp_text;
static fg_oai_field_fn  fg_oai_resp_reasoning;
static fg_oai_field_fn  fg_oai_resp_field_tools;
static fg_oai_field_fn  fg_oai_resp_field_tool_choice;
static fg_oai_field_fn  fg_oai_resp_parallel;
static fg_oai_field_fn  fg_oai_resp_truncation;
static fg_oai_field_fn  fg_oai_resp_include;


#define FG_OAI_R  FG_OAI_K_RESPONSES

#define FG_OAI_NOT_STORED                                                     \
    "fairgate does not store responses or conversations: send the whole "     \
    "conversation in 'input' (with the AI SDK: providerOptions: { openai: "   \
    "{ store: false } })"


const fg_oai_field_t  fg_oai_responses_fields[] = {

    { "model", FG_OAI_R, FG_OAI_T_ANY, fg_oai_field_model, NULL },
    { "input", FG_OAI_R, FG_OAI_T_ANY, fg_oai_resp_input, NULL },
    { "instructions", FG_OAI_R, FG_OAI_T_STRING,
      fg_oai_resp_instructions, NULL },
    { "max_output_tokens", FG_OAI_R, FG_OAI_T_INTEGER,
      fg_oai_field_max_tokens, NULL },
    { "temperature", FG_OAI_R, FG_OAI_T_ANY, fg_oai_field_temperature, NULL },
    { "top_p", FG_OAI_R, FG_OAI_T_ANY, fg_oai_field_top_p, NULL },
    { "stream", FG_OAI_R, FG_OAI_T_ANY, fg_oai_field_flag, NULL },
    { "stream_options", FG_OAI_R, FG_OAI_T_OBJECT,
      fg_oai_field_stream_options, NULL },
    { "user", FG_OAI_R, FG_OAI_T_ANY, fg_oai_field_user, NULL },
    { "metadata", FG_OAI_R, FG_OAI_T_OBJECT, fg_oai_resp_metadata, NULL },
    { "text", FG_OAI_R, FG_OAI_T_OBJECT, fg_oai_resp_text, NULL },
    { "reasoning", FG_OAI_R, FG_OAI_T_OBJECT, fg_oai_resp_reasoning, NULL },
    { "tools", FG_OAI_R, FG_OAI_T_ARRAY, fg_oai_resp_field_tools, NULL },
    { "tool_choice", FG_OAI_R, FG_OAI_T_ANY, fg_oai_resp_field_tool_choice,
      NULL },
    { "parallel_tool_calls", FG_OAI_R, FG_OAI_T_ANY, fg_oai_resp_parallel,
      NULL },
    { "max_tool_calls", FG_OAI_R, FG_OAI_T_INTEGER, fg_oai_field_any, NULL },
    { "truncation", FG_OAI_R, FG_OAI_T_STRING, fg_oai_resp_truncation,
      NULL },
    { "include", FG_OAI_R, FG_OAI_T_ARRAY, fg_oai_resp_include, NULL },
    { "top_logprobs", FG_OAI_R, FG_OAI_T_NUMBER, fg_oai_field_zero, NULL },

    /* nothing is stored either way; the Response says "store": false */
    { "store", FG_OAI_R, FG_OAI_T_ANY, fg_oai_field_any_bool, NULL },
    { "background", FG_OAI_R, FG_OAI_T_ANY, fg_oai_field_false, NULL },

    /* hints that change nothing here, as in chat */
    { "service_tier", FG_OAI_R, FG_OAI_T_STRING, fg_oai_field_any, NULL },
    { "prompt_cache_key", FG_OAI_R, FG_OAI_T_STRING, fg_oai_field_any,
      NULL },
    { "prompt_cache_retention", FG_OAI_R, FG_OAI_T_STRING, fg_oai_field_any,
      NULL },
    { "prompt_cache_options", FG_OAI_R, FG_OAI_T_OBJECT, fg_oai_field_any,
      NULL },
    { "safety_identifier", FG_OAI_R, FG_OAI_T_STRING, fg_oai_field_any,
      NULL },

    /* extensions the chat endpoint takes too (vLLM's, and the chat's own
     * seed and stop, which OpenAI's Responses API lacks) */
    { "seed", FG_OAI_R, FG_OAI_T_INTEGER, fg_oai_field_seed, NULL },
    { "stop", FG_OAI_R, FG_OAI_T_ANY, fg_oai_field_stop, NULL },
    { "top_k", FG_OAI_R, FG_OAI_T_INTEGER, fg_oai_field_top_k, NULL },
    { "ignore_eos", FG_OAI_R, FG_OAI_T_ANY, fg_oai_field_flag, NULL },

    /* refused */
    { "previous_response_id", FG_OAI_R, FG_OAI_T_ANY, fg_oai_field_refuse,
      FG_OAI_NOT_STORED },
    { "conversation", FG_OAI_R, FG_OAI_T_ANY, fg_oai_field_refuse,
      FG_OAI_NOT_STORED },
    { "prompt", FG_OAI_R, FG_OAI_T_ANY, fg_oai_field_refuse,
      "stored prompt templates are not supported: send the prompt in "
      "'input' and 'instructions'" },
    { "context_management", FG_OAI_R, FG_OAI_T_ANY, fg_oai_field_refuse,
      "context compaction is not supported" },
    { "moderation", FG_OAI_R, FG_OAI_T_ANY, fg_oai_field_refuse,
      "moderation is not supported" },

    /* the chat's names, said where they belong */
    { "messages", FG_OAI_R, FG_OAI_T_ANY, fg_oai_field_refuse,
      "/v1/responses takes 'input' (and 'instructions'); 'messages' "
      "belongs to /v1/chat/completions" },
    { "max_tokens", FG_OAI_R, FG_OAI_T_ANY, fg_oai_field_refuse,
      "/v1/responses takes 'max_output_tokens'" },
    { "response_format", FG_OAI_R, FG_OAI_T_ANY, fg_oai_field_refuse,
      "/v1/responses takes 'text.format'" },

    { NULL, 0, FG_OAI_T_ANY, NULL, NULL }
};


/* input and instructions are read once every field is: see build below */

static int
fg_oai_resp_input(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    (void) why;

    if (!json_is_string(v) && !json_is_array(v)) {
        return fg_oai_bad_type(p, key, "a string or an array of input items",
                               v);
    }

    p->input = v;

    return 0;
}


static int
fg_oai_resp_instructions(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    (void) key;
    (void) why;

    p->instructions = v;

    return 0;
}


/* the request's echo, made with the first field that needs it */
static fg_oai_responses_t *
fg_oai_resp_echo(fg_oai_parse_t *p)
{
    fg_oai_responses_t  *e;

    e = p->req->responses;

    if (e == NULL) {
        e = fg_oai_alloc(p->req, sizeof(fg_oai_responses_t));
        if (e == NULL) {
            (void) fg_oai_nomem(p);
            return NULL;
        }

        memset(e, 0, sizeof(fg_oai_responses_t));
        e->parallel_tool_calls = 1;
        p->req->responses = e;
    }

    return e;
}


/* up to 16 pairs of strings, kept to be said back */
static int
fg_oai_resp_metadata(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    char                 param[96];
    size_t               i, n;
    json_t              *x;
    const char          *k;
    fg_oai_str_t        *kv;
    fg_oai_responses_t  *e;

    (void) why;

    n = json_object_size(v);

    if (n > FG_OAI_META_PAIRS) {
        return fg_oai_fail(p, "object_above_max_properties", key,
                           "Invalid 'metadata': at most %d keys, got %zu.",
                           FG_OAI_META_PAIRS, n);
    }

    e = fg_oai_resp_echo(p);
    if (e == NULL || n == 0) {
        return e == NULL ? -1 : 0;
    }

    kv = fg_oai_alloc(p->req, 2 * n * sizeof(fg_oai_str_t));
    if (kv == NULL) {
        return fg_oai_nomem(p);
    }

    i = 0;

    json_object_foreach(v, k, x) {
        snprintf(param, sizeof(param), "metadata.%.64s", k);

        if (!json_is_string(x)) {
            return fg_oai_bad_type(p, param, "a string", x);
        }

        if (strlen(k) > FG_OAI_META_KEY
            || json_string_length(x) > FG_OAI_META_VALUE)
        {
            return fg_oai_fail(p, "string_above_max_length", param,
                               "Invalid '%s': keys are at most %d "
                               "characters, values at most %d.", param,
                               FG_OAI_META_KEY, FG_OAI_META_VALUE);
        }

        if (fg_oai_copy(p, &kv[2 * i], k, strlen(k)) != 0
            || fg_oai_copy(p, &kv[2 * i + 1], json_string_value(x),
                           json_string_length(x))
               != 0)
        {
            return -1;
        }

        i++;
    }

    e->metadata = kv;
    e->n_metadata = n;

    return 0;
}


/* a structured format, kept to be said back in the Response */
static int
fg_oai_resp_format(fg_oai_parse_t *p, json_t *format)
{
    int                  rc;
    char                *text;
    fg_oai_responses_t  *e;

    if (p->req->grammar.data == NULL) {
        return 0;
    }

    e = fg_oai_resp_echo(p);
    text = e ? json_dumps(format, JSON_COMPACT|JSON_PRESERVE_ORDER) : NULL;

    if (text == NULL) {
        return e ? fg_oai_nomem(p) : -1;
    }

    rc = fg_oai_copy(p, &e->format, text, strlen(text));
    free(text);

    return rc;
}


/* text: {"format": ...}: text, json_object, json_schema (flat) */
static int
fg_oai_resp_text(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    json_t      *x;
    const char  *k;

    (void) key;
    (void) why;

    json_object_foreach(v, k, x) {

        if (strcmp(k, "verbosity") == 0 && !json_is_null(x)) {
            return fg_oai_fail(p, "unsupported_parameter", "text.verbosity",
                               "Unsupported parameter: 'text.verbosity': "
                               "the models served have no verbosity "
                               "setting.");
        }

        if (strcmp(k, "verbosity") == 0 || json_is_null(x)) {
            continue;
        }

        if (strcmp(k, "format") != 0) {
            return fg_oai_fail(p, "unknown_parameter", "text",
                               "Unrecognized argument in 'text': %.64s", k);
        }

        if (!json_is_object(x)) {
            return fg_oai_bad_type(p, "text.format", "an object", x);
        }

        if (fg_oai_format(p, "text.format", x, 1) != 0
            || fg_oai_resp_format(p, x) != 0)
        {
            return -1;
        }
    }

    return 0;
}


/* reasoning: the models served do not reason; effort null or "none" */
static int
fg_oai_resp_reasoning(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    char         param[64];
    json_t      *x;
    const char  *k;

    (void) key;
    (void) why;

    json_object_foreach(v, k, x) {
        snprintf(param, sizeof(param), "reasoning.%.40s", k);

        if (json_is_null(x)
            || (strcmp(k, "effort") == 0 && json_is_string(x)
                && strcmp(json_string_value(x), "none") == 0))
        {
            continue;
        }

        return fg_oai_fail(p, "unsupported_parameter", param,
                           "Unsupported parameter: '%s': the models served "
                           "do not reason; only null is accepted.", param);
    }

    return 0;
}


/* the functions, as the chat's (fg_openai_resp_tools.c) */
static int
fg_oai_resp_field_tools(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    fg_oai_responses_t  *e;

    (void) why;

    e = fg_oai_resp_echo(p);

    return e ? fg_oai_resp_tools(p, e, key, v) : -1;
}


static int
fg_oai_resp_field_tool_choice(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    fg_oai_responses_t  *e;

    (void) why;

    e = fg_oai_resp_echo(p);

    return e ? fg_oai_resp_tool_choice(p, e, key, v) : -1;
}


static int
fg_oai_resp_parallel(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    int                  b, rc;
    fg_oai_responses_t  *e;

    (void) why;

    rc = fg_oai_bool(p, key, v, &b);
    if (rc != 0) {
        return rc < 0 ? -1 : 0;
    }

    e = fg_oai_resp_echo(p);
    if (e == NULL) {
        return -1;
    }

    e->parallel_tool_calls = b;
    p->req->parallel_tool_calls = b;

    return 0;
}


/*
 * "auto" would drop the input's first items when it passes the context:
 * here such an input is refused (context_length_exceeded) instead, and an
 * input that fits is served the same either way.
 */
static int
fg_oai_resp_truncation(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    const char          *s;
    fg_oai_responses_t  *e;

    (void) why;

    s = json_string_value(v);

    if (strcmp(s, "auto") != 0 && strcmp(s, "disabled") != 0) {
        return fg_oai_fail(p, "invalid_value", key,
                           "Invalid value: '%.64s'. Supported values are: "
                           "'auto' and 'disabled'.", s);
    }

    e = fg_oai_resp_echo(p);
    if (e == NULL) {
        return -1;
    }

    e->truncation_auto = (s[0] == 'a');

    return 0;
}


/* extra output (logprobs, reasoning, tool results): none to include */
static int
fg_oai_resp_include(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    char     param[48];
    json_t  *x;

    (void) why;

    if (json_array_size(v) == 0) {
        return 0;
    }

    x = json_array_get(v, 0);
    snprintf(param, sizeof(param), "%s[0]", key);

    if (!json_is_string(x)) {
        return fg_oai_bad_type(p, param, "a string", x);
    }

    return fg_oai_fail(p, "unsupported_value", param,
                       "Invalid '%s': '%.64s' cannot be included: fairgate "
                       "returns the output text only.", param,
                       json_string_value(x));
}


/*
 * Once every field is read: the instructions, then the input, as the
 * chat's messages; the echo the Response says back.
 */
int
fg_oai_responses_build(fg_oai_parse_t *p)
{
    size_t               len;
    fg_oai_responses_t  *e;

    e = fg_oai_resp_echo(p);
    if (e == NULL) {
        return -1;
    }

    if (p->instructions != NULL) {
        len = json_string_length(p->instructions);

        if (len > p->lim->max_text) {
            return fg_oai_fail(p, "string_above_max_length", "instructions",
                               "Invalid 'instructions': longer than the %zu "
                               "bytes allowed.", p->lim->max_text);
        }

        p->text += len;

        if (fg_oai_copy(p, &e->instructions,
                        json_string_value(p->instructions), len)
            != 0)
        {
            return -1;
        }
    }

    if (fg_oai_input_messages(p, &e->instructions) != 0) {
        return -1;
    }

    /* the calls and their outputs answer each other, as a chat's */
    return fg_oai_input_calls_check(p);
}
