
/*
 * fairgate: structured output in the protocol (version 7): a worker's
 * client submits a grammar's GBNF text with its prompt, and the engine's
 * side of the segment (in this process) hands both to its take callback
 * as given: a text over several slots after a prompt of several, one of
 * a byte, none; the submission after each is read whole from where it
 * starts.  A text over FG_SHM_MAX_GRAMMAR is refused at the client, and a
 * slot count that does not add up is refused by the engine.
 */


#include <unistd.h>

#include "fg_tap.h"
#include "fg_test_shm.h"
#include "fg_shm_client.h"
#include "fg_shm_engine.h"


#define N_TAKEN  4


typedef struct {
    uint32_t          n;
    fg_shm_request_t  req[N_TAKEN];
    int32_t           prompt[N_TAKEN][600];
    char              grammar[N_TAKEN][4096];
} taken_t;


static int
take(void *ctx, const fg_shm_request_t *req)
{
    taken_t  *t;

    t = ctx;

    if (t->n < N_TAKEN && req->n_prompt <= 600 && req->n_grammar <= 4096) {
        /* the pointers are the engine's for the call alone */
        t->req[t->n] = *req;
        memcpy(t->prompt[t->n], req->prompt,
               req->n_prompt * sizeof(int32_t));

        if (req->grammar) {
            memcpy(t->grammar[t->n], req->grammar, req->n_grammar);
        }

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


static char  text[FG_SHM_MAX_GRAMMAR + 2];


static int
submit(fg_shm_client_t *c, uint64_t id, uint32_t n, uint32_t n_grammar)
{
    int32_t          prompt[600];
    uint32_t         i;
    fg_shm_submit_t  req;

    for (i = 0; i < n; i++) {
        prompt[i] = (int32_t) ((i * 7 + id) % 1000);
    }

    memset(&req, 0, sizeof(req));
    req.req_id = id;
    req.prompt = prompt;
    req.n_prompt = n;
    req.max_tokens = 4;
    req.grammar = n_grammar ? text : NULL;
    req.n_grammar = n_grammar;

    return fg_shm_client_submit(c, &req);
}


static int
as_sent(const taken_t *t, uint32_t k, uint64_t id, uint32_t n,
    uint32_t n_grammar)
{
    uint32_t                 i;
    const fg_shm_request_t  *r;

    r = &t->req[k];

    if (r->req_id != id || r->n_prompt != n || r->n_grammar != n_grammar
        || (n_grammar == 0) != (r->grammar == NULL)
        || memcmp(t->grammar[k], text, n_grammar) != 0)
    {
        return 0;
    }

    for (i = 0; i < n; i++) {
        if (t->prompt[k][i] != (int32_t) ((i * 7 + id) % 1000)) {
            return 0;
        }
    }

    return 1;
}


int
main(void)
{
    char              name[64], err[256];
    uint32_t          i;
    taken_t          *t;
    fg_shm_engine_t  *e;
    fg_shm_client_t  *c;

    snprintf(name, sizeof(name), "/fg-test-grammar-%d", (int) getpid());

    for (i = 0; i < sizeof(text); i++) {
        text[i] = (char) ('a' + (i * 31 + i / 7) % 26);
    }

    e = fg_test_shm_engine(name, 64, err, sizeof(err));
    c = fg_shm_client_create(name, 0, err, sizeof(err));
    t = calloc(1, sizeof(taken_t));

    ok(e != NULL && c != NULL && t != NULL, "an engine and a client");

    if (e == NULL || c == NULL || t == NULL) {
        return fg_tap_done();
    }

    is_int(fg_shm_engine_header(e)->version, 7, "protocol version 7");
    is_int(fg_shm_client_attach(c, err, sizeof(err)), FG_SHM_OK,
           "the client attaches");

    is_int(fg_shm_sub_slots(300, 2500), 2 + 3, "300 tokens and 2500 bytes "
           "take 2 + 3 slots");
    is_int(fg_shm_sub_slots(10, 0), 1, "no grammar: the prompt's slots");

    is_int(submit(c, 1, 300, 2500), FG_SHM_OK, "two prompt slots, three "
           "grammar slots");
    is_int(submit(c, 2, 1, 1), FG_SHM_OK, "a grammar of one byte");
    is_int(submit(c, 3, 10, 0), FG_SHM_OK, "none");
    is_int(submit(c, 4, 5, FG_SHM_SLOT_BYTES), FG_SHM_OK,
           "a grammar of exactly one slot");
    is_int(submit(c, 5, 10, FG_SHM_MAX_GRAMMAR + 1), FG_SHM_EINVAL,
           "a grammar over the most is refused");

    is_int(fg_shm_engine_take(e, 8, take, cancel, t), 4,
           "the engine takes the four");
    ok(t->n == 4 && as_sent(t, 0, 1, 300, 2500),
       "the prompt and the grammar over five slots arrive as sent");
    ok(as_sent(t, 1, 2, 1, 1), "one token, one byte");
    ok(as_sent(t, 2, 3, 10, 0), "none given: no grammar");
    ok(as_sent(t, 3, 4, 5, FG_SHM_SLOT_BYTES), "one slot's worth");

    free(t);
    fg_shm_client_destroy(c);
    fg_shm_engine_destroy(e);

    return fg_tap_done();
}
