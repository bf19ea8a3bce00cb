
/*
 * fairgate: local mode, the gateway serving its own engine.
 *
 *     ngx_http_fairgate_engine_conf.c  fairgate_engine: the model's
 *                                      tokenizer and chat template, loaded
 *                                      at configuration time, and
 *                                      fairgate_engine_pass
 *     ngx_http_fairgate_engine.c       each worker's client of the engine's
 *                                      segment: attach, submit, events,
 *                                      cancels, the engine lost
 *     ngx_http_fairgate_api.c          the OpenAI API of local mode: a
 *                                      request parsed and tokenized
 *     ngx_http_fairgate_route.c        which engine of a model's group
 *                                      serves it: for the zone, or alone
 *     ngx_http_fairgate_stream.c       the engine's tokens to SSE chunks or
 *                                      one JSON body
 *
 * Only these files and the status page see the engine's client, the
 * tokenizer and the OpenAI layer.
 */

#ifndef _NGX_HTTP_FAIRGATE_LOCAL_H_INCLUDED_
#define _NGX_HTTP_FAIRGATE_LOCAL_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "fg_shm_client.h"
#include "fg_tokenizer.h"
#include "fg_chat_template.h"
#include "fg_openai_request.h"
#include "fg_openai_response.h"
#include "ngx_http_fairgate_module.h"
#include "ngx_http_fairgate_request.h"


/*
 * A fairgate_engine: the model's tokenizer and chat template, loaded at
 * configuration time and shared by the workers through fork; then each
 * worker's own client of the engine segment.
 */
struct ngx_http_fairgate_engine_s {
    ngx_str_t                    name;
    ngx_str_t                    shm;        /* NUL-terminated */
    ngx_str_t                    model;      /* the GGUF path */
    ngx_str_t                    id;         /* what "model" must name */
    ngx_msec_t                   dead_after;

    /* the engines of one id: the first of them, and how many (in it) */
    ngx_http_fairgate_engine_t  *group;
    ngx_uint_t                   n_group;

    fg_tokenizer_t              *tok;
    fg_chat_template_t           tmpl;
    uint32_t                     context;    /* the GGUF's, 0: unknown */
    size_t                       max_piece;

    /* per worker, from init_process */
    fg_shm_client_t             *client;
    ngx_connection_t            *conn;       /* wraps the client's fd */
    ngx_event_t                  tick;
    ngx_rbtree_t                 rbtree;     /* open requests by id */
    ngx_rbtree_node_t            sentinel;
    ngx_uint_t                   open;       /* ... and how many */
    uint64_t                     next_id;
    uint64_t                     generation; /* of the attached engine */
    ngx_array_t                  cancels;    /* uint64_t ids to retry */
    uint64_t                     lost;       /* times the engine was lost */
    ngx_msec_t                   down_since;
    ngx_log_t                   *log;
    unsigned                     warned:1;   /* why it cannot attach */
};


/* a request of local mode, from its parse to its last event */
struct ngx_http_fairgate_api_s {
    ngx_rbtree_node_t            node;       /* key: the request id */
    ngx_http_request_t          *request;
    ngx_http_fairgate_ctx_t     *ctx;        /* zone NULL: no fairgate zone */
    ngx_http_fairgate_engine_t  *engine;
    fg_oai_request_t            *oai;

    int32_t                     *ids;        /* the prompt */
    uint32_t                     n_ids;
    uint32_t                     max_tokens; /* 0: to the context's end */

    uint32_t                     n_prompt;   /* usage, as the engine says */
    uint32_t                     n_cached;   /* of n_prompt, its prefix
                                                cache's, as it says */
    uint32_t                     generated;

    /* the prompt's full blocks, hashed as the engines' prefix caches do */
    uint64_t                    *hashes;
    uint32_t                     n_hashes;
    uint32_t                     block_size;

    fg_tok_stream_t              dec;
    fg_oai_stop_t                stop;
    fg_oai_resp_t                resp;

    char                        *piece;      /* decoder output */
    size_t                       piece_size;
    char                        *text;       /* stop matcher output */
    size_t                       text_size;

    ngx_buf_t                   *body;       /* non-stream: the text */
    ngx_chain_t                 *free;
    ngx_chain_t                 *busy;

    ngx_msec_t                   submitted_at;
    ngx_msec_t                   first_at;   /* first token */

    unsigned                     submitted:1;
    unsigned                     done:1;
    unsigned                     stream:1;
    unsigned                     parsed:1;
    unsigned                     finish:2;   /* fg_oai_finish_e */
};


/* _engine_conf.c */
ngx_http_fairgate_engine_t *ngx_http_fairgate_engine_find(
    ngx_http_fairgate_main_conf_t *fmcf, const char *model, size_t len);

/* _engine.c */
ngx_int_t ngx_http_fairgate_engine_submit(ngx_http_fairgate_api_t *api);
void ngx_http_fairgate_engine_forget(ngx_http_fairgate_api_t *api,
    ngx_uint_t cancel);

/* _route.c */
ngx_int_t ngx_http_fairgate_route_prepare(ngx_http_fairgate_api_t *api,
    ngx_http_fairgate_ctx_t *ctx);
void ngx_http_fairgate_route_pick(ngx_http_fairgate_api_t *api);

/* _api.c */
ngx_int_t ngx_http_fairgate_api_handler(ngx_http_request_t *r);
ngx_int_t ngx_http_fairgate_api_error(ngx_http_request_t *r,
    fg_oai_error_t *err, time_t retry_after);

/* _stream.c */
ngx_int_t ngx_http_fairgate_stream_start(ngx_http_fairgate_api_t *api);
void ngx_http_fairgate_stream_event(ngx_http_fairgate_api_t *api,
    fg_shm_comp_t *ev);
void ngx_http_fairgate_stream_fail(ngx_http_fairgate_api_t *api,
    ngx_uint_t status, const char *code, const char *message);


#endif /* _NGX_HTTP_FAIRGATE_LOCAL_H_INCLUDED_ */
