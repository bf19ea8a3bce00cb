
/*
 * fairgate: an item of the body of POST /v1/embeddings, as OpenAI writes
 * it.  The list around the items, the model and the usage are the
 * glue's (ngx_module/local/ngx_http_fairgate_embed.c), which also
 * base64-encodes the vectors (nginx's encoder) when asked.
 */

#include <stdio.h>
#include <string.h>

#include "fg_openai_response.h"


size_t
fg_oai_embed_item(size_t index, const float *v, uint32_t n, const char *b64,
    size_t b64_len, char *out, size_t size)
{
    int       w;
    char     *p, *end;
    uint32_t  k;

    if (size < FG_OAI_EMBED_ITEM_MAX(n, b64_len)) {
        return 0;
    }

    p = out;
    end = out + size;

    p += snprintf(p, end - p, "{\"object\":\"embedding\",\"index\":%zu,"
                  "\"embedding\":", index);

    if (b64) {
        *p++ = '"';
        memcpy(p, b64, b64_len);
        p += b64_len;
        *p++ = '"';

    } else {
        *p++ = '[';

        for (k = 0; k < n; k++) {
            w = snprintf(p, end - p, k ? ",%.9g" : "%.9g", (double) v[k]);
            p += w;
        }

        *p++ = ']';
    }

    *p++ = '}';

    return p - out;
}
