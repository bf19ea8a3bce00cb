
/*
 * fairgate: tests of the stop-string matcher: stop strings across chunks,
 * multibyte stops, flush, ties, and 20,000 random texts cut at every kind
 * of place (inside characters too) against a reference.
 */


#include <stdint.h>

#include <jansson.h>

#include "fg_tap.h"
#include "fg_rand.h"
#include "fg_openai_response.h"


#define N(a)  (sizeof(a) / sizeof((a)[0]))


static size_t
stop_run(fg_oai_stop_t *s, const char *const *pieces, size_t n, char *got)
{
    char    *buf;
    size_t   i, len, k;

    len = 0;

    for (i = 0; i < n; i++) {
        buf = malloc(FG_OAI_STOP_OUT(strlen(pieces[i])));
        k = fg_oai_stop_push(s, pieces[i], strlen(pieces[i]), buf);
        memcpy(got + len, buf, k);
        len += k;
        free(buf);
    }

    buf = malloc(FG_OAI_STOP_OUT(0));
    k = fg_oai_stop_flush(s, buf);
    memcpy(got + len, buf, k);
    len += k;
    free(buf);

    got[len] = '\0';

    return len;
}


static int
stops(fg_oai_stop_t *s, const char *a, const char *b)
{
    fg_oai_str_t  st[2];

    st[0].data = a;
    st[0].len = strlen(a);
    st[1].data = b;
    st[1].len = b ? strlen(b) : 0;

    return fg_oai_stop_init(s, st, b ? 2 : 1);
}


static void
test_stop_cases(void)
{
    char           got[256], buf[FG_OAI_STOP_OUT(16)];
    size_t         i, k;
    fg_oai_str_t   st[5];
    fg_oai_stop_t  s;

    static const char *const  p1[] = { "The E", "NX is ", "EN", "D here" };
    static const char *const  p2[] = { "caf", "\xc3\xa9", "!", " more" };
    static const char *const  p3[] = { "caf\xc3", "\xa9 ok" };
    static const char *const  p4[] = { "x", "EN" };
    static const char *const  p5[] = { "abc" };
    static const char *const  p6[] = { "ab" };
    static const char *const  p7[] = { "\xc3\xa9 \xc3\xa8!" };

    /* the stops, the chunks, what goes out, whether it stopped (-1: any) */
    static const struct {
        const char          *stop, *stop2;
        const char *const   *chunks;
        size_t               n;
        const char          *want;
        int                  stopped;
        const char          *what;
    } runs[] = {
        { "\xc3\xa9!", NULL, p2, N(p2), "caf", 1,
          "a multibyte stop string" },
        { "\xc3\xa8", NULL, p3, N(p3), "caf\xc3\xa9 ok", 0,
          "a stop sharing a lead byte does not match" },
        { "\xc3\xa8", NULL, p7, N(p7), "\xc3\xa9 ", 1,
          "... the right one does" },
        { "END", NULL, p4, N(p4), "xEN", 0,
          "flush releases what was held" },
        { "abc", "b", p5, N(p5), "a", -1,
          "the stop complete first wins (b in abc)" },
        { "ab", "b", p6, N(p6), "", -1,
          "complete at once: the one starting first" },
    };

    fg_oai_stop_init(&s, NULL, 0);
    k = fg_oai_stop_push(&s, "caf\xc3", 4, buf);
    ok(k == 3 && memcmp(buf, "caf", 3) == 0 && s.held == 1,
       "no stops: a character cut short waits");
    k = fg_oai_stop_push(&s, "\xa9!", 2, buf);
    ok(k == 3 && memcmp(buf, "\xc3\xa9!", 3) == 0,
       "  and goes out whole");

    stops(&s, "END", NULL);
    k = fg_oai_stop_push(&s, "The E", 5, buf);
    ok(k == 4 && memcmp(buf, "The ", 4) == 0 && s.held == 1,
       "\"E\" may begin END: held back");
    k = fg_oai_stop_push(&s, "NX", 2, buf);
    ok(k == 3 && memcmp(buf, "ENX", 3) == 0 && s.held == 0,
       "\"ENX\" cannot: released");

    stops(&s, "END", NULL);
    k = stop_run(&s, p1, N(p1), got);
    ok(s.stopped && strcmp(got, "The ENX is ") == 0,
       "END across chunks: \"%s\", the stop string not sent", got);

    k = fg_oai_stop_push(&s, "more", 4, buf);
    ok(k == 0 && fg_oai_stop_flush(&s, buf) == 0, "nothing after a stop");

    for (i = 0; i < N(runs); i++) {
        stops(&s, runs[i].stop, runs[i].stop2);
        stop_run(&s, runs[i].chunks, runs[i].n, got);
        ok((runs[i].stopped < 0 || (int) s.stopped == runs[i].stopped)
           && strcmp(got, runs[i].want) == 0, "%s", runs[i].what);
    }

    st[0].data = "";
    st[0].len = 0;
    ok(fg_oai_stop_init(&s, st, 1) == -1, "an empty stop is refused");

    st[0].data = got;
    st[0].len = FG_OAI_STOP_MAX_LEN + 1;
    ok(fg_oai_stop_init(&s, st, 1) == -1, "a stop too long is refused");
    ok(fg_oai_stop_init(&s, st, 5) == -1, "five stops are refused");
}


static fg_rand_t  rng = { 42 };


static int
utf8_valid(const char *s, size_t n)
{
    json_t  *j;
    char     buf[1024];
    size_t   i, k;

    /* jansson checks UTF-8 strictly */
    k = 0;
    buf[k++] = '"';

    for (i = 0; i < n && k < sizeof(buf) - 4; i++) {
        if (s[i] == '\n') {
            buf[k++] = '\\';
            buf[k++] = 'n';

        } else {
            buf[k++] = s[i];
        }
    }

    buf[k++] = '"';

    j = json_loadb(buf, k, JSON_DECODE_ANY, NULL);
    json_decref(j);

    return j != NULL;
}


static void
random_text(char *buf, size_t pieces)
{
    size_t  i;

    static const char *const  alpha[] = {
        "a", "b", "\n", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"
    };

    buf[0] = '\0';

    for (i = 0; i < pieces; i++) {
        strcat(buf, alpha[fg_rand_next(&rng) % N(alpha)]);
    }
}


/*
 * Every random text, cut at random bytes (inside characters too), gives
 * the text up to where the first completed stop string begins, in
 * pieces that are each valid UTF-8.
 */
static void
test_stop_random(void)
{
    char           text[256], stop[4][32], want[256], got[256], *buf;
    size_t         i, k, n, len, pos, cut, best_end, best_start, bad, bad8;
    const char    *p;
    fg_oai_str_t   st[4];
    fg_oai_stop_t  s;

    bad = 0;
    bad8 = 0;

    for (i = 0; i < 20000; i++) {
        random_text(text, 1 + fg_rand_next(&rng) % 40);
        n = fg_rand_next(&rng) % 5;

        for (k = 0; k < n; k++) {
            random_text(stop[k], 1 + fg_rand_next(&rng) % 3);
            st[k].data = stop[k];
            st[k].len = strlen(stop[k]);
        }

        /* the reference: the first to be complete, then the longest */
        best_end = SIZE_MAX;
        best_start = 0;

        for (k = 0; k < n; k++) {
            p = strstr(text, stop[k]);

            if (p && ((size_t) (p - text) + st[k].len < best_end
                      || ((size_t) (p - text) + st[k].len == best_end
                          && (size_t) (p - text) < best_start)))
            {
                best_end = (p - text) + st[k].len;
                best_start = p - text;
            }
        }

        len = strlen(text);
        memcpy(want, text, best_end == SIZE_MAX ? len : best_start);
        want[best_end == SIZE_MAX ? len : best_start] = '\0';

        fg_oai_stop_init(&s, st, n);

        got[0] = '\0';
        pos = 0;
        k = 0;

        while (pos < len) {
            cut = 1 + fg_rand_next(&rng) % 6;

            if (cut > len - pos) {
                cut = len - pos;
            }

            buf = malloc(FG_OAI_STOP_OUT(cut));
            n = fg_oai_stop_push(&s, text + pos, cut, buf);
            bad8 += !utf8_valid(buf, n);
            memcpy(got + k, buf, n);
            k += n;
            free(buf);
            pos += cut;
        }

        buf = malloc(FG_OAI_STOP_OUT(0));
        n = fg_oai_stop_flush(&s, buf);
        memcpy(got + k, buf, n);
        k += n;
        free(buf);
        got[k] = '\0';

        if (strcmp(got, want) != 0) {
            if (bad++ < 3) {
                diag("text \"%s\": got \"%s\", expected \"%s\"", text, got,
                     want);
            }
        }
    }

    is_int(bad, 0, "20000 random texts and stop lists, cut anywhere: the "
           "text before the first stop");
    is_int(bad8, 0, "  every piece released is valid UTF-8");
}


int
main(void)
{
    test_stop_cases();
    test_stop_random();

    return done_testing();
}
