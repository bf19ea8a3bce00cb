
/*
 * fairgate: the reader's expectations in the protocol (version 3): a
 * worker's client submits a TTFT target and a reading speed, and the
 * engine's side of the segment (in this process) hands them to its take
 * callback as given, for a prompt of one slot and one of several; none
 * given arrives as 0; values the protocol cannot mean are refused at the
 * client.
 */


#include <math.h>
#include <unistd.h>

#include "fg_tap.h"
#include "fg_test_shm.h"
#include "fg_shm_client.h"
#include "fg_shm_engine.h"


typedef struct {
    uint32_t  n;
    uint32_t  n_prompt[4];
    float     ttft[4];
    float     speed[4];
} taken_t;


static int
take(void *ctx, const fg_shm_request_t *req)
{
    taken_t  *t;

    t = ctx;

    if (t->n < 4) {
        t->n_prompt[t->n] = req->n_prompt;
        t->ttft[t->n] = req->ttft_target;
        t->speed[t->n] = req->tokens_per_s;
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
submit(fg_shm_client_t *c, uint64_t id, uint32_t n, float ttft, float speed)
{
    int32_t          prompt[600];
    uint32_t         i;
    fg_shm_submit_t  req;

    for (i = 0; i < n; i++) {
        prompt[i] = (int32_t) (i % 1000);
    }

    memset(&req, 0, sizeof(req));
    req.req_id = id;
    req.prompt = prompt;
    req.n_prompt = n;
    req.max_tokens = 4;
    req.ttft_target = ttft;
    req.tokens_per_s = speed;

    return fg_shm_client_submit(c, &req);
}


int
main(void)
{
    char                    name[64], err[256];
    taken_t                 t;
    fg_shm_engine_t        *e;
    fg_shm_client_t        *c;
    const fg_shm_header_t  *h;

    snprintf(name, sizeof(name), "/fg-test-expect-%d", (int) getpid());

    e = fg_test_shm_engine(name, 64, err, sizeof(err));
    c = fg_shm_client_create(name, 0, err, sizeof(err));

    ok(e != NULL && c != NULL, "an engine's segment and a client");

    if (e == NULL || c == NULL) {
        return fg_tap_done();
    }

    h = fg_shm_engine_header(e);
    ok(h->version >= 3, "protocol version 3 or later (%u)", h->version);
    is_int(h->slot_size, sizeof(fg_shm_sub_t), "the slot with the two "
           "fields at its end");
    is_int(offsetof(fg_shm_sub_t, n_choices), 120, "version 5's choices "
           "where the 64-bit reserved field was");
    is_int(offsetof(fg_shm_sub_t, ttft_target), 1024, "version 3's two "
           "fields at 1024, after the tokens");
    is_int(offsetof(fg_shm_sub_t, frequency_penalty), 1032, "version 4's "
           "block at 1032");
    is_int(offsetof(fg_shm_sub_t, embed), 2080, "version 6's at 2080");
    is_int(offsetof(fg_shm_sub_t, n_grammar), 2088, "version 7's at 2088");
    is_int(h->slot_size, 2096, "a slot of 2096 bytes");
    is_int(fg_shm_client_attach(c, err, sizeof(err)), FG_SHM_OK,
           "the client attaches");

    is_int(submit(c, 1, 10, 0.5f, 3.25f), FG_SHM_OK, "one slot");
    is_int(submit(c, 2, 500, 2.0f, 12.0f), FG_SHM_OK, "three slots");
    is_int(submit(c, 3, 10, 0.0f, 0.0f), FG_SHM_OK, "none given");
    is_int(submit(c, 4, 10, -1.0f, 5.0f), FG_SHM_EINVAL,
           "a negative TTFT target is refused");
    is_int(submit(c, 5, 10, 1.0f, NAN), FG_SHM_EINVAL,
           "a speed that is not a number is refused");
    is_int(submit(c, 6, 10, INFINITY, 1.0f), FG_SHM_EINVAL,
           "an infinite TTFT target is refused");

    memset(&t, 0, sizeof(t));
    is_int(fg_shm_engine_take(e, 4, take, cancel, &t), 3,
           "the engine takes the three");
    is_int(t.n, 3, "three requests reached the callback");
    ok(t.n_prompt[0] == 10 && t.ttft[0] == 0.5f && t.speed[0] == 3.25f,
       "one slot: 0.5 s and 3.25 tokens/s arrive (%g, %g)",
       (double) t.ttft[0], (double) t.speed[0]);
    ok(t.n_prompt[1] == 500 && t.ttft[1] == 2.0f && t.speed[1] == 12.0f,
       "three slots: read from the first (%g, %g)",
       (double) t.ttft[1], (double) t.speed[1]);
    ok(t.ttft[2] == 0.0f && t.speed[2] == 0.0f,
       "none given arrives as 0, the engine's default");

    fg_shm_client_destroy(c);
    fg_shm_engine_destroy(e);

    return fg_tap_done();
}
