
/*
 * fairgate: the load generator's requests: OpenAI chat bodies of about a
 * trace line's lengths, and the headers that say who sends them.
 *
 * Prompt text of about N tokens is N words drawn from a list of common
 * English words, each one token with its leading space in the BPE
 * vocabularies of the GPT, Llama, Mistral and Qwen families; the words of
 * a request's own text come from a stream seeded by its index, so no two
 * requests share a prefix beyond chance.  The real count is N plus what
 * the chat template adds (a few tokens a message, the server's usage says
 * how many); a tokenizer with a tiny vocabulary splits some words.
 *
 * A line with system_tokens gets a system message of that many words, the
 * same for every request of one app and stage (prefix caches see what a
 * multi-agent app's fixed prompts give them), and a user message of the
 * rest of input_tokens.
 *
 * A line with a prefix gets instead a system message of prefix_tokens
 * words, the first words of a stream seeded by the prefix's id: every
 * request of that id sends the same text, and a shorter use of the id a
 * prefix of a longer one's; its user message is the rest of input_tokens
 * (one word when the prefix is the whole prompt), its own words as ever.
 * A word is one token or more (one in the large BPE vocabularies), so the
 * server's shared prefix is at least prefix_tokens long, and the chat
 * template's start.
 *
 * Body: {"model", "messages", "max_tokens": output_tokens, "stream",
 * "stream_options": {"include_usage": true} when streaming, "ignore_eos":
 * true unless told not to (vLLM, SGLang and llama.cpp's server honour it:
 * the answer is exactly max_tokens long, as the trace says)}.
 */

#ifndef _FG_LOAD_REQ_H_INCLUDED_
#define _FG_LOAD_REQ_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "fg_sim_trace.h"


typedef struct {
    const char          *model;
    const char          *key_prefix;     /* Bearer PREFIX + client */
    struct curl_slist   *headers;        /* added to every request */
    const uint32_t      *stages;         /* fg_load_req_stages(), or NULL */
    int                  stream;         /* for lines without "stream" */
    double               time_scale;     /* the run's: expectations too */
    unsigned             ignore_eos:1;
} fg_load_req_conf_t;


/* n words of prompt text, malloc()ed; NULL when out of memory */
char *fg_load_prompt(uint32_t n, uint64_t seed);

/* whether trace request i streams */
int fg_load_req_stream(const fg_load_req_conf_t *conf,
    const fg_sim_req_t *r);

/* request i's JSON body, malloc()ed; NULL when out of memory */
char *fg_load_req_body(const fg_load_req_conf_t *conf,
    const fg_sim_trace_t *tr, size_t i);

/*
 * Each interaction's number of stages, indexed by the trace's string
 * index (tr->nstrs + 1 entries, malloc()ed): its largest stage + 1 among
 * all its lines, 0 when none of them gives a stage (and for strings that
 * are no interaction).  NULL when out of memory.
 */
uint32_t *fg_load_req_stages(const fg_sim_trace_t *tr);

/*
 * Request i's headers: Content-Type, no Expect, Authorization: Bearer
 * (the line's key, else key_prefix + client), X-User (user, else client),
 * X-App when the line has an app, X-Fairgate-Interaction when it has an
 * interaction, X-Fairgate-Stage (0-based) when it has a stage,
 * X-Fairgate-Stages (the interaction's, from conf->stages, or counted in
 * the trace when that is NULL) when the interaction's lines give stages,
 * then the configured ones.  NULL when out of memory.
 */
struct curl_slist *fg_load_req_headers(const fg_load_req_conf_t *conf,
    const fg_sim_trace_t *tr, size_t i);

/* "Name: value" with a token name and no control characters: 0 or -1 */
int fg_load_req_header_ok(const char *header);

/*
 * A client whose name cannot go in an X-User header (it holds a control
 * character), or NULL when every one can.
 */
const char *fg_load_req_bad_client(const fg_sim_trace_t *tr);


#endif /* _FG_LOAD_REQ_H_INCLUDED_ */
