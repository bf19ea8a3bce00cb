
/*
 * fairgate: the request fields that adjust the logits or ask for their
 * log-probabilities: OpenAI's frequency_penalty, presence_penalty,
 * logit_bias, logprobs and top_logprobs, and the extensions vLLM's and
 * llama.cpp's servers accept, repetition_penalty and min_p; and
 * completions' echo, which logprobs rules out here.  The ranges
 * and messages are OpenAI's; the engine applies them
 * (engine/batch/fg_sample_adjust.c).
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "fg_openai_request_int.h"


int
fg_oai_field_penalty(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    double  d;

    (void) why;

    if (fg_oai_number(p, key, v, -2, 2, &d) < 0) {
        return -1;
    }

    if (key[0] == 'f') {
        p->req->frequency_penalty = (float) d;

    } else {
        p->req->presence_penalty = (float) d;
    }

    return 0;
}


int
fg_oai_field_repetition(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    double  d;

    (void) why;

    if (fg_oai_number(p, key, v, 0, 100, &d) < 0) {
        return -1;
    }

    /* vLLM's range: above 0 (1 is off) */
    if (d == 0) {
        return fg_oai_fail(p, "decimal_below_min_value", key,
                           "Invalid '%s': expected a value > 0 (1 is no "
                           "penalty), but got 0 instead.", key);
    }

    p->req->repetition_penalty = (float) d;

    return 0;
}


int
fg_oai_field_min_p(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    double  d;

    (void) why;

    if (fg_oai_number(p, key, v, 0, 1, &d) < 0) {
        return -1;
    }

    p->req->min_p = (float) d;

    return 0;
}


/* a key of logit_bias: the decimal id of a token of the vocabulary */
static int
fg_oai_bias_id(fg_oai_parse_t *p, const char *key, int32_t *id)
{
    long   n;
    char  *end;

    errno = 0;
    n = strtol(key, &end, 10);

    /* "01" would name token 1 a second time */
    if (key[0] < '0' || key[0] > '9' || (key[0] == '0' && key[1] != '\0')
        || *end != '\0' || errno != 0 || n > INT32_MAX)
    {
        return fg_oai_fail(p, "invalid_value", "logit_bias",
                           "Invalid key in 'logit_bias': \"%.64s\" is not "
                           "a token id (a decimal integer).", key);
    }

    if (p->lim->n_vocab && (uint64_t) n >= p->lim->n_vocab) {
        return fg_oai_fail(p, "invalid_value", "logit_bias",
                           "Invalid key in 'logit_bias': token id %ld is "
                           "outside the model's vocabulary of %u tokens.",
                           n, p->lim->n_vocab);
    }

    *id = (int32_t) n;

    return 0;
}


int
fg_oai_field_logit_bias(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    size_t             i, n;
    json_t            *x;
    const char        *k;
    fg_oai_request_t  *r;

    (void) why;

    r = p->req;
    n = json_object_size(v);

    if (n > FG_OAI_MAX_BIAS) {
        return fg_oai_fail(p, "invalid_value", key,
                           "Invalid 'logit_bias': %zu entries; at most %d "
                           "are accepted.", n, FG_OAI_MAX_BIAS);
    }

    r->bias_id = fg_oai_alloc(r, n * sizeof(int32_t) + 1);
    r->bias = fg_oai_alloc(r, n * sizeof(float) + 1);

    if (r->bias_id == NULL || r->bias == NULL) {
        return fg_oai_nomem(p);
    }

    i = 0;

    json_object_foreach(v, k, x) {
        if (fg_oai_bias_id(p, k, &r->bias_id[i]) != 0) {
            return -1;
        }

        if (!json_is_number(x)) {
            return fg_oai_bad_type(p, key, "an object of numbers", x);
        }

        if (!(json_number_value(x) >= -100 && json_number_value(x) <= 100)) {
            return fg_oai_fail(p, "invalid_value", key,
                               "Invalid 'logit_bias': the bias %g of token "
                               "%s is not in [-100, 100].",
                               json_number_value(x), k);
        }

        r->bias[i++] = (float) json_number_value(x);
    }

    r->n_bias = i;

    return 0;
}


/* chat: a boolean; completions: how many alternatives, 0 .. 5 */
int
fg_oai_field_logprobs(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    int         b;
    json_int_t  n;

    (void) why;

    b = 0;

    if (p->kind == FG_OAI_K_CHAT) {
        if (fg_oai_bool(p, key, v, &b) < 0) {
            return -1;
        }

        p->req->logprobs = b ? 1 : 0;

        return 0;
    }

    if (json_is_null(v)) {
        return 0;
    }

    if (!json_is_integer(v)) {
        return fg_oai_bad_type(p, key, "an integer", v);
    }

    n = json_integer_value(v);

    if (n < 0 || n > FG_OAI_MAX_TOP_TEXT) {
        return fg_oai_fail(p, "invalid_value", key,
                           "Invalid 'logprobs': %lld is not in [0, %d].",
                           (long long) n, FG_OAI_MAX_TOP_TEXT);
    }

    p->req->logprobs = 1;
    p->req->top_logprobs = (uint32_t) n;

    return 0;
}


int
fg_oai_field_top_logprobs(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    json_int_t  n;

    (void) why;

    n = json_integer_value(v);

    if (n < 0 || n > FG_OAI_MAX_TOP_CHAT) {
        return fg_oai_fail(p, n < 0 ? "integer_below_min_value"
                                    : "integer_above_max_value", key,
                           "Invalid 'top_logprobs': expected a value in "
                           "[0, %d], but got %lld instead.",
                           FG_OAI_MAX_TOP_CHAT, (long long) n);
    }

    /* 0 asks for nothing: harmless without logprobs */
    p->top_logprobs = n > 0;
    p->req->top_logprobs = (uint32_t) n;

    return 0;
}


int
fg_oai_field_echo(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    int  b;

    (void) why;

    b = 0;

    if (fg_oai_bool(p, key, v, &b) < 0) {
        return -1;
    }

    p->req->echo = b ? 1 : 0;

    return 0;
}


int
fg_oai_sampling_check(fg_oai_parse_t *p)
{
    fg_oai_request_t  *r;

    r = p->req;

    if (p->top_logprobs && !r->logprobs) {
        return fg_oai_fail(p, "invalid_value", "top_logprobs",
                           "Invalid value for 'top_logprobs': 'logprobs' "
                           "must be set to true when 'top_logprobs' is "
                           "given.");
    }

    if (r->has_max_tokens && r->max_tokens == 0 && !r->echo) {
        return fg_oai_fail(p, "integer_below_min_value", "max_tokens",
                           "Invalid 'max_tokens': integer below minimum "
                           "value. Expected a value >= 1 (0 with echo), "
                           "but got 0 instead.");
    }

    /* a stream's first chunk has the prompt's, which come with choice
     * 0's prefill: another choice's tokens could come before them */
    if (r->echo && r->logprobs && r->stream && r->n > 1) {
        return fg_oai_fail(p, "unsupported_value", "echo",
                           "Invalid 'echo': 'echo' with 'logprobs' is "
                           "streamed with one choice (n 1) only.");
    }

    return 0;
}
