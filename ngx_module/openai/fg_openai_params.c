
/*
 * fairgate: the request fields fairgate implements, for both endpoints:
 * the model, how many tokens, the sampling parameters (temperature, top_p,
 * and vLLM's top_k and ignore_eos), the seed, stop strings, streaming,
 * user, n.  Each check stores what the request keeps; null is "not
 * given" for every optional field, as at OpenAI.
 */

#include <stdio.h>
#include <string.h>

#include "fg_openai_request_int.h"


/* a string of 1 .. max bytes (max 0: any length) */
static int
fg_oai_string(fg_oai_parse_t *p, const char *param, const json_t *v, size_t min,
    size_t max)
{
    size_t  len;

    if (!json_is_string(v)) {
        return fg_oai_bad_type(p, param, "a string", v);
    }

    len = json_string_length(v);

    if (len < min) {
        return fg_oai_fail(p, "string_below_min_length", param,
                           "Invalid '%s': empty string. Expected a string "
                           "with minimum length %zu, but got an empty "
                           "string instead.", param, min);
    }

    if (max && len > max) {
        return fg_oai_fail(p, "string_above_max_length", param,
                           "Invalid '%s': string too long. Expected a "
                           "string with maximum length %zu, but got a "
                           "string with length %zu instead.", param, max,
                           len);
    }

    return 0;
}


int
fg_oai_field_model(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    (void) why;

    if (fg_oai_string(p, key, v, 1, p->lim->max_model) != 0) {
        return -1;
    }

    return fg_oai_copy(p, &p->req->model, json_string_value(v),
                       json_string_length(v));
}


/* max_tokens, max_completion_tokens and n: 1 at least */
static int
fg_oai_below_one(fg_oai_parse_t *p, const char *key, json_int_t n)
{
    return fg_oai_fail(p, "integer_below_min_value", key,
                       "Invalid '%s': integer below minimum value. "
                       "Expected a value >= 1, but got %lld instead.",
                       key, (long long) n);
}


int
fg_oai_field_max_tokens(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    json_int_t  n;

    (void) why;

    n = json_integer_value(v);

    /* completions' 0 scores the prompt, with echo (fg_oai_sampling_check) */
    if (n < 1 && !(n == 0 && p->req->kind == FG_OAI_COMPLETION)) {
        return fg_oai_below_one(p, key, n);
    }

    if (n > p->lim->max_tokens) {
        return fg_oai_fail(p, "integer_above_max_value", key,
                           "Invalid '%s': integer above maximum value. "
                           "Expected a value <= %u, but got %lld instead.",
                           key, p->lim->max_tokens, (long long) n);
    }

    if (strcmp(key, "max_completion_tokens") == 0) {
        p->max_completion = n;

    } else {
        p->max_tokens = n;
    }

    p->req->max_tokens = (uint32_t) n;
    p->req->has_max_tokens = 1;

    return 0;
}


/* a number in [min, max]; 1 when null (absent), 0 when set */
int
fg_oai_number(fg_oai_parse_t *p, const char *key, json_t *v, double min,
    double max, double *out)
{
    double  d;

    if (json_is_null(v)) {
        return 1;
    }

    if (!json_is_number(v)) {
        return fg_oai_bad_type(p, key, "a number", v);
    }

    d = json_number_value(v);

    if (d < min) {
        return fg_oai_fail(p, "decimal_below_min_value", key,
                           "Invalid '%s': decimal below minimum value. "
                           "Expected a value >= %g, but got %g instead.",
                           key, min, d);
    }

    if (d > max) {
        return fg_oai_fail(p, "decimal_above_max_value", key,
                           "Invalid '%s': decimal above maximum value. "
                           "Expected a value <= %g, but got %g instead.",
                           key, max, d);
    }

    *out = d;

    return 0;
}


int
fg_oai_field_temperature(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    int     rc;
    double  d;

    (void) why;

    rc = fg_oai_number(p, key, v, 0, 2, &d);

    if (rc == 0) {
        p->req->temperature = (float) d;
    }

    return rc < 0 ? -1 : 0;
}


int
fg_oai_field_top_p(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    int     rc;
    double  d;

    (void) why;

    rc = fg_oai_number(p, key, v, 0, 1, &d);

    if (rc != 0) {
        return rc < 0 ? -1 : 0;
    }

    /* the nucleus of top_p 0 is the most likely token alone: greedy, set
     * once every field is read; the engine takes top_p in (0, 1] */
    if (d == 0) {
        p->top_p_zero = 1;
        return 0;
    }

    p->req->top_p = (float) d;

    return 0;
}


int
fg_oai_field_top_k(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    json_int_t  n;

    (void) why;

    n = json_integer_value(v);

    /* -1 is vLLM's "off", 0 is the engine's */
    if (n < -1 || n > INT32_MAX) {
        return fg_oai_fail(p, "invalid_value", key,
                           "Invalid 'top_k': %lld is not -1 or 0 (off) or "
                           "a count of tokens up to %d.", (long long) n,
                           INT32_MAX);
    }

    p->req->top_k = n < 0 ? 0 : (uint32_t) n;

    return 0;
}


int
fg_oai_field_seed(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    (void) key;
    (void) why;

    p->req->seed = (uint64_t) json_integer_value(v);
    p->req->has_seed = 1;

    return 0;
}


int
fg_oai_field_stop(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    char     param[48];
    size_t   i, max;
    json_t  *s;

    (void) why;

    max = p->lim->max_stop_len;

    if (max > FG_OAI_STOP_MAX_LEN) {
        max = FG_OAI_STOP_MAX_LEN;
    }

    if (json_is_null(v)) {
        return 0;
    }

    if (json_is_string(v)) {
        if (fg_oai_string(p, key, v, 1, max) != 0) {
            return -1;
        }

        p->req->n_stop = 1;

        return fg_oai_copy(p, &p->req->stop[0], json_string_value(v),
                           json_string_length(v));
    }

    if (!json_is_array(v)) {
        return fg_oai_bad_type(p, key, "a string or an array of strings", v);
    }

    if (json_array_size(v) > FG_OAI_MAX_STOP) {
        return fg_oai_fail(p, "array_above_max_length", key,
                           "Invalid 'stop': array too long. Expected an "
                           "array with maximum length %d, but got an array "
                           "with length %zu instead.", FG_OAI_MAX_STOP,
                           json_array_size(v));
    }

    json_array_foreach(v, i, s) {
        snprintf(param, sizeof(param), "stop[%zu]", i);

        if (fg_oai_string(p, param, s, 1, max) != 0) {
            return -1;
        }

        if (fg_oai_copy(p, &p->req->stop[i], json_string_value(s),
                        json_string_length(s))
            != 0)
        {
            return -1;
        }

        p->req->n_stop = i + 1;
    }

    return 0;
}


/* stream and ignore_eos: a boolean each, as the key says */
int
fg_oai_field_flag(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    int  rc, b;

    (void) why;

    b = 0;
    rc = fg_oai_bool(p, key, v, &b);

    if (rc != 0) {
        return rc < 0 ? -1 : 0;
    }

    if (strcmp(key, "stream") == 0) {
        p->req->stream = b;

    } else {
        p->req->ignore_eos = b;
    }

    return 0;
}


int
fg_oai_field_stream_options(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    int          b;
    char         param[96];
    json_t      *x;
    const char  *k;

    (void) key;
    (void) why;

    p->stream_options = v;

    json_object_foreach(v, k, x) {
        snprintf(param, sizeof(param), "stream_options.%s", k);

        if (strcmp(k, "include_usage") == 0) {
            if (fg_oai_bool(p, param, x, &b) < 0) {
                return -1;
            }

            p->req->include_usage = json_is_true(x);

        } else if (strcmp(k, "include_obfuscation") == 0) {
            /* padding against length side channels; the text is the same
             * without it */
            if (fg_oai_bool(p, param, x, &b) < 0) {
                return -1;
            }

        } else {
            return fg_oai_fail(p, "unknown_parameter", param,
                               "Unrecognized argument in stream_options: "
                               "%s", k);
        }
    }

    return 0;
}


int
fg_oai_field_user(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    (void) why;

    if (json_is_null(v)) {
        return 0;
    }

    if (fg_oai_string(p, key, v, 0, p->lim->max_user) != 0) {
        return -1;
    }

    return fg_oai_copy(p, &p->req->user, json_string_value(v),
                       json_string_length(v));
}


int
fg_oai_field_n(fg_oai_parse_t *p, const char *key, json_t *v, const char *why)
{
    json_int_t  n;

    (void) why;

    n = json_integer_value(v);

    if (n < 1) {
        return fg_oai_below_one(p, key, n);
    }

    if (n > FG_OAI_MAX_N) {
        return fg_oai_fail(p, "unsupported_value", key,
                           "Invalid 'n': fairgate generates at most %d "
                           "choices per request, not %lld.", FG_OAI_MAX_N,
                           (long long) n);
    }

    p->req->n = (uint32_t) n;

    return 0;
}


int
fg_oai_field_best_of(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    json_int_t  n;

    (void) why;

    n = json_integer_value(v);

    if (n < 1) {
        return fg_oai_below_one(p, key, n);
    }

    if (n > FG_OAI_MAX_N) {
        return fg_oai_fail(p, "unsupported_value", key,
                           "Invalid 'best_of': at most %d, not %lld.",
                           FG_OAI_MAX_N, (long long) n);
    }

    p->req->best_of = (uint32_t) n;

    return 0;
}


/*
 * best_of must be at least n (OpenAI's rule), and is not streamed (nor
 * at OpenAI): the best n of best_of candidates are known at the end.
 */
int
fg_oai_choices_check(fg_oai_parse_t *p)
{
    fg_oai_request_t  *r;

    r = p->req;

    if (r->best_of && r->best_of < r->n) {
        return fg_oai_fail(p, "invalid_value", "best_of",
                           "Invalid 'best_of': %u is less than n (%u).",
                           r->best_of, r->n);
    }

    if (r->best_of > r->n && r->stream) {
        return fg_oai_fail(p, "invalid_value", "best_of",
                           "Invalid 'best_of': best_of (%u) above n (%u) "
                           "cannot be streamed.", r->best_of, r->n);
    }

    return 0;
}
