
/*
 * fairgate: the segment on the engine's side: its creation (the name
 * taken from a dead engine, never from a live one; its mode and group;
 * the layout and the header), the status with its heartbeat thread, and
 * at the end the name removed while it is still this engine's.  The rings
 * are fg_shm_engine_ring.c's, the wake-ups fg_shm_engine_wake.c's.
 */


#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fg_shm_engine_int.h"


#define FG_SHM_DEF_WORKERS      64
#define FG_SHM_DEF_SUB          1024
#define FG_SHM_DEF_CANCEL       1024
#define FG_SHM_DEF_COMP         4096
#define FG_SHM_DEF_TIMEOUT_MS   5000

#define FG_SHM_HEARTBEAT_NS     100000000ULL

/* an engine whose heartbeat is older than this is taken for dead */
#define FG_SHM_STALE_NS         2000000000ULL


/* the sizes of the segment's parts and where they lie */
typedef struct {
    uint32_t          workers;
    uint32_t          subs;
    uint32_t          cancels;
    uint32_t          comps;
    uint64_t          status_off;
    uint64_t          sub_off;
    uint64_t          cancel_off;
    uint64_t          workers_off;
    uint64_t          worker_size;
    uint64_t          index_off;
    uint32_t          index_slots;
    uint64_t          size;
} fg_shm_layout_t;


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


/* where each part of the segment lies, from the configuration's sizes */
static void
fg_shm_engine_layout(fg_shm_layout_t *l)
{
    uint64_t  off;

    off = FG_SHM_ALIGN(sizeof(fg_shm_header_t));

    l->status_off = off;
    off += FG_SHM_ALIGN(sizeof(fg_shm_status_t));

    l->sub_off = off;
    off += FG_SHM_ALIGN(FG_SHM_ALIGN(sizeof(fg_shm_mpsc_t))
                        + (uint64_t) l->subs * sizeof(fg_shm_sub_t));

    l->cancel_off = off;
    off += FG_SHM_ALIGN(FG_SHM_ALIGN(sizeof(fg_shm_mpsc_t))
                        + (uint64_t) l->cancels * sizeof(fg_shm_cancel_t));

    l->workers_off = off;
    l->worker_size = FG_SHM_ALIGN(FG_SHM_ALIGN(sizeof(fg_shm_worker_t))
                                  + (uint64_t) l->comps
                                    * sizeof(fg_shm_comp_t));
    off += l->worker_size * l->workers;

    l->index_off = off;
    off += FG_SHM_ALIGN(FG_SHM_ALIGN(sizeof(fg_shm_index_t))
                        + 2 * (uint64_t) l->index_slots * sizeof(uint64_t));

    l->size = off;
}


/* the configuration's sizes, defaults applied, and its layout */
static int
fg_shm_engine_sizes(const fg_shm_engine_conf_t *conf, fg_shm_layout_t *l,
    char *err, size_t errlen)
{
    if (conf->name == NULL || !fg_shm_name_valid(conf->name)) {
        snprintf(err, errlen, "shm name \"%s\": it must be a slash and 1 to "
                 "%d characters without another slash, as \"/fairgate\"",
                 conf->name ? conf->name : "", FG_SHM_NAME_MAX);
        return -1;
    }

    l->workers = conf->max_workers ? conf->max_workers : FG_SHM_DEF_WORKERS;
    l->subs = conf->sub_slots ? conf->sub_slots : FG_SHM_DEF_SUB;
    l->cancels = conf->cancel_slots ? conf->cancel_slots : FG_SHM_DEF_CANCEL;
    l->comps = conf->comp_slots ? conf->comp_slots : FG_SHM_DEF_COMP;

    if (l->workers > 4096 || !fg_shm_pow2(l->subs)
        || !fg_shm_pow2(l->cancels) || !fg_shm_pow2(l->comps)
        || l->subs > (1u << 20) || l->cancels > (1u << 20)
        || l->comps > (1u << 20))
    {
        snprintf(err, errlen, "shm rings: %u workers (at most 4096), %u, %u "
                 "and %u slots (powers of two up to 2^20)", l->workers,
                 l->subs, l->cancels, l->comps);
        return -1;
    }

    /* the index: at most kv_blocks keys, under half of a table */
    for (l->index_slots = 64;
         l->index_slots < 2 * (uint64_t) conf->shape.kv_blocks;
         l->index_slots *= 2)
    {
        /* void */
    }

    if (conf->shape.context == 0 || conf->shape.vocab == 0) {
        snprintf(err, errlen, "shm: a model with a vocabulary of %u and a "
                 "context of %u", conf->shape.vocab, conf->shape.context);
        return -1;
    }

    fg_shm_engine_layout(l);

    return 0;
}


/* the segment's mode, and its group when one is configured */
static int
fg_shm_engine_own(int fd, const fg_shm_engine_conf_t *conf, char *err,
    size_t errlen)
{
    struct group  *gr;

    /* shm_open's mode went through the umask: say it again */
    if (fchmod(fd, 0660) != 0) {
        snprintf(err, errlen, "cannot set the mode of shm %s: %s",
                 conf->name, strerror(errno));
        return -1;
    }

    if (conf->group == NULL || conf->group[0] == '\0') {
        return 0;
    }

    gr = getgrnam(conf->group);

    if (gr == NULL) {
        snprintf(err, errlen, "shm group \"%s\": no such group",
                 conf->group);
        return -1;
    }

    if (fchown(fd, (uid_t) -1, gr->gr_gid) != 0) {
        snprintf(err, errlen, "cannot give shm %s to group \"%s\": %s "
                 "(the engine's user must be root or in that group)",
                 conf->name, conf->group, strerror(errno));
        return -1;
    }

    return 0;
}


/* creates the named segment (a stale one replaced), owns it and maps it */
static int
fg_shm_engine_map(fg_shm_engine_t *e, const fg_shm_engine_conf_t *conf,
    char *err, size_t errlen)
{
    int  fd;

    if (fg_shm_engine_stale(conf->name, err, errlen) != 0) {
        return -1;
    }

    fd = shm_open(conf->name, O_RDWR | O_CREAT | O_EXCL, 0660);

    if (fd == -1) {
        snprintf(err, errlen, "cannot create shm %s: %s", conf->name,
                 strerror(errno));
        return -1;
    }

    e->created = 1;

    if (fg_shm_engine_own(fd, conf, err, errlen) != 0) {
        close(fd);
        return -1;
    }

    if (ftruncate(fd, (off_t) e->size) != 0) {
        snprintf(err, errlen, "cannot size shm %s to %zu bytes: %s",
                 conf->name, e->size, strerror(errno));
        close(fd);
        return -1;
    }

    e->base = mmap(NULL, e->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);

    if (e->base == MAP_FAILED) {
        e->base = NULL;
        snprintf(err, errlen, "cannot map shm %s: %s", conf->name,
                 strerror(errno));
        return -1;
    }

    e->h = e->base;

    return 0;
}


/* the header, in the STARTING state: the model, the limits, the layout */
static void
fg_shm_engine_header_init(fg_shm_engine_t *e,
    const fg_shm_engine_conf_t *conf, const fg_shm_layout_t *l)
{
    fg_shm_header_t  *h;

    h = e->h;

    h->magic = FG_SHM_MAGIC;
    h->version = FG_SHM_VERSION;
    h->header_size = sizeof(fg_shm_header_t);
    h->state = FG_SHM_STARTING;
    h->segment_size = e->size;
    h->generation = fg_shm_generation();
    h->engine_pid = getpid();
    h->pidns = fg_shm_pidns();

    h->shape = conf->shape;
    h->embd = conf->embd;
    fg_shm_copy_name(h->model, sizeof(h->model), conf->model);
    fg_shm_copy_name(h->backend, sizeof(h->backend), conf->backend);

    h->mutex_size = sizeof(pthread_mutex_t);
    h->slot_size = sizeof(fg_shm_sub_t);
    h->slot_tokens = FG_SHM_SLOT_TOKENS;
    h->max_stop = FG_SHM_MAX_STOP;
    h->sub_slots = l->subs;
    h->cancel_slots = l->cancels;
    h->comp_slots = l->comps;
    h->max_workers = l->workers;
    h->status_off = l->status_off;
    h->sub_off = l->sub_off;
    h->cancel_off = l->cancel_off;
    h->workers_off = l->workers_off;
    h->worker_size = l->worker_size;
    h->index_off = l->index_off;
    h->index_slots = l->index_slots;
}


/*
 * What the header lays out: the rings' locks, every worker entry free,
 * the wake-up socket, the status and its heartbeat.
 */
static int
fg_shm_engine_start(fg_shm_engine_t *e, char *err, size_t errlen)
{
    uint32_t          i;
    uint64_t          now;
    fg_shm_header_t  *h;
    fg_shm_worker_t  *wk;

    h = e->h;

    e->st = fg_shm_at(e->base, h->status_off, fg_shm_status_t);
    e->sub = fg_shm_at(e->base, h->sub_off, fg_shm_mpsc_t);
    e->can = fg_shm_at(e->base, h->cancel_off, fg_shm_mpsc_t);

    if (fg_shm_mpsc_init(e->sub, err, errlen) != 0
        || fg_shm_mpsc_init(e->can, err, errlen) != 0)
    {
        return -1;
    }

    now = fg_shm_now();

    for (i = 0; i < h->max_workers; i++) {
        wk = fg_shm_worker(e->base, h, i);
        wk->state = FG_SHM_W_FREE;
        wk->heartbeat_ns = now;
    }

    e->sock = fg_shm_socket(h->engine_sock, &h->engine_sock_len);

    if (e->sock == -1) {
        snprintf(err, errlen, "cannot make the engine's wake-up socket: %s",
                 strerror(errno));
        return -1;
    }

    e->st->heartbeat_ns = now;
    e->st->load.loop_ns = now;

    return fg_shm_heartbeat_start(e, err, errlen);
}


fg_shm_engine_t *
fg_shm_engine_create(const fg_shm_engine_conf_t *conf, char *err,
    size_t errlen)
{
    fg_shm_layout_t   l;
    fg_shm_engine_t  *e;

    memset(&l, 0, sizeof(fg_shm_layout_t));

    if (fg_shm_engine_sizes(conf, &l, err, errlen) != 0) {
        return NULL;
    }

    e = calloc(1, sizeof(fg_shm_engine_t));

    if (e == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }

    e->sock = -1;
    e->size = l.size;
    snprintf(e->name, sizeof(e->name), "%s", conf->name);

    e->w = calloc(l.workers, sizeof(fg_shm_local_t));
    e->prompt = malloc((size_t) conf->shape.context * sizeof(int32_t));
    e->grammar = malloc(FG_SHM_MAX_GRAMMAR);

    if (e->w == NULL || e->prompt == NULL || e->grammar == NULL) {
        snprintf(err, errlen, "out of memory");
        goto failed;
    }

    e->timeout_ns = (uint64_t) (conf->worker_timeout_ms
                                ? conf->worker_timeout_ms
                                : FG_SHM_DEF_TIMEOUT_MS) * 1000000ULL;

    if (fg_shm_engine_map(e, conf, err, errlen) != 0) {
        goto failed;
    }

    fg_shm_engine_header_init(e, conf, &l);

    if (fg_shm_engine_start(e, err, errlen) != 0) {
        goto failed;
    }

    fg_shm_store(&e->h->state, FG_SHM_READY);

    return e;

failed:

    fg_shm_engine_destroy(e);

    return NULL;
}


static void
fg_shm_heartbeat_stop(fg_shm_engine_t *e)
{
    pthread_mutex_lock(&e->hb_lock);
    e->hb_stop = 1;
    pthread_cond_signal(&e->hb_cond);
    pthread_mutex_unlock(&e->hb_lock);
    pthread_join(e->hb, NULL);
}


/* marks the segment stopped, wakes the attached workers and unmaps it */
static void
fg_shm_engine_stop(fg_shm_engine_t *e)
{
    uint32_t          i;
    fg_shm_worker_t  *wk;

    fg_shm_store(&e->h->state, FG_SHM_STOPPED);
    fg_shm_fence();

    /* each attached worker learns at once, not at its next check */
    for (i = 0; i < e->h->max_workers; i++) {
        wk = fg_shm_worker(e->base, e->h, i);

        if (fg_shm_load(&wk->state) == FG_SHM_W_ACTIVE && e->sock != -1) {
            fg_shm_wake(e->sock, wk->sock, wk->sock_len);
        }
    }

    munmap(e->base, e->size);
    e->base = NULL;
    e->h = NULL;
}


/* removes the name, unless a newer engine (another generation) took it */
static void
fg_shm_engine_unlink(fg_shm_engine_t *e, uint64_t generation)
{
    int               fd;
    fg_shm_header_t  *h;

    fd = shm_open(e->name, O_RDONLY, 0);

    if (fd == -1) {
        return;
    }

    h = mmap(NULL, sizeof(fg_shm_header_t), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);

    if (h == MAP_FAILED) {
        shm_unlink(e->name);
        return;
    }

    if (generation == 0 || h->generation == generation) {
        shm_unlink(e->name);
    }

    munmap(h, sizeof(fg_shm_header_t));
}


void
fg_shm_engine_destroy(fg_shm_engine_t *e)
{
    uint32_t  i, workers;
    uint64_t  generation;

    if (e == NULL) {
        return;
    }

    generation = e->base ? e->h->generation : 0;
    workers = e->base ? e->h->max_workers : 0;

    if (e->hb_running) {
        fg_shm_heartbeat_stop(e);
    }

    if (e->base) {
        fg_shm_engine_stop(e);
    }

    if (e->created) {
        fg_shm_engine_unlink(e, generation);
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
    free(e->grammar);
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
