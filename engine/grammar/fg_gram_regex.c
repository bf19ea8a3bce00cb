
/*
 * fairgate: a string schema's "pattern" as grammar, for the regular
 * expressions that are regular: literals, escapes (\d \w \s and their
 * negations, \t \n \r, an escaped mark), classes ([a-z_], negated), ".",
 * groups ((...), (?:...)) with alternatives, and * + ? {m} {m,} {m,n}.
 * Anchors ^ and $ only at the ends; without them the pattern may match
 * anywhere in the string, as JSON Schema has it.  Refused, by name:
 * back-references, lookaround, lazy and possessive quantifiers, word
 * boundaries, \p classes.
 *
 * The grammar writes the string's JSON text, so a character the pattern
 * matches is written as JSON must write it: a quote, a backslash or a
 * control character as its escape.  "." and negated classes leave those
 * out (a subset of the strings the pattern matches: each one written is
 * still a match).
 */


#include <stdio.h>
#include <string.h>

#include "fg_gram_schema.h"
#include "fg_utf8.h"


#define FG_RE_MAX_NEST  32


typedef struct {
    const char    *p;
    const char    *end;
    fg_gs_t       *s;
    const char    *path;
    uint32_t       nest;
} fg_re_t;


static int fg_re_alts(fg_re_t *re, fg_gs_text_t *t);
static int fg_re_item(fg_re_t *re, fg_gs_text_t *t);


static int
fg_re_refuse(fg_re_t *re, const char *what)
{
    char  why[96];

    snprintf(why, sizeof(why), "with %s is not supported", what);

    return fg_gs_error(re->s, "pattern", re->path, why);
}


/* one character as the JSON text of a string writes it */
static int
fg_re_char(fg_gs_text_t *t, uint32_t cp)
{
    if (cp == '"') {
        return fg_gs_add(t, "\"\\\\\\\"\" ");
    }

    if (cp == '\\') {
        return fg_gs_add(t, "\"\\\\\\\\\" ");
    }

    if (cp == '\n' || cp == '\t' || cp == '\r') {
        return fg_gs_printf(t, "\"\\\\%c\" ", cp == '\n' ? 'n'
                            : cp == '\t' ? 't' : 'r');
    }

    if (cp < 0x20) {
        return fg_gs_printf(t, "\"\\\\u00%02x\" ", cp);
    }

    return fg_gs_printf(t, "\"\\U%08X\" ", cp);
}


/* the class of an escape (\d \w \s, upper case negated) into t, or its
 * character into *cp (returns 1) */
static int
fg_re_escape(fg_re_t *re, fg_gs_text_t *t, uint32_t *cp, int in_class)
{
    int  c;

    if (re->p == re->end) {
        return fg_re_refuse(re, "a trailing backslash");
    }

    c = (unsigned char) *re->p++;

    switch (c) {
    case 'd': return fg_gs_add(t, in_class ? "0-9" : "[0-9] ");
    case 'w': return fg_gs_add(t, in_class ? "a-zA-Z0-9_" : "[a-zA-Z0-9_] ");
    case 's':
        return in_class ? fg_gs_add(t, " ")
               : fg_gs_add(t, "( \" \" | \"\\\\t\" | \"\\\\n\" | \"\\\\r\" ) ");
    case 'D': case 'W': case 'S':
        if (in_class) {
            return fg_re_refuse(re, "\\D, \\W or \\S in a class");
        }

        return fg_gs_printf(t, "[^\"\\\\\\x00-\\x1F%s] ", c == 'D' ? "0-9"
                            : c == 'W' ? "a-zA-Z0-9_" : " ");
    case 'n': *cp = '\n'; return 1;
    case 't': *cp = '\t'; return 1;
    case 'r': *cp = '\r'; return 1;
    }

    if (strchr(".\\/-^$*+?()[]{}|\"'#:,=<>!@%&~`", c) == NULL || c == 0) {
        return fg_re_refuse(re, c == 'b' || c == 'B' ? "a word boundary"
                            : c >= '1' && c <= '9' ? "a back-reference"
                            : "an escape it does not know");
    }

    *cp = c;

    return 1;
}


static int
fg_re_utf8(fg_re_t *re, uint32_t *cp)
{
    size_t  n;

    n = fg_utf8_decode((const uint8_t *) re->p, re->end - re->p, cp);

    if (n == 0) {
        return fg_re_refuse(re, "invalid UTF-8");
    }

    re->p += n;

    return 0;
}


/* a class's character: an escape, or UTF-8 */
static int
fg_re_class_char(fg_re_t *re, fg_gs_text_t *t, uint32_t *cp)
{
    if (*re->p == '\\') {
        re->p++;
        return fg_re_escape(re, t, cp, 1);
    }

    return fg_re_utf8(re, cp) == 0 ? 1 : -1;
}


static int
fg_re_class(fg_re_t *re, fg_gs_text_t *t)
{
    int       negate, rc;
    uint32_t  lo, hi;

    negate = re->p < re->end && *re->p == '^';
    re->p += negate;

    if (fg_gs_add(t, negate ? "[^\"\\\\\\x00-\\x1F" : "[") != 0) {
        return -1;
    }

    while (re->p < re->end && *re->p != ']') {
        rc = fg_re_class_char(re, t, &lo);

        if (rc <= 0) {
            if (rc < 0) {
                return -1;
            }

            continue;
        }

        hi = lo;

        if (re->end - re->p >= 2 && re->p[0] == '-' && re->p[1] != ']') {
            re->p++;

            if (fg_re_class_char(re, t, &hi) != 1 || hi < lo) {
                return fg_re_refuse(re, "a range it cannot read");
            }
        }

        if (!negate && (lo < 0x20 || (lo <= '"' && hi >= '"')
                        || (lo <= '\\' && hi >= '\\')))
        {
            return fg_re_refuse(re, "a class holding a quote, a backslash "
                                "or a control character");
        }

        if (fg_gs_printf(t, "\\U%08X-\\U%08X", lo, hi) != 0) {
            return -1;
        }
    }

    if (re->p == re->end) {
        return fg_re_refuse(re, "a class not closed");
    }

    re->p++;

    return fg_gs_add(t, "] ");
}


static int
fg_re_atom(fg_re_t *re, fg_gs_text_t *t)
{
    int       rc;
    uint32_t  cp;

    switch (*re->p) {

    case '(':
        if (++re->nest > FG_RE_MAX_NEST) {
            return fg_re_refuse(re, "groups nested too deep");
        }

        re->p++;

        if (re->end - re->p >= 2 && re->p[0] == '?') {
            if (re->p[1] != ':') {
                return fg_re_refuse(re, "lookaround or a named group");
            }

            re->p += 2;
        }

        if (fg_gs_add(t, "( ") != 0 || fg_re_alts(re, t) != 0) {
            return -1;
        }

        if (re->p == re->end || *re->p != ')') {
            return fg_re_refuse(re, "a group not closed");
        }

        re->p++;
        re->nest--;

        return fg_gs_add(t, ") ");

    case '[':
        re->p++;
        return fg_re_class(re, t);

    case '.':
        re->p++;
        return fg_gs_add(t, "[^\"\\\\\\x00-\\x1F] ");

    case '\\':
        re->p++;
        rc = fg_re_escape(re, t, &cp, 0);
        return rc == 1 ? fg_re_char(t, cp) : rc;

    case '^': case '$':
        return fg_re_refuse(re, "an anchor inside it");

    case '*': case '+': case '?': case '{':
        return fg_re_refuse(re, "a quantifier that follows nothing");
    }

    return fg_re_utf8(re, &cp) == 0 ? fg_re_char(t, cp) : -1;
}


/* a count of a repetition: its digits, at most FG_GRAM_MAX_REPEAT */
static int
fg_re_count(fg_re_t *re, unsigned *v)
{
    const char  *start;

    *v = 0;
    start = re->p;

    while (re->p < re->end && *re->p >= '0' && *re->p <= '9') {
        *v = *v * 10 + (*re->p++ - '0');

        if (*v > FG_GRAM_MAX_REPEAT) {
            return fg_re_refuse(re, "a repetition over 1000");
        }
    }

    return re->p > start ? 1 : 0;
}


/* {m}, {m,}, {m,n} into text */
static int
fg_re_braces(fg_re_t *re, fg_gs_text_t *t)
{
    int       rc;
    unsigned  m, k;

    re->p++;
    rc = fg_re_count(re, &m);

    if (rc <= 0) {
        return rc < 0 ? -1 : fg_re_refuse(re, "a brace that is not a "
                                          "repetition");
    }

    if (re->p < re->end && *re->p == '}') {
        re->p++;
        return fg_gs_printf(t, "{%u} ", m);
    }

    if (re->p == re->end || *re->p++ != ',') {
        return fg_re_refuse(re, "a brace that is not a repetition");
    }

    rc = fg_re_count(re, &k);

    if (rc < 0 || re->p == re->end || *re->p++ != '}' || (rc && k < m)) {
        return rc < 0 ? -1 : fg_re_refuse(re, "a brace that is not a "
                                          "repetition");
    }

    return rc ? fg_gs_printf(t, "{%u,%u} ", m, k)
              : fg_gs_printf(t, "{%u,} ", m);
}


static int
fg_re_item(fg_re_t *re, fg_gs_text_t *t)
{
    char  c;

    if (fg_gs_add(t, "( ") != 0 || fg_re_atom(re, t) != 0
        || fg_gs_add(t, ") ") != 0)
    {
        return -1;
    }

    if (re->p == re->end) {
        return 0;
    }

    c = *re->p;

    if (c == '{') {
        if (fg_re_braces(re, t) != 0) {
            return -1;
        }

    } else if (c == '*' || c == '+' || c == '?') {
        re->p++;

        if (fg_gs_printf(t, "%c ", c) != 0) {
            return -1;
        }

    } else {
        return 0;
    }

    if (re->p < re->end && (*re->p == '?' || *re->p == '+')) {
        return fg_re_refuse(re, "a lazy or possessive quantifier");
    }

    if (re->p < re->end && strchr("*+?{", *re->p) != NULL) {
        return fg_re_refuse(re, "a quantifier on a quantifier");
    }

    return 0;
}


static int
fg_re_alts(fg_re_t *re, fg_gs_text_t *t)
{
    for ( ;; ) {
        while (re->p < re->end && *re->p != '|' && *re->p != ')'
               && !(*re->p == '$' && re->p + 1 == re->end && re->nest == 0))
        {
            if (fg_re_item(re, t) != 0) {
                return -1;
            }
        }

        if (re->p == re->end || *re->p != '|') {
            return 0;
        }

        re->p++;

        if (fg_gs_add(t, "| ") != 0) {
            return -1;
        }
    }
}


int
fg_gs_pattern(fg_gs_t *s, const char *pattern, const char *path,
    fg_gs_text_t *t)
{
    int      head, tail;
    fg_re_t  re;

    re.s = s;
    re.path = path;
    re.p = pattern;
    re.end = pattern + strlen(pattern);
    re.nest = 0;

    head = re.p < re.end && *re.p == '^';
    re.p += head;

    if (fg_gs_need(s, FG_GS_CHAR) != 0
        || fg_gs_printf(t, "\"\\\"\" %s( ", head ? "" : "char* ") != 0
        || fg_re_alts(&re, t) != 0)
    {
        return -1;
    }

    tail = re.p < re.end && *re.p == '$';
    re.p += tail;

    if (re.p != re.end) {
        return fg_re_refuse(&re, *re.p == ')' ? "a \")\" not opened"
                            : "an anchor inside it");
    }

    return fg_gs_printf(t, ") %s\"\\\"\"", tail ? "" : "char* ");
}
