
/*
 * fairgate: tests of the JSON scanner: what it accepts and rejects, the
 * paths and values it reports.
 */


#include <stdarg.h>

#include "fg_tap.h"
#include "fg_json.h"


static char   seen[4096];
static size_t seen_len;


static int
scan(const char *text)
{
    fg_json_t  j;

    return fg_json_scan(&j, (const unsigned char *) text, strlen(text),
                        NULL, NULL);
}


static const char *
error_of(const char *text, size_t *line, size_t *column)
{
    fg_json_t  j;

    if (fg_json_scan(&j, (const unsigned char *) text, strlen(text), NULL,
                     NULL)
        == 0)
    {
        return NULL;
    }

    *line = j.line;
    *column = j.column;

    return j.error;
}


/* appends to seen[] */
static void
put(const char *fmt, ...)
{
    va_list  ap;

    va_start(ap, fmt);
    seen_len += vsnprintf(seen + seen_len, sizeof(seen) - seen_len, fmt, ap);
    va_end(ap);
}


/* writes "path=value" for each value into seen[] */
static void
record(fg_json_t *j, fg_json_value_t *v, void *data)
{
    unsigned  i;

    /* the values that are only their type: a mark each */
    static const char *const  marks[] = {
        [FG_JSON_OBJECT] = "{", [FG_JSON_ARRAY] = "[", [FG_JSON_TRUE] = "t",
        [FG_JSON_FALSE] = "f", [FG_JSON_NULL] = "n"
    };

    (void) data;

    for (i = 0; i < j->depth; i++) {
        if (j->path[i].key) {
            put("/%.*s", (int) j->path[i].key_len, j->path[i].key);
        } else {
            put("/%zu", j->path[i].index);
        }
    }

    if (v->type == FG_JSON_STRING) {
        put("=s%zu ", v->len);

    } else if (v->type == FG_JSON_NUMBER && v->integer && !v->overflow) {
        put("=i%lld ", (long long) v->value);

    } else if (v->type == FG_JSON_NUMBER) {
        put("=n%.*s%s ", (int) v->raw_len, v->raw, v->overflow ? "!" : "");

    } else {
        put("=%s ", marks[v->type]);
    }
}


static const char *
walk(const char *text)
{
    fg_json_t  j;

    seen_len = 0;
    seen[0] = '\0';

    if (fg_json_scan(&j, (const unsigned char *) text, strlen(text), record,
                     NULL)
        != 0)
    {
        return j.error;
    }

    return seen;
}


static void
key_handler(fg_json_t *j, fg_json_value_t *v, void *data)
{
    int  *hits = data;

    if (v->type == FG_JSON_STRING && j->depth == 3
        && fg_json_key_is(j, 0, "messages") && j->path[1].key == NULL
        && fg_json_key_is(j, 2, "content"))
    {
        *hits += (int) v->len;
    }
}


/* valid documents */
static void
test_valid(void)
{
    ok(scan("{}") == 0 && scan("[]") == 0 && scan(" 0 ") == 0
       && scan("\"x\"") == 0 && scan("true") == 0 && scan("null") == 0,
       "scalars and empty containers");
    ok(scan("{\"a\": [1, -2.5e+3, 0.0, 1E9, {\"b\": null}], \"c\": false}")
       == 0, "nested values, numbers of every form");
    ok(scan("\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\ud83d\\ude00\"")
       == 0, "every escape, a surrogate pair");
    ok(scan("\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"") == 0,
       "UTF-8 of 2, 3 and 4 bytes");
    ok(scan(" \t\r\n{ \"a\" : 1 } \n") == 0, "whitespace around tokens");
}


/* invalid documents */
static void
test_invalid(void)
{
    int   i;
    char  deep[200];

    ok(scan("") != 0, "empty text");
    ok(scan("{\"a\": 1,}") != 0, "trailing comma in an object");
    ok(scan("[1, 2,]") != 0, "trailing comma in an array");
    ok(scan("{a: 1}") != 0, "unquoted key");
    ok(scan("{\"a\" 1}") != 0, "missing colon");
    ok(scan("[1 2]") != 0, "missing comma");
    ok(scan("01") != 0 && scan("-") != 0 && scan("1.") != 0
       && scan("1e") != 0 && scan(".5") != 0 && scan("+1") != 0,
       "malformed numbers");
    ok(scan("tru") != 0 && scan("nul") != 0 && scan("True") != 0,
       "malformed literals");
    ok(scan("\"abc") != 0, "unterminated string");
    ok(scan("\"a\tb\"") != 0, "raw control character in a string");
    ok(scan("\"\\x\"") != 0 && scan("\"\\u12\"") != 0
       && scan("\"\\u12g4\"") != 0, "bad escapes");
    ok(scan("\"\\udc00\"") != 0 && scan("\"\\ud800\"") != 0
       && scan("\"\\ud800\\u0041\"") != 0, "lone surrogates");
    ok(scan("\"\xc3\"") != 0 && scan("\"\xc0\xaf\"") != 0
       && scan("\"\xe0\x80\xaf\"") != 0 && scan("\"\xed\xa0\x80\"") != 0
       && scan("\"\xf4\x90\x80\x80\"") != 0 && scan("\"\xff\"") != 0,
       "invalid UTF-8: truncated, overlong, surrogate, too high, bad byte");
    ok(scan("{} {}") != 0 && scan("1 2") != 0, "two values");

    for (i = 0; i < 70; i++) {
        deep[i] = '[';
        deep[140 - 1 - i] = ']';
    }
    deep[140] = '\0';
    ok(scan(deep) != 0, "70 levels are too deep");
    deep[64] = '\0';
    for (i = 0; i < 64; i++) {
        deep[64 + i] = ']';
    }
    deep[128] = '\0';
    ok(scan(deep) == 0, "64 levels are not");
}


/* the 8-byte fast path: a special byte anywhere in a long string */
static void
test_fast_path(void)
{
    int   i, bad, lens;
    char  text[64];

    bad = 0;
    lens = 0;

    for (i = 0; i < 30; i++) {
        memset(text, 'a', sizeof(text));
        text[0] = '"';
        text[33] = '"';
        text[34] = '\0';

        text[1 + i] = '\t';
        bad += (scan(text) == 0);

        text[1 + i] = 0x7f;
        bad += (scan(text) != 0);

        text[1 + i] = '"';
        bad += (scan(text) == 0);

        memcpy(text + 1 + i, "\xc3\xa9", 2);
        lens += (strcmp(walk(text), "=s32 ") != 0);

        memcpy(text + 1 + i, "\\n", 2);
        lens += (strcmp(walk(text), "=s31 ") != 0);
    }

    ok(bad == 0, "control characters and quotes found at any offset");
    ok(lens == 0, "UTF-8 and escapes at any offset: lengths right");
}


/* where the error is */
static void
test_error_position(void)
{
    size_t       line, column;
    const char  *e;

    e = error_of("{\n  \"a\": [1,\n   2 3]\n}", &line, &column);
    ok(e != NULL && line == 3 && column == 6,
       "line and column of an error (%s at %zu:%zu)", e ? e : "none",
       line, column);
    e = error_of("{\"model\": ", &line, &column);
    ok(e != NULL && strcmp(e, "unexpected end of text") == 0 && column == 11,
       "end of text (%s at %zu)", e ? e : "none", column);
}


/* what the handler sees */
static void
test_handler(void)
{
    int          hits;
    size_t       used;
    fg_json_t    j;
    const char  *e;

    is_str(walk("{\"a\": [1, \"xy\", {\"b\": true}], \"c\": null}"),
           "={ /a=[ /a/0=i1 /a/1=s2 /a/2={ /a/2/b=t /c=n ",
           "paths of every value, containers first");
    is_str(walk("[\"\\u00e9\\n\", \"\\ud83d\\ude00\", \"\xe2\x82\xac\"]"),
           "=[ /0=s3 /1=s4 /2=s3 ", "decoded lengths in bytes");
    is_str(walk("[-0, 42, -9223372036854775808, 9223372036854775807]"),
           "=[ /0=i0 /1=i42 /2=i-9223372036854775808 "
           "/3=i9223372036854775807 ", "integers at the limits");
    is_str(walk("[9223372036854775808, 1.5, 2e3]"),
           "=[ /0=n9223372036854775808! /1=n1.5 /2=n2e3 ",
           "overflow, fractions and exponents are not integers");

    ok(fg_json_scan_value(&j, (const unsigned char *) " {\"a\": 1} }x", 13,
                          &used, NULL, NULL) == 0 && used == 9,
       "one value and where it ends, the rest not looked at");
    ok(fg_json_scan_value(&j, (const unsigned char *) "{\"a\" 1}", 7, &used,
                          NULL, NULL) != 0,
       "a bad value is still an error");

    hits = 0;
    e = "{\"messages\": [{\"content\": \"abc\"}, "
        "{\"role\": \"x\", \"content\": \"de\"}], \"content\": \"zzzz\"}";
    ok(fg_json_scan(&j, (const unsigned char *) e, strlen(e), key_handler,
                    &hits) == 0
       && hits == 5, "fg_json_key_is() picks a path");
}


int
main(void)
{
    test_valid();
    test_invalid();
    test_fast_path();
    test_error_position();
    test_handler();

    return done_testing();
}
