
/*
 * fairgate: the load generator's parser of OpenAI streams.
 */


#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fg_load_sse.h"


static int
fg_load_sse_fail(fg_load_sse_t *sse, const char *fmt, ...)
{
    va_list  args;

    /* the first error is the one that explains the others */
    if (!sse->failed) {
        va_start(args, fmt);
        vsnprintf(sse->err, sizeof(sse->err), fmt, args);
        va_end(args);
    }

    sse->failed = 1;

    return -1;
}


void
fg_load_sse_init(fg_load_sse_t *sse, fg_load_sse_token_pt on_token,
    void *data)
{
    memset(sse, 0, sizeof(fg_load_sse_t));

    sse->prompt_tokens = -1;
    sse->completion_tokens = -1;
    sse->cached_tokens = -1;
    sse->on_token = on_token;
    sse->data_ctx = data;
}


void
fg_load_sse_free(fg_load_sse_t *sse)
{
    free(sse->line);
    free(sse->data);

    sse->line = NULL;
    sse->data = NULL;
}


static int
fg_load_sse_grow(char **p, size_t *cap, size_t need)
{
    char    *q;
    size_t   n;

    if (need <= *cap) {
        return 0;
    }

    for (n = *cap ? *cap : 256; n < need; n *= 2) {
        /* void */
    }

    q = realloc(*p, n);
    if (q == NULL) {
        return -1;
    }

    *p = q;
    *cap = n;

    return 0;
}


/* a non-empty string field of obj */
static int
fg_load_sse_text(json_t *obj, const char *key)
{
    json_t  *v;

    v = json_object_get(obj, key);

    return json_is_string(v) && json_string_length(v) > 0;
}


static int
fg_load_sse_usage(fg_load_sse_t *sse, json_t *usage)
{
    json_t  *p, *c;

    if (usage == NULL || json_is_null(usage)) {
        return 0;
    }

    p = json_object_get(usage, "prompt_tokens");
    c = json_object_get(usage, "completion_tokens");

    if (!json_is_object(usage) || !json_is_integer(p) || !json_is_integer(c)
        || json_integer_value(p) < 0 || json_integer_value(c) < 0)
    {
        return fg_load_sse_fail(sse, "\"usage\" without prompt_tokens and "
                                "completion_tokens");
    }

    sse->prompt_tokens = json_integer_value(p);
    sse->completion_tokens = json_integer_value(c);
    sse->cached_tokens = fg_load_usage_cached(usage);

    return 0;
}


int64_t
fg_load_usage_cached(const json_t *usage)
{
    json_t  *details, *cached;

    details = json_object_get(usage, "prompt_tokens_details");
    cached = json_object_get(details, "cached_tokens");

    if (!json_is_integer(cached) || json_integer_value(cached) < 0) {
        return -1;
    }

    return json_integer_value(cached);
}


/* the event's data: [DONE] or a chunk */
static int
fg_load_sse_event(fg_load_sse_t *sse)
{
    int            token;
    size_t         i, len;
    json_t        *chunk, *choices, *choice, *delta, *err, *msg;
    json_error_t   jerr;

    if (!sse->has_data) {
        /* an event of comments, ids or retry only: nothing to read */
        return 0;
    }

    sse->has_data = 0;
    sse->events++;

    /* the data lines were each given an LF; the last one is not data */
    len = sse->dlen - 1;
    sse->data[len] = '\0';
    sse->dlen = 0;

    if (sse->done) {
        return fg_load_sse_fail(sse, "data after [DONE]");
    }

    if (strcmp(sse->data, "[DONE]") == 0) {
        sse->done = 1;
        return 0;
    }

    chunk = json_loadb(sse->data, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
                       &jerr);
    if (chunk == NULL) {
        return fg_load_sse_fail(sse, "event %llu: not JSON: %s",
                                (unsigned long long) sse->events, jerr.text);
    }

    if (!json_is_object(chunk)) {
        json_decref(chunk);
        return fg_load_sse_fail(sse, "event %llu: not a JSON object",
                                (unsigned long long) sse->events);
    }

    err = json_object_get(chunk, "error");
    if (err != NULL && !json_is_null(err)) {
        msg = json_is_object(err) ? json_object_get(err, "message") : err;
        fg_load_sse_fail(sse, "stream error: %.100s",
                         json_is_string(msg) ? json_string_value(msg)
                                             : "(no message)");
        json_decref(chunk);
        return -1;
    }

    choices = json_object_get(chunk, "choices");
    token = 0;

    if (choices != NULL && !json_is_array(choices)) {
        json_decref(chunk);
        return fg_load_sse_fail(sse, "event %llu: \"choices\" is not an "
                                "array", (unsigned long long) sse->events);
    }

    json_array_foreach(choices, i, choice) {
        delta = json_object_get(choice, "delta");

        if (fg_load_sse_text(choice, "text")
            || (json_is_object(delta)
                && (fg_load_sse_text(delta, "content")
                    || fg_load_sse_text(delta, "reasoning_content"))))
        {
            token = 1;
        }
    }

    if (fg_load_sse_usage(sse, json_object_get(chunk, "usage")) != 0) {
        json_decref(chunk);
        return -1;
    }

    json_decref(chunk);

    if (token) {
        sse->tokens++;

        if (sse->on_token != NULL) {
            sse->on_token(sse->data_ctx);
        }
    }

    return 0;
}


/* one line, without its end */
static int
fg_load_sse_line(fg_load_sse_t *sse)
{
    char    *colon, *value;
    size_t   name_len, value_len;

    if (sse->len == 0) {
        return fg_load_sse_event(sse);
    }

    sse->line[sse->len] = '\0';

    if (sse->line[0] == ':') {
        return 0;
    }

    colon = memchr(sse->line, ':', sse->len);

    if (colon != NULL) {
        name_len = colon - sse->line;
        value = colon + 1;

        if (*value == ' ') {
            value++;
        }

        value_len = sse->len - (value - sse->line);

    } else {
        name_len = sse->len;
        value = sse->line + sse->len;
        value_len = 0;
    }

    if (name_len == 4 && memcmp(sse->line, "data", 4) == 0) {
        if (fg_load_sse_grow(&sse->data, &sse->dcap,
                             sse->dlen + value_len + 2)
            != 0)
        {
            return fg_load_sse_fail(sse, "out of memory");
        }

        memcpy(sse->data + sse->dlen, value, value_len);
        sse->dlen += value_len;
        sse->data[sse->dlen++] = '\n';
        sse->has_data = 1;

        if (sse->dlen > FG_LOAD_SSE_MAX) {
            return fg_load_sse_fail(sse, "an event over %d bytes",
                                    FG_LOAD_SSE_MAX);
        }

        return 0;
    }

    if ((name_len == 5 && memcmp(sse->line, "event", 5) == 0)
        || (name_len == 2 && memcmp(sse->line, "id", 2) == 0)
        || (name_len == 5 && memcmp(sse->line, "retry", 5) == 0))
    {
        return 0;
    }

    return fg_load_sse_fail(sse, "unknown field \"%.*s\"",
                            (int) (name_len > 32 ? 32 : name_len),
                            sse->line);
}


int
fg_load_sse_feed(fg_load_sse_t *sse, const char *buf, size_t len)
{
    char         c;
    const char  *p, *end, *eol;

    if (sse->failed) {
        return -1;
    }

    p = buf;
    end = buf + len;

    while (p < end) {
        /* the LF of a CRLF whose CR ended the last line */
        if (sse->cr && *p == '\n') {
            sse->cr = 0;
            p++;
            continue;
        }

        sse->cr = 0;

        for (eol = p; eol < end && *eol != '\n' && *eol != '\r'; eol++) {
            /* void */
        }

        if (fg_load_sse_grow(&sse->line, &sse->cap, sse->len + (eol - p) + 1)
            != 0)
        {
            return fg_load_sse_fail(sse, "out of memory");
        }

        memcpy(sse->line + sse->len, p, eol - p);
        sse->len += eol - p;

        if (sse->len > FG_LOAD_SSE_MAX) {
            return fg_load_sse_fail(sse, "a line over %d bytes",
                                    FG_LOAD_SSE_MAX);
        }

        if (eol == end) {
            break;
        }

        c = *eol;
        p = eol + 1;

        if (c == '\r') {
            sse->cr = 1;
        }

        if (fg_load_sse_line(sse) != 0) {
            return -1;
        }

        sse->len = 0;
    }

    return 0;
}


int
fg_load_sse_finish(fg_load_sse_t *sse)
{
    if (sse->failed) {
        return -1;
    }

    if (sse->len > 0 || sse->has_data) {
        return fg_load_sse_fail(sse, "the stream ended inside an event");
    }

    if (!sse->done) {
        return fg_load_sse_fail(sse, "the stream ended without [DONE]");
    }

    return 0;
}
