
/*
 * fairgate: tests of the Responses API's layer (POST /v1/responses): the
 * body parsed into the chat's messages and the fields said back, every
 * refusal naming its parameter; the Response object and its stream of
 * named events written, parsed back with jansson, numbered without a gap
 * across calls, within the bound for the worst text, and unchanged when
 * the buffer is too small.
 */


#include <stdint.h>

#include <jansson.h>

#include "fg_tap.h"
#include "fg_test_oai.h"
#include "fg_openai_request.h"
#include "fg_openai_response.h"


#define N(a)  (sizeof(a) / sizeof((a)[0]))

/* a diagnostic after a failed ok(): ok(...) || why(...) */
#define why(...)  (diag(__VA_ARGS__), 0)

#define RESP  FG_OAI_RESPONSES
#define M     "'model':'m',"


static char  out[1 << 20];


static fg_oai_request_t *
parse(const char *text, fg_oai_error_t *err)
{
    return fg_test_oai_parse(RESP, text, err);
}


static int
msg_is(const fg_oai_request_t *r, size_t i, fg_oai_role_e role,
    const char *text)
{
    return i < r->n_messages && r->messages[i].role == role
           && r->messages[i].content.len == strlen(text)
           && strcmp(r->messages[i].content.data, text) == 0;
}


static void
test_parse(void)
{
    fg_oai_error_t     err;
    fg_oai_request_t  *r;

    r = parse("{" M "'input':'Hi','instructions':'Be brief.',"
              "'max_output_tokens':7,'temperature':0.5,'top_p':0.9,"
              "'store':false,'user':'u'}", &err);
    ok(r != NULL, "string input with instructions") || why(err.message);
    if (r == NULL) {
        return;
    }

    ok(r->kind == RESP && r->n_messages == 2
       && msg_is(r, 0, FG_OAI_SYSTEM, "Be brief.")
       && msg_is(r, 1, FG_OAI_USER, "Hi"),
       "the instructions a system message first, the input a user's");
    ok(r->max_tokens == 7 && r->has_max_tokens,
       "max_output_tokens is the chat's max_tokens");
    ok(r->temperature == 0.5f && r->top_p == 0.9f && !r->stream,
       "sampling as in chat");
    ok(r->responses != NULL && r->responses->parallel_tool_calls
       && !r->responses->tool_choice_none && !r->responses->truncation_auto
       && strcmp(r->responses->instructions.data, "Be brief.") == 0,
       "the defaults said back");
    fg_oai_request_free(r);

    r = parse("{" M "'input':[{'role':'developer','content':'D'},"
              "{'type':'message','role':'user','content':["
              "{'type':'input_text','text':'a'},"
              "{'type':'input_text','text':'b'}]},"
              "{'role':'assistant','id':'msg_1','status':'completed',"
              "'content':[{'type':'output_text','text':'c',"
              "'annotations':[],'logprobs':[]}]},"
              "{'role':'system','content':'S'}],"
              "'metadata':{'k':'v','x':'y'},'tool_choice':'none',"
              "'tools':[],'parallel_tool_calls':false,"
              "'truncation':'auto','reasoning':{'effort':null},"
              "'text':{'format':{'type':'text'}},'include':[],"
              "'stream':true,'seed':3,'stop':'x','top_k':2}", &err);
    ok(r != NULL, "items of every role, harmless fields")
        || why(err.message);
    if (r == NULL) {
        return;
    }

    ok(r->n_messages == 4 && msg_is(r, 0, FG_OAI_DEVELOPER, "D")
       && msg_is(r, 1, FG_OAI_USER, "a\nb")
       && msg_is(r, 2, FG_OAI_ASSISTANT, "c")
       && msg_is(r, 3, FG_OAI_SYSTEM, "S"),
       "the items as messages, text parts joined with a newline");
    ok(r->responses->n_metadata == 2
       && strcmp(r->responses->metadata[0].data, "k") == 0
       && strcmp(r->responses->metadata[1].data, "v") == 0
       && strcmp(r->responses->metadata[3].data, "y") == 0,
       "metadata kept in pairs");
    ok(r->responses->tool_choice_none && !r->responses->parallel_tool_calls
       && r->responses->truncation_auto && r->responses->instructions.data
          == NULL,
       "tool_choice, parallel_tool_calls, truncation kept");
    ok(r->stream && r->has_seed && r->seed == 3 && r->n_stop == 1
       && r->top_k == 2, "stream and the chat's extensions");
    fg_oai_request_free(r);
}


typedef struct {
    const char      *body;
    const char      *param;
    const char      *code;
} bad_t;


static void
test_refusals(void)
{
    size_t             i;
    fg_oai_error_t     err;
    fg_oai_request_t  *r;

    static const bad_t  bad[] = {
        { "{'input':'Hi'}", "model", "missing_required_parameter" },
        { "{" M "'instructions':'x'}", "input",
          "missing_required_parameter" },
        { "{" M "'input':3}", "input", "invalid_type" },
        { "{" M "'input':[]}", "input", "empty_array" },
        { "{" M "'input':[3]}", "input[0]", "invalid_type" },
        { "{" M "'input':[{'role':'user'}]}", "input[0].content",
          "missing_required_parameter" },
        { "{" M "'input':[{'content':'x'}]}", "input[0].role",
          "missing_required_parameter" },
        { "{" M "'input':[{'role':'tool','content':'x'}]}",
          "input[0].role", "invalid_value" },
        { "{" M "'input':[{'role':'user','content':'x','name':'n'}]}",
          "input[0].name", "unknown_parameter" },
        { "{" M "'input':[{'role':'user','content':[{'type':'input_image',"
          "'image_url':'u'}]}]}", "input[0].content[0].type",
          "unsupported_value" },
        { "{" M "'input':[{'role':'user','content':[{'type':'input_file',"
          "'file_id':'f'}]}]}", "input[0].content[0].type",
          "unsupported_value" },
        { "{" M "'input':[{'role':'user','content':[{'type':'input_text',"
          "'text':'a','x':1}]}]}", "input[0].content[0].x",
          "unknown_parameter" },
        { "{" M "'input':[{'role':'user','content':[{'type':'input_text'"
          "}]}]}", "input[0].content[0].text",
          "missing_required_parameter" },
        { "{" M "'input':[{'type':'item_reference','id':'msg_1'}]}",
          "input[0]", "unsupported_value" },
        { "{" M "'input':[{'type':'function_call','call_id':'c',"
          "'name':'f','arguments':'{}'}]}", "input", "invalid_value" },
        { "{" M "'input':[{'type':'function_call_output','call_id':'c',"
          "'output':'x'}]}", "input", "invalid_value" },
        { "{" M "'input':[{'type':'reasoning','summary':[]}]}", "input[0]",
          "unsupported_value" },
        { "{" M "'input':'x','previous_response_id':'resp_1'}",
          "previous_response_id", "unsupported_parameter" },
        { "{" M "'input':'x','conversation':'c'}", "conversation",
          "unsupported_parameter" },
        { "{" M "'input':'x','prompt':{'id':'p'}}", "prompt",
          "unsupported_parameter" },
        { "{" M "'input':'x','text':{'format':{'type':'xml'}}}",
          "text.format.type", "unsupported_value" },
        { "{" M "'input':'x','text':{'format':{'type':'json_schema',"
          "'name':'n','schema':{'type':'string','format':'ipv4'}}}}",
          "text.format.schema", "invalid_json_schema" },
        { "{" M "'input':'x','text':{'verbosity':'low'}}", "text.verbosity",
          "unsupported_parameter" },
        { "{" M "'input':'x','tools':[{'type':'web_search'}]}",
          "tools[0].type", "unsupported_value" },
        { "{" M "'input':'x','tools':[{'type':'function','name':'f'},"
          "{'type':'file_search','vector_store_ids':[]}]}",
          "tools[1].type", "unsupported_value" },
        { "{" M "'input':'x','tools':[{'type':'function','name':'f',"
          "'function':{}}]}", "tools[0].function", "unknown_parameter" },
        { "{" M "'input':'x','tools':[{'type':'function','name':'a b'}]}",
          "tools[0].name", "invalid_value" },
        { "{" M "'input':'x','tool_choice':'required'}", "tool_choice",
          "invalid_value" },
        { "{" M "'input':'x','tools':[{'type':'function','name':'f'}],"
          "'tool_choice':{'type':'function','name':'g'}}", "tool_choice",
          "invalid_value" },
        { "{" M "'input':'x','tools':[{'type':'function','name':'f'}],"
          "'tool_choice':{'type':'web_search'}}", "tool_choice.type",
          "unsupported_value" },
        { "{" M "'input':'x','reasoning':{'effort':'low'}}",
          "reasoning.effort", "unsupported_parameter" },
        { "{" M "'input':'x','reasoning':{'summary':'auto'}}",
          "reasoning.summary", "unsupported_parameter" },
        { "{" M "'input':'x','include':['reasoning.encrypted_content']}",
          "include[0]", "unsupported_value" },
        { "{" M "'input':'x','truncation':'some'}", "truncation",
          "invalid_value" },
        { "{" M "'input':'x','background':true}", "background",
          "unsupported_value" },
        { "{" M "'input':'x','top_logprobs':3}", "top_logprobs",
          "unsupported_value" },
        { "{" M "'input':'x','max_output_tokens':0}", "max_output_tokens",
          "integer_below_min_value" },
        { "{" M "'input':'x','metadata':{'k':1}}", "metadata.k",
          "invalid_type" },
        { "{" M "'input':'x','messages':[]}", "messages",
          "unsupported_parameter" },
        { "{" M "'input':'x','max_tokens':3}", "max_tokens",
          "unsupported_parameter" },
        { "{" M "'input':'x','n':1}", "n", "unknown_parameter" },
        { "{" M "'input':'x','instructions':3}", "instructions",
          "invalid_type" },
    };

    for (i = 0; i < N(bad); i++) {
        r = parse(bad[i].body, &err);

        ok(r == NULL && err.status == 400
           && strcmp(err.param, bad[i].param) == 0
           && err.code != NULL && strcmp(err.code, bad[i].code) == 0
           && err.message[0] != '\0',
           "refused: %s: %s %s", bad[i].body, bad[i].param, bad[i].code)
            || why("got %d %s %s: %s", err.status, err.param,
                    err.code ? err.code : "null", err.message);

        fg_oai_request_free(r);
    }

    r = parse("{" M "'input':'x','previous_response_id':'r'}", &err);
    ok(r == NULL && strstr(err.message, "does not store") != NULL,
       "previous_response_id: nothing is stored, it says");
    r = parse("{" M "'input':[{'type':'item_reference','id':'m'}]}", &err);
    ok(r == NULL && strstr(err.message, "store: false") != NULL,
       "an item reference: it says how to send the content instead");
}


/* the events of a stream: "event: NAME\ndata: JSON\n\n", the data's type
 * NAME; the number of events, -1 when one is malformed */
static int
events(const char *s, size_t len, json_t **ev, int max)
{
    int           n;
    const char   *end, *nl, *name, *data;
    json_error_t  e;

    end = s + len;

    for (n = 0; s < end; n++) {
        if (n == max || end - s < 8 || strncmp(s, "event: ", 7) != 0) {
            return -1;
        }

        name = s + 7;
        nl = memchr(name, '\n', end - name);

        if (nl == NULL || end - nl < 7 || strncmp(nl, "\ndata: ", 7) != 0) {
            return -1;
        }

        data = nl + 7;
        s = memchr(data, '\n', end - data);

        if (s == NULL || s + 1 >= end || s[1] != '\n') {
            return -1;
        }

        ev[n] = json_loadb(data, s - data, JSON_REJECT_DUPLICATES, &e);

        if (ev[n] == NULL
            || !json_is_string(json_object_get(ev[n], "type"))
            || strncmp(json_string_value(json_object_get(ev[n], "type")),
                       name, nl - name) != 0)
        {
            return -1;
        }

        s += 2;
    }

    return n;
}


static const char *
type_of(json_t *ev)
{
    return json_string_value(json_object_get(ev, "type"));
}


static json_int_t
seq_of(json_t *ev)
{
    return json_integer_value(json_object_get(ev, "sequence_number"));
}


/* the whole Response, parsed back */
static void
test_body(const fg_oai_request_t *q, const fg_oai_usage_t *u)
{
    size_t          len;
    json_t         *j, *o;
    fg_oai_resp_t   r;

    ok(fg_oai_resp_init(&r, RESP, "resp_ABC", "m\"x", 3, NULL, 1700, 0) == 0
       && fg_oai_rsp_init(&r, q) == 0, "init");

    len = fg_oai_resp_json(&r, "a\"b", 3, FG_OAI_FINISH_LENGTH, u, out,
                           sizeof(out));
    j = json_loadb(out, len, JSON_REJECT_DUPLICATES, NULL);
    o = json_object_get(json_array_get(json_object_get(j, "output"), 0),
                        "content");
    ok(j != NULL && strcmp(json_string_value(json_object_get(j, "id")),
                           "resp_ABC") == 0
       && strcmp(json_string_value(json_object_get(j, "status")),
                 "incomplete") == 0
       && strcmp(json_string_value(json_object_get(j, "model")), "m\"x")
          == 0
       && strcmp(json_string_value(json_object_get(j, "instructions")),
                 "Say \"hi\"\n") == 0
       && json_integer_value(json_object_get(j, "max_output_tokens")) == 3
       && strcmp(json_string_value(json_object_get(
                 json_object_get(j, "metadata"), "a\"")), "b") == 0
       && strcmp(json_string_value(json_object_get(json_array_get(o, 0),
                                                   "text")), "a\"b") == 0,
       "the whole Response: id, status, echo, text") || why("%s", out);
    o = json_object_get(j, "usage");
    ok(json_integer_value(json_object_get(o, "input_tokens")) == 5
       && json_integer_value(json_object_get(o, "output_tokens")) == 3
       && json_integer_value(json_object_get(o, "total_tokens")) == 8
       && json_integer_value(json_object_get(json_object_get(o,
              "input_tokens_details"), "cached_tokens")) == 2,
       "usage in the Responses API's names");
    json_decref(j);
}


/* a stream's events: opened, a delta, finished; failed */
static void
test_stream(const fg_oai_request_t *q, const fg_oai_usage_t *u)
{
    int              i, n, m;
    size_t           len, need;
    json_t          *ev[32];
    fg_oai_resp_t    r;
    fg_oai_error_t   err;

    static const char  worst[] = "\x01\"\\\n\xff";

    /* measured, then a buffer one byte short: nothing out, nothing
     * counted */
    ok(fg_oai_resp_init(&r, RESP, "resp_ABC", "m", 1, NULL, 1700, 0) == 0
       && fg_oai_rsp_init(&r, q) == 0, "init again");
    need = fg_oai_rsp_sse_delta(&r, worst, 5, out, 0);
    ok(need > 0 && r.seq == 0 && !r.started
       && fg_oai_rsp_sse_delta(&r, worst, 5, out, need - 1) == need
       && r.seq == 0 && !r.started, "too small: the state is unchanged");

    len = fg_oai_rsp_sse_delta(&r, worst, 5, out, sizeof(out));
    ok(len == need && len <= fg_oai_rsp_bound(&r, 5, 1),
       "the opening and a delta of the worst text, within the bound");
    n = events(out, len, ev, 32);
    ok(n == 5 && strcmp(type_of(ev[0]), "response.created") == 0
       && strcmp(type_of(ev[1]), "response.in_progress") == 0
       && strcmp(type_of(ev[2]), "response.output_item.added") == 0
       && strcmp(type_of(ev[3]), "response.content_part.added") == 0
       && strcmp(type_of(ev[4]), "response.output_text.delta") == 0,
       "the opening events, then the delta") || why("%s", out);

    for (i = 0; i < n; i++) {
        json_decref(ev[i]);
    }

    len = fg_oai_rsp_sse_delta(&r, "yz", 2, out + len, sizeof(out) - len)
          + len;
    ok(fg_oai_rsp_sse_delta(&r, "", 0, out, 1) == 0,
       "no text, nothing to send");
    m = fg_oai_rsp_sse_finish(&r, "\x01\"\\\n\xffyz", 7,
                              FG_OAI_FINISH_STOP, u, out + len,
                              sizeof(out) - len);
    ok((size_t) m <= fg_oai_rsp_bound(&r, 7, 1), "the finish within "
       "the bound");
    n = events(out, len + m, ev, 32);
    ok(n == 10 && strcmp(type_of(ev[6]), "response.output_text.done") == 0
       && strcmp(type_of(ev[8]), "response.output_item.done") == 0
       && strcmp(type_of(ev[9]), "response.completed") == 0,
       "the finish events, completed") || why("%d: %s", n, out);

    for (i = 0; i < n; i++) {
        if (seq_of(ev[i]) != i) {
            break;
        }
    }

    ok(i == n, "sequence numbers 0 .. %d without a gap", n - 1);
    ok(strcmp(json_string_value(json_object_get(ev[6], "text")),
              "\x01\"\\\n\xef\xbf\xbdyz") == 0,
       "the whole text, escaped, a bad byte as U+FFFD");

    for (i = 0; i < n; i++) {
        json_decref(ev[i]);
    }

    fg_oai_error_set(&err, 502, "engine_lost", NULL, "lost");
    len = fg_oai_rsp_sse_error(&r, &err, out, sizeof(out));
    n = events(out, len, ev, 32);
    ok(n == 2 && strcmp(type_of(ev[0]), "error") == 0
       && seq_of(ev[0]) == 10 && strcmp(type_of(ev[1]), "response.failed")
       == 0 && strcmp(json_string_value(json_object_get(json_object_get(
              json_object_get(ev[1], "response"), "error"), "code")),
              "engine_lost") == 0,
       "a failure: error, then response.failed with the error")
        || why("%s", out);

    for (i = 0; i < n; i++) {
        json_decref(ev[i]);
    }
}


static void
test_writers(void)
{
    fg_oai_usage_t     u;
    fg_oai_error_t     err;
    fg_oai_request_t  *q;

    q = parse("{" M "'input':'Hi','instructions':'Say \\'hi\\'\\n',"
              "'max_output_tokens':3,'metadata':{'a\\'':'b'}}", &err);
    ok(q != NULL, "a request to answer") || why(err.message);
    if (q == NULL) {
        return;
    }

    u.prompt_tokens = 5;
    u.completion_tokens = 3;
    u.cached_tokens = 2;

    test_body(q, &u);
    test_stream(q, &u);

    fg_oai_make_id(err.message, 64, RESP, 1, 2);
    ok(strncmp(err.message, "resp_", 5) == 0 && strlen(err.message) == 27,
       "resp_ ids");

    fg_oai_request_free(q);
}

int
main(void)
{
    test_parse();
    test_refusals();
    test_writers();

    return done_testing();
}
