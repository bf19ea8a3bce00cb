
/*
 * fairgate: the C side of t/112-chat-tools-template.t: OpenAI chat
 * requests with tools, tool calls and tool results, each parsed by the
 * request parser and rendered by each template as local mode renders it
 * (fg_chat_jinja_render(), tools unless tool_choice is "none"), written
 * as {"TEMPLATE/REQUEST": {"ok": true, "text": T} or {"ok": false,
 * "error": E, "raised": R}} for the test to compare with
 * t/node/chat_tools_template.mjs's @huggingface/jinja.
 *
 *     chat_tools_render CASES.json > OUT.json
 *
 * CASES: {"templates": {NAME: {"source": S, "vars": {"bos_token": B,
 *         "eos_token": E}}}, "requests": {NAME: BODY}}
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fg_chat_template.h"


static json_t *
render(const fg_chat_template_t *t, json_t *body)
{
    int                rc;
    char              *text;
    json_t            *res;
    fg_jinja_out_t     out;
    fg_oai_error_t     err;
    fg_oai_limits_t    lim;
    fg_oai_request_t  *r;

    fg_oai_limits_init(&lim);

    text = json_dumps(body, JSON_COMPACT);
    r = fg_oai_request_parse(FG_OAI_CHAT, text, strlen(text), &lim, &err);
    free(text);

    if (r == NULL) {
        return json_pack("{s:b,s:s,s:b}", "ok", 0, "error", err.message,
                         "refused", 1);
    }

    rc = fg_chat_jinja_render(t, r->messages, r->n_messages,
                              r->tool_choice != FG_OAI_TOOLS_NONE
                              ? &r->tools : NULL, &out, &err);

    fg_oai_request_free(r);

    if (rc != 0) {
        return json_pack("{s:b,s:s,s:b}", "ok", 0, "error", err.message,
                         "raised", rc < 0 && err.status == 400);
    }

    res = json_pack("{s:b,s:s%}", "ok", 1, "text", out.text, out.len);
    fg_jinja_out_free(&out);

    return res;
}


int
main(int argc, char **argv)
{
    char                 name[512], err[256];
    json_t              *cases, *tpls, *reqs, *tpl, *req, *vars, *out;
    const char          *tname, *rname, *src;
    json_error_t         jerr;
    fg_chat_template_t   t;

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
    reqs = json_object_get(cases, "requests");
    out = json_object();

    json_object_foreach(tpls, tname, tpl) {
        src = json_string_value(json_object_get(tpl, "source"));
        vars = json_object_get(tpl, "vars");

        fg_chat_template_init(&t, src, strlen(src),
                              json_string_value(json_object_get(vars,
                                                "bos_token")),
                              json_string_value(json_object_get(vars,
                                                "eos_token")), 0);

        if (fg_chat_jinja_load(&t, src, strlen(src), err, sizeof(err))
            != 0)
        {
            fprintf(stderr, "%s: %s\n", tname, err);
            return 1;
        }

        json_object_foreach(reqs, rname, req) {
            snprintf(name, sizeof(name), "%s/%s", tname, rname);
            json_object_set_new(out, name, render(&t, req));
        }

        fg_chat_template_free(&t);
    }

    json_dumpf(out, stdout, JSON_INDENT(1) | JSON_SORT_KEYS);
    printf("\n");

    json_decref(out);
    json_decref(cases);

    return 0;
}
