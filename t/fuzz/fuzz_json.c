
/*
 * fairgate: libFuzzer target of the gateway's JSON scanner (fg_json),
 * differential against jansson: the scanner faces every client's body, so
 * beyond not crashing it must accept exactly the JSON a real parser does.
 *
 *     make fuzz-json-run FUZZ_TIME=300
 */


#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fg_json.h"


typedef struct {
    const unsigned char  *start;
    const unsigned char  *end;
} fuzz_bounds_t;


static void
fuzz_json_value(fg_json_t *j, fg_json_value_t *v, void *data)
{
    fuzz_bounds_t  *b = data;

    (void) j;

    /* every value points into the text, and decodes no longer than it */
    if (v->raw < b->start || v->raw + v->raw_len > b->end) {
        abort();
    }

    if (v->type == FG_JSON_STRING && v->len > v->raw_len) {
        abort();
    }
}


static int
fuzz_json_depth(const uint8_t *data, size_t size)
{
    int     depth, max, in_string;
    size_t  i;

    depth = 0;
    max = 0;
    in_string = 0;

    for (i = 0; i < size; i++) {
        if (in_string) {
            if (data[i] == '\\') {
                i++;

            } else if (data[i] == '"') {
                in_string = 0;
            }

            continue;
        }

        switch (data[i]) {
        case '"':
            in_string = 1;
            break;
        case '[': case '{':
            if (++depth > max) {
                max = depth;
            }
            break;
        case ']': case '}':
            depth--;
            break;
        }
    }

    return max;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int            ours;
    json_t        *root;
    fg_json_t      j;
    json_error_t   error;
    fuzz_bounds_t  b;

    b.start = data;
    b.end = data + size;

    ours = fg_json_scan(&j, data, size, fuzz_json_value, &b);

    /* jansson's buffer reader stops at a NUL byte: no verdict to compare */
    if (memchr(data, '\0', size) != NULL) {
        return 0;
    }

    root = json_loadb((const char *) data, size,
                      JSON_DECODE_ANY | JSON_ALLOW_NUL, &error);

    if (root != NULL) {
        json_decref(root);

        /* valid JSON within our nesting limit must be accepted */
        if (ours != 0 && fuzz_json_depth(data, size) < FG_JSON_MAX_DEPTH) {
            abort();
        }

    } else if (ours == 0) {
        /*
         * jansson refuses numbers it cannot hold and "\u0000" in keys;
         * RFC 8259 allows both
         */
        if (strstr(error.text, "too big") == NULL
            && strstr(error.text, "overflow") == NULL
            && strstr(error.text, "NUL byte in object key") == NULL)
        {
            abort();
        }
    }

    return 0;
}
