
/*
 * fairgate: the logits' adjustments and the log-probabilities in the
 * protocol (version 4): a worker's client submits penalties, min_p,
 * logit_bias and a request for logprobs, and the engine's side of the
 * segment (in this process) hands them to its take callback as given,
 * for a prompt of one slot and one of several; none given arrives as the
 * engine's "off"; more bias entries or alternatives than the slot holds
 * are refused at the client; a token's log-probabilities reach the
 * worker's poll as the engine wrote them, in pieces before its
 * completion.  Version 5: the choices a submission asks for, and the
 * choice each completion and piece is of.
 */


#include <unistd.h>

#include "fg_tap.h"
#include "fg_test_shm.h"
#include "fg_shm_client.h"
#include "fg_shm_engine.h"


typedef struct {
    uint32_t          n;
    uint32_t          worker;
    fg_shm_request_t  req[4];
    int32_t           bias_id[4][FG_SHM_MAX_BIAS];
    float             bias[4][FG_SHM_MAX_BIAS];
} taken_t;


static int
take(void *ctx, const fg_shm_request_t *req)
{
    taken_t  *t;

    t = ctx;

    if (t->n < 4) {
        /* the pointers are the engine's for the call alone */
        t->req[t->n] = *req;
        memcpy(t->bias_id[t->n], req->bias_id,
               req->n_bias * sizeof(int32_t));
        memcpy(t->bias[t->n], req->bias, req->n_bias * sizeof(float));
        t->worker = req->worker;
        t->n++;
    }

    return 0;
}


static int
cancel(void *ctx, uint32_t worker, uint64_t req_id)
{
    (void) ctx;
    (void) worker;
    (void) req_id;

    return -1;
}


static int
submit(fg_shm_client_t *c, uint64_t id, uint32_t n, uint32_t n_bias,
    uint32_t top)
{
    float            bias[FG_SHM_MAX_BIAS + 1];
    int32_t          prompt[600], bias_id[FG_SHM_MAX_BIAS + 1];
    uint32_t         i;
    fg_shm_submit_t  req;

    for (i = 0; i < n; i++) {
        prompt[i] = (int32_t) (i % 1000);
    }

    for (i = 0; i < n_bias; i++) {
        bias_id[i] = (int32_t) (3 * i + 1);
        bias[i] = (float) i - 50.0f;
    }

    memset(&req, 0, sizeof(req));
    req.req_id = id;
    req.prompt = prompt;
    req.n_prompt = n;
    req.max_tokens = 4;
    req.n_choices = (id == 2) ? 3 : (id == 6) ? FG_SHM_MAX_CHOICES + 1 : 0;

    if (id != 3) {
        req.frequency_penalty = 0.5f;
        req.presence_penalty = -1.25f;
        req.repetition_penalty = 1.1f;
        req.min_p = 0.05f;
        req.bias_id = bias_id;
        req.bias = bias;
        req.n_bias = n_bias;
        req.logprobs = 1;
        req.top_logprobs = top;
    }

    return fg_shm_client_submit(c, &req);
}


static int
sampling_as_sent(const taken_t *t, uint32_t i, uint32_t n_bias,
    uint32_t top)
{
    uint32_t                 k;
    const fg_shm_request_t  *r;

    r = &t->req[i];

    for (k = 0; k < n_bias; k++) {
        if (t->bias_id[i][k] != (int32_t) (3 * k + 1)
            || t->bias[i][k] != (float) k - 50.0f)
        {
            return 0;
        }
    }

    return r->frequency_penalty == 0.5f && r->presence_penalty == -1.25f
           && r->repetition_penalty == 1.1f && r->min_p == 0.05f
           && r->n_bias == n_bias && r->top_logprobs == top
           && (r->flags & FG_SHM_SUB_LOGPROBS);
}


static void
test_logprobs_pieces(fg_shm_engine_t *e, fg_shm_client_t *c, uint32_t w)
{
    int            same, order;
    float          lps[FG_SHM_MAX_TOP + 1], got_lp[FG_SHM_MAX_TOP + 1];
    size_t         n, k;
    int32_t        ids[FG_SHM_MAX_TOP + 1], got_id[FG_SHM_MAX_TOP + 1];
    fg_shm_lp_t    p;
    fg_shm_comp_t  in[16], done;

    for (k = 0; k <= FG_SHM_MAX_TOP; k++) {
        ids[k] = (int32_t) (100 + k);
        lps[k] = -0.5f - (float) k;
    }

    /* the token 100 with its 20 alternatives, then its completion */
    fg_shm_engine_logprobs(e, w, 1, 2, 0, ids, lps, FG_SHM_MAX_TOP + 1);

    memset(&done, 0, sizeof(done));
    done.req_id = 1;
    done.token = 100;
    done.choice = 2;
    fg_shm_engine_complete(e, w, &done);

    n = fg_shm_client_poll(c, in, 16);
    is_int(n, 12, "11 pieces of 2 pairs (the last of one), then the token");

    same = 1;
    order = 1;

    for (k = 0; k + 1 < n; k++) {
        if (!fg_shm_lp_get(&in[k], &p)) {
            same = 0;
            break;
        }

        order &= p.req_id == 1 && p.index == 2 * k && p.n_top == 20
                 && p.finish == FG_SHM_FINISH_NONE && p.choice == 2;
        memcpy(&got_id[p.index], p.id, p.n * sizeof(int32_t));
        memcpy(&got_lp[p.index], p.lp, p.n * sizeof(float));
    }

    ok(order, "each piece: the request, its choice, its place, the count, "
       "no finish");
    ok(same && memcmp(got_id, ids, sizeof(ids)) == 0
       && memcmp(got_lp, lps, sizeof(lps)) == 0,
       "the 21 pairs arrive as the engine wrote them, the token's first");
    ok(n == 12 && !fg_shm_lp_get(&in[11], &p) && in[11].token == 100
       && in[11].choice == 2,
       "the token's completion last, not a piece, with its choice");

    in[0].reserved = FG_SHM_COMP_LP;
    in[0].n_prompt = 0;
    memcpy(&p, &in[0], sizeof(p));
    p.n = 3;
    memcpy(&in[0], &p, sizeof(p));
    ok(!fg_shm_lp_get(&in[0], &p), "a piece claiming 3 pairs is refused");
}


int
main(void)
{
    char                    name[64], err[256];
    taken_t                 t;
    fg_shm_engine_t        *e;
    fg_shm_client_t        *c;
    const fg_shm_header_t  *h;

    snprintf(name, sizeof(name), "/fg-test-sampling-%d", (int) getpid());

    e = fg_test_shm_engine(name, 64, err, sizeof(err));
    c = fg_shm_client_create(name, 0, err, sizeof(err));

    ok(e != NULL && c != NULL, "an engine's segment and a client");

    if (e == NULL || c == NULL) {
        return fg_tap_done();
    }

    h = fg_shm_engine_header(e);
    ok(h->version >= 4, "protocol version 4 or later (%u)", h->version);
    is_int(h->slot_size, sizeof(fg_shm_sub_t), "the slot with the version "
           "4 block");
    is_int(fg_shm_client_attach(c, err, sizeof(err)), FG_SHM_OK,
           "the client attaches");

    is_int(submit(c, 1, 10, 2, 5), FG_SHM_OK, "one slot");
    is_int(submit(c, 2, 500, FG_SHM_MAX_BIAS, FG_SHM_MAX_TOP), FG_SHM_OK,
           "three slots, the most bias entries and alternatives");
    is_int(submit(c, 3, 10, 0, 0), FG_SHM_OK, "none given");
    is_int(submit(c, 4, 10, FG_SHM_MAX_BIAS + 1, 0), FG_SHM_EINVAL,
           "one bias entry too many is refused");
    is_int(submit(c, 5, 10, 0, FG_SHM_MAX_TOP + 1), FG_SHM_EINVAL,
           "21 alternatives are refused");
    is_int(submit(c, 6, 10, 0, 0), FG_SHM_EINVAL, "17 choices are refused");

    memset(&t, 0, sizeof(t));
    is_int(fg_shm_engine_take(e, 4, take, cancel, &t), 3,
           "the engine takes the three");
    ok(t.n == 3 && t.req[0].n_prompt == 10 && sampling_as_sent(&t, 0, 2, 5),
       "one slot: penalties, min_p, 2 biases, 5 alternatives arrive");
    ok(t.req[1].n_prompt == 500
       && sampling_as_sent(&t, 1, FG_SHM_MAX_BIAS, FG_SHM_MAX_TOP),
       "three slots: all 128 biases and 20 alternatives, from the first");
    ok(t.req[0].n_choices == 1 && t.req[1].n_choices == 3
       && t.req[2].n_choices == 1, "3 choices arrive; none given is one");
    ok(t.req[2].frequency_penalty == 0 && t.req[2].presence_penalty == 0
       && t.req[2].repetition_penalty == 0 && t.req[2].min_p == 0
       && t.req[2].n_bias == 0 && t.req[2].top_logprobs == 0
       && !(t.req[2].flags & FG_SHM_SUB_LOGPROBS),
       "none given arrives as 0: off, no logprobs");

    test_logprobs_pieces(e, c, t.worker);

    fg_shm_client_destroy(c);
    fg_shm_engine_destroy(e);

    return fg_tap_done();
}
