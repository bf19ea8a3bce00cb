
/*
 * fairgate: the chat-template reference test's C side (t/110): renders
 * every template of a cases file over every conversation and writes
 * {"TEMPLATE/CONVERSATION": {"ok": true, "text": T} or {"ok": false,
 * "error": E, "raised": R}} as JSON, as t/node/chat_template.mjs does with
 * @huggingface/jinja, for the test to compare; a render's "segments" too,
 * [[FROM_THE_REQUEST, TEXT], ...], which the reference has not.
 *
 *     jinja_render CASES.json > OUT.json
 *
 * CASES: {"templates": {NAME: {"source": S, "vars": {...}}},
 *         "conversations": {NAME: {...}}}; a conversation's keys are the
 * request's variables (messages, tools), a template's vars the trusted
 * ones (bos_token, eos_token, add_generation_prompt).
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fg_jinja.h"


static json_t *
render(const fg_jinja_t *t, json_t *vars, json_t *conv)
{
    size_t           i;
    json_t          *r, *segs;
    fg_jinja_err_t   err;
    fg_jinja_out_t   out;

    if (fg_jinja_render(t, vars, conv, NULL, &out, &err) != 0) {
        return json_pack("{s:b,s:s,s:b}", "ok", 0, "error", err.message,
                         "raised", err.rc == FG_JINJA_ERAISED);
    }

    r = json_pack("{s:b,s:s%}", "ok", 1, "text", out.text, out.len);
    segs = json_array();

    for (i = 0; i < out.n_segs; i++) {
        json_array_append_new(segs, json_pack("[b,s%]", out.segs[i].user,
                                              out.segs[i].data,
                                              out.segs[i].len));
    }

    json_object_set_new(r, "segments", segs);

    fg_jinja_out_free(&out);

    return r;
}


int
main(int argc, char **argv)
{
    char             name[512];
    json_t          *cases, *tpls, *convs, *tpl, *conv, *out;
    fg_jinja_t      *t;
    const char      *tname, *cname, *src;
    json_error_t     jerr;
    fg_jinja_err_t   err;

    if (argc != 2) {
        fprintf(stderr, "usage: %s CASES.json\n", argv[0]);
        return 2;
    }

    cases = json_load_file(argv[1], 0, &jerr);
    if (cases == NULL) {
        fprintf(stderr, "%s: %s\n", argv[1], jerr.text);
        return 2;
    }

    tpls = json_object_get(cases, "templates");
    convs = json_object_get(cases, "conversations");
    out = json_object();

    json_object_foreach(tpls, tname, tpl) {
        src = json_string_value(json_object_get(tpl, "source"));
        t = fg_jinja_parse(src, strlen(src), &err);

        json_object_foreach(convs, cname, conv) {
            snprintf(name, sizeof(name), "%s/%s", tname, cname);

            json_object_set_new(out, name,
                t ? render(t, json_object_get(tpl, "vars"), conv)
                  : json_pack("{s:b,s:s}", "ok", 0, "error", err.message));
        }

        fg_jinja_free(t);
    }

    json_dumpf(out, stdout, JSON_INDENT(1) | JSON_SORT_KEYS);
    printf("\n");

    json_decref(out);
    json_decref(cases);

    return 0;
}
