
/*
 * fairgate: a validating JSON scanner that allocates nothing.
 *
 * Pure C, no nginx types.  The gateway reads a few fields of each request
 * and response body (message text lengths, max_tokens, stream, usage);
 * building a tree for that (jansson) cost more than the rest of the
 * request.  fg_json_scan() checks the whole text against RFC 8259 (UTF-8
 * included) and calls back for every value with its path: the keys and
 * array positions from the root down.  Strings are not decoded; their
 * decoded length in bytes is given.
 */

#ifndef _FG_JSON_H_INCLUDED_
#define _FG_JSON_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


#define FG_JSON_MAX_DEPTH  64


typedef enum {
    FG_JSON_OBJECT = 0,        /* an object starts */
    FG_JSON_ARRAY,             /* an array starts */
    FG_JSON_STRING,
    FG_JSON_NUMBER,
    FG_JSON_TRUE,
    FG_JSON_FALSE,
    FG_JSON_NULL
} fg_json_type_e;


/* one level of a value's path: a key in an object, or an array index */
typedef struct {
    const unsigned char  *key;        /* raw, as written; NULL in arrays */
    size_t                key_len;
    size_t                index;      /* in arrays */
} fg_json_level_t;


typedef struct {
    fg_json_type_e        type;
    const unsigned char  *raw;        /* the text: a string without quotes */
    size_t                raw_len;
    size_t                len;        /* a string's decoded length, bytes */
    int                   integer;    /* a number with no fraction or exp */
    int64_t               value;      /* an integer's value, if it fits */
    int                   overflow;   /* an integer too large for int64 */
} fg_json_value_t;


typedef struct fg_json_s  fg_json_t;

/* called for each value, containers when they start; depth 0 is the root */
typedef void (*fg_json_value_pt)(fg_json_t *j, fg_json_value_t *v,
    void *data);


struct fg_json_s {
    const unsigned char  *start;
    const unsigned char  *p;
    const unsigned char  *end;
    unsigned              depth;      /* levels in path[] */
    fg_json_level_t       path[FG_JSON_MAX_DEPTH];

    fg_json_value_pt      handler;
    void                 *data;

    const char           *error;      /* what is wrong, or NULL */
    size_t                line;       /* where, 1-based */
    size_t                column;
};


/*
 * Scans text; returns 0 when it is one valid JSON value (surrounded by
 * whitespace at most), else -1 with j->error, j->line, j->column set.
 * The handler may be NULL: the text is only checked.
 */
int fg_json_scan(fg_json_t *j, const unsigned char *text, size_t len,
    fg_json_value_pt handler, void *data);

/*
 * Scans one JSON value at the start of text (whitespace before it allowed)
 * and sets *used to the bytes it took; what follows is not looked at.
 */
int fg_json_scan_value(fg_json_t *j, const unsigned char *text, size_t len,
    size_t *used, fg_json_value_pt handler, void *data);

/* whether level i of the current path is the key of len bytes */
static inline int
fg_json_key_n(fg_json_t *j, unsigned i, const char *key, size_t len)
{
    const unsigned char  *k;

    if (i >= j->depth || j->path[i].key_len != len
        || (k = j->path[i].key) == NULL)
    {
        return 0;
    }

    while (len--) {
        if (k[len] != (unsigned char) key[len]) {
            return 0;
        }
    }

    return 1;
}

/* the same for a string literal, its length known at compile time */
#define fg_json_key_is(j, i, lit)                                             \
    fg_json_key_n(j, i, lit, sizeof(lit) - 1)


#endif /* _FG_JSON_H_INCLUDED_ */
