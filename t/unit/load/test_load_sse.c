
/*
 * fairgate: tests of the load generator's SSE parser: whole streams and
 * the same split at every byte, line ends, multi-line events, comments,
 * usage, and every way a stream can be broken.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_tap.h"
#include "fg_load_sse.h"


#define CHUNK(content)                                                        \
    "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\","             \
    "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" content "\"},"    \
    "\"finish_reason\":null}]}\n\n"


static const char  good[] =
    ": a comment first\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
    "\"content\":\"\"}}]}\n\n"
    CHUNK("Once")
    CHUNK(" upon")
    "event: message\nid: 3\nretry: 100\n"
    CHUNK(" a")
    "data: {\"choices\":[{\"index\":0,\"delta\":{},"
    "\"finish_reason\":\"length\"}]}\n\n"
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,"
    "\"completion_tokens\":3,\"total_tokens\":15}}\n\n"
    "data: [DONE]\n\n";


typedef struct {
    int     tokens;
    size_t  at[16];         /* bytes fed when each token was seen */
    size_t  fed;
} seen_t;


static void
on_token(void *data)
{
    seen_t  *s = data;

    if (s->tokens < 16) {
        s->at[s->tokens] = s->fed;
    }

    s->tokens++;
}


/* feeds text in pieces of the given sizes (0 ends the list, then whole) */
static int
feed(fg_load_sse_t *sse, seen_t *seen, const char *text, size_t len,
    const size_t *pieces)
{
    size_t  off, n;

    off = 0;

    while (off < len) {
        n = pieces != NULL && *pieces ? *pieces++ : len - off;
        n = n > len - off ? len - off : n;
        seen->fed = off + n;

        if (fg_load_sse_feed(sse, text + off, n) != 0) {
            return -1;
        }

        off += n;
    }

    return fg_load_sse_finish(sse);
}


/* a fresh reader, its tokens seen */
static void
start(fg_load_sse_t *sse, seen_t *seen)
{
    memset(seen, 0, sizeof(seen_t));
    fg_load_sse_init(sse, on_token, seen);
}


/* a fresh reader fed the whole of text at once: feed()'s result */
static int
read_all(fg_load_sse_t *sse, seen_t *seen, const char *text)
{
    start(sse, seen);

    return feed(sse, seen, text, strlen(text), NULL);
}


static void
test_good(void)
{
    int             rc, same;
    size_t          i, len, pieces[3];
    seen_t          seen;
    fg_load_sse_t   sse;

    len = strlen(good);

    start(&sse, &seen);
    rc = feed(&sse, &seen, good, len, NULL);

    ok(rc == 0, "a whole stream parses");
    if (rc != 0) {
        diag("%s", sse.err);
    }

    ok(sse.done && sse.tokens == 3 && seen.tokens == 3,
       "three chunks with content are tokens; role-only and finish are not");
    ok(sse.prompt_tokens == 12 && sse.completion_tokens == 3,
       "usage read from the last chunk");
    ok(sse.cached_tokens == -1, "no cached tokens said");
    is_int(sse.events, 7, "seven events with data, [DONE] included");
    fg_load_sse_free(&sse);

    /* split in two at every byte: the same, each token when complete */
    same = 1;

    for (i = 1; i < len; i++) {
        start(&sse, &seen);

        pieces[0] = i;
        pieces[1] = 0;

        if (feed(&sse, &seen, good, len, pieces) != 0 || sse.tokens != 3
            || sse.prompt_tokens != 12 || !sse.done)
        {
            diag("split at %zu: %s", i, sse.err);
            same = 0;
        }

        fg_load_sse_free(&sse);
    }

    ok(same, "split in two at each of %zu bytes: the same stream", len);

    /* a byte a read */
    start(&sse, &seen);

    for (i = 0, rc = 0; i < len && rc == 0; i++) {
        seen.fed = i + 1;
        rc = fg_load_sse_feed(&sse, good + i, 1);
    }

    rc = rc == 0 ? fg_load_sse_finish(&sse) : rc;

    ok(rc == 0 && sse.tokens == 3 && sse.done, "a byte a read");

    /* the token is seen at the blank line that ends its event */
    ok(seen.tokens == 3 && good[seen.at[0] - 1] == '\n'
       && good[seen.at[0] - 2] == '\n'
       && strstr(good, CHUNK("Once")) + strlen(CHUNK("Once"))
          == good + seen.at[0],
       "a token counts when its event ends, not before");
    fg_load_sse_free(&sse);
}


/* OpenAI's prompt_tokens_details.cached_tokens, in a stream's usage */
static void
test_cached(void)
{
    seen_t          seen;
    fg_load_sse_t   sse;

    ok(read_all(&sse, &seen,
                "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n"
                "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":40,"
                "\"completion_tokens\":1,\"prompt_tokens_details\":"
                "{\"cached_tokens\":32}}}\n\n"
                "data: [DONE]\n\n") == 0
       && sse.prompt_tokens == 40 && sse.cached_tokens == 32,
       "a stream's usage gives its cached tokens");
    fg_load_sse_free(&sse);
}


static void
test_line_ends(void)
{
    int             rc;
    size_t          pieces[3];
    seen_t          seen;
    fg_load_sse_t   sse;
    const char     *crlf, *cr;

    crlf = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\r\n\r\n"
           "data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\r\n\r\n"
           "data: [DONE]\r\n\r\n";

    rc = read_all(&sse, &seen, crlf);
    ok(rc == 0 && sse.tokens == 2, "CRLF line ends");
    fg_load_sse_free(&sse);

    /* the CR ends one read, the LF starts the next: one line end */
    start(&sse, &seen);
    pieces[0] = strchr(crlf, '\r') - crlf + 1;
    pieces[1] = 1;
    pieces[2] = 0;
    rc = feed(&sse, &seen, crlf, strlen(crlf), pieces);
    ok(rc == 0 && sse.tokens == 2, "a CRLF split between reads");
    fg_load_sse_free(&sse);

    cr = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\r\r"
         "data: [DONE]\r\r";

    rc = read_all(&sse, &seen, cr);
    ok(rc == 0 && sse.tokens == 1, "CR line ends");
    fg_load_sse_free(&sse);
}


static void
test_multi_line(void)
{
    int             rc;
    seen_t          seen;
    fg_load_sse_t   sse;
    const char     *text;

    /* one JSON object over three data lines, joined by LF */
    text = "data: {\"choices\":\n"
           "data: [{\"delta\":{\"content\":\"a\"}}],\n"
           "data:\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}\n"
           "\n"
           "data: [DONE]\n\n";

    rc = read_all(&sse, &seen, text);

    ok(rc == 0 && sse.tokens == 1 && sse.completion_tokens == 1,
       "an event of three data lines (one without the space) is one chunk");
    if (rc != 0) {
        diag("%s", sse.err);
    }

    fg_load_sse_free(&sse);

    text = "data: {\"choices\":[{\"text\":\"x\"}]}\n\n"
           "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"y\"}}]}"
           "\n\n"
           "data: {\"choices\":[{\"delta\":{\"content\":null}}]}\n\n"
           "data: [DONE]\n\n";

    rc = read_all(&sse, &seen, text);

    ok(rc == 0 && sse.tokens == 2 && sse.prompt_tokens == -1,
       "completions' text and reasoning_content count; null content does "
       "not; no usage is -1");
    fg_load_sse_free(&sse);
}


/* text must fail, while fed or at the end, saying want */
static void
fails(const char *text, const char *want, const char *what)
{
    int             rc;
    seen_t          seen;
    fg_load_sse_t   sse;

    rc = read_all(&sse, &seen, text);

    ok(rc != 0 && strstr(sse.err, want) != NULL, "%s: fails saying \"%s\"",
       what, want);

    if (rc == 0 || strstr(sse.err, want) == NULL) {
        diag("got: %s", rc ? sse.err : "success");
    }

    ok(fg_load_sse_feed(&sse, "data: [DONE]\n\n", 14) != 0,
       "%s: and stays failed", what);

    fg_load_sse_free(&sse);
}


static void
test_errors(void)
{
    char  *big;

    fails("data: {\"choices\": [\n\n", "event 1: not JSON",
          "bad JSON");
    fails(CHUNK("a") "data: {\"choices\":[{]}\n\ndata: [DONE]\n\n",
          "event 2: not JSON", "bad JSON after a good chunk");
    fails("data: [1, 2]\n\ndata: [DONE]\n\n", "event 1: not a JSON object",
          "an array");
    fails("data: {\"choices\": 3}\n\ndata: [DONE]\n\n",
          "\"choices\" is not an array", "choices a number");
    fails("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":\"1\"}}\n\n"
          "data: [DONE]\n\n", "\"usage\" without prompt_tokens",
          "usage malformed");
    fails("data: {\"error\":{\"message\":\"engine gone\","
          "\"type\":\"server_error\"}}\n\n",
          "stream error: engine gone", "an error chunk");
    fails("dat: {}\n\n", "unknown field \"dat\"", "an unknown field");
    fails(CHUNK("a") "data: [DONE]\n\n" CHUNK("b"), "data after [DONE]",
          "data after [DONE]");
    fails(CHUNK("a") CHUNK("b"), "ended without [DONE]", "no [DONE]");
    fails(CHUNK("a") "data: [DONE]\n", "ended inside an event",
          "[DONE] without its blank line");
    fails(CHUNK("a") "data: {\"choi", "ended inside an event",
          "cut inside a line");
    fails("", "ended without [DONE]", "an empty body");

    big = malloc(FG_LOAD_SSE_MAX + 64);
    if (big != NULL) {
        memset(big, 'x', FG_LOAD_SSE_MAX + 63);
        memcpy(big, "data: ", 6);
        big[FG_LOAD_SSE_MAX + 63] = '\0';
        fails(big, "a line over", "a line over 1 MB");
        free(big);
    }
}


int
main(void)
{
    test_good();
    test_cached();
    test_line_ends();
    test_multi_line();
    test_errors();

    return done_testing();
}
