
/*
 * fairgate: the engine's half of the shared-memory protocol.
 */


#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fg_shm_engine.h"


#define FG_SHM_DEF_WORKERS      64
#define FG_SHM_DEF_SUB          1024
#define FG_SHM_DEF_CANCEL       1024
#define FG_SHM_DEF_COMP         4096
#define FG_SHM_DEF_TIMEOUT_MS   5000

/* a worker that owes this many unread completions is lost whatever else */
#define FG_SHM_OVERFLOW_MAX     (1u << 20)

#define FG_SHM_CHECK_NS         100000000ULL
#define FG_SHM_HEARTBEAT_NS     100000000ULL

/* an engine whose heartbeat is older than this is taken for dead */
#define FG_SHM_STALE_NS         2000000000ULL


/* what the engine keeps of a worker beside its entry */
typedef struct {
    uint32_t          epoch;            /* the attach it knows; 0: none */
    unsigned          active:1;
    unsigned          wake:1;
    unsigned          dead:1;           /* its socket is gone */
    unsigned          lost:1;           /* its overflow grew too long */

    /* completions its full ring could not take, in order */
    fg_shm_comp_t    *over;
    uint32_t          over_head;
    uint32_t          over_n;
    uint32_t          over_cap;
} fg_shm_local_t;


struct fg_shm_engine_s {
    char              name[FG_SHM_NAME_MAX + 2];
    void             *base;
    size_t            size;
    fg_shm_header_t  *h;
    fg_shm_status_t  *st;
    fg_shm_mpsc_t    *sub;
    fg_shm_mpsc_t    *can;
    fg_shm_local_t   *w;
    int               sock;

    uint64_t          sub_head;
    uint64_t          can_head;
    int32_t          *prompt;
    uint64_t          timeout_ns;
    uint64_t          last_check;
    uint64_t          lost_workers;
    uint32_t          attached;

    fg_shm_cancel_t   pend[FG_SHM_PENDING];
    uint32_t          n_pend;
    uint32_t          next_pend;

    pthread_t         hb;
    pthread_mutex_t   hb_lock;
    pthread_cond_t    hb_cond;
    int               hb_stop;
    unsigned          hb_running:1;
    unsigned          created:1;
};


static int
fg_shm_pow2(uint32_t v)
{
    return v != 0 && (v & (v - 1)) == 0;
}


/*
 * An old segment under our name: refuse if its engine looks alive, else
 * remove it (a crash leaves the name behind).
 */
static int
fg_shm_engine_stale(const char *name, char *err, size_t errlen)
{
    int               fd, alive;
    struct stat       st;
    fg_shm_header_t  *h;
    fg_shm_status_t  *s;

    fd = shm_open(name, O_RDONLY, 0);

    if (fd == -1) {
        if (errno == ENOENT) {
            return 0;
        }

        snprintf(err, errlen, "shm %s exists and cannot be opened: %s", name,
                 strerror(errno));
        return -1;
    }

    alive = 0;

    if (fstat(fd, &st) == 0 && (size_t) st.st_size >= sizeof(fg_shm_header_t))
    {
        h = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_SHARED, fd, 0);

        if (h != MAP_FAILED) {
            if (h->magic == FG_SHM_MAGIC
                && fg_shm_load(&h->state) != FG_SHM_STOPPED
                && fg_shm_pid_alive(h->engine_pid, h->pidns))
            {
                alive = 1;

                if (h->version == FG_SHM_VERSION
                    && h->status_off + sizeof(fg_shm_status_t)
                       <= (uint64_t) st.st_size)
                {
                    s = fg_shm_at(h, h->status_off, fg_shm_status_t);
                    alive = fg_shm_now() - fg_shm_load(&s->heartbeat_ns)
                            < FG_SHM_STALE_NS;
                }

                if (alive) {
                    snprintf(err, errlen, "shm %s is served by a running "
                             "engine (pid %lld); stop it or choose another "
                             "--shm", name, (long long) h->engine_pid);
                }
            }

            munmap(h, (size_t) st.st_size);
        }
    }

    close(fd);

    if (alive) {
        return -1;
    }

    if (shm_unlink(name) != 0 && errno != ENOENT) {
        snprintf(err, errlen, "cannot remove the stale shm %s: %s", name,
                 strerror(errno));
        return -1;
    }

    return 0;
}


static int
fg_shm_mpsc_init(fg_shm_mpsc_t *r, char *err, size_t errlen)
{
    int                  rc;
    pthread_mutexattr_t  attr;

    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);

    rc = pthread_mutex_init(&r->lock, &attr);
    pthread_mutexattr_destroy(&attr);

    if (rc != 0) {
        snprintf(err, errlen, "cannot make a shared robust mutex: %s",
                 strerror(rc));
        return -1;
    }

    r->tail = 0;
    r->head = 0;

    return 0;
}


static void *
fg_shm_heartbeat(void *data)
{
    fg_shm_engine_t  *e;
    struct timespec   ts;

    e = data;

    pthread_mutex_lock(&e->hb_lock);

    while (!e->hb_stop) {
        fg_shm_store(&e->st->heartbeat_ns, fg_shm_now());

        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += (long) FG_SHM_HEARTBEAT_NS;

        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }

        pthread_cond_timedwait(&e->hb_cond, &e->hb_lock, &ts);
    }

    pthread_mutex_unlock(&e->hb_lock);

    return NULL;
}


static int
fg_shm_heartbeat_start(fg_shm_engine_t *e, char *err, size_t errlen)
{
    int                 rc;
    sigset_t            all, old;
    pthread_condattr_t  attr;

    pthread_mutex_init(&e->hb_lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&e->hb_cond, &attr);
    pthread_condattr_destroy(&attr);

    /* signals go to the main thread, whose poll() they must interrupt */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&e->hb, NULL, fg_shm_heartbeat, e);
    pthread_sigmask(SIG_SETMASK, &old, NULL);

    if (rc != 0) {
        snprintf(err, errlen, "cannot start the heartbeat thread: %s",
                 strerror(rc));
        return -1;
    }

    e->hb_running = 1;

    return 0;
}


static uint64_t
fg_shm_generation(void)
{
    uint64_t  g;

    if (getrandom(&g, sizeof(g), GRND_NONBLOCK) != sizeof(g)) {
        g = fg_shm_now() ^ ((uint64_t) getpid() << 32);
    }

    return g ? g : 1;
}


static void
fg_shm_copy_name(char *dst, size_t size, const char *src)
{
    const char  *slash;

    if (src == NULL) {
        dst[0] = '\0';
        return;
    }

    slash = strrchr(src, '/');
    snprintf(dst, size, "%s", slash ? slash + 1 : src);
}


fg_shm_engine_t *
fg_shm_engine_create(const fg_shm_engine_conf_t *conf, char *err,
    size_t errlen)
{
    int                   fd;
    uint32_t              i, workers, subs, cancels, comps;
    uint64_t              off, now, status_off, sub_off, cancel_off,
                          workers_off, worker_size;
    struct group         *gr;
    fg_shm_worker_t      *wk;
    fg_shm_header_t      *h;
    fg_shm_engine_t      *e;

    if (conf->name == NULL || !fg_shm_name_valid(conf->name)) {
        snprintf(err, errlen, "shm name \"%s\": it must be a slash and 1 to "
                 "%d characters without another slash, as \"/fairgate\"",
                 conf->name ? conf->name : "", FG_SHM_NAME_MAX);
        return NULL;
    }

    workers = conf->max_workers ? conf->max_workers : FG_SHM_DEF_WORKERS;
    subs = conf->sub_slots ? conf->sub_slots : FG_SHM_DEF_SUB;
    cancels = conf->cancel_slots ? conf->cancel_slots : FG_SHM_DEF_CANCEL;
    comps = conf->comp_slots ? conf->comp_slots : FG_SHM_DEF_COMP;

    if (workers > 4096 || !fg_shm_pow2(subs) || !fg_shm_pow2(cancels)
        || !fg_shm_pow2(comps) || subs > (1u << 20) || cancels > (1u << 20)
        || comps > (1u << 20))
    {
        snprintf(err, errlen, "shm rings: %u workers (at most 4096), %u, %u "
                 "and %u slots (powers of two up to 2^20)", workers, subs,
                 cancels, comps);
        return NULL;
    }

    if (conf->context == 0 || conf->vocab == 0) {
        snprintf(err, errlen, "shm: a model with a vocabulary of %u and a "
                 "context of %u", conf->vocab, conf->context);
        return NULL;
    }

    e = calloc(1, sizeof(fg_shm_engine_t));

    if (e == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }

    e->sock = -1;
    snprintf(e->name, sizeof(e->name), "%s", conf->name);

    e->w = calloc(workers, sizeof(fg_shm_local_t));
    e->prompt = malloc((size_t) conf->context * sizeof(int32_t));

    if (e->w == NULL || e->prompt == NULL) {
        snprintf(err, errlen, "out of memory");
        goto failed;
    }

    /* the layout */
    off = FG_SHM_ALIGN(sizeof(fg_shm_header_t));

    status_off = off;
    off += FG_SHM_ALIGN(sizeof(fg_shm_status_t));

    sub_off = off;
    off += FG_SHM_ALIGN(FG_SHM_ALIGN(sizeof(fg_shm_mpsc_t))
                        + (uint64_t) subs * sizeof(fg_shm_sub_t));

    cancel_off = off;
    off += FG_SHM_ALIGN(FG_SHM_ALIGN(sizeof(fg_shm_mpsc_t))
                        + (uint64_t) cancels * sizeof(fg_shm_cancel_t));

    workers_off = off;
    worker_size = FG_SHM_ALIGN(FG_SHM_ALIGN(sizeof(fg_shm_worker_t))
                               + (uint64_t) comps * sizeof(fg_shm_comp_t));
    off += worker_size * workers;

    e->size = off;

    if (fg_shm_engine_stale(conf->name, err, errlen) != 0) {
        goto failed;
    }

    fd = shm_open(conf->name, O_RDWR | O_CREAT | O_EXCL, 0660);

    if (fd == -1) {
        snprintf(err, errlen, "cannot create shm %s: %s", conf->name,
                 strerror(errno));
        goto failed;
    }

    e->created = 1;

    /* shm_open's mode went through the umask: say it again */
    if (fchmod(fd, 0660) != 0) {
        snprintf(err, errlen, "cannot set the mode of shm %s: %s",
                 conf->name, strerror(errno));
        close(fd);
        goto failed;
    }

    if (conf->group && conf->group[0]) {
        gr = getgrnam(conf->group);

        if (gr == NULL) {
            snprintf(err, errlen, "shm group \"%s\": no such group",
                     conf->group);
            close(fd);
            goto failed;
        }

        if (fchown(fd, (uid_t) -1, gr->gr_gid) != 0) {
            snprintf(err, errlen, "cannot give shm %s to group \"%s\": %s "
                     "(the engine's user must be root or in that group)",
                     conf->name, conf->group, strerror(errno));
            close(fd);
            goto failed;
        }
    }

    if (ftruncate(fd, (off_t) e->size) != 0) {
        snprintf(err, errlen, "cannot size shm %s to %zu bytes: %s",
                 conf->name, e->size, strerror(errno));
        close(fd);
        goto failed;
    }

    e->base = mmap(NULL, e->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);

    if (e->base == MAP_FAILED) {
        e->base = NULL;
        snprintf(err, errlen, "cannot map shm %s: %s", conf->name,
                 strerror(errno));
        goto failed;
    }

    h = e->base;
    e->h = h;

    h->magic = FG_SHM_MAGIC;
    h->version = FG_SHM_VERSION;
    h->header_size = sizeof(fg_shm_header_t);
    h->state = FG_SHM_STARTING;
    h->segment_size = e->size;
    h->generation = fg_shm_generation();
    h->engine_pid = getpid();
    h->pidns = fg_shm_pidns();

    h->vocab = conf->vocab;
    h->context = conf->context;
    h->eos = conf->eos;
    h->bos = conf->bos;
    h->block_size = conf->block_size;
    h->kv_blocks = conf->kv_blocks;
    h->max_batch = conf->max_batch;
    h->max_seqs = conf->max_seqs;
    h->step_tokens = conf->step_tokens;
    fg_shm_copy_name(h->model, sizeof(h->model), conf->model);
    fg_shm_copy_name(h->backend, sizeof(h->backend), conf->backend);

    h->mutex_size = sizeof(pthread_mutex_t);
    h->slot_size = sizeof(fg_shm_sub_t);
    h->slot_tokens = FG_SHM_SLOT_TOKENS;
    h->max_stop = FG_SHM_MAX_STOP;
    h->sub_slots = subs;
    h->cancel_slots = cancels;
    h->comp_slots = comps;
    h->max_workers = workers;
    h->status_off = status_off;
    h->sub_off = sub_off;
    h->cancel_off = cancel_off;
    h->workers_off = workers_off;
    h->worker_size = worker_size;

    e->st = fg_shm_at(e->base, status_off, fg_shm_status_t);
    e->sub = fg_shm_at(e->base, sub_off, fg_shm_mpsc_t);
    e->can = fg_shm_at(e->base, cancel_off, fg_shm_mpsc_t);

    if (fg_shm_mpsc_init(e->sub, err, errlen) != 0
        || fg_shm_mpsc_init(e->can, err, errlen) != 0)
    {
        goto failed;
    }

    now = fg_shm_now();

    for (i = 0; i < workers; i++) {
        wk = fg_shm_worker(e->base, h, i);
        wk->state = FG_SHM_W_FREE;
        wk->heartbeat_ns = now;
    }

    e->timeout_ns = (uint64_t) (conf->worker_timeout_ms
                                ? conf->worker_timeout_ms
                                : FG_SHM_DEF_TIMEOUT_MS) * 1000000ULL;

    e->sock = fg_shm_socket(h->engine_sock, &h->engine_sock_len);

    if (e->sock == -1) {
        snprintf(err, errlen, "cannot make the engine's wake-up socket: %s",
                 strerror(errno));
        goto failed;
    }

    e->st->heartbeat_ns = now;
    e->st->load.loop_ns = now;

    if (fg_shm_heartbeat_start(e, err, errlen) != 0) {
        goto failed;
    }

    fg_shm_store(&h->state, FG_SHM_READY);

    return e;

failed:

    fg_shm_engine_destroy(e);

    return NULL;
}


static void
fg_shm_local_reset(fg_shm_local_t *l)
{
    free(l->over);
    memset(l, 0, sizeof(fg_shm_local_t));
}


void
fg_shm_engine_destroy(fg_shm_engine_t *e)
{
    int               fd;
    uint32_t          i, workers;
    uint64_t          generation;
    fg_shm_header_t  *h;
    fg_shm_worker_t  *wk;

    if (e == NULL) {
        return;
    }

    generation = e->base ? e->h->generation : 0;
    workers = e->base ? e->h->max_workers : 0;

    if (e->hb_running) {
        pthread_mutex_lock(&e->hb_lock);
        e->hb_stop = 1;
        pthread_cond_signal(&e->hb_cond);
        pthread_mutex_unlock(&e->hb_lock);
        pthread_join(e->hb, NULL);
    }

    if (e->base) {
        fg_shm_store(&e->h->state, FG_SHM_STOPPED);
        fg_shm_fence();

        /* each attached worker learns at once, not at its next check */
        for (i = 0; i < e->h->max_workers; i++) {
            wk = fg_shm_worker(e->base, e->h, i);

            if (fg_shm_load(&wk->state) == FG_SHM_W_ACTIVE && e->sock != -1)
            {
                fg_shm_wake(e->sock, wk->sock, wk->sock_len);
            }
        }

        munmap(e->base, e->size);
        e->base = NULL;
        e->h = NULL;
    }

    /* the name is ours unless a newer engine took it over */
    if (e->created) {
        fd = shm_open(e->name, O_RDONLY, 0);

        if (fd != -1) {
            h = mmap(NULL, sizeof(fg_shm_header_t), PROT_READ, MAP_SHARED,
                     fd, 0);
            close(fd);

            if (h != MAP_FAILED) {
                if (generation == 0 || h->generation == generation) {
                    shm_unlink(e->name);
                }

                munmap(h, sizeof(fg_shm_header_t));

            } else {
                shm_unlink(e->name);
            }
        }
    }

    if (e->sock != -1) {
        close(e->sock);
    }

    if (e->w) {
        for (i = 0; i < workers; i++) {
            free(e->w[i].over);
        }
    }

    if (e->hb_running) {
        pthread_mutex_destroy(&e->hb_lock);
        pthread_cond_destroy(&e->hb_cond);
    }

    free(e->w);
    free(e->prompt);
    free(e);
}


int
fg_shm_engine_fd(const fg_shm_engine_t *e)
{
    return e->sock;
}


uint64_t
fg_shm_engine_generation(const fg_shm_engine_t *e)
{
    return e->h->generation;
}


const fg_shm_header_t *
fg_shm_engine_header(const fg_shm_engine_t *e)
{
    return e->h;
}


/*
 * The engine's record of a worker, brought up to date with its entry: an
 * entry that is active under a new epoch is a new attachment.  NULL when
 * the worker is not attached.
 */
static fg_shm_local_t *
fg_shm_engine_worker(fg_shm_engine_t *e, uint32_t w)
{
    uint32_t          state, epoch;
    fg_shm_local_t   *l;
    fg_shm_worker_t  *wk;

    if (w >= e->h->max_workers) {
        return NULL;
    }

    wk = fg_shm_worker(e->base, e->h, w);
    l = &e->w[w];

    state = fg_shm_load(&wk->state);

    if (state != FG_SHM_W_ACTIVE) {
        return l->active ? l : NULL;
    }

    epoch = fg_shm_load(&wk->epoch);

    if (!l->active || l->epoch != epoch) {
        fg_shm_local_reset(l);
        l->epoch = epoch;
        l->active = 1;
        e->attached++;
    }

    return l;
}


static int
fg_shm_over_push(fg_shm_local_t *l, const fg_shm_comp_t *c)
{
    uint32_t        i, cap;
    fg_shm_comp_t  *q;

    if (l->over_n == l->over_cap) {
        if (l->over_cap >= FG_SHM_OVERFLOW_MAX) {
            return -1;
        }

        cap = l->over_cap ? 2 * l->over_cap : 256;
        q = malloc(cap * sizeof(fg_shm_comp_t));

        if (q == NULL) {
            return -1;
        }

        for (i = 0; i < l->over_n; i++) {
            q[i] = l->over[(l->over_head + i) % l->over_cap];
        }

        free(l->over);
        l->over = q;
        l->over_cap = cap;
        l->over_head = 0;
    }

    l->over[(l->over_head + l->over_n) % l->over_cap] = *c;
    l->over_n++;

    return 0;
}


/* moves overflowed entries into the ring while it has room */
static void
fg_shm_over_move(fg_shm_engine_t *e, uint32_t w, fg_shm_local_t *l)
{
    uint64_t          tail, head;
    fg_shm_worker_t  *wk;

    wk = fg_shm_worker(e->base, e->h, w);
    tail = wk->tail;
    head = fg_shm_load(&wk->head);

    while (l->over_n && tail - head < e->h->comp_slots) {
        *fg_shm_comp_slot(wk, e->h, tail++) = l->over[l->over_head];
        l->over_head = (l->over_head + 1) % l->over_cap;
        l->over_n--;
        l->wake = 1;
    }

    fg_shm_store(&wk->tail, tail);
}


void
fg_shm_engine_complete(fg_shm_engine_t *e, uint32_t worker,
    const fg_shm_comp_t *c)
{
    uint64_t          tail, head;
    fg_shm_local_t   *l;
    fg_shm_worker_t  *wk;

    l = fg_shm_engine_worker(e, worker);

    if (l == NULL || l->lost) {
        return;
    }

    wk = fg_shm_worker(e->base, e->h, worker);

    if (l->over_n == 0) {
        tail = wk->tail;
        head = fg_shm_load(&wk->head);

        if (tail - head < e->h->comp_slots) {
            *fg_shm_comp_slot(wk, e->h, tail) = *c;
            fg_shm_store(&wk->tail, tail + 1);
            l->wake = 1;
            return;
        }
    }

    if (fg_shm_over_push(l, c) != 0) {
        l->lost = 1;
    }
}


static void
fg_shm_engine_send(fg_shm_engine_t *e, uint32_t w, uint64_t req_id,
    uint8_t finish, uint8_t error)
{
    fg_shm_comp_t  c;

    memset(&c, 0, sizeof(c));
    c.req_id = req_id;
    c.token = -1;
    c.finish = finish;
    c.error = error;

    fg_shm_engine_complete(e, w, &c);
}


static int
fg_shm_pending_take(fg_shm_engine_t *e, uint32_t w, uint32_t epoch,
    uint64_t id)
{
    uint32_t  i;

    for (i = 0; i < e->n_pend; i++) {
        if (e->pend[i].req_id == id && e->pend[i].worker == w
            && e->pend[i].epoch == epoch)
        {
            /* a worker that never used id 0 cannot match this */
            e->pend[i].worker = UINT32_MAX;
            return 1;
        }
    }

    return 0;
}


/*
 * Checks the chunks of the submission at head; returns how many slots it
 * takes, 0 when it is malformed (then one slot is skipped).
 */
static uint32_t
fg_shm_sub_chunks(fg_shm_engine_t *e, uint64_t head, uint64_t tail)
{
    uint32_t       i, n, expect;
    fg_shm_sub_t  *first, *s;

    first = fg_shm_sub_slot(e->base, e->h, head);

    n = first->n_prompt ? (first->n_prompt + FG_SHM_SLOT_TOKENS - 1)
                          / FG_SHM_SLOT_TOKENS
                        : 1;

    if (n > tail - head || n > e->h->sub_slots) {
        return 0;
    }

    for (i = 0; i < n; i++) {
        s = fg_shm_sub_slot(e->base, e->h, head + i);

        expect = first->n_prompt - i * FG_SHM_SLOT_TOKENS;
        expect = expect < FG_SHM_SLOT_TOKENS ? expect : FG_SHM_SLOT_TOKENS;

        if (s->index != i || s->req_id != first->req_id
            || s->worker != first->worker || s->n_tokens != expect)
        {
            return 0;
        }
    }

    return n;
}


static int
fg_shm_take_one(fg_shm_engine_t *e, uint64_t head, uint32_t n,
    fg_shm_take_pt take, void *ctx)
{
    int                rc;
    uint32_t           i;
    fg_shm_sub_t      *s;
    fg_shm_local_t    *l;
    fg_shm_request_t   req;

    s = fg_shm_sub_slot(e->base, e->h, head);
    l = fg_shm_engine_worker(e, s->worker);

    /* from a worker gone since, or an earlier attach: nobody to answer */
    if (l == NULL || l->epoch != s->epoch) {
        return 0;
    }

    if (fg_shm_pending_take(e, s->worker, s->epoch, s->req_id)) {
        fg_shm_engine_send(e, s->worker, s->req_id, FG_SHM_FINISH_CANCEL, 0);
        return 0;
    }

    if (s->n_prompt > e->h->context) {
        fg_shm_engine_send(e, s->worker, s->req_id, FG_SHM_FINISH_REFUSED,
                           FG_SHM_ERR_CONTEXT);
        return 0;
    }

    if (s->n_stop > FG_SHM_MAX_STOP) {
        fg_shm_engine_send(e, s->worker, s->req_id, FG_SHM_FINISH_REFUSED,
                           FG_SHM_ERR_INVALID);
        return 0;
    }

    for (i = 0; i < n; i++) {
        memcpy(e->prompt + i * FG_SHM_SLOT_TOKENS,
               fg_shm_sub_slot(e->base, e->h, head + i)->tokens,
               fg_shm_sub_slot(e->base, e->h, head + i)->n_tokens
               * sizeof(int32_t));
    }

    req.worker = s->worker;
    req.req_id = s->req_id;
    req.prompt = e->prompt;
    req.n_prompt = s->n_prompt;
    req.max_tokens = s->max_tokens;
    req.top_k = s->top_k;
    req.temperature = s->temperature;
    req.top_p = s->top_p;
    req.seed = s->seed;
    req.flags = s->flags;
    req.stop = s->stop;
    req.n_stop = s->n_stop;

    rc = take(ctx, &req);

    if (rc > 0) {
        fg_shm_engine_send(e, s->worker, s->req_id, FG_SHM_FINISH_REFUSED,
                           (uint8_t) rc);
    }

    return rc;
}


uint32_t
fg_shm_engine_take(fg_shm_engine_t *e, uint32_t max, fg_shm_take_pt take,
    fg_shm_cancel_pt cancel, void *ctx)
{
    uint32_t          n, taken;
    uint64_t          tail;
    fg_shm_sub_t     *s;
    fg_shm_cancel_t  *c;
    fg_shm_local_t   *l;

    taken = 0;
    tail = fg_shm_load(&e->sub->tail);

    while (taken < max && e->sub_head < tail) {
        n = fg_shm_sub_chunks(e, e->sub_head, tail);

        if (n == 0) {
            s = fg_shm_sub_slot(e->base, e->h, e->sub_head);
            l = fg_shm_engine_worker(e, s->worker);

            if (l && l->epoch == s->epoch) {
                fg_shm_engine_send(e, s->worker, s->req_id,
                                   FG_SHM_FINISH_REFUSED,
                                   FG_SHM_ERR_PROTOCOL);
            }

            n = 1;

        } else if (fg_shm_take_one(e, e->sub_head, n, take, ctx) == -1) {
            break;
        }

        e->sub_head += n;
        fg_shm_store(&e->sub->head, e->sub_head);
        taken++;
    }

    tail = fg_shm_load(&e->can->tail);

    while (e->can_head < tail) {
        c = fg_shm_cancel_slot(e->base, e->h, e->can_head);
        l = fg_shm_engine_worker(e, c->worker);

        if (l && l->epoch == c->epoch
            && cancel(ctx, c->worker, c->req_id) != 0)
        {
            e->pend[e->next_pend] = *c;
            e->next_pend = (e->next_pend + 1) % FG_SHM_PENDING;
            e->n_pend += e->n_pend < FG_SHM_PENDING;
        }

        e->can_head++;
        fg_shm_store(&e->can->head, e->can_head);
    }

    return taken;
}


static void
fg_shm_engine_free_worker(fg_shm_engine_t *e, uint32_t w,
    fg_shm_lost_pt lost, void *ctx)
{
    fg_shm_worker_t  *wk;

    wk = fg_shm_worker(e->base, e->h, w);

    if (e->w[w].active) {
        lost(ctx, w);
        e->attached--;
    }

    fg_shm_local_reset(&e->w[w]);

    fg_shm_store(&wk->heartbeat_ns, fg_shm_now());
    fg_shm_store(&wk->state, FG_SHM_W_FREE);
}


/* whether a worker with unread completions has stopped reading them */
static int
fg_shm_worker_stuck(fg_shm_engine_t *e, fg_shm_worker_t *wk,
    fg_shm_local_t *l, uint64_t now)
{
    uint64_t  beat;

    if (l->over_n == 0
        && wk->tail - fg_shm_load(&wk->head) < e->h->comp_slots)
    {
        return 0;
    }

    beat = fg_shm_load(&wk->heartbeat_ns);

    return now > beat && now - beat > e->timeout_ns;
}


void
fg_shm_engine_flush(fg_shm_engine_t *e, fg_shm_lost_pt lost, void *ctx)
{
    int               check;
    uint32_t          w, state;
    uint64_t          now, beat;
    fg_shm_local_t   *l;
    fg_shm_worker_t  *wk;

    now = fg_shm_now();
    check = now - e->last_check >= FG_SHM_CHECK_NS;

    if (check) {
        e->last_check = now;
    }

    for (w = 0; w < e->h->max_workers; w++) {
        wk = fg_shm_worker(e->base, e->h, w);
        l = &e->w[w];
        state = fg_shm_load(&wk->state);

        if (state == FG_SHM_W_FREE) {
            continue;
        }

        if (state == FG_SHM_W_ATTACHING) {
            beat = fg_shm_load(&wk->heartbeat_ns);

            /* a worker that died in the middle of attaching */
            if (check && ((wk->pid && !fg_shm_pid_alive(wk->pid, wk->pidns))
                          || (now > beat && now - beat > e->timeout_ns)))
            {
                fg_shm_engine_free_worker(e, w, lost, ctx);
            }

            continue;
        }

        if (state == FG_SHM_W_DETACHING) {
            fg_shm_engine_free_worker(e, w, lost, ctx);
            continue;
        }

        l = fg_shm_engine_worker(e, w);

        if (l->over_n) {
            fg_shm_over_move(e, w, l);
        }

        if (l->wake) {
            l->wake = 0;

            /* pairs with the worker's fence between arming and looking
             * at its ring once more */
            fg_shm_fence();

            if (__atomic_exchange_n(&wk->armed, 0, __ATOMIC_SEQ_CST)
                && fg_shm_wake(e->sock, wk->sock, wk->sock_len) != 0
                && (errno == ECONNREFUSED || errno == ENOENT))
            {
                l->dead = 1;
            }
        }

        if (l->dead || l->lost
            || (check && (!fg_shm_pid_alive(wk->pid, wk->pidns)
                          || fg_shm_worker_stuck(e, wk, l, now))))
        {
            e->lost_workers++;
            fg_shm_engine_free_worker(e, w, lost, ctx);
        }
    }
}


void
fg_shm_engine_publish(fg_shm_engine_t *e, fg_shm_load_t *load)
{
    size_t     i;
    uint64_t   seq, *dst, *src;

    load->loop_ns = fg_shm_now();
    load->workers = e->attached;
    load->lost_workers = e->lost_workers;

    seq = e->st->seq;
    __atomic_store_n(&e->st->seq, seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);

    dst = (uint64_t *) &e->st->load;
    src = (uint64_t *) load;

    for (i = 0; i < sizeof(fg_shm_load_t) / sizeof(uint64_t); i++) {
        __atomic_store_n(&dst[i], src[i], __ATOMIC_RELAXED);
    }

    fg_shm_store(&e->st->seq, seq + 2);
}


void
fg_shm_engine_wait(fg_shm_engine_t *e, int timeout_ms)
{
    struct pollfd  pfd;

    fg_shm_store(&e->st->sleeping, 1);

    /* pairs with a worker's fence between publishing and reading
     * "sleeping": one of the two sees the other's write */
    fg_shm_fence();

    if (fg_shm_load(&e->sub->tail) == e->sub_head
        && fg_shm_load(&e->can->tail) == e->can_head)
    {
        pfd.fd = e->sock;
        pfd.events = POLLIN;
        pfd.revents = 0;

        (void) poll(&pfd, 1, timeout_ms);
    }

    fg_shm_store(&e->st->sleeping, 0);
    fg_shm_drain(e->sock);
}
