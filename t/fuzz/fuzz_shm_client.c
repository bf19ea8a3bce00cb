
/*
 * fairgate: libFuzzer target of the gateway's reading of the engine's
 * side of the segment (engine/shm/fg_shm_client.c, in every nginx
 * worker): a header of any content when the worker attaches or after it
 * did, completion events and ring indices anywhere, a status and a prefix
 * index of any bytes, as a buggy or hostile engine could leave them.
 *
 *     make fuzz-shm_client-run FUZZ_TIME=300
 *
 * The input: byte 0 says when the header is spoilt (bit 0: before the
 * attach, else after it) and how far the completion tail moves; then the
 * bytes XORed over the header, the completion ring, the status and the
 * index's head and first table slots, in that order (a short input leaves
 * the rest as the engine wrote it).
 */


#include <string.h>

#include "fuzz_shm_common.h"
#include "fg_shm_client.h"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


/* XORs the next bytes of the input over n bytes at p */
static void
fuzz_shm_spoil(void *p, size_t n, const uint8_t **data, size_t *size)
{
    size_t    i;
    uint8_t  *q = p;

    n = n < *size ? n : *size;

    for (i = 0; i < n; i++) {
        q[i] ^= (*data)[i];
    }

    *data += n;
    *size -= n;
}


/*
 * What the client can be asked, against whatever it maps.  Not submit and
 * cancel when the header moved a ring: its producers' lock would be any
 * bytes, and glibc's pthread_mutex_trylock() on a mutex that is no mutex
 * may crash; that lock is the one part of the segment the gateway must
 * trust the engine with (docs/reliability.md, "Fuzzing").
 */
static void
fuzz_shm_use(fg_shm_client_t *c, int lock)
{
    char             err[256];
    int32_t          prompt[300];
    uint64_t         hashes[4] = { 2, 3, 0x1234567890abcdef, 99 };
    fg_shm_comp_t    ev[16];
    fg_shm_load_t    load;
    fg_shm_submit_t  req;

    memset(&req, 0, sizeof(req));
    memset(prompt, 0, sizeof(prompt));
    req.req_id = 7;
    req.prompt = prompt;
    req.n_prompt = 300;
    req.max_tokens = 4;

    (void) fg_shm_client_poll(c, ev, 16);
    (void) fg_shm_client_status(c, &load);
    (void) fg_shm_client_prefix_match(c, hashes, 4);
    if (lock) {
        (void) fg_shm_client_submit(c, &req);
        (void) fg_shm_client_cancel(c, 7);
    }

    (void) fg_shm_client_engine_age_ms(c);
    (void) fg_shm_client_tick(c, err, sizeof(err));
    (void) fg_shm_client_poll(c, ev, 16);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char              err[256];
    void             *base;
    uint8_t           how;
    uint32_t          w;
    fg_shm_mpsc_t    *sub;
    fg_shm_index_t   *ix;
    fg_shm_worker_t  *wk;
    fg_shm_status_t  *st;
    fg_shm_header_t  *h, saved;
    fg_shm_client_t  *c;

    if (size < 1) {
        return 0;
    }

    h = (fg_shm_header_t *) fg_shm_engine_header(fuzz_shm_engine());
    base = h;
    saved = *h;
    how = data[0];
    data++;
    size--;

    c = fg_shm_client_create(fuzz_shm_name, 0, err, sizeof(err));
    if (c == NULL) {
        abort();
    }

    if (how & 1) {
        fuzz_shm_spoil(h, sizeof(fg_shm_header_t), &data, &size);
    }

    if (fg_shm_client_attach(c, err, sizeof(err)) == FG_SHM_OK) {
        w = fg_shm_client_info(c)->worker;
        wk = fg_shm_worker(base, &saved, w);
        st = fg_shm_at(base, saved.status_off, fg_shm_status_t);
        ix = fg_shm_index(base, &saved);

        if (!(how & 1)) {
            fuzz_shm_spoil(h, sizeof(fg_shm_header_t), &data, &size);
        }

        fuzz_shm_spoil(fg_shm_comp_slot(wk, &saved, 0),
                       saved.comp_slots * sizeof(fg_shm_comp_t),
                       &data, &size);
        fuzz_shm_spoil(st, sizeof(fg_shm_status_t), &data, &size);
        fuzz_shm_spoil(ix, sizeof(fg_shm_index_t)
                           + 64 * sizeof(uint64_t), &data, &size);

        wk->tail += (how >> 1) & 15;

        if (how & 0x80) {
            wk->tail += UINT64_C(1) << 40;
        }

        /* spoilt after the attach, the header is no longer read */
        fuzz_shm_use(c, !(how & 1) || (h->sub_off == saved.sub_off
                                       && h->cancel_off == saved.cancel_off));
    }

    fg_shm_client_destroy(c);

    /* the segment as the engine made it, every worker entry free */
    memcpy(h, &saved, sizeof(fg_shm_header_t));
    memset(fg_shm_at(base, saved.status_off, fg_shm_status_t), 0,
           sizeof(fg_shm_status_t));
    fg_shm_store(&fg_shm_at(base, saved.status_off,
                            fg_shm_status_t)->heartbeat_ns, fg_shm_now());
    memset(fg_shm_index(base, &saved), 0, sizeof(fg_shm_index_t)
                                          + 64 * sizeof(uint64_t));

    for (w = 0; w < saved.max_workers; w++) {
        memset(fg_shm_worker(base, &saved, w), 0, saved.worker_size);
    }

    sub = fg_shm_at(base, saved.sub_off, fg_shm_mpsc_t);
    sub->head = sub->tail;
    sub = fg_shm_at(base, saved.cancel_off, fg_shm_mpsc_t);
    sub->head = sub->tail;

    return 0;
}
