
/*
 * fairgate: tests of the reading of an upstream's usage in drop-in mode
 * (fg_usage.c): a chat's body and stream, and the Responses API's, whose
 * usage has other names (input_tokens, output_tokens) and other places
 * (a stream's last event holds it under "response"), and whose text
 * (output[i].content[j].text, a stream's deltas) is the estimate while
 * no usage has come; embeddings' (input only) and Anthropic's Messages
 * API's (a prompt cache's reads and writes apart from input_tokens, a
 * stream whose first event says the input and whose message_delta the
 * output), and the cached tokens of each.
 */


#include <stdint.h>
#include <string.h>

#include "fg_tap.h"
#include "fg_usage.h"


/* a whole body as the filter reads it: the usage at its end, else the
 * scan; the output estimate and the usage found */
static uint32_t
body(const char *text, fg_usage_t *u)
{
    const unsigned char  *p;

    memset(u, 0, sizeof(fg_usage_t));
    p = (const unsigned char *) text;

    if (fg_usage_at_end(u, p, p + strlen(text)) == 0 && u->found) {
        return 0;
    }

    memset(u, 0, sizeof(fg_usage_t));

    return fg_usage_scan(u, p, strlen(text), 1);
}


static void cached_tests(void);
static void embed_tests(void);
static void messages_tests(void);


static uint32_t
line(const char *text, fg_usage_t *u)
{
    const unsigned char  *p;

    memset(u, 0, sizeof(fg_usage_t));
    p = (const unsigned char *) text;

    return fg_usage_sse_line(u, p, p + strlen(text));
}


/* fg_usage_cap: the usage reported against what the gateway saw */

static void
cap_tests(void)
{
    uint64_t         max_in, max_out;
    fg_usage_t       u;
    fg_usage_seen_t  seen;

    memset(&seen, 0, sizeof(fg_usage_seen_t));
    seen.body_bytes = 100;
    seen.bytes_out = 500;
    seen.max_out = 10;
    seen.max_out_set = 1;

    u.in = 20;
    u.out = 10;
    ok(fg_usage_cap(&u, &seen, &max_in, &max_out) == 0
       && u.in == 20 && u.out == 10, "cap: honest usage as it is");
    ok(max_in == 100 + FG_USAGE_ADDED && max_out == 10,
       "cap: the body's bytes and the allowance; the request's max");

    u.out = 1000000000;
    ok(fg_usage_cap(&u, &seen, &max_in, &max_out) == 1
       && u.in == 20 && u.out == 10,
       "cap: a billion completion tokens, capped at the max");

    seen.max_out_set = 0;
    u.out = 1000000000;
    ok(fg_usage_cap(&u, &seen, &max_in, &max_out) == 1 && u.out == 500,
       "cap: no max set, the response's bytes");

    u.in = UINT32_MAX / 4;
    u.out = 500;
    ok(fg_usage_cap(&u, &seen, &max_in, &max_out) == 1
       && u.in == 100 + FG_USAGE_ADDED && u.out == 500,
       "cap: prompt tokens at the body's bytes and the allowance");

    seen.max_out_set = 1;
    seen.max_out = 0;
    u.in = 0;
    u.out = 1;
    ok(fg_usage_cap(&u, &seen, &max_in, &max_out) == 1 && u.out == 0,
       "cap: max_tokens 0, no output");
}


/* the prompt tokens a cache held: OpenAI's details, Anthropic's reads */

static void
cached_tests(void)
{
    fg_usage_t  u;

    static const char  dup[] =
        "{\"usage\":{\"cache_read_input_tokens\":5,\"output_tokens\":9},"
        "\"usage\":{\"input_tokens\":1}}";

    body("{\"choices\":[],\"usage\":{\"prompt_tokens\":50,"
         "\"completion_tokens\":2,\"prompt_tokens_details\":"
         "{\"cached_tokens\":32}}}", &u);
    ok(u.found && u.in == 50 && u.cached_set && u.cached == 32,
       "chat: prompt_tokens_details.cached_tokens");

    line("data: {\"type\":\"response.completed\",\"response\":{"
         "\"usage\":{\"input_tokens\":40,\"input_tokens_details\":"
         "{\"cached_tokens\":16},\"output_tokens\":3}}}", &u);
    ok(u.found && u.in == 40 && u.cached == 16,
       "responses stream: input_tokens_details.cached_tokens");

    body("{\"choices\":[],\"usage\":{\"prompt_tokens\":5,"
         "\"completion_tokens\":2,\"prompt_tokens_details\":"
         "{\"cached_tokens\":99}}}", &u);
    ok(u.cached == 5, "cached tokens are at most the input");

    body("{\"choices\":[],\"usage\":{\"prompt_tokens\":5,"
         "\"completion_tokens\":2}}", &u);
    ok(u.found && !u.cached_set, "no details: cached unknown");

    memset(&u, 0, sizeof(fg_usage_t));
    fg_usage_scan(&u, (const unsigned char *) dup, sizeof(dup) - 1, 1);
    ok(u.in_set && u.in == 1 && !u.out_set && !u.cached_set,
       "the last usage object is the usage, as read at the end");
}


static void
embed_tests(void)
{
    fg_usage_t            u;
    const unsigned char  *p;

    static const char  emb[] =
        "{\"object\":\"list\",\"data\":[{\"object\":\"embedding\","
        "\"index\":0,\"embedding\":[0.1,-0.2]}],\"model\":\"m\","
        "\"usage\":{\"prompt_tokens\":8,\"total_tokens\":8}}";

    memset(&u, 0, sizeof(fg_usage_t));
    p = (const unsigned char *) emb;

    ok(fg_usage_at_end(&u, p, p + sizeof(emb) - 1) == 0
       && u.in_set && u.in == 8 && !u.out_set && !u.found,
       "embeddings: the input at the end, no output");

    /* the last bytes only, as a body too large to keep is */
    memset(&u, 0, sizeof(fg_usage_t));
    ok(fg_usage_at_end(&u, p + 40, p + sizeof(emb) - 1) == 0
       && u.in == 8, "embeddings: read from the body's tail");
}


static void
messages_tests(void)
{
    uint32_t    n;
    fg_usage_t  u;

    n = body("{\"id\":\"msg_1\",\"type\":\"message\",\"role\":"
             "\"assistant\",\"content\":[{\"type\":\"text\",\"text\":"
             "\"1234567890123456\"}],\"model\":\"m\",\"stop_reason\":"
             "\"end_turn\",\"usage\":{\"input_tokens\":10,"
             "\"cache_creation_input_tokens\":20,"
             "\"cache_read_input_tokens\":30,\"output_tokens\":4}}", &u);
    ok(u.found && u.in == 60 && u.out == 4 && u.cached == 30,
       "a Message: input, cache writes and reads; the reads cached");

    n = body("{\"type\":\"message\",\"content\":[{\"type\":\"text\","
             "\"text\":\"1234567890123456\"}],\"usage\":{\"input_tokens\":"
             "1},\"stop_reason\":null}", &u);
    ok(!u.found && n == 4, "a Message without output: its text, 4");

    n = line("data: {\"type\":\"message_start\",\"message\":{\"id\":"
             "\"msg_1\",\"content\":[],\"usage\":{\"input_tokens\":25,"
             "\"cache_read_input_tokens\":5,\"output_tokens\":1}}}", &u);
    ok(n == 0 && u.in_set && u.in == 30 && !u.out_set && u.cached == 5,
       "message_start: the input; its output so far is not taken");

    n = line("data: {\"type\":\"content_block_delta\",\"index\":0,"
             "\"delta\":{\"type\":\"text_delta\",\"text\":\"12345678\"}}",
             &u);
    ok(n == 2 && !u.in_set && !u.out_set, "content_block_delta: 2 tokens");

    n = line("data: {\"type\":\"content_block_delta\",\"index\":1,"
             "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":"
             "\"{\\\"a\\\": 1}\"}}", &u);
    ok(n == 2, "a tool's input_json_delta");

    n = line("data: {\"type\":\"content_block_start\",\"index\":0,"
             "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}",
             &u);
    ok(n == 0, "content_block_start: nothing");

    n = line("data: {\"type\":\"message_delta\",\"delta\":{"
             "\"stop_reason\":\"end_turn\",\"stop_sequence\":null},"
             "\"usage\":{\"output_tokens\":15}}", &u);
    ok(n == 0 && u.out_set && u.out == 15 && !u.in_set,
       "message_delta: the output; stop_reason is no text");

    n = line("event: message_delta", &u);
    ok(n == 0 && !u.out_set, "an event line is no data");
}


int
main(void)
{
    uint32_t    n;
    fg_usage_t  u;

    /* the chat's, as before */

    body("{\"choices\":[{\"message\":{\"content\":\"12345678\"}}],"
         "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2,"
         "\"total_tokens\":7}}", &u);
    ok(u.found && u.in == 5 && u.out == 2, "chat: the usage at the end");

    n = line("data: {\"choices\":[{\"delta\":{\"content\":\"12345678\"}}]}",
             &u);
    ok(n == 2 && !u.found, "chat stream: a chunk's text, 2 tokens");

    /* the Responses API */

    n = body("{\"id\":\"resp_1\",\"object\":\"response\",\"output\":[{"
             "\"type\":\"message\",\"content\":[{\"type\":\"output_text\","
             "\"text\":\"1234567890123456\",\"annotations\":[]}]}],"
             "\"usage\":{\"input_tokens\":11,\"input_tokens_details\":"
             "{\"cached_tokens\":4},\"output_tokens\":3,\"output_tokens_"
             "details\":{\"reasoning_tokens\":0},\"total_tokens\":14},"
             "\"user\":null,\"metadata\":{}}", &u);
    ok(u.found && u.in == 11 && u.out == 3,
       "a Response: its usage, though not last, in its names");
    is_int(n, 4, "and its output text's estimate");

    body("{\"object\":\"response\",\"usage\":{\"input_tokens\":2,"
         "\"output_tokens\":9,\"total_tokens\":11}}", &u);
    ok(u.found && u.in == 2 && u.out == 9,
       "a Response with its usage last: read at the end");

    n = line("data: {\"type\":\"response.output_text.delta\","
             "\"sequence_number\":4,\"item_id\":\"msg_1\",\"output_index\":0,"
             "\"content_index\":0,\"delta\":\"12345678\",\"logprobs\":[]}",
             &u);
    ok(n == 2 && !u.found, "a delta event: its text, 2 tokens");

    n = line("data: {\"type\":\"response.output_text.delta\","
             "\"delta\":\"a\"}", &u);
    ok(n == 1, "a short delta: 1 token");

    n = line("data: {\"type\":\"response.output_text.done\",\"text\":"
             "\"12345678\"}", &u);
    ok(n == 0 && !u.found, "the done event's text is not counted again");

    n = line("data: {\"type\":\"response.completed\",\"sequence_number\":9,"
             "\"response\":{\"id\":\"resp_1\",\"output\":[{\"type\":"
             "\"message\",\"content\":[{\"type\":\"output_text\",\"text\":"
             "\"12345678\"}]}],\"usage\":{\"input_tokens\":7,"
             "\"input_tokens_details\":{\"cached_tokens\":0},"
             "\"output_tokens\":5,\"total_tokens\":12},\"metadata\":{}}}",
             &u);
    ok(n == 0 && u.found && u.in == 7 && u.out == 5,
       "the last event: the usage under response, the text not again");

    n = line("data: {\"type\":\"response.incomplete\",\"response\":{"
             "\"usage\":{\"input_tokens\":1,\"output_tokens\":16}}}", &u);
    ok(u.found && u.in == 1 && u.out == 16, "response.incomplete too");

    n = line("data: {\"response\":{\"usage\":{\"input_tokens\":-1,"
             "\"output_tokens\":2.5}}}", &u);
    ok(!u.found, "negative or fractional counts are no usage");

    cached_tests();
    embed_tests();
    messages_tests();
    cap_tests();

    return done_testing();
}
