
/*
 * fairgate: the messages of POST /v1/chat/completions.  Each message is
 * a role and a content; a content is a string or text parts, joined into
 * one text that the chat template places.  An assistant's tool calls
 * and a tool message's call id are fg_openai_tools.c's; fields that only
 * audio or the legacy function calling would fill are accepted as null
 * (clients echo them back), the rest refused by name.
 */


#include <stdio.h>
#include <string.h>

#include "fg_openai_request_int.h"


/*
 * obj's member key, named param in errors: NULL when it is missing, or
 * when it must be a string and is not.
 */
static json_t *
fg_oai_member(fg_oai_parse_t *p, json_t *obj, const char *key,
    const char *param, int string)
{
    json_t  *v;

    v = json_object_get(obj, key);

    if (v == NULL) {
        fg_oai_fail(p, "missing_required_parameter", param,
                    "Missing required parameter: '%s'.", param);
        return NULL;
    }

    if (string && !json_is_string(v)) {
        fg_oai_bad_type(p, param, "a string", v);
        return NULL;
    }

    return v;
}


/*
 * Part j of message i's content: {"type": "text", "text": ...}.  Returns
 * its text, or NULL when it is refused.
 */
static json_t *
fg_oai_content_part(fg_oai_parse_t *p, size_t i, size_t j, json_t *part)
{
    char         param[96];
    json_t      *type, *text, *x;
    const char  *k;

    snprintf(param, sizeof(param), "messages[%zu].content[%zu]", i, j);

    if (!json_is_object(part)) {
        fg_oai_bad_type(p, param, "an object", part);
        return NULL;
    }

    snprintf(param, sizeof(param), "messages[%zu].content[%zu].type", i, j);

    type = fg_oai_member(p, part, "type", param, 1);
    if (type == NULL) {
        return NULL;
    }

    if (strcmp(json_string_value(type), "text") != 0) {
        fg_oai_fail(p, "unsupported_value", param,
                    "Content parts of type '%s' are not supported: "
                    "fairgate serves text only.", json_string_value(type));
        return NULL;
    }

    snprintf(param, sizeof(param), "messages[%zu].content[%zu].text", i, j);

    text = fg_oai_member(p, part, "text", param, 1);
    if (text == NULL) {
        return NULL;
    }

    /* after the type: an image part's other keys are no news */
    json_object_foreach(part, k, x) {
        if (strcmp(k, "type") != 0 && strcmp(k, "text") != 0) {
            snprintf(param, sizeof(param), "messages[%zu].content[%zu].%s",
                     i, j, k);
            fg_oai_fail(p, "unknown_parameter", param,
                        "Unrecognized argument in a text part: %s", k);
            return NULL;
        }
    }

    return text;
}


/* the checked parts' texts, len bytes in all, joined with "\n" */
int
fg_oai_content_join(fg_oai_parse_t *p, json_t *parts, size_t len,
    fg_oai_str_t *out)
{
    char    *d;
    size_t   j;
    json_t  *part, *text;

    d = fg_oai_alloc(p->req, len + 1);
    if (d == NULL) {
        return fg_oai_nomem(p);
    }

    out->data = d;
    out->len = len;

    json_array_foreach(parts, j, part) {
        text = json_object_get(part, "text");

        if (j) {
            *d++ = '\n';
        }

        memcpy(d, json_string_value(text), json_string_length(text));
        d += json_string_length(text);
    }

    *d = '\0';

    return 0;
}


/*
 * A message's content (what: "messages"), or a Responses input item's
 * ("input"): a string, or an array of text parts, each checked by part(),
 * joined with "\n" (the parts are separate blocks of text, as vLLM joins
 * them for templates that take a string).
 */
int
fg_oai_content_text(fg_oai_parse_t *p, const char *what, size_t i,
    json_t *v, fg_oai_part_pt part_text, fg_oai_str_t *out)
{
    char     param[96];
    size_t   j, len;
    json_t  *part, *text;

    snprintf(param, sizeof(param), "%s[%zu].content", what, i);

    if (json_is_string(v)) {
        len = json_string_length(v);

        if (len > p->lim->max_text - p->text) {
            goto too_long;
        }

        p->text += len;

        return fg_oai_copy(p, out, json_string_value(v), len);
    }

    if (!json_is_array(v)) {
        return fg_oai_bad_type(p, param,
                               "a string or an array of text parts", v);
    }

    if (fg_oai_array_size(p, param, json_array_size(v), p->lim->max_parts)
        != 0)
    {
        return -1;
    }

    /* first check the parts and count their bytes, then copy */
    len = 0;

    json_array_foreach(v, j, part) {
        text = part_text(p, i, j, part);
        if (text == NULL) {
            return -1;
        }

        len += json_string_length(text) + (j ? 1 : 0);

        if (len > p->lim->max_text - p->text) {
            goto too_long;
        }
    }

    p->text += len;

    return fg_oai_content_join(p, v, len, out);

too_long:

    return fg_oai_fail(p, "string_above_max_length", param,
                       "Invalid '%s': the %s' text passes the %zu bytes "
                       "allowed.", param, what, p->lim->max_text);
}


/* message fields of the legacy function calling and of audio: only null
 * is harmless */
static const char  *fg_oai_message_refused[] = {
    "function_call", "audio", NULL
};


/* the keys of message i other than role and content */
static int
fg_oai_message_keys(fg_oai_parse_t *p, size_t i, json_t *m)
{
    char          param[96];
    json_t       *x;
    const char   *k, **refused;

    json_object_foreach(m, k, x) {
        snprintf(param, sizeof(param), "messages[%zu].%s", i, k);

        /* tool_calls and tool_call_id: fg_oai_message_tools() */
        if (strcmp(k, "role") == 0 || strcmp(k, "content") == 0
            || strcmp(k, "tool_calls") == 0
            || strcmp(k, "tool_call_id") == 0)
        {
            continue;
        }

        /* the templates have no place for a participant's name, and
         * OpenAI's models do read it */
        if (strcmp(k, "name") == 0) {
            return fg_oai_fail(p, "unsupported_parameter", param,
                               "Message names are not supported: the chat "
                               "templates have no place for them.");
        }

        if (strcmp(k, "refusal") == 0) {
            if (json_is_null(x)) {
                continue;
            }

            return fg_oai_fail(p, "unsupported_parameter", param,
                               "Assistant refusals cannot be given back "
                               "to the model.");
        }

        for (refused = fg_oai_message_refused; *refused; refused++) {
            if (strcmp(k, *refused) == 0) {
                break;
            }
        }

        if (*refused == NULL) {
            return fg_oai_fail(p, "unknown_parameter", param,
                               "Unrecognized argument in a message: %s", k);
        }

        if (json_is_null(x)
            || (json_is_array(x) && json_array_size(x) == 0))
        {
            continue;
        }

        return fg_oai_fail(p, "unsupported_parameter", param,
                           "'%s' is not supported: fairgate has no audio "
                           "and no legacy function calling (use "
                           "'tool_calls').", k);
    }

    return 0;
}


/* the role named at param */
static int
fg_oai_message_role(fg_oai_parse_t *p, const char *param, const char *name,
    fg_oai_role_e *role)
{
    if (strcmp(name, "system") == 0) {
        *role = FG_OAI_SYSTEM;

    } else if (strcmp(name, "developer") == 0) {
        *role = FG_OAI_DEVELOPER;

    } else if (strcmp(name, "user") == 0) {
        *role = FG_OAI_USER;

    } else if (strcmp(name, "assistant") == 0) {
        *role = FG_OAI_ASSISTANT;

    } else if (strcmp(name, "tool") == 0) {
        *role = FG_OAI_TOOL;

    } else if (strcmp(name, "function") == 0) {
        return fg_oai_fail(p, "unsupported_value", param,
                           "Messages with role 'function' (the legacy "
                           "function calling) are not supported: use "
                           "'tool' messages.");

    } else {
        return fg_oai_fail(p, "invalid_value", param,
                           "Invalid value: '%.64s'. Supported values are: "
                           "'system', 'developer', 'user', "
                           "'assistant' and 'tool'.", name);
    }

    return 0;
}


static int
fg_oai_message(fg_oai_parse_t *p, size_t i, json_t *m, fg_oai_message_t *out)
{
    char     param[96];
    json_t  *role, *content;

    snprintf(param, sizeof(param), "messages[%zu]", i);

    if (!json_is_object(m)) {
        return fg_oai_bad_type(p, param, "an object", m);
    }

    if (fg_oai_message_keys(p, i, m) != 0) {
        return -1;
    }

    snprintf(param, sizeof(param), "messages[%zu].role", i);

    role = fg_oai_member(p, m, "role", param, 1);
    if (role == NULL) {
        return -1;
    }

    if (fg_oai_message_role(p, param, json_string_value(role), &out->role)
        != 0)
    {
        return -1;
    }

    if (fg_oai_message_tools(p, i, m, out) != 0) {
        return -1;
    }

    /* an assistant's calls may stand without text, as OpenAI allows */
    content = json_object_get(m, "content");

    if (out->n_tool_calls && (content == NULL || json_is_null(content))) {
        out->null_content = 1;
        return fg_oai_copy(p, &out->content, "", 0);
    }

    snprintf(param, sizeof(param), "messages[%zu].content", i);

    content = fg_oai_member(p, m, "content", param, 0);
    if (content == NULL) {
        return -1;
    }

    return fg_oai_content_text(p, "messages", i, content,
                               fg_oai_content_part, &out->content);
}


int
fg_oai_field_messages(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    size_t             i, n;
    json_t            *m;
    fg_oai_message_t  *msgs;

    (void) why;

    if (!json_is_array(v)) {
        return fg_oai_bad_type(p, key, "an array", v);
    }

    n = json_array_size(v);

    msgs = fg_oai_array(p, key, n, p->lim->max_messages,
                        sizeof(fg_oai_message_t));
    if (msgs == NULL) {
        return -1;
    }

    json_array_foreach(v, i, m) {
        if (fg_oai_message(p, i, m, &msgs[i]) != 0) {
            return -1;
        }
    }

    p->req->messages = msgs;
    p->req->n_messages = n;

    return 0;
}
