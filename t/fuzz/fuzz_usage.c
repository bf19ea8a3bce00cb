
/*
 * fairgate: libFuzzer target of the reading of an upstream's response for
 * its usage (fg_usage.c, drop-in mode): the body read as a whole JSON
 * completion, and line by line as an SSE stream.  Beyond not crashing,
 * the usage read from the body's end must be the usage the full scan
 * reads, whenever the body is JSON.
 *
 *     make fuzz-usage-run FUZZ_TIME=300
 */


#include <stdlib.h>
#include <string.h>

#include "fg_json.h"
#include "fg_usage.h"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static void
fuzz_usage_nothing(fg_json_t *j, fg_json_value_t *v, void *data)
{
    (void) j;
    (void) v;
    (void) data;
}


/* the body as a stream: each line (LF ended, or the last) is an event */

static void
fuzz_usage_stream(const uint8_t *data, size_t size)
{
    fg_usage_t      u;
    const uint8_t  *p, *nl, *last;

    memset(&u, 0, sizeof(fg_usage_t));

    last = data + size;

    for (p = data; p < last; p = nl + 1) {
        nl = memchr(p, '\n', last - p);

        if (nl == NULL) {
            nl = last;
        }

        (void) fg_usage_sse_line(&u, p, nl);
    }

    if (u.found && (u.in > UINT32_MAX / 4 || u.out > UINT32_MAX / 4)) {
        abort();
    }
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fg_json_t   j;
    fg_usage_t  end, all;

    memset(&end, 0, sizeof(fg_usage_t));
    memset(&all, 0, sizeof(fg_usage_t));

    if (fg_usage_at_end(&end, data, data + size) == 0
        && fg_json_scan(&j, data, size, fuzz_usage_nothing, NULL) == 0)
    {
        /* the shortcut and the scan agree on a JSON body */
        (void) fg_usage_scan(&all, data, size, 1);

        if (!end.found || !all.found || end.in != all.in
            || end.out != all.out)
        {
            abort();
        }
    }

    (void) fg_usage_scan(&all, data, size, 1);

    fuzz_usage_stream(data, size);

    return 0;
}
