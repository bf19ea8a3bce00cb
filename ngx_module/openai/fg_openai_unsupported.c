
/*
 * fairgate: the OpenAI fields fairgate does not implement.  Some change
 * nothing with the values they are allowed here (tool_choice "none", a
 * "text" response_format ...) and are accepted with those values only;
 * the others would change the output (tools, audio, reasoning effort ...)
 * and any value but null is a 400, never silently ignored.
 */

#include <stdio.h>
#include <string.h>

#include "fg_openai_request_int.h"


/* any value of the field's type: the walk checked it */
int
fg_oai_field_any(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    (void) p;
    (void) key;
    (void) v;
    (void) why;

    return 0;
}


int
fg_oai_field_any_bool(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    int  b;

    (void) why;

    return fg_oai_bool(p, key, v, &b) < 0 ? -1 : 0;
}


int
fg_oai_field_empty_string(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    (void) why;

    if (json_string_length(v) != 0) {
        return fg_oai_fail(p, "unsupported_value", key,
                           "Invalid '%s': text after the completion "
                           "(insertion) is not supported.", key);
    }

    return 0;
}


int
fg_oai_field_response_format(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    json_t      *type, *x;
    const char  *k;

    (void) key;
    (void) why;

    type = json_object_get(v, "type");

    if (type == NULL) {
        return fg_oai_fail(p, "missing_required_parameter",
                           "response_format.type", "Missing required "
                           "parameter: 'response_format.type'.");
    }

    if (!json_is_string(type)) {
        return fg_oai_bad_type(p, "response_format.type", "a string", type);
    }

    if (strcmp(json_string_value(type), "text") != 0) {
        return fg_oai_fail(p, "unsupported_value", "response_format.type",
                           "Invalid 'response_format.type': '%.64s' is not "
                           "supported; fairgate generates free text only "
                           "(\"text\").", json_string_value(type));
    }

    json_object_foreach(v, k, x) {
        if (strcmp(k, "type") != 0) {
            return fg_oai_fail(p, "unsupported_parameter",
                               "response_format", "Invalid "
                               "'response_format': only {\"type\": "
                               "\"text\"} is supported.");
        }
    }

    return 0;
}


int
fg_oai_field_modalities(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    char     param[48];
    size_t   i;
    json_t  *x;

    (void) key;
    (void) why;

    json_array_foreach(v, i, x) {
        snprintf(param, sizeof(param), "modalities[%zu]", i);

        if (!json_is_string(x)) {
            return fg_oai_bad_type(p, param, "a string", x);
        }

        if (strcmp(json_string_value(x), "text") != 0) {
            return fg_oai_fail(p, "unsupported_value", param,
                               "Invalid '%s': only the \"text\" modality "
                               "is supported.", param);
        }
    }

    return 0;
}


int
fg_oai_field_refuse(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    if (json_is_null(v)) {
        return 0;
    }

    return fg_oai_fail(p, "unsupported_parameter", key,
                       "Unsupported parameter: '%s': %s.", key, why);
}


/* a number that fairgate does not apply: only 0 (or null) changes nothing */
int
fg_oai_field_zero(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    (void) why;

    if (json_number_value(v) != 0) {
        return fg_oai_fail(p, "unsupported_value", key,
                           "Invalid '%s': fairgate does not apply %s; only "
                           "0 is accepted, got %g.", key, key,
                           json_number_value(v));
    }

    return 0;
}



int
fg_oai_field_false(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    int  b;

    (void) why;

    if (fg_oai_bool(p, key, v, &b) < 0) {
        return -1;
    }

    if (json_is_true(v)) {
        return fg_oai_fail(p, "unsupported_value", key,
                           "Invalid '%s': only false is supported.", key);
    }

    return 0;
}
