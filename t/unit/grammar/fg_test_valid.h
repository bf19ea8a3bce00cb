
/*
 * fairgate: a small JSON Schema validator for the features the grammar
 * compiler supports, written apart from it, so that a walk's text is
 * checked against the schema and not against the grammar made of it.
 */

#ifndef _FG_TEST_VALID_H_INCLUDED_
#define _FG_TEST_VALID_H_INCLUDED_


#include <ctype.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>


static int fg_test_valid(const json_t *v, const json_t *s, const json_t *root);


static inline size_t
fg_test_chars(const char *s)
{
    size_t  n;

    for (n = 0; *s; s++) {
        n += ((unsigned char) *s & 0xc0) != 0x80;
    }

    return n;
}


/* n digits at s */
static inline int
fg_test_digits(const char *s, int n)
{
    int  i;

    for (i = 0; i < n; i++) {
        if (!isdigit((unsigned char) s[i])) {
            return 0;
        }
    }

    return 1;
}


static inline int
fg_test_time(const char *s)
{
    if (!fg_test_digits(s, 2) || s[2] != ':' || !fg_test_digits(s + 3, 2)
        || s[5] != ':' || !fg_test_digits(s + 6, 2) || atoi(s) > 23
        || atoi(s + 3) > 59 || atoi(s + 6) > 59)
    {
        return 0;
    }

    s += 8;

    if (*s == '.') {
        for (s++; isdigit((unsigned char) *s); s++) { /* void */ }
    }

    if (strcmp(s, "Z") == 0) {
        return 1;
    }

    return (*s == '+' || *s == '-') && fg_test_digits(s + 1, 2)
           && s[3] == ':' && fg_test_digits(s + 4, 2) && s[6] == '\0';
}


static inline int
fg_test_date(const char *s)
{
    return fg_test_digits(s, 4) && s[4] == '-' && fg_test_digits(s + 5, 2)
           && s[7] == '-' && fg_test_digits(s + 8, 2)
           && atoi(s + 5) >= 1 && atoi(s + 5) <= 12 && atoi(s + 8) >= 1
           && atoi(s + 8) <= 31;
}


static inline int
fg_test_format(const char *f, const char *s)
{
    int          i;
    const char  *at, *dot;

    if (strcmp(f, "date") == 0) {
        return strlen(s) == 10 && fg_test_date(s);
    }

    if (strcmp(f, "time") == 0) {
        return fg_test_time(s);
    }

    if (strcmp(f, "date-time") == 0) {
        return strlen(s) > 11 && fg_test_date(s) && s[10] == 'T'
               && fg_test_time(s + 11);
    }

    if (strcmp(f, "uuid") == 0) {
        for (i = 0; i < 36; i++) {
            if ((i == 8 || i == 13 || i == 18 || i == 23)
                ? s[i] != '-' : !isxdigit((unsigned char) s[i]))
            {
                return 0;
            }
        }

        return s[36] == '\0';
    }

    /* email: something@label.label, labels not empty */
    at = strchr(s, '@');
    dot = at ? strrchr(at, '.') : NULL;

    return at != NULL && at > s && dot != NULL && dot > at + 1
           && dot[1] != '\0' && strstr(at, "..") == NULL;
}


/* POSIX extended expressions: the walks' patterns keep to what they and
 * JSON Schema's share (no \d, no (?:) */
static inline int
fg_test_pattern(const char *pattern, const char *s)
{
    int      rc;
    regex_t  re;

    if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0) {
        return 0;
    }

    rc = regexec(&re, s, 0, NULL, 0) == 0;
    regfree(&re);

    return rc;
}


static inline const json_t *
fg_test_ref(const json_t *root, const char *ref)
{
    if (strcmp(ref, "#") == 0) {
        return root;
    }

    if (strncmp(ref, "#/$defs/", 8) == 0) {
        return json_object_get(json_object_get(root, "$defs"), ref + 8);
    }

    return json_object_get(json_object_get(root, "definitions"), ref + 14);
}


static inline int
fg_test_valid_object(const json_t *v, const json_t *s, const json_t *root)
{
    size_t        i, last, at;
    json_t       *props, *req, *add, *x, *p;
    const char   *key, *k2;

    props = json_object_get(s, "properties");
    req = json_object_get(s, "required");
    add = json_object_get(s, "additionalProperties");
    last = 0;

    json_object_foreach((json_t *) v, key, x) {
        if (props == NULL || json_object_size(props) == 0) {
            if (add != NULL && !fg_test_valid(x, add, root)) {
                return 0;
            }

            continue;
        }

        at = 0;
        i = 0;

        json_object_foreach(props, k2, p) {
            i++;

            if (strcmp(k2, key) == 0) {
                at = i;
                break;
            }
        }

        /* unknown, out of the schema's order, or not valid */
        if (at <= last || !fg_test_valid(x, p, root)) {
            return 0;
        }

        last = at;
    }

    for (i = 0; i < json_array_size(req); i++) {
        if (!json_object_get(v, json_string_value(json_array_get(req, i)))) {
            return 0;
        }
    }

    return 1;
}


static inline int
fg_test_valid_type(const json_t *v, const json_t *s, const char *type,
    const json_t *root)
{
    size_t   i;
    json_t  *j;

    if (strcmp(type, "object") == 0) {
        return json_is_object(v) && fg_test_valid_object(v, s, root);
    }

    if (strcmp(type, "array") == 0) {
        if (!json_is_array(v)) {
            return 0;
        }

        j = json_object_get(s, "minItems");

        if (j && json_array_size(v) < (size_t) json_integer_value(j)) {
            return 0;
        }

        j = json_object_get(s, "maxItems");

        if (j && json_array_size(v) > (size_t) json_integer_value(j)) {
            return 0;
        }

        j = json_object_get(s, "items");

        for (i = 0; j && i < json_array_size(v); i++) {
            if (!fg_test_valid(json_array_get(v, i), j, root)) {
                return 0;
            }
        }

        return 1;
    }

    if (strcmp(type, "string") == 0) {
        if (!json_is_string(v)) {
            return 0;
        }

        j = json_object_get(s, "minLength");

        if (j && fg_test_chars(json_string_value(v))
                 < (size_t) json_integer_value(j))
        {
            return 0;
        }

        j = json_object_get(s, "maxLength");

        if (j && fg_test_chars(json_string_value(v))
                 > (size_t) json_integer_value(j))
        {
            return 0;
        }

        j = json_object_get(s, "pattern");

        if (j && !fg_test_pattern(json_string_value(j),
                                  json_string_value(v)))
        {
            return 0;
        }

        j = json_object_get(s, "format");

        return j == NULL || fg_test_format(json_string_value(j),
                                           json_string_value(v));
    }

    if (strcmp(type, "integer") == 0 || strcmp(type, "number") == 0) {
        if (type[0] == 'i' ? !json_is_integer(v) : !json_is_number(v)) {
            return 0;
        }

        j = json_object_get(s, "minimum");

        if (j && json_number_value(v) < json_number_value(j)) {
            return 0;
        }

        j = json_object_get(s, "maximum");

        if (j && json_number_value(v) > json_number_value(j)) {
            return 0;
        }

        j = json_object_get(s, "exclusiveMaximum");

        if (j && json_number_value(v) >= json_number_value(j)) {
            return 0;
        }

        j = json_object_get(s, "exclusiveMinimum");

        return j == NULL || json_number_value(v) > json_number_value(j);
    }

    if (strcmp(type, "boolean") == 0) {
        return json_is_boolean(v);
    }

    return json_is_null(v);
}


static int
fg_test_valid(const json_t *v, const json_t *s, const json_t *root)
{
    size_t   i;
    json_t  *j, *type;

    if (json_is_true(s) || json_is_false(s)) {
        return json_is_true(s);
    }

    if ((j = json_object_get(s, "$ref")) != NULL) {
        return fg_test_valid(v, fg_test_ref(root, json_string_value(j)),
                             root);
    }

    if ((j = json_object_get(s, "enum")) != NULL) {
        for (i = 0; i < json_array_size(j); i++) {
            if (json_equal((json_t *) v, json_array_get(j, i))) {
                return 1;
            }
        }

        return 0;
    }

    if ((j = json_object_get(s, "const")) != NULL) {
        return json_equal((json_t *) v, j);
    }

    if ((j = json_object_get(s, "anyOf")) != NULL
        || (j = json_object_get(s, "oneOf")) != NULL)
    {
        for (i = 0; i < json_array_size(j); i++) {
            if (fg_test_valid(v, json_array_get(j, i), root)) {
                return 1;
            }
        }

        return 0;
    }

    type = json_object_get(s, "type");

    if (json_is_string(type)) {
        return fg_test_valid_type(v, s, json_string_value(type), root);
    }

    for (i = 0; i < json_array_size(type); i++) {
        if (fg_test_valid_type(v, s, json_string_value(json_array_get(type,
                                                                      i)),
                               root))
        {
            return 1;
        }
    }

    if (type != NULL) {
        return 0;
    }

    if (json_object_get(s, "properties")) {
        return fg_test_valid_type(v, s, "object", root);
    }

    return json_object_get(s, "items") == NULL
           || fg_test_valid_type(v, s, "array", root);
}


#endif /* _FG_TEST_VALID_H_INCLUDED_ */
