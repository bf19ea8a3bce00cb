
/*
 * fairgate: a validating JSON scanner that allocates nothing.
 *
 * Recursive descent over RFC 8259, depth-limited (FG_JSON_MAX_DEPTH levels
 * of path, so the C stack stays small), one pass, no copies: strings are
 * reported as they are written, with their decoded length.  Line and
 * column are worked out only when there is an error to report.
 */


#include <string.h>

#include "fg_utf8.h"
#include "fg_json.h"


static int fg_json_value(fg_json_t *j);
static int fg_json_container(fg_json_t *j, fg_json_type_e type);
static int fg_json_string(fg_json_t *j, const unsigned char **raw,
    size_t *raw_len, size_t *len);
static int fg_json_number(fg_json_t *j, fg_json_value_t *v);
static int fg_json_literal(fg_json_t *j, const char *word, size_t n,
    fg_json_type_e type);
static int fg_json_hex4(const unsigned char *p, unsigned *cp);
static int fg_json_fail(fg_json_t *j, const char *error);


#define fg_json_ws(j)                                                         \
    while ((j)->p < (j)->end && fg_json_space[*(j)->p]) {                     \
        (j)->p++;                                                             \
    }

#define fg_json_digit(c)  ((c) >= '0' && (c) <= '9')


/*
 * Whether any of 8 bytes needs a closer look in a string: a quote, a
 * backslash, a control character (below 0x20) or a byte of UTF-8 (0x80 and
 * up).  The classic tests: a byte is below n when (b - n) borrows into its
 * top bit while b's own top bit is clear; a byte equals c when b ^ c is 0.
 */

#define FG_JSON_ONES  0x0101010101010101ULL
#define FG_JSON_HIGH  0x8080808080808080ULL

#define fg_json_below(w, n)  (((w) - FG_JSON_ONES * (n)) & ~(w) & FG_JSON_HIGH)
#define fg_json_zero(w)      fg_json_below(w, 1)

#define fg_json_special(w)                                                    \
    (((w) & FG_JSON_HIGH)                                                     \
     | fg_json_below(w, 0x20)                                                 \
     | fg_json_zero((w) ^ (FG_JSON_ONES * '"'))                               \
     | fg_json_zero((w) ^ (FG_JSON_ONES * '\\')))

#if (defined __BYTE_ORDER__ && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
#define FG_JSON_LITTLE_ENDIAN  1
#else
#define FG_JSON_LITTLE_ENDIAN  0
#endif


/* bytes that go as they are in a string; bytes that are whitespace */

static unsigned char  fg_json_plain[256];
static unsigned char  fg_json_space[256];
static int            fg_json_ready;


static void
fg_json_init(void)
{
    int  c;

    for (c = 0x20; c < 0x80; c++) {
        fg_json_plain[c] = (c != '"' && c != '\\');
    }

    fg_json_space[' '] = 1;
    fg_json_space['\t'] = 1;
    fg_json_space['\n'] = 1;
    fg_json_space['\r'] = 1;

    fg_json_ready = 1;
}


int
fg_json_scan(fg_json_t *j, const unsigned char *text, size_t len,
    fg_json_value_pt handler, void *data)
{
    size_t  used;

    if (fg_json_scan_value(j, text, len, &used, handler, data) != 0) {
        return -1;
    }

    fg_json_ws(j);

    if (j->p != j->end) {
        return fg_json_fail(j, "end of text expected");
    }

    return 0;
}


int
fg_json_scan_value(fg_json_t *j, const unsigned char *text, size_t len,
    size_t *used, fg_json_value_pt handler, void *data)
{
    if (!fg_json_ready) {
        fg_json_init();
    }

    j->start = text;
    j->p = text;
    j->end = text + len;
    j->depth = 0;
    j->handler = handler;
    j->data = data;
    j->error = NULL;
    j->line = 0;
    j->column = 0;

    fg_json_ws(j);

    if (fg_json_value(j) != 0) {
        return -1;
    }

    *used = j->p - text;

    return 0;
}


static int
fg_json_value(fg_json_t *j)
{
    fg_json_value_t  v;

    if (j->p >= j->end) {
        return fg_json_fail(j, "unexpected end of text");
    }

    switch (*j->p) {

    case '{':
        return fg_json_container(j, FG_JSON_OBJECT);

    case '[':
        return fg_json_container(j, FG_JSON_ARRAY);

    case '"':
        memset(&v, 0, sizeof(fg_json_value_t));
        v.type = FG_JSON_STRING;

        if (fg_json_string(j, &v.raw, &v.raw_len, &v.len) != 0) {
            return -1;
        }

        break;

    case 't':
        return fg_json_literal(j, "true", 4, FG_JSON_TRUE);

    case 'f':
        return fg_json_literal(j, "false", 5, FG_JSON_FALSE);

    case 'n':
        return fg_json_literal(j, "null", 4, FG_JSON_NULL);

    default:
        if (*j->p != '-' && !fg_json_digit(*j->p)) {
            return fg_json_fail(j, "unexpected character");
        }

        if (fg_json_number(j, &v) != 0) {
            return -1;
        }
    }

    if (j->handler) {
        j->handler(j, &v, j->data);
    }

    return 0;
}


/* an object or an array: j->p is at its '{' or '[' */

static int
fg_json_container(fg_json_t *j, fg_json_type_e type)
{
    unsigned char     close;
    fg_json_level_t  *level;
    fg_json_value_t   v;

    close = (type == FG_JSON_OBJECT) ? '}' : ']';

    memset(&v, 0, sizeof(fg_json_value_t));
    v.type = type;
    v.raw = j->p;

    if (j->handler) {
        j->handler(j, &v, j->data);
    }

    if (j->depth == FG_JSON_MAX_DEPTH) {
        return fg_json_fail(j, "nested too deeply");
    }

    j->p++;
    fg_json_ws(j);

    if (j->p < j->end && *j->p == close) {
        j->p++;
        return 0;
    }

    level = &j->path[j->depth++];
    level->key = NULL;
    level->key_len = 0;
    level->index = 0;

    for ( ;; ) {
        if (type == FG_JSON_OBJECT) {
            if (j->p >= j->end || *j->p != '"') {
                return fg_json_fail(j, "object key expected");
            }

            if (fg_json_string(j, &level->key, &level->key_len, &v.len)
                != 0)
            {
                return -1;
            }

            fg_json_ws(j);

            if (j->p >= j->end || *j->p != ':') {
                return fg_json_fail(j, "':' expected");
            }

            j->p++;
            fg_json_ws(j);
        }

        if (fg_json_value(j) != 0) {
            return -1;
        }

        fg_json_ws(j);

        if (j->p < j->end && *j->p == ',') {
            j->p++;
            fg_json_ws(j);
            level->index++;
            continue;
        }

        if (j->p < j->end && *j->p == close) {
            j->p++;
            break;
        }

        return fg_json_fail(j, (type == FG_JSON_OBJECT)
                               ? "',' or '}' expected"
                               : "',' or ']' expected");
    }

    j->depth--;

    return 0;
}


/*
 * The plain bytes from p on: the common case of a string, a run of ASCII,
 * 8 bytes a step, then byte by byte up to the first quote, backslash,
 * control character or byte of UTF-8.
 */

static inline const unsigned char *
fg_json_plain_run(const unsigned char *p, const unsigned char *end)
{
    uint64_t  w;

    while (end - p >= 8) {
        memcpy(&w, p, 8);
        w = fg_json_special(w);

        if (w) {
#if (FG_JSON_LITTLE_ENDIAN)
            /* the lowest flagged byte is exact: p goes to it */
            p += __builtin_ctzll(w) >> 3;
#endif
            break;
        }

        p += 8;
    }

    while (p < end && fg_json_plain[*p]) {
        p++;
    }

    return p;
}


/*
 * The escape at p (a backslash with a byte after it): adds its decoded
 * bytes to *n and returns its length in the text, or 0 when it is invalid
 * (j->error set)
 */

static inline size_t
fg_json_escape(fg_json_t *j, const unsigned char *p, size_t *n)
{
    unsigned              cp, low;
    const unsigned char  *end;

    end = j->end;

    switch (p[1]) {

    case '"': case '\\': case '/': case 'b': case 'f': case 'n':
    case 'r': case 't':
        *n += 1;
        return 2;

    case 'u':
        if (end - p < 6 || fg_json_hex4(p + 2, &cp) != 0) {
            j->p = p;
            fg_json_fail(j, "invalid \\u escape");
            return 0;
        }

        if (cp >= 0xdc00 && cp <= 0xdfff) {
            j->p = p;
            fg_json_fail(j, "lone low surrogate");
            return 0;
        }

        if (cp >= 0xd800 && cp <= 0xdbff) {
            if (end - p < 12 || p[6] != '\\' || p[7] != 'u'
                || fg_json_hex4(p + 8, &low) != 0
                || low < 0xdc00 || low > 0xdfff)
            {
                j->p = p;
                fg_json_fail(j, "lone high surrogate");
                return 0;
            }

            *n += 4;
            return 12;
        }

        *n += (cp < 0x80) ? 1 : (cp < 0x800) ? 2 : 3;
        return 6;

    default:
        j->p = p;
        fg_json_fail(j, "invalid escape");
        return 0;
    }
}


/* j->p is at the opening quote; leaves it after the closing one */

static int
fg_json_string(fg_json_t *j, const unsigned char **raw, size_t *raw_len,
    size_t *len)
{
    size_t                n, k;
    uint32_t              cp;
    unsigned char         c;
    const unsigned char  *s, *p, *end, *run;

    p = j->p + 1;
    end = j->end;
    s = p;
    n = 0;

    while (p < end) {

        run = p;
        p = fg_json_plain_run(p, end);
        n += p - run;

        if (p == end) {
            break;
        }

        c = *p;

        if (c == '"') {
            *raw = s;
            *raw_len = p - s;
            *len = n;
            j->p = p + 1;
            return 0;
        }

        if (c < 0x20) {
            j->p = p;
            return fg_json_fail(j, "control character in a string");
        }

        if (c == '\\') {
            if (p + 1 >= end) {
                break;
            }

            k = fg_json_escape(j, p, &n);

            if (k == 0) {
                return -1;
            }

            p += k;
            continue;
        }

        /* what is left is UTF-8 (0x80 and up), checked strictly */

        k = fg_utf8_decode(p, end - p, &cp);

        if (k == 0) {
            j->p = p;
            return fg_json_fail(j, "invalid UTF-8");
        }

        n += k;
        p += k;
    }

    j->p = end;

    return fg_json_fail(j, "unterminated string");
}


static int
fg_json_hex4(const unsigned char *p, unsigned *cp)
{
    int            i;
    unsigned       v;
    unsigned char  c;

    v = 0;

    for (i = 0; i < 4; i++) {
        c = p[i];

        if (c >= '0' && c <= '9') {
            v = v * 16 + (c - '0');

        } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
            v = v * 16 + ((c | 0x20) - 'a' + 10);

        } else {
            return -1;
        }
    }

    *cp = v;

    return 0;
}


/*
 * The digits of a fraction or an exponent, at least one: past them, or
 * NULL with the error said.
 */
static inline const unsigned char *
fg_json_digits(fg_json_t *j, const unsigned char *p, const char *error)
{
    if (p >= j->end || !fg_json_digit(*p)) {
        j->p = p;
        (void) fg_json_fail(j, error);
        return NULL;
    }

    do {
        p++;
    } while (p < j->end && fg_json_digit(*p));

    return p;
}


static int
fg_json_number(fg_json_t *j, fg_json_value_t *v)
{
    int                   neg;
    unsigned              digits;
    uint64_t              u, limit;
    const unsigned char  *p, *end;

    memset(v, 0, sizeof(fg_json_value_t));
    v->type = FG_JSON_NUMBER;
    v->raw = j->p;
    v->integer = 1;

    p = j->p;
    end = j->end;
    neg = 0;

    if (*p == '-') {
        neg = 1;
        p++;
    }

    if (p >= end || !fg_json_digit(*p)) {
        j->p = p;
        return fg_json_fail(j, "invalid number");
    }

    limit = neg ? (uint64_t) INT64_MAX + 1 : (uint64_t) INT64_MAX;
    u = 0;

    if (*p == '0') {
        p++;

        if (p < end && fg_json_digit(*p)) {
            j->p = p;
            return fg_json_fail(j, "invalid number: a leading zero");
        }

    } else {
        /* 18 digits cannot overflow: the check is for the longer ones */

        for (digits = 0; p < end && fg_json_digit(*p) && digits < 18;
             digits++)
        {
            u = u * 10 + (*p++ - '0');
        }

        while (p < end && fg_json_digit(*p)) {
            if (u > (limit - (*p - '0')) / 10) {
                v->overflow = 1;

            } else {
                u = u * 10 + (*p - '0');
            }

            p++;
        }
    }

    if (p < end && *p == '.') {
        v->integer = 0;
        p++;

        p = fg_json_digits(j, p, "invalid number: no digit after '.'");
        if (p == NULL) {
            return -1;
        }
    }

    if (p < end && (*p == 'e' || *p == 'E')) {
        v->integer = 0;
        p++;

        if (p < end && (*p == '+' || *p == '-')) {
            p++;
        }

        p = fg_json_digits(j, p, "invalid number: no exponent");
        if (p == NULL) {
            return -1;
        }
    }

    if (v->integer && !v->overflow) {
        v->value = neg ? (int64_t) (0 - u) : (int64_t) u;
    }

    v->raw_len = p - v->raw;
    j->p = p;

    return 0;
}


static int
fg_json_literal(fg_json_t *j, const char *word, size_t n, fg_json_type_e type)
{
    fg_json_value_t  v;

    if ((size_t) (j->end - j->p) < n || memcmp(j->p, word, n) != 0) {
        return fg_json_fail(j, "unexpected character");
    }

    memset(&v, 0, sizeof(fg_json_value_t));
    v.type = type;
    v.raw = j->p;
    v.raw_len = n;

    j->p += n;

    if (j->handler) {
        j->handler(j, &v, j->data);
    }

    return 0;
}


static int
fg_json_fail(fg_json_t *j, const char *error)
{
    const unsigned char  *p, *line;

    j->error = error;
    j->line = 1;
    line = j->start;

    for (p = j->start; p < j->p; p++) {
        if (*p == '\n') {
            j->line++;
            line = p + 1;
        }
    }

    j->column = (size_t) (j->p - line) + 1;

    return -1;
}
