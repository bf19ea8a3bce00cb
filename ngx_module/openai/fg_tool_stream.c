
/*
 * fairgate: a streamed answer split into the content that goes out at
 * once and what may be tool calls, held for fg_tool_parse() at its end
 * (fg_tool_parse.h).  The held text is kept in one growing buffer; what
 * was released last time is dropped from its front on the next push.
 */


#include <stdlib.h>
#include <string.h>

#include "fg_tool_parse.h"


void
fg_tool_stream_init(fg_tool_stream_t *s, fg_tool_format_e fmt)
{
    memset(s, 0, sizeof(fg_tool_stream_t));

    s->marker = fg_tool_format_marker(fmt);
    s->marker_len = s->marker ? strlen(s->marker) : 0;
}


void
fg_tool_stream_free(fg_tool_stream_t *s)
{
    free(s->buf);
    s->buf = NULL;
    s->len = 0;
    s->size = 0;
}


/* where the marker is in buf, or NULL */
static const char *
fg_tool_stream_marker(const fg_tool_stream_t *s)
{
    size_t  i;

    for (i = 0; s->marker_len && i + s->marker_len <= s->len; i++) {
        if (memcmp(s->buf + i, s->marker, s->marker_len) == 0) {
            return s->buf + i;
        }
    }

    return NULL;
}


/* the bytes at the end of buf that are the marker's first ones */
static size_t
fg_tool_stream_partial(const fg_tool_stream_t *s)
{
    size_t  k;

    k = s->marker_len ? s->marker_len - 1 : 0;

    for (k = (k < s->len) ? k : s->len; k > 0; k--) {
        if (memcmp(s->buf + s->len - k, s->marker, k) == 0) {
            return k;
        }
    }

    return 0;
}


/* the answer's first bytes: text, or perhaps a call (all held) */
static size_t
fg_tool_stream_start(fg_tool_stream_t *s)
{
    size_t       i, n;
    const char  *p;

    for (i = 0; i < s->len; i++) {
        if (s->buf[i] != ' ' && s->buf[i] != '\n' && s->buf[i] != '\t'
            && s->buf[i] != '\r')
        {
            break;
        }
    }

    if (i == s->len) {
        return 0;
    }

    p = s->buf + i;
    n = s->len - i;

    if (*p == '{' || *p == '[' || (n >= 3 && memcmp(p, "```", 3) == 0)) {
        s->holding = 1;
        return 0;
    }

    /* "`", "``", or the marker's beginning: the next text decides */
    if ((n < 3 && memcmp(p, "``", n) == 0)
        || (s->marker && n < s->marker_len && memcmp(p, s->marker, n) == 0))
    {
        return 0;
    }

    s->content = 1;

    return s->len;
}


int
fg_tool_stream_push(fg_tool_stream_t *s, const char *text, size_t len,
    const char **out, size_t *out_len)
{
    char        *b;
    size_t       size, n;
    const char  *at;

    if (s->sent) {
        memmove(s->buf, s->buf + s->sent, s->len - s->sent);
        s->len -= s->sent;
        s->sent = 0;
    }

    if (s->size - s->len < len) {
        size = 2 * s->size + len + 64;

        b = realloc(s->buf, size);
        if (b == NULL) {
            return -1;
        }

        s->buf = b;
        s->size = size;
    }

    memcpy(s->buf + s->len, text, len);
    s->len += len;

    *out = s->buf;
    *out_len = 0;

    if (s->holding) {
        return 0;
    }

    if (!s->content) {
        n = fg_tool_stream_start(s);

        if (!s->content || n == 0) {
            return 0;
        }
    }

    at = fg_tool_stream_marker(s);

    if (at != NULL) {
        s->holding = 1;
        n = at - s->buf;

    } else {
        n = s->len - fg_tool_stream_partial(s);
    }

    s->sent = n;
    *out_len = n;

    return 0;
}


void
fg_tool_stream_held(fg_tool_stream_t *s, const char **out, size_t *out_len)
{
    *out = s->buf ? s->buf + s->sent : "";
    *out_len = s->len - s->sent;
}
