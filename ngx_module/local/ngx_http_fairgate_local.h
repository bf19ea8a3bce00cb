
/*
 * fairgate: local mode, the gateway serving its own engines; its API, for
 * the glue above it (request/ngx_http_fairgate_content.c), which builds a
 * request's context and hands local mode what it needs of it.
 *
 *     ngx_http_fairgate_engine_conf.c  fairgate_engine: the model's
 *                                      tokenizer and chat template, loaded
 *                                      at configuration time
 *     ngx_http_fairgate_engine.c       each worker's client of the engine's
 *                                      segment: attach, submit, events,
 *                                      cancels, the engine lost; what a
 *                                      zone asks of the engines when it
 *                                      routes
 *     ngx_http_fairgate_api.c          the OpenAI API of local mode: a
 *                                      request parsed, checked and
 *                                      tokenized; the models listed
 *     ngx_http_fairgate_route.c        which engine of a model's group
 *                                      serves it: its candidates and block
 *                                      hashes for a zone, or this worker's
 *                                      pick alone
 *     ngx_http_fairgate_stream.c       the engine's tokens to SSE chunks or
 *                                      one JSON body
 *     ngx_http_fairgate_embed.c        /v1/embeddings: the inputs
 *                                      tokenized, submitted a few at a
 *                                      time, their vectors in one body
 *     ngx_http_fairgate_tools.c        an answer read for tool calls: the
 *                                      text that may be one held, the
 *                                      calls written at the end
 *
 * Calls run down: api -> route -> engine, stream -> engine, and below
 * local mode the zone (zone/) and the nginx helpers (http/).  What comes
 * back up does so through handlers the layer above sets: the engine's
 * events reach the stream through api->handler (set by _stream.c), and a
 * request's progress (its tokens, its end) reaches the glue through
 * api->report (set by the glue).  Internals: ngx_http_fairgate_local_int.h.
 *
 * Only these files and the status page see the engine's client, the
 * tokenizer and the OpenAI layer's request.
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
#include "fg_openai_tools.h"
#include "ngx_http_fairgate_module.h"
#include "ngx_http_fairgate_zone.h"
#include "ngx_http_fairgate_http.h"


typedef struct ngx_http_fairgate_api_s  ngx_http_fairgate_api_t;
typedef struct ngx_http_fairgate_embed_s  ngx_http_fairgate_embed_t;


/* what a request of local mode tells the glue as it runs (api->report) */
typedef enum {
    NGX_HTTP_FAIRGATE_API_TOKEN = 0,  /* a token generated; with the first
                                         (api->generated 1), n: the prompt
                                         tokens the engine found cached */
    NGX_HTTP_FAIRGATE_API_DONE,       /* served: api->usage */
    NGX_HTTP_FAIRGATE_API_FAILED,     /* the engine failed, refused it or
                                         was lost */
    NGX_HTTP_FAIRGATE_API_UNSENT      /* the engine could not take it */
} ngx_http_fairgate_api_event_e;

typedef void (*ngx_http_fairgate_api_report_pt)(ngx_http_fairgate_api_t *api,
    ngx_http_fairgate_api_event_e event, uint32_t n);

/* an event of the engine for the request; ev NULL: the engine was lost */
typedef void (*ngx_http_fairgate_api_handler_pt)(ngx_http_fairgate_api_t *api,
    fg_shm_comp_t *ev);


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
    fg_chat_tools_t              tools;      /* its tool calls' family */
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
    unsigned                     tmpl_warned:1; /* its template failed */
};


/*
 * One choice's own state, when a request asks for several (n > 1): the
 * request's dec, stop, body, finish, lps, lp_offset and tool_stream
 * hold the choice
 * whose event came last (api->cur), these the others'
 * (ngx_http_fairgate_choices.c).
 * With best_of above n, they are the candidates, n_choices of them.
 */
typedef struct {
    fg_tok_stream_t              dec;
    fg_oai_stop_t                stop;
    ngx_buf_t                   *body;
    ngx_array_t                 *lps;        /* logprobs, one body */
    size_t                       lp_offset;
    fg_tool_stream_t             tool_stream; /* streamed, with tools */
    const char                  *lp;         /* ... their JSON, at the end */
    size_t                       lp_len;
    double                       score;      /* best_of: the cumulative
                                                log-probability */
    unsigned                     finish:2;
    unsigned                     done:1;     /* ended: later events of it
                                                are dropped */
} ngx_http_fairgate_choice_t;


/* a request of local mode, from its parse to its last event */
struct ngx_http_fairgate_api_s {
    ngx_rbtree_node_t            node;       /* key: the request id */
    ngx_http_request_t          *request;
    ngx_http_fairgate_engine_t  *engine;
    fg_oai_request_t            *oai;

    int32_t                     *ids;        /* the prompt */
    uint32_t                     n_ids;
    uint32_t                     max_tokens; /* 0: to the context's end */

    /* what the fair queue charges and reserves, once parsed */
    uint32_t                     need;       /* output tokens it may take */
    uint32_t                     reserve;    /* KV positions, whole blocks */
    uint32_t                     system_tokens; /* of n_ids, for wsc */

    uint32_t                     n_prompt;   /* usage, as the engine says */
    uint32_t                     n_cached;   /* of n_prompt, its prefix
                                                cache's, as it says */
    uint32_t                     generated;

    /* the prompt's full blocks, hashed as the engines' prefix caches do */
    uint64_t                    *hashes;
    uint32_t                     n_hashes;
    uint32_t                     block_size;

    /* behind a zone: the engines that may serve it, for its dispatch */
    ngx_http_fairgate_candidate_t  *candidates;
    ngx_uint_t                   n_candidates;

    /* set by the glue before the submission: the reader's expectations
     * (0: none), and who hears of the request's progress */
    ngx_msec_t                   qoe_ttft;
    double                       qoe_speed;  /* tokens a second */
    ngx_http_fairgate_api_report_pt  report;
    void                        *data;       /* the report's */
    ngx_msec_t                   submit_wait; /* the most a busy or full
                                                 submission ring may delay
                                                 it; 0: dead_after */

    ngx_http_fairgate_api_handler_pt  handler; /* the engine's events */

    fg_oai_usage_t               usage;      /* at its end, as reported */

    /* an embeddings request (_embed.c): its inputs, each submitted under
     * an id of its own, node.key + its index; NULL for the others */
    ngx_http_fairgate_embed_t   *embed;

    fg_tok_stream_t              dec;
    fg_oai_stop_t                stop;
    fg_oai_resp_t                resp;

    char                        *piece;      /* decoder output */
    size_t                       piece_size;
    char                        *text;       /* stop matcher output */
    size_t                       text_size;

    /* logprobs: the next token's as the engine sent them (pair 0 its
     * own; lp_pairs of them so far), the scratch of one token's (its
     * pieces, its JSON), the text's bytes so far (completions'
     * text_offset), and for one body every token's (fg_oai_lp_t) */
    int32_t                      lp_id[FG_SHM_MAX_TOP + 1];
    float                        lp_lp[FG_SHM_MAX_TOP + 1];
    uint32_t                     lp_pairs;
    fg_oai_lp_t                  lp;
    u_char                      *lp_piece;
    u_char                      *lp_json;
    size_t                       lp_json_size;
    size_t                       lp_offset;
    ngx_array_t                 *lps;
    ngx_array_t                 *plps;       /* echo: the prompt's */
    size_t                       plp_bytes;  /* ... their tokens' bytes */
    fg_tool_stream_t             tool_stream; /* streamed, with tools */

    ngx_buf_t                   *body;       /* non-stream: the text */

    /* n > 1: every choice's state (above), how many, the one in the
     * fields above, and how many are still running */
    ngx_http_fairgate_choice_t  *choices;
    uint32_t                     n_choices;
    uint32_t                     cur;
    uint32_t                     left;

    ngx_chain_t                 *free;
    ngx_chain_t                 *busy;

    /* its submission retried while the ring is busy or full */
    ngx_event_t                  retry;
    ngx_msec_t                   retry_until;
    ngx_msec_t                   retry_delay;

    ngx_msec_t                   submitted_at;
    ngx_msec_t                   first_at;   /* first token */

    unsigned                     submitted:1;
    unsigned                     done:1;
    unsigned                     stream:1;
    unsigned                     parsed:1;
    unsigned                     finish:2;   /* fg_oai_finish_e */
    unsigned                     tools:1;    /* the answer is read for
                                                tool calls */
    unsigned                     cut:1;      /* a choice ended at a stop
                                                string: the engine may
                                                still run it */
    unsigned                     score:1;    /* max_tokens 0 with echo */
    unsigned                     echo_held:1; /* a stream's echo waits
                                                 for the prompt's
                                                 logprobs */
};


/* _engine_conf.c: the directive; the engine of a name or (by_id) of a
 * model id, and the engine that serves the model a request names */
char *ngx_http_fairgate_engine(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_http_fairgate_engine_t *ngx_http_fairgate_engine_named(
    ngx_http_fairgate_main_conf_t *fmcf, ngx_str_t *name, ngx_uint_t by_id);
ngx_http_fairgate_engine_t *ngx_http_fairgate_engine_find(
    ngx_http_fairgate_main_conf_t *fmcf, const char *model, size_t len);

/*
 * _engine.c: each worker's clients, started and stopped with the worker
 * (the zones' routing asks them through the handlers it installs there);
 * whether an engine is attached, and how many of a prompt's leading full
 * blocks its prefix cache holds (0 when down, or when it hashes blocks of
 * another size)
 */
ngx_int_t ngx_http_fairgate_engine_init_process(ngx_cycle_t *cycle);
void ngx_http_fairgate_engine_exit_process(ngx_cycle_t *cycle);
ngx_uint_t ngx_http_fairgate_engine_up(ngx_http_fairgate_engine_t *e);
uint32_t ngx_http_fairgate_engine_prefix(ngx_http_fairgate_engine_t *e,
    const uint64_t *hashes, uint32_t n, uint32_t block_size);

/*
 * _api.c: the endpoint a URI names (FG_OAI_CHAT, FG_OAI_COMPLETION,
 * FG_OAI_RESPONSES, FG_OAI_EMBEDDING; 0: none); GET /v1/models; a POST's
 * body parsed into *apip, its candidate engines found when a zone routes
 * it (zoned): NGX_DECLINED, err says why it cannot be served
 */
ngx_int_t ngx_http_fairgate_api_kind(ngx_http_request_t *r);
ngx_int_t ngx_http_fairgate_api_models(ngx_http_request_t *r);
ngx_int_t ngx_http_fairgate_api_parse(ngx_http_request_t *r,
    ngx_uint_t zoned, ngx_http_fairgate_api_t **apip, fg_oai_error_t *err);

/* _route.c: with no zone, this worker's pick of the group's engines */
void ngx_http_fairgate_route_pick(ngx_http_fairgate_api_t *api);

/* _stream.c: submitted to api->engine, now or once its submission ring
 * has room; NGX_DONE: open until its end */
ngx_int_t ngx_http_fairgate_stream_start(ngx_http_fairgate_api_t *api);


#endif /* _NGX_HTTP_FAIRGATE_LOCAL_H_INCLUDED_ */
