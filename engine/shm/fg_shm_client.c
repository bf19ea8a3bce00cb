
/*
 * fairgate: the gateway's half of the shared-memory protocol: a worker
 * attaches to the engine's segment, submits and cancels through the
 * rings towards the engine, reads its own completion ring, and follows
 * the engine's status and generation (docs/engine-protocol.md).
 */


#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fg_err.h"
#include "fg_shm_client.h"


#define FG_SHM_DEF_DEAD_MS  2000

/* trylock attempts before a submission gives up with FG_SHM_EAGAIN; a
 * holder only copies a few slots, so this is rarely reached */
#define FG_SHM_SPINS        2000

/*
 * The last of those attempts yield the CPU first: a holder the scheduler
 * took off its CPU mid-copy (on a machine with fewer cores than
 * processes) holds the lock for a time slice, longer than any spin, and a
 * client turned away then would answer 503 for nothing.
 */
#define FG_SHM_YIELDS       64

/* seqlock reads before the status gives up with FG_SHM_EAGAIN */
#define FG_SHM_READS        100


struct fg_shm_client_s {
    char                name[FG_SHM_NAME_MAX + 2];
    int                 sock;
    char                sock_name[FG_SHM_SOCK_MAX];
    uint32_t            sock_len;
    uint64_t            dead_after_ns;

    void               *base;
    size_t              size;
    fg_shm_header_t    *h;                 /* &hdr once checked */
    fg_shm_header_t    *live;              /* the mapped one: its state */
    fg_shm_header_t     hdr;
    fg_shm_status_t    *st;
    fg_shm_mpsc_t      *sub;
    fg_shm_mpsc_t      *can;
    fg_shm_worker_t    *wk;
    uint32_t            epoch;
    fg_shm_info_t       info;

    unsigned            attached:1;
};


static const char  *fg_shm_finish_names[] = {
    "none", "stop", "length", "context", "cancel", "error", "refused"
};

static const char  *fg_shm_error_names[] = {
    "none", "invalid request", "prompt and max_tokens beyond the context",
    "beyond the KV cache", "engine full", "duplicate request id",
    "out of memory", "malformed submission"
};


const char *
fg_shm_finish_name(uint32_t finish)
{
    return finish <= FG_SHM_FINISH_REFUSED ? fg_shm_finish_names[finish]
                                           : "unknown";
}


const char *
fg_shm_error_name(uint32_t error)
{
    return error <= FG_SHM_ERR_PROTOCOL ? fg_shm_error_names[error]
                                        : "unknown";
}


fg_shm_client_t *
fg_shm_client_create(const char *name, uint32_t dead_after_ms, char *err,
    size_t errlen)
{
    fg_shm_client_t  *c;

    if (name == NULL || !fg_shm_name_valid(name)) {
        fg_err_printf(err, errlen, "shm name \"%s\": it must be a slash and 1 "
                      "to %d characters without another slash",
                      name ? name : "", FG_SHM_NAME_MAX);
        return NULL;
    }

    c = calloc(1, sizeof(fg_shm_client_t));

    if (c == NULL) {
        fg_err_printf(err, errlen, "out of memory");
        return NULL;
    }

    snprintf(c->name, sizeof(c->name), "%s", name);
    c->dead_after_ns = (uint64_t) (dead_after_ms ? dead_after_ms
                                                 : FG_SHM_DEF_DEAD_MS)
                       * 1000000ULL;

    c->sock = fg_shm_socket(c->sock_name, &c->sock_len);

    if (c->sock == -1) {
        fg_err_printf(err, errlen, "cannot make a wake-up socket: %s",
                      strerror(errno));
        free(c);
        return NULL;
    }

    return c;
}


void
fg_shm_client_destroy(fg_shm_client_t *c)
{
    if (c == NULL) {
        return;
    }

    fg_shm_client_detach(c);
    close(c->sock);
    free(c);
}


int
fg_shm_client_fd(const fg_shm_client_t *c)
{
    return c->sock;
}


int
fg_shm_client_attached(const fg_shm_client_t *c)
{
    return c->attached;
}


const fg_shm_info_t *
fg_shm_client_info(const fg_shm_client_t *c)
{
    return c->attached ? &c->info : NULL;
}


static int
fg_shm_client_engine_alive(const fg_shm_client_t *c, const fg_shm_header_t *h,
    const fg_shm_status_t *st)
{
    uint64_t  now, beat;

    now = fg_shm_now();
    beat = fg_shm_load(&st->heartbeat_ns);

    return fg_shm_load(&h->state) == FG_SHM_READY
           && (now < beat || now - beat <= c->dead_after_ns)
           && fg_shm_pid_alive(h->engine_pid, h->pidns);
}


/* checks a mapped header; FG_SHM_OK or a code with err filled */
static int
fg_shm_client_check(fg_shm_client_t *c, const fg_shm_header_t *h,
    size_t size, char *err, size_t errlen)
{
    uint64_t  end;

    if (h->magic != FG_SHM_MAGIC) {
        fg_err_printf(err, errlen, "shm %s is not a fairgate engine segment",
                      c->name);
        return FG_SHM_ERROR;
    }

    if (h->version != FG_SHM_VERSION) {
        fg_err_printf(err, errlen, "the engine behind shm %s speaks protocol "
                      "version %u, this gateway %d", c->name, h->version,
                      FG_SHM_VERSION);
        return FG_SHM_ERROR;
    }

    if (fg_shm_load(&h->state) != FG_SHM_READY) {
        fg_err_printf(err, errlen, "the engine behind shm %s is not ready",
                      c->name);
        return FG_SHM_EAGAIN;
    }

    if (h->mutex_size != sizeof(pthread_mutex_t)
        || h->slot_size != sizeof(fg_shm_sub_t)
        || h->slot_tokens != FG_SHM_SLOT_TOKENS
        || h->max_stop != FG_SHM_MAX_STOP
        || h->header_size != sizeof(fg_shm_header_t))
    {
        fg_err_printf(err, errlen, "shm %s was laid out by an engine built "
                      "otherwise (slot of %u bytes, here %zu)", c->name,
                      h->slot_size, sizeof(fg_shm_sub_t));
        return FG_SHM_ERROR;
    }

    /*
     * Every offset within the segment first, so that the sums below
     * cannot wrap, and 8-aligned: the atomics on what they locate need it
     */
    if (h->status_off > size || h->sub_off > size || h->cancel_off > size
        || h->workers_off > size || h->worker_size > size
        || h->index_off > size || h->max_workers > size
        || (h->status_off | h->sub_off | h->cancel_off | h->workers_off
            | h->worker_size | h->index_off) % 8)
    {
        fg_err_printf(err, errlen, "shm %s: a header that does not describe "
                      "its %zu bytes", c->name, size);
        return FG_SHM_ERROR;
    }

    end = h->workers_off + (uint64_t) h->max_workers * h->worker_size;

    if (h->segment_size != size || end > size
        || h->sub_off + FG_SHM_ALIGN(sizeof(fg_shm_mpsc_t))
           + (uint64_t) h->sub_slots * sizeof(fg_shm_sub_t) > size
        || h->cancel_off + FG_SHM_ALIGN(sizeof(fg_shm_mpsc_t))
           + (uint64_t) h->cancel_slots * sizeof(fg_shm_cancel_t) > size
        || h->worker_size < FG_SHM_ALIGN(sizeof(fg_shm_worker_t))
                            + (uint64_t) h->comp_slots * sizeof(fg_shm_comp_t)
        || h->status_off + sizeof(fg_shm_status_t) > size
        || h->sub_slots == 0 || (h->sub_slots & (h->sub_slots - 1))
        || h->cancel_slots == 0 || (h->cancel_slots & (h->cancel_slots - 1))
        || h->comp_slots == 0 || (h->comp_slots & (h->comp_slots - 1))
        || h->engine_sock_len == 0 || h->engine_sock_len > FG_SHM_SOCK_MAX
        || h->index_slots == 0 || (h->index_slots & (h->index_slots - 1))
        || h->index_off + FG_SHM_ALIGN(sizeof(fg_shm_index_t))
           + 2 * (uint64_t) h->index_slots * sizeof(uint64_t) > size)
    {
        fg_err_printf(err, errlen, "shm %s: a header that does not describe "
                      "its %zu bytes", c->name, size);
        return FG_SHM_ERROR;
    }

    return FG_SHM_OK;
}


static void
fg_shm_client_unmap(fg_shm_client_t *c)
{
    munmap(c->base, c->size);
    c->base = NULL;
    c->h = NULL;
    c->live = NULL;
    c->wk = NULL;
    c->attached = 0;
}


/* maps the segment under the client's name: FG_SHM_OK or why not */
static int
fg_shm_client_map(fg_shm_client_t *c, char *err, size_t errlen)
{
    int           fd, rc;
    void         *base;
    struct stat   st;

    fd = shm_open(c->name, O_RDWR, 0);

    if (fd == -1) {
        if (errno == ENOENT) {
            fg_err_printf(err, errlen, "no engine serves shm %s", c->name);
            return FG_SHM_EAGAIN;
        }

        rc = errno;
        fg_err_printf(err, errlen, "cannot open shm %s: %s (the segment is "
                      "mode 0660: run nginx's workers in the engine's "
                      "--shm-group)", c->name, strerror(rc));

        return rc == EACCES ? FG_SHM_ERROR : FG_SHM_EAGAIN;
    }

    if (fstat(fd, &st) != 0 || (size_t) st.st_size < sizeof(fg_shm_header_t))
    {
        close(fd);
        fg_err_printf(err, errlen, "shm %s is being created", c->name);
        return FG_SHM_EAGAIN;
    }

    base = mmap(NULL, (size_t) st.st_size, PROT_READ | PROT_WRITE,
                MAP_SHARED, fd, 0);
    close(fd);

    if (base == MAP_FAILED) {
        fg_err_printf(err, errlen, "cannot map shm %s: %s", c->name,
                      strerror(errno));
        return FG_SHM_ERROR;
    }

    c->base = base;
    c->size = (size_t) st.st_size;
    c->h = base;
    c->live = base;

    return FG_SHM_OK;
}


/* takes a free worker entry: its index, or max_workers when none is */
static uint32_t
fg_shm_client_claim(fg_shm_client_t *c)
{
    uint32_t          w, expect;
    fg_shm_worker_t  *wk;

    for (w = 0; w < c->h->max_workers; w++) {
        wk = fg_shm_worker(c->base, c->h, w);
        expect = FG_SHM_W_FREE;

        if (__atomic_compare_exchange_n(&wk->state, &expect,
                                        FG_SHM_W_ATTACHING, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        {
            break;
        }
    }

    return w;
}


/* fills the claimed entry w, makes it active and copies the engine's info */
static void
fg_shm_client_join(fg_shm_client_t *c, uint32_t w)
{
    fg_shm_header_t  *h;
    fg_shm_worker_t  *wk;

    h = c->h;
    wk = fg_shm_worker(c->base, h, w);

    fg_shm_store(&wk->heartbeat_ns, fg_shm_now());
    wk->pid = getpid();
    wk->pidns = fg_shm_pidns();
    memcpy(wk->sock, c->sock_name, c->sock_len);
    wk->sock_len = c->sock_len;

    /* the ring starts empty wherever the engine's index is */
    fg_shm_store(&wk->head, fg_shm_load(&wk->tail));
    fg_shm_store(&wk->armed, 0);

    c->epoch = __atomic_add_fetch(&wk->epoch, 1, __ATOMIC_ACQ_REL);
    c->wk = wk;
    c->sub = fg_shm_at(c->base, h->sub_off, fg_shm_mpsc_t);
    c->can = fg_shm_at(c->base, h->cancel_off, fg_shm_mpsc_t);

    fg_shm_store(&wk->state, FG_SHM_W_ACTIVE);

    memset(&c->info, 0, sizeof(c->info));
    c->info.generation = h->generation;
    c->info.engine_pid = h->engine_pid;
    c->info.shape = h->shape;
    c->info.worker = w;
    c->info.embd = h->embd;
    memcpy(c->info.model, h->model, sizeof(c->info.model) - 1);
    memcpy(c->info.backend, h->backend, sizeof(c->info.backend) - 1);
}


int
fg_shm_client_attach(fg_shm_client_t *c, char *err, size_t errlen)
{
    int       rc;
    uint32_t  w;

    if (c->attached) {
        return FG_SHM_OK;
    }

    rc = fg_shm_client_map(c, err, errlen);

    if (rc != FG_SHM_OK) {
        return rc;
    }

    rc = fg_shm_client_check(c, c->h, c->size, err, errlen);

    if (rc != FG_SHM_OK) {
        fg_shm_client_unmap(c);
        return rc;
    }

    /*
     * The layout is read from a copy of the header as checked: an engine
     * rewriting it later (a bug, or hostile) cannot move a ring beyond
     * the mapping.  Its state stays read from the segment.
     */
    c->hdr = *c->live;
    c->h = &c->hdr;

    c->st = fg_shm_at(c->base, c->h->status_off, fg_shm_status_t);

    /* a segment left by an engine that died: wait for the next one */
    if (!fg_shm_client_engine_alive(c, c->live, c->st)) {
        fg_err_printf(err, errlen, "the engine behind shm %s is not alive",
                      c->name);
        fg_shm_client_unmap(c);
        return FG_SHM_EAGAIN;
    }

    w = fg_shm_client_claim(c);

    if (w == c->h->max_workers) {
        fg_err_printf(err, errlen, "shm %s: all %u worker slots are taken",
                      c->name, c->h->max_workers);
        fg_shm_client_unmap(c);
        return FG_SHM_ERROR;
    }

    fg_shm_client_join(c, w);

    c->attached = 1;

    return FG_SHM_OK;
}


static int
fg_shm_client_mine(const fg_shm_client_t *c)
{
    return fg_shm_load(&c->wk->state) == FG_SHM_W_ACTIVE
           && fg_shm_load(&c->wk->epoch) == c->epoch;
}


void
fg_shm_client_detach(fg_shm_client_t *c)
{
    if (!c->attached) {
        return;
    }

    if (fg_shm_client_mine(c)) {
        fg_shm_store(&c->wk->state, FG_SHM_W_DETACHING);
        fg_shm_wake(c->sock, c->h->engine_sock, c->h->engine_sock_len);
    }

    fg_shm_client_unmap(c);
}


int
fg_shm_client_tick(fg_shm_client_t *c, char *err, size_t errlen)
{
    if (!c->attached) {
        return fg_shm_client_attach(c, err, errlen) == FG_SHM_OK
               ? FG_SHM_EV_BACK : FG_SHM_EV_NONE;
    }

    fg_shm_store(&c->wk->heartbeat_ns, fg_shm_now());

    if (fg_shm_client_engine_alive(c, c->live, c->st)
        && fg_shm_client_mine(c))
    {
        return FG_SHM_EV_NONE;
    }

    /* the engine is gone, or took this slot back (it found us stuck):
     * either way what was open is lost */
    fg_err_printf(err, errlen, "lost the engine behind shm %s", c->name);
    fg_shm_client_unmap(c);

    return FG_SHM_EV_LOST;
}


/* takes a ring's lock without ever sleeping on it: spins, then yields */
static int
fg_shm_lock(fg_shm_mpsc_t *r)
{
    int       rc;
    unsigned  i;

    for (i = 0; i < FG_SHM_SPINS; i++) {
        rc = pthread_mutex_trylock(&r->lock);

        if (rc == 0) {
            return 0;
        }

        if (rc == EOWNERDEAD) {
            /* its holder died: nothing it did not publish is visible */
            pthread_mutex_consistent(&r->lock);
            return 0;
        }

        if (rc != EBUSY) {
            return -1;
        }

#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif

        if (i >= FG_SHM_SPINS - FG_SHM_YIELDS) {
            sched_yield();
        }
    }

    return -1;
}


static void
fg_shm_client_wake_engine(fg_shm_client_t *c)
{
    /* pairs with the engine's fence between "sleeping" and its last look
     * at the rings */
    fg_shm_fence();

    if (fg_shm_load(&c->st->sleeping)) {
        fg_shm_wake(c->sock, c->h->engine_sock, c->h->engine_sock_len);
    }
}


/* a slot's version 4 block: the logits' adjustments, logprobs */
static void
fg_shm_client_sampling(fg_shm_sub_t *s, const fg_shm_submit_t *req)
{
    s->frequency_penalty = req->frequency_penalty;
    s->presence_penalty = req->presence_penalty;
    s->repetition_penalty = req->repetition_penalty;
    s->min_p = req->min_p;
    s->top_logprobs = req->logprobs ? req->top_logprobs : 0;
    s->n_bias = req->n_bias;

    if (req->n_bias) {
        memcpy(s->bias_id, req->bias_id, req->n_bias * sizeof(int32_t));
        memcpy(s->bias, req->bias, req->n_bias * sizeof(float));
    }

    if (req->logprobs) {
        s->flags |= FG_SHM_SUB_LOGPROBS
                    | (req->prompt_lp ? FG_SHM_SUB_PROMPT_LP : 0);
    }
}


/*
 * Slot i of n, past the prompt's: a copy of the first slot's parameters
 * (already written) and its piece of the grammar's text
 */
static void
fg_shm_client_grammar(fg_shm_sub_t *s, const fg_shm_submit_t *req,
    const fg_shm_sub_t *first, uint32_t i, uint32_t n)
{
    uint32_t  k, off, len;

    k = n - (req->n_grammar + FG_SHM_SLOT_BYTES - 1) / FG_SHM_SLOT_BYTES;
    off = (i - k) * FG_SHM_SLOT_BYTES;
    len = req->n_grammar - off;
    len = len < FG_SHM_SLOT_BYTES ? len : FG_SHM_SLOT_BYTES;

    memcpy(s, first, offsetof(fg_shm_sub_t, tokens));
    s->index = (uint16_t) i;
    s->n_tokens = 0;
    memcpy(s->tokens, req->grammar + off, len);
    s->n_grammar = req->n_grammar;
    s->grammar_pad = 0;
}


int
fg_shm_client_submit(fg_shm_client_t *c, const fg_shm_submit_t *req)
{
    uint32_t       i, n, left, chunk;
    uint64_t       head, tail;
    fg_shm_sub_t  *s;

    if (!c->attached) {
        return FG_SHM_EDOWN;
    }

    /* the expectations: finite and not negative (NaN fails both) */
    if (req->n_prompt == 0 || req->n_prompt > c->h->shape.context
        || req->n_stop > FG_SHM_MAX_STOP
        || req->n_bias > FG_SHM_MAX_BIAS
        || req->top_logprobs > FG_SHM_MAX_TOP
        || req->n_choices > FG_SHM_MAX_CHOICES
        || !(req->ttft_target >= 0.0f && req->ttft_target <= FLT_MAX)
        || !(req->tokens_per_s >= 0.0f && req->tokens_per_s <= FLT_MAX)
        || req->embed > FG_SHM_EMBED_MEAN
        || (req->embed && c->h->embd == 0))
    {
        return FG_SHM_EINVAL;
    }

    /* an embedding samples nothing: no grammar to follow */
    if (req->n_grammar > FG_SHM_MAX_GRAMMAR
        || (req->n_grammar && req->grammar == NULL)
        || (req->n_grammar && req->embed))
    {
        return FG_SHM_EINVAL;
    }

    n = fg_shm_sub_slots(req->n_prompt, req->n_grammar);

    if (n > c->h->sub_slots) {
        return FG_SHM_EINVAL;
    }

    if (fg_shm_lock(c->sub) != 0) {
        return FG_SHM_EAGAIN;
    }

    head = fg_shm_load(&c->sub->head);
    tail = c->sub->tail;

    if (tail - head + n > c->h->sub_slots) {
        pthread_mutex_unlock(&c->sub->lock);
        return FG_SHM_EFULL;
    }

    left = req->n_prompt;

    for (i = 0; i < n; i++) {
        s = fg_shm_sub_slot(c->base, c->h, tail + i);

        if (left == 0) {
            fg_shm_client_grammar(s, req,
                                  fg_shm_sub_slot(c->base, c->h, tail), i, n);
            continue;
        }

        chunk = left < FG_SHM_SLOT_TOKENS ? left : FG_SHM_SLOT_TOKENS;

        memset(s, 0, offsetof(fg_shm_sub_t, tokens));
        s->req_id = req->req_id;
        s->worker = c->info.worker;
        s->epoch = c->epoch;
        s->n_prompt = req->n_prompt;
        s->index = (uint16_t) i;
        s->n_tokens = (uint16_t) chunk;
        s->max_tokens = req->max_tokens;
        s->top_k = req->top_k;
        s->temperature = req->temperature;
        s->top_p = req->top_p > 0.0f ? req->top_p : 1.0f;
        s->seed = req->seed;
        s->flags = (req->has_seed ? FG_SHM_SUB_SEED : 0)
                   | (req->ignore_eos ? FG_SHM_SUB_IGNORE_EOS : 0);
        s->n_stop = req->n_stop;
        s->n_choices = (uint16_t) req->n_choices;

        if (req->n_stop) {
            memcpy(s->stop, req->stop, req->n_stop * sizeof(int32_t));
        }

        memcpy(s->tokens, req->prompt + i * FG_SHM_SLOT_TOKENS,
               chunk * sizeof(int32_t));

        s->ttft_target = req->ttft_target;
        s->tokens_per_s = req->tokens_per_s;
        s->embed = req->embed;

        fg_shm_client_sampling(s, req);
        s->n_grammar = req->n_grammar;
        s->grammar_pad = 0;

        left -= chunk;
    }

    fg_shm_store(&c->sub->tail, tail + n);
    pthread_mutex_unlock(&c->sub->lock);

    fg_shm_client_wake_engine(c);

    return FG_SHM_OK;
}


int
fg_shm_client_cancel(fg_shm_client_t *c, uint64_t req_id)
{
    uint64_t          head, tail;
    fg_shm_cancel_t  *s;

    if (!c->attached) {
        return FG_SHM_EDOWN;
    }

    if (fg_shm_lock(c->can) != 0) {
        return FG_SHM_EAGAIN;
    }

    head = fg_shm_load(&c->can->head);
    tail = c->can->tail;

    if (tail - head >= c->h->cancel_slots) {
        pthread_mutex_unlock(&c->can->lock);
        return FG_SHM_EFULL;
    }

    s = fg_shm_cancel_slot(c->base, c->h, tail);
    s->req_id = req_id;
    s->worker = c->info.worker;
    s->epoch = c->epoch;

    fg_shm_store(&c->can->tail, tail + 1);
    pthread_mutex_unlock(&c->can->lock);

    fg_shm_client_wake_engine(c);

    return FG_SHM_OK;
}


size_t
fg_shm_client_poll(fg_shm_client_t *c, fg_shm_comp_t *ev, size_t max)
{
    size_t            n;
    uint64_t          head, tail;
    fg_shm_worker_t  *wk;

    fg_shm_drain(c->sock);

    if (!c->attached || !fg_shm_client_mine(c)) {
        return 0;
    }

    wk = c->wk;
    fg_shm_store(&wk->heartbeat_ns, fg_shm_now());

    n = 0;
    head = wk->head;

    for ( ;; ) {
        tail = fg_shm_load(&wk->tail);

        while (n < max && head != tail) {
            ev[n++] = *fg_shm_comp_slot(wk, c->h, head++);
        }

        fg_shm_store(&wk->head, head);

        if (n == max) {
            return n;
        }

        /* empty: ask for a wake-up, then look once more, as the engine
         * may have written just before it saw the request */
        fg_shm_store(&wk->armed, 1);
        fg_shm_fence();

        if (fg_shm_load(&wk->tail) == head) {
            return n;
        }
    }
}


int
fg_shm_client_status(fg_shm_client_t *c, fg_shm_load_t *load)
{
    size_t     i, k;
    uint64_t   s1, s2, *src, *dst;

    if (!c->attached) {
        return FG_SHM_EDOWN;
    }

    src = (uint64_t *) &c->st->load;
    dst = (uint64_t *) load;

    for (k = 0; k < FG_SHM_READS; k++) {
        s1 = fg_shm_load(&c->st->seq);

        if (s1 & 1) {
            continue;
        }

        for (i = 0; i < sizeof(fg_shm_load_t) / sizeof(uint64_t); i++) {
            dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
        }

        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        s2 = __atomic_load_n(&c->st->seq, __ATOMIC_RELAXED);

        if (s1 == s2) {
            return FG_SHM_OK;
        }
    }

    return FG_SHM_EAGAIN;
}


uint64_t
fg_shm_client_engine_age_ms(const fg_shm_client_t *c)
{
    uint64_t  now, beat;

    if (!c->attached) {
        return UINT64_MAX;
    }

    now = fg_shm_now();
    beat = fg_shm_load(&c->st->heartbeat_ns);

    return now > beat ? (now - beat) / 1000000 : 0;
}


uint32_t
fg_shm_client_prefix_match(fg_shm_client_t *c, const uint64_t *hashes,
    uint32_t n)
{
    size_t           k;
    uint32_t         m, slots;
    uint64_t         done;
    const uint64_t  *table;
    fg_shm_index_t  *ix;

    if (!c->attached || n == 0) {
        return 0;
    }

    ix = fg_shm_index(c->base, c->h);
    slots = c->h->index_slots;

    /* the table read may be cleared by a rebuild meanwhile: then again */
    for (k = 0; k < FG_SHM_READS; k++) {
        done = fg_shm_load(&ix->done);
        table = fg_shm_index_table(c->base, c->h, done);

        for (m = 0; m < n && fg_shm_index_has(table, slots, hashes[m]); m++)
        {
            /* void */
        }

        __atomic_thread_fence(__ATOMIC_ACQUIRE);

        if (__atomic_load_n(&ix->started, __ATOMIC_RELAXED) - done < 2) {
            return m;
        }
    }

    return 0;
}
