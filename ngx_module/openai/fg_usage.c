
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
    int64_t                      cache_read;  /* Anthropic's, apart */
    int64_t                      cache_write;
    int64_t                      cached;      /* OpenAI's, of usage_in */
} fg_usage_scan_t;


/* a count beyond it is no count of tokens (4 x it fits 32 bits) */
#define FG_USAGE_MAX  (UINT32_MAX / 4)


static void fg_usage_scan_init(fg_usage_scan_t *rs);
static void fg_usage_counts_init(fg_usage_scan_t *rs);
static void fg_usage_take(fg_usage_t *u, fg_usage_scan_t *rs);
static void fg_usage_members(fg_json_t *j, fg_json_value_t *v, void *data);
static void fg_usage_response(fg_json_t *j, fg_json_value_t *v, void *data);
static int fg_usage_text(fg_json_t *j, fg_json_value_t *v);


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

    fg_usage_scan_init(&rs);

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

    if (q != last) {
        return -1;
    }

    fg_usage_take(u, &rs);

    return (u->in_set || u->out_set) ? 0 : -1;
}


static void
fg_usage_scan_init(fg_usage_scan_t *rs)
{
    memset(rs, 0, sizeof(fg_usage_scan_t));
    fg_usage_counts_init(rs);
}


/* no count read yet */

static void
fg_usage_counts_init(fg_usage_scan_t *rs)
{
    rs->usage_in = -1;
    rs->usage_out = -1;
    rs->cache_read = -1;
    rs->cache_write = -1;
    rs->cached = -1;
}


/*
 * The counts read, into u: each that is known and no larger than
 * FG_USAGE_MAX.  The input is all of it: Anthropic counts the prompt
 * cache's reads and writes apart from its input_tokens, OpenAI's
 * prompt_tokens hold the cached ones.
 */

static void
fg_usage_take(fg_usage_t *u, fg_usage_scan_t *rs)
{
    int64_t  in, cached;

    in = rs->usage_in;

    if (in >= 0 && in <= FG_USAGE_MAX && rs->cache_read <= FG_USAGE_MAX
        && rs->cache_write <= FG_USAGE_MAX)
    {
        in += (rs->cache_read > 0 ? rs->cache_read : 0)
              + (rs->cache_write > 0 ? rs->cache_write : 0);

        if (in <= FG_USAGE_MAX) {
            u->in = (uint32_t) in;
            u->in_set = 1;
        }
    }

    if (rs->usage_out >= 0 && rs->usage_out <= FG_USAGE_MAX) {
        u->out = (uint32_t) rs->usage_out;
        u->out_set = 1;
    }

    cached = (rs->cached >= 0) ? rs->cached : rs->cache_read;

    if (cached >= 0 && cached <= FG_USAGE_MAX) {
        u->cached = (uint32_t) cached;
        u->cached_set = 1;

        if (u->in_set && u->cached > u->in) {
            u->cached = u->in;
        }
    }

    u->found = u->in_set && u->out_set;
}


/*
 * A value in a usage object whose members' keys are at level i of the
 * path: the chat's prompt_tokens and completion_tokens, the Responses and
 * Messages APIs' input_tokens and output_tokens, Anthropic's prompt cache
 * (cache_read_input_tokens, cache_creation_input_tokens), and the cached
 * tokens of OpenAI's details (prompt_tokens_details.cached_tokens,
 * input_tokens_details.cached_tokens).  out: whether an output count here
 * is one to take (Anthropic's message_start says the output so far).
 */

static void
fg_usage_member(fg_usage_scan_t *rs, fg_json_t *j, unsigned i,
    fg_json_value_t *v, int out)
{
    if (v->type != FG_JSON_NUMBER || !v->integer || v->overflow
        || v->value < 0)
    {
        return;
    }

    if (j->depth == i + 2) {
        if (fg_json_key_is(j, i + 1, "cached_tokens")
            && (fg_json_key_is(j, i, "prompt_tokens_details")
                || fg_json_key_is(j, i, "input_tokens_details")))
        {
            rs->cached = v->value;
        }

        return;
    }

    if (j->depth != i + 1) {
        return;
    }

    if (fg_json_key_is(j, i, "prompt_tokens")
        || fg_json_key_is(j, i, "input_tokens"))
    {
        rs->usage_in = v->value;

    } else if (out && (fg_json_key_is(j, i, "completion_tokens")
                       || fg_json_key_is(j, i, "output_tokens")))
    {
        rs->usage_out = v->value;

    } else if (fg_json_key_is(j, i, "cache_read_input_tokens")) {
        rs->cache_read = v->value;

    } else if (fg_json_key_is(j, i, "cache_creation_input_tokens")) {
        rs->cache_write = v->value;
    }
}


/* the members of a usage object */

static void
fg_usage_members(fg_json_t *j, fg_json_value_t *v, void *data)
{
    fg_usage_scan_t *rs = data;

    fg_usage_member(rs, j, 0, v, 1);
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

    fg_usage_scan_init(&rs);

    if (fg_json_scan(&j, p, len, fg_usage_response, &rs) != 0) {
        return 0;
    }

    fg_usage_take(u, &rs);

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
 * arguments), and the usage.  The Responses API's (/v1/responses) and
 * Anthropic's Messages API's text is read by fg_usage_text; their usage is
 * a Response's or a Message's (usage), or in their streams' events: a
 * Response's last event holds it (response.usage), a Message's first its
 * input (message.usage, of message_start) and its message_delta its
 * output (usage, the total so far).
 */

static void
fg_usage_response(fg_json_t *j, fg_json_value_t *v, void *data)
{
    fg_usage_scan_t *rs = data;

    size_t    n;
    unsigned  d;

    d = j->depth;

    /* a usage object starts: the last one is the usage, as at the end */
    if (v->type == FG_JSON_OBJECT
        && ((d == 1 && fg_json_key_is(j, 0, "usage"))
            || (d == 2 && fg_json_key_is(j, 1, "usage")
                && (fg_json_key_is(j, 0, "response")
                    || fg_json_key_is(j, 0, "message")))))
    {
        fg_usage_counts_init(rs);
        return;
    }

    if (d >= 2 && fg_json_key_is(j, 0, "usage")) {
        fg_usage_member(rs, j, 1, v, 1);
        return;
    }

    if (d >= 3 && fg_json_key_is(j, 1, "usage")) {

        if (fg_json_key_is(j, 0, "response")) {
            fg_usage_member(rs, j, 2, v, 1);

        } else if (fg_json_key_is(j, 0, "message")) {
            fg_usage_member(rs, j, 2, v, 0);
        }

        return;
    }

    if (fg_usage_text(j, v)) {
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


/*
 * Text of the Responses API: a stream's delta event (its delta), a
 * Response's output[i].content[j].text or .refusal.  Of Anthropic's
 * Messages API: a content_block_delta's delta.text, .thinking or
 * .partial_json (a tool's input), a Message's content[i].text or .thinking.
 */

static int
fg_usage_text(fg_json_t *j, fg_json_value_t *v)
{
    unsigned  d;

    if (v->type != FG_JSON_STRING) {
        return 0;
    }

    d = j->depth;

    switch (d) {

    case 1:
        return fg_json_key_is(j, 0, "delta");

    case 2:
        return fg_json_key_is(j, 0, "delta")
               && (fg_json_key_is(j, 1, "text")
                   || fg_json_key_is(j, 1, "thinking")
                   || fg_json_key_is(j, 1, "partial_json"));

    case 3:
        return fg_json_key_is(j, 0, "content") && j->path[1].key == NULL
               && (fg_json_key_is(j, 2, "text")
                   || fg_json_key_is(j, 2, "thinking"));

    case 5:
        return fg_json_key_is(j, 0, "output")
               && fg_json_key_is(j, 2, "content")
               && (fg_json_key_is(j, 4, "text")
                   || fg_json_key_is(j, 4, "refusal"));

    default:
        return 0;
    }
}
