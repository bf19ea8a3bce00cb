
/*
 * fairgate: JSON in GBNF: the builtin rules (any value, strings with
 * their escapes, numbers, the string formats) and the leaf types of a
 * schema, with their bounds.
 *
 * Whitespace between tokens is bounded (ws: a space, or a newline and up
 * to 32 spaces or tabs), so that a model cannot loop on it.  Strings leave
 * out what jansson (and most parsers) refuse: control characters raw, and
 * the escapes \u0000 and of surrogates.  Numbers: integers of up to 16
 * digits, fractions of up to 16, exponents of up to 2 digits, so that
 * every number fits a double and an integer an int64.
 */


#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_gram_schema.h"


typedef struct {
    uint32_t     bit;
    uint32_t     needs;
    const char  *text;
} fg_gs_builtin_t;


static const fg_gs_builtin_t  fg_gs_builtins[] = {
    { FG_GS_WS, 0, "ws ::= ( \" \" | \"\\n\" [ \\t]{0,32} )?\n" },
    { FG_GS_VALUE, FG_GS_OBJECT | FG_GS_ARRAY | FG_GS_STRING | FG_GS_NUMBER,
      "value ::= object | array | string | number | \"true\" | \"false\""
      " | \"null\"\n" },
    { FG_GS_OBJECT, FG_GS_WS | FG_GS_STRING | FG_GS_VALUE,
      "object ::= \"{\" ws ( member ( \",\" ws member )* )? \"}\"\n"
      "member ::= string ws \":\" ws value ws\n" },
    { FG_GS_ARRAY, FG_GS_WS | FG_GS_VALUE,
      "array ::= \"[\" ws ( value ws ( \",\" ws value ws )* )? \"]\"\n" },
    { FG_GS_STRING, FG_GS_CHAR, "string ::= \"\\\"\" char* \"\\\"\"\n" },
    { FG_GS_CHAR, 0,
      "char ::= [^\"\\\\\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" "
      "uesc )\n"
      "uesc ::= [1-9a-cA-CeEfF] hex hex hex | [dD] [0-7] hex hex"
      " | \"0\" ( [1-9a-fA-F] hex hex | \"0\" ( [1-9a-fA-F] hex"
      " | \"0\" [1-9a-fA-F] ) )\n"
      "hex ::= [0-9a-fA-F]\n" },
    { FG_GS_INTEGER, 0,
      "integer ::= \"-\"? ( \"0\" | [1-9] [0-9]{0,15} )\n" },
    { FG_GS_NUMBER, FG_GS_INTEGER,
      "number ::= integer frac? exp?\n"
      "frac ::= \".\" [0-9]{1,16}\n"
      "exp ::= [eE] [-+]? [0-9]{1,2}\n" },
    { FG_GS_NATURAL, 0,
      "natural ::= \"0\" | [1-9] [0-9]{0,15}\n" },
    { FG_GS_POSITIVE, 0,
      "positive ::= [1-9] [0-9]{0,15}\n" },
    { FG_GS_BOOLEAN, 0, "boolean ::= \"true\" | \"false\"\n" },
    { FG_GS_NULL, 0, "null ::= \"null\"\n" },
    { FG_GS_DATE, 0,
      "date ::= [0-9]{4} \"-\" ( \"0\" [1-9] | \"1\" [0-2] ) \"-\""
      " ( \"0\" [1-9] | [12] [0-9] | \"3\" [01] )\n" },
    { FG_GS_TIME, 0,
      "time ::= hour \":\" [0-5] [0-9] \":\" [0-5] [0-9]"
      " ( \".\" [0-9]{1,6} )? ( \"Z\" | [+-] hour \":\" [0-5] [0-9] )\n"
      "hour ::= [01] [0-9] | \"2\" [0-3]\n" },
    { FG_GS_DATETIME, FG_GS_DATE | FG_GS_TIME,
      "datetime ::= date \"T\" time\n" },
    { FG_GS_UUID, FG_GS_CHAR,
      "uuid ::= hex{8} \"-\" hex{4} \"-\" hex{4} \"-\" hex{4} \"-\""
      " hex{12}\n" },
    { FG_GS_EMAIL, 0,
      "email ::= [a-zA-Z0-9._%+-]{1,64} \"@\" label ( \".\" label ){1,4}\n"
      "label ::= [a-zA-Z0-9-]{1,63}\n" },
};


int
fg_gs_add(fg_gs_text_t *t, const char *s)
{
    size_t   len, cap;
    char    *a;

    len = strlen(s);

    if (t->n + len + 1 > t->cap) {
        cap = t->cap ? t->cap : 256;

        while (cap < t->n + len + 1) {
            cap *= 2;
        }

        if (cap > FG_GRAM_MAX_TEXT + 1024) {
            return -1;
        }

        a = realloc(t->a, cap);

        if (a == NULL) {
            return -1;
        }

        t->a = a;
        t->cap = cap;
    }

    memcpy(t->a + t->n, s, len + 1);
    t->n += len;

    return 0;
}


int
fg_gs_printf(fg_gs_text_t *t, const char *fmt, ...)
{
    char     buf[512];
    va_list  args;

    va_start(args, fmt);
    vsnprintf(buf, sizeof(buf), fmt, args);
    va_end(args);

    return fg_gs_add(t, buf);
}


int
fg_gs_literal(fg_gs_text_t *t, const char *s, size_t len)
{
    char      buf[8];
    size_t    i;
    uint8_t   c;

    if (fg_gs_add(t, "\"") != 0) {
        return -1;
    }

    for (i = 0; i < len; i++) {
        c = (uint8_t) s[i];

        if (c == '"' || c == '\\') {
            buf[0] = '\\';
            buf[1] = c;
            buf[2] = '\0';

        } else if (c < 0x20 || c == 0x7f) {
            snprintf(buf, sizeof(buf), "\\x%02X", c);

        } else {
            buf[0] = c;
            buf[1] = '\0';
        }

        if (fg_gs_add(t, buf) != 0) {
            return -1;
        }
    }

    return fg_gs_add(t, "\"");
}


int
fg_gs_json_literal(fg_gs_t *s, fg_gs_text_t *t, const json_t *v)
{
    int    rc;
    char  *text;

    (void) s;

    text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

    if (text == NULL) {
        return -1;
    }

    rc = fg_gs_literal(t, text, strlen(text));
    free(text);

    return rc;
}


int
fg_gs_need(fg_gs_t *s, uint32_t bits)
{
    size_t                  i;
    const fg_gs_builtin_t  *b;

    for (i = 0; i < sizeof(fg_gs_builtins) / sizeof(fg_gs_builtins[0]);
         i++)
    {
        b = &fg_gs_builtins[i];

        if (!(bits & b->bit) || (s->have & b->bit)) {
            continue;
        }

        s->have |= b->bit;

        if (fg_gs_add(&s->out, b->text) != 0
            || fg_gs_need(s, b->needs) != 0)
        {
            return -1;
        }
    }

    return 0;
}


int
fg_gs_error(fg_gs_t *s, const char *keyword, const char *path,
    const char *why)
{
    snprintf(s->err, s->errlen, "\"%s\" %s (at #%s)", keyword, why, path);

    return -1;
}


/* a count keyword: absent (dflt), or an integer in 0..FG_GRAM_MAX_REPEAT */
int
fg_gs_count(fg_gs_t *s, const json_t *schema, const char *key,
    const char *path, int64_t dflt, int64_t *v)
{
    json_t  *j;

    j = json_object_get(schema, key);
    *v = dflt;

    if (j == NULL) {
        return 0;
    }

    if (!json_is_integer(j) || json_integer_value(j) < 0) {
        return fg_gs_error(s, key, path, "must be a count");
    }

    if (json_integer_value(j) > FG_GRAM_MAX_REPEAT) {
        return fg_gs_error(s, key, path, "over 1000 is not supported");
    }

    *v = json_integer_value(j);

    return 0;
}


int
fg_gs_string(fg_gs_t *s, const json_t *schema, const char *path,
    fg_gs_text_t *t)
{
    size_t         i;
    int64_t        min, max;
    const char    *format;
    static const struct {
        const char  *name;
        const char  *rule;
        uint32_t     bit;
    } formats[] = {
        { "date", "date", FG_GS_DATE },
        { "time", "time", FG_GS_TIME },
        { "date-time", "datetime", FG_GS_DATETIME },
        { "uuid", "uuid", FG_GS_UUID },
        { "email", "email", FG_GS_EMAIL },
    };

    if (fg_gs_count(s, schema, "minLength", path, 0, &min) != 0
        || fg_gs_count(s, schema, "maxLength", path, -1, &max) != 0)
    {
        return -1;
    }

    /* a pattern is the schema compiler's (fg_gram_regex.c) */
    if (json_object_get(schema, "pattern") != NULL) {
        return fg_gs_error(s, "pattern", path, "with minLength or "
                           "maxLength is not supported");
    }

    if (max >= 0 && max < min) {
        return fg_gs_error(s, "maxLength", path, "is under minLength");
    }

    format = json_string_value(json_object_get(schema, "format"));

    if (format == NULL) {
        if (fg_gs_need(s, FG_GS_CHAR) != 0) {
            return -1;
        }

        if (max < 0) {
            return fg_gs_printf(t, "\"\\\"\" char{%d,} \"\\\"\"", (int) min);
        }

        return fg_gs_printf(t, "\"\\\"\" char{%d,%d} \"\\\"\"", (int) min,
                            (int) max);
    }

    for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
        if (strcmp(format, formats[i].name) != 0) {
            continue;
        }

        if (min > 0 || max >= 0) {
            return fg_gs_error(s, "format", path,
                               "with minLength or maxLength is not "
                               "supported");
        }

        if (fg_gs_need(s, formats[i].bit) != 0) {
            return -1;
        }

        return fg_gs_printf(t, "\"\\\"\" %s \"\\\"\"", formats[i].rule);
    }

    return fg_gs_error(s, "format", path, "is not supported for this value "
                       "(date, time, date-time, uuid, email are)");
}


/*
 * A number of no bounds, or of minimum 0 alone (exponents kept); others
 * are fg_gram_range.c's, which calls this one for these two
 */
int
fg_gs_number(fg_gs_t *s, const json_t *schema, const char *path,
    int integer, fg_gs_text_t *t)
{
    json_t  *min;

    (void) integer;

    min = json_object_get(schema, "minimum");

    if (min == NULL) {
        return fg_gs_need(s, FG_GS_NUMBER) || fg_gs_add(t, "number");
    }

    if (!json_is_number(min) || json_number_value(min) != 0) {
        return fg_gs_error(s, "minimum", path, "is not 0");
    }

    if (fg_gs_need(s, FG_GS_NATURAL | FG_GS_NUMBER) != 0) {
        return -1;
    }

    return fg_gs_add(t, "natural frac? exp?");
}
