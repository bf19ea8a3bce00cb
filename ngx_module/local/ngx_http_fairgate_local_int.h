
/*
 * fairgate: local mode's internals, shared by its files alone
 * (ngx_http_fairgate_local.h is its contract).
 */

#ifndef _NGX_HTTP_FAIRGATE_LOCAL_INT_H_INCLUDED_
#define _NGX_HTTP_FAIRGATE_LOCAL_INT_H_INCLUDED_


#include "ngx_http_fairgate_local.h"


/*
 * _engine.c: a request submitted (FG_SHM_OK, or why not), and forgotten:
 * nothing more of the engine's reaches it; cancel asks the engine to free
 * its sequence now
 */
ngx_int_t ngx_http_fairgate_engine_submit(ngx_http_fairgate_api_t *api);
void ngx_http_fairgate_engine_forget(ngx_http_fairgate_api_t *api,
    ngx_uint_t cancel);
/* _engine.c: the request finalized once, from outside its own events */
void ngx_http_fairgate_engine_end(ngx_http_fairgate_api_t *api,
    ngx_int_t rc);

/*
 * _logprobs.c: piece() keeps a piece of the next token's
 * log-probabilities (the engine sends them before the token); token()
 * gives them their bytes: for a stream, api->resp.lp set for the chunk
 * that goes next; for one body, kept; body() sets api->resp.lp to all of
 * them
 */
void ngx_http_fairgate_lp_piece(ngx_http_fairgate_api_t *api,
    fg_shm_comp_t *ev);
ngx_int_t ngx_http_fairgate_lp_token(ngx_http_fairgate_api_t *api,
    fg_shm_comp_t *ev);
ngx_int_t ngx_http_fairgate_lp_body(ngx_http_fairgate_api_t *api);
/* a stream's echo: api->resp.lp set to the prompt's entries, if any */
ngx_int_t ngx_http_fairgate_lp_prompt_json(ngx_http_fairgate_api_t *api);

/* n > 1, one body: each choice's logprobs JSON (or null) kept in its
 * entry; *len: their bytes, in all */
ngx_int_t ngx_http_fairgate_lp_choices(ngx_http_fairgate_api_t *api,
    size_t *len);

/*
 * _choices.c: n > 1 (or best_of): each choice's state set up
 * (api->choices); the
 * choice of an event brought into the request's fields (NGX_DECLINED:
 * the event is dropped, its choice has ended; NGX_ERROR: no such
 * choice); every choice's state back in api->choices
 */
ngx_int_t ngx_http_fairgate_choices_init(ngx_http_fairgate_api_t *api);
ngx_int_t ngx_http_fairgate_choices_switch(ngx_http_fairgate_api_t *api,
    uint32_t c);
void ngx_http_fairgate_choices_save(ngx_http_fairgate_api_t *api);

/*
 * best_of: a token's log-probability added to its candidate's score (the
 * pieces the engine sent before it); the candidates returned, the n of
 * the highest scores (the lower index first on ties) in order into
 * order[]
 */
void ngx_http_fairgate_choices_score(ngx_http_fairgate_api_t *api,
    fg_shm_comp_t *ev);
void ngx_http_fairgate_choices_rank(ngx_http_fairgate_api_t *api,
    uint32_t *order);

/* _route.c: the prompt's block hashes; when zoned, its candidates too */
ngx_int_t ngx_http_fairgate_route_prepare(ngx_http_fairgate_api_t *api,
    ngx_uint_t zoned);


/* an embeddings request's inputs and their progress (_embed.c) */
struct ngx_http_fairgate_embed_s {
    uint32_t                     n;          /* inputs */
    uint32_t                    *off;        /* n + 1: input i's tokens
                                                are api->ids[off[i] ..
                                                off[i + 1]) */
    uint8_t                     *state;      /* NGX_HTTP_FAIRGATE_EMBED_* */
    float                       *vecs;       /* n x dim */
    uint32_t                     dim;
    uint32_t                     next;       /* the next to submit */
    uint32_t                     running;    /* submitted, not ended */
    uint32_t                     done;
    uint32_t                     window;     /* running at most */
    uint32_t                     longest;    /* tokens of the longest */
    uint32_t                     tokens;     /* prompt tokens, as the
                                                engine counted them */
};

#define NGX_HTTP_FAIRGATE_EMBED_WAITING  0
#define NGX_HTTP_FAIRGATE_EMBED_RUNNING  1
#define NGX_HTTP_FAIRGATE_EMBED_DONE     2

/*
 * _embed.c: an embeddings request's inputs tokenized and checked
 * (NGX_DECLINED: err says why not), and its start (as
 * ngx_http_fairgate_stream_start()).  _engine.c: input i submitted
 * (FG_SHM_OK, or why not).
 */
ngx_int_t ngx_http_fairgate_embed_parse(ngx_http_fairgate_api_t *api,
    uint32_t context, fg_oai_error_t *err);
ngx_int_t ngx_http_fairgate_embed_start(ngx_http_fairgate_api_t *api);
ngx_int_t ngx_http_fairgate_engine_submit_input(ngx_http_fairgate_api_t *api,
    uint32_t i);


/*
 * _tools.c: whether the model's chat template can take a request's tools
 * and tool messages (NGX_DECLINED, err says why not); a request whose
 * answer is read for tool calls: set up when
 * it starts (api->tools); the streamed text that may be a call held
 * (*text, *len: what goes out now); and the response's end written into
 * b (the calls, or the held text and the finish)
 */
ngx_int_t ngx_http_fairgate_tools_check(ngx_http_fairgate_api_t *api,
    fg_oai_error_t *err);
ngx_int_t ngx_http_fairgate_tools_start(ngx_http_fairgate_api_t *api);
ngx_int_t ngx_http_fairgate_tools_hold(ngx_http_fairgate_api_t *api,
    const char **text, size_t *len);
ngx_int_t ngx_http_fairgate_tools_finish(ngx_http_fairgate_api_t *api,
    ngx_buf_t *b);
ngx_int_t ngx_http_fairgate_tools_bodies(ngx_http_fairgate_api_t *api,
    fg_oai_choice_t *c, uint32_t n, ngx_buf_t *b);


#endif /* _NGX_HTTP_FAIRGATE_LOCAL_INT_H_INCLUDED_ */
