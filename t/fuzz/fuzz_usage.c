
/*
 * fairgate: libFuzzer target of the reading of an upstream's response for
 * its usage (fg_usage.c, drop-in mode): the body read as a whole JSON
 * completion, and line by line as an SSE stream.  Beyond not crashing,
 * the usage read from the body's end must be the usage the full scan
 * reads, whenever the body is JSON (each count: input, output, cached,
 * known or not alike); and whatever usage the answer
 * reports, once capped to what the gateway saw (fg_usage_cap, with
 * bounds taken from the input's first bytes) it is within the caps, never
 * more than reported, and capped only when it was over.
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


/* the caps, with what was seen made of the input's first bytes */

static void
fuzz_usage_cap(const fg_usage_t *reported, const uint8_t *data, size_t size)
{
    int              capped;
    uint64_t         max_in, max_out;
    fg_usage_t       u;
    fg_usage_seen_t  seen;

    memset(&seen, 0, sizeof(fg_usage_seen_t));

    seen.body_bytes = size;
    seen.bytes_out = size > 0 ? (uint64_t) data[0] * size : 0;
    seen.max_out_set = size > 1 && (data[1] & 1);
    seen.max_out = size > 2 ? (uint32_t) data[2] << (data[1] & 31) : 0;

    u = *reported;
    capped = fg_usage_cap(&u, &seen, &max_in, &max_out);

    if (u.in > max_in || u.out > max_out || u.in > reported->in
        || u.out > reported->out
        || capped != (reported->in > max_in || reported->out > max_out)
        || (!capped && (u.in != reported->in || u.out != reported->out)))
    {
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
        /* the shortcut and the scan agree on a JSON body: each count the
         * last usage object holds, none it does not */
        (void) fg_usage_scan(&all, data, size, 1);

        if (end.found != all.found || end.in_set != all.in_set
            || end.out_set != all.out_set
            || end.cached_set != all.cached_set
            || (end.in_set && end.in != all.in)
            || (end.out_set && end.out != all.out)
            || (end.cached_set && end.cached != all.cached)
            || (end.cached_set && end.in_set && end.cached > end.in))
        {
            abort();
        }
    }

    (void) fg_usage_scan(&all, data, size, 1);

    if (all.found) {
        fuzz_usage_cap(&all, data, size);
    }

    fuzz_usage_stream(data, size);

    return 0;
}
