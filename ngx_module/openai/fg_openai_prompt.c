
/*
 * fairgate: the prompt of POST /v1/completions: text, or token ids that
 * go to the engine as they are (each checked against the vocabulary).
 */

#include <stdio.h>

#include "fg_openai_request_int.h"


/* token ids: an array of integers, each a token of the vocabulary */
static int
fg_oai_prompt_ids(fg_oai_parse_t *p, const char *param, json_t *v)
{
    char      where[96];
    size_t    i, n;
    json_t   *x;
    int32_t  *ids;
    int64_t   id, max;

    n = json_array_size(v);

    ids = fg_oai_array(p, param, n, p->lim->max_prompt_ids, sizeof(int32_t));
    if (ids == NULL) {
        return -1;
    }

    max = p->lim->n_vocab ? (int64_t) p->lim->n_vocab - 1 : INT32_MAX;

    json_array_foreach(v, i, x) {
        snprintf(where, sizeof(where), "%s[%zu]", param, i);

        if (!json_is_integer(x)) {
            return fg_oai_bad_type(p, where, "an integer (a token id)", x);
        }

        id = json_integer_value(x);

        if (id < 0 || id > max) {
            return fg_oai_fail(p, "invalid_value", where,
                               "Invalid '%s': token id %lld is not in "
                               "[0, %lld].", where, (long long) id,
                               (long long) max);
        }

        ids[i] = (int32_t) id;
    }

    p->req->prompt_ids = ids;
    p->req->n_prompt_ids = n;

    return 0;
}


/*
 * A string, or one string in an array, or token ids ([1, 2] or [[1, 2]]).
 * Several prompts in one request would be several choices: one per
 * request, as n is.
 */
int
fg_oai_field_prompt(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    json_t  *first;

    (void) why;

    if (json_is_string(v)) {
        if (json_string_length(v) > p->lim->max_text) {
            return fg_oai_fail(p, "string_above_max_length", key,
                               "Invalid 'prompt': the prompt passes the %zu "
                               "bytes allowed.", p->lim->max_text);
        }

        return fg_oai_copy(p, &p->req->prompt, json_string_value(v),
                           json_string_length(v));
    }

    if (!json_is_array(v)) {
        return fg_oai_bad_type(p, key, "a string or an array", v);
    }

    if (fg_oai_array_size(p, key, json_array_size(v), SIZE_MAX) != 0) {
        return -1;
    }

    first = json_array_get(v, 0);

    if (json_is_integer(first)) {
        return fg_oai_prompt_ids(p, key, v);
    }

    if (json_array_size(v) > 1) {
        return fg_oai_fail(p, "unsupported_value", key,
                           "Only one prompt per request is supported (n = "
                           "1): send the prompts as separate requests.");
    }

    if (json_is_string(first)) {
        return fg_oai_field_prompt(p, "prompt[0]", first, NULL);
    }

    if (json_is_array(first)) {
        return fg_oai_prompt_ids(p, "prompt[0]", first);
    }

    return fg_oai_bad_type(p, "prompt[0]",
                           "a string, a token id or an array of token ids",
                           first);
}
