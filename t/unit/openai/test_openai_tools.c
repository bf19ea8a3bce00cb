
/*
 * fairgate: tests of tool calling in the OpenAI layer: the request's
 * tools, tool_choice and tool messages as OpenAI checks them; the model's
 * answers read back as calls, per family (Hermes, Llama 3, Mistral, the
 * JSON forms), whole and streamed in pieces; and the calls written in
 * OpenAI's body and chunks, read back with jansson.
 */


#include <stdint.h>

#include <jansson.h>

#include "fg_tap.h"
#include "fg_test_oai.h"
#include "fg_openai_tools.h"


#define N(a)  (sizeof(a) / sizeof((a)[0]))


static fg_oai_request_t *
parse(const char *text, fg_oai_error_t *err)
{
    return fg_test_oai_parse(FG_OAI_CHAT, text, err);
}


#define M   "'model':'m',"
#define U   "'messages':[{'role':'user','content':'hi'}]"
#define T   "'tools':[{'type':'function','function':{'name':'get_weather'," \
            "'description':'The weather.','parameters':{'type':'object'," \
            "'properties':{'city':{'type':'string'}}},'strict':true}}," \
            "{'type':'function','function':{'name':'time'}}]"
#define CALL(id, args)                                                        \
            "{'id':'" id "','type':'function','function':{'name':"         \
            "'get_weather','arguments':'" args "'}}"


typedef struct {
    const char      *body;
    const char      *param;
    const char      *code;
} bad_t;


static const bad_t  bad[] = {
    { "{" M U ",'tools':{}}", "tools", "invalid_type" },
    { "{" M U ",'tools':[{'type':'custom','function':{'name':'a'}}]}",
      "tools[0].type", "unsupported_value" },
    { "{" M U ",'tools':[{'function':{'name':'a'}}]}", "tools[0].type",
      "missing_required_parameter" },
    { "{" M U ",'tools':[{'type':'function','function':{}}]}",
      "tools[0].function.name", "missing_required_parameter" },
    { "{" M U ",'tools':[{'type':'function','function':{'name':'a b'}}]}",
      "tools[0].function.name", "invalid_value" },
    { "{" M U ",'tools':[{'type':'function','function':{'name':'a',"
      "'parameters':[]}}]}", "tools[0].function.parameters",
      "invalid_type" },
    { "{" M U ",'tools':[{'type':'function','function':{'name':'a',"
      "'strict':'yes'}}]}", "tools[0].function.strict", "invalid_type" },
    { "{" M U ",'tools':[{'type':'function','function':{'name':'a',"
      "'x':1}}]}", "tools[0].function.x", "unknown_parameter" },
    { "{" M U ",'tools':[{'type':'function','function':{'name':'a'}},"
      "{'type':'function','function':{'name':'a'}}]}", "tools",
      "invalid_value" },
    { "{" M U "," T ",'tool_choice':'sometimes'}", "tool_choice",
      "invalid_value" },
    { "{" M U "," T ",'tool_choice':{'type':'function','function':"
      "{'name':'nope'}}}", "tool_choice", "invalid_value" },
    { "{" M U "," T ",'tool_choice':{'type':'function'}}",
      "tool_choice.function.name", "missing_required_parameter" },
    { "{" M U ",'tool_choice':'required'}", "tool_choice", "invalid_value" },
    { "{" M U "," T ",'parallel_tool_calls':'yes'}", "parallel_tool_calls",
      "invalid_type" },
    { "{" M U ",'functions':[{'name':'f'}]}", "functions",
      "unsupported_parameter" },
    { "{" M U ",'function_call':'auto'}", "function_call",
      "unsupported_parameter" },

    /* messages */
    { "{" M "'messages':[{'role':'user','content':'a'},{'role':'tool',"
      "'tool_call_id':'x','content':'1'}]}", "messages[1].role",
      "invalid_value" },
    { "{" M "'messages':[{'role':'user','content':'a'},{'role':'tool',"
      "'content':'1'}]}", "messages[1].tool_call_id",
      "missing_required_parameter" },
    { "{" M "'messages':[{'role':'user','content':'a','tool_calls':["
      CALL("c1", "{}") "]}]}", "messages[0].tool_calls", "invalid_value" },
    { "{" M "'messages':[{'role':'user','content':'a',"
      "'tool_call_id':'c1'}]}", "messages[0].tool_call_id", "invalid_value" },
    { "{" M "'messages':[{'role':'assistant','content':null,'tool_calls':["
      "{'id':'c1','type':'function','function':{'name':'f',"
      "'arguments':{}}}]}]}", "messages[0].tool_calls[0].function.arguments",
      "invalid_type" },
    { "{" M "'messages':[{'role':'assistant','content':null,'tool_calls':["
      "{'id':'c1','type':'function'}]}]}",
      "messages[0].tool_calls[0].function", "invalid_type" },
    { "{" M "'messages':[{'role':'assistant','content':null,'tool_calls':["
      CALL("c1", "{}") "]},{'role':'tool','tool_call_id':'c2',"
      "'content':'1'}]}", "messages", "invalid_value" },
    { "{" M "'messages':[{'role':'assistant','content':null,'tool_calls':["
      CALL("c1", "{}") "," CALL("c2", "{}") "]},{'role':'tool',"
      "'tool_call_id':'c1','content':'1'},{'role':'user','content':'a'}]}",
      "messages", "invalid_value" },
    { "{" M "'messages':[{'role':'function','content':'1'}]}",
      "messages[0].role", "unsupported_value" },
    { "{" M "'messages':[{'role':'assistant','content':'a',"
      "'function_call':{'name':'f'}}]}", "messages[0].function_call",
      "unsupported_parameter" },
};


static void
test_refusals(void)
{
    size_t             i;
    fg_oai_error_t     err;
    fg_oai_request_t  *r;

    for (i = 0; i < N(bad); i++) {
        r = parse(bad[i].body, &err);

        ok(r == NULL, "refused: %s", bad[i].body);
        fg_oai_request_free(r);

        is_int(err.status, 400, "... 400");
        is_str(err.param, bad[i].param, "... param %s", bad[i].param);
        is_str(err.code, bad[i].code, "... code %s (%s)", bad[i].code,
               err.message);
    }
}


static void
test_accepted(void)
{
    json_t            *t;
    fg_oai_error_t     err;
    fg_oai_request_t  *r;

    r = parse("{" M U "," T "}", &err);
    ok(r != NULL, "tools accepted (%s)", err.message);
    if (r == NULL) {
        return;
    }

    is_int(r->n_tools, 2, "two tools");
    is_str(r->tool_names[0].data, "get_weather", "the first's name");
    is_str(r->tool_names[1].data, "time", "the second's name");
    is_int(r->tool_choice, FG_OAI_TOOLS_AUTO, "auto by default");
    ok(r->parallel_tool_calls, "parallel by default");
    ok(fg_oai_request_uses_tools(r) && fg_oai_request_reads_calls(r),
       "it uses tools and reads calls");

    t = json_loadb(r->tools.data, r->tools.len, 0, NULL);
    ok(json_is_array(t) && json_array_size(t) == 2,
       "the tools kept as JSON text");
    is_str(json_string_value(json_object_get(json_object_get(
               json_array_get(t, 0), "function"), "description")),
           "The weather.", "... as the client wrote them");
    ok(json_is_true(json_object_get(json_object_get(json_array_get(t, 0),
                                                    "function"), "strict")),
       "... strict with them");
    json_decref(t);
    fg_oai_request_free(r);

    r = parse("{" M U "," T ",'tool_choice':{'type':'function','function':"
              "{'name':'time'}},'parallel_tool_calls':false}", &err);
    ok(r != NULL, "a named choice accepted (%s)", err.message);
    if (r) {
        is_int(r->tool_choice, FG_OAI_TOOLS_NAMED, "named");
        is_str(r->tool_choice_name.data, "time", "its name");
        ok(!r->parallel_tool_calls, "parallel_tool_calls false");
    }
    fg_oai_request_free(r);

    r = parse("{" M U "," T ",'tool_choice':'none'}", &err);
    ok(r != NULL && r->tool_choice == FG_OAI_TOOLS_NONE
       && !fg_oai_request_reads_calls(r), "none: calls not read");
    fg_oai_request_free(r);

    r = parse("{" M U ",'tools':null,'tool_choice':null,"
              "'parallel_tool_calls':null}", &err);
    ok(r != NULL && r->n_tools == 0 && r->tool_choice == FG_OAI_TOOLS_AUTO
       && r->parallel_tool_calls, "nulls: not given (%s)", err.message);
    fg_oai_request_free(r);

    r = parse("{" M U ",'tool_choice':'none'}", &err);
    ok(r != NULL && !fg_oai_request_uses_tools(r),
       "none without tools: harmless");
    fg_oai_request_free(r);

    r = parse("{" M U "," T ",'tool_choice':'required'}", &err);
    ok(r != NULL && r->tool_choice == FG_OAI_TOOLS_REQUIRED, "required");
    fg_oai_request_free(r);
}


static void
test_history(void)
{
    fg_oai_error_t           err;
    fg_oai_request_t        *r;
    const fg_oai_message_t  *m;

    /* what every client sends after a call: content null, the results */
    r = parse("{" M "'messages':[{'role':'user','content':'Paris?'},"
              "{'role':'assistant','content':null,'tool_calls':["
              CALL("call_1", "{\\'city\\':\\'Paris\\'}") ","
              CALL("call_2", "{}") "],'refusal':null},"
              "{'role':'tool','tool_call_id':'call_2','content':'b'},"
              "{'role':'tool','tool_call_id':'call_1','content':"
              "[{'type':'text','text':'21'}]},"
              "{'role':'assistant','content':'It is 21.'},"
              "{'role':'user','content':'Thanks'}]," T "}", &err);

    ok(r != NULL, "a history of calls and results (%s)", err.message);
    if (r == NULL) {
        return;
    }

    is_int(r->n_messages, 6, "six messages");

    m = &r->messages[1];
    is_int(m->role, FG_OAI_ASSISTANT, "the assistant's");
    ok(m->null_content && m->content.len == 0, "... content null");
    is_int(m->n_tool_calls, 2, "... two calls");
    is_str(m->tool_calls[0].id.data, "call_1", "... the first's id");
    is_str(m->tool_calls[0].name.data, "get_weather", "... its name");
    is_str(m->tool_calls[0].arguments.data, "{\"city\":\"Paris\"}",
           "... its arguments as sent");

    m = &r->messages[3];
    is_int(m->role, FG_OAI_TOOL, "a tool's");
    is_str(m->tool_call_id.data, "call_1", "... its call");
    is_str(m->content.data, "21", "... its text parts");
    is_str(fg_oai_role_name(m->role), "tool", "the role's name");

    fg_oai_request_free(r);

    r = parse("{" M "'messages':[{'role':'user','content':'a'},"
              "{'role':'assistant','content':'Let me see.','tool_calls':["
              CALL("x", "{}") "]},{'role':'tool','tool_call_id':'x',"
              "'content':'1'}]}", &err);
    ok(r != NULL && !r->messages[1].null_content
       && strcmp(r->messages[1].content.data, "Let me see.") == 0,
       "calls with text: both kept (%s)", err.message);
    ok(r != NULL && fg_oai_request_uses_tools(r)
       && !fg_oai_request_reads_calls(r),
       "a history without tools: uses tools, reads no calls");
    fg_oai_request_free(r);
}


static const fg_oai_str_t  names[] = {
    { "get_weather", 11 }, { "time", 4 }
};


typedef struct {
    fg_tool_format_e     fmt;
    const char          *text;
    size_t               n_calls;
    const char          *content;    /* the content's bytes */
    const char          *name0;
    const char          *args0;
    const char          *name1;
} answer_t;


static const answer_t  answers[] = {

    /* Hermes */
    { FG_TOOL_FMT_HERMES, "<tool_call>\n{'name': 'get_weather', "
      "'arguments': {'city': 'Paris'}}\n</tool_call>", 1, "",
      "get_weather", "{'city':'Paris'}", NULL },
    { FG_TOOL_FMT_HERMES, "Let me check.\n\n<tool_call>\n{'name': "
      "'get_weather', 'arguments': {'city': 'Paris'}}\n</tool_call>\n"
      "<tool_call>\n{'name': 'time', 'arguments': {}}\n</tool_call>", 2,
      "Let me check.", "get_weather", "{'city':'Paris'}", "time" },
    { FG_TOOL_FMT_HERMES, "<tool_call>\n{'name': 'time', 'arguments': "
      "'{\\'tz\\': \\'UTC\\'}'}", 1, "", "time", "{'tz':'UTC'}", NULL },
    { FG_TOOL_FMT_HERMES, "<tool_call>\n{'name': 'nope', 'arguments': {}}"
      "\n</tool_call>", 0, NULL, NULL, NULL, NULL },
    { FG_TOOL_FMT_HERMES, "<tool_call>\n{'name': 'time', 'arguments': "
      "</tool_call>", 0, NULL, NULL, NULL, NULL },
    { FG_TOOL_FMT_HERMES, "Once upon a time there was a {cat}.", 0, NULL,
      NULL, NULL, NULL },
    { FG_TOOL_FMT_HERMES, "{'name': 'time', 'arguments': {'tz': 'UTC'}}", 1,
      "", "time", "{'tz':'UTC'}", NULL },

    /* Llama 3 */
    { FG_TOOL_FMT_LLAMA3, "{'name': 'get_weather', 'parameters': "
      "{'city': 'Rome', 'days': 2}}", 1, "", "get_weather",
      "{'city':'Rome','days':2}", NULL },
    { FG_TOOL_FMT_LLAMA3, "<|python_tag|>{'name': 'time', 'parameters': "
      "{}}; {'name': 'get_weather', 'parameters': {'city': 'Oslo'}}", 2,
      "", "time", "{}", "get_weather" },
    { FG_TOOL_FMT_LLAMA3, "The answer: {'name': 'time'}", 0, NULL, NULL,
      NULL, NULL },
    { FG_TOOL_FMT_LLAMA3, "<|python_tag|>brave_search.call(query='x')", 0,
      NULL, NULL, NULL, NULL },

    /* Mistral */
    { FG_TOOL_FMT_MISTRAL, "[TOOL_CALLS] [{'name': 'get_weather', "
      "'arguments': {'city': 'Lyon'}}, {'name': 'time', 'arguments': {}}]",
      2, "", "get_weather", "{'city':'Lyon'}", "time" },
    { FG_TOOL_FMT_MISTRAL, "[TOOL_CALLS][{'name': 'time', 'arguments': "
      "{}, 'id': 'abc123xyz'}]", 1, "", "time", "{}", NULL },
    { FG_TOOL_FMT_MISTRAL, "[TOOL_CALLS] [{'name': 'time'", 0, NULL, NULL,
      NULL, NULL },

    /* the JSON forms, any family */
    { FG_TOOL_FMT_JSON, "```json\n{'name': 'time', 'arguments': {}}\n```", 1,
      "", "time", "{}", NULL },
    { FG_TOOL_FMT_JSON, "{'tool_calls': [{'name': 'time', 'arguments': {}},"
      " {'type': 'function', 'function': {'name': 'get_weather', "
      "'arguments': '{}'}}]}", 2, "", "time", "{}", "get_weather" },
    { FG_TOOL_FMT_JSON, "[{'name': 'time', 'arguments': {}}, 3]", 0, NULL,
      NULL, NULL, NULL },
    { FG_TOOL_FMT_JSON, "{'name': 'time', 'arguments': [1]}", 0, NULL, NULL,
      NULL, NULL },
    { FG_TOOL_FMT_JSON, "[]", 0, NULL, NULL, NULL, NULL },
    { FG_TOOL_FMT_JSON, "", 0, NULL, NULL, NULL, NULL },
};


static char  text[1 << 16], want[1 << 16];


/* a named choice reads its function's calls; parallel false: one */
static void
test_answer_choices(void)
{
    const char        *two;
    fg_oai_error_t     err;
    fg_tool_parsed_t   p;
    fg_oai_request_t  *r;

    two = "[{\"name\": \"time\", \"arguments\": {}}, "
          "{\"name\": \"get_weather\", \"arguments\": {}}]";

    r = parse("{" M U "," T ",'tool_choice':{'type':'function','function':"
              "{'name':'get_weather'}}}", &err);
    ok(r && fg_oai_tools_answer(r, FG_TOOL_FMT_JSON, two, strlen(two), &p)
       == 0 && p.n_calls == 0, "named: another function's call is text");
    fg_tool_parsed_free(&p);
    fg_oai_request_free(r);

    r = parse("{" M U "," T ",'parallel_tool_calls':false}", &err);
    ok(r && fg_oai_tools_answer(r, FG_TOOL_FMT_JSON, two, strlen(two), &p)
       == 0 && p.n_calls == 1 && strcmp(p.calls[0].name, "time") == 0,
       "parallel_tool_calls false: the first call only");
    fg_tool_parsed_free(&p);
    fg_oai_request_free(r);

    r = parse("{" M U "," T "}", &err);
    ok(r && fg_oai_tools_answer(r, FG_TOOL_FMT_JSON, two, strlen(two), &p)
       == 0 && p.n_calls == 2, "auto: both");
    fg_tool_parsed_free(&p);
    fg_oai_request_free(r);
}


static void
test_answers(void)
{
    size_t            i;
    fg_tool_parsed_t  p;

    for (i = 0; i < N(answers); i++) {
        snprintf(text, sizeof(text), "%s", J(answers[i].text));

        ok(fg_tool_parse(answers[i].fmt, text, strlen(text), names,
                         N(names), &p) == 0, "%s: answer %zu",
           fg_tool_format_name(answers[i].fmt), i);

        is_int(p.n_calls, answers[i].n_calls, "... %zu calls",
               answers[i].n_calls);

        if (p.n_calls != answers[i].n_calls || p.n_calls == 0) {
            is_int(p.content_len, strlen(text), "... all of it content");
            fg_tool_parsed_free(&p);
            continue;
        }

        is_int(p.content_len, strlen(answers[i].content), "... content");
        ok(memcmp(text, answers[i].content, p.content_len) == 0,
           "... the text before the calls");
        is_str(p.calls[0].name, answers[i].name0, "... the first's name");
        snprintf(want, sizeof(want), "%s", J(answers[i].args0));
        is_str(p.calls[0].arguments, want, "... its arguments");
        is_int(p.calls[0].arguments_len, strlen(want), "... their length");

        if (answers[i].name1) {
            is_str(p.calls[1].name, answers[i].name1,
                   "... the second's name");
        }

        fg_tool_parsed_free(&p);
    }

    test_answer_choices();

    /* any name when none is given */
    ok(fg_tool_parse(FG_TOOL_FMT_JSON, "{\"name\":\"x\"}", 12, NULL, 0, &p)
       == 0 && p.n_calls == 1 && strcmp(p.calls[0].arguments, "{}") == 0,
       "no names: any call, arguments {} when none");
    fg_tool_parsed_free(&p);
}


static void
test_detect(void)
{
    static const struct {
        const char        *tmpl;
        fg_tool_format_e   fmt;
    } t[] = {
        { "{{- '<tool_call>\\n' }}{{ tool_call | tojson }}",
          FG_TOOL_FMT_HERMES },
        { "<|start_header_id|>ipython<|end_header_id|>",
          FG_TOOL_FMT_LLAMA3 },
        { "{{- \"[TOOL_CALLS] [\" }}", FG_TOOL_FMT_MISTRAL },
        { "<start_of_turn>user", FG_TOOL_FMT_JSON },
    };

    size_t  i;

    for (i = 0; i < N(t); i++) {
        is_int(fg_tool_format_detect(t[i].tmpl, strlen(t[i].tmpl)),
               t[i].fmt, "the template %s: %s", t[i].tmpl,
               fg_tool_format_name(t[i].fmt));
    }

    is_int(fg_tool_format_detect(NULL, 0), FG_TOOL_FMT_JSON,
           "no template: the JSON forms");
    is_str(fg_tool_format_marker(FG_TOOL_FMT_MISTRAL), "[TOOL_CALLS]",
           "Mistral's marker");
    ok(fg_tool_format_marker(FG_TOOL_FMT_JSON) == NULL, "JSON: none");
}


/* text pushed in pieces of size step: what went out, what is held */
static void
stream(fg_tool_format_e fmt, const char *text, size_t step, char *sent,
    char *held)
{
    size_t            i, n, len, out_len, k;
    const char       *out;
    fg_tool_stream_t  s;

    fg_tool_stream_init(&s, fmt);

    len = strlen(text);
    k = 0;

    for (i = 0; i < len; i += n) {
        n = (len - i < step) ? len - i : step;

        if (fg_tool_stream_push(&s, text + i, n, &out, &out_len) != 0) {
            break;
        }

        memcpy(sent + k, out, out_len);
        k += out_len;
    }

    sent[k] = '\0';

    fg_tool_stream_held(&s, &out, &out_len);
    memcpy(held, out, out_len);
    held[out_len] = '\0';

    fg_tool_stream_free(&s);
}


static void
test_stream(void)
{
    char    sent[256], held[256];
    size_t  step;

    static const struct {
        fg_tool_format_e   fmt;
        const char        *text;
        const char        *sent;
    } t[] = {
        { FG_TOOL_FMT_HERMES, "Let me look.\n<tool_call>\n{}\n</tool_call>",
          "Let me look.\n" },
        { FG_TOOL_FMT_HERMES, "  \n{\"name\": \"time\"}", "" },
        { FG_TOOL_FMT_HERMES, "a <tool_ b <tool_call>", "a <tool_ b " },
        { FG_TOOL_FMT_HERMES, "Once upon a time.", "Once upon a time." },
        { FG_TOOL_FMT_MISTRAL, "[TOOL_CALLS] [{}]", "" },
        { FG_TOOL_FMT_LLAMA3, "<|python_tag|>{}", "" },
        { FG_TOOL_FMT_JSON, "```json\n{}\n```", "" },
        { FG_TOOL_FMT_JSON, "`code` here", "`code` here" },
        { FG_TOOL_FMT_JSON, "Text {\"name\": 1}", "Text {\"name\": 1}" },
    };

    size_t  i;

    for (i = 0; i < N(t); i++) {
        for (step = 1; step <= 7; step += 3) {
            stream(t[i].fmt, t[i].text, step, sent, held);

            is_str(sent, t[i].sent, "text %zu in pieces of %zu: what "
                   "is sent", i, step);
            is_str(held, t[i].text + strlen(t[i].sent),
                   "... the rest held");
        }
    }
}


static json_t *
load(const char *s, size_t n)
{
    return json_loadb(s, n, 0, NULL);
}


static void
test_writers(void)
{
    char              ids[2][FG_OAI_CALL_ID_LEN], *s, *line, *next;
    size_t            n, k;
    json_t           *j, *msg, *c, *d;
    fg_oai_resp_t     r;
    fg_oai_usage_t    u = { 10, 5, 0 };
    fg_tool_parsed_t  p;

    fg_oai_tool_call_id(ids[0], sizeof(ids[0]), FG_TOOL_FMT_HERMES, 1, 2);
    fg_oai_tool_call_id(ids[1], sizeof(ids[1]), FG_TOOL_FMT_MISTRAL,
                        0xffffffffffffffffULL, 7);

    ok(strncmp(ids[0], "call_", 5) == 0 && strlen(ids[0]) == 29,
       "an id as OpenAI's look: %s", ids[0]);
    is_int(strlen(ids[1]), 9, "Mistral's: 9 characters (%s)", ids[1]);

    snprintf(text, sizeof(text), "%s",
             J("Hi <tool_call>{'name': 'time', 'arguments': {'tz': "
               "'\\u00e9'}}</tool_call><tool_call>{'name': 'get_weather', "
               "'arguments': {}}</tool_call>"));
    fg_tool_parse(FG_TOOL_FMT_HERMES, text, strlen(text), names, N(names),
                  &p);
    is_int(p.n_calls, 2, "two calls to write");

    fg_oai_resp_init(&r, FG_OAI_CHAT, "chatcmpl-x", "m", 1, NULL, 1, 1);

    s = fg_oai_resp_tools_json(&r, "Hi", p.content_len, &p, ids, &u, &n);
    j = s ? load(s, n) : NULL;
    ok(j != NULL && s[n - 1] == '\n', "the body is JSON, one line");

    msg = json_object_get(json_array_get(json_object_get(j, "choices"), 0),
                          "message");
    is_str(json_string_value(json_object_get(msg, "content")), "Hi",
           "the text before the calls as content");
    c = json_array_get(json_object_get(msg, "tool_calls"), 0);
    is_str(json_string_value(json_object_get(c, "id")), ids[0], "its id");
    is_str(json_string_value(json_object_get(c, "type")), "function",
           "its type");
    is_str(json_string_value(json_object_get(json_object_get(c, "function"),
                                             "arguments")),
           "{\"tz\":\"\xc3\xa9\"}", "its arguments, a string of JSON");
    is_str(json_string_value(json_object_get(json_array_get(
               json_object_get(j, "choices"), 0), "finish_reason")),
           "tool_calls", "finish_reason tool_calls");
    is_int(json_integer_value(json_object_get(json_object_get(j, "usage"),
                                              "total_tokens")), 15,
           "usage kept");
    json_decref(j);
    free(s);

    s = fg_oai_resp_tools_json(&r, "", 0, &p, ids, &u, &n);
    j = s ? load(s, n) : NULL;
    msg = json_object_get(json_array_get(json_object_get(j, "choices"), 0),
                          "message");
    ok(json_is_null(json_object_get(msg, "content")),
       "no text: content null");
    json_decref(j);
    free(s);

    /* the stream: the role chunk is out before */
    r.started = 1;
    s = fg_oai_sse_tool_calls(&r, &p, ids, &n);
    ok(s != NULL, "the calls' chunks");

    k = 0;

    for (line = s; line && *line; line = next) {
        next = strstr(line, "\n\n");
        ok(strncmp(line, "data: ", 6) == 0 && next != NULL,
           "chunk %zu: an event", k);
        if (next == NULL) {
            break;
        }

        j = load(line + 6, next - line - 6);
        ok(json_is_null(json_object_get(j, "usage")), "... usage null");
        d = json_object_get(json_array_get(json_object_get(j, "choices"), 0),
                            "delta");
        c = json_array_get(json_object_get(d, "tool_calls"), 0);
        is_int(json_integer_value(json_object_get(c, "index")), k / 2,
               "... call %zu", k / 2);

        if (k % 2 == 0) {
            is_str(json_string_value(json_object_get(c, "id")), ids[k / 2],
                   "... first its id");
            ok(json_object_get(json_object_get(c, "function"), "name")
               != NULL, "... and name");
        } else {
            ok(json_object_get(c, "id") == NULL
               && json_is_string(json_object_get(json_object_get(c,
                                 "function"), "arguments")),
               "... then its arguments");
        }

        json_decref(j);
        next += 2;
        k++;
    }

    is_int(k, 4, "two chunks a call");
    free(s);

    fg_tool_parsed_free(&p);
}


int
main(void)
{
    test_refusals();
    test_accepted();
    test_history();
    test_detect();
    test_answers();
    test_stream();
    test_writers();

    return done_testing();
}
