
/*
 * fairgate: tests of tool calling in the Responses API: flat function
 * tools given to the chat's parser nested (as the template gets them)
 * and said back as written, tool_choice and parallel_tool_calls, the
 * input's function_call and function_call_output items as an
 * assistant's tool calls and tool messages; the Response with calls as
 * function_call items, whole and streamed (the events in order, their
 * output_index and sequence numbers without a gap).
 */


#include <stdint.h>

#include <jansson.h>

#include "fg_tap.h"
#include "fg_test_oai.h"
#include "fg_openai_tools.h"


/* a diagnostic after a failed ok(): ok(...) || why(...) */
#define why(...)  (diag(__VA_ARGS__), 0)

#define M     "'model':'m',"
#define TOOLS "'tools':[{'type':'function','name':'get_weather'," \
              "'description':'d','parameters':{'type':'object'}," \
              "'strict':true},{'type':'function','name':'f'," \
              "'description':null}],"


static char  out[1 << 18];


static fg_oai_request_t *
parse(const char *text, fg_oai_error_t *err)
{
    return fg_test_oai_parse(FG_OAI_RESPONSES, text, err);
}


static const char *
str_at(json_t *j, const char *k)
{
    const char  *s;

    s = json_string_value(json_object_get(j, k));

    return s ? s : "";
}


static void
test_tools(void)
{
    json_t            *t;
    fg_oai_error_t     err;
    fg_oai_request_t  *r;

    r = parse("{" M TOOLS "'input':'x','tool_choice':{'type':'function',"
              "'name':'f'},'parallel_tool_calls':false}", &err);
    ok(r != NULL, "flat function tools, a named choice") || why(err.message);
    if (r == NULL) {
        return;
    }

    t = json_loadb(r->tools.data, r->tools.len, 0, NULL);
    ok(r->n_tools == 2 && strcmp(r->tool_names[0].data, "get_weather") == 0
       && strcmp(r->tool_names[1].data, "f") == 0
       && strcmp(str_at(json_array_get(t, 0), "type"), "function") == 0
       && json_object_get(json_array_get(t, 0), "name") == NULL
       && strcmp(str_at(json_object_get(json_array_get(t, 0), "function"),
                        "name"), "get_weather") == 0
       && json_is_true(json_object_get(json_object_get(json_array_get(t, 0),
                                                       "function"),
                                       "strict"))
       && json_object_get(json_object_get(json_array_get(t, 1), "function"),
                          "description") == NULL,
       "the template gets them nested, as a chat's") || why(r->tools.data);
    json_decref(t);

    ok(r->tool_choice == FG_OAI_TOOLS_NAMED
       && strcmp(r->tool_choice_name.data, "f") == 0
       && !r->parallel_tool_calls && !r->responses->parallel_tool_calls
       && r->responses->tools.data != NULL
       && strstr(r->responses->tools.data, "\"name\":\"get_weather\"")
       && !strstr(r->responses->tools.data, "\"function\":{"),
       "the choice, parallel_tool_calls; the tools kept as written");
    fg_oai_request_free(r);

    r = parse("{" M TOOLS "'input':'x','tool_choice':'required'}", &err);
    ok(r != NULL && r->tool_choice == FG_OAI_TOOLS_REQUIRED
       && r->parallel_tool_calls, "required") || why(err.message);
    fg_oai_request_free(r);

    r = parse("{" M TOOLS "'input':'x','tool_choice':{'name':'f'}}", &err);
    ok(r == NULL && err.status == 400
       && strcmp(err.param, "tool_choice.type") == 0,
       "a choice without its type: 400 naming it") || why(err.message);
    fg_oai_request_free(r);

    r = parse("{" M TOOLS "'input':'x','tool_choice':{'type':'function',"
              "'name':'a b'}}", &err);
    ok(r == NULL && err.status == 400
       && strcmp(err.param, "tool_choice.name") == 0,
       "a choice's bad name: 400 on tool_choice.name")
        || why("%s %s", err.param, err.message);
    fg_oai_request_free(r);

    r = parse("{" M "'input':'x','tool_choice':'auto','tools':[]}", &err);
    ok(r != NULL && r->n_tools == 0, "auto without tools: none called")
        || why(err.message);
    fg_oai_request_free(r);
}


static int
call_is(const fg_oai_message_t *m, size_t j, const char *id,
    const char *name, const char *args)
{
    return j < m->n_tool_calls && strcmp(m->tool_calls[j].id.data, id) == 0
           && strcmp(m->tool_calls[j].name.data, name) == 0
           && strcmp(m->tool_calls[j].arguments.data, args) == 0;
}


static void
test_input(void)
{
    fg_oai_error_t           err;
    fg_oai_request_t        *r;
    const fg_oai_message_t  *m;

    r = parse("{" M TOOLS "'instructions':'I','input':["
              "{'role':'user','content':'Paris?'},"
              "{'type':'message','role':'assistant','content':'Looking.'},"
              "{'type':'function_call','id':'fc_1','call_id':'c1',"
              "'name':'get_weather','arguments':'{}','status':'completed'},"
              "{'type':'function_call','call_id':'c2','name':'f',"
              "'arguments':'{\\'a\\':1}'},"
              "{'type':'function_call_output','call_id':'c1','output':'s'},"
              "{'type':'function_call_output','call_id':'c2','output':'t'},"
              "{'role':'user','content':'Thanks'},"
              "{'type':'function_call','call_id':'c3','name':'f',"
              "'arguments':'{}'},"
              "{'type':'function_call_output','call_id':'c3','output':["
              "{'type':'input_text','text':'u'},{'type':'input_text',"
              "'text':'v'}]}]}", &err);
    ok(r != NULL, "a conversation with calls and their outputs")
        || why(err.message);
    if (r == NULL) {
        return;
    }

    m = r->messages;
    ok(r->n_messages == 8 && m[0].role == FG_OAI_SYSTEM
       && m[1].role == FG_OAI_USER && m[1].n_tool_calls == 0,
       "8 messages: the instructions, the user's");
    ok(r->n_messages == 8 && m[2].role == FG_OAI_ASSISTANT
       && strcmp(m[2].content.data, "Looking.") == 0 && !m[2].null_content
       && m[2].n_tool_calls == 2
       && call_is(&m[2], 0, "c1", "get_weather", "{}")
       && call_is(&m[2], 1, "c2", "f", "{\"a\":1}"),
       "the calls after an assistant's text are its tool_calls");
    ok(r->n_messages == 8 && m[3].role == FG_OAI_TOOL
       && strcmp(m[3].tool_call_id.data, "c1") == 0
       && strcmp(m[3].content.data, "s") == 0 && m[4].role == FG_OAI_TOOL
       && strcmp(m[4].tool_call_id.data, "c2") == 0
       && m[5].role == FG_OAI_USER,
       "each output a tool message answering its call");
    ok(r->n_messages == 8 && m[6].role == FG_OAI_ASSISTANT
       && m[6].null_content && m[6].content.len == 0
       && m[6].n_tool_calls == 1 && call_is(&m[6], 0, "c3", "f", "{}")
       && m[7].role == FG_OAI_TOOL && strcmp(m[7].content.data, "uv") == 0,
       "calls alone: an assistant message of null content; an output of "
       "text parts");
    fg_oai_request_free(r);

    r = parse("{" M "'input':[{'type':'function_call','call_id':'c1',"
              "'name':'f','arguments':'{}'},{'type':'function_call_output',"
              "'call_id':'c1','output':'s'},{'type':'function_call',"
              "'call_id':'c2','name':'f'}]}", &err);
    ok(r == NULL && err.status == 400
       && strcmp(err.param, "input[2].arguments") == 0,
       "a call without arguments: 400 naming them")
        || why("%s %s", err.param, err.message);
    fg_oai_request_free(r);

    r = parse("{" M "'input':[{'type':'function_call','call_id':'c1',"
              "'name':'f','arguments':'{}'},{'role':'user','content':'x'},"
              "{'type':'function_call_output','call_id':'c1',"
              "'output':'s'}]}", &err);
    ok(r == NULL && err.status == 400 && strcmp(err.param, "input") == 0,
       "an output not right after its call: 400 on input")
        || why("%s %s", err.param, err.message);
    fg_oai_request_free(r);

    r = parse("{" M "'input':[{'type':'function_call','call_id':'c1',"
              "'name':'f','arguments':'{}'},{'type':'function_call_output',"
              "'call_id':'c1','output':3}]}", &err);
    ok(r == NULL && err.status == 400,
       "an output that is not a string: 400") || why(err.message);
    fg_oai_request_free(r);
}


/* the events in s; their count, -1 when one is not "event: T\ndata: {
 * "type": T, ..}" */
static int
events(const char *s, size_t len, json_t **ev, int max)
{
    int          n;
    size_t       tl;
    const char  *end, *t, *d, *e;

    end = s + len;

    for (n = 0; s < end && n < max; n++) {
        if (strncmp(s, "event: ", 7) != 0) {
            return -1;
        }

        t = s + 7;
        d = strstr(t, "\ndata: ");
        e = d ? strstr(d, "\n\n") : NULL;

        if (e == NULL || e >= end) {
            return -1;
        }

        tl = d - t;
        ev[n] = json_loadb(d + 7, e - d - 7, 0, NULL);

        if (ev[n] == NULL || strlen(str_at(ev[n], "type")) != tl
            || strncmp(str_at(ev[n], "type"), t, tl) != 0)
        {
            return -1;
        }

        s = e + 2;
    }

    return s == end ? n : -1;
}


static int
seq_ok(json_t **ev, int n)
{
    int  i;

    for (i = 0; i < n; i++) {
        if (json_integer_value(json_object_get(ev[i], "sequence_number"))
            != i)
        {
            return 0;
        }
    }

    return 1;
}


static fg_tool_call_t    calls[2] = {
    { "get_weather", "{\"city\":\"Paris\"}", 16 },
    { "f", "{}", 2 }
};

static char  ids[2][FG_OAI_CALL_ID_LEN] = {
    "call_AAAAAAAAAAAAAAAAAAAAAAAA", "call_BBBBBBBBBBBBBBBBBBBBBBBB"
};


static void
test_body(const fg_oai_request_t *q)
{
    char              *s;
    size_t             len;
    json_t            *j, *o;
    fg_oai_resp_t      r;
    fg_oai_usage_t     u = { 5, 3, 0 };
    fg_tool_parsed_t   p = { 2, calls, 2 };

    ok(fg_oai_resp_init(&r, FG_OAI_RESPONSES, "resp_ABC", "m", 1, NULL,
                        1700, 0) == 0
       && fg_oai_rsp_init(&r, q) == 0, "init");

    s = fg_oai_rsp_tools_json(&r, "ab", 2, &p, ids, &u, &len);
    j = s ? json_loadb(s, len, JSON_REJECT_DUPLICATES, NULL) : NULL;
    o = json_object_get(j, "output");
    ok(j != NULL && len > 0 && s[len - 1] == '\n'
       && strcmp(str_at(j, "status"), "completed") == 0
       && json_array_size(o) == 3
       && strcmp(str_at(json_array_get(o, 0), "type"), "message") == 0,
       "a Response: completed, the text a message first") || why("%s", s);
    o = json_array_get(o, 1);
    ok(strcmp(str_at(o, "type"), "function_call") == 0
       && strcmp(str_at(o, "id"), "fc_AAAAAAAAAAAAAAAAAAAAAAAA") == 0
       && strcmp(str_at(o, "call_id"), ids[0]) == 0
       && strcmp(str_at(o, "name"), "get_weather") == 0
       && strcmp(str_at(o, "arguments"), "{\"city\":\"Paris\"}") == 0
       && strcmp(str_at(o, "status"), "completed") == 0,
       "then each call: fc_ id, call_id, name, arguments");
    ok(json_integer_value(json_object_get(json_object_get(j, "usage"),
                                          "output_tokens")) == 3
       && strcmp(str_at(json_array_get(json_object_get(j, "tools"), 0),
                        "name"), "get_weather") == 0
       && strcmp(str_at(j, "tool_choice"), "required") == 0,
       "usage; tools and tool_choice said back");
    json_decref(j);
    free(s);

    s = fg_oai_rsp_tools_json(&r, "", 0, &p, ids, &u, &len);
    j = s ? json_loadb(s, len, 0, NULL) : NULL;
    o = json_object_get(j, "output");
    ok(json_array_size(o) == 2
       && strcmp(str_at(json_array_get(o, 0), "type"), "function_call")
          == 0, "no text: the calls alone");
    json_decref(j);
    free(s);
}


/* call k's four events from ev[i], output item idx */
static int
call_events(json_t **ev, int i, int idx, size_t k)
{
    json_t  *item;

    item = json_object_get(ev[i], "item");

    return strcmp(str_at(ev[i], "type"), "response.output_item.added") == 0
           && json_integer_value(json_object_get(ev[i], "output_index"))
              == idx
           && strcmp(str_at(item, "arguments"), "") == 0
           && strcmp(str_at(item, "status"), "in_progress") == 0
           && strcmp(str_at(ev[i + 1], "type"),
                     "response.function_call_arguments.delta") == 0
           && strcmp(str_at(ev[i + 1], "item_id"), str_at(item, "id")) == 0
           && strcmp(str_at(ev[i + 1], "delta"), calls[k].arguments) == 0
           && strcmp(str_at(ev[i + 2], "type"),
                     "response.function_call_arguments.done") == 0
           && strcmp(str_at(ev[i + 2], "name"), calls[k].name) == 0
           && strcmp(str_at(ev[i + 2], "arguments"), calls[k].arguments)
              == 0
           && json_integer_value(json_object_get(ev[i + 2], "output_index"))
              == idx
           && strcmp(str_at(ev[i + 3], "type"),
                     "response.output_item.done") == 0
           && strcmp(str_at(json_object_get(ev[i + 3], "item"), "call_id"),
                     ids[k]) == 0;
}


static void
test_stream(const fg_oai_request_t *q)
{
    int                i, n;
    char              *s;
    size_t             len, m;
    json_t            *ev[40];
    fg_oai_resp_t      r;
    fg_oai_usage_t     u = { 5, 3, 0 };
    fg_tool_parsed_t   p = { 0, calls, 2 };

    /* calls alone: the opening has no message, nor has the Response */
    ok(fg_oai_resp_init(&r, FG_OAI_RESPONSES, "resp_ABC", "m", 1, NULL,
                        1700, 0) == 0
       && fg_oai_rsp_init(&r, q) == 0, "init a stream");
    len = fg_oai_rsp_sse_delta(&r, "", 0, out, sizeof(out));
    s = fg_oai_rsp_sse_tools(&r, "", 0, &p, ids, &u, &m);
    ok(s != NULL && len + m < sizeof(out), "the calls' events");
    if (s == NULL) {
        return;
    }

    memcpy(out + len, s, m);
    free(s);
    n = events(out, len + m, ev, 40);
    ok(n == 11 && seq_ok(ev, n)
       && strcmp(str_at(ev[0], "type"), "response.created") == 0
       && strcmp(str_at(ev[1], "type"), "response.in_progress") == 0
       && call_events(ev, 2, 0, 0) && call_events(ev, 6, 1, 1)
       && strcmp(str_at(ev[10], "type"), "response.completed") == 0
       && json_array_size(json_object_get(json_object_get(ev[10],
                                                          "response"),
                                          "output")) == 2,
       "opened without a message; each call's events at its index, "
       "numbered without a gap; completed") || why("%d: %s", n, out);

    for (i = 0; i < n; i++) {
        json_decref(ev[i]);
    }

    /* text first: its message closed, the calls after it */
    p.n_calls = 1;
    fg_oai_resp_init(&r, FG_OAI_RESPONSES, "resp_ABC", "m", 1, NULL, 1700,
                     0);
    fg_oai_rsp_init(&r, q);
    len = fg_oai_rsp_sse_delta(&r, "", 0, out, sizeof(out));
    len += fg_oai_rsp_sse_delta(&r, "ab", 2, out + len, sizeof(out) - len);
    s = fg_oai_rsp_sse_tools(&r, "ab", 2, &p, ids, &u, &m);
    if (s == NULL) {
        ok(0, "the events after text");
        return;
    }

    memcpy(out + len, s, m);
    free(s);
    n = events(out, len + m, ev, 40);
    ok(n == 13 && seq_ok(ev, n)
       && strcmp(str_at(ev[2], "type"), "response.output_item.added") == 0
       && strcmp(str_at(ev[4], "type"), "response.output_text.delta") == 0
       && strcmp(str_at(ev[5], "type"), "response.output_text.done") == 0
       && strcmp(str_at(ev[5], "text"), "ab") == 0
       && strcmp(str_at(ev[7], "type"), "response.output_item.done") == 0
       && call_events(ev, 8, 1, 0)
       && strcmp(str_at(ev[12], "type"), "response.completed") == 0,
       "text: its message added with it and closed, then the call at "
       "index 1") || why("%d: %s", n, out);

    for (i = 0; i < n; i++) {
        json_decref(ev[i]);
    }

    /* no call, no text: the message waited for, added at the end */
    fg_oai_resp_init(&r, FG_OAI_RESPONSES, "resp_ABC", "m", 1, NULL, 1700,
                     0);
    fg_oai_rsp_init(&r, q);
    len = fg_oai_rsp_sse_delta(&r, "", 0, out, sizeof(out));
    len += fg_oai_rsp_sse_finish(&r, "", 0, FG_OAI_FINISH_STOP, &u,
                                 out + len, sizeof(out) - len);
    n = events(out, len, ev, 40);
    ok(n == 8 && seq_ok(ev, n)
       && strcmp(str_at(ev[2], "type"), "response.output_item.added") == 0
       && strcmp(str_at(ev[3], "type"), "response.content_part.added") == 0
       && strcmp(str_at(ev[6], "type"), "response.output_item.done") == 0
       && strcmp(str_at(ev[7], "type"), "response.completed") == 0,
       "an answer of nothing: its empty message added and closed at the "
       "end") || why("%d: %s", n, out);

    for (i = 0; i < n; i++) {
        json_decref(ev[i]);
    }
}


int
main(void)
{
    fg_oai_error_t     err;
    fg_oai_request_t  *q;

    test_tools();
    test_input();

    q = parse("{" M TOOLS "'input':'x','tool_choice':'required'}", &err);
    ok(q != NULL, "a request to answer") || why(err.message);

    if (q != NULL) {
        test_body(q);
        test_stream(q);
        fg_oai_request_free(q);
    }

    return done_testing();
}
