
/*
 * fairgate: chat messages to prompt text, for the common model families.
 *
 * Pure C, no nginx types, no Jinja: a GGUF's tokenizer.chat_template is
 * only read to recognise which family wrote it (by the markers each one
 * uses), and the family's format is then written by hand.  The strings
 * each family produces, and the fallback for models without a template,
 * are in docs/openai-api.md and t/unit/openai/test_openai_template.c.
 *
 * BOS is never in the text: the text is encoded with the flags of
 * fg_chat_template_tok_flags(), which add it once when the template
 * starts with it.  BOS and EOS written between turns (Llama 2 and
 * Mistral write them after each answer) are in the text, as the
 * tokenizer's own texts of those tokens, and are encoded as the control
 * tokens they are.
 *
 * The messages' texts stay text: fg_chat_template_render() gives the
 * prompt as segments for fg_tokenizer_encode_segs(), the template's own
 * (markers are control tokens) and the clients' (a "<|im_start|>" typed
 * in a message is the characters it is made of).  A renderer of the
 * model's own Jinja template keeps to the same contract.
 */

#ifndef _FG_CHAT_TEMPLATE_H_INCLUDED_
#define _FG_CHAT_TEMPLATE_H_INCLUDED_


#include <stddef.h>

#include "fg_gguf.h"
#include "fg_tokenizer.h"
#include "fg_jinja.h"
#include "fg_openai_request.h"


typedef enum {
    FG_CHAT_FALLBACK = 0,     /* no template, or one not recognised */
    FG_CHAT_LLAMA2,           /* [INST] with <<SYS>> */
    FG_CHAT_LLAMA3,           /* <|start_header_id|> */
    FG_CHAT_CHATML,           /* <|im_start|>: Qwen, many fine-tunes */
    FG_CHAT_MISTRAL,          /* [INST] without <<SYS>> */
    FG_CHAT_GEMMA,            /* <start_of_turn> */
    FG_CHAT_PHI3              /* <|user|> ... <|end|> */
} fg_chat_family_e;


#define FG_CHAT_TOKEN_LEN    64
#define FG_CHAT_SYSTEM_LEN   512


typedef struct {
    fg_chat_family_e   family;

    unsigned           has_template:1;    /* the model had one */
    unsigned           recognised:1;      /* ... of a known family */
    unsigned           add_bos:1;         /* encode with BOS */

    /* the texts of BOS and EOS, written between turns */
    char               bos[FG_CHAT_TOKEN_LEN];
    char               eos[FG_CHAT_TOKEN_LEN];

    /* a ChatML template's own system prompt when the conversation has
     * none (Qwen 2's "You are a helpful assistant.") */
    char               default_system[FG_CHAT_SYSTEM_LEN];
    size_t             default_system_len;

    /* the model's own template, parsed (fg_chat_jinja.c); NULL: the
     * family's format above is written instead */
    fg_jinja_t        *jinja;
    fg_jinja_limits_t  limits;
} fg_chat_template_t;


/*
 * Chooses the family from a template's text (NULL: the model has none).
 * bos and eos are the tokenizer's texts of those tokens (NULL: "<s>",
 * "</s>"); tok_add_bos is what the tokenizer does by default, which the
 * fallback follows.  A template of no known family gives the fallback
 * with recognised 0, for the caller to log.
 */
void fg_chat_template_init(fg_chat_template_t *t, const char *text,
    size_t len, const char *bos, const char *eos, int tok_add_bos);

/*
 * The same from a model: tokenizer.chat_template of the GGUF file and the
 * tokenizer's BOS and EOS, the template parsed to be rendered itself
 * (fg_chat_template_free() frees it).  -1 with err when the key is there
 * but is no string; 1 with err when the template does not parse, and
 * the family's format is used.
 */
int fg_chat_template_from_model(fg_chat_template_t *t, const fg_gguf_t *g,
    const fg_tokenizer_t *tok, char *err, size_t errlen);

/*
 * Forces a family by name ("llama2", "llama3", "chatml", "mistral",
 * "gemma", "phi3", "fallback"), for a model whose template is not
 * recognised; -1 for an unknown name.
 */
int fg_chat_template_set_family(fg_chat_template_t *t, const char *name);

const char *fg_chat_family_name(fg_chat_family_e family);

/*
 * The flags to encode the text with (fg_tokenizer_encode): templates
 * write control tokens (FG_TOK_SPECIAL) and say whether BOS comes first;
 * the fallback is plain text with the tokenizer's own BOS rule.
 */
int fg_chat_template_tok_flags(const fg_chat_template_t *t);

/*
 * The prompt text of a conversation, ending where the assistant's answer
 * starts: malloc'd, NUL-terminated, *len bytes.  NULL with err filled
 * (400, the message named in param) when the family cannot express the
 * conversation: a system message after the start where the format has
 * one place for it, roles that do not alternate where the format needs
 * them to, no user message; or (500) out of memory.
 */
char *fg_chat_template_apply(const fg_chat_template_t *t,
    const fg_oai_message_t *msgs, size_t n, size_t *len,
    fg_oai_error_t *err);

/*
 * The same text, and its segments (malloc'd, pointing into the text, in
 * order, covering it): the template's own text with special set, the
 * messages' texts without.  Encode them with fg_tokenizer_encode_segs()
 * and the flags of fg_chat_template_tok_flags(); free both.
 */
char *fg_chat_template_render(const fg_chat_template_t *t,
    const fg_oai_message_t *msgs, size_t n, size_t *len,
    fg_tok_seg_t **segs, size_t *n_segs, fg_oai_error_t *err);


/*
 * fg_chat_jinja.c: the model's own template, rendered as Hugging Face
 * renders it.
 *
 * fg_chat_jinja_load() parses the template's text for t; -1 with err
 * (the reason and its line) when it does not parse, and t keeps its
 * family's format.  fg_chat_template_from_model() calls it.
 */
int fg_chat_jinja_load(fg_chat_template_t *t, const char *text, size_t len,
    char *err, size_t errlen);
void fg_chat_template_free(fg_chat_template_t *t);

/*
 * Renders the conversation with messages as [{role, content}],
 * add_generation_prompt true and the tokenizer's bos_token and
 * eos_token, into out (fg_jinja_out_free() frees it): segments of the
 * template's text and of the messages'.  -1 with err: 400 when the
 * template refuses the conversation (raise_exception, its message
 * given), 500 when memory runs out; 1 with err's message saying where
 * when the template fails otherwise (a filter it lacks, a limit), for
 * the caller to log and write the family's format instead.
 */
int fg_chat_jinja_apply(const fg_chat_template_t *t,
    const fg_oai_message_t *msgs, size_t n, fg_jinja_out_t *out,
    fg_oai_error_t *err);

/*
 * The same with tools (NULL, or data NULL: none): the JSON text of the
 * request's "tools", given to the template as a list of {"type":
 * "function", "function": {...}}, as Hugging Face's apply_chat_template
 * passes them.  The messages carry their tool calls (the arguments as a
 * JSON object where they are one) and tool messages their call ids.
 */
int fg_chat_jinja_render(const fg_chat_template_t *t,
    const fg_oai_message_t *msgs, size_t n, const fg_oai_str_t *tools,
    fg_jinja_out_t *out, fg_oai_error_t *err);

/*
 * The token ids of a rendered prompt: the template's segments with their
 * control tokens, the messages' as plain text, so that a control token
 * typed in a message stays text (fg_tokenizer_encode_segs()).  BOS is added by the tokenizer's rule
 * unless the template wrote it.  As fg_tokenizer_encode(): the count,
 * above max when ids needs more room; -1 when out of memory.
 */
ssize_t fg_chat_encode(const fg_chat_template_t *t,
    const fg_tokenizer_t *tok, const fg_jinja_out_t *out, int32_t *ids,
    size_t max);


#endif /* _FG_CHAT_TEMPLATE_H_INCLUDED_ */
