
/*
 * fairgate: a template's source to tokens, as the reference's lexer cuts
 * it: first its preprocessing (one final newline dropped, lstrip_blocks
 * and trim_blocks, which transformers turns on), then text and tags,
 * with "{%-"/"-%}" eating the white space beside them.  Each token keeps
 * its place in the original source, for errors.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_jinja_int.h"


typedef struct {
    fg_jinja_t          *tpl;
    fg_jlex_t           *lx;
    size_t               cur;
    size_t               cap;
    int                  curly;
    fg_jinja_err_t      *err;
    jmp_buf              fail;
} fg_jlexer_t;


static const struct {
    const char          *seq;
    fg_jtok_type_e       type;
} fg_jlex_table[] = {
    { "{%", FG_JT_OPEN_STMT }, { "%}", FG_JT_CLOSE_STMT },
    { "{{", FG_JT_OPEN_EXPR }, { "}}", FG_JT_CLOSE_EXPR },
    { "(", FG_JT_LPAREN }, { ")", FG_JT_RPAREN },
    { "{", FG_JT_LBRACE }, { "}", FG_JT_RBRACE },
    { "[", FG_JT_LBRACKET }, { "]", FG_JT_RBRACKET },
    { ",", FG_JT_COMMA }, { ".", FG_JT_DOT }, { ":", FG_JT_COLON },
    { "|", FG_JT_PIPE },
    { "<=", FG_JT_CMP }, { ">=", FG_JT_CMP }, { "==", FG_JT_CMP },
    { "!=", FG_JT_CMP }, { "<", FG_JT_CMP }, { ">", FG_JT_CMP },
    { "+", FG_JT_ADD }, { "-", FG_JT_ADD }, { "~", FG_JT_ADD },
    { "**", FG_JT_POW }, { "*", FG_JT_MUL }, { "//", FG_JT_MUL },
    { "/", FG_JT_MUL }, { "%", FG_JT_MUL }, { "=", FG_JT_ASSIGN }
};


static void fg_jlex_fail(fg_jlexer_t *l, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 2, 3)));


static void
fg_jlex_fail(fg_jlexer_t *l, const char *fmt, ...)
{
    size_t   pos;
    va_list  args;

    l->err->rc = FG_JINJA_ESYNTAX;

    va_start(args, fmt);
    vsnprintf(l->err->message, sizeof(l->err->message), fmt, args);
    va_end(args);

    pos = l->cur < l->lx->len ? l->lx->map[l->cur] : l->tpl->len;
    fg_jinja_where(l->tpl, pos, l->err);

    longjmp(l->fail, 1);
}


static void *
fg_jlex_alloc(fg_jlexer_t *l, size_t n)
{
    void  *p;

    p = fg_jinja_alloc(&l->tpl->arena, n);

    if (p == NULL) {
        l->err->rc = FG_JINJA_ENOMEM;
        snprintf(l->err->message, sizeof(l->err->message), "out of memory");
        longjmp(l->fail, 1);
    }

    return p;
}


/* "{% generation %}" or "{%- endgeneration -%}" at s: its length, or 0;
 * *left and *right: its dashes */
static size_t
fg_jlex_generation_tag(const char *s, size_t len, int *left, int *right)
{
    size_t  i, n;

    if (len < 2 || s[0] != '{' || s[1] != '%') {
        return 0;
    }

    i = 2;
    *left = i < len && s[i] == '-';
    i += *left;

    while ((n = fg_jstr_space(s + i, len - i)) != 0) {
        i += n;
    }

    if (len - i >= 3 && memcmp(s + i, "end", 3) == 0) {
        i += 3;
    }

    if (len - i < 10 || memcmp(s + i, "generation", 10) != 0) {
        return 0;
    }

    i += 10;

    while ((n = fg_jstr_space(s + i, len - i)) != 0) {
        i += n;
    }

    *right = i < len && s[i] == '-';
    i += *right;

    if (len - i < 2 || s[i] != '%' || s[i + 1] != '}') {
        return 0;
    }

    return i + 2;
}


/*
 * The reference drops {% generation %} tags (transformers' marks of the
 * assistant's text for training), with the white space beside them where
 * a dash says so.
 */
static void
fg_jlex_generation(fg_jlex_t *lx)
{
    int     left, right;
    size_t  i, k, n, tag, mark;

    k = 0;
    mark = 0;

    for (i = 0; i < lx->len; ) {
        tag = fg_jlex_generation_tag(lx->src + i, lx->len - i, &left,
                                     &right);

        if (tag == 0) {
            lx->src[k] = lx->src[i];
            lx->map[k++] = lx->map[i++];
            continue;
        }

        while (left && k > mark
               && (n = fg_jstr_space_back(lx->src + mark, k - mark)) != 0)
        {
            k -= n;
        }

        i += tag;

        while (right && (n = fg_jstr_space(lx->src + i, lx->len - i)) != 0)
        {
            i += n;
        }

        mark = k;
    }

    lx->src[k] = '\0';
    lx->map[k] = lx->map[lx->len];
    lx->len = k;
}


/* the reference's preprocess(), keeping each byte's original place */
static void
fg_jlex_preprocess(fg_jlexer_t *l, const char *src, size_t len)
{
    size_t      i, j, k, n;
    fg_jlex_t  *lx;

    lx = l->lx;

    if (len && src[len - 1] == '\n') {
        len--;
    }

    lx->src = fg_jlex_alloc(l, len + 1);
    lx->map = fg_jlex_alloc(l, (len + 1) * sizeof(size_t));

    /* lstrip_blocks: blanks that start a line before "{%", "{#", "{-" */
    n = 0;

    for (i = 0; i < len; i++) {
        if (i == 0 || src[i - 1] == '\n' || src[i - 1] == '\r') {
            for (j = i; j < len && (src[j] == ' ' || src[j] == '\t'); j++) {
                /* the blanks */
            }

            if (j + 1 < len && src[j] == '{'
                && (src[j + 1] == '%' || src[j + 1] == '#'
                    || src[j + 1] == '-'))
            {
                i = j;
            }
        }

        lx->src[n] = src[i];
        lx->map[n++] = i;
    }

    /* trim_blocks: the newline after "%}", "#}", "-}" */
    k = 0;

    for (i = 0; i < n; i++) {
        if (lx->src[i] == '\n' && k >= 2 && lx->src[k - 1] == '}'
            && (lx->src[k - 2] == '%' || lx->src[k - 2] == '#'
                || lx->src[k - 2] == '-')
            && lx->map[k - 1] + 1 == lx->map[i])
        {
            continue;
        }

        lx->src[k] = lx->src[i];
        lx->map[k++] = lx->map[i];
    }

    lx->src[k] = '\0';
    lx->map[k] = len;
    lx->len = k;

    fg_jlex_generation(lx);
}


static fg_jtok_t *
fg_jlex_push(fg_jlexer_t *l, fg_jtok_type_e type, size_t at,
    const char *data, size_t len)
{
    fg_jtok_t  *t, *toks;

    if (l->lx->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        toks = fg_jlex_alloc(l, l->cap * sizeof(fg_jtok_t));

        if (l->lx->n) {
            memcpy(toks, l->lx->toks, l->lx->n * sizeof(fg_jtok_t));
        }

        l->lx->toks = toks;
    }

    t = &l->lx->toks[l->lx->n++];
    t->type = type;
    t->pos = l->lx->map[at];
    t->data = data;
    t->len = len;

    return t;
}


static fg_jtok_type_e
fg_jlex_last(fg_jlexer_t *l)
{
    return l->lx->n ? l->lx->toks[l->lx->n - 1].type : FG_JT_END;
}


/* "{%-", "{{-", "{#-": the white space at the end of the text before */
static void
fg_jlex_strip_text(fg_jlexer_t *l)
{
    size_t      n;
    fg_jtok_t  *t;

    if (fg_jlex_last(l) != FG_JT_TEXT) {
        return;
    }

    t = &l->lx->toks[l->lx->n - 1];

    while (t->len && (n = fg_jstr_space_back(t->data, t->len)) != 0) {
        t->len -= n;
    }

    if (t->len == 0) {
        l->lx->n--;
    }
}


static void
fg_jlex_skip_space(fg_jlexer_t *l)
{
    size_t  n;

    while (l->cur < l->lx->len
           && (n = fg_jstr_space(l->lx->src + l->cur,
                                 l->lx->len - l->cur)) != 0)
    {
        l->cur += n;
    }
}


static int
fg_jlex_word(int ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')
           || (ch >= '0' && ch <= '9') || ch == '_';
}


static int
fg_jlex_digit(int ch)
{
    return ch >= '0' && ch <= '9';
}


static size_t
fg_jlex_digits(fg_jlexer_t *l)
{
    size_t  start;

    start = l->cur;

    while (fg_jlex_digit(l->lx->src[l->cur])) {
        if (++l->cur >= l->lx->len) {
            fg_jlex_fail(l, "unexpected end of input");
        }
    }

    return l->cur - start;
}


static int
fg_jlex_hex(fg_jlexer_t *l, size_t n, uint32_t *cp)
{
    int     ch;
    size_t  i;

    *cp = 0;

    for (i = 0; i < n; i++) {
        if (l->cur + i >= l->lx->len) {
            return -1;
        }

        ch = l->lx->src[l->cur + i];
        *cp <<= 4;

        if (fg_jlex_digit(ch)) {
            *cp |= ch - '0';

        } else if ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'f') {
            *cp |= (ch | 0x20) - 'a' + 10;

        } else {
            return -1;
        }
    }

    l->cur += n;

    return 0;
}


static size_t
fg_jlex_utf8(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char) cp;
        return 1;
    }

    if (cp < 0x800) {
        out[0] = (char) (0xc0 | (cp >> 6));
        out[1] = (char) (0x80 | (cp & 63));
        return 2;
    }

    out[0] = (char) (0xe0 | (cp >> 12));
    out[1] = (char) (0x80 | ((cp >> 6) & 63));
    out[2] = (char) (0x80 | (cp & 63));

    return 3;
}


/* a string literal, its escapes resolved; at the opening quote */
static void
fg_jlex_string(fg_jlexer_t *l)
{
    char        q, ch, *out;
    size_t      at, n;
    uint32_t    cp;
    const char  *s;

    at = l->cur;
    s = l->lx->src;
    q = s[l->cur++];

    /* the value is never longer than the literal: room for that only */
    for (n = l->cur; n < l->lx->len && s[n] != q; n++) {
        if (s[n] == '\\') {
            n++;
        }
    }

    out = fg_jlex_alloc(l, n - l->cur + 1);
    n = 0;

    while (l->cur < l->lx->len && s[l->cur] != q) {
        ch = s[l->cur++];

        if (ch == '\\') {
            if (l->cur >= l->lx->len) {
                fg_jlex_fail(l, "unexpected end of input");
            }

            ch = s[l->cur++];

            switch (ch) {
            case 'n': out[n++] = '\n'; break;
            case 't': out[n++] = '\t'; break;
            case 'r': out[n++] = '\r'; break;
            case 'b': out[n++] = '\b'; break;
            case 'f': out[n++] = '\f'; break;
            case 'v': out[n++] = '\v'; break;
            case '\'': case '"': case '\\': out[n++] = ch; break;
            case 'x':
            case 'u':
                if (fg_jlex_hex(l, ch == 'x' ? 2 : 4, &cp) != 0) {
                    fg_jlex_fail(l, "invalid hexadecimal escape");
                }

                n += fg_jlex_utf8(cp, out + n);
                break;
            default:
                fg_jlex_fail(l, "unexpected escaped character: %c", ch);
            }

            continue;
        }

        out[n++] = ch;

        if (l->cur >= l->lx->len) {
            fg_jlex_fail(l, "unexpected end of input");
        }
    }

    if (l->cur >= l->lx->len) {
        fg_jlex_fail(l, "unexpected end of input");
    }

    l->cur++;
    fg_jlex_push(l, FG_JT_STRING, at, out, n);
}


static void
fg_jlex_number(fg_jlexer_t *l, size_t at)
{
    fg_jtok_type_e  type;

    type = FG_JT_INT;
    fg_jlex_digits(l);

    if (l->cur - at > (l->lx->src[at] == '-' || l->lx->src[at] == '+')
        && fg_jlex_last(l) != FG_JT_DOT && l->lx->src[l->cur] == '.'
        && fg_jlex_digit(l->lx->src[l->cur + 1]))
    {
        l->cur++;
        fg_jlex_digits(l);
        type = FG_JT_FLOAT;
    }

    fg_jlex_push(l, type, at, l->lx->src + at, l->cur - at);
}


/* a comment: at "{#" */
static void
fg_jlex_comment(fg_jlexer_t *l)
{
    int          before, after;
    size_t       at;
    const char  *s;

    at = l->cur;
    s = l->lx->src;
    l->cur += 2;
    before = s[l->cur] == '-';

    if (before) {
        l->cur++;
    }

    while (s[l->cur] != '#' || s[l->cur + 1] != '}') {
        if (l->cur + 2 >= l->lx->len) {
            fg_jlex_fail(l, "missing end of comment tag");
        }

        l->cur++;
    }

    after = s[l->cur - 1] == '-' && l->cur > at + 2 + before;

    if (before) {
        fg_jlex_strip_text(l);
    }

    fg_jlex_push(l, FG_JT_COMMENT, at, NULL, 0);
    l->cur += 2;

    if (after) {
        fg_jlex_skip_space(l);
    }
}


/* the tokens of a tag's inside, one a call */
static void
fg_jlex_inside(fg_jlexer_t *l)
{
    char            ch;
    size_t          i, at, len;
    fg_jtok_type_e  last;
    const char     *s;

    s = l->lx->src;
    at = l->cur;
    ch = s[at];

    if (ch == '-' || ch == '+') {
        last = fg_jlex_last(l);

        if (last == FG_JT_TEXT || last == FG_JT_END) {
            fg_jlex_fail(l, "unexpected character: %c", ch);
        }

        if (last != FG_JT_NAME && last != FG_JT_INT && last != FG_JT_FLOAT
            && last != FG_JT_STRING && last != FG_JT_RPAREN
            && last != FG_JT_RBRACKET)
        {
            l->cur++;

            if (fg_jlex_digit(s[l->cur])) {
                fg_jlex_number(l, at);

            } else {
                fg_jlex_push(l, FG_JT_UNARY, at, s + at, 1);
            }

            return;
        }
    }

    for (i = 0; i < sizeof(fg_jlex_table) / sizeof(fg_jlex_table[0]); i++) {
        if (fg_jlex_table[i].seq[0] != ch) {
            continue;
        }

        len = strlen(fg_jlex_table[i].seq);

        if ((fg_jlex_table[i].type == FG_JT_CLOSE_EXPR && l->curly > 0)
            || l->lx->len - at < len
            || memcmp(s + at, fg_jlex_table[i].seq, len) != 0)
        {
            continue;
        }

        fg_jlex_push(l, fg_jlex_table[i].type, at, s + at, len);
        l->cur += len;

        if (fg_jlex_table[i].type == FG_JT_OPEN_EXPR) {
            l->curly = 0;

        } else if (fg_jlex_table[i].type == FG_JT_LBRACE) {
            l->curly++;

        } else if (fg_jlex_table[i].type == FG_JT_RBRACE) {
            l->curly--;
        }

        return;
    }

    if (ch == '\'' || ch == '"') {
        fg_jlex_string(l);
        return;
    }

    if (fg_jlex_digit(ch)) {
        fg_jlex_number(l, at);
        return;
    }

    if (fg_jlex_word(ch)) {
        while (fg_jlex_word(s[l->cur])) {
            if (++l->cur >= l->lx->len) {
                fg_jlex_fail(l, "unexpected end of input");
            }
        }

        fg_jlex_push(l, FG_JT_NAME, at, s + at, l->cur - at);
        return;
    }

    fg_jlex_fail(l, "unexpected character: %c", ch);
}


static void
fg_jlex_text(fg_jlexer_t *l)
{
    size_t       at;
    const char  *s;

    s = l->lx->src;
    at = l->cur;

    while (l->cur < l->lx->len
           && !(s[l->cur] == '{'
                && (s[l->cur + 1] == '%' || s[l->cur + 1] == '{'
                    || s[l->cur + 1] == '#')))
    {
        l->cur++;
    }

    if (l->cur > at) {
        fg_jlex_push(l, FG_JT_TEXT, at, s + at, l->cur - at);
    }
}


static void
fg_jlex_run(fg_jlexer_t *l)
{
    size_t           before;
    fg_jtok_type_e   last;
    const char      *s;

    s = l->lx->src;

    while (l->cur < l->lx->len) {
        last = fg_jlex_last(l);

        if (last == FG_JT_END || last == FG_JT_CLOSE_STMT
            || last == FG_JT_CLOSE_EXPR || last == FG_JT_COMMENT)
        {
            before = l->cur;
            fg_jlex_text(l);

            if (l->cur > before) {
                continue;
            }
        }

        if (s[l->cur] == '{' && s[l->cur + 1] == '#') {
            fg_jlex_comment(l);
            continue;
        }

        if (s[l->cur] == '{' && (s[l->cur + 1] == '%' || s[l->cur + 1] == '{')
            && s[l->cur + 2] == '-')
        {
            fg_jlex_strip_text(l);
            fg_jlex_push(l, s[l->cur + 1] == '%' ? FG_JT_OPEN_STMT
                                                 : FG_JT_OPEN_EXPR,
                         l->cur, s + l->cur, 2);
            l->curly = 0;
            l->cur += 3;
            continue;
        }

        fg_jlex_skip_space(l);

        if (l->cur >= l->lx->len) {
            fg_jlex_fail(l, "unexpected end of input");
        }

        if (s[l->cur] == '-' && (s[l->cur + 1] == '%' || s[l->cur + 1] == '}')
            && s[l->cur + 2] == '}')
        {
            fg_jlex_push(l, s[l->cur + 1] == '%' ? FG_JT_CLOSE_STMT
                                                 : FG_JT_CLOSE_EXPR,
                         l->cur, s + l->cur, 2);
            l->cur += 3;
            fg_jlex_skip_space(l);
            continue;
        }

        fg_jlex_inside(l);
    }
}


int
fg_jinja_lex(fg_jinja_t *t, const char *src, size_t len, fg_jlex_t *lx,
    fg_jinja_err_t *err)
{
    fg_jlexer_t  l;

    memset(lx, 0, sizeof(fg_jlex_t));
    memset(&l, 0, sizeof(fg_jlexer_t));

    l.tpl = t;
    l.lx = lx;
    l.err = err;

    if (setjmp(l.fail)) {
        return -1;
    }

    fg_jlex_preprocess(&l, src, len);
    fg_jlex_run(&l);

    /* the end, for the parser's look-ahead */
    fg_jlex_push(&l, FG_JT_END, lx->len, NULL, 0);
    lx->n--;

    return 0;
}
