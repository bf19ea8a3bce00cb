
/*
 * fairgate: a local-mode request with several choices (OpenAI's n).
 *
 * The engine runs n sequences for one submission and says each event's
 * choice.  The request's decoder, stop matcher, body and finish are those
 * of one choice at a time: an event of another choice saves them into
 * its entry of api->choices and brings that one's in, so that the code
 * of one choice (ngx_http_fairgate_stream.c) serves each in turn.  A
 * choice that ended at a stop string is done: the engine's later events
 * of it are dropped, neither sent nor charged.
 *
 * best_of above n: the engine runs best_of candidates and sends each
 * token's log-probability before it; a candidate's score is the sum of
 * its tokens', and the body holds the n best (best_of is never streamed).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_local_int.h"


#define NGX_HTTP_FAIRGATE_CHOICE_BUF  256


ngx_int_t
ngx_http_fairgate_choices_init(ngx_http_fairgate_api_t *api)
{
    uint32_t                     i, n;
    ngx_http_fairgate_choice_t  *ch;

    n = ngx_max(api->oai->n, api->oai->best_of);

    if (n <= 1) {
        return NGX_OK;
    }

    ch = ngx_pcalloc(api->request->pool,
                     n * sizeof(ngx_http_fairgate_choice_t));
    if (ch == NULL) {
        return NGX_ERROR;
    }

    for (i = 0; i < n; i++) {
        ch[i].dec = api->dec;
        ch[i].stop = api->stop;
        ch[i].body = api->body;
        ch[i].tool_stream = api->tool_stream;   /* empty yet: no buffer */

        if (api->oai->logprobs && !api->stream) {
            ch[i].lps = ngx_array_create(api->request->pool, 16,
                                         sizeof(fg_oai_lp_t));
            if (ch[i].lps == NULL) {
                return NGX_ERROR;
            }
        }

        if (i && api->body) {
            ch[i].body = ngx_create_temp_buf(api->request->pool,
                                             NGX_HTTP_FAIRGATE_CHOICE_BUF);
            if (ch[i].body == NULL) {
                return NGX_ERROR;
            }
        }
    }

    api->choices = ch;
    api->lps = ch[0].lps;
    api->n_choices = n;
    api->cur = 0;
    api->left = n;
    api->resp.n = api->oai->n;
    api->resp.index = 0;

    return NGX_OK;
}


void
ngx_http_fairgate_choices_save(ngx_http_fairgate_api_t *api)
{
    ngx_http_fairgate_choice_t  *ch;

    ch = &api->choices[api->cur];

    ch->dec = api->dec;
    ch->stop = api->stop;
    ch->body = api->body;
    ch->finish = api->finish;
    ch->lps = api->lps;
    ch->lp_offset = api->lp_offset;
    ch->tool_stream = api->tool_stream;
}


ngx_int_t
ngx_http_fairgate_choices_switch(ngx_http_fairgate_api_t *api, uint32_t c)
{
    ngx_http_fairgate_choice_t  *ch;

    if (c >= api->n_choices) {
        return NGX_ERROR;
    }

    if (api->choices[c].done) {
        return NGX_DECLINED;
    }

    if (c == api->cur) {
        return NGX_OK;
    }

    ngx_http_fairgate_choices_save(api);

    ch = &api->choices[c];

    api->dec = ch->dec;
    api->stop = ch->stop;
    api->body = ch->body;
    api->finish = ch->finish;
    api->lps = ch->lps;
    api->lp_offset = ch->lp_offset;
    api->tool_stream = ch->tool_stream;
    api->cur = c;
    api->resp.index = c;

    return NGX_OK;
}


void
ngx_http_fairgate_choices_score(ngx_http_fairgate_api_t *api,
    fg_shm_comp_t *ev)
{
    /* a token without its pieces (lost, out of order): OpenAI's floor */
    api->choices[api->cur].score += (api->lp_pairs && api->lp_id[0]
                                                      == ev->token)
                                    ? api->lp_lp[0] : -9999.0;

    /* asked for, they are the response's too (the logprobs module takes
     * them next) */
    if (!api->oai->logprobs) {
        api->lp_pairs = 0;
    }
}


void
ngx_http_fairgate_choices_rank(ngx_http_fairgate_api_t *api,
    uint32_t *order)
{
    uint32_t     i, k, best;
    u_char       taken[FG_SHM_MAX_CHOICES];

    ngx_memzero(taken, sizeof(taken));

    /* n of at most 16: a selection, stable by index */
    for (k = 0; k < api->oai->n; k++) {
        best = api->n_choices;

        for (i = 0; i < api->n_choices; i++) {
            if (!taken[i]
                && (best == api->n_choices
                    || api->choices[i].score > api->choices[best].score))
            {
                best = i;
            }
        }

        taken[best] = 1;
        order[k] = best;
    }
}
