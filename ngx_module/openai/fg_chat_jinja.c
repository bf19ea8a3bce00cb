
/*
 * fairgate: a model's own chat template (its GGUF file's
 * tokenizer.chat_template), rendered by the Jinja renderer with the
 * variables Hugging Face's apply_chat_template gives it, and the
 * rendered prompt encoded so that only the template's own text can hold
 * control tokens.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_chat_template.h"


int
fg_chat_jinja_load(fg_chat_template_t *t, const char *text, size_t len,
    char *err, size_t errlen)
{
    fg_jinja_err_t  jerr;

    fg_jinja_limits_init(&t->limits);

    t->jinja = fg_jinja_parse(text, len, &jerr);

    if (t->jinja == NULL) {
        snprintf(err, errlen, "line %u, column %u: %s", jerr.line,
                 jerr.column, jerr.message);
        return -1;
    }

    return 0;
}


void
fg_chat_template_free(fg_chat_template_t *t)
{
    fg_jinja_free(t->jinja);
    t->jinja = NULL;
}


/*
 * A call's arguments as the templates take them: Llama 3.1's and
 * Mistral's write them with tojson, so an object, as vLLM and llama.cpp
 * give them; text that is no JSON object stays the string it is.
 */
static json_t *
fg_chat_jinja_arguments(const fg_oai_str_t *args)
{
    json_t  *v;

    v = json_loadb(args->data, args->len, JSON_DECODE_ANY, NULL);

    if (json_is_object(v)) {
        return v;
    }

    json_decref(v);

    return json_stringn(args->data, args->len);
}


/* an assistant's calls: [{id, type, function: {name, arguments}}] */
static json_t *
fg_chat_jinja_calls(const fg_oai_message_t *m)
{
    size_t                     j;
    json_t                    *arr, *c;
    const fg_oai_tool_call_t  *tc;

    arr = json_array();

    for (j = 0; arr && j < m->n_tool_calls; j++) {
        tc = &m->tool_calls[j];

        c = json_pack("{s:s%,s:s,s:{s:s%,s:o}}",
                      "id", tc->id.data, tc->id.len, "type", "function",
                      "function", "name", tc->name.data, tc->name.len,
                      "arguments", fg_chat_jinja_arguments(&tc->arguments));

        if (c == NULL || json_array_append_new(arr, c) != 0) {
            json_decref(arr);
            return NULL;
        }
    }

    return arr;
}


/*
 * {role, content}, with an assistant's tool_calls or a tool_call_id.  A
 * content null (an assistant's calls alone) is given as "", as vLLM
 * gives it: Qwen 3's and Llama 3.1's templates fail on a null content,
 * in Python's Jinja as in @huggingface/jinja.
 */
static json_t *
fg_chat_jinja_message(const fg_oai_message_t *m)
{
    json_t  *o, *x;

    o = json_pack("{s:s,s:s%}", "role", fg_oai_role_name(m->role),
                  "content", m->content.data, m->content.len);

    if (o == NULL) {
        return NULL;
    }

    if (m->n_tool_calls) {
        x = fg_chat_jinja_calls(m);

        if (x == NULL || json_object_set_new(o, "tool_calls", x) != 0) {
            goto failed;
        }
    }

    if (m->role == FG_OAI_TOOL) {
        x = json_stringn(m->tool_call_id.data, m->tool_call_id.len);

        if (x == NULL || json_object_set_new(o, "tool_call_id", x) != 0) {
            goto failed;
        }
    }

    return o;

failed:

    json_decref(o);

    return NULL;
}


static json_t *
fg_chat_jinja_messages(const fg_oai_message_t *msgs, size_t n)
{
    size_t   i;
    json_t  *arr, *m;

    arr = json_array();
    if (arr == NULL) {
        return NULL;
    }

    for (i = 0; i < n; i++) {
        m = fg_chat_jinja_message(&msgs[i]);

        if (m == NULL || json_array_append_new(arr, m) != 0) {
            json_decref(arr);
            return NULL;
        }
    }

    return arr;
}


/* the request's variables: messages, and tools unless it has none */
static json_t *
fg_chat_jinja_user(const fg_oai_message_t *msgs, size_t n,
    const fg_oai_str_t *tools)
{
    json_t  *user, *m, *t;

    m = fg_chat_jinja_messages(msgs, n);
    user = m ? json_pack("{s:o}", "messages", m) : NULL;

    if (user == NULL || tools == NULL || tools->data == NULL) {
        return user;
    }

    t = json_loadb(tools->data, tools->len, 0, NULL);

    if (t == NULL || json_object_set_new(user, "tools", t) != 0) {
        json_decref(user);
        return NULL;
    }

    return user;
}


int
fg_chat_jinja_apply(const fg_chat_template_t *t,
    const fg_oai_message_t *msgs, size_t n, fg_jinja_out_t *out,
    fg_oai_error_t *err)
{
    return fg_chat_jinja_render(t, msgs, n, NULL, out, err);
}


int
fg_chat_jinja_render(const fg_chat_template_t *t,
    const fg_oai_message_t *msgs, size_t n, const fg_oai_str_t *tools,
    fg_jinja_out_t *out, fg_oai_error_t *err)
{
    int             rc;
    json_t         *trusted, *user;
    fg_jinja_err_t  jerr;

    user = fg_chat_jinja_user(msgs, n, tools);
    trusted = json_pack("{s:s,s:s,s:b}", "bos_token", t->bos,
                        "eos_token", t->eos, "add_generation_prompt", 1);

    if (user == NULL || trusted == NULL) {
        json_decref(user);
        json_decref(trusted);
        fg_oai_error_set(err, 500, NULL, NULL, "out of memory");
        return -1;
    }

    rc = fg_jinja_render(t->jinja, trusted, user, &t->limits, out, &jerr);

    json_decref(user);
    json_decref(trusted);

    if (rc == 0) {
        return 0;
    }

    if (jerr.rc == FG_JINJA_ERAISED) {
        fg_oai_error_set(err, 400, "invalid_value", "messages",
                         "Invalid 'messages': this model's chat template "
                         "refused the conversation: %s", jerr.message);
        return -1;
    }

    if (jerr.rc == FG_JINJA_ENOMEM) {
        fg_oai_error_set(err, 500, NULL, NULL, "out of memory");
        return -1;
    }

    /* the template's own failure, not the conversation's: the caller may
     * write the family's format instead */
    fg_oai_error_set(err, 500, NULL, NULL,
                     "the chat template failed at line %u, column %u: %s",
                     jerr.line, jerr.column, jerr.message);

    return 1;
}


/*
 * The template's segments with their control tokens, the messages' as
 * plain text, encoded as one text (fg_tokenizer_encode_segs()): the
 * reference's tokens, without a message able to forge a turn.
 */
ssize_t
fg_chat_encode(const fg_chat_template_t *t, const fg_tokenizer_t *tok,
    const fg_jinja_out_t *out, int32_t *ids, size_t max)
{
    int            bos;
    size_t         i;
    ssize_t        n;
    fg_tok_seg_t  *segs;

    bos = !(out->n_segs && !out->segs[0].user && t->bos[0]
            && strncmp(out->text, t->bos, strlen(t->bos)) == 0);
    bos = bos ? (fg_tokenizer_add_bos(tok) ? FG_TOK_BOS : FG_TOK_NO_BOS)
              : FG_TOK_NO_BOS;

    segs = malloc((out->n_segs ? out->n_segs : 1) * sizeof(fg_tok_seg_t));
    if (segs == NULL) {
        return -1;
    }

    for (i = 0; i < out->n_segs; i++) {
        segs[i].text = out->segs[i].data;
        segs[i].len = out->segs[i].len;
        segs[i].special = !out->segs[i].user;
    }

    n = fg_tokenizer_encode_segs(tok, segs, out->n_segs, bos, ids, max);

    free(segs);

    return n;
}
