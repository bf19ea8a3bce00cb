
/*
 * fairgate: an upstream response's token usage and output estimate, read
 * from a JSON body or from a stream's "data:" lines (drop-in mode).  Pure
 * C over fg_json.c: the nginx filter (ngx_http_fairgate_filter.c) buffers
 * the bytes, this reads them; t/fuzz/fuzz_usage.c fuzzes it.
 */

#include <string.h>

#include "fg_json.h"
#include "fg_usage.h"


/* what the scan of a response (or of an event) gathers */
typedef struct {
    size_t                       bytes;      /* text of the current choice */
    uint32_t                     tokens;     /* of the choices before */
    size_t                       total;      /* text of all choices */
    int64_t                      usage_in;
    int64_t                      usage_out;
} fg_usage_scan_t;


static void fg_usage_members(fg_json_t *j, fg_json_value_t *v, void *data);
static void fg_usage_response(fg_json_t *j, fg_json_value_t *v, void *data);


#define fg_usage_space(c)                                                     \
    ((c) == ' ' || (c) == '\t' || (c) == '\r' || (c) == '\n')


uint32_t
fg_usage_sse_line(fg_usage_t *u, const unsigned char *p,
    const unsigned char *last)
{
    if (last > p && last[-1] == '\r') {
        last--;
    }

    if (last - p < 5 || memcmp(p, "data:", 5) != 0) {
        return 0;
    }

    p += 5;

    if (p < last && *p == ' ') {
        p++;
    }

    if (last - p == 6 && memcmp(p, "[DONE]", 6) == 0) {
        return 0;
    }

    return fg_usage_scan(u, p, last - p, 0);
}


/*
 * Completion tokens: at most the request's max tokens times its choices,
 * when it set them (no server generates more, hidden reasoning included);
 * else at most the bytes of the response (each token of text is a byte at
 * least).  Prompt tokens: at most the bytes of the request's body, plus
 * what a server adds (its chat template, a default system prompt, images
 * given by URL, a conversation it keeps).
 */

int
fg_usage_cap(fg_usage_t *u, const fg_usage_seen_t *seen, uint64_t *max_in,
    uint64_t *max_out)
{
    *max_in = (seen->body_bytes > UINT32_MAX) ? UINT32_MAX
              : seen->body_bytes + FG_USAGE_ADDED;
    *max_out = seen->max_out_set ? seen->max_out : seen->bytes_out;

    if (u->in <= *max_in && u->out <= *max_out) {
        return 0;
    }

    if (u->in > *max_in) {
        u->in = (uint32_t) *max_in;
    }

    if (u->out > *max_out) {
        u->out = (uint32_t) *max_out;
    }

    return 1;
}


/*
 * OpenAI-compatible servers put a completion's usage last in its object:
 * reading it from there skips the scan of the rest, which costs more than
 * anything else the gateway does with a request.  Only when the body ends
 * with '"usage": {...}}' is it taken; else the whole body is scanned.
 */

int
fg_usage_at_end(fg_usage_t *u, const unsigned char *p,
    const unsigned char *last)
{
    size_t                 used;
    fg_json_t              j;
    fg_usage_scan_t        rs;
    const unsigned char   *q, *b, *stop;

    /* the last "usage" key, within the last 1 KB */

    if (last - p < 8) {
        return -1;
    }

    stop = (last - p > 1024) ? last - 1024 : p;

    for (q = last - 7; q >= stop; q--) {
        if (q[1] == 'u' && q[0] == '"' && q[6] == '"' && q[2] == 's'
            && q[3] == 'a' && q[4] == 'g' && q[5] == 'e')
        {
            break;
        }
    }

    if (q < stop) {
        return -1;
    }

    /* its opening quote is no escaped one: an even run of backslashes */

    for (b = q; b > p && b[-1] == '\\'; b--) { /* void */ }

    if ((q - b) % 2) {
        return -1;
    }

    for (q += 7; q < last && fg_usage_space(*q); q++) { /* void */ }

    if (q == last || *q != ':') {
        return -1;
    }

    q++;

    memset(&rs, 0, sizeof(fg_usage_scan_t));
    rs.usage_in = -1;
    rs.usage_out = -1;

    if (fg_json_scan_value(&j, q, last - q, &used, fg_usage_members, &rs)
        != 0)
    {
        return -1;
    }

    /* and it is the last member of the root: one '}' and the end follow */

    for (q += used; q < last && fg_usage_space(*q); q++) { /* void */ }

    if (q == last || *q != '}') {
        return -1;
    }

    for (q++; q < last && fg_usage_space(*q); q++) { /* void */ }

    if (q != last || rs.usage_in < 0 || rs.usage_out < 0
        || rs.usage_in > UINT32_MAX / 4 || rs.usage_out > UINT32_MAX / 4)
    {
        return -1;
    }

    u->found = 1;
    u->in = (uint32_t) rs.usage_in;
    u->out = (uint32_t) rs.usage_out;

    return 0;
}


/*
 * A member of a usage object, its key at level i of the path: the chat's
 * prompt_tokens and completion_tokens, or the Responses API's
 * input_tokens and output_tokens.
 */

static void
fg_usage_member(fg_usage_scan_t *rs, fg_json_t *j, unsigned i,
    fg_json_value_t *v)
{
    if (v->type != FG_JSON_NUMBER || !v->integer || v->overflow
        || v->value < 0)
    {
        return;
    }

    if (fg_json_key_is(j, i, "prompt_tokens")
        || fg_json_key_is(j, i, "input_tokens"))
    {
        rs->usage_in = v->value;

    } else if (fg_json_key_is(j, i, "completion_tokens")
               || fg_json_key_is(j, i, "output_tokens"))
    {
        rs->usage_out = v->value;
    }
}


/* the members of a usage object */

static void
fg_usage_members(fg_json_t *j, fg_json_value_t *v, void *data)
{
    fg_usage_scan_t *rs = data;

    if (j->depth == 1) {
        fg_usage_member(rs, j, 0, v);
    }
}


/*
 * Scans a completion or a stream's event: returns its output tokens as
 * estimated from its text (whole: bytes / 4 rounded up over all choices;
 * else an event's count, bytes / 4 and at least 1 a choice with text),
 * and takes the usage when there is one.
 */

uint32_t
fg_usage_scan(fg_usage_t *u, const unsigned char *p, size_t len, int whole)
{
    size_t            n;
    fg_json_t         j;
    fg_usage_scan_t   rs;

    memset(&rs, 0, sizeof(fg_usage_scan_t));
    rs.usage_in = -1;
    rs.usage_out = -1;

    if (fg_json_scan(&j, p, len, fg_usage_response, &rs) != 0) {
        return 0;
    }

    if (rs.usage_in >= 0 && rs.usage_out >= 0
        && rs.usage_in <= UINT32_MAX / 4 && rs.usage_out <= UINT32_MAX / 4)
    {
        u->found = 1;
        u->in = (uint32_t) rs.usage_in;
        u->out = (uint32_t) rs.usage_out;
    }

    if (whole) {
        return (uint32_t) ((rs.total + 3) / 4);
    }

    if (rs.bytes) {
        n = rs.bytes / 4;
        rs.tokens += n ? n : 1;
    }

    return rs.tokens;
}


/*
 * Called for each value of a response: the generated text of each choice
 * (text; message or delta content, reasoning_content, refusal, tool call
 * arguments), and usage.prompt_tokens and usage.completion_tokens.  Of the
 * Responses API (/v1/responses): the text of a Response's output
 * (output[i].content[j].text or .refusal) or of a stream's event (its
 * delta), and the usage of a Response, or of its stream's last event
 * (response.usage).
 */

static void
fg_usage_response(fg_json_t *j, fg_json_value_t *v, void *data)
{
    fg_usage_scan_t *rs = data;

    size_t    n;
    unsigned  d;

    d = j->depth;

    if (d == 2 && fg_json_key_is(j, 0, "usage")) {
        fg_usage_member(rs, j, 1, v);
        return;
    }

    if (d == 3 && fg_json_key_is(j, 0, "response")
        && fg_json_key_is(j, 1, "usage"))
    {
        fg_usage_member(rs, j, 2, v);
        return;
    }

    if (v->type == FG_JSON_STRING
        && ((d == 1 && fg_json_key_is(j, 0, "delta"))
            || (d == 5 && fg_json_key_is(j, 0, "output")
                && fg_json_key_is(j, 2, "content")
                && (fg_json_key_is(j, 4, "text")
                    || fg_json_key_is(j, 4, "refusal")))))
    {
        rs->bytes += v->len;
        rs->total += v->len;
        return;
    }

    if (d < 2 || !fg_json_key_is(j, 0, "choices") || j->path[1].key) {
        return;
    }

    if (d == 2) {
        /* a choice starts: the one before is counted */
        if (v->type == FG_JSON_OBJECT && rs->bytes) {
            n = rs->bytes / 4;
            rs->tokens += n ? n : 1;
            rs->bytes = 0;
        }

        return;
    }

    if (v->type != FG_JSON_STRING) {
        return;
    }

    if ((d == 3 && fg_json_key_is(j, 2, "text"))
        || (d == 4
            && (fg_json_key_is(j, 2, "message")
                || fg_json_key_is(j, 2, "delta"))
            && (fg_json_key_is(j, 3, "content")
                || fg_json_key_is(j, 3, "reasoning_content")
                || fg_json_key_is(j, 3, "refusal")))
        || (d == 7 && fg_json_key_is(j, 3, "tool_calls")
            && fg_json_key_is(j, 6, "arguments")))
    {
        rs->bytes += v->len;
        rs->total += v->len;
    }
}


