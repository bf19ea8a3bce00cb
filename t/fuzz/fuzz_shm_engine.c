
/*
 * fairgate: libFuzzer target of the engine's reading of the rings the
 * gateway's workers write (engine/shm/fg_shm_engine_ring.c): submission and
 * cancel slots of any content, tails anywhere, worker entries in any
 * state, as a buggy or hostile worker could leave them.  The engine must
 * neither crash nor hand its scheduler a request beyond its limits.
 *
 *     make fuzz-shm_engine-run FUZZ_TIME=300
 *
 * The input: byte 0 how far the submission tail moves, 1 the cancel
 * tail's, 2-5 each worker's state (low 2 bits) and epoch, 6 and 7 what
 * the scheduler answers; then 128 bytes over the start of each submission
 * slot from the head on (its fields before the tokens), then 16 bytes over
 * each cancel slot.
 */


#include <string.h>

#include "fuzz_shm_common.h"


#define FUZZ_SHM_SUB_HEAD  128


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static int
fuzz_shm_take(void *ctx, const fg_shm_request_t *req)
{
    uint8_t   *rc = ctx;
    uint32_t   i;
    int64_t    sum;

    if (req->n_prompt > FUZZ_SHM_CONTEXT || req->n_stop > FG_SHM_MAX_STOP
        || req->worker >= FUZZ_SHM_WORKERS)
    {
        abort();
    }

    /* every token the engine hands over is readable: ASan checks */
    sum = 0;

    for (i = 0; i < req->n_prompt; i++) {
        sum += req->prompt[i];
    }

    for (i = 0; i < req->n_stop; i++) {
        sum += req->stop[i];
    }

    *rc = (uint8_t) ((*rc >> 2) | (*rc << 6));

    switch (*rc & 3) {
    case 0:
        return 0;
    case 1:
        return FG_SHM_ERR_FULL;
    case 2:
        return sum == 42 ? -1 : 0;
    default:
        return -1;
    }
}


static int
fuzz_shm_cancel(void *ctx, uint32_t worker, uint64_t req_id)
{
    (void) ctx;

    if (worker >= FUZZ_SHM_WORKERS) {
        abort();
    }

    return (int) (req_id & 1);
}


static void
fuzz_shm_lost(void *ctx, uint32_t worker)
{
    (void) ctx;

    if (worker >= FUZZ_SHM_WORKERS) {
        abort();
    }
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    void                   *base;
    size_t                  k, n;
    uint8_t                 rc;
    uint32_t                w;
    fg_shm_mpsc_t          *sub, *can;
    fg_shm_worker_t        *wk;
    fg_shm_engine_t        *e;
    const uint8_t          *in;
    const fg_shm_header_t  *h;

    if (size < 8) {
        return 0;
    }

    in = data;
    e = fuzz_shm_engine();
    h = fg_shm_engine_header(e);
    base = (void *) h;

    sub = fg_shm_at(base, h->sub_off, fg_shm_mpsc_t);
    can = fg_shm_at(base, h->cancel_off, fg_shm_mpsc_t);

    for (w = 0; w < FUZZ_SHM_WORKERS; w++) {
        wk = fg_shm_worker(base, h, w);
        wk->state = data[2 + w] & 3;
        wk->epoch = data[2 + w] >> 2;
        wk->pid = getpid();
        wk->heartbeat_ns = fg_shm_now();
        wk->head = wk->tail - (data[2 + w] & 7);
    }

    data += 8;
    size -= 8;

    for (k = 0; k < FUZZ_SHM_SLOTS && size; k++) {
        n = size < FUZZ_SHM_SUB_HEAD ? size : FUZZ_SHM_SUB_HEAD;
        memcpy(fg_shm_sub_slot(base, h, sub->head + k), data, n);
        data += n;
        size -= n;
    }

    for (k = 0; k < FUZZ_SHM_SLOTS && size; k++) {
        n = size < sizeof(fg_shm_cancel_t) ? size : sizeof(fg_shm_cancel_t);
        memcpy(fg_shm_cancel_slot(base, h, can->head + k), data, n);
        data += n;
        size -= n;
    }

    /* the tails as the workers would publish them, or anywhere */
    fg_shm_store(&sub->tail, sub->head + (in[0] & 15)
                             + (in[0] & 0x80 ? UINT64_C(1) << 40 : 0));
    fg_shm_store(&can->tail, can->head + (in[1] & 15));

    rc = in[6];

    (void) fg_shm_engine_take(e, in[7] & 15, fuzz_shm_take, fuzz_shm_cancel,
                              &rc);
    fg_shm_engine_flush(e, fuzz_shm_lost, NULL);

    /* the next input starts from empty rings */
    fg_shm_store(&sub->tail, sub->head);
    fg_shm_store(&can->tail, can->head);

    return 0;
}
