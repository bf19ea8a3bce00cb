
/*
 * fairgate: tests of the load generator's requests: prompt text, bodies
 * of a trace line's lengths, headers, and what --header accepts.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fg_tap.h"
#include "fg_load_req.h"


static size_t
words(const char *s)
{
    size_t  n;

    for (n = 0; *s; s++) {
        if (*s != ' ' && (s[1] == ' ' || s[1] == '\0')) {
            n++;
        }
    }

    return n;
}


static void
test_prompt(void)
{
    char  *a, *b, *c, *z;

    a = fg_load_prompt(500, 7);
    b = fg_load_prompt(500, 7);
    c = fg_load_prompt(500, 8);
    z = fg_load_prompt(0, 7);

    ok(a && b && c && z, "prompts made");
    if (!(a && b && c && z)) {
        return;
    }

    is_int(words(a), 500, "500 words for 500 tokens");
    ok(a[0] != ' ' && strstr(a, "  ") == NULL
       && a[strlen(a) - 1] != ' ', "one space between words, none around");
    ok(strcmp(a, b) == 0, "the same seed, the same text");
    ok(strcmp(a, c) != 0 && strncmp(a, c, 20) != 0,
       "another seed, another text from its start");
    is_str(z, "", "0 words: empty");

    free(a);
    free(b);
    free(c);
    free(z);
}


/* the body of request i, parsed */
static json_t *
body(const fg_load_req_conf_t *conf, const fg_sim_trace_t *tr, size_t i)
{
    char    *text;
    json_t  *j;

    text = fg_load_req_body(conf, tr, i);
    if (text == NULL) {
        return NULL;
    }

    j = json_loads(text, 0, NULL);
    free(text);

    return j;
}


static const char *
content(json_t *b, size_t m)
{
    return json_string_value(json_object_get(
               json_array_get(json_object_get(b, "messages"), m), "content"));
}


static const char *
role(json_t *b, size_t m)
{
    return json_string_value(json_object_get(
               json_array_get(json_object_get(b, "messages"), m), "role"));
}


static void
test_body(void)
{
    json_t              *b0, *b1, *b2, *b3;
    fg_sim_req_t        *r;
    fg_sim_trace_t       tr;
    fg_load_req_conf_t   conf;

    memset(&conf, 0, sizeof(fg_load_req_conf_t));
    conf.model = "m1";
    conf.stream = 1;
    conf.ignore_eos = 1;

    fg_sim_trace_init(&tr);
    (void) fg_sim_trace_client(&tr, "alice");

    /* 0: plain; 1, 2: an app's stage 0 and 1; 3: same as 1, not streamed */
    (void) fg_sim_trace_add(&tr, 0, 0, 100, 32, 32);
    (void) fg_sim_trace_add(&tr, 1, 0, 300, 8, 8);
    (void) fg_sim_trace_add(&tr, 2, 0, 300, 8, 8);
    (void) fg_sim_trace_add(&tr, 3, 0, 250, 8, 8);

    r = &tr.reqs[1];
    r->app = (uint32_t) fg_sim_trace_str(&tr, "agent");
    r->model = (uint32_t) fg_sim_trace_str(&tr, "small");
    r->system_tokens = 200;
    r->stage = 0;

    tr.reqs[2] = *r;
    tr.reqs[2].stage = 1;

    tr.reqs[3] = *r;
    tr.reqs[3].input_tokens = 250;
    tr.reqs[3].stream = 0;

    b0 = body(&conf, &tr, 0);
    b1 = body(&conf, &tr, 1);
    b2 = body(&conf, &tr, 2);
    b3 = body(&conf, &tr, 3);

    ok(b0 && b1 && b2 && b3, "bodies are JSON");
    if (!(b0 && b1 && b2 && b3)) {
        return;
    }

    ok(strcmp(json_string_value(json_object_get(b0, "model")), "m1") == 0
       && json_integer_value(json_object_get(b0, "max_tokens")) == 32
       && json_is_true(json_object_get(b0, "stream"))
       && json_is_true(json_object_get(json_object_get(b0,
                                                       "stream_options"),
                                       "include_usage"))
       && json_is_true(json_object_get(b0, "ignore_eos")),
       "model, max_tokens = output_tokens, stream with usage, ignore_eos");
    ok(json_array_size(json_object_get(b0, "messages")) == 1
       && strcmp(role(b0, 0), "user") == 0 && words(content(b0, 0)) == 100,
       "a plain line: one user message of input_tokens words");
    ok(strcmp(json_string_value(json_object_get(b1, "model")), "small")
       == 0, "a line naming its model (several models) asks for it");

    ok(json_array_size(json_object_get(b1, "messages")) == 2
       && strcmp(role(b1, 0), "system") == 0
       && words(content(b1, 0)) == 200
       && strcmp(role(b1, 1), "user") == 0 && words(content(b1, 1)) == 100,
       "system_tokens: a system message of them, the user the rest");
    ok(strcmp(content(b1, 0), content(b3, 0)) == 0,
       "the same app and stage: the same system prompt");
    ok(strcmp(content(b1, 0), content(b2, 0)) != 0,
       "another stage: another system prompt");
    ok(strcmp(content(b1, 1), content(b2, 1)) != 0,
       "each request its own user text");
    ok(json_is_false(json_object_get(b3, "stream"))
       && json_object_get(b3, "stream_options") == NULL
       && words(content(b3, 1)) == 50,
       "\"stream\": false in the trace: no stream, no stream_options");

    json_decref(b0);
    json_decref(b1);

    conf.stream = 0;
    conf.ignore_eos = 0;
    b0 = body(&conf, &tr, 0);
    b1 = body(&conf, &tr, 1);

    ok(b0 && json_is_false(json_object_get(b0, "stream"))
       && json_object_get(b0, "ignore_eos") == NULL,
       "--stream off, --no-ignore-eos");
    ok(b1 && json_is_true(json_object_get(b1, "stream")) == 0
       && fg_load_req_stream(&conf, &tr.reqs[1]) == 0,
       "a line without \"stream\" follows --stream");

    tr.reqs[1].stream = 1;
    ok(fg_load_req_stream(&conf, &tr.reqs[1]) == 1,
       "a line's \"stream\" wins over --stream");

    json_decref(b0);
    json_decref(b1);
    json_decref(b2);
    json_decref(b3);
    fg_sim_trace_free(&tr);
}


/* the headers of request i, one string, a header a line */
static void
headers(const fg_load_req_conf_t *conf, const fg_sim_trace_t *tr, size_t i,
    char *buf, size_t size)
{
    size_t              len;
    struct curl_slist  *h, *l;

    h = fg_load_req_headers(conf, tr, i);
    buf[0] = '\0';

    for (len = 0, l = h; l != NULL && len < size; l = l->next) {
        len += snprintf(buf + len, size - len, "%s\n", l->data);
    }

    curl_slist_free_all(h);
}


static void
test_headers(void)
{
    char                 buf[1024];
    uint32_t            *stages;
    fg_sim_req_t        *r;
    fg_sim_trace_t       tr;
    struct curl_slist   *extra;
    fg_load_req_conf_t   conf;

    memset(&conf, 0, sizeof(fg_load_req_conf_t));
    conf.model = "m";

    fg_sim_trace_init(&tr);
    (void) fg_sim_trace_client(&tr, "alice");
    (void) fg_sim_trace_add(&tr, 0, 0, 10, 10, 10);
    (void) fg_sim_trace_add(&tr, 0, 0, 10, 10, 10);

    headers(&conf, &tr, 0, buf, sizeof(buf));
    is_str(buf, "Content-Type: application/json\nExpect:\nX-User: alice\n",
           "a plain line: JSON, no Expect, X-User the client");

    conf.key_prefix = "sk-";
    headers(&conf, &tr, 0, buf, sizeof(buf));
    ok(strstr(buf, "Authorization: Bearer sk-alice\n") != NULL,
       "--key-prefix: Bearer PREFIX + client");

    r = &tr.reqs[1];
    r->key = (uint32_t) fg_sim_trace_str(&tr, "sk-own");
    r->user = (uint32_t) fg_sim_trace_str(&tr, "ann");
    r->app = (uint32_t) fg_sim_trace_str(&tr, "chat");
    r->interaction = (uint32_t) fg_sim_trace_str(&tr, "ann-7");
    r->stage = 2;

    /* a later line of ann-7 at stage 4: the interaction has 5 stages */
    (void) fg_sim_trace_add(&tr, 1, 0, 10, 10, 10);
    tr.reqs[2].interaction = tr.reqs[1].interaction;
    tr.reqs[2].stage = 4;

    /* bob-1 gives no stage: no X-Fairgate-Stages */
    (void) fg_sim_trace_add(&tr, 2, 0, 10, 10, 10);
    tr.reqs[3].interaction = (uint32_t) fg_sim_trace_str(&tr, "bob-1");

    extra = curl_slist_append(NULL, "X-Mock-Delay: 0.5");
    conf.headers = extra;

    headers(&conf, &tr, 1, buf, sizeof(buf));
    is_str(buf, "Content-Type: application/json\nExpect:\n"
           "Authorization: Bearer sk-own\nX-User: ann\nX-App: chat\n"
           "X-Fairgate-Interaction: ann-7\nX-Fairgate-Stage: 2\n"
           "X-Fairgate-Stages: 5\nX-Mock-Delay: 0.5\n",
           "the line's key wins; user, app, interaction, stage, the "
           "interaction's stages from the whole trace; --header last");

    stages = fg_load_req_stages(&tr);

    ok(stages != NULL && stages[tr.reqs[1].interaction] == 5
       && stages[tr.reqs[3].interaction] == 0 && stages[tr.reqs[1].app] == 0
       && stages[tr.reqs[1].user] == 0,
       "fg_load_req_stages(): ann-7 has 5 stages; bob-1, with none "
       "given, 0; strings that are no interaction 0");

    conf.stages = stages;
    conf.headers = NULL;

    headers(&conf, &tr, 2, buf, sizeof(buf));
    ok(strstr(buf, "X-Fairgate-Interaction: ann-7\nX-Fairgate-Stage: 4\n"
              "X-Fairgate-Stages: 5\n") != NULL,
       "with the table: the last stage says 4 of 5");

    headers(&conf, &tr, 3, buf, sizeof(buf));
    is_str(buf, "Content-Type: application/json\nExpect:\n"
           "Authorization: Bearer sk-alice\nX-User: alice\n"
           "X-Fairgate-Interaction: bob-1\n",
           "an interaction without stages: no X-Fairgate-Stage(s)");

    tr.reqs[3].stage = 0;
    free(stages);
    stages = fg_load_req_stages(&tr);
    conf.stages = stages;

    headers(&conf, &tr, 3, buf, sizeof(buf));
    ok(strstr(buf, "X-Fairgate-Stage: 0\nX-Fairgate-Stages: 1\n") != NULL,
       "a single stage 0: stage 0 of 1");

    /* expectations: on the run's clock, within what the gateway reads */
    conf.time_scale = 0.5;
    tr.reqs[0].ttft_target = 1.0;
    tr.reqs[0].tokens_per_s = 4.0;
    headers(&conf, &tr, 0, buf, sizeof(buf));
    ok(strstr(buf, "X-Fairgate-TTFT: 0.500\n"
              "X-Fairgate-Reading-Speed: 8.000\n") != NULL,
       "a line's expectations, at half time: TTFT halved, speed doubled");

    conf.time_scale = 0.0001;
    headers(&conf, &tr, 0, buf, sizeof(buf));
    ok(strstr(buf, "X-Fairgate-TTFT: 0.001\n"
              "X-Fairgate-Reading-Speed: 10000.000\n") != NULL,
       "scaled beyond what the gateway reads: its bounds");

    headers(&conf, &tr, 2, buf, sizeof(buf));
    ok(strstr(buf, "X-Fairgate-TTFT") == NULL
       && strstr(buf, "X-Fairgate-Reading-Speed") == NULL,
       "a line without expectations sends none");

    curl_slist_free_all(extra);
    free(stages);

    fg_sim_trace_free(&tr);

    ok(fg_load_req_header_ok("X-A: b c") == 0
       && fg_load_req_header_ok("X-A:") == 0
       && fg_load_req_header_ok("x!#$%&'*+-.^_`|~9: \tv") == 0,
       "--header: names of token characters, any visible value");
    ok(fg_load_req_header_ok("X A: b") != 0
       && fg_load_req_header_ok(": b") != 0
       && fg_load_req_header_ok("X-A b") != 0
       && fg_load_req_header_ok("X-A: b\r\nX-B: c") != 0
       && fg_load_req_header_ok("X-A: b\n") != 0,
       "--header: no space in a name, no empty name, a colon, no CR or LF");
}


/*
 * Shared prefixes: requests of one id send the same prefix_tokens words,
 * and their own words after it; a shorter use of an id is a prefix of a
 * longer; another id shares nothing; the prefix takes the system
 * message's place.
 */
static void
test_prefix(void)
{
    int                  good;
    size_t               i, n;
    json_t              *b[6];
    fg_sim_req_t        *r;
    fg_sim_trace_t       tr;
    fg_load_req_conf_t   conf;

    memset(&conf, 0, sizeof(fg_load_req_conf_t));
    conf.model = "m";

    fg_sim_trace_init(&tr);
    (void) fg_sim_trace_client(&tr, "a");

    /* 0, 1: g0 of 300; 2: g0 of 100; 3: g1 of 300; 4: all prefix;
     * 5: a prefix and system_tokens, which it overrides */
    for (i = 0; i < 6; i++) {
        (void) fg_sim_trace_add(&tr, (double) i, 0, 400, 8, 8);
        r = &tr.reqs[i];
        r->prefix = (uint32_t) fg_sim_trace_str(&tr, i == 3 ? "g1" : "g0");
        r->prefix_tokens = i == 2 ? 100 : 300;
    }

    tr.reqs[4].input_tokens = 300;
    tr.reqs[5].system_tokens = 50;
    tr.reqs[5].app = (uint32_t) fg_sim_trace_str(&tr, "chat");

    good = 1;

    for (i = 0; i < 6; i++) {
        b[i] = body(&conf, &tr, i);
        good = good && b[i] != NULL;
    }

    ok(good, "bodies with prefixes are JSON");
    if (!good) {
        return;
    }

    ok(strcmp(role(b[0], 0), "system") == 0
       && words(content(b[0], 0)) == 300 && words(content(b[0], 1)) == 100,
       "the prefix's 300 words in the system message, the other 100 in "
       "the user's");
    ok(strcmp(content(b[0], 0), content(b[1], 0)) == 0
       && strcmp(content(b[0], 1), content(b[1], 1)) != 0
       && strncmp(content(b[0], 1), content(b[1], 1), 20) != 0,
       "two requests of one prefix: the same prefix, then their own text "
       "from its first word");

    n = strlen(content(b[2], 0));
    ok(words(content(b[2], 0)) == 100
       && strncmp(content(b[0], 0), content(b[2], 0), n) == 0
       && content(b[0], 0)[n] == ' ',
       "a shorter use of the id: its first 100 words");
    ok(strncmp(content(b[0], 0), content(b[3], 0), 20) != 0,
       "another id: another text from its start");
    ok(words(content(b[4], 0)) == 300 && words(content(b[4], 1)) == 1
       && strcmp(content(b[4], 0), content(b[0], 0)) == 0,
       "a prompt all prefix: the prefix, and one word of its own");
    ok(strcmp(content(b[5], 0), content(b[0], 0)) == 0
       && json_array_size(json_object_get(b[5], "messages")) == 2,
       "the prefix takes the place of system_tokens' message");

    for (i = 0; i < 6; i++) {
        json_decref(b[i]);
    }

    fg_sim_trace_free(&tr);
}


int
main(void)
{
    test_prompt();
    test_body();
    test_headers();
    test_prefix();

    return done_testing();
}
