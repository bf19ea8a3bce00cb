
/*
 * fairgate: the stop-string matcher that runs on streamed text.
 *
 * The engine stops on token ids; a stop string can span tokens and end
 * in the middle of one, so the gateway matches text.  Every piece of
 * decoded text is pushed through the matcher, which releases only what
 * can no longer be the start of a stop string; fixed size, no allocation.
 */


#ifndef _GNU_SOURCE
#define _GNU_SOURCE                 /* memmem */
#endif

#include <string.h>

#include "fg_utf8.h"
#include "fg_openai_response.h"


int
fg_oai_stop_init(fg_oai_stop_t *s, const fg_oai_str_t *stops, size_t n)
{
    size_t  i;

    memset(s, 0, sizeof(fg_oai_stop_t));

    if (n > FG_OAI_MAX_STOP) {
        return -1;
    }

    for (i = 0; i < n; i++) {
        if (stops[i].len == 0 || stops[i].len > FG_OAI_STOP_MAX_LEN) {
            return -1;
        }

        memcpy(s->stop[i], stops[i].data, stops[i].len);
        s->len[i] = stops[i].len;
    }

    s->n = n;

    return 0;
}


/* n, or less so that text[0 .. n) does not end inside a character */
static size_t
fg_oai_utf8_cut(const char *text, size_t n)
{
    size_t               k;
    const unsigned char *s;

    s = (const unsigned char *) text;

    for (k = 1; k <= 4 && k <= n; k++) {
        if ((s[n - k] & 0xc0) == 0x80) {
            continue;
        }

        /* a lead byte still waiting for continuation bytes */
        if (fg_utf8_len(s[n - k]) > k) {
            return n - k;
        }

        return n;
    }

    return n;
}


size_t
fg_oai_stop_push(fg_oai_stop_t *s, const char *text, size_t len, char *out)
{
    size_t       i, m, k, n, best_end, best_start, keep;
    const char  *p;

    if (s->stopped) {
        return 0;
    }

    /* what was held, then the new text: a match can only end in the new
     * text, as the held part has none (else it had stopped) */
    memcpy(out, s->hold, s->held);
    memcpy(out + s->held, text, len);
    n = s->held + len;

    best_end = (size_t) -1;
    best_start = 0;

    for (i = 0; i < s->n; i++) {
        p = memmem(out, n, s->stop[i], s->len[i]);

        if (p == NULL) {
            continue;
        }

        /* the stop complete first as the text arrives, then the longer */
        if ((size_t) (p - out) + s->len[i] < best_end
            || ((size_t) (p - out) + s->len[i] == best_end
                && (size_t) (p - out) < best_start))
        {
            best_end = (p - out) + s->len[i];
            best_start = p - out;
        }
    }

    if (best_end != (size_t) -1) {
        s->stopped = 1;
        s->held = 0;
        return best_start;
    }

    /* hold back the longest end of the text that begins a stop string */
    keep = 0;

    for (i = 0; i < s->n; i++) {
        m = s->len[i] - 1 < n ? s->len[i] - 1 : n;

        for (k = m; k > keep; k--) {
            if (memcmp(out + n - k, s->stop[i], k) == 0) {
                keep = k;
                break;
            }
        }
    }

    m = fg_oai_utf8_cut(out, n - keep);

    s->held = n - m;
    memcpy(s->hold, out + m, s->held);

    return m;
}


size_t
fg_oai_stop_flush(fg_oai_stop_t *s, char *out)
{
    size_t  n;

    if (s->stopped) {
        return 0;
    }

    n = s->held;
    memcpy(out, s->hold, n);
    s->held = 0;

    return n;
}
