
/*
 * fairgate: the log-probabilities of a local-mode response.  The engine
 * sends each token's before its event, in pieces of (token id, float)
 * pairs, kept here until the token comes; this turns the ids into the
 * tokens' bytes (the tokenizer's pieces, control tokens as their text)
 * and hands them to the OpenAI layer's writer: one chunk's worth at a
 * time for a stream, every token's at the end for one body.  The token
 * that ends the text (EOS, end of turn) has none, as at OpenAI.  With
 * echo, the engine first sends the prompt's positions' (marked prompt):
 * kept apart, they begin every choice's list, the stream's first chunk.
 */

#include <math.h>

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_local_int.h"


static ngx_int_t ngx_http_fairgate_lp_prompt(ngx_http_fairgate_api_t *api,
    int32_t id);
static ngx_int_t ngx_http_fairgate_lp_entry(ngx_http_fairgate_api_t *api,
    int32_t token, ngx_array_t *keep);
static ngx_int_t ngx_http_fairgate_lp_join(ngx_http_fairgate_api_t *api,
    ngx_array_t *a);


/* the scratch one token's pieces need: the token and its alternatives */
static ngx_int_t
ngx_http_fairgate_lp_init(ngx_http_fairgate_api_t *api)
{
    size_t       size;
    ngx_pool_t  *pool;

    pool = api->request->pool;
    size = (FG_OAI_MAX_TOP_CHAT + 1) * api->engine->max_piece;

    api->lp_piece = ngx_pnalloc(pool, size);

    if (api->lp_piece == NULL) {
        return NGX_ERROR;
    }

    /* several choices have theirs already (ngx_http_fairgate_choices.c) */
    if (!api->stream && api->lps == NULL) {
        api->lps = ngx_array_create(pool, 64, sizeof(fg_oai_lp_t));

        if (api->lps == NULL) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* one id's bytes at *p, its entry filled */
static void
ngx_http_fairgate_lp_bytes(ngx_http_fairgate_api_t *api, int32_t id,
    float logprob, u_char **p, fg_oai_lp_tok_t *t)
{
    ssize_t  n;

    n = fg_tokenizer_piece(api->engine->tok, id, FG_TOK_SPECIAL,
                           (char *) *p, api->engine->max_piece);

    n = ngx_max(n, 0);
    n = ngx_min((size_t) n, api->engine->max_piece);

    t->bytes = (char *) *p;
    t->len = (size_t) n;
    t->logprob = logprob;

    *p += n;
}


/* a kept token's bytes, moved from the scratch into the request's pool */
static ngx_int_t
ngx_http_fairgate_lp_keep(ngx_http_fairgate_api_t *api, ngx_array_t *a)
{
    size_t            i, size;
    u_char           *p;
    fg_oai_lp_t      *lp;
    fg_oai_lp_tok_t  *t;

    lp = ngx_array_push(a);
    if (lp == NULL) {
        return NGX_ERROR;
    }

    *lp = api->lp;
    size = lp->tok.len;

    for (i = 0; i < lp->n_top; i++) {
        size += lp->top[i].len;
    }

    p = ngx_pnalloc(api->request->pool, size + 1);
    if (p == NULL) {
        return NGX_ERROR;
    }

    for (i = 0; i <= lp->n_top; i++) {
        t = i ? &lp->top[i - 1] : &lp->tok;

        ngx_memcpy(p, t->bytes, t->len);
        t->bytes = (char *) p;
        p += t->len;
    }

    return NGX_OK;
}


/* n tokens' JSON into api->lp_json, grown as needed; api->resp.lp set */
static ngx_int_t
ngx_http_fairgate_lp_render(ngx_http_fairgate_api_t *api,
    const fg_oai_lp_t *lp, size_t n, size_t offset)
{
    size_t  need;

    need = fg_oai_lp_json(api->oai->kind, lp, n, offset, NULL, 0);

    if (need > api->lp_json_size) {
        api->lp_json_size = ngx_max(need, 2 * api->lp_json_size);
        api->lp_json = ngx_pnalloc(api->request->pool, api->lp_json_size);

        if (api->lp_json == NULL) {
            return NGX_ERROR;
        }
    }

    api->resp.lp = (char *) api->lp_json;
    api->resp.lp_len = fg_oai_lp_json(api->oai->kind, lp, n, offset,
                                      (char *) api->lp_json, need);

    return NGX_OK;
}


void
ngx_http_fairgate_lp_piece(ngx_http_fairgate_api_t *api, fg_shm_comp_t *ev)
{
    fg_shm_lp_t  piece;

    if (!fg_shm_lp_get(ev, &piece)) {
        return;
    }

    /* a token's first piece; those of a token with no text (EOS, end of
     * turn) before it are dropped */
    if (piece.index == 0) {
        api->lp_pairs = 0;
    }

    /* pieces come in order: one out of it is dropped */
    if (piece.index != api->lp_pairs) {
        return;
    }

    ngx_memcpy(&api->lp_id[piece.index], piece.id,
               piece.n * sizeof(int32_t));
    ngx_memcpy(&api->lp_lp[piece.index], piece.lp, piece.n * sizeof(float));

    api->lp_pairs += piece.n;

    /* a prompt position's last piece: its entry, kept for the echo */
    if (piece.prompt && api->lp_pairs == (uint32_t) piece.n_top + 1
        && api->oai->echo)
    {
        (void) ngx_http_fairgate_lp_prompt(api, api->lp_id[0]);
    }
}


/*
 * A prompt position's entry (echo), kept in api->plps, every choice's
 * first (a stream's first chunk sends them); before the first, the
 * prompt's first token's, which has no log-probability (null, NaN here).
 * Their bytes, plp_bytes, are where the completions' offsets start.
 */
static ngx_int_t
ngx_http_fairgate_lp_prompt(ngx_http_fairgate_api_t *api, int32_t id)
{
    u_char     *p;
    size_t      offset;
    ngx_int_t   rc;

    if (api->lp_piece == NULL && ngx_http_fairgate_lp_init(api) != NGX_OK) {
        return NGX_ERROR;
    }

    if (api->plps == NULL) {
        api->plps = ngx_array_create(api->request->pool, 64,
                                     sizeof(fg_oai_lp_t));
        if (api->plps == NULL) {
            return NGX_ERROR;
        }
    }

    if (api->plps->nelts == 0 && api->n_ids > 0) {
        p = api->lp_piece;
        ngx_http_fairgate_lp_bytes(api, api->ids[0], NAN, &p, &api->lp.tok);
        api->lp.n_top = 0;
        api->plp_bytes += api->lp.tok.len;

        if (ngx_http_fairgate_lp_keep(api, api->plps) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    /* the choice's own offset stays where it is */
    offset = api->lp_offset;
    rc = ngx_http_fairgate_lp_entry(api, id, api->plps);
    api->plp_bytes += api->lp_offset - offset;
    api->lp_offset = offset;

    return rc;
}


ngx_int_t
ngx_http_fairgate_lp_token(ngx_http_fairgate_api_t *api, fg_shm_comp_t *ev)
{
    /* one body's list is made with the first */
    if (api->lp_piece == NULL && ngx_http_fairgate_lp_init(api) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_fairgate_lp_entry(api, ev->token,
                                      api->stream ? NULL : api->lps);
}


/* token's entry from the pairs kept for it: kept in keep, or (NULL) a
 * stream's chunk's */
static ngx_int_t
ngx_http_fairgate_lp_entry(ngx_http_fairgate_api_t *api, int32_t token,
    ngx_array_t *keep)
{
    size_t        offset;
    u_char       *p;
    uint32_t      i, n;
    fg_oai_lp_t  *lp;

    if (api->lp_piece == NULL && ngx_http_fairgate_lp_init(api) != NGX_OK) {
        return NGX_ERROR;
    }

    lp = &api->lp;
    p = api->lp_piece;

    /* the pairs the engine sent for this token; none (a piece lost or
     * out of order) is OpenAI's floor, without alternatives */
    if (api->lp_pairs == 0 || api->lp_id[0] != token) {
        api->lp_pairs = 1;
        api->lp_lp[0] = -9999.0f;
    }

    ngx_http_fairgate_lp_bytes(api, token, api->lp_lp[0], &p, &lp->tok);

    /* what the request asked for, whatever the engine sent */
    n = ngx_min(api->lp_pairs - 1, api->oai->top_logprobs);
    n = ngx_min(n, FG_OAI_MAX_TOP_CHAT);

    for (i = 0; i < n; i++) {
        ngx_http_fairgate_lp_bytes(api, api->lp_id[i + 1],
                                   api->lp_lp[i + 1], &p, &lp->top[i]);
    }

    lp->n_top = n;
    api->lp_pairs = 0;

    offset = api->lp_offset;
    api->lp_offset += lp->tok.len;

    if (keep) {
        return ngx_http_fairgate_lp_keep(api, keep);
    }

    return ngx_http_fairgate_lp_render(api, lp, 1, offset);
}


ngx_int_t
ngx_http_fairgate_lp_prompt_json(ngx_http_fairgate_api_t *api)
{
    if (api->plps == NULL || api->plps->nelts == 0) {
        return NGX_OK;
    }

    /* the completion's offsets follow the prompt's */
    api->lp_offset += api->plp_bytes;

    return ngx_http_fairgate_lp_render(api, api->plps->elts,
                                       api->plps->nelts, 0);
}


/* the JSON of the prompt's entries (echo), then a's, into api->resp.lp */
static ngx_int_t
ngx_http_fairgate_lp_join(ngx_http_fairgate_api_t *api, ngx_array_t *a)
{
    size_t        np, na;
    fg_oai_lp_t  *all;

    np = api->plps ? api->plps->nelts : 0;
    na = a ? a->nelts : 0;

    if (np == 0 || na == 0) {
        /* none with text: an empty list */
        return ngx_http_fairgate_lp_render(api,
                                           np ? api->plps->elts
                                              : (a ? a->elts : NULL),
                                           np + na, 0);
    }

    all = ngx_palloc(api->request->pool, (np + na) * sizeof(fg_oai_lp_t));
    if (all == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(all, api->plps->elts, np * sizeof(fg_oai_lp_t));
    ngx_memcpy(all + np, a->elts, na * sizeof(fg_oai_lp_t));

    return ngx_http_fairgate_lp_render(api, all, np + na, 0);
}


ngx_int_t
ngx_http_fairgate_lp_body(ngx_http_fairgate_api_t *api)
{
    if (!api->oai->logprobs) {
        return NGX_OK;
    }

    return ngx_http_fairgate_lp_join(api, api->lps);
}


ngx_int_t
ngx_http_fairgate_lp_choices(ngx_http_fairgate_api_t *api, size_t *len)
{
    u_char                      *p;
    uint32_t                     i;
    ngx_array_t                 *a;
    ngx_http_fairgate_choice_t  *ch;

    *len = 0;

    if (!api->oai->logprobs) {
        return NGX_OK;
    }

    for (i = 0; i < api->n_choices; i++) {
        ch = &api->choices[i];
        a = ch->lps;

        if (ngx_http_fairgate_lp_join(api, a) != NGX_OK) {
            return NGX_ERROR;
        }

        /* the scratch is the next choice's: a copy each */
        p = ngx_pnalloc(api->request->pool, api->resp.lp_len);
        if (p == NULL) {
            return NGX_ERROR;
        }

        ngx_memcpy(p, api->resp.lp, api->resp.lp_len);
        ch->lp = (const char *) p;
        ch->lp_len = api->resp.lp_len;
        *len += ch->lp_len;
    }

    api->resp.lp = NULL;
    api->resp.lp_len = 0;

    return NGX_OK;
}
