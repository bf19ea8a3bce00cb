
/*
 * fairgate: the bounded writer every OpenAI body is written with
 * (fg_openai_response.c: chat and completions; fg_openai_responses_out.c:
 * the Responses API): bytes counted always, copied while they fit, and
 * JSON strings escaped, a bad UTF-8 byte as U+FFFD.
 */


#include <stdio.h>
#include <string.h>

#include "fg_utf8.h"
#include "fg_openai_write_int.h"


void
fg_oai_w_init(fg_oai_w_t *w, char *out, size_t size)
{
    w->p = out;
    w->size = size;
    w->n = 0;
}


void
fg_oai_put(fg_oai_w_t *w, const char *s, size_t len)
{
    if (w->n < w->size) {
        memcpy(w->p + w->n, s, w->size - w->n < len ? w->size - w->n : len);
    }

    w->n += len;
}


void
fg_oai_put_str(fg_oai_w_t *w, const char *s)
{
    fg_oai_put(w, s, strlen(s));
}


void
fg_oai_put_u64(fg_oai_w_t *w, uint64_t v)
{
    char  buf[24];
    int   n;

    n = snprintf(buf, sizeof(buf), "%llu", (unsigned long long) v);
    fg_oai_put(w, buf, n);
}


void
fg_oai_put_i64(fg_oai_w_t *w, int64_t v)
{
    char  buf[24];
    int   n;

    n = snprintf(buf, sizeof(buf), "%lld", (long long) v);
    fg_oai_put(w, buf, n);
}


/* a JSON string: quotes, escapes, a bad byte as U+FFFD */
void
fg_oai_put_json(fg_oai_w_t *w, const char *text, size_t len)
{
    char                  esc[8];
    size_t                i, run, k;
    uint32_t              cp;
    const char           *p;
    const unsigned char  *s;

    static const char     hex[] = "0123456789abcdef";

    /* the characters with a two-byte escape, and the escapes' letters */
    static const char     shorts[] = "\"\\\n\r\t\b\f";
    static const char     letters[] = "\"\\nrtbf";

    s = (const unsigned char *) text;

    fg_oai_put(w, "\"", 1);

    i = 0;
    run = 0;            /* bytes from i - run that go out as they are */

    while (i < len) {

        if (s[i] >= 0x20 && s[i] != '"' && s[i] != '\\' && s[i] < 0x80) {
            i++;
            run++;
            continue;
        }

        if (s[i] >= 0x80) {
            k = fg_utf8_decode(s + i, len - i, &cp);

            if (k) {
                i += k;
                run += k;
                continue;
            }
        }

        fg_oai_put(w, (const char *) s + i - run, run);
        run = 0;

        p = memchr(shorts, s[i], sizeof(shorts) - 1);

        if (p != NULL) {
            esc[0] = '\\';
            esc[1] = letters[p - shorts];
            fg_oai_put(w, esc, 2);

        } else if (s[i] < 0x20) {
            memcpy(esc, "\\u00", 4);
            esc[4] = hex[s[i] >> 4];
            esc[5] = hex[s[i] & 0xf];
            fg_oai_put(w, esc, 6);

        } else {
            fg_oai_put(w, "\xef\xbf\xbd", 3);
        }

        i++;
    }

    fg_oai_put(w, (const char *) s + i - run, run);
    fg_oai_put(w, "\"", 1);
}


/* a JSON string, or null for NULL */
void
fg_oai_put_json_or_null(fg_oai_w_t *w, const char *s)
{
    if (s == NULL) {
        fg_oai_put_str(w, "null");
        return;
    }

    fg_oai_put_json(w, s, strlen(s));
}
