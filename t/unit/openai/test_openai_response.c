
/*
 * fairgate: tests of the OpenAI response writers: every body and chunk
 * parsed back with jansson and compared field by field, SSE framing read
 * strictly, text that is not valid UTF-8 made valid, buffers too small,
 * error bodies of the API layer and of the gateway.
 */


#include <stdint.h>

#include <jansson.h>

#include "fg_tap.h"
#include "fg_openai_response.h"


#define N(a)  (sizeof(a) / sizeof((a)[0]))


static char  out[1 << 20];


static json_t *
load(const char *text, size_t len)
{
    json_t        *j;
    json_error_t   e;

    j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &e);

    if (j == NULL) {
        diag("not JSON: %s: %.*s", e.text, (int) len, text);
    }

    return j;
}


/* the object has exactly these keys */
static int
keys(json_t *o, const char *const *want, size_t n)
{
    size_t  i;

    if (!json_is_object(o) || json_object_size(o) != n) {
        return 0;
    }

    for (i = 0; i < n; i++) {
        if (json_object_get(o, want[i]) == NULL) {
            return 0;
        }
    }

    return 1;
}


static int
str_is(json_t *o, const char *key, const char *want)
{
    json_t  *v;

    v = json_object_get(o, key);

    return json_is_string(v) && strcmp(json_string_value(v), want) == 0;
}


static int
null_is(json_t *o, const char *key)
{
    return json_is_null(json_object_get(o, key));
}


static int
int_is(json_t *o, const char *key, json_int_t want)
{
    json_t  *v;

    v = json_object_get(o, key);

    return json_is_integer(v) && json_integer_value(v) == want;
}


static int
usage_is(json_t *u, uint32_t p, uint32_t c, uint32_t cached)
{
    json_t  *d;

    static const char *const  k[] = {
        "prompt_tokens", "completion_tokens", "total_tokens",
        "prompt_tokens_details"
    };
    static const char *const  dk[] = { "cached_tokens" };

    d = json_object_get(u, "prompt_tokens_details");

    return keys(u, k, N(k)) && int_is(u, "prompt_tokens", p)
           && int_is(u, "completion_tokens", c)
           && int_is(u, "total_tokens", (json_int_t) p + c)
           && keys(d, dk, N(dk)) && int_is(d, "cached_tokens", cached);
}


static void
test_id(void)
{
    char    a[FG_OAI_ID_LEN], b[FG_OAI_ID_LEN];
    size_t  i;

    fg_oai_make_id(a, sizeof(a), FG_OAI_CHAT, 1, 2);
    fg_oai_make_id(b, sizeof(b), FG_OAI_CHAT, 1, 3);

    ok(strncmp(a, "chatcmpl-", 9) == 0 && strlen(a) == 9 + 22,
       "chat id: chatcmpl- and 22 characters: %s", a);
    ok(strcmp(a, b) != 0, "another draw, another id");

    for (i = 9; a[i]; i++) {
        if (!((a[i] >= '0' && a[i] <= '9') || (a[i] >= 'a' && a[i] <= 'z')
              || (a[i] >= 'A' && a[i] <= 'Z')))
        {
            break;
        }
    }

    ok(a[i] == '\0', "letters and digits only");

    fg_oai_make_id(a, sizeof(a), FG_OAI_COMPLETION, UINT64_MAX, UINT64_MAX);
    ok(strncmp(a, "cmpl-", 5) == 0 && strlen(a) == 5 + 22,
       "completion id: %s", a);
}


static void
test_bodies(void)
{
    size_t          n;
    json_t         *j, *c, *m;
    fg_oai_resp_t   r;
    fg_oai_usage_t  u;

    static const char *const  top[] = {
        "id", "object", "created", "model", "choices", "usage",
        "system_fingerprint"
    };
    static const char *const  chat_choice[] = {
        "index", "message", "logprobs", "finish_reason"
    };
    static const char *const  message[] = { "role", "content", "refusal" };
    static const char *const  text_choice[] = {
        "text", "index", "logprobs", "finish_reason"
    };

    ok(fg_oai_resp_init(&r, FG_OAI_CHAT, "chatcmpl-abc", "stories260K", 11,
                        "fg-00ff", 1700000000, 0) == 0, "init chat");

    u.prompt_tokens = 5;
    u.completion_tokens = 3;
    u.cached_tokens = 0;

    n = fg_oai_resp_json(&r, "Once upon", 9, FG_OAI_FINISH_STOP, &u, out,
                         sizeof(out));
    ok(n < sizeof(out) && out[n - 1] == '\n', "chat body, %zu bytes", n);

    j = load(out, n);
    ok(keys(j, top, N(top)), "chat.completion: exactly OpenAI's fields");
    ok(str_is(j, "id", "chatcmpl-abc") && str_is(j, "object",
       "chat.completion") && int_is(j, "created", 1700000000)
       && str_is(j, "model", "stories260K")
       && str_is(j, "system_fingerprint", "fg-00ff"),
       "id, object, created, model, system_fingerprint");

    c = json_array_get(json_object_get(j, "choices"), 0);
    ok(json_array_size(json_object_get(j, "choices")) == 1
       && keys(c, chat_choice, N(chat_choice)) && int_is(c, "index", 0)
       && null_is(c, "logprobs") && str_is(c, "finish_reason", "stop"),
       "one choice: index 0, logprobs null, finish_reason stop");

    m = json_object_get(c, "message");
    ok(keys(m, message, N(message)) && str_is(m, "role", "assistant")
       && str_is(m, "content", "Once upon") && null_is(m, "refusal"),
       "message: assistant, the text, refusal null");
    ok(usage_is(json_object_get(j, "usage"), 5, 3, 0),
       "usage: 5 + 3 = 8 tokens, prompt_tokens_details.cached_tokens 0");
    json_decref(j);

    /* text_completion */
    ok(fg_oai_resp_init(&r, FG_OAI_COMPLETION, "cmpl-x", "m", 1, NULL, 7, 0)
       == 0, "init completion, no fingerprint");

    u.prompt_tokens = 1;
    u.completion_tokens = 16;
    u.cached_tokens = 0;

    n = fg_oai_resp_json(&r, ", there was", 11, FG_OAI_FINISH_LENGTH, &u,
                         out, sizeof(out));
    j = load(out, n);
    ok(keys(j, top, N(top)) && str_is(j, "object", "text_completion")
       && str_is(j, "id", "cmpl-x") && int_is(j, "created", 7)
       && null_is(j, "system_fingerprint"),
       "text_completion, system_fingerprint null");

    c = json_array_get(json_object_get(j, "choices"), 0);
    ok(keys(c, text_choice, N(text_choice))
       && str_is(c, "text", ", there was") && int_is(c, "index", 0)
       && null_is(c, "logprobs") && str_is(c, "finish_reason", "length"),
       "choice: text, index, logprobs null, finish_reason length");
    ok(usage_is(json_object_get(j, "usage"), 1, 16, 0), "usage");
    json_decref(j);

    /* a prompt the prefix cache held most of */
    u.prompt_tokens = 2100;
    u.completion_tokens = 7;
    u.cached_tokens = 2048;

    n = fg_oai_resp_json(&r, "x", 1, FG_OAI_FINISH_STOP, &u, out,
                         sizeof(out));
    j = load(out, n);
    ok(usage_is(json_object_get(j, "usage"), 2100, 7, 2048),
       "usage: prompt_tokens_details.cached_tokens 2048 of 2100");
    json_decref(j);

    /* an empty answer */
    n = fg_oai_resp_json(&r, "", 0, FG_OAI_FINISH_STOP, &u, out,
                         sizeof(out));
    j = load(out, n);
    c = json_array_get(json_object_get(j, "choices"), 0);
    ok(str_is(c, "text", ""), "empty text");
    json_decref(j);
}


static void
test_escapes(void)
{
    char            model[300], big[4096];
    size_t          n, i, need, want;
    json_t         *j, *c;
    fg_oai_resp_t   r;
    fg_oai_usage_t  u;

    static const struct {
        const char  *in;
        size_t       len;
        const char  *want;
        const char  *what;
    }  cases[] = {
        { "say \"hi\" \\ /", 12, "say \"hi\" \\ /", "quotes, backslash" },
        { "a\nb\r\tc\b\f", 8, "a\nb\r\tc\b\f", "short escapes" },
        { "\x01\x1f\x7f", 3, "\x01\x1f\x7f", "other control characters" },
        { "caf\xc3\xa9 \xf0\x9f\x98\x80 \xe2\x82\xac", 14,
          "caf\xc3\xa9 \xf0\x9f\x98\x80 \xe2\x82\xac", "UTF-8 as it is" },
        { "a\xffz", 3, "a\xef\xbf\xbdz", "a stray byte: U+FFFD" },
        { "ab\xc3", 3, "ab\xef\xbf\xbd", "a character cut short" },
        { "\xc0\xaf", 2, "\xef\xbf\xbd\xef\xbf\xbd", "overlong" },
        { "\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd",
          "a surrogate" },
        { "\xf4\x90\x80\x80", 4,
          "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd",
          "beyond U+10FFFF" },
        { "x\0y", 3, "x\0y\0", "NUL, as \\u0000" },
    };

    u.prompt_tokens = 1;
    u.completion_tokens = 1;
    u.cached_tokens = 0;

    fg_oai_resp_init(&r, FG_OAI_CHAT, "chatcmpl-e", "m", 1, NULL, 0, 0);

    for (i = 0; i < N(cases); i++) {
        n = fg_oai_resp_json(&r, cases[i].in, cases[i].len,
                             FG_OAI_FINISH_STOP, &u, out, sizeof(out));

        /* jansson refuses invalid UTF-8 and \u0000 unless told */
        j = json_loadb(out, n, JSON_ALLOW_NUL, NULL);
        c = json_object_get(json_object_get(json_array_get(
                json_object_get(j, "choices"), 0), "message"), "content");

        /* the NUL case's want ends in an extra NUL: its length is 3 */
        want = strlen(cases[i].want);

        if (want < cases[i].len && cases[i].in[1] == '\0') {
            want = cases[i].len;
        }

        ok(json_is_string(c) && json_string_length(c) == want
           && memcmp(json_string_value(c), cases[i].want, want) == 0,
           "escaped: %s", cases[i].what);
        json_decref(j);
    }

    /* the model name and fingerprint are escaped too */
    ok(fg_oai_resp_init(&r, FG_OAI_CHAT, "chatcmpl-e", "a\"b\\c", 5,
                        "f\np", 0, 0) == 0, "model with quotes");
    n = fg_oai_resp_json(&r, "", 0, FG_OAI_FINISH_STOP, &u, out,
                         sizeof(out));
    j = load(out, n);
    ok(str_is(j, "model", "a\"b\\c") && str_is(j, "system_fingerprint",
       "f\np"), "model and fingerprint round-trip");
    json_decref(j);

    memset(model, 'm', sizeof(model));
    ok(fg_oai_resp_init(&r, FG_OAI_CHAT, "chatcmpl-e", model, 256, NULL, 0,
                        0) == 0, "a model name of 256 bytes fits");
    memset(model, '\x01', sizeof(model));
    ok(fg_oai_resp_init(&r, FG_OAI_CHAT, "chatcmpl-e", model, 256, NULL, 0,
                        0) == 0, "... even of control characters (x6)");
    ok(fg_oai_resp_init(&r, FG_OAI_CHAT, "chatcmpl-e", model, 300, NULL, 0,
                        0) == -1, "300 of them do not");

    /* the bound holds for the worst text, and the widest usage */
    u.prompt_tokens = UINT32_MAX;
    u.completion_tokens = UINT32_MAX;
    u.cached_tokens = UINT32_MAX;

    for (i = 0; i < sizeof(big); i++) {
        big[i] = (char) (i % 3 ? 0x01 : 0xff);
    }

    fg_oai_resp_init(&r, FG_OAI_CHAT, "chatcmpl-e", model, 256, "fp", 0, 1);
    need = fg_oai_resp_bound(&r, sizeof(big));

    n = fg_oai_resp_json(&r, big, sizeof(big), FG_OAI_FINISH_STOP, &u, out,
                         sizeof(out));
    ok(n <= need, "body: %zu bytes within the bound %zu", n, need);

    n = fg_oai_sse_delta(&r, big, sizeof(big), out, sizeof(out));
    ok(n <= need, "role + text chunks: %zu within the bound", n);

    n = fg_oai_sse_finish(&r, FG_OAI_FINISH_STOP, &u, out, sizeof(out));
    ok(n <= fg_oai_resp_bound(&r, 0), "finish + usage + DONE: %zu within "
       "the bound for no text", n);

    /* too small a buffer: the size needed, nothing changed */
    fg_oai_resp_init(&r, FG_OAI_CHAT, "chatcmpl-e", "m", 1, NULL, 0, 0);
    need = fg_oai_sse_delta(&r, "hello", 5, out, 10);
    ok(need > 10 && !r.started, "a buffer of 10: %zu needed, state kept",
       need);
    n = fg_oai_sse_delta(&r, "hello", 5, out, need);
    ok(n == need && r.started, "with that size: written, role sent");
}


/*
 * A strict SSE reader: events end with a blank line, each is exactly one
 * "data: " line; returns the number of events, their data in ev[].
 */
static size_t
sse(const char *text, size_t len, char ev[][4096], size_t max, int *bad)
{
    size_t       n, l;
    const char  *p, *end, *e;

    n = 0;
    p = text;
    end = text + len;
    *bad = 0;

    while (p < end) {
        e = strstr(p, "\n\n");

        if (e == NULL || e >= end || n == max
            || strncmp(p, "data: ", 6) != 0
            || memchr(p, '\n', e - p) != NULL
            || memchr(p, '\r', e - p) != NULL)
        {
            *bad = 1;
            return n;
        }

        l = e - p - 6;

        if (l >= 4096) {
            *bad = 1;
            return n;
        }

        memcpy(ev[n], p + 6, l);
        ev[n][l] = '\0';
        n++;
        p = e + 2;
    }

    return n;
}


static char  ev[16][4096];


static int
chunk_common(json_t *j, const char *object)
{
    return str_is(j, "id", "chatcmpl-s") && str_is(j, "object", object)
           && int_is(j, "created", 42) && str_is(j, "model", "m")
           && str_is(j, "system_fingerprint", "fp");
}


static void
test_stream_chat(int include_usage)
{
    int             bad;
    size_t          n, len, k, i;
    json_t         *j[16], *c, *d;
    fg_oai_resp_t   r;
    fg_oai_usage_t  u;

    static const char *const  chunk[] = {
        "id", "object", "created", "model", "system_fingerprint", "choices"
    };
    static const char *const  chunk_u[] = {
        "id", "object", "created", "model", "system_fingerprint", "choices",
        "usage"
    };
    static const char *const  choice[] = {
        "index", "delta", "logprobs", "finish_reason"
    };
    static const char *const  role[] = { "role", "content", "refusal" };
    static const char *const  content[] = { "content" };

    fg_oai_resp_init(&r, FG_OAI_CHAT, "chatcmpl-s", "m", 1, "fp", 42,
                     include_usage);

    len = 0;
    len += fg_oai_sse_delta(&r, "Once", 4, out + len, sizeof(out) - len);
    len += fg_oai_sse_delta(&r, "", 0, out + len, sizeof(out) - len);
    len += fg_oai_sse_delta(&r, " upon\n\"a\"", 9, out + len,
                            sizeof(out) - len);

    u.prompt_tokens = 4;
    u.completion_tokens = 2;
    u.cached_tokens = 3;
    len += fg_oai_sse_finish(&r, FG_OAI_FINISH_LENGTH, &u, out + len,
                             sizeof(out) - len);

    n = sse(out, len, ev, N(ev), &bad);
    k = include_usage ? 6 : 5;

    ok(!bad && n == k, "chat stream%s: %zu events, each one data line",
       include_usage ? " with usage" : "", n);
    is_str(ev[n - 1], "[DONE]", "  the last is [DONE]");

    for (i = 0; i + 1 < n; i++) {
        j[i] = load(ev[i], strlen(ev[i]));
    }

    for (i = 0; i + 1 < n; i++) {
        if (!chunk_common(j[i], "chat.completion.chunk")
            || !(include_usage ? keys(j[i], chunk_u, N(chunk_u))
                               : keys(j[i], chunk, N(chunk))))
        {
            break;
        }
    }

    ok(i + 1 == n, "  every chunk: chat.completion.chunk, the same id, "
       "created, model, fingerprint%s", include_usage ? ", usage" : "");

    c = json_array_get(json_object_get(j[0], "choices"), 0);
    d = json_object_get(c, "delta");
    ok(keys(c, choice, N(choice)) && int_is(c, "index", 0)
       && null_is(c, "finish_reason") && null_is(c, "logprobs")
       && keys(d, role, N(role)) && str_is(d, "role", "assistant")
       && str_is(d, "content", "") && null_is(d, "refusal"),
       "  first: delta role assistant, content \"\"");

    c = json_array_get(json_object_get(j[1], "choices"), 0);
    d = json_object_get(c, "delta");
    ok(keys(d, content, 1) && str_is(d, "content", "Once")
       && null_is(c, "finish_reason"), "  then the text: \"Once\"");

    c = json_array_get(json_object_get(j[2], "choices"), 0);
    d = json_object_get(c, "delta");
    ok(str_is(d, "content", " upon\n\"a\""),
       "  no chunk for no text; then \" upon\\n\\\"a\\\"\"");

    c = json_array_get(json_object_get(j[3], "choices"), 0);
    d = json_object_get(c, "delta");
    ok(json_is_object(d) && json_object_size(d) == 0
       && str_is(c, "finish_reason", "length"),
       "  final: empty delta, finish_reason length");

    for (i = 0; i < 4; i++) {
        if (include_usage && !null_is(j[i], "usage")) {
            break;
        }
    }

    ok(i == 4, "  usage is %s in these", include_usage ? "null" : "absent");

    if (include_usage) {
        ok(json_is_array(json_object_get(j[4], "choices"))
           && json_array_size(json_object_get(j[4], "choices")) == 0
           && usage_is(json_object_get(j[4], "usage"), 4, 2, 3),
           "  usage chunk: choices [], usage 4 + 2");
    }

    for (i = 0; i + 1 < n; i++) {
        json_decref(j[i]);
    }

    /* nothing generated at all: the role still comes first */
    fg_oai_resp_init(&r, FG_OAI_CHAT, "chatcmpl-s", "m", 1, "fp", 42, 0);
    len = fg_oai_sse_finish(&r, FG_OAI_FINISH_STOP, &u, out, sizeof(out));
    n = sse(out, len, ev, N(ev), &bad);
    j[0] = load(ev[0], strlen(ev[0]));
    j[1] = load(ev[1], strlen(ev[1]));
    ok(!bad && n == 3 && str_is(json_object_get(json_array_get(
       json_object_get(j[0], "choices"), 0), "delta"), "role", "assistant")
       && str_is(json_array_get(json_object_get(j[1], "choices"), 0),
                 "finish_reason", "stop") && strcmp(ev[2], "[DONE]") == 0,
       "an empty answer: role, finish, [DONE]");
    json_decref(j[0]);
    json_decref(j[1]);
}


static void
test_stream_completion(void)
{
    int             bad;
    size_t          n, len, i;
    json_t         *j, *c;
    fg_oai_resp_t   r;
    fg_oai_usage_t  u;

    static const char *const  choice[] = {
        "text", "index", "logprobs", "finish_reason"
    };

    fg_oai_resp_init(&r, FG_OAI_COMPLETION, "cmpl-s", "m", 1, "fp", 42, 1);

    len = 0;
    len += fg_oai_sse_delta(&r, ", there", 7, out + len, sizeof(out) - len);
    len += fg_oai_sse_delta(&r, " was", 4, out + len, sizeof(out) - len);

    u.prompt_tokens = 5;
    u.completion_tokens = 2;
    u.cached_tokens = 0;
    len += fg_oai_sse_finish(&r, FG_OAI_FINISH_STOP, &u, out + len,
                             sizeof(out) - len);

    n = sse(out, len, ev, N(ev), &bad);
    ok(!bad && n == 5 && strcmp(ev[4], "[DONE]") == 0,
       "completion stream: 2 text chunks, finish, usage, [DONE]");

    for (i = 0; i < 3; i++) {
        j = load(ev[i], strlen(ev[i]));
        c = json_array_get(json_object_get(j, "choices"), 0);

        ok(str_is(j, "object", "text_completion") && str_is(j, "id", "cmpl-s")
           && null_is(j, "usage") && keys(c, choice, N(choice))
           && str_is(c, "text", i == 0 ? ", there" : i == 1 ? " was" : "")
           && (i < 2 ? null_is(c, "finish_reason")
                     : str_is(c, "finish_reason", "stop")),
           "  chunk %zu: text_completion, text, finish_reason", i);
        json_decref(j);
    }

    j = load(ev[3], strlen(ev[3]));
    ok(json_array_size(json_object_get(j, "choices")) == 0
       && usage_is(json_object_get(j, "usage"), 5, 2, 0), "  usage chunk");
    json_decref(j);
}


static void
test_errors(void)
{
    int              bad;
    size_t           n, len;
    json_t          *j, *e;
    fg_oai_resp_t    r;
    fg_oai_error_t   err;

    static const char *const  top[] = { "error" };
    static const char *const  fields[] = { "message", "type", "param",
                                           "code" };

    fg_oai_error_set(&err, 400, "invalid_value", "messages[1].role",
                     "Invalid '%s': \"x\"", "messages[1].role");

    n = fg_oai_error_json(&err, out, sizeof(out));
    j = load(out, n);
    e = json_object_get(j, "error");
    ok(n <= FG_OAI_ERROR_MAX && keys(j, top, 1) && keys(e, fields, 4)
       && str_is(e, "message", "Invalid 'messages[1].role': \"x\"")
       && str_is(e, "type", "invalid_request_error")
       && str_is(e, "param", "messages[1].role")
       && str_is(e, "code", "invalid_value"), "error body, param named");
    json_decref(j);

    fg_oai_error_set(&err, 502, NULL, NULL, "the engine went away");
    n = fg_oai_error_json(&err, out, sizeof(out));
    j = load(out, n);
    e = json_object_get(j, "error");
    ok(keys(e, fields, 4) && null_is(e, "param") && null_is(e, "code")
       && str_is(e, "type", "server_error"), "param and code null");
    json_decref(j);

    /* mid-stream */
    fg_oai_resp_init(&r, FG_OAI_CHAT, "chatcmpl-s", "m", 1, NULL, 0, 1);
    len = fg_oai_sse_delta(&r, "Once", 4, out, sizeof(out));
    len += fg_oai_sse_error(&r, &err, out + len, sizeof(out) - len);

    n = sse(out, len, ev, N(ev), &bad);
    j = load(ev[2], strlen(ev[2]));
    e = json_object_get(j, "error");
    ok(!bad && n == 4 && keys(j, top, 1)
       && str_is(e, "message", "the engine went away")
       && strcmp(ev[3], "[DONE]") == 0,
       "SSE: role, text, an error event, [DONE]");
    json_decref(j);
}


/*
 * The gateway's own errors (401, 429, 503 ...) go through the same writer
 * as the API layer's: measured with size 0, then written.  What jansson
 * wrote for them before (json_pack, compact) is the same JSON, and the
 * same bytes where no control character needs a \u escape (jansson
 * writes its hex digits in capitals).
 */
static void
test_error_bodies(void)
{
    char           *dump;
    size_t          i, n, k;
    json_t         *j, *ref;
    fg_oai_error_t  err;

    static const struct {
        const char  *type;
        const char  *param;
        const char  *code;
        const char  *message;
        int          same_bytes;
    }  cases[] = {
        { "invalid_request_error", NULL, "invalid_api_key",
          "Incorrect API key provided.", 1 },
        { "invalid_request_error", "max_tokens", NULL,
          "Invalid 'max_tokens': expected an integer of 0 or more.", 1 },
        { "server_error", NULL, "queue_timeout",
          "The request waited 1500 ms in the queue, the most this gateway "
          "allows.", 1 },
        { "requests", NULL, "rate_limit_exceeded",
          "Rate limit reached for requests per min (RPM) of user "
          "caf\xc3\xa9 \"q\" \\ /: Limit 1.\n\t", 1 },
        { "tokens", NULL, "rate_limit_exceeded",
          "control \x01 and \x1f characters", 0 },
    };

    for (i = 0; i < N(cases); i++) {
        n = fg_oai_error_body(cases[i].type, cases[i].param, cases[i].code,
                              cases[i].message, NULL, 0);
        k = fg_oai_error_body(cases[i].type, cases[i].param, cases[i].code,
                              cases[i].message, out, n);

        ref = json_pack("{s:{s:s, s:s, s:s?, s:s?}}", "error",
                        "message", cases[i].message, "type", cases[i].type,
                        "param", cases[i].param, "code", cases[i].code);
        dump = json_dumps(ref, JSON_COMPACT|JSON_PRESERVE_ORDER);
        j = load(out, n);

        ok(n > 0 && k == n && out[n - 1] == '\n' && json_equal(j, ref),
           "gateway error %zu: measured, written, jansson's JSON", i);

        if (cases[i].same_bytes) {
            ok(strlen(dump) == n - 1 && memcmp(dump, out, n - 1) == 0,
               "  and jansson's bytes");
        }

        free(dump);
        json_decref(ref);
        json_decref(j);
    }

    /* jansson refused a message that is not UTF-8 (the gateway sent a
     * 500 instead); the writer makes it valid */
    n = fg_oai_error_body("tokens", NULL, "rate_limit_exceeded",
                          "user \xff\xc3", out, sizeof(out));
    j = load(out, n);
    ok(str_is(json_object_get(j, "error"), "message",
              "user \xef\xbf\xbd\xef\xbf\xbd"),
       "a message of invalid UTF-8: U+FFFD, valid JSON");
    json_decref(j);

    /* the API layer's errors are the same writer */
    fg_oai_error_set(&err, 400, "invalid_value", "stop[1]", "Invalid \"x\"");
    n = fg_oai_error_json(&err, out, sizeof(out));
    k = fg_oai_error_body(err.type, err.param, err.code, err.message,
                          out + n, sizeof(out) - n);
    ok(k == n && memcmp(out, out + n, n) == 0,
       "fg_oai_error_json is fg_oai_error_body of the error's fields");

    fg_oai_error_set(&err, 503, NULL, NULL, "no engine");
    n = fg_oai_error_json(&err, out, sizeof(out));
    k = fg_oai_error_body(err.type, NULL, NULL, err.message, out + n,
                          sizeof(out) - n);
    ok(k == n && memcmp(out, out + n, n) == 0, "  param \"\" is null");
}


/* GET /v1/models */
static void
test_models(void)
{
    size_t         n, k;
    json_t        *j, *d, *m;
    fg_oai_str_t   ids[2];

    static const char *const  top[] = { "object", "data" };
    static const char *const  fields[] = { "id", "object", "created",
                                           "owned_by" };

    ids[0].data = "stories260K";
    ids[0].len = 11;
    ids[1].data = "a\"b\\c\x01";
    ids[1].len = 6;

    n = fg_oai_models_json(ids, 2, 1700000000, NULL, 0);
    k = fg_oai_models_json(ids, 2, 1700000000, out, n);
    j = load(out, n);
    d = json_object_get(j, "data");
    m = json_array_get(d, 1);

    ok(k == n && out[n - 1] == '\n' && keys(j, top, 2)
       && str_is(j, "object", "list") && json_array_size(d) == 2
       && keys(json_array_get(d, 0), fields, 4)
       && str_is(json_array_get(d, 0), "id", "stories260K")
       && str_is(m, "id", "a\"b\\c\x01") && str_is(m, "object", "model")
       && int_is(m, "created", 1700000000)
       && str_is(m, "owned_by", "fairgate"),
       "model list: two models, ids escaped");
    json_decref(j);

    n = fg_oai_models_json(NULL, 0, 0, out, sizeof(out));
    ok(n == sizeof("{\"object\":\"list\",\"data\":[]}\n") - 1
       && memcmp(out, "{\"object\":\"list\",\"data\":[]}\n", n) == 0,
       "no model: an empty list");
}


/* two tokens: " Once" with two alternatives, then a lone UTF-8 lead byte */
static void
lp_sample(fg_oai_lp_t *lp)
{
    memset(lp, 0, 2 * sizeof(fg_oai_lp_t));

    lp[0].tok = (fg_oai_lp_tok_t) { " Once", 5, -0.25f };
    lp[0].n_top = 2;
    lp[0].top[0] = (fg_oai_lp_tok_t) { " Once", 5, -0.25f };
    lp[0].top[1] = (fg_oai_lp_tok_t) { "\"q\"", 3, -1.5f };
    lp[1].tok = (fg_oai_lp_tok_t) { "\xe2", 1, -1e30f };
    lp[1].n_top = 0;
}


/* a map whose alternatives share a text: each text once */
static void
test_logprobs_dup(void)
{
    size_t        n;
    json_t       *j, *t;
    fg_oai_lp_t   lp;

    memset(&lp, 0, sizeof(lp));
    lp.tok = (fg_oai_lp_tok_t) { "a", 1, -2.0f };
    lp.n_top = 3;
    lp.top[0] = (fg_oai_lp_tok_t) { "b", 1, -0.5f };
    lp.top[1] = (fg_oai_lp_tok_t) { "b", 1, -0.75f };
    lp.top[2] = (fg_oai_lp_tok_t) { "c", 1, -1.0f };

    n = fg_oai_lp_json(FG_OAI_COMPLETION, &lp, 1, 0, out, sizeof(out));
    j = load(out, n);
    t = json_array_get(json_object_get(j, "top_logprobs"), 0);
    ok(json_object_size(t) == 3
       && json_real_value(json_object_get(t, "b")) == -0.5
       && json_number_value(json_object_get(t, "a")) == -2.0,
       "the first of a text kept, the sampled token added: b, c, a");
    json_decref(j);
}


static void
test_logprobs(void)
{
    size_t          n, m;
    json_t         *j, *c, *e, *t, *b;
    fg_oai_lp_t     lp[2];
    fg_oai_resp_t   r;
    fg_oai_usage_t  u;

    static const char *const  entry[] = {
        "token", "logprob", "bytes", "top_logprobs"
    };
    static const char *const  alt[] = { "token", "logprob", "bytes" };
    static const char *const  text[] = {
        "tokens", "token_logprobs", "top_logprobs", "text_offset"
    };

    lp_sample(lp);

    n = fg_oai_lp_json(FG_OAI_CHAT, lp, 2, 0, NULL, 0);
    ok(n > 0 && n < sizeof(out)
       && fg_oai_lp_json(FG_OAI_CHAT, lp, 2, 0, out, n) == n,
       "chat logprobs: measured, then written in as many bytes");
    out[n] = '\0';

    j = load(out, n);
    c = json_object_get(j, "content");
    e = json_array_get(c, 0);
    t = json_array_get(json_object_get(e, "top_logprobs"), 1);
    b = json_object_get(e, "bytes");
    ok(json_array_size(c) == 2 && null_is(j, "refusal")
       && keys(e, entry, N(entry)) && str_is(e, "token", " Once")
       && json_real_value(json_object_get(e, "logprob")) == -0.25
       && json_array_size(b) == 5
       && json_integer_value(json_array_get(b, 0)) == 32
       && json_integer_value(json_array_get(b, 4)) == 'e',
       "content[0]: token, logprob, its 5 bytes");
    ok(keys(t, alt, N(alt)) && str_is(t, "token", "\"q\"")
       && json_real_value(json_object_get(t, "logprob")) == -1.5,
       "its second alternative, escaped");

    e = json_array_get(c, 1);
    b = json_object_get(e, "bytes");
    ok(str_is(e, "token", "\xef\xbf\xbd")
       && json_array_size(b) == 1
       && json_integer_value(json_array_get(b, 0)) == 0xe2
       && json_number_value(json_object_get(e, "logprob")) == -9999
       && json_array_size(json_object_get(e, "top_logprobs")) == 0,
       "a lone byte: U+FFFD as token, the byte in bytes, -9999 floor");
    json_decref(j);

    n = fg_oai_lp_json(FG_OAI_COMPLETION, lp, 2, 7, out, sizeof(out));
    j = load(out, n);
    t = json_array_get(json_object_get(j, "top_logprobs"), 0);
    ok(keys(j, text, N(text))
       && json_array_size(json_object_get(j, "tokens")) == 2
       && json_integer_value(json_array_get(json_object_get(j,
                                            "text_offset"), 1)) == 12
       && json_object_size(t) == 2
       && json_real_value(json_object_get(t, "\"q\"")) == -1.5,
       "completions: columns, offsets from 7, alternatives as a map");
    t = json_array_get(json_object_get(j, "top_logprobs"), 1);
    ok(json_object_size(t) == 1
       && json_number_value(json_object_get(t, "\xef\xbf\xbd")) == -9999,
       "the sampled token in its map when not among the alternatives");
    json_decref(j);

    /* in a body and in a chunk */
    fg_oai_resp_init(&r, FG_OAI_COMPLETION, "cmpl-x", "m", 1, NULL, 1, 0);
    r.lp = out;
    r.lp_len = n;
    memset(&u, 0, sizeof(u));

    m = fg_oai_resp_json(&r, " Once", 5, FG_OAI_FINISH_LENGTH, &u,
                         out + n, fg_oai_resp_bound(&r, 5));
    j = load(out + n, m);
    c = json_array_get(json_object_get(j, "choices"), 0);
    ok(json_is_object(json_object_get(c, "logprobs")),
       "a body carries the logprobs it is given");
    json_decref(j);

    m = fg_oai_sse_delta(&r, "", 0, out + n, fg_oai_resp_bound(&r, 0));
    ok(m > 6 && strncmp(out + n, "data: ", 6) == 0
       && strstr(out + n, "\"text\":\"\"") != NULL
       && strstr(out + n, "\"text_offset\":[7,12]") != NULL,
       "with logprobs, a chunk goes out even without text");

    r.lp = NULL;
    ok(fg_oai_sse_delta(&r, "", 0, out + n, fg_oai_resp_bound(&r, 0)) == 0,
       "without, nothing");
}


/* n choices: a body of them in order, a stream's chunks under their
 * indices, each choice's finish, then the usage and [DONE] */
static void
test_choices(void)
{
    int              bad, good;
    size_t           n, len, i;
    json_t          *j, *c, *e[16];
    fg_oai_resp_t    r;
    fg_oai_usage_t   u;
    fg_oai_choice_t  ch[3];

    u.prompt_tokens = 5;
    u.completion_tokens = 7;
    u.cached_tokens = 0;

    ch[0] = (fg_oai_choice_t) { "a", 1, FG_OAI_FINISH_LENGTH, NULL, 0 };
    ch[1] = (fg_oai_choice_t) { "bb", 2, FG_OAI_FINISH_STOP, "{\"x\":1}",
                                7 };
    ch[2] = (fg_oai_choice_t) { "", 0, FG_OAI_FINISH_STOP, NULL, 0 };

    fg_oai_resp_init(&r, FG_OAI_COMPLETION, "cmpl-n", "m", 1, NULL, 1, 0);
    r.n = 3;
    len = fg_oai_resp_choices(&r, ch, 3, &u, out, sizeof(out));
    ok(len < fg_oai_resp_bound(&r, 3), "within the bound");
    j = load(out, len);
    c = json_object_get(j, "choices");
    good = json_array_size(c) == 3;

    for (i = 0; good && i < 3; i++) {
        good = int_is(json_array_get(c, i), "index", (json_int_t) i)
               && str_is(json_array_get(c, i), "text", ch[i].text)
               && str_is(json_array_get(c, i), "finish_reason",
                         i ? "stop" : "length");
    }

    ok(good, "a body of 3 choices, in order, each its text and finish");
    ok(json_is_null(json_object_get(json_array_get(c, 0), "logprobs"))
       && int_is(json_object_get(json_array_get(c, 1), "logprobs"), "x", 1),
       "each its logprobs, null without");
    ok(usage_is(json_object_get(j, "usage"), 5, 7, 0), "one usage");
    json_decref(j);

    fg_oai_resp_init(&r, FG_OAI_CHAT, "chatcmpl-s", "m", 1, "fp", 42, 1);
    r.n = 2;
    r.index = 1;
    len = fg_oai_sse_delta(&r, "x", 1, out, sizeof(out));
    r.index = 0;
    len += fg_oai_sse_choice_end(&r, FG_OAI_FINISH_STOP, out + len,
                                 sizeof(out) - len);
    r.index = 1;
    len += fg_oai_sse_choice_end(&r, FG_OAI_FINISH_LENGTH, out + len,
                                 sizeof(out) - len);
    len += fg_oai_sse_done(&r, &u, out + len, sizeof(out) - len);

    n = sse(out, len, ev, 16, &bad);
    ok(!bad && n == 7 && strcmp(ev[6], "[DONE]") == 0,
       "2 role chunks, a text, 2 finishes, usage, [DONE]");

    for (i = 0; i < 6 && i < n; i++) {
        e[i] = load(ev[i], strlen(ev[i]));
    }

    if (n == 7) {
        ok(int_is(json_array_get(json_object_get(e[0], "choices"), 0),
                  "index", 0)
           && int_is(json_array_get(json_object_get(e[1], "choices"), 0),
                     "index", 1), "a role chunk a choice, in order");
        c = json_array_get(json_object_get(e[2], "choices"), 0);
        ok(int_is(c, "index", 1), "the text under its choice's index");
        c = json_array_get(json_object_get(e[4], "choices"), 0);
        ok(int_is(c, "index", 1) && str_is(c, "finish_reason", "length"),
           "each choice's own finish");
        ok(usage_is(json_object_get(e[5], "usage"), 5, 7, 0)
           && json_array_size(json_object_get(e[5], "choices")) == 0,
           "the usage chunk after the last");
    }

    for (i = 0; i < 6 && i < n; i++) {
        json_decref(e[i]);
    }
}


int
main(void)
{
    test_id();
    test_bodies();
    test_escapes();
    test_stream_chat(0);
    test_stream_chat(1);
    test_stream_completion();
    test_errors();
    test_error_bodies();
    test_models();
    test_logprobs();
    test_logprobs_dup();
    test_choices();

    return done_testing();
}
