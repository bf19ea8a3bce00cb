
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

    free(t->ctl);
    t->ctl = NULL;
    t->n_ctl = 0;
}


static int
fg_chat_is_control(const fg_tokenizer_t *tok, int32_t id)
{
    int  type;

    type = fg_tokenizer_type(tok, id);

    return type == FG_TOK_CONTROL || type == FG_TOK_USER_DEFINED;
}


/* the control tokens' ids, once at load: a message is looked through
 * for their texts rather than encoded twice */
void
fg_chat_jinja_controls(fg_chat_template_t *t, const fg_tokenizer_t *tok)
{
    size_t       len, n;
    int32_t      id, n_vocab;
    const char  *text;

    n_vocab = (int32_t) fg_tokenizer_n_vocab(tok);
    n = 0;

    for (id = 0; id < n_vocab; id++) {
        n += fg_chat_is_control(tok, id);
    }

    t->ctl = malloc((n ? n : 1) * sizeof(int32_t));
    if (t->ctl == NULL) {
        return;
    }

    memset(t->ctl_first, 0, sizeof(t->ctl_first));
    t->n_ctl = 0;

    for (id = 0; id < n_vocab; id++) {
        text = fg_tokenizer_text(tok, id, &len);

        if (fg_chat_is_control(tok, id) && text && len) {
            t->ctl[t->n_ctl++] = id;
            t->ctl_first[(uint8_t) text[0] / 8] |= 1 << ((uint8_t) text[0] % 8);
        }
    }
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


/* whether a message's text spells a control token: at each byte one
 * starts with, each one's text */
static int
fg_chat_spells(const fg_chat_template_t *t, const fg_tokenizer_t *tok,
    const fg_jinja_seg_t *seg)
{
    size_t          i, k, len;
    const char     *text;
    const uint8_t  *p;

    p = (const uint8_t *) seg->data;

    for (i = 0; i < seg->len; i++) {
        if (!(t->ctl_first[p[i] / 8] & (1 << (p[i] % 8)))) {
            continue;
        }

        for (k = 0; k < t->n_ctl; k++) {
            text = fg_tokenizer_text(tok, t->ctl[k], &len);

            if (len <= seg->len - i && memcmp(p + i, text, len) == 0) {
                return 1;
            }
        }
    }

    return 0;
}


/* the same by encoding it, when the control tokens are not known */
static int
fg_chat_forged(const fg_tokenizer_t *tok, const fg_jinja_seg_t *seg)
{
    int       type, forged;
    size_t    i;
    ssize_t   n;
    int32_t  *ids;

    n = fg_tokenizer_encode(tok, seg->data, seg->len,
                            FG_TOK_SPECIAL | FG_TOK_NO_BOS, NULL, 0);
    if (n <= 0) {
        return n < 0 ? -1 : 0;
    }

    ids = malloc(n * sizeof(int32_t));
    if (ids == NULL) {
        return -1;
    }

    fg_tokenizer_encode(tok, seg->data, seg->len,
                        FG_TOK_SPECIAL | FG_TOK_NO_BOS, ids, n);
    forged = 0;

    for (i = 0; i < (size_t) n && !forged; i++) {
        type = fg_tokenizer_type(tok, ids[i]);
        forged = type == FG_TOK_CONTROL || type == FG_TOK_USER_DEFINED;
    }

    free(ids);

    return forged;
}


/*
 * Until the tokenizer encodes segments itself: the whole text with
 * control tokens when no message holds one (the tokens of one text, as
 * the reference's); else segment by segment, the messages' as plain
 * text, which keeps them text at the cost of the joins' tokens.
 */
ssize_t
fg_chat_encode(const fg_chat_template_t *t, const fg_tokenizer_t *tok,
    const fg_jinja_out_t *out, int32_t *ids, size_t max)
{
    int        bos, forged;
    size_t     i, total;
    ssize_t    n;

    bos = !(out->n_segs && !out->segs[0].user && t->bos[0]
            && strncmp(out->text, t->bos, strlen(t->bos)) == 0);
    bos = bos ? (fg_tokenizer_add_bos(tok) ? FG_TOK_BOS : FG_TOK_NO_BOS)
              : FG_TOK_NO_BOS;
    forged = 0;

    for (i = 0; i < out->n_segs && !forged; i++) {
        if (out->segs[i].user) {
            forged = t->ctl ? fg_chat_spells(t, tok, &out->segs[i])
                            : fg_chat_forged(tok, &out->segs[i]);

            if (forged < 0) {
                return -1;
            }
        }
    }

    if (!forged) {
        return fg_tokenizer_encode(tok, out->text, out->len,
                                   FG_TOK_SPECIAL | bos, ids, max);
    }

    total = 0;

    for (i = 0; i < out->n_segs; i++) {
        n = fg_tokenizer_encode(tok, out->segs[i].data, out->segs[i].len,
                                (out->segs[i].user ? 0 : FG_TOK_SPECIAL)
                                | (i == 0 ? bos : FG_TOK_NO_BOS),
                                total < max ? ids + total : NULL,
                                total < max ? max - total : 0);
        if (n < 0) {
            return -1;
        }

        total += n;
    }

    return total;
}
