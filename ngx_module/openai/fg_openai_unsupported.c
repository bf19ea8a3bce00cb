
/*
 * fairgate: the OpenAI fields fairgate does not implement.  Some change
 * nothing with the values they are allowed here (an empty suffix, text
 * modalities ...) and are accepted with those values only; the others
 * would change the output (audio, reasoning effort ...) and any value but
 * null is a 400, never silently ignored.  (response_format is structured
 * output's, in fg_openai_format.c.)
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
