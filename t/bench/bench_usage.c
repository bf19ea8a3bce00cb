
/*
 * fairgate: what reading an upstream's usage costs a drop-in request, for
 * each API (fg_usage.c): a stream's event of chat, of the Responses API and
 * of Anthropic's Messages API, counted as it passes; and a large
 * embeddings body (1.6 MB, as a batch of vectors makes), its usage read
 * from its last kilobyte against the whole body scanned.  Medians of 9
 * rounds, nanoseconds an operation (docs/dropin.md, "The APIs metered").
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_bench.h"
#include "fg_usage.h"


#define ROUNDS  9


typedef struct {
    const char  *name;
    const char  *line;
} bench_event_t;


static const bench_event_t  events[] = {
    { "chat chunk",
      "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\","
      "\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":"
      "{\"content\":\" the\"},\"finish_reason\":null}]}" },
    { "responses delta",
      "data: {\"type\":\"response.output_text.delta\",\"sequence_number\":"
      "12,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,"
      "\"delta\":\" the\",\"logprobs\":[]}" },
    { "messages delta",
      "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":"
      "{\"type\":\"text_delta\",\"text\":\" the\"}}" },
    { "messages start",
      "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\","
      "\"type\":\"message\",\"role\":\"assistant\",\"content\":[],"
      "\"model\":\"m\",\"stop_reason\":null,\"stop_sequence\":null,"
      "\"usage\":{\"input_tokens\":25,\"cache_creation_input_tokens\":0,"
      "\"cache_read_input_tokens\":10,\"output_tokens\":1}}}" }
};


static double
bench_event(const char *line, int n)
{
    int                   i, k;
    double                t0, v[ROUNDS];
    uint32_t              sum;
    fg_usage_t            u;
    const unsigned char  *p, *last;

    p = (const unsigned char *) line;
    last = p + strlen(line);
    sum = 0;

    for (k = 0; k < ROUNDS; k++) {
        t0 = fg_bench_now();

        for (i = 0; i < n; i++) {
            memset(&u, 0, sizeof(fg_usage_t));
            sum += fg_usage_sse_line(&u, p, last) + u.in;
        }

        v[k] = (fg_bench_now() - t0) / n * 1e9;
    }

    qsort(v, ROUNDS, sizeof(double), fg_bench_cmp);

    return sum ? fg_bench_median(v, ROUNDS) : -1;
}


/* an embeddings body of k vectors of d numbers, its usage last */
static char *
bench_embeddings(int k, int d, size_t *len)
{
    int     i, j;
    char   *b, *p;

    b = malloc((size_t) k * d * 8 + 256);
    if (b == NULL) {
        return NULL;
    }

    p = b + sprintf(b, "{\"object\":\"list\",\"data\":[");

    for (i = 0; i < k; i++) {
        p += sprintf(p, "%s{\"object\":\"embedding\",\"index\":%d,"
                     "\"embedding\":[", i ? "," : "", i);

        for (j = 0; j < d; j++) {
            p += sprintf(p, "%s-0.0123", j ? "," : "");
        }

        p += sprintf(p, "]}");
    }

    p += sprintf(p, "],\"model\":\"m\",\"usage\":{\"prompt_tokens\":%d,"
                 "\"total_tokens\":%d}}", k * 8, k * 8);

    *len = p - b;

    return b;
}


static double
bench_body(const char *body, size_t len, int tail, int n)
{
    int                   i, k;
    double                t0, v[ROUNDS];
    fg_usage_t            u;
    const unsigned char  *p, *last;

    p = (const unsigned char *) body;
    last = p + len;

    for (k = 0; k < ROUNDS; k++) {
        t0 = fg_bench_now();

        for (i = 0; i < n; i++) {
            memset(&u, 0, sizeof(fg_usage_t));

            if (tail) {
                (void) fg_usage_at_end(&u, last - 1024, last);

            } else {
                (void) fg_usage_scan(&u, p, len, 1);
            }

            if (!u.in_set) {
                return -1;
            }
        }

        v[k] = (fg_bench_now() - t0) / n * 1e9;
    }

    qsort(v, ROUNDS, sizeof(double), fg_bench_cmp);

    return fg_bench_median(v, ROUNDS);
}


int
main(void)
{
    char    *body;
    size_t   i, len;

    printf("%-34s %12s\n", "usage read", "ns (median)");

    for (i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
        printf("%-34s %12.1f\n", events[i].name,
               bench_event(events[i].line, 200000));
    }

    body = bench_embeddings(64, 3072, &len);
    if (body == NULL) {
        return 1;
    }

    printf("embeddings %zu B, last 1 KB %9s %12.1f\n", len, "",
           bench_body(body, len, 1, 200000));
    printf("embeddings %zu B, whole body %8s %12.1f\n", len, "",
           bench_body(body, len, 0, 20));

    free(body);

    return 0;
}
