
/*
 * fairgate: JSON Schema compiled to a grammar: each feature's texts taken
 * and refused, and the schemas refused with the keyword named.
 */


#include <stdio.h>

#include "fg_tap.h"
#include "fg_test_gram.h"


typedef struct {
    const char  *schema;                    /* NULL: json_object */
    const char  *yes[7];
    const char  *no[7];
} fg_test_schema_t;


static const fg_test_schema_t  fg_test_schemas[] = {
    { NULL,
      { "{}", "{\"a\": [1, {\"b\": null}], \"c\": \"\\u00e9\"}",
        "{\n  \"x\": -0.5e+10,\n  \"y\": true\n}", NULL },
      { "[]", "{\"a\"}", "{\"a\": 1,}", "{ \"a\":01}", "{\"a\": \"\\u0000\"}",
        "{\"a\":       1}", NULL } },
    { "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": "
      "\"string\"}, \"age\": {\"type\": \"integer\"}}, \"required\": "
      "[\"name\", \"age\"], \"additionalProperties\": false}",
      { "{\"name\": \"Ann\", \"age\": 31}", "{\"name\":\"\",\"age\":-2}",
        NULL },
      { "{\"age\": 31, \"name\": \"Ann\"}", "{\"name\": \"Ann\"}",
        "{\"name\": \"Ann\", \"age\": 3.5}",
        "{\"name\": \"Ann\", \"age\": 31, \"x\": 1}", NULL } },
    { "{\"type\": \"object\", \"properties\": {\"a\": {\"type\": "
      "\"boolean\"}, \"b\": {\"type\": \"null\"}, \"c\": {\"type\": "
      "\"number\"}}, \"required\": [\"b\"]}",
      { "{\"b\": null}", "{\"a\": true, \"b\": null}",
        "{\"b\": null, \"c\": 1.25}", "{\"a\": false, \"b\": null, \"c\": 0}",
        NULL },
      { "{}", "{\"a\": true}", "{\"b\": null,}", "{, \"b\": null}",
        "{\"c\": 1, \"b\": null}", NULL } },
    { "{\"type\": \"array\", \"items\": {\"type\": \"integer\"}, "
      "\"minItems\": 1, \"maxItems\": 3}",
      { "[1]", "[1, 2, 3]", "[ 1 ,2 ]", NULL },
      { "[]", "[1, 2, 3, 4]", "[1,]", "[\"a\"]", NULL } },
    { "{\"type\": \"array\", \"maxItems\": 0}", { "[]", NULL },
      { "[1]", NULL } },
    { "{\"enum\": [\"red\", 2, null, {\"k\": [true]}]}",
      { "\"red\"", "2", "null", "{\"k\":[true]}", NULL },
      { "\"blue\"", "3", "{\"k\": [true]}", NULL } },
    { "{\"const\": \"x\\\"y\"}", { "\"x\\\"y\"", NULL }, { "\"xy\"", NULL } },
    { "{\"anyOf\": [{\"type\": \"string\", \"maxLength\": 2}, "
      "{\"type\": \"integer\", \"minimum\": 0}]}",
      { "\"ab\"", "\"é\"", "\"\\n\"", "0", "42", NULL },
      { "\"abc\"", "-1", "1.5", NULL } },
    { "{\"oneOf\": [{\"type\": \"boolean\"}, {\"type\": \"null\"}]}",
      { "true", "null", NULL }, { "0", NULL } },
    { "{\"type\": [\"string\", \"null\"], \"minLength\": 2}",
      { "\"ab\"", "null", NULL }, { "\"a\"", "1", NULL } },
    { "{\"type\": \"string\", \"format\": \"date\"}",
      { "\"2024-02-29\"", NULL }, { "\"2024-13-01\"", "\"24-01-01\"",
        NULL } },
    { "{\"type\": \"string\", \"format\": \"date-time\"}",
      { "\"2024-02-29T23:59:59Z\"", "\"2024-01-01T00:00:00.123+05:30\"",
        NULL },
      { "\"2024-01-01 00:00:00Z\"", "\"2024-01-01T24:00:00Z\"", NULL } },
    { "{\"type\": \"string\", \"format\": \"time\"}",
      { "\"12:30:00Z\"", NULL }, { "\"12:30\"", NULL } },
    { "{\"type\": \"string\", \"format\": \"uuid\"}",
      { "\"123e4567-e89b-12d3-a456-426614174000\"", NULL },
      { "\"123e4567e89b12d3a456426614174000\"", NULL } },
    { "{\"type\": \"string\", \"format\": \"email\"}",
      { "\"ann.lee+x@mail.example.com\"", NULL },
      { "\"ann@\"", "\"@example.com\"", "\"ann@example\"", NULL } },
    { "{\"type\": \"integer\", \"exclusiveMinimum\": 0}",
      { "1", "907", NULL }, { "0", "-3", NULL } },
    { "{\"type\": \"integer\", \"minimum\": -15, \"maximum\": 250}",
      { "-15", "-9", "0", "99", "199", "250", NULL },
      { "-16", "-0", "251", "300", "1000", "007", NULL } },
    { "{\"type\": \"integer\", \"minimum\": 1000}",
      { "1000", "12345", "9999999999999999", NULL },
      { "999", "0", "-1000", NULL } },
    /* zod's formats: a pattern beside the format, the pattern written
     * (a version digit of 0 and the 29th of February of 2023 pass the
     * format's own grammar, not the pattern) */
    { "{\"type\": \"string\", \"format\": \"uuid\", \"pattern\": \"^([0"
      "-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA"
      "-F]{3}-[0-9a-fA-F]{12}|00000000-0000-0000-0000-000000000000|ffff"
      "ffff-ffff-ffff-ffff-ffffffffffff)$\"}",
      { "\"123e4567-e89b-42d3-a456-426614174000\"",
        "\"00000000-0000-0000-0000-000000000000\"", NULL },
      { "\"123e4567-e89b-02d3-a456-426614174000\"",
        "\"123e4567-e89b-42d3-7456-426614174000\"", NULL } },
    { "{\"type\": \"string\", \"format\": \"date\", \"pattern\": \"^(?:"
      "(?:\\\\d\\\\d[2468][048]|\\\\d\\\\d[13579][26]|\\\\d\\\\d0[48]|["
      "02468][048]00|[13579][26]00)-02-29|\\\\d{4}-(?:(?:0[13578]|1[02]"
      ")-(?:0[1-9]|[12]\\\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\\\d|3"
      "0)|(?:02)-(?:0[1-9]|1\\\\d|2[0-8])))$\"}",
      { "\"2024-02-29\"", "\"2023-12-31\"", "\"2000-02-29\"", NULL },
      { "\"2023-02-29\"", "\"2023-04-31\"", "\"1900-02-29\"", NULL } },
    /* numbers within integer bounds: zod's min(0).max(1), positive(),
     * negative ranges, one side only */
    { "{\"type\": \"number\", \"minimum\": 0, \"maximum\": 1}",
      { "0", "1", "0.5", "0.999", "0.0625", NULL },
      { "1.5", "-0.5", "2", "1.01", "-1", "0.50", NULL } },
    { "{\"type\": \"number\", \"exclusiveMinimum\": 0}",
      { "0.5", "3", "12.25", "9999999999999999", NULL },
      { "0", "-1", "-0.5", "0.0", NULL } },
    { "{\"type\": \"number\", \"minimum\": -2, \"exclusiveMaximum\": 0}",
      { "-2", "-1", "-1.5", "-0.25", "-0.5", NULL },
      { "0", "0.5", "-2.5", "-3", "-2.01", NULL } },
    { "{\"type\": \"number\", \"maximum\": 10}",
      { "10", "-3", "9.5", "-100.25", "0", NULL },
      { "10.5", "11", "100", NULL } },
    { "{\"type\": \"number\", \"minimum\": 5, \"maximum\": 5}",
      { "5", NULL }, { "5.5", "4.5", "4", "6", NULL } },
    { "{\"type\": \"number\", \"exclusiveMinimum\": -1, "
      "\"exclusiveMaximum\": 1}",
      { "0", "0.5", "-0.5", "-0.125", NULL },
      { "1", "-1", "1.5", "-1.5", NULL } },
    /* zod's integers: JavaScript's safe range, as LangChain sends it */
    { "{\"type\": \"integer\", \"minimum\": -9007199254740991, "
      "\"maximum\": 9007199254740991}",
      { "0", "42", "-9007199254740991", "9007199254740991",
        "-999999999999999", NULL },
      { "9007199254740992", "-9007199254740992", "9999999999999999",
        "10000000000000000", "1.5", NULL } },
    /* beyond 16 digits: no bound on what the rule writes */
    { "{\"type\": \"integer\", \"maximum\": 1e20, "
      "\"exclusiveMinimum\": -1e30}",
      { "9999999999999999", "-9999999999999999", "0", NULL },
      { "10000000000000000", NULL } },
    { "{\"type\": \"integer\", \"exclusiveMaximum\": 0, "
      "\"exclusiveMinimum\": -100}",
      { "-1", "-99", NULL }, { "0", "5", "-100", NULL } },
    { "{\"type\": \"string\", "
      "\"pattern\": \"^[A-Z]{2}-\\\\d{3,4}(x|y\\\"z)?$\"}",
      { "\"AB-123\"", "\"ZZ-0000x\"", "\"QQ-999y\\\"z\"", NULL },
      { "\"ab-123\"", "\"AB-12\"", "\"AB-12345\"", "\"xAB-123\"",
        "\"AB-123yz\"", NULL } },
    { "{\"type\": \"string\", \"pattern\": \"(?:ab|c)+\\\\.[^a-z]\"}",
      { "\"ab.X\"", "\"--cab.1--\"", "\"c.é\"", NULL },
      { "\"ab.x\"", "\"a.X\"", "\"abX\"", NULL } },
    { "{\"type\": \"number\", \"minimum\": 0}",
      { "0", "0.5", "3e-2", NULL }, { "-0.5", NULL } },
    { "{\"$defs\": {\"node\": {\"type\": \"object\", \"properties\": "
      "{\"v\": {\"type\": \"integer\"}, \"next\": {\"anyOf\": [{\"$ref\": "
      "\"#/$defs/node\"}, {\"type\": \"null\"}]}}, \"required\": [\"v\", "
      "\"next\"], \"additionalProperties\": false}}, \"$ref\": "
      "\"#/$defs/node\"}",
      { "{\"v\": 1, \"next\": null}",
        "{\"v\": 1, \"next\": {\"v\": 2, \"next\": null}}", NULL },
      { "{\"v\": 1}", "{\"v\": 1, \"next\": {\"v\": 2}}", NULL } },
    { "{\"definitions\": {\"t\": {\"type\": \"array\", \"items\": "
      "{\"$ref\": \"#\"}}}, \"anyOf\": [{\"$ref\": \"#/definitions/t\"}, "
      "{\"type\": \"integer\"}]}",
      { "[[1], 2, []]", "3", NULL }, { "[[1], \"a\"]", NULL } },
    { "{\"type\": \"object\", \"additionalProperties\": {\"type\": "
      "\"integer\"}}",
      { "{}", "{\"a\": 1, \"b\": 2}", NULL }, { "{\"a\": \"x\"}", NULL } },
    { "{\"type\": \"object\", \"properties\": {\"id\": {\"type\": "
      "\"string\", \"description\": \"an id\", \"title\": \"Id\"}}, "
      "\"required\": [\"id\"], \"$schema\": \"x\", \"strict\": true}",
      { "{\"id\": \"7\"}", NULL }, { "{}", NULL } },
};


typedef struct {
    const char  *schema;
    const char  *keyword;
} fg_test_refused_t;


static const fg_test_refused_t  fg_test_refused[] = {
    { "{\"type\": \"string\", \"pattern\": \"^(a)\\\\1$\"}",
      "\"pattern\" with a back-reference" },
    { "{\"type\": \"string\", \"pattern\": \"a(?!b)\"}",
      "\"pattern\" with lookaround" },
    { "{\"type\": \"string\", \"pattern\": \"a*?\"}",
      "\"pattern\" with a lazy" },
    { "{\"type\": \"string\", \"pattern\": \"a^b\"}",
      "\"pattern\" with an anchor" },
    { "{\"type\": \"string\", \"pattern\": \"[\\\"]\"}",
      "\"pattern\" with a class holding a quote" },
    { "{\"type\": \"string\", \"pattern\": \"a\", \"maxLength\": 3}",
      "\"pattern\" with minLength" },
    { "{\"allOf\": [{\"type\": \"string\"}]}", "\"allOf\"" },
    { "{\"not\": {\"type\": \"string\"}}", "\"not\"" },
    { "{\"type\": \"number\", \"maximum\": 0.5}",
      "\"maximum\" is supported for numbers as an integer only" },
    { "{\"type\": \"number\", \"minimum\": 2, \"maximum\": 1}",
      "\"maximum\" leaves no number" },
    { "{\"type\": \"number\", \"exclusiveMinimum\": 1, "
      "\"exclusiveMaximum\": 1}", "\"exclusiveMaximum\" leaves no number" },
    { "{\"type\": \"integer\", \"minimum\": 1e20}",
      "\"minimum\" leaves no integer of 16 digits" },
    { "{\"type\": \"integer\", \"exclusiveMinimum\": 9999999999999999}",
      "\"exclusiveMinimum\" leaves no integer" },
    { "{\"type\": \"integer\", \"maximum\": -10000000000000000}",
      "\"maximum\" leaves no integer" },
    { "{\"type\": \"integer\", \"minimum\": 3, \"exclusiveMaximum\": 3}",
      "\"exclusiveMaximum\"" },
    { "{\"type\": \"number\", \"multipleOf\": 2}", "\"multipleOf\"" },
    { "{\"type\": \"string\", \"format\": \"ipv4\"}", "\"format\"" },
    { "{\"type\": \"array\", \"prefixItems\": [{}]}", "\"prefixItems\"" },
    { "{\"type\": \"array\", \"uniqueItems\": true}", "\"uniqueItems\"" },
    { "{\"type\": \"object\", \"properties\": {\"a\": {}}, "
      "\"additionalProperties\": true}", "\"additionalProperties\"" },
    { "{\"type\": \"object\", \"properties\": {\"a\": {}}, "
      "\"required\": [\"b\"]}", "\"required\"" },
    { "{\"$ref\": \"http://x/y.json\"}", "\"$ref\"" },
    { "{\"$ref\": \"#/$defs/none\"}", "\"$ref\"" },
    { "{\"type\": \"string\", \"maxLength\": 5000}", "\"maxLength\"" },
    { "{\"type\": \"array\", \"minItems\": 3, \"maxItems\": 2}",
      "\"maxItems\"" },
    { "{\"type\": \"date\"}", "\"type\"" },
    { "{\"type\": \"object\", \"properties\": {\"a\": {\"type\": "
      "\"object\", \"properties\": {\"b\": {\"if\": {}}}}}}",
      "\"if\" is not supported (at #/properties/a/properties/b)" },
    { "{\"$defs\": {\"a\": {\"$ref\": \"#/$defs/a\"}}, \"$ref\": "
      "\"#/$defs/a\"}", "left-recursive" },
};


static void
fg_test_schemas_run(const fg_gram_vocab_t *v)
{
    char               err[256];
    size_t             i, k;
    json_t            *schema;
    fg_gram_t         *g;
    json_error_t       jerr;
    const char        *text;

    for (i = 0; i < sizeof(fg_test_schemas) / sizeof(fg_test_schemas[0]);
         i++)
    {
        text = fg_test_schemas[i].schema;
        schema = text ? json_loads(text, 0, &jerr) : NULL;
        err[0] = '\0';
        g = text && schema == NULL ? NULL
            : fg_gram_from_schema(schema, err, sizeof(err));

        if (!ok(g != NULL, "schema %zu compiles", i)) {
            diag("%s", err);
            json_decref(schema);
            continue;
        }

        for (k = 0; fg_test_schemas[i].yes[k]; k++) {
            ok(fg_test_gram_takes(g, v, fg_test_schemas[i].yes[k]),
               "schema %zu takes %s", i,
               fg_test_gram_show(fg_test_schemas[i].yes[k]));
        }

        for (k = 0; fg_test_schemas[i].no[k]; k++) {
            ok(!fg_test_gram_takes(g, v, fg_test_schemas[i].no[k]),
               "schema %zu refuses %s", i,
               fg_test_gram_show(fg_test_schemas[i].no[k]));
        }

        fg_gram_free(g);
        json_decref(schema);
    }
}


static void
fg_test_refused_run(void)
{
    char           err[256];
    size_t         i;
    json_t        *schema;
    fg_gram_t     *g;
    json_error_t   jerr;

    for (i = 0; i < sizeof(fg_test_refused) / sizeof(fg_test_refused[0]);
         i++)
    {
        schema = json_loads(fg_test_refused[i].schema, 0, &jerr);
        err[0] = '\0';
        g = schema ? fg_gram_from_schema(schema, err, sizeof(err)) : NULL;
        ok(schema != NULL && g == NULL, "schema refused: %s",
           fg_test_gram_show(fg_test_refused[i].schema));

        if (!ok(strstr(err, fg_test_refused[i].keyword) != NULL,
                "the error names %s", fg_test_refused[i].keyword))
        {
            diag("got: %s", err);
        }

        fg_gram_free(g);
        json_decref(schema);
    }
}


int
main(void)
{
    uint32_t          eog;
    fg_gram_vocab_t  *v;

    v = fg_test_gram_vocab(&eog);

    if (!ok(v != NULL, "the synthetic vocabulary")) {
        return done_testing();
    }

    fg_test_schemas_run(v);
    fg_test_refused_run();

    fg_gram_vocab_free(v);

    return done_testing();
}
