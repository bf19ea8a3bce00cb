
/*
 * fairgate: the bodies of POST /v1/embeddings (fg_openai_embed.c): each
 * of OpenAI's input shapes parsed into inputs, the encoding and the
 * dimensions kept, and what OpenAI refuses refused with its parameter
 * named: empty strings and arrays, more than 2048 inputs, mixed shapes,
 * token ids outside the vocabulary, unknown encodings, fields of the
 * other endpoints.
 */


#include <stdint.h>

#include "fg_tap.h"
#include "fg_openai_request.h"


static char  body[1 << 16];


/* test bodies are written with ' for " to keep them readable */
static fg_oai_request_t *
parse(const char *s, fg_oai_error_t *err)
{
    size_t           i;
    fg_oai_limits_t  lim;

    for (i = 0; s[i] && i < sizeof(body) - 1; i++) {
        body[i] = (s[i] == '\'') ? '"' : s[i];
    }

    body[i] = '\0';

    fg_oai_limits_init(&lim);
    lim.n_vocab = 100;
    memset(err, 0, sizeof(fg_oai_error_t));

    return fg_oai_request_parse(FG_OAI_EMBEDDING, body, i, &lim, err);
}


static void
test_shapes(void)
{
    fg_oai_error_t     err;
    fg_oai_request_t  *r;

    r = parse("{'model':'m','input':'hello'}", &err);
    ok(r && r->n_inputs == 1 && r->inputs[0].text.len == 5
       && r->inputs[0].ids == NULL && !r->base64 && r->dimensions == 0,
       "a string: one text input, floats, no dimensions");
    fg_oai_request_free(r);

    r = parse("{'model':'m','input':['a','bc','def'],"
              "'encoding_format':'base64','dimensions':64,'user':'u'}", &err);
    ok(r && r->n_inputs == 3 && r->inputs[2].text.len == 3 && r->base64
       && r->dimensions == 64 && r->user.len == 1,
       "an array of strings, base64, dimensions and user kept");
    fg_oai_request_free(r);

    r = parse("{'model':'m','input':[1,2,3]}", &err);
    ok(r && r->n_inputs == 1 && r->inputs[0].text.data == NULL
       && r->inputs[0].n_ids == 3 && r->inputs[0].ids[2] == 3,
       "an array of token ids: one input");
    fg_oai_request_free(r);

    r = parse("{'model':'m','input':[[1],[2,99]],"
              "'encoding_format':'float'}", &err);
    ok(r && r->n_inputs == 2 && r->inputs[1].n_ids == 2
       && r->inputs[1].ids[1] == 99 && !r->base64,
       "an array of token arrays: one input each");
    fg_oai_request_free(r);
}


typedef struct {
    const char  *body;
    const char  *param;
    const char  *code;
} bad_t;


static const bad_t  bad[] = {
    { "{'model':'m','input':''}", "input", "invalid_value" },
    { "{'model':'m','input':['a','']}", "input", "invalid_value" },
    { "{'model':'m','input':[]}", "input", "empty_array" },
    { "{'model':'m','input':[[1],[]]}", "input", "invalid_value" },
    { "{'model':'m','input':['a',[1]]}", "input[1]", "invalid_type" },
    { "{'model':'m','input':[[1],'a']}", "input[1]", "invalid_type" },
    { "{'model':'m','input':[1,100]}", "input[1]", "invalid_value" },
    { "{'model':'m','input':[[1,-1]]}", "input[0][1]", "invalid_value" },
    { "{'model':'m','input':7}", "input", "invalid_type" },
    { "{'model':'m','input':[null]}", "input[0]", "invalid_type" },
    { "{'model':'m'}", "input", "missing_required_parameter" },
    { "{'input':'a'}", "model", "missing_required_parameter" },
    { "{'model':'m','input':'a','encoding_format':'int8'}",
      "encoding_format", "invalid_value" },
    { "{'model':'m','input':'a','dimensions':0}", "dimensions",
      "invalid_value" },
    { "{'model':'m','input':'a','temperature':1}", "temperature",
      "unknown_parameter" },
    { "{'model':'m','input':'a','stream':true}", "stream",
      "unknown_parameter" },
};


static void
test_refused(void)
{
    char               many[1 << 15], *p;
    size_t             i;
    fg_oai_error_t     err;
    fg_oai_request_t  *r;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        r = parse(bad[i].body, &err);

        ok(r == NULL && err.status == 400
           && strcmp(err.param, bad[i].param) == 0 && err.code
           && strcmp(err.code, bad[i].code) == 0,
           "refused: %s (400 %s %s: %s)", bad[i].body, err.param,
           err.code ? err.code : "null", err.message);
        fg_oai_request_free(r);
    }

    /* 2048 inputs are taken, 2049 are not */
    p = many + sprintf(many, "{'model':'m','input':[");

    for (i = 0; i < 2049; i++) {
        p += sprintf(p, "%s'x'", i ? "," : "");
    }

    sprintf(p, "]}");

    r = parse(many, &err);
    ok(r == NULL && strcmp(err.param, "input") == 0
       && strcmp(err.code, "array_above_max_length") == 0,
       "2049 inputs refused: %s", err.message);
    fg_oai_request_free(r);

    p[-4] = ']';
    p[-3] = '}';
    p[-2] = '\0';

    r = parse(many, &err);
    ok(r && r->n_inputs == 2048, "2048 inputs taken");
    fg_oai_request_free(r);
}


int
main(void)
{
    test_shapes();
    test_refused();

    return done_testing();
}
