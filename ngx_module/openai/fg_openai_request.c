
/*
 * fairgate: OpenAI request bodies: parse (jansson), validate, copy out.
 *
 * The body is parsed into a tree, every top-level field is looked up in
 * one table saying for which endpoint it is valid and how it is checked,
 * and what the request keeps is copied into memory owned by the request,
 * so the tree is freed before returning.  A key that is in no row of the
 * table is refused as OpenAI refuses it ("Unrecognized request argument
 * supplied"): a client that sends a field expects it to do something.
 *
 * This file holds the table of chat and completions and the walk over the
 * body; /v1/responses has its own table (fg_openai_responses.c, its input
 * in fg_openai_input.c), walked the same way.  The checks are in
 * fg_openai_params.c (the fields fairgate implements),
 * fg_openai_sampling.c (the logits' adjustments, logprobs, echo),
 * fg_openai_messages.c (chat), fg_openai_prompt.c (completions) and
 * fg_openai_unsupported.c (fields accepted only with harmless values, and
 * those refused), and the helpers they share (errors, memory) in
 * fg_openai_check.c, below them all.
 *
 * jansson, not the allocation-free scanner (fg_json.c): the request keeps
 * decoded copies of its strings, refuses duplicate keys and looks fields
 * up in any order; next to tokenizing and generating, building the tree
 * costs nothing that matters.
 */


#include <stdlib.h>
#include <string.h>

#include "fg_openai_request_int.h"


/*
 * Every field fairgate knows.  Rows with fg_oai_field_refuse are OpenAI fields
 * that would change the output and that fairgate does not support: any
 * value but null is a 400.  The rows after "harmless" change nothing here
 * with the values they are allowed.
 */
static const fg_oai_field_t  fg_oai_fields[] = {

    { "model", FG_OAI_K_BOTH, FG_OAI_T_ANY, fg_oai_field_model, NULL },
    { "messages", FG_OAI_K_CHAT, FG_OAI_T_ANY, fg_oai_field_messages, NULL },
    { "prompt", FG_OAI_K_COMPLETION, FG_OAI_T_ANY, fg_oai_field_prompt, NULL },
    { "max_tokens", FG_OAI_K_BOTH, FG_OAI_T_INTEGER,
      fg_oai_field_max_tokens, NULL },
    { "max_completion_tokens", FG_OAI_K_CHAT, FG_OAI_T_INTEGER,
      fg_oai_field_max_tokens, NULL },
    { "temperature", FG_OAI_K_BOTH, FG_OAI_T_ANY,
      fg_oai_field_temperature, NULL },
    { "top_p", FG_OAI_K_BOTH, FG_OAI_T_ANY, fg_oai_field_top_p, NULL },
    { "seed", FG_OAI_K_BOTH, FG_OAI_T_INTEGER, fg_oai_field_seed, NULL },
    { "stop", FG_OAI_K_BOTH, FG_OAI_T_ANY, fg_oai_field_stop, NULL },
    { "stream", FG_OAI_K_BOTH, FG_OAI_T_ANY, fg_oai_field_flag, NULL },
    { "stream_options", FG_OAI_K_BOTH, FG_OAI_T_OBJECT,
      fg_oai_field_stream_options, NULL },
    { "user", FG_OAI_K_BOTH, FG_OAI_T_ANY, fg_oai_field_user, NULL },
    { "n", FG_OAI_K_BOTH, FG_OAI_T_INTEGER, fg_oai_field_n, NULL },

    /* tool calling (fg_openai_tools.c) */
    { "tools", FG_OAI_K_CHAT, FG_OAI_T_ARRAY, fg_oai_field_tools, NULL },
    { "tool_choice", FG_OAI_K_CHAT, FG_OAI_T_ANY,
      fg_oai_field_tools_choice, NULL },
    { "parallel_tool_calls", FG_OAI_K_CHAT, FG_OAI_T_ANY,
      fg_oai_field_parallel_tool_calls, NULL },
    { "functions", FG_OAI_K_CHAT, FG_OAI_T_ANY, fg_oai_field_functions,
      NULL },
    { "function_call", FG_OAI_K_CHAT, FG_OAI_T_ANY, fg_oai_field_functions,
      NULL },

    /* extensions, as vLLM names them: the engine has both */
    { "top_k", FG_OAI_K_BOTH, FG_OAI_T_INTEGER, fg_oai_field_top_k, NULL },
    { "ignore_eos", FG_OAI_K_BOTH, FG_OAI_T_ANY,
      fg_oai_field_flag, NULL },

    /* adjustments, log-probabilities, echo (fg_openai_sampling.c) */
    { "frequency_penalty", FG_OAI_K_BOTH, FG_OAI_T_NUMBER,
      fg_oai_field_penalty, NULL },
    { "presence_penalty", FG_OAI_K_BOTH, FG_OAI_T_NUMBER,
      fg_oai_field_penalty, NULL },
    { "logit_bias", FG_OAI_K_BOTH, FG_OAI_T_OBJECT,
      fg_oai_field_logit_bias, NULL },
    { "logprobs", FG_OAI_K_BOTH, FG_OAI_T_ANY, fg_oai_field_logprobs, NULL },
    { "top_logprobs", FG_OAI_K_CHAT, FG_OAI_T_INTEGER,
      fg_oai_field_top_logprobs, NULL },
    { "repetition_penalty", FG_OAI_K_BOTH, FG_OAI_T_NUMBER,
      fg_oai_field_repetition, NULL },
    { "min_p", FG_OAI_K_BOTH, FG_OAI_T_NUMBER, fg_oai_field_min_p, NULL },

    /* harmless with these values */
    { "metadata", FG_OAI_K_BOTH, FG_OAI_T_OBJECT, fg_oai_field_any, NULL },
    { "store", FG_OAI_K_BOTH, FG_OAI_T_ANY, fg_oai_field_any_bool, NULL },
    { "service_tier", FG_OAI_K_BOTH, FG_OAI_T_STRING, fg_oai_field_any, NULL },
    { "prompt_cache_key", FG_OAI_K_BOTH, FG_OAI_T_STRING,
      fg_oai_field_any, NULL },
    { "safety_identifier", FG_OAI_K_BOTH, FG_OAI_T_STRING,
      fg_oai_field_any, NULL },
    { "response_format", FG_OAI_K_CHAT, FG_OAI_T_OBJECT,
      fg_oai_field_response_format, NULL },
    { "grammar", FG_OAI_K_BOTH, FG_OAI_T_STRING, fg_oai_field_grammar,
      NULL },
    { "modalities", FG_OAI_K_CHAT, FG_OAI_T_ARRAY,
      fg_oai_field_modalities, NULL },
    { "echo", FG_OAI_K_COMPLETION, FG_OAI_T_ANY, fg_oai_field_echo, NULL },
    { "best_of", FG_OAI_K_COMPLETION, FG_OAI_T_INTEGER,
      fg_oai_field_best_of, NULL },
    { "suffix", FG_OAI_K_COMPLETION, FG_OAI_T_STRING,
      fg_oai_field_empty_string, NULL },

    /* refused */
    { "audio", FG_OAI_K_CHAT, FG_OAI_T_ANY, fg_oai_field_refuse,
      "audio output is not supported" },
    { "prediction", FG_OAI_K_CHAT, FG_OAI_T_ANY, fg_oai_field_refuse,
      "predicted outputs are not supported" },
    { "reasoning_effort", FG_OAI_K_CHAT, FG_OAI_T_ANY, fg_oai_field_refuse,
      "the models served have no reasoning effort setting" },
    { "verbosity", FG_OAI_K_CHAT, FG_OAI_T_ANY, fg_oai_field_refuse,
      "the models served have no verbosity setting" },
    { "web_search_options", FG_OAI_K_CHAT, FG_OAI_T_ANY, fg_oai_field_refuse,
      "web search is not supported" },

    { NULL, 0, FG_OAI_T_ANY, NULL, NULL }
};


void
fg_oai_limits_init(fg_oai_limits_t *lim)
{
    lim->max_body = 4 * 1024 * 1024;
    lim->max_messages = 1024;
    lim->max_parts = 64;
    lim->max_text = 2 * 1024 * 1024;
    lim->max_model = 256;
    lim->max_user = 256;
    lim->max_stop_len = FG_OAI_STOP_MAX_LEN;
    lim->max_prompt_ids = 131072;
    lim->max_tokens = 1048576;
    lim->n_vocab = 0;
}


const char *
fg_oai_role_name(fg_oai_role_e role)
{
    switch (role) {
    case FG_OAI_SYSTEM:
        return "system";
    case FG_OAI_DEVELOPER:
        return "developer";
    case FG_OAI_USER:
        return "user";
    case FG_OAI_ASSISTANT:
        return "assistant";
    case FG_OAI_TOOL:
        return "tool";
    }

    return "unknown";
}


static json_t *
fg_oai_load(const char *body, size_t len, const fg_oai_limits_t *lim,
    fg_oai_error_t *err)
{
    json_t        *root;
    json_error_t   jerr;

    if (len > lim->max_body) {
        fg_oai_error_set(err, 413, "request_too_large", NULL,
                         "The request body of %zu bytes is larger than "
                         "the %zu bytes allowed.", len, lim->max_body);
        return NULL;
    }

    /* jansson answers an empty body "wrong arguments" (line -1) */
    if (len == 0) {
        fg_oai_error_set(err, 400, "invalid_json", NULL,
                         "The request has no body: a JSON object was "
                         "expected.");
        return NULL;
    }

    /* duplicate keys are refused: another reader of the same body (a
     * proxy, the drop-in scanner) could take the other copy */
    root = json_loadb(body, len, JSON_REJECT_DUPLICATES|JSON_DECODE_ANY,
                      &jerr);

    if (root == NULL) {
        fg_oai_error_set(err, 400, "invalid_json", NULL,
                         "We could not parse the JSON body of your "
                         "request: %s (line %d, column %d).", jerr.text,
                         jerr.line, jerr.column);
        return NULL;
    }

    if (!json_is_object(root)) {
        fg_oai_error_set(err, 400, "invalid_type", NULL,
                         "The request body must be a JSON object, not %s.",
                         fg_oai_type_name(root));
        json_decref(root);
        return NULL;
    }

    return root;
}


/* each key of the body, looked up in the table and checked */
static int
fg_oai_fields_check(fg_oai_parse_t *p, json_t *root)
{
    int                    rc;
    json_t                *v;
    const char            *key;
    const fg_oai_field_t  *f, *table;

    /* /v1/responses and /v1/embeddings have tables of their own: their
     * fields are other fields */
    table = (p->kind == FG_OAI_K_RESPONSES) ? fg_oai_responses_fields
            : (p->kind == FG_OAI_K_EMBEDDING) ? fg_oai_embedding_fields
            : fg_oai_fields;

    json_object_foreach(root, key, v) {

        for (f = table; f->name; f++) {
            if (strcmp(f->name, key) == 0) {
                break;
            }
        }

        if (f->name == NULL) {
            return fg_oai_fail(p, "unknown_parameter", key,
                               "Unrecognized request argument supplied: "
                               "%s", key);
        }

        if (!(f->kinds & p->kind)) {
            return fg_oai_fail(p, "unknown_parameter", key,
                               "Unrecognized request argument supplied: %s "
                               "(it belongs to %s)", key,
                               (f->kinds & FG_OAI_K_CHAT)
                               ? "/v1/chat/completions" : "/v1/completions");
        }

        rc = fg_oai_typed(p, key, v, f->type);

        if (rc == 0) {
            rc = f->check(p, key, v, f->why);
        }

        if (rc < 0) {
            return -1;
        }
    }

    return 0;
}


/* what no single field can say: required fields, fields that agree */
static int
fg_oai_request_check(fg_oai_parse_t *p, json_t *root)
{
    const char        *need;
    fg_oai_request_t  *r;

    r = p->req;
    need = (r->kind == FG_OAI_CHAT) ? "messages"
           : (r->kind == FG_OAI_RESPONSES || r->kind == FG_OAI_EMBEDDING)
             ? "input" : "prompt";

    if (r->model.data == NULL) {
        return fg_oai_fail(p, "missing_required_parameter", "model",
                           "Missing required parameter: 'model'.");
    }

    if (json_object_get(root, need) == NULL) {
        return fg_oai_fail(p, "missing_required_parameter", need,
                           "Missing required parameter: '%s'.", need);
    }

    if (p->stream_options && !r->stream) {
        return fg_oai_fail(p, "invalid_value", "stream_options",
                           "The 'stream_options' parameter is only "
                           "allowed when 'stream' is enabled.");
    }

    if (fg_oai_sampling_check(p) != 0) {
        return -1;
    }

    if (p->max_tokens >= 0 && p->max_completion >= 0
        && p->max_tokens != p->max_completion)
    {
        return fg_oai_fail(p, "invalid_value", "max_completion_tokens",
                           "max_tokens (%lld) and max_completion_tokens "
                           "(%lld) disagree: give one of them.",
                           (long long) p->max_tokens,
                           (long long) p->max_completion);
    }

    if (fg_oai_choices_check(p) != 0) {
        return -1;
    }

    if (fg_oai_tools_check(p) != 0) {
        return -1;
    }

    return fg_oai_format_tools(p);
}


fg_oai_request_t *
fg_oai_request_parse(fg_oai_kind_e kind, const char *body, size_t len,
    const fg_oai_limits_t *lim, fg_oai_error_t *err)
{
    int                rc;
    json_t            *root;
    fg_oai_parse_t     p;
    fg_oai_request_t  *r;

    root = fg_oai_load(body, len, lim, err);
    if (root == NULL) {
        return NULL;
    }

    r = calloc(1, sizeof(fg_oai_request_t));
    if (r == NULL) {
        fg_oai_error_set(err, 500, NULL, NULL, "out of memory");
        json_decref(root);
        return NULL;
    }

    r->kind = kind;
    r->temperature = 1.0f;
    r->top_p = 1.0f;
    r->repetition_penalty = 1.0f;
    r->parallel_tool_calls = 1;
    r->n = 1;
    r->max_tokens = (kind == FG_OAI_COMPLETION) ? 16 : 0;

    memset(&p, 0, sizeof(fg_oai_parse_t));
    p.req = r;
    p.lim = lim;
    p.err = err;
    p.kind = (kind == FG_OAI_CHAT) ? FG_OAI_K_CHAT
             : (kind == FG_OAI_RESPONSES) ? FG_OAI_K_RESPONSES
             : (kind == FG_OAI_EMBEDDING) ? FG_OAI_K_EMBEDDING
             : FG_OAI_K_COMPLETION;
    p.max_tokens = -1;
    p.max_completion = -1;

    rc = fg_oai_fields_check(&p, root);

    if (rc == 0) {
        rc = fg_oai_request_check(&p, root);
    }

    if (rc == 0 && kind == FG_OAI_RESPONSES) {
        rc = fg_oai_responses_build(&p);
    }

    json_decref(root);

    if (rc != 0) {
        fg_oai_request_free(r);
        return NULL;
    }

    if (p.top_p_zero) {
        r->temperature = 0.0f;
        r->top_p = 1.0f;
    }

    return r;
}
