
/*
 * fairgate: libFuzzer target of the keys file's parser (fg_keys.c): any
 * bytes as the file.  Beyond not crashing: each entry within the input
 * and on a line of it, in order, its user and app well-formed names (strict
 * UTF-8, no blank, control, quote or backslash), its
 * weight and priority in (0, 1e6], its digest the line's first word; an
 * error names a line of the file and a problem.
 *
 *     make fuzz-keys-run FUZZ_TIME=300
 */


#include <stdlib.h>
#include <string.h>

#include "fg_keys.h"
#include "fg_utf8.h"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


typedef struct {
    const char     *buf;
    size_t          size;
    unsigned long   lines;
    unsigned long   last;       /* the last entry's line */
    size_t          n;
} fuzz_keys_t;


static int
fuzz_keys_hex(char c)
{
    return (c >= '0' && c <= '9') ? c - '0'
           : (c >= 'a' && c <= 'f') ? c - 'a' + 10
           : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
}


static void
fuzz_keys_name(fuzz_keys_t *f, const char *p, size_t len)
{
    size_t    i, k;
    uint32_t  cp;

    if (len == 0 || len > FG_KEYS_NAME_LEN
        || p < f->buf || p + len > f->buf + f->size)
    {
        abort();
    }

    for (i = 0; i < len; i++) {
        if ((unsigned char) p[i] < 0x21 || p[i] == 0x7f || p[i] == '"'
            || p[i] == '\\' || p[i] == '#')
        {
            abort();
        }
    }

    /* a name the status page and the logs can write as it is */

    for (i = 0; i < len; i += k) {
        k = fg_utf8_decode((const uint8_t *) p + i, len - i, &cp);

        if (k == 0) {
            abort();
        }
    }
}


static int
fuzz_keys_entry(void *data, const fg_keys_entry_t *e)
{
    fuzz_keys_t  *f = data;

    const char  *d;
    size_t       i;

    if (e->line == 0 || e->line > f->lines || e->line <= f->last) {
        abort();
    }

    f->last = e->line;
    f->n++;

    fuzz_keys_name(f, e->user, e->user_len);

    if (e->app != NULL || e->app_len) {
        fuzz_keys_name(f, e->app, e->app_len);

        if (e->app_len == 1 && e->app[0] == '-') {
            abort();
        }
    }

    if (!(e->weight > 0 && e->weight <= 1e6)
        || !(e->priority > 0 && e->priority <= 1e6)
        || e->rpm > INT64_MAX || e->tpm > INT64_MAX)
    {
        abort();
    }

    /* the digest: the 64 hex digits before the blanks before the user */

    d = e->user;

    while (d > f->buf && (d[-1] == ' ' || d[-1] == '\t' || d[-1] == '\r'
                          || d[-1] == '\0'))
    {
        d--;
    }

    if (d == e->user || d - f->buf < 64) {
        abort();
    }

    d -= 64;

    for (i = 0; i < 32; i++) {
        if (fuzz_keys_hex(d[2 * i]) * 16 + fuzz_keys_hex(d[2 * i + 1])
            != e->digest[i])
        {
            abort();
        }
    }

    return 0;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int               rc;
    char             *buf;
    size_t            i;
    fuzz_keys_t       f;
    fg_keys_error_t   err;

    buf = malloc(size + 1);
    if (buf == NULL) {
        return 0;
    }

    memcpy(buf, data, size);

    f.buf = buf;
    f.size = size;
    f.lines = 1;
    f.last = 0;
    f.n = 0;

    for (i = 0; i < size; i++) {
        f.lines += (data[i] == '\n');
    }

    rc = fg_keys_parse(buf, size, fuzz_keys_entry, &f, &err);

    /* the glue's array of lines holds size / 66 + 1 entries */

    if (f.n > size / 66 + 1) {
        abort();
    }

    if (rc != 0
        && (rc != -1 || err.line == 0 || err.line > f.lines
            || err.line <= f.last || err.what[0] == '\0'
            || strnlen(err.what, FG_KEYS_ERR_LEN) == FG_KEYS_ERR_LEN
            || err.hint == NULL))
    {
        abort();
    }

    free(buf);

    return 0;
}
