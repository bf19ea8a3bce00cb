
/*
 * fairgate: one request of the load generator's run in flight: its easy
 * handle, its answer read as it comes (a stream's chunks through the SSE
 * parser, or a whole body), and its outcome once libcurl is done with it.
 */


#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>
#include <jansson.h>

#include "fg_load_run_int.h"


static void
fg_load_on_token(void *data)
{
    fg_load_xfer_t  *x = data;

    if (x->res->first_token < 0.0) {
        x->res->first_token = x->now;
    }

    if (x->token_times && fg_load_result_token(x->res, x->now) != 0) {
        x->oom = 1;
    }

    /* a chunk with content is a token, as the counting has it */
    if (x->res->has_qoe) {
        fg_qoe_token(&x->res->qoe, x->now);
    }
}


static size_t
fg_load_write(char *p, size_t size, size_t n, void *data)
{
    long             code;
    char            *ct, *more;
    size_t           len, cap;
    fg_load_xfer_t  *x = data;

    len = size * n;
    x->now = fg_load_now(x->run);
    x->last = x->now;

    if (x->mode == FG_LOAD_MODE_NONE) {
        code = 0;
        ct = NULL;
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
        curl_easy_getinfo(x->easy, CURLINFO_CONTENT_TYPE, &ct);

        /* an error answers in JSON even to a request that streams */
        x->mode = code / 100 == 2 && ct != NULL
                  && strncasecmp(ct, "text/event-stream", 17) == 0
                  ? FG_LOAD_MODE_SSE : FG_LOAD_MODE_BODY;

        if (x->mode == FG_LOAD_MODE_BODY && code / 100 == 2) {
            x->res->first_token = x->now;
        }
    }

    if (x->mode == FG_LOAD_MODE_SSE) {
        /* 0 aborts the transfer: the stream is broken, no need to wait */
        return fg_load_sse_feed(&x->sse, p, len) == 0 ? len : 0;
    }

    if (x->len + len > FG_LOAD_BODY_MAX) {
        x->too_big = 1;
        return 0;
    }

    if (x->len + len + 1 > x->cap) {
        for (cap = x->cap ? x->cap : 4096; cap < x->len + len + 1; cap *= 2) {
            /* void */
        }

        more = realloc(x->buf, cap);
        if (more == NULL) {
            x->oom = 1;
            return 0;
        }

        x->buf = more;
        x->cap = cap;
    }

    memcpy(x->buf + x->len, p, len);
    x->len += len;
    x->buf[x->len] = '\0';

    return len;
}


/*
 * A response header: x-fairgate-engine names the engine that served it
 * (the gateway's $fairgate_engine); kept when it is plain text.
 */
static size_t
fg_load_header(char *p, size_t size, size_t n, void *data)
{
    char            *v;
    size_t           i, len, name;
    fg_load_xfer_t  *x = data;

    len = size * n;
    name = sizeof("x-fairgate-engine:") - 1;

    if (len <= name || strncasecmp(p, "x-fairgate-engine:", name) != 0) {
        return len;
    }

    for (i = name; i < len && (p[i] == ' ' || p[i] == '\t'); i++) {
        /* void */
    }

    while (len > i && isspace((unsigned char) p[len - 1])) {
        len--;
    }

    for (v = p + i; v < p + len; v++) {
        if ((unsigned char) *v < 0x20 || *v == 0x7f) {
            return size * n;
        }
    }

    if (len > i) {
        v = strndup(p + i, len - i);
        if (v == NULL) {
            x->oom = 1;
            return size * n;
        }

        free(x->res->engine);
        x->res->engine = v;
    }

    return size * n;
}


fg_load_xfer_t *
fg_load_xfer_new(fg_load_run_t *run, size_t i)
{
    CURL                  *e;
    fg_load_xfer_t        *x;
    const fg_load_conf_t  *conf;

    conf = run->conf;

    x = calloc(1, sizeof(fg_load_xfer_t));
    if (x == NULL) {
        return NULL;
    }

    x->run = run;
    x->id = i;
    x->res = &run->res[i];
    x->last = -1.0;
    x->token_times = conf->token_times;
    x->res->first_token = -1.0;
    x->res->cached_tokens = -1;
    x->res->stream = fg_load_req_stream(&conf->req, &run->tr->reqs[i]);

    fg_load_sse_init(&x->sse, fg_load_on_token, x);

    x->body = fg_load_req_body(&conf->req, run->tr, i);
    x->headers = fg_load_req_headers(&conf->req, run->tr, i);
    x->easy = e = curl_easy_init();

    if (x->body == NULL || x->headers == NULL || e == NULL) {
        fg_load_xfer_free(x);
        return NULL;
    }

    curl_easy_setopt(e, CURLOPT_URL, conf->url);
    curl_easy_setopt(e, CURLOPT_PRIVATE, x);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, x->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long) strlen(x->body));
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->headers);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, fg_load_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, fg_load_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "fairgate-load");
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long) CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);

    /* the given URL and nothing else: no proxy, no redirect, http(s) */
    curl_easy_setopt(e, CURLOPT_PROXY, "");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");

    if (conf->request_timeout > 0.0) {
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS,
                         (long) ceil(conf->request_timeout * 1000));
    }

    return x;
}


void
fg_load_xfer_free(fg_load_xfer_t *x)
{
    if (x->easy != NULL) {
        curl_easy_cleanup(x->easy);
    }

    curl_slist_free_all(x->headers);
    free(x->body);
    free(x->buf);
    fg_load_sse_free(&x->sse);
    free(x);
}


/* the answer's error message and code, if it is OpenAI's error body */
static void
fg_load_error_body(fg_load_xfer_t *x, const char **message,
    const char **code, json_t **root)
{
    json_t  *e, *m, *c;

    *message = NULL;
    *code = NULL;
    *root = x->buf ? json_loadb(x->buf, x->len, 0, NULL) : NULL;

    e = json_object_get(*root, "error");
    m = json_object_get(e, "message");
    c = json_object_get(e, "code");

    *message = json_is_string(m) ? json_string_value(m) : NULL;
    *code = json_is_string(c) ? json_string_value(c) : NULL;
}


/* whitespace-separated words: the tokens of an answer without usage */
static uint32_t
fg_load_words(const char *s)
{
    int       in;
    uint32_t  n;

    for (n = 0, in = 0; *s; s++) {
        if (isspace((unsigned char) *s)) {
            in = 0;

        } else if (!in) {
            in = 1;
            n++;
        }
    }

    return n;
}


/* a 2xx answer that is not a stream: an OpenAI completion */
static void
fg_load_body_done(fg_load_xfer_t *x)
{
    json_t            *root, *choice, *msg, *text, *usage, *p, *c;
    json_error_t       jerr;
    fg_load_result_t  *res;

    res = x->res;

    root = json_loadb(x->buf ? x->buf : "", x->len, 0, &jerr);
    if (root == NULL) {
        res->status = FG_SIM_ERROR;
        fg_load_result_error(res, "the answer is not JSON: %s", jerr.text);
        return;
    }

    choice = json_array_get(json_object_get(root, "choices"), 0);
    msg = json_object_get(choice, "message");
    text = json_is_object(msg) ? json_object_get(msg, "content")
                               : json_object_get(choice, "text");

    if (!json_is_object(choice) || !(json_is_string(text)
                                     || json_is_null(text)))
    {
        res->status = FG_SIM_ERROR;
        fg_load_result_error(res, "the answer has no choices[0] with "
                             "content");
        json_decref(root);
        return;
    }

    usage = json_object_get(root, "usage");
    p = json_object_get(usage, "prompt_tokens");
    c = json_object_get(usage, "completion_tokens");

    if (json_is_integer(p) && json_is_integer(c)
        && json_integer_value(p) >= 0 && json_integer_value(c) >= 0
        && json_integer_value(p) <= FG_SIM_MAX_TOKENS
        && json_integer_value(c) <= FG_SIM_MAX_TOKENS)
    {
        res->input_tokens = (uint32_t) json_integer_value(p);
        res->output_tokens = (uint32_t) json_integer_value(c);
        res->cached_tokens = fg_load_usage_cached(usage);
        res->from = FG_LOAD_FROM_USAGE;

    } else {
        /* the prompt's words were its tokens (fg_load_req.h) */
        res->input_tokens = x->run->tr->reqs[x->id].input_tokens;
        res->output_tokens = json_is_string(text)
                             ? fg_load_words(json_string_value(text)) : 0;
        res->from = FG_LOAD_FROM_COUNT;
    }

    res->status = FG_SIM_OK;

    json_decref(root);
}


static void
fg_load_sse_done(fg_load_xfer_t *x)
{
    fg_load_result_t  *res;

    res = x->res;

    if (fg_load_sse_finish(&x->sse) != 0) {
        res->status = FG_SIM_ERROR;
        fg_load_result_error(res, "stream: %s", x->sse.err);
        return;
    }

    if (x->sse.prompt_tokens >= 0
        && x->sse.prompt_tokens <= FG_SIM_MAX_TOKENS
        && x->sse.completion_tokens <= FG_SIM_MAX_TOKENS)
    {
        res->input_tokens = (uint32_t) x->sse.prompt_tokens;
        res->output_tokens = (uint32_t) x->sse.completion_tokens;
        res->cached_tokens = x->sse.cached_tokens;
        res->from = FG_LOAD_FROM_USAGE;

    } else {
        res->input_tokens = x->run->tr->reqs[x->id].input_tokens;
        res->output_tokens = (uint32_t) x->sse.tokens;
        res->from = FG_LOAD_FROM_COUNT;
    }

    res->status = FG_SIM_OK;
}


/*
 * An answer that is not 2xx: 429, and 503 with the gateway's code
 * "queue_full", rejected; 503 "queue_timeout", timeout; else an error.
 */
static void
fg_load_http_error(fg_load_xfer_t *x, long code)
{
    json_t            *root;
    const char        *message, *ecode;
    fg_load_result_t  *res;

    res = x->res;

    fg_load_error_body(x, &message, &ecode, &root);

    if (code == 429 || (code == 503 && ecode != NULL
                        && strcmp(ecode, "queue_full") == 0))
    {
        res->status = FG_SIM_REJECTED;

    } else if (code == 503 && ecode != NULL
               && strcmp(ecode, "queue_timeout") == 0)
    {
        res->status = FG_SIM_TIMEOUT;

    } else {
        res->status = FG_SIM_ERROR;
    }

    fg_load_result_error(res, "HTTP %ld%s%s", code, message ? ": " : "",
                         message ? message : "");
    json_decref(root);
}


void
fg_load_xfer_outcome(fg_load_xfer_t *x, CURLcode rc)
{
    long               code;
    double             now;
    curl_off_t         pre;
    fg_load_run_t     *run;
    fg_load_result_t  *res;

    run = x->run;
    res = x->res;
    now = fg_load_now(run);

    code = 0;
    pre = 0;
    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_getinfo(x->easy, CURLINFO_PRETRANSFER_TIME_T, &pre);

    /* when the request went out: after the connection, or libcurl's queue */
    res->sent = x->added + (pre > 0 ? pre / 1e6 : 0.0);
    res->finish = x->last >= 0.0 ? x->last : now;
    res->http_status = (int) code;

    if (rc == CURLE_WRITE_ERROR && x->sse.failed) {
        res->status = FG_SIM_ERROR;
        fg_load_result_error(res, "stream: %s", x->sse.err);

    } else if (rc == CURLE_WRITE_ERROR && x->too_big) {
        res->status = FG_SIM_ERROR;
        fg_load_result_error(res, "an answer over %d bytes",
                             FG_LOAD_BODY_MAX);

    } else if (x->oom) {
        res->status = FG_SIM_ERROR;
        fg_load_result_error(res, "out of memory");

    } else if (rc == CURLE_OPERATION_TIMEDOUT) {
        res->status = FG_SIM_TIMEOUT;
        fg_load_result_error(res, "no complete answer in %g s",
                             run->conf->request_timeout);

    } else if (rc != CURLE_OK) {
        res->status = FG_SIM_ERROR;
        fg_load_result_error(res, "%s", x->errbuf[0] ? x->errbuf
                                                     : curl_easy_strerror(rc));

    } else if (code / 100 != 2) {
        fg_load_http_error(x, code);

    } else if (x->mode == FG_LOAD_MODE_SSE) {
        fg_load_sse_done(x);

    } else {
        fg_load_body_done(x);
    }

    if (res->status == FG_SIM_OK) {
        /* a stream without content: its first token is its end */
        if (res->first_token < 0.0) {
            res->first_token = res->finish;
        }

        /* more cached than the prompt: a broken usage, not a figure */
        if (res->cached_tokens > (int64_t) res->input_tokens) {
            res->cached_tokens = -1;
        }

    } else {
        res->input_tokens = run->tr->reqs[x->id].input_tokens;
        res->output_tokens = run->tr->reqs[x->id].output_tokens;
        res->from = FG_LOAD_FROM_TRACE;
        res->first_token = -1.0;
    }
}
