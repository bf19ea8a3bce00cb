
/*
 * fairgate: the fields of POST /v1/embeddings, as OpenAI takes them, in a
 * table of their own (the walk of fg_openai_request.c takes it for this
 * endpoint; any other key is an unknown argument there):
 *
 *     input            a string, an array of strings, an array of token
 *                      ids, or an array of arrays of token ids; at most
 *                      FG_OAI_MAX_INPUTS inputs, none empty (OpenAI
 *                      refuses an empty string: no token, no vector)
 *     encoding_format  "float" (the default) or "base64"
 *     dimensions       an integer of at least 1; whether the model has
 *                      that width is the glue's check, which knows it
 *
 * model and user are the other endpoints' checks (fg_openai_params.c).
 */

#include <stdio.h>
#include <string.h>

#include "fg_openai_request_int.h"


static fg_oai_field_fn  fg_oai_field_input;
static fg_oai_field_fn  fg_oai_field_encoding_format;
static fg_oai_field_fn  fg_oai_field_dimensions;


const fg_oai_field_t  fg_oai_embedding_fields[] = {

    { "model", FG_OAI_K_EMBEDDING, FG_OAI_T_ANY, fg_oai_field_model, NULL },
    { "input", FG_OAI_K_EMBEDDING, FG_OAI_T_ANY, fg_oai_field_input, NULL },
    { "encoding_format", FG_OAI_K_EMBEDDING, FG_OAI_T_STRING,
      fg_oai_field_encoding_format, NULL },
    { "dimensions", FG_OAI_K_EMBEDDING, FG_OAI_T_INTEGER,
      fg_oai_field_dimensions, NULL },
    { "user", FG_OAI_K_EMBEDDING, FG_OAI_T_ANY, fg_oai_field_user, NULL },

    { NULL, 0, FG_OAI_T_ANY, NULL, NULL }
};


static int
fg_oai_input_invalid(fg_oai_parse_t *p, const char *where, const char *why)
{
    return fg_oai_fail(p, "invalid_value", "input",
                       "'$.input' is invalid: %s %s.", where, why);
}


/* one text input: not empty, and within the request's text */
static int
fg_oai_input_text(fg_oai_parse_t *p, const char *where, json_t *v,
    fg_oai_input_t *in)
{
    size_t  len;

    len = json_string_length(v);

    if (len == 0) {
        return fg_oai_input_invalid(p, where, "is an empty string; every "
                                    "input must have at least one token");
    }

    p->text += len;

    if (p->text > p->lim->max_text) {
        return fg_oai_fail(p, "string_above_max_length", "input",
                           "Invalid 'input': the inputs pass the %zu bytes "
                           "allowed.", p->lim->max_text);
    }

    return fg_oai_copy(p, &in->text, json_string_value(v), len);
}


/* one input of token ids: integers of the vocabulary, at least one */
static int
fg_oai_input_ids(fg_oai_parse_t *p, const char *where, json_t *v,
    fg_oai_input_t *in)
{
    char      at[96];
    size_t    i, n;
    json_t   *x;
    int64_t   id, max;

    n = json_array_size(v);

    if (n == 0) {
        return fg_oai_input_invalid(p, where, "is an empty array of token "
                                    "ids");
    }

    in->ids = fg_oai_array(p, where, n, p->lim->max_prompt_ids,
                           sizeof(int32_t));
    if (in->ids == NULL) {
        return -1;
    }

    max = p->lim->n_vocab ? (int64_t) p->lim->n_vocab - 1 : INT32_MAX;

    json_array_foreach(v, i, x) {
        snprintf(at, sizeof(at), "%s[%zu]", where, i);

        if (!json_is_integer(x)) {
            return fg_oai_bad_type(p, at, "an integer (a token id)", x);
        }

        id = json_integer_value(x);

        if (id < 0 || id > max) {
            return fg_oai_fail(p, "invalid_value", at,
                               "Invalid '%s': token id %lld is not in "
                               "[0, %lld].", at, (long long) id,
                               (long long) max);
        }

        in->ids[i] = (int32_t) id;
    }

    in->n_ids = n;

    return 0;
}


/* an array: of strings, of token id arrays, or one array of token ids */
static int
fg_oai_input_array(fg_oai_parse_t *p, const char *key, json_t *v)
{
    int              rc;
    char             where[96];
    size_t           i, n;
    json_t          *x, *first;
    fg_oai_input_t  *in;

    n = json_array_size(v);
    first = json_array_get(v, 0);

    if (n && json_is_integer(first)) {
        in = fg_oai_array(p, key, 1, 1, sizeof(fg_oai_input_t));
        if (in == NULL) {
            return -1;
        }

        memset(in, 0, sizeof(fg_oai_input_t));
        p->req->inputs = in;
        p->req->n_inputs = 1;

        return fg_oai_input_ids(p, key, v, in);
    }

    in = fg_oai_array(p, key, n, FG_OAI_MAX_INPUTS, sizeof(fg_oai_input_t));
    if (in == NULL) {
        return -1;
    }

    memset(in, 0, n * sizeof(fg_oai_input_t));
    p->req->inputs = in;
    p->req->n_inputs = n;

    json_array_foreach(v, i, x) {
        snprintf(where, sizeof(where), "%s[%zu]", key, i);

        if (json_is_string(first) && json_is_string(x)) {
            rc = fg_oai_input_text(p, where, x, &in[i]);

        } else if (json_is_array(first) && json_is_array(x)) {
            rc = fg_oai_input_ids(p, where, x, &in[i]);

        } else {
            rc = fg_oai_bad_type(p, where, json_is_array(first)
                                 ? "an array of token ids (as input[0])"
                                 : json_is_string(first)
                                 ? "a string (as input[0])"
                                 : "a string or an array of token ids", x);
        }

        if (rc != 0) {
            return -1;
        }
    }

    return 0;
}


static int
fg_oai_field_input(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    fg_oai_input_t  *in;

    (void) why;

    if (json_is_string(v)) {
        in = fg_oai_array(p, key, 1, 1, sizeof(fg_oai_input_t));
        if (in == NULL) {
            return -1;
        }

        memset(in, 0, sizeof(fg_oai_input_t));
        p->req->inputs = in;
        p->req->n_inputs = 1;

        return fg_oai_input_text(p, key, v, in);
    }

    if (!json_is_array(v)) {
        return fg_oai_bad_type(p, key, "a string or an array", v);
    }

    return fg_oai_input_array(p, key, v);
}


static int
fg_oai_field_encoding_format(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    const char  *s;

    (void) why;

    s = json_string_value(v);

    if (strcmp(s, "float") == 0) {
        p->req->base64 = 0;
        return 0;
    }

    if (strcmp(s, "base64") == 0) {
        p->req->base64 = 1;
        return 0;
    }

    return fg_oai_fail(p, "invalid_value", key,
                       "Invalid value for 'encoding_format': expected "
                       "'float' or 'base64', got '%.64s'.", s);
}


static int
fg_oai_field_dimensions(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    json_int_t  n;

    (void) why;

    n = json_integer_value(v);

    if (n < 1 || n > 1048576) {
        return fg_oai_fail(p, "invalid_value", key,
                           "Invalid 'dimensions': %lld is not in [1, "
                           "1048576].", (long long) n);
    }

    p->req->dimensions = (uint32_t) n;

    return 0;
}
