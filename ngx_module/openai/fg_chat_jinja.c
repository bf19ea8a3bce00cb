
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
        m = json_pack("{s:s,s:s%}", "role", fg_oai_role_name(msgs[i].role),
                      "content", msgs[i].content.data, msgs[i].content.len);

        if (m == NULL || json_array_append_new(arr, m) != 0) {
            json_decref(arr);
            return NULL;
        }
    }

    return arr;
}


int
fg_chat_jinja_apply(const fg_chat_template_t *t,
    const fg_oai_message_t *msgs, size_t n, fg_jinja_out_t *out,
    fg_oai_error_t *err)
{
    int             rc;
    json_t         *trusted, *user, *m;
    fg_jinja_err_t  jerr;

    m = fg_chat_jinja_messages(msgs, n);
    user = m ? json_pack("{s:o}", "messages", m) : NULL;
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
