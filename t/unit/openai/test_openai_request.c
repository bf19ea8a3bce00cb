
/*
 * fairgate: tests of the OpenAI request parser: what each field accepts,
 * every refusal naming its parameter and code, the limits, and bodies
 * cut short or mangled at random (never a crash, always an error with a
 * message).
 */


#include <stdint.h>

#include "fg_tap.h"
#include "fg_test_oai.h"
#include "fg_rand.h"
#include "fg_openai_request.h"


#define N(a)  (sizeof(a) / sizeof((a)[0]))


static fg_oai_request_t *
parse_lim(fg_oai_kind_e kind, const char *text, const fg_oai_limits_t *lim,
    fg_oai_error_t *err)
{
    memset(err, 0, sizeof(fg_oai_error_t));

    return fg_oai_request_parse(kind, text, strlen(text), lim, err);
}


static fg_oai_request_t *
parse(fg_oai_kind_e kind, const char *text, fg_oai_error_t *err)
{
    return fg_test_oai_parse(kind, text, err);
}


typedef struct {
    fg_oai_kind_e    kind;
    const char      *body;
    int              status;
    const char      *param;        /* "" for null */
    const char      *code;         /* NULL for null */
} bad_t;


#define CHAT  FG_OAI_CHAT
#define COMP  FG_OAI_COMPLETION
#define M     "'model':'m',"
#define U     "'messages':[{'role':'user','content':'hi'}]"
#define P     "'prompt':'hi'"


static const bad_t  bad[] = {

    /* the body itself */
    { CHAT, "{", 400, "", "invalid_json" },
    { CHAT, "", 400, "", "invalid_json" },
    { CHAT, "{}x", 400, "", "invalid_json" },
    { CHAT, "[1]", 400, "", "invalid_type" },
    { CHAT, "'text'", 400, "", "invalid_type" },
    { CHAT, "{" M "'model':'n'," U "}", 400, "", "invalid_json" },

    /* model */
    { CHAT, "{" U "}", 400, "model", "missing_required_parameter" },
    { CHAT, "{'model':12," U "}", 400, "model", "invalid_type" },
    { CHAT, "{'model':null," U "}", 400, "model", "invalid_type" },
    { CHAT, "{'model':''," U "}", 400, "model", "string_below_min_length" },

    /* messages */
    { CHAT, "{'model':'m'}", 400, "messages", "missing_required_parameter" },
    { CHAT, "{" M "'messages':'hi'}", 400, "messages", "invalid_type" },
    { CHAT, "{" M "'messages':[]}", 400, "messages", "empty_array" },
    { CHAT, "{" M "'messages':[3]}", 400, "messages[0]", "invalid_type" },
    { CHAT, "{" M "'messages':[{'content':'hi'}]}", 400, "messages[0].role",
      "missing_required_parameter" },
    { CHAT, "{" M "'messages':[{'role':7,'content':'hi'}]}", 400,
      "messages[0].role", "invalid_type" },
    { CHAT, "{" M "'messages':[{'role':'wizard','content':'hi'}]}", 400,
      "messages[0].role", "invalid_value" },
    { CHAT, "{" M "'messages':[{'role':'user','content':'a'},"
            "{'role':'tool','content':'x','tool_call_id':null}]}", 400,
      "messages[1].tool_call_id", "invalid_type" },
    { CHAT, "{" M "'messages':[{'role':'function','content':'x'}]}", 400,
      "messages[0].role", "unsupported_value" },
    { CHAT, "{" M "'messages':[{'role':'user','content':'a'},"
            "{'role':'user'}]}", 400, "messages[1].content",
      "missing_required_parameter" },
    { CHAT, "{" M "'messages':[{'role':'user','content':5}]}", 400,
      "messages[0].content", "invalid_type" },
    { CHAT, "{" M "'messages':[{'role':'assistant','content':null}]}", 400,
      "messages[0].content", "invalid_type" },
    { CHAT, "{" M "'messages':[{'role':'user','content':[]}]}", 400,
      "messages[0].content", "empty_array" },
    { CHAT, "{" M "'messages':[{'role':'user','content':['a']}]}", 400,
      "messages[0].content[0]", "invalid_type" },
    { CHAT, "{" M "'messages':[{'role':'user','content':[{'type':'text',"
            "'text':'a'},{'type':'image_url','image_url':{'url':'x'}}]}]}",
      400, "messages[0].content[1].type", "unsupported_value" },
    { CHAT, "{" M "'messages':[{'role':'user','content':[{'type':'text',"
            "'text':'a','cache_control':{}}]}]}",
      400, "messages[0].content[0].cache_control", "unknown_parameter" },
    { CHAT, "{" M "'messages':[{'role':'user','content':[{'type':'text',"
            "'text':'a'},{'type':'input_audio'}]}]}",
      400, "messages[0].content[1].type", "unsupported_value" },
    { CHAT, "{" M "'messages':[{'role':'user','content':[{'text':'a'}]}]}",
      400, "messages[0].content[0].type", "missing_required_parameter" },
    { CHAT, "{" M "'messages':[{'role':'user','content':[{'type':1}]}]}",
      400, "messages[0].content[0].type", "invalid_type" },
    { CHAT, "{" M "'messages':[{'role':'user','content':[{'type':'text'}]}]}",
      400, "messages[0].content[0].text", "missing_required_parameter" },
    { CHAT, "{" M "'messages':[{'role':'user','content':[{'type':'text',"
            "'text':false}]}]}", 400, "messages[0].content[0].text",
      "invalid_type" },
    { CHAT, "{" M "'messages':[{'role':'user','content':'a','name':'bob'}]}",
      400, "messages[0].name", "unsupported_parameter" },
    { CHAT, "{" M "'messages':[{'role':'user','content':'a'},"
            "{'role':'assistant','content':'b','tool_calls':[{'id':'1'}]}]}",
      400, "messages[1].tool_calls[0].type", "invalid_type" },
    { CHAT, "{" M "'messages':[{'role':'assistant','content':'b',"
            "'refusal':'no'}]}", 400, "messages[0].refusal",
      "unsupported_parameter" },
    { CHAT, "{" M "'messages':[{'role':'user','content':'a','x':1}]}", 400,
      "messages[0].x", "unknown_parameter" },

    /* max_tokens */
    { CHAT, "{" M U ",'max_tokens':0}", 400, "max_tokens",
      "integer_below_min_value" },
    { CHAT, "{" M U ",'max_tokens':-5}", 400, "max_tokens",
      "integer_below_min_value" },
    { CHAT, "{" M U ",'max_tokens':'10'}", 400, "max_tokens",
      "invalid_type" },
    { CHAT, "{" M U ",'max_tokens':1.5}", 400, "max_tokens",
      "invalid_type" },
    { CHAT, "{" M U ",'max_tokens':2000000}", 400, "max_tokens",
      "integer_above_max_value" },
    { CHAT, "{" M U ",'max_completion_tokens':0}", 400,
      "max_completion_tokens", "integer_below_min_value" },
    { CHAT, "{" M U ",'max_tokens':5,'max_completion_tokens':6}", 400,
      "max_completion_tokens", "invalid_value" },
    { COMP, "{" M P ",'max_tokens':0}", 400, "max_tokens",
      "integer_below_min_value" },

    /* sampling */
    { CHAT, "{" M U ",'temperature':'hot'}", 400, "temperature",
      "invalid_type" },
    { CHAT, "{" M U ",'temperature':2.5}", 400, "temperature",
      "decimal_above_max_value" },
    { CHAT, "{" M U ",'temperature':-0.1}", 400, "temperature",
      "decimal_below_min_value" },
    { CHAT, "{" M U ",'top_p':1.5}", 400, "top_p",
      "decimal_above_max_value" },
    { CHAT, "{" M U ",'top_p':true}", 400, "top_p", "invalid_type" },
    { CHAT, "{" M U ",'seed':'x'}", 400, "seed", "invalid_type" },
    { CHAT, "{" M U ",'seed':1.5}", 400, "seed", "invalid_type" },
    { CHAT, "{" M U ",'top_k':-2}", 400, "top_k", "invalid_value" },
    { CHAT, "{" M U ",'top_k':'x'}", 400, "top_k", "invalid_type" },
    { CHAT, "{" M U ",'ignore_eos':1}", 400, "ignore_eos", "invalid_type" },

    /* stop */
    { CHAT, "{" M U ",'stop':['a','b','c','d','e']}", 400, "stop",
      "array_above_max_length" },
    { CHAT, "{" M U ",'stop':['a','b',3]}", 400, "stop[2]",
      "invalid_type" },
    { CHAT, "{" M U ",'stop':''}", 400, "stop", "string_below_min_length" },
    { CHAT, "{" M U ",'stop':['x','']}", 400, "stop[1]",
      "string_below_min_length" },
    { CHAT, "{" M U ",'stop':{'a':1}}", 400, "stop", "invalid_type" },
    { COMP, "{" M P ",'stop':[null]}", 400, "stop[0]", "invalid_type" },

    /* streaming */
    { CHAT, "{" M U ",'stream':'yes'}", 400, "stream", "invalid_type" },
    { CHAT, "{" M U ",'stream_options':{'include_usage':true}}", 400,
      "stream_options", "invalid_value" },
    { CHAT, "{" M U ",'stream':false,'stream_options':{}}", 400,
      "stream_options", "invalid_value" },
    { CHAT, "{" M U ",'stream':true,'stream_options':{'include_usage':1}}",
      400, "stream_options.include_usage", "invalid_type" },
    { CHAT, "{" M U ",'stream':true,'stream_options':{'foo':true}}", 400,
      "stream_options.foo", "unknown_parameter" },
    { CHAT, "{" M U ",'stream':true,'stream_options':[]}", 400,
      "stream_options", "invalid_type" },

    /* user, n */
    { CHAT, "{" M U ",'user':123}", 400, "user", "invalid_type" },
    { CHAT, "{" M U ",'n':17}", 400, "n", "unsupported_value" },
    { CHAT, "{" M U ",'n':0}", 400, "n", "integer_below_min_value" },
    { CHAT, "{" M U ",'n':'1'}", 400, "n", "invalid_type" },
    { COMP, "{" M P ",'n':17}", 400, "n", "unsupported_value" },
    { COMP, "{" M P ",'n':3,'best_of':2}", 400, "best_of", "invalid_value" },
    { COMP, "{" M P ",'n':2,'best_of':3,'stream':true}", 400, "best_of",
      "invalid_value" },
    { COMP, "{" M P ",'best_of':17}", 400, "best_of", "unsupported_value" },

    /* refused: they would change the output */
    { CHAT, "{" M U ",'tools':[{'type':'function'}]}", 400,
      "tools[0].function", "missing_required_parameter" },
    { CHAT, "{" M U ",'tools':[]}", 400, "tools", "empty_array" },
    { CHAT, "{" M U ",'functions':[{'name':'f'}]}", 400, "functions",
      "unsupported_parameter" },
    { CHAT, "{" M U ",'function_call':'auto'}", 400, "function_call",
      "unsupported_parameter" },
    { CHAT, "{" M U ",'tool_choice':'auto'}", 400, "tool_choice",
      "invalid_value" },
    { CHAT, "{" M U ",'audio':{'voice':'x'}}", 400, "audio",
      "unsupported_parameter" },
    { CHAT, "{" M U ",'prediction':{'type':'content'}}", 400, "prediction",
      "unsupported_parameter" },
    { CHAT, "{" M U ",'reasoning_effort':'low'}", 400, "reasoning_effort",
      "unsupported_parameter" },
    { CHAT, "{" M U ",'web_search_options':{}}", 400, "web_search_options",
      "unsupported_parameter" },
    { CHAT, "{" M U ",'response_format':{'type':'xml'}}", 400,
      "response_format.type", "unsupported_value" },
    { CHAT, "{" M U ",'response_format':{'type':'json_schema',"
            "'json_schema':{}}}", 400, "response_format.json_schema.name",
      "missing_required_parameter" },
    { CHAT, "{" M U ",'response_format':{'type':'json_schema'}}", 400,
      "response_format.json_schema", "missing_required_parameter" },
    { CHAT, "{" M U ",'response_format':{'type':'json_schema',"
            "'json_schema':{'name':'n','schema':{'type':'object',"
            "'properties':{'a':{'type':'number','multipleOf':2}}}}}}",
      400, "response_format.json_schema.schema", "invalid_json_schema" },
    { CHAT, "{" M U ",'grammar':'root ::= foo'}", 400, "grammar",
      "invalid_value" },
    { CHAT, "{" M U ",'grammar':'root ::= \\\"a\\\"','response_format':"
            "{'type':'json_object'}}", 400, "response_format",
      "unsupported_parameter" },
    { CHAT, "{" M U ",'response_format':{}}", 400, "response_format.type",
      "missing_required_parameter" },
    { CHAT, "{" M U ",'response_format':'text'}", 400, "response_format",
      "invalid_type" },
    { CHAT, "{" M U ",'logprobs':1}", 400, "logprobs", "invalid_type" },
    { CHAT, "{" M U ",'top_logprobs':2}", 400, "top_logprobs",
      "invalid_value" },
    { CHAT, "{" M U ",'logprobs':false,'top_logprobs':2}", 400,
      "top_logprobs", "invalid_value" },
    { CHAT, "{" M U ",'logprobs':true,'top_logprobs':21}", 400,
      "top_logprobs", "integer_above_max_value" },
    { CHAT, "{" M U ",'logprobs':true,'top_logprobs':-1}", 400,
      "top_logprobs", "integer_below_min_value" },
    { CHAT, "{" M U ",'logprobs':true,'top_logprobs':2.5}", 400,
      "top_logprobs", "invalid_type" },
    { CHAT, "{" M U ",'frequency_penalty':2.5}", 400, "frequency_penalty",
      "decimal_above_max_value" },
    { CHAT, "{" M U ",'presence_penalty':-2.01}", 400, "presence_penalty",
      "decimal_below_min_value" },
    { CHAT, "{" M U ",'presence_penalty':'0'}", 400, "presence_penalty",
      "invalid_type" },
    { CHAT, "{" M U ",'logit_bias':{'50':100.5}}", 400, "logit_bias",
      "invalid_value" },
    { CHAT, "{" M U ",'logit_bias':{'50':-101}}", 400, "logit_bias",
      "invalid_value" },
    { CHAT, "{" M U ",'logit_bias':{'x':1}}", 400, "logit_bias",
      "invalid_value" },
    { CHAT, "{" M U ",'logit_bias':{'-1':1}}", 400, "logit_bias",
      "invalid_value" },
    { CHAT, "{" M U ",'logit_bias':{'05':1}}", 400, "logit_bias",
      "invalid_value" },
    { CHAT, "{" M U ",'logit_bias':{'5':'a'}}", 400, "logit_bias",
      "invalid_type" },
    { CHAT, "{" M U ",'logit_bias':[1]}", 400, "logit_bias",
      "invalid_type" },
    { CHAT, "{" M U ",'repetition_penalty':0}", 400, "repetition_penalty",
      "decimal_below_min_value" },
    { CHAT, "{" M U ",'repetition_penalty':101}", 400, "repetition_penalty",
      "decimal_above_max_value" },
    { CHAT, "{" M U ",'min_p':1.5}", 400, "min_p",
      "decimal_above_max_value" },
    { CHAT, "{" M U ",'min_p':-0.1}", 400, "min_p",
      "decimal_below_min_value" },
    { CHAT, "{" M U ",'modalities':['text','audio']}", 400, "modalities[1]",
      "unsupported_value" },
    { CHAT, "{" M U ",'metadata':'x'}", 400, "metadata", "invalid_type" },
    { CHAT, "{" M U ",'store':'yes'}", 400, "store", "invalid_type" },

    /* unknown, or of the other endpoint */
    { CHAT, "{" M U ",'foo':1}", 400, "foo", "unknown_parameter" },
    { COMP, "{" M P ",'top_logprobs':1}", 400, "top_logprobs",
      "unknown_parameter" },
    { CHAT, "{" M U "," P "}", 400, "prompt", "unknown_parameter" },
    { CHAT, "{" M U ",'echo':false}", 400, "echo", "unknown_parameter" },
    { COMP, "{" M P "," U "}", 400, "messages", "unknown_parameter" },
    { COMP, "{" M P ",'max_completion_tokens':5}", 400,
      "max_completion_tokens", "unknown_parameter" },
    { COMP, "{" M P ",'tools':[]}", 400, "tools", "unknown_parameter" },

    /* prompt */
    { COMP, "{'model':'m'}", 400, "prompt", "missing_required_parameter" },
    { COMP, "{" M "'prompt':5}", 400, "prompt", "invalid_type" },
    { COMP, "{" M "'prompt':null}", 400, "prompt", "invalid_type" },
    { COMP, "{" M "'prompt':[]}", 400, "prompt", "empty_array" },
    { COMP, "{" M "'prompt':['a','b']}", 400, "prompt",
      "unsupported_value" },
    { COMP, "{" M "'prompt':[1,'a']}", 400, "prompt[1]", "invalid_type" },
    { COMP, "{" M "'prompt':[1,2.5]}", 400, "prompt[1]", "invalid_type" },
    { COMP, "{" M "'prompt':[[1],[2]]}", 400, "prompt",
      "unsupported_value" },
    { COMP, "{" M "'prompt':[[]]}", 400, "prompt[0]", "empty_array" },
    { COMP, "{" M "'prompt':[-1]}", 400, "prompt[0]", "invalid_value" },
    { COMP, "{" M "'prompt':[3000000000]}", 400, "prompt[0]",
      "invalid_value" },
    { COMP, "{" M "'prompt':[[1,'x']]}", 400, "prompt[0][1]",
      "invalid_type" },
    { COMP, "{" M "'prompt':[{}]}", 400, "prompt[0]", "invalid_type" },
    { COMP, "{" M P ",'echo':true,'logprobs':0,'n':2,'stream':true}", 400,
      "echo", "unsupported_value" },
    { COMP, "{" M P ",'echo':'no'}", 400, "echo", "invalid_type" },
    { COMP, "{" M P ",'suffix':'end'}", 400, "suffix", "unsupported_value" },
    { COMP, "{" M P ",'logprobs':6}", 400, "logprobs", "invalid_value" },
    { COMP, "{" M P ",'logprobs':-1}", 400, "logprobs", "invalid_value" },
    { COMP, "{" M P ",'logprobs':true}", 400, "logprobs", "invalid_type" },
};


static void
test_refusals(void)
{
    size_t             i;
    fg_oai_error_t     err;
    fg_oai_request_t  *r;

    for (i = 0; i < N(bad); i++) {
        r = parse(bad[i].kind, bad[i].body, &err);

        if (!ok(r == NULL, "refused: %s", body)) {
            fg_oai_request_free(r);
            continue;
        }

        ok(err.status == bad[i].status
           && strcmp(err.param, bad[i].param) == 0
           && err.code && strcmp(err.code, bad[i].code) == 0
           && strcmp(err.type, "invalid_request_error") == 0
           && err.message[0],
           "  %d, param '%s', code %s: %s", err.status, err.param,
           err.code ? err.code : "null", err.message);

        if (strcmp(err.param, bad[i].param) != 0
            || !err.code || strcmp(err.code, bad[i].code) != 0)
        {
            diag("expected param '%s', code %s", bad[i].param, bad[i].code);
        }
    }
}


/* the least a chat request can be, and the defaults it gets */
static void
test_chat_minimal(void)
{
    fg_oai_error_t     err;
    fg_oai_request_t  *r;

    r = parse(CHAT, "{" M U "}", &err);

    if (!ok(r != NULL, "minimal chat request")) {
        diag("%s", err.message);
        return;
    }

    is_str(r->model.data, "m", "model");
    is_int(r->model.len, 1, "model length");
    is_int(r->kind, CHAT, "kind");
    is_int(r->n_messages, 1, "one message");
    is_int(r->messages[0].role, FG_OAI_USER, "user");
    is_str(r->messages[0].content.data, "hi", "content");
    is_int(r->max_tokens, 0, "chat: no max_tokens, up to the context");
    ok(!r->has_max_tokens, "max_tokens not given");
    is_num(r->temperature, 1, 0, "temperature defaults to 1");
    is_num(r->top_p, 1, 0, "top_p defaults to 1");
    is_int(r->top_k, 0, "top_k off");
    ok(!r->has_seed && !r->stream && !r->include_usage && !r->ignore_eos
       && r->n_stop == 0 && r->user.len == 0, "the rest unset");
    fg_oai_request_free(r);
}


/* every field that does something, each read back */
static void
test_chat_full(void)
{
    fg_oai_error_t     err;
    fg_oai_request_t  *r;

    r = parse(CHAT,
              "{'model':'llama-3','messages':["
              "{'role':'system','content':'Be brief.'},"
              "{'role':'developer','content':'No lists.'},"
              "{'role':'user','content':[{'type':'text','text':'One'},"
              "{'type':'text','text':'Two'}]},"
              "{'role':'assistant','content':'Ok','refusal':null,"
              "'tool_calls':[]},"
              "{'role':'user','content':'caf\\u00e9 \\n \\'q\\''}],"
              "'max_completion_tokens':64,'temperature':0.25,'top_p':0.9,"
              "'seed':-3,'stop':['\\n\\n','END'],'stream':true,"
              "'stream_options':{'include_usage':true},'user':'u-1','n':3,"
              "'top_k':40,'ignore_eos':true}",
              &err);

    if (!ok(r != NULL, "full chat request")) {
        diag("%s", err.message);
        return;
    }

    is_str(r->model.data, "llama-3", "model");
    is_int(r->n_messages, 5, "five messages");
    is_int(r->messages[0].role, FG_OAI_SYSTEM, "system");
    is_int(r->messages[1].role, FG_OAI_DEVELOPER, "developer");
    is_int(r->messages[2].role, FG_OAI_USER, "user");
    is_str(r->messages[2].content.data, "One\nTwo",
           "text parts joined with a newline");
    is_int(r->messages[2].content.len, 7, "their length");
    is_int(r->messages[3].role, FG_OAI_ASSISTANT, "assistant");
    is_str(r->messages[4].content.data, "caf\xc3\xa9 \n \"q\"",
           "escapes decoded");
    is_int(r->max_tokens, 64, "max_completion_tokens");
    ok(r->has_max_tokens, "given");
    is_num(r->temperature, 0.25, 1e-6, "temperature");
    is_num(r->top_p, 0.9, 1e-6, "top_p");
    ok(r->has_seed && r->seed == (uint64_t) -3, "a negative seed's bits");
    is_int(r->n_stop, 2, "two stops");
    is_str(r->stop[0].data, "\n\n", "stop 0");
    is_str(r->stop[1].data, "END", "stop 1");
    ok(r->stream && r->include_usage, "stream with usage");
    is_int(r->n, 3, "three choices");
    is_str(r->user.data, "u-1", "user");
    is_int(r->top_k, 40, "top_k");
    ok(r->ignore_eos, "ignore_eos");
    fg_oai_request_free(r);
}


/* nulls, harmless fields, and the values with a meaning of their own */
static void
test_chat_optional(void)
{
    fg_oai_error_t     err;
    fg_oai_request_t  *r;

    /* null means "not given" for optional fields, as OpenAI takes it */
    r = parse(CHAT, "{" M U ",'max_tokens':null,'temperature':null,"
              "'top_p':null,'seed':null,'stop':null,'stream':null,"
              "'stream_options':null,'user':null,'n':null,'tools':null,"
              "'tool_choice':null,'logprobs':null,'response_format':null}",
              &err);
    ok(r && !r->has_max_tokens && r->temperature == 1 && !r->has_seed
       && r->n_stop == 0 && !r->stream, "nulls are absent fields");
    fg_oai_request_free(r);

    /* harmless fields with harmless values */
    r = parse(CHAT, "{" M U ",'metadata':{'a':'b'},'store':true,"
              "'frequency_penalty':0,'presence_penalty':0.0,'logit_bias':{},"
              "'logprobs':false,'top_logprobs':0,'service_tier':'auto',"
              "'parallel_tool_calls':true,'tool_choice':'none',"
              "'response_format':{'type':'text'},'modalities':['text'],"
              "'prompt_cache_key':'k','safety_identifier':'s',"
              "'max_tokens':7,'max_completion_tokens':7,'stream':true,"
              "'stream_options':{'include_usage':false,"
              "'include_obfuscation':false}}", &err);
    ok(r != NULL, "harmless fields accepted");

    if (r == NULL) {
        diag("%s: %s", err.param, err.message);
    }

    ok(r && r->max_tokens == 7 && !r->include_usage,
       "max_tokens equal to max_completion_tokens");
    fg_oai_request_free(r);

    /* top_p 0 keeps the most likely token only: greedy */
    r = parse(CHAT, "{" M U ",'top_p':0,'temperature':0.8}", &err);
    ok(r && r->temperature == 0 && r->top_p == 1, "top_p 0 is greedy");
    fg_oai_request_free(r);

    r = parse(CHAT, "{" M U ",'stop':'###','top_k':-1}", &err);
    ok(r && r->n_stop == 1 && strcmp(r->stop[0].data, "###") == 0
       && r->top_k == 0, "one stop string; top_k -1 is off");
    fg_oai_request_free(r);

    r = parse(CHAT, "{" M U ",'stop':[]}", &err);
    ok(r && r->n_stop == 0, "an empty stop list");
    fg_oai_request_free(r);

    r = parse(CHAT, "{" M "'messages':[{'role':'user','content':''}]}",
              &err);
    ok(r && r->messages[0].content.len == 0
       && r->messages[0].content.data[0] == '\0', "empty content");
    fg_oai_request_free(r);
}


static void
test_completion(void)
{
    fg_oai_error_t     err;
    fg_oai_limits_t    lim;
    fg_oai_request_t  *r;

    r = parse(COMP, "{" M P "}", &err);
    ok(r && r->kind == COMP && strcmp(r->prompt.data, "hi") == 0
       && r->prompt_ids == NULL && r->max_tokens == 16
       && !r->has_max_tokens && r->messages == NULL,
       "completion: prompt, max_tokens 16 as OpenAI's default");
    fg_oai_request_free(r);

    r = parse(COMP, "{" M "'prompt':['Once upon'],'max_tokens':5,"
              "'echo':false,'best_of':1,'suffix':null,'logprobs':null}",
              &err);
    ok(r && strcmp(r->prompt.data, "Once upon") == 0 && r->max_tokens == 5,
       "one prompt in an array");
    fg_oai_request_free(r);

    r = parse(COMP, "{" M P ",'echo':true,'logprobs':2,'max_tokens':0}",
              &err);
    ok(r && r->echo && r->logprobs && r->has_max_tokens
       && r->max_tokens == 0,
       "echo with logprobs, max_tokens 0: the prompt scored");
    fg_oai_request_free(r);

    r = parse(COMP, "{" M P ",'echo':true,'logprobs':1,'n':2,'best_of':3}",
              &err);
    ok(r && r->n == 2 && r->best_of == 3,
       "echo with logprobs, several choices in one body");
    fg_oai_request_free(r);

    r = parse(COMP, "{" M "'prompt':''}", &err);
    ok(r && r->prompt.len == 0 && r->prompt.data,
       "an empty prompt is the glue's to judge (BOS may make it one token)");
    fg_oai_request_free(r);

    r = parse(COMP, "{" M "'prompt':[1,403,407]}", &err);
    ok(r && r->prompt.data == NULL && r->n_prompt_ids == 3
       && r->prompt_ids[0] == 1 && r->prompt_ids[2] == 407,
       "token ids");
    fg_oai_request_free(r);

    r = parse(COMP, "{" M "'prompt':[[1,2]]}", &err);
    ok(r && r->n_prompt_ids == 2 && r->prompt_ids[1] == 2,
       "one token-id prompt in an array");
    fg_oai_request_free(r);

    fg_oai_limits_init(&lim);
    lim.n_vocab = 512;

    r = parse_lim(COMP, J("{" M "'prompt':[1,511]}"), &lim, &err);
    ok(r != NULL, "ids below the vocabulary");
    fg_oai_request_free(r);

    r = parse_lim(COMP, J("{" M "'prompt':[1,512]}"), &lim, &err);
    ok(r == NULL && strcmp(err.param, "prompt[1]") == 0
       && strcmp(err.code, "invalid_value") == 0,
       "an id of the vocabulary's size: prompt[1]");
}


static void
test_limits(void)
{
    char               big[600];
    fg_oai_error_t     err;
    fg_oai_limits_t    lim;
    fg_oai_request_t  *r;

    fg_oai_limits_init(&lim);
    lim.max_body = 40;

    r = parse_lim(CHAT, J("{" M U "}"), &lim, &err);
    ok(r == NULL && err.status == 413 && err.param[0] == '\0'
       && strcmp(err.code, "request_too_large") == 0, "body size: 413");

    fg_oai_limits_init(&lim);
    lim.max_messages = 2;

    r = parse_lim(CHAT, J("{" M "'messages':[{'role':'user','content':'a'},"
                          "{'role':'assistant','content':'b'},"
                          "{'role':'user','content':'c'}]}"), &lim, &err);
    ok(r == NULL && strcmp(err.param, "messages") == 0
       && strcmp(err.code, "array_above_max_length") == 0,
       "message count: messages");

    fg_oai_limits_init(&lim);
    lim.max_text = 10;

    r = parse_lim(CHAT, J("{" M "'messages':[{'role':'user','content':"
                          "'12345'},{'role':'user','content':'123456'}]}"),
                  &lim, &err);
    ok(r == NULL && strcmp(err.param, "messages[1].content") == 0
       && strcmp(err.code, "string_above_max_length") == 0,
       "all the messages' text: the message that passes it");

    r = parse_lim(CHAT, J("{" M "'messages':[{'role':'user','content':"
                          "[{'type':'text','text':'12345'},{'type':'text',"
                          "'text':'12345'}]}]}"), &lim, &err);
    ok(r == NULL && strcmp(err.param, "messages[0].content") == 0,
       "text parts and their separators count");

    r = parse_lim(CHAT, J("{" M "'messages':[{'role':'user','content':"
                          "'1234567890'}]}"), &lim, &err);
    ok(r != NULL, "exactly the limit");
    fg_oai_request_free(r);

    r = parse_lim(COMP, J("{" M "'prompt':'12345678901'}"), &lim, &err);
    ok(r == NULL && strcmp(err.param, "prompt") == 0, "prompt text");

    fg_oai_limits_init(&lim);
    lim.max_parts = 2;

    r = parse_lim(CHAT, J("{" M "'messages':[{'role':'user','content':"
                          "[{'type':'text','text':'a'},{'type':'text',"
                          "'text':'b'},{'type':'text','text':'c'}]}]}"),
                  &lim, &err);
    ok(r == NULL && strcmp(err.param, "messages[0].content") == 0
       && strcmp(err.code, "array_above_max_length") == 0, "text parts");

    fg_oai_limits_init(&lim);
    lim.max_prompt_ids = 2;

    r = parse_lim(COMP, J("{" M "'prompt':[1,2,3]}"), &lim, &err);
    ok(r == NULL && strcmp(err.param, "prompt") == 0, "token-id prompt");

    fg_oai_limits_init(&lim);
    lim.max_model = 4;

    r = parse_lim(CHAT, J("{'model':'12345'," U "}"), &lim, &err);
    ok(r == NULL && strcmp(err.param, "model") == 0
       && strcmp(err.code, "string_above_max_length") == 0, "model name");

    fg_oai_limits_init(&lim);
    lim.max_user = 2;

    r = parse_lim(CHAT, J("{" M U ",'user':'abc'}"), &lim, &err);
    ok(r == NULL && strcmp(err.param, "user") == 0, "user");

    fg_oai_limits_init(&lim);
    lim.max_tokens = 100;

    r = parse_lim(CHAT, J("{" M U ",'max_tokens':101}"), &lim, &err);
    ok(r == NULL && strcmp(err.param, "max_tokens") == 0
       && strcmp(err.code, "integer_above_max_value") == 0, "max_tokens");

    fg_oai_limits_init(&lim);
    memset(big, 'x', 257);
    big[257] = '\0';
    snprintf(body, sizeof(body), "{\"model\":\"m\",\"prompt\":\"a\","
             "\"stop\":[\"%s\"]}", big);

    r = parse_lim(COMP, body, &lim, &err);
    ok(r == NULL && strcmp(err.param, "stop[0]") == 0
       && strcmp(err.code, "string_above_max_length") == 0,
       "a stop string of 257 bytes");

    big[256] = '\0';
    snprintf(body, sizeof(body), "{\"model\":\"m\",\"prompt\":\"a\","
             "\"stop\":\"%s\"}", big);

    r = parse_lim(COMP, body, &lim, &err);
    ok(r && r->stop[0].len == 256, "one of 256 bytes");
    fg_oai_request_free(r);

    /* what jansson refuses is named as JSON */
    r = parse_lim(CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
                  "\"content\":\"a\\u0000b\"}]}", &lim, &err);
    ok(r == NULL && strcmp(err.code, "invalid_json") == 0,
       "a NUL character in a string");

    r = parse_lim(CHAT, "{\"model\":\"\xff\"}", &lim, &err);
    ok(r == NULL && strcmp(err.code, "invalid_json") == 0,
       "invalid UTF-8");
}


static fg_rand_t  rng = { 0x9e3779b97f4a7c15ULL };


/* every outcome is a request or a well-formed error */
static int
sane(fg_oai_kind_e kind, const char *text, size_t len)
{
    int                good;
    fg_oai_error_t     err;
    fg_oai_limits_t    lim;
    fg_oai_request_t  *r;

    fg_oai_limits_init(&lim);
    memset(&err, 0, sizeof(err));

    r = fg_oai_request_parse(kind, text, len, &lim, &err);

    if (r) {
        good = r->model.data != NULL
               && (kind == CHAT ? r->n_messages > 0
                                : (r->prompt.data || r->n_prompt_ids));
        fg_oai_request_free(r);
        return good;
    }

    return (err.status == 400 || err.status == 413) && err.type
           && err.message[0] && strlen(err.param) < sizeof(err.param);
}


static void
test_robustness(void)
{
    char         *buf;
    size_t        i, j, len, fails, runs;
    const char   *seeds[4];

    seeds[0] = strdup(J("{'model':'m','messages':[{'role':'system',"
                        "'content':'s'},{'role':'user','content':[{'type':"
                        "'text','text':'a\\u00e9'}]}],'stop':['x','y'],"
                        "'stream':true,'stream_options':{'include_usage':"
                        "true},'max_tokens':3,'temperature':0.5}"));
    seeds[1] = strdup(J("{'model':'m','prompt':[[1,2,3]],'n':1,'seed':7,"
                        "'top_p':0.5,'user':'u','echo':false}"));
    seeds[2] = strdup(J("{'model':'m','prompt':'Once','logit_bias':{},"
                        "'metadata':{'k':[1,{'a':null}]}}"));
    seeds[3] = strdup(J("{'model':'m','messages':[{'role':'user','content':"
                        "'hi','tool_calls':null}],'response_format':{"
                        "'type':'text'},'tools':null}"));

    buf = malloc(4096);
    fails = 0;
    runs = 0;

    /* each body cut at every length, for both endpoints */
    for (i = 0; i < N(seeds); i++) {
        len = strlen(seeds[i]);

        for (j = 0; j <= len; j++) {
            memcpy(buf, seeds[i], j);
            fails += !sane(CHAT, buf, j);
            fails += !sane(COMP, buf, j);
            runs += 2;
        }
    }

    /* random bytes changed, inserted or removed */
    for (i = 0; i < 20000; i++) {
        const char  *s = seeds[fg_rand_next(&rng) % N(seeds)];
        size_t       k, pos;

        len = strlen(s);
        memcpy(buf, s, len);

        for (k = 0; k < 1 + fg_rand_next(&rng) % 4; k++) {
            pos = fg_rand_next(&rng) % len;

            switch (fg_rand_next(&rng) % 3) {
            case 0:
                buf[pos] = (char) (fg_rand_next(&rng) % 256);
                break;
            case 1:
                if (len < 4000) {
                    memmove(buf + pos + 1, buf + pos, len - pos);
                    buf[pos] = "{}[]\",:0a\\ -1e"[fg_rand_next(&rng) % 15];
                    len++;
                }
                break;
            default:
                memmove(buf + pos, buf + pos + 1, len - pos - 1);
                len--;
            }

            if (len == 0) {
                break;
            }
        }

        fails += !sane((fg_rand_next(&rng) & 1) ? CHAT : COMP, buf, len);
        runs++;
    }

    /* plain random bytes */
    for (i = 0; i < 2000; i++) {
        len = fg_rand_next(&rng) % 64;

        for (j = 0; j < len; j++) {
            buf[j] = (char) fg_rand_next(&rng);
        }

        fails += !sane(CHAT, buf, len);
        runs++;
    }

    is_int(fails, 0, "%zu cut, mangled and random bodies: a request or an "
           "error each", runs);

    free(buf);

    for (i = 0; i < N(seeds); i++) {
        free((void *) seeds[i]);
    }
}


/* whether a chat with n logit_bias entries parses */
static int
bias_entries(int n, fg_oai_error_t *err)
{
    int                i;
    char               body[4096];
    size_t             len;
    fg_oai_limits_t    lim;
    fg_oai_request_t  *r;

    len = (size_t) snprintf(body, sizeof(body), "{\"model\":\"m\","
                            "\"messages\":[{\"role\":\"user\","
                            "\"content\":\"hi\"}],\"logit_bias\":{");

    for (i = 0; i < n; i++) {
        len += (size_t) snprintf(body + len, sizeof(body) - len, "%s\"%d\":1",
                                 i ? "," : "", i);
    }

    snprintf(body + len, sizeof(body) - len, "}}");

    fg_oai_limits_init(&lim);
    r = parse_lim(CHAT, body, &lim, err);
    fg_oai_request_free(r);

    return r != NULL;
}


/* the logits' adjustments and log-probabilities, as the engine takes them */
static void
test_sampling(void)
{
    fg_oai_error_t     err;
    fg_oai_limits_t    lim;
    fg_oai_request_t  *r;

    r = parse(CHAT, "{" M U "}", &err);
    ok(r && r->frequency_penalty == 0 && r->presence_penalty == 0
       && r->repetition_penalty == 1 && r->min_p == 0 && r->n_bias == 0
       && !r->logprobs && r->top_logprobs == 0,
       "without the fields: no adjustment, no logprobs");
    fg_oai_request_free(r);

    r = parse(CHAT, "{" M U ",'frequency_penalty':-2,'presence_penalty':1.5,"
              "'repetition_penalty':1.3,'min_p':0.05,'logprobs':true,"
              "'top_logprobs':20,'logit_bias':{'7':-100,'300':2.5}}", &err);
    ok(r && r->frequency_penalty == -2 && r->presence_penalty == 1.5f
       && r->repetition_penalty == 1.3f && r->min_p == 0.05f,
       "penalties and min_p kept");
    ok(r && r->logprobs && r->top_logprobs == 20,
       "chat: logprobs true with 20 alternatives");
    ok(r && r->n_bias == 2 && r->bias_id[0] == 7 && r->bias[0] == -100
       && r->bias_id[1] == 300 && r->bias[1] == 2.5f,
       "logit_bias: ids and biases in the body's order");
    fg_oai_request_free(r);

    r = parse(CHAT, "{" M U ",'logprobs':true}", &err);
    ok(r && r->logprobs && r->top_logprobs == 0,
       "chat: logprobs alone, no alternatives");
    fg_oai_request_free(r);

    r = parse(COMP, "{" M P ",'logprobs':0}", &err);
    ok(r && r->logprobs && r->top_logprobs == 0,
       "completions: logprobs 0 is the sampled token's alone");
    fg_oai_request_free(r);

    r = parse(COMP, "{" M P ",'logprobs':5,'presence_penalty':2}", &err);
    ok(r && r->logprobs && r->top_logprobs == 5 && r->presence_penalty == 2,
       "completions: logprobs 5");
    fg_oai_request_free(r);

    /* 128 entries: the most the engine's protocol carries */
    ok(bias_entries(128, &err), "logit_bias: 128 entries accepted");
    ok(!bias_entries(129, &err) && strcmp(err.param, "logit_bias") == 0
       && strstr(err.message, "128") != NULL,
       "129 refused, naming the limit: %s", err.message);

    r = parse(COMP, "{" M P ",'echo':true}", &err);
    ok(r && r->echo && !r->logprobs, "completions: echo without logprobs");
    fg_oai_request_free(r);

    fg_oai_limits_init(&lim);
    lim.n_vocab = 512;

    r = parse_lim(CHAT, J("{" M U ",'logit_bias':{'511':1}}"), &lim, &err);
    ok(r != NULL, "a bias on the vocabulary's last id");
    fg_oai_request_free(r);

    r = parse_lim(CHAT, J("{" M U ",'logit_bias':{'512':1}}"), &lim, &err);
    ok(r == NULL && err.status == 400
       && strcmp(err.param, "logit_bias") == 0
       && strstr(err.message, "512") != NULL,
       "a bias beyond the vocabulary: 400 naming the id (%s)", err.message);
}


/* structured output: each format becomes the request's GBNF text */
static void
test_formats(void)
{
    fg_oai_error_t     err;
    fg_oai_request_t  *r;

    r = parse(CHAT, "{" M U ",'response_format':{'type':'text'}}", &err);
    ok(r && r->grammar.data == NULL, "response_format text: no grammar");
    fg_oai_request_free(r);

    r = parse(CHAT, "{" M U ",'response_format':{'type':'json_object'}}",
              &err);
    ok(r && r->grammar.data && strstr(r->grammar.data, "root ::=")
       && r->grammar.len == strlen(r->grammar.data),
       "json_object: a grammar");
    fg_oai_request_free(r);

    r = parse(CHAT, "{" M U ",'response_format':{'type':'json_schema',"
              "'json_schema':{'name':'n','strict':true,'schema':{"
              "'type':'object','properties':{'a':{'enum':['xq','yq']}},"
              "'required':['a'],'additionalProperties':false}}}}", &err);
    ok(r && r->grammar.data && strstr(r->grammar.data, "xq"),
       "json_schema: a grammar with the enum's values");
    fg_oai_request_free(r);

    r = parse(COMP, "{" M P ",'grammar':'root ::= [a-z]+'}", &err);
    ok(r && r->grammar.len == 15
       && strcmp(r->grammar.data, "root ::= [a-z]+") == 0,
       "completions: grammar kept as given");
    fg_oai_request_free(r);

#define TOOLS  ",'tools':[{'type':'function','function':{'name':'getw'," \
               "'parameters':{'type':'object','properties':{'city':{" \
               "'type':'string'}},'required':['city']}}},{'type':'function'," \
               "'function':{'name':'seta'}}]"

    r = parse(CHAT, "{" M U TOOLS ",'tool_choice':{'type':'function',"
              "'function':{'name':'getw'}}}", &err);
    ok(r && r->grammar.data && strstr(r->grammar.data, "getw")
       && strstr(r->grammar.data, "city") && !strstr(r->grammar.data, "seta"),
       "a named tool_choice: a grammar of its call alone");
    fg_oai_request_free(r);

    r = parse(CHAT, "{" M U TOOLS ",'tool_choice':'required'}", &err);
    ok(r && r->grammar.data && strstr(r->grammar.data, "getw")
       && strstr(r->grammar.data, "seta"),
       "tool_choice required: a grammar of any tool's call");
    fg_oai_request_free(r);

    r = parse(CHAT, "{" M U TOOLS "}", &err);
    ok(r && r->grammar.data == NULL, "tool_choice auto: no grammar");
    fg_oai_request_free(r);

    r = parse(CHAT, "{" M U TOOLS ",'tool_choice':'required',"
              "'response_format':{'type':'json_object'}}", &err);
    ok(r && r->grammar.data && !strstr(r->grammar.data, "getw"),
       "a response_format's grammar stays");
    fg_oai_request_free(r);

    r = parse(CHAT, "{" M U ",'response_format':{'type':'json_schema',"
              "'json_schema':{'name':'n','schema':{'type':'string',"
              "'pattern':'(?=a)'}}}}", &err);
    ok(r == NULL && err.status == 400
       && strstr(err.message, "\"pattern\"") != NULL,
       "an unsupported schema: 400 naming the keyword (%s)", err.message);
}


int
main(void)
{
    fg_oai_error_t  err;

    test_refusals();
    test_chat_minimal();
    test_chat_full();
    test_chat_optional();
    test_completion();
    test_limits();
    test_sampling();
    test_robustness();
    test_formats();

    fg_oai_error_set(&err, 404, "model_not_found", "model",
                     "The model '%s' does not exist.", "gpt-9");
    ok(err.status == 404 && strcmp(err.type, "invalid_request_error") == 0
       && strcmp(err.param, "model") == 0
       && strcmp(err.message, "The model 'gpt-9' does not exist.") == 0,
       "fg_oai_error_set for the glue's own checks");

    fg_oai_error_set(&err, 503, NULL, NULL, "engine away");
    ok(strcmp(err.type, "server_error") == 0 && err.param[0] == '\0'
       && err.code == NULL, "5xx is a server_error");

    return done_testing();
}
