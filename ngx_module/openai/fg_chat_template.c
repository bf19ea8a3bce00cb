
/*
 * fairgate: chat templates written by hand, one function per family.
 *
 * Each family's output is what its reference template (Hugging Face's
 * tokenizer_config.json, as copied into GGUF files) renders with
 * add_generation_prompt, minus the BOS at the very start, which the
 * tokenizer adds.  Where a reference template raises an error (roles that
 * do not alternate, a system role it has no place for) the request is
 * refused with a 400 naming the message, rather than sent on in a shape
 * the model was not trained on.
 */


#ifndef _GNU_SOURCE
#define _GNU_SOURCE                 /* memmem */
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_chat_template.h"


typedef struct {
    char          *data;
    size_t         len;
    size_t         size;

    /* the template's text and the clients' (NULL: not kept) */
    fg_tok_seg_t  *segs;
    size_t         n_segs;
    size_t         max_segs;
} fg_chat_buf_t;


static const char  *fg_chat_names[] = {
    "fallback", "llama2", "llama3", "chatml", "mistral", "gemma", "phi3"
};


const char *
fg_chat_family_name(fg_chat_family_e family)
{
    if ((size_t) family < sizeof(fg_chat_names) / sizeof(fg_chat_names[0]))
    {
        return fg_chat_names[family];
    }

    return "unknown";
}


static int
fg_chat_has(const char *text, size_t len, const char *marker)
{
    return memmem(text, len, marker, strlen(marker)) != NULL;
}


static void
fg_chat_set_token(char *dst, const char *src, const char *dflt)
{
    if (src == NULL) {
        src = dflt;
    }

    /* a token text too long to be BOS or EOS is not written */
    if (strlen(src) >= FG_CHAT_TOKEN_LEN) {
        src = "";
    }

    strcpy(dst, src);
}


/*
 * Qwen 2's ChatML template writes its own system message when the
 * conversation has none: a string literal '<|im_start|>system\nTEXT
 * <|im_end|>\n' in the template's source, where "\n" is written as the
 * two characters of the escape or as a newline.  TEXT is taken when it is
 * plain text (no quote, brace or '+': not an expression).
 */
static void
fg_chat_default_system(fg_chat_template_t *t, const char *text, size_t len)
{
    char        *d;
    size_t       mlen;
    const char  *p, *end, *s, *e;

    static const char  marker[] = "<|im_start|>system";
    static const char  close[] = "<|im_end|>";

    mlen = sizeof(marker) - 1;
    p = text;
    end = text + len;

    while ((p = memmem(p, end - p, marker, mlen)) != NULL) {
        s = p + mlen;
        p = s;

        if (end - s >= 2 && s[0] == '\\' && s[1] == 'n') {
            s += 2;

        } else if (s < end && s[0] == '\n') {
            s++;

        } else {
            continue;
        }

        e = memmem(s, end - s, close, sizeof(close) - 1);

        if (e == NULL || e == s
            || (size_t) (e - s) >= FG_CHAT_SYSTEM_LEN
            || memchr(s, '\'', e - s) || memchr(s, '"', e - s)
            || memchr(s, '{', e - s) || memchr(s, '}', e - s)
            || memchr(s, '+', e - s))
        {
            continue;
        }

        d = t->default_system;

        while (s < e) {
            if (*s == '\\' && s + 1 < e) {
                switch (s[1]) {
                case 'n':
                    *d++ = '\n';
                    s += 2;
                    continue;
                case 't':
                    *d++ = '\t';
                    s += 2;
                    continue;
                case '\\':
                    *d++ = '\\';
                    s += 2;
                    continue;
                }
            }

            *d++ = *s++;
        }

        *d = '\0';
        t->default_system_len = d - t->default_system;

        return;
    }
}


void
fg_chat_template_init(fg_chat_template_t *t, const char *text, size_t len,
    const char *bos, const char *eos, int tok_add_bos)
{
    memset(t, 0, sizeof(fg_chat_template_t));

    fg_chat_set_token(t->bos, bos, "<s>");
    fg_chat_set_token(t->eos, eos, "</s>");

    t->family = FG_CHAT_FALLBACK;
    t->add_bos = tok_add_bos ? 1 : 0;

    if (text == NULL) {
        return;
    }

    t->has_template = 1;
    t->recognised = 1;

    /* the order matters only for templates that mix markers; each of
     * these is specific to its family */
    if (fg_chat_has(text, len, "<|start_header_id|>")) {
        t->family = FG_CHAT_LLAMA3;

    } else if (fg_chat_has(text, len, "<|im_start|>")) {
        t->family = FG_CHAT_CHATML;
        fg_chat_default_system(t, text, len);

    } else if (fg_chat_has(text, len, "<start_of_turn>")) {
        t->family = FG_CHAT_GEMMA;

    } else if (fg_chat_has(text, len, "<|user|>")
               && fg_chat_has(text, len, "<|end|>"))
    {
        /* Zephyr also writes <|user|>, but ends turns with EOS: not
         * Phi-3's format */
        t->family = FG_CHAT_PHI3;

    } else if (fg_chat_has(text, len, "[INST]")) {
        t->family = fg_chat_has(text, len, "<<SYS>>") ? FG_CHAT_LLAMA2
                                                      : FG_CHAT_MISTRAL;

    } else {
        t->recognised = 0;
        return;
    }

    /* a template writes BOS itself when it needs one; the text we write
     * leaves it to the tokenizer, which then adds exactly one */
    t->add_bos = fg_chat_has(text, len, "bos_token")
                 || (t->bos[0] && fg_chat_has(text, len, t->bos));
}


int
fg_chat_template_from_model(fg_chat_template_t *t, const fg_gguf_t *g,
    const fg_tokenizer_t *tok, char *err, size_t errlen)
{
    int            rc;
    char           bos[FG_CHAT_TOKEN_LEN], eos[FG_CHAT_TOKEN_LEN];
    size_t         len;
    const char    *s;
    fg_gguf_str_t  tpl;

    bos[0] = eos[0] = '\0';

    s = fg_tokenizer_text(tok, fg_tokenizer_bos(tok), &len);

    if (s && len < sizeof(bos)) {
        memcpy(bos, s, len);
        bos[len] = '\0';
    }

    s = fg_tokenizer_text(tok, fg_tokenizer_eos(tok), &len);

    if (s && len < sizeof(eos)) {
        memcpy(eos, s, len);
        eos[len] = '\0';
    }

    rc = fg_gguf_get_str(g, "tokenizer.chat_template", &tpl, err, errlen);

    if (rc < 0) {
        return -1;
    }

    fg_chat_template_init(t, rc == 0 ? tpl.data : NULL,
                          rc == 0 ? tpl.len : 0, bos, eos,
                          fg_tokenizer_add_bos(tok));

    /* the model's own template when it parses; else the family's format,
     * and err says why for the caller's warning */
    if (rc == 0 && fg_chat_jinja_load(t, tpl.data, tpl.len, err, errlen)
                   != 0)
    {
        return 1;
    }

    return 0;
}


int
fg_chat_template_set_family(fg_chat_template_t *t, const char *name)
{
    size_t  i;

    for (i = 0; i < sizeof(fg_chat_names) / sizeof(fg_chat_names[0]); i++) {
        if (strcmp(name, fg_chat_names[i]) != 0) {
            continue;
        }

        t->family = (fg_chat_family_e) i;
        t->recognised = 1;

        switch (t->family) {
        case FG_CHAT_LLAMA2:
        case FG_CHAT_LLAMA3:
        case FG_CHAT_MISTRAL:
        case FG_CHAT_GEMMA:
            t->add_bos = 1;
            break;
        case FG_CHAT_CHATML:
        case FG_CHAT_PHI3:
            t->add_bos = 0;
            break;
        case FG_CHAT_FALLBACK:
            break;
        }

        return 0;
    }

    return -1;
}


int
fg_chat_template_tok_flags(const fg_chat_template_t *t)
{
    if (t->family == FG_CHAT_FALLBACK) {
        /* plain text: what a client writes is never a control token */
        return t->add_bos ? FG_TOK_BOS : FG_TOK_NO_BOS;
    }

    return FG_TOK_SPECIAL | (t->add_bos ? FG_TOK_BOS : FG_TOK_NO_BOS);
}


/* len bytes at the end of b as a segment: special, or a client's text */
static void
fg_chat_seg(fg_chat_buf_t *b, size_t len, int special)
{
    fg_tok_seg_t  *g;

    if (b->segs == NULL || len == 0) {
        return;
    }

    g = b->n_segs ? &b->segs[b->n_segs - 1] : NULL;

    /* the same kind goes on; out of room, the rest is text, the safe
     * side */
    if (g && (g->special == (unsigned) special || b->n_segs == b->max_segs))
    {
        g->special = g->special && special;
        g->len += len;
        return;
    }

    g = &b->segs[b->n_segs++];
    g->text = b->data + b->len;
    g->len = len;
    g->special = special != 0;
}


static void
fg_chat_put(fg_chat_buf_t *b, const char *s, size_t len, int special)
{
    /* the size was computed as a bound; never write past it */
    if (len > b->size - b->len) {
        len = b->size - b->len;
    }

    fg_chat_seg(b, len, special);
    memcpy(b->data + b->len, s, len);
    b->len += len;
}


/* the template's own text: its control tokens are tokens */
static void
fg_chat_add(fg_chat_buf_t *b, const char *s, size_t len)
{
    fg_chat_put(b, s, len, 1);
}


/* a client's text: never a control token */
static void
fg_chat_text(fg_chat_buf_t *b, const char *s, size_t len)
{
    fg_chat_put(b, s, len, 0);
}


static void
fg_chat_add_str(fg_chat_buf_t *b, const char *s)
{
    fg_chat_add(b, s, strlen(s));
}


static int
fg_chat_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v'
           || c == '\f';
}


static fg_oai_str_t
fg_chat_rtrim(fg_oai_str_t s)
{
    while (s.len && fg_chat_space(s.data[s.len - 1])) {
        s.len--;
    }

    return s;
}


/* Python's str.strip() and Jinja's trim, on ASCII white space */
static fg_oai_str_t
fg_chat_trim(fg_oai_str_t s)
{
    while (s.len && fg_chat_space(s.data[0])) {
        s.data++;
        s.len--;
    }

    return fg_chat_rtrim(s);
}


static int
fg_chat_is_system(const fg_oai_message_t *m)
{
    return m->role == FG_OAI_SYSTEM || m->role == FG_OAI_DEVELOPER;
}


static const char *
fg_chat_role(const fg_oai_message_t *m)
{
    return fg_chat_is_system(m) ? "system" : fg_oai_role_name(m->role);
}


/*
 * The families that mark each message with its role (Llama 3, ChatML,
 * Phi-3: fg_chat_template_apply() gives their marks): open, the role,
 * head, the text (trimmed for Llama 3), end; then the assistant's turn
 * opened the same way.
 */
static void
fg_chat_marked(fg_chat_buf_t *b, const fg_oai_message_t *msgs, size_t n,
    const char *open, const char *head, const char *end, int trim)
{
    size_t        i;
    fg_oai_str_t  c;

    for (i = 0; i < n; i++) {
        c = trim ? fg_chat_trim(msgs[i].content) : msgs[i].content;

        fg_chat_add_str(b, open);
        fg_chat_add_str(b, fg_chat_role(&msgs[i]));
        fg_chat_add_str(b, head);
        fg_chat_text(b, c.data, c.len);
        fg_chat_add_str(b, end);
    }

    fg_chat_add_str(b, open);
    fg_chat_add_str(b, "assistant");
    fg_chat_add_str(b, head);
}


static void
fg_chat_chatml(const fg_chat_template_t *t, fg_chat_buf_t *b,
    const fg_oai_message_t *msgs, size_t n)
{
    if (t->default_system_len && !fg_chat_is_system(&msgs[0])) {
        fg_chat_add_str(b, "<|im_start|>system\n");
        fg_chat_add(b, t->default_system, t->default_system_len);
        fg_chat_add_str(b, "<|im_end|>\n");
    }

    fg_chat_marked(b, msgs, n, "<|im_start|>", "\n", "<|im_end|>\n", 0);
}


/*
 * The families with one place for a system prompt (Llama 2, Mistral,
 * Gemma): the system messages at the start, joined with "\n\n", then
 * user and assistant alternating, a user first.  Returns the index of the
 * first turn, or -1 with err naming the message that breaks the shape.
 */
static ssize_t
fg_chat_turns(const fg_chat_template_t *t, const fg_oai_message_t *msgs,
    size_t n, fg_chat_buf_t *sys, fg_oai_error_t *err)
{
    char    param[48];
    size_t  i, first;

    for (i = 0; i < n && fg_chat_is_system(&msgs[i]); i++) {
        if (i) {
            fg_chat_add_str(sys, "\n\n");
        }

        fg_chat_add(sys, msgs[i].content.data, msgs[i].content.len);
    }

    first = i;

    if (first == n) {
        fg_oai_error_set(err, 400, "invalid_value", "messages",
                         "Invalid 'messages': the conversation has no user "
                         "message; this model's chat template (%s) needs "
                         "one.", fg_chat_family_name(t->family));
        return -1;
    }

    for (i = first; i < n; i++) {
        snprintf(param, sizeof(param), "messages[%zu].role", i);

        if (fg_chat_is_system(&msgs[i])) {
            fg_oai_error_set(err, 400, "invalid_value", param,
                             "Invalid '%s': this model's chat template (%s) "
                             "takes system messages only at the start of "
                             "the conversation.", param,
                             fg_chat_family_name(t->family));
            return -1;
        }

        if ((msgs[i].role == FG_OAI_USER) != ((i - first) % 2 == 0)) {
            fg_oai_error_set(err, 400, "invalid_value", param,
                             "Invalid '%s': this model's chat template (%s) "
                             "needs user and assistant messages to "
                             "alternate after the system messages, a user "
                             "message first.", param,
                             fg_chat_family_name(t->family));
            return -1;
        }
    }

    return first;
}


/*
 * Llama 2 chat: "<s>[INST] <<SYS>>\nS\n<</SYS>>\n\nU1 [/INST] A1 </s>
 * <s>[INST] U2 [/INST]", each turn stripped; no generation prompt.
 */
static void
fg_chat_llama2(const fg_chat_template_t *t, fg_chat_buf_t *b,
    const fg_oai_message_t *msgs, size_t n, size_t first, fg_chat_buf_t *sys)
{
    size_t        i;
    fg_oai_str_t  c;

    for (i = first; i < n; i++) {
        c = msgs[i].content;

        if (i == first && first > 0) {
            /* the reference strips the system block and the first message
             * as one text: it starts with "<<SYS>>", so only the end of
             * the message is stripped, and with it the blank line when
             * nothing else is left */
            c = fg_chat_rtrim(c);

            fg_chat_add_str(b, "[INST] <<SYS>>\n");
            fg_chat_text(b, sys->data, sys->len);
            fg_chat_add_str(b, "\n<</SYS>>");

            if (c.len) {
                fg_chat_add_str(b, "\n\n");
                fg_chat_text(b, c.data, c.len);
            }

            fg_chat_add_str(b, " [/INST]");
            continue;
        }

        c = fg_chat_trim(c);

        if (msgs[i].role == FG_OAI_USER) {
            if (i > first) {
                fg_chat_add_str(b, t->bos);
            }

            fg_chat_add_str(b, "[INST] ");
            fg_chat_text(b, c.data, c.len);
            fg_chat_add_str(b, " [/INST]");

        } else {
            fg_chat_add_str(b, " ");
            fg_chat_text(b, c.data, c.len);
            fg_chat_add_str(b, " ");
            fg_chat_add_str(b, t->eos);
        }
    }
}


/*
 * Mistral Instruct v0.1/v0.2: "<s>[INST] U1 [/INST]A1</s>[INST] U2
 * [/INST]"; its template has no system role, so the system text goes
 * before the first user message, as later Mistral and Gemma 3 templates
 * do.
 */
static void
fg_chat_mistral(const fg_chat_template_t *t, fg_chat_buf_t *b,
    const fg_oai_message_t *msgs, size_t n, size_t first, fg_chat_buf_t *sys)
{
    size_t  i;

    for (i = first; i < n; i++) {
        if (msgs[i].role == FG_OAI_USER) {
            fg_chat_add_str(b, "[INST] ");

            if (i == first && first > 0) {
                fg_chat_text(b, sys->data, sys->len);
                fg_chat_add_str(b, "\n\n");
            }

            fg_chat_text(b, msgs[i].content.data, msgs[i].content.len);
            fg_chat_add_str(b, " [/INST]");

        } else {
            fg_chat_text(b, msgs[i].content.data, msgs[i].content.len);
            fg_chat_add_str(b, t->eos);
        }
    }
}


/*
 * Gemma: "<bos><start_of_turn>user\nS\n\nU1<end_of_turn>\n<start_of_turn>
 * model\nA1<end_of_turn>\n<start_of_turn>model\n", turns trimmed; the
 * system text before the first user message as Gemma 3's template puts
 * it (Gemma 1 and 2 refuse a system role).
 */
static void
fg_chat_gemma(const fg_chat_template_t *t, fg_chat_buf_t *b,
    const fg_oai_message_t *msgs, size_t n, size_t first, fg_chat_buf_t *sys)
{
    size_t        i;
    fg_oai_str_t  c;

    (void) t;

    for (i = first; i < n; i++) {
        c = fg_chat_trim(msgs[i].content);

        fg_chat_add_str(b, msgs[i].role == FG_OAI_USER
                           ? "<start_of_turn>user\n"
                           : "<start_of_turn>model\n");

        if (i == first && first > 0) {
            fg_chat_text(b, sys->data, sys->len);
            fg_chat_add_str(b, "\n\n");
        }

        fg_chat_text(b, c.data, c.len);
        fg_chat_add_str(b, "<end_of_turn>\n");
    }

    fg_chat_add_str(b, "<start_of_turn>model\n");
}


/*
 * No template (base models such as stories260K): the messages' texts
 * joined with "\n", no role names.  A base model never saw role labels;
 * given "user: ..." lines it writes more such lines instead of going on
 * with the text.  Joined text is what it can continue, and a single user
 * message gives exactly the prompt /v1/completions would.
 */
static void
fg_chat_fallback(const fg_chat_template_t *t, fg_chat_buf_t *b,
    const fg_oai_message_t *msgs, size_t n)
{
    size_t  i;

    (void) t;

    for (i = 0; i < n; i++) {
        if (i) {
            fg_chat_add_str(b, "\n");
        }

        fg_chat_text(b, msgs[i].content.data, msgs[i].content.len);
    }
}


char *
fg_chat_template_apply(const fg_chat_template_t *t,
    const fg_oai_message_t *msgs, size_t n, size_t *len,
    fg_oai_error_t *err)
{
    char          *text;
    size_t         n_segs;
    fg_tok_seg_t  *segs;

    text = fg_chat_template_render(t, msgs, n, len, &segs, &n_segs, err);
    free(segs);

    return text;
}


char *
fg_chat_template_render(const fg_chat_template_t *t,
    const fg_oai_message_t *msgs, size_t n, size_t *len,
    fg_tok_seg_t **segs, size_t *n_segs, fg_oai_error_t *err)
{
    size_t         i, text, size;
    ssize_t        first;
    fg_chat_buf_t  b, sys;

    *segs = NULL;
    *n_segs = 0;

    if (n == 0) {
        fg_oai_error_set(err, 400, "empty_array", "messages",
                         "Invalid 'messages': empty array.");
        return NULL;
    }

    text = 0;

    for (i = 0; i < n; i++) {
        text += msgs[i].content.len;
    }

    /* a bound: the system text is written twice at most (gathered, then
     * in place), each message gets markers, BOS and EOS (each below 64
     * bytes), the conversation a default system prompt and an ending */
    size = 2 * text + n * (64 + 2 * FG_CHAT_TOKEN_LEN)
           + FG_CHAT_SYSTEM_LEN + 256;

    memset(&b, 0, sizeof(fg_chat_buf_t));
    memset(&sys, 0, sizeof(fg_chat_buf_t));

    /* a bound: each message writes a few pieces of each kind */
    b.max_segs = 8 * n + 16;
    b.data = malloc(size + 1);
    b.segs = malloc(b.max_segs * sizeof(fg_tok_seg_t));

    if (b.data == NULL || b.segs == NULL) {
        free(b.data);
        free(b.segs);
        goto nomem;
    }

    b.size = size;

    switch (t->family) {

    case FG_CHAT_LLAMA2:
    case FG_CHAT_MISTRAL:
    case FG_CHAT_GEMMA:
        sys.size = text + 2 * n;
        sys.data = malloc(sys.size + 1);

        if (sys.data == NULL) {
            free(b.data);
            free(b.segs);
            goto nomem;
        }

        first = fg_chat_turns(t, msgs, n, &sys, err);

        if (first < 0) {
            free(sys.data);
            free(b.data);
            free(b.segs);
            return NULL;
        }

        if (t->family == FG_CHAT_LLAMA2) {
            fg_chat_llama2(t, &b, msgs, n, first, &sys);

        } else if (t->family == FG_CHAT_MISTRAL) {
            fg_chat_mistral(t, &b, msgs, n, first, &sys);

        } else {
            fg_chat_gemma(t, &b, msgs, n, first, &sys);
        }

        free(sys.data);
        break;

    case FG_CHAT_LLAMA3:
        fg_chat_marked(&b, msgs, n, "<|start_header_id|>",
                       "<|end_header_id|>\n\n", "<|eot_id|>", 1);
        break;

    case FG_CHAT_CHATML:
        fg_chat_chatml(t, &b, msgs, n);
        break;

    case FG_CHAT_PHI3:
        fg_chat_marked(&b, msgs, n, "<|", "|>\n", "<|end|>\n", 0);
        break;

    case FG_CHAT_FALLBACK:
        fg_chat_fallback(t, &b, msgs, n);
        break;
    }

    b.data[b.len] = '\0';
    *len = b.len;
    *segs = b.segs;
    *n_segs = b.n_segs;

    return b.data;

nomem:

    fg_oai_error_set(err, 500, NULL, NULL, "out of memory");

    return NULL;
}
