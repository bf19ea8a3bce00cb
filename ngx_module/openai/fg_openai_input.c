
/*
 * fairgate: the input of POST /v1/responses, as the chat's messages.
 *
 * The input is a string (one user message) or an array of items.  An item
 * is a message: a role (user, assistant, system, developer) and a content,
 * a string or parts of type input_text or output_text, joined with "\n"
 * as the chat's text parts are; a function call and its output are the
 * chat's tool calls and tool messages (fg_openai_resp_tools.c).  Every
 * other item (an image or file part, reasoning, a reference to a stored
 * item) is refused with a 400 that names it: fairgate serves text and
 * stores no response.  The instructions, when given, are a system message
 * first.
 */


#include <stdio.h>
#include <string.h>

#include "fg_openai_request_int.h"


/* the text of part j of item i, or NULL when it is refused */
static json_t *
fg_oai_input_part(fg_oai_parse_t *p, size_t i, size_t j, json_t *part)
{
    char         param[96];
    json_t      *type, *text, *x;
    const char  *k, *t;

    snprintf(param, sizeof(param), "input[%zu].content[%zu]", i, j);

    if (!json_is_object(part)) {
        fg_oai_bad_type(p, param, "an object", part);
        return NULL;
    }

    type = json_object_get(part, "type");
    t = json_is_string(type) ? json_string_value(type) : "";

    if (strcmp(t, "input_text") != 0 && strcmp(t, "output_text") != 0) {
        snprintf(param, sizeof(param), "input[%zu].content[%zu].type", i, j);
        fg_oai_fail(p, "unsupported_value", param,
                    "Invalid '%s': content parts of type '%.64s' are not "
                    "supported: fairgate serves text only (input_text, "
                    "output_text).", param, t);
        return NULL;
    }

    text = json_object_get(part, "text");

    if (text == NULL || !json_is_string(text)) {
        snprintf(param, sizeof(param), "input[%zu].content[%zu].text", i, j);
        fg_oai_fail(p, "missing_required_parameter", param,
                    "Missing required parameter: '%s' (a string).", param);
        return NULL;
    }

    /* an earlier output's annotations and logprobs, when given back, say
     * nothing the model reads */
    json_object_foreach(part, k, x) {
        if (strcmp(k, "type") == 0 || strcmp(k, "text") == 0
            || ((strcmp(k, "annotations") == 0 || strcmp(k, "logprobs") == 0)
                && (json_is_null(x) || json_is_array(x))))
        {
            continue;
        }

        snprintf(param, sizeof(param), "input[%zu].content[%zu].%.32s", i, j,
                 k);
        fg_oai_fail(p, "unknown_parameter", param,
                    "Unrecognized argument in a text part: %.32s", k);
        return NULL;
    }

    return text;
}


/* an item that is not a message: refused, named */
static int
fg_oai_input_other(fg_oai_parse_t *p, size_t i, const char *type)
{
    char  param[48];

    snprintf(param, sizeof(param), "input[%zu]", i);

    if (strcmp(type, "item_reference") == 0) {
        return fg_oai_fail(p, "unsupported_value", param,
                           "Invalid '%s': an item_reference cannot be "
                           "resolved: fairgate does not store responses. "
                           "Send the item's content instead (with the AI "
                           "SDK: providerOptions: { openai: { store: false "
                           "} }).", param);
    }

    return fg_oai_fail(p, "unsupported_value", param,
                       "Invalid '%s': input items of type '%.64s' are not "
                       "supported: fairgate takes message items of text, "
                       "function_call and function_call_output only.",
                       param, type);
}


static int
fg_oai_input_role(fg_oai_parse_t *p, size_t i, json_t *v, fg_oai_role_e *role)
{
    char         param[48];
    const char  *s;

    snprintf(param, sizeof(param), "input[%zu].role", i);

    if (v == NULL || !json_is_string(v)) {
        return fg_oai_fail(p, "missing_required_parameter", param,
                           "Missing required parameter: '%s' (a string).",
                           param);
    }

    s = json_string_value(v);

    if (strcmp(s, "user") == 0) {
        *role = FG_OAI_USER;

    } else if (strcmp(s, "assistant") == 0) {
        *role = FG_OAI_ASSISTANT;

    } else if (strcmp(s, "system") == 0) {
        *role = FG_OAI_SYSTEM;

    } else if (strcmp(s, "developer") == 0) {
        *role = FG_OAI_DEVELOPER;

    } else {
        return fg_oai_fail(p, "invalid_value", param,
                           "Invalid value: '%.64s'. Supported values are: "
                           "'user', 'assistant', 'system' and "
                           "'developer'.", s);
    }

    return 0;
}


/* item i of the input: a message */
static int
fg_oai_input_item(fg_oai_parse_t *p, size_t i, json_t *item,
    fg_oai_message_t *out)
{
    char         param[96];
    json_t      *type, *content, *x;
    const char  *k;

    snprintf(param, sizeof(param), "input[%zu]", i);

    if (!json_is_object(item)) {
        return fg_oai_bad_type(p, param, "an object", item);
    }

    type = json_object_get(item, "type");

    if (type != NULL && !json_is_string(type)) {
        snprintf(param, sizeof(param), "input[%zu].type", i);
        return fg_oai_bad_type(p, param, "a string", type);
    }

    if (type != NULL && strcmp(json_string_value(type), "message") != 0) {
        return fg_oai_input_other(p, i, json_string_value(type));
    }

    /* an earlier output's id, status and phase change nothing the model
     * reads */
    json_object_foreach(item, k, x) {
        if (strcmp(k, "type") != 0 && strcmp(k, "role") != 0
            && strcmp(k, "content") != 0 && strcmp(k, "id") != 0
            && strcmp(k, "status") != 0 && strcmp(k, "phase") != 0)
        {
            snprintf(param, sizeof(param), "input[%zu].%.64s", i, k);
            return fg_oai_fail(p, "unknown_parameter", param,
                               "Unrecognized argument in a message item: "
                               "%.64s", k);
        }
    }

    if (fg_oai_input_role(p, i, json_object_get(item, "role"), &out->role)
        != 0)
    {
        return -1;
    }

    content = json_object_get(item, "content");

    if (content == NULL) {
        snprintf(param, sizeof(param), "input[%zu].content", i);
        return fg_oai_fail(p, "missing_required_parameter", param,
                           "Missing required parameter: '%s'.", param);
    }

    return fg_oai_content_text(p, "input", i, content, fg_oai_input_part,
                               &out->content);
}


int
fg_oai_input_messages(fg_oai_parse_t *p, const fg_oai_str_t *instructions)
{
    size_t             i, k, n, first;
    json_t            *in, *item;
    fg_oai_message_t  *msgs;

    in = p->input;
    first = (instructions->data != NULL);
    n = json_is_string(in) ? 1 : json_array_size(in);

    if (json_is_array(in)
        && fg_oai_array_size(p, "input", n, p->lim->max_messages) != 0)
    {
        return -1;
    }

    msgs = fg_oai_alloc(p->req, (n + first) * sizeof(fg_oai_message_t));
    if (msgs == NULL) {
        return fg_oai_nomem(p);
    }

    memset(msgs, 0, (n + first) * sizeof(fg_oai_message_t));

    if (first) {
        msgs[0].role = FG_OAI_SYSTEM;
        msgs[0].content = *instructions;
    }

    if (json_is_string(in)) {
        msgs[first].role = FG_OAI_USER;

        if (json_string_length(in) > p->lim->max_text - p->text) {
            return fg_oai_fail(p, "string_above_max_length", "input",
                               "Invalid 'input': the input's text passes "
                               "the %zu bytes allowed.", p->lim->max_text);
        }

        p->text += json_string_length(in);

        if (fg_oai_copy(p, &msgs[first].content, json_string_value(in),
                        json_string_length(in))
            != 0)
        {
            return -1;
        }

        k = first + 1;

    } else {
        k = first;

        json_array_foreach(in, i, item) {
            if (fg_oai_input_is_call(item)) {
                if (fg_oai_input_call(p, i, item, msgs, &k, first) != 0) {
                    return -1;
                }

                continue;
            }

            if (fg_oai_input_item(p, i, item, &msgs[k++]) != 0) {
                return -1;
            }
        }
    }

    p->req->messages = msgs;
    p->req->n_messages = k;

    return 0;
}
