
/*
 * fairgate: the engine protocol end to end.  The engine (sim backend, the
 * real serving loop) runs in a forked process; this process is a fake
 * gateway worker; more forked processes are other workers, one of which
 * vanishes mid-stream and one of which stops reading.  Checked: the
 * segment's permissions, tokens streamed as the batcher makes them (long
 * prompts in chunks), refusals with their reasons, cancels (also of a
 * request still in the ring), a full ring, the status block, lost workers
 * cancelled without wedging the engine, a crashed engine replaced by a new
 * generation, and a clean stop that removes the segment.  The engine runs
 * its prefix cache: the worker's hashes of a prompt (fg_shm_block_hashes)
 * find in the segment's index what the engine computed, and the engine
 * reports the cached tokens on its events and the cache in its status.
 *
 * No sleep synchronises anything: waits are poll() on the client's socket
 * or a pipe, with deadlines, and every loop is bounded.
 */


#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fg_tap.h"
#include "fg_test_backend.h"
#include "fg_test_batch.h"
#include "fg_backend.h"
#include "fg_batch.h"
#include "fg_engine_serve.h"
#include "fg_shm_client.h"
#include "fg_shm_engine.h"


#define VOCAB           1000
#define KV_BLOCKS       128
#define MAX_BATCH       4
#define MAX_SEQS        8
#define SUB_SLOTS       16
#define COMP_SLOTS      64
#define TIMEOUT_MS      500
#define DEAD_MS         400
#define STEP_MODEL      "linear:0.00001,0.0005"
#define MAX_REQ         64
#define LONG            1500


typedef struct {
    int32_t     tokens[LONG + 8];
    uint32_t    n;
    uint32_t    finish;
    uint32_t    error;
    uint32_t    finals;
    uint32_t    n_prompt;
    uint32_t    n_generated;
    uint32_t    n_cached;
    float       vec[64];        /* an embedding's pieces */
    uint32_t    n_vec;
} rq_t;


static char                   shm_name[64];
static const char            *group;
static rq_t                   rq[MAX_REQ];
static uint32_t               strays;
static uint32_t               dups;
static int32_t               *ref_out;
static uint32_t               ref_n;
static volatile sig_atomic_t  stop;


static uint64_t
now_ms(void)
{
    return fg_shm_now() / 1000000;
}


/* ---- the engine, in a child ---- */

static void
on_term(int signo)
{
    (void) signo;

    stop = 1;
}


static int
engine_child(int ready)
{
    char                   err[256];
    fg_kv_t               *kv;
    fg_batch_t            *batch;
    fg_backend_t          *b;
    fg_shm_engine_t       *shm;
    struct sigaction       sa;
    fg_batch_conf_t        bc;
    fg_backend_conf_t      conf;
    fg_backend_info_t      info;
    fg_shm_engine_conf_t   sc;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);

    fg_test_backend_sim(&conf, KV_BLOCKS, 16, MAX_BATCH, 64,
                        STEP_MODEL, 1.0, VOCAB);

    b = fg_backend_sim.create(&conf, err, sizeof(err));
    kv = fg_kv_create(KV_BLOCKS, 16, err, sizeof(err));

    if (b == NULL || kv == NULL) {
        fprintf(stderr, "engine: %s\n", err);
        return 1;
    }

    fg_backend_sim.info(b, &info);

    memset(&sc, 0, sizeof(sc));
    sc.name = shm_name;
    sc.group = group;
    sc.max_workers = 8;
    sc.sub_slots = SUB_SLOTS;
    sc.cancel_slots = 64;
    sc.comp_slots = COMP_SLOTS;
    sc.worker_timeout_ms = TIMEOUT_MS;
    sc.shape.vocab = info.vocab;
    sc.shape.context = info.context;
    sc.shape.eos = 2;
    sc.shape.bos = 1;
    sc.shape.block_size = 16;
    sc.shape.kv_blocks = KV_BLOCKS;
    sc.shape.max_batch = MAX_BATCH;
    sc.shape.max_seqs = MAX_SEQS;
    sc.shape.step_tokens = 64;
    sc.embd = info.n_embd;
    sc.model = "sim";
    sc.backend = "sim";

    shm = fg_shm_engine_create(&sc, err, sizeof(err));

    if (shm == NULL) {
        fprintf(stderr, "engine: %s\n", err);
        return 1;
    }

    fg_test_batch_conf(&bc, MAX_BATCH, 64, MAX_SEQS, fg_engine_serve_emit, shm);
    bc.prefix_cache = 1;

    batch = fg_batch_create(&bc, &fg_backend_sim, b, kv, err, sizeof(err));

    if (batch == NULL) {
        fprintf(stderr, "engine: %s\n", err);
        return 1;
    }

    fg_kv_set_index(kv, fg_shm_engine_index, shm);

    if (write(ready, "R", 1) != 1) {
        return 1;
    }

    close(ready);

    fg_engine_serve(shm, batch, &stop);

    fg_batch_destroy(batch);
    fg_shm_engine_destroy(shm);
    fg_kv_destroy(kv);
    fg_backend_sim.destroy(b);

    return 0;
}


/* forks an engine and waits (up to 5 s) until it serves; 0 on failure */
static pid_t
engine_start(void)
{
    int            p[2];
    char           c;
    pid_t          pid;
    struct pollfd  pfd;

    if (pipe(p) != 0) {
        return 0;
    }

    pid = fork();

    if (pid == 0) {
        close(p[0]);
        _exit(engine_child(p[1]));
    }

    close(p[1]);

    pfd.fd = p[0];
    pfd.events = POLLIN;

    if (poll(&pfd, 1, 5000) != 1 || read(p[0], &c, 1) != 1 || c != 'R') {
        close(p[0]);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return 0;
    }

    close(p[0]);

    return pid;
}


/* ---- the fake gateway worker ---- */

static void
reset(void)
{
    memset(rq, 0, sizeof(rq));
    strays = 0;
    dups = 0;
}


static void
apply(const fg_shm_comp_t *ev)
{
    rq_t          *r;
    fg_shm_vec_t   piece;

    if (ev->req_id >= MAX_REQ) {
        strays++;
        return;
    }

    r = &rq[ev->req_id];

    /* a second submission under a running id: refused on its own */
    if (ev->finish == FG_SHM_FINISH_REFUSED
        && ev->error == FG_SHM_ERR_DUPLICATE)
    {
        dups++;
        return;
    }

    if (r->finals) {
        strays++;
        return;
    }

    if (fg_shm_vec_get(ev, &piece)) {
        if (piece.offset != r->n_vec || piece.offset + piece.n > 64) {
            strays++;
            return;
        }

        memcpy(r->vec + piece.offset, piece.v, piece.n * sizeof(float));
        r->n_vec += piece.n;
        return;
    }

    if (ev->token >= 0 && r->n < LONG + 8) {
        r->tokens[r->n++] = ev->token;
    }

    r->n_prompt = ev->n_prompt;
    r->n_generated = ev->n_generated;
    r->n_cached = ev->n_cached;

    if (ev->finish != FG_SHM_FINISH_NONE) {
        r->finish = ev->finish;
        r->error = ev->error;
        r->finals++;
    }
}


typedef int (*cond_pt)(fg_shm_client_t *c, uint64_t arg);


/*
 * Reads events until cond holds or ms pass: waits on the client's socket,
 * beating its heartbeat between waits.  Returns whether cond held.
 */
static int
pump(fg_shm_client_t *c, uint64_t ms, cond_pt cond, uint64_t arg)
{
    size_t         i, n;
    int64_t        left;
    uint64_t       deadline;
    fg_shm_comp_t  ev[64];
    struct pollfd  pfd;

    deadline = now_ms() + ms;

    for ( ;; ) {
        n = fg_shm_client_poll(c, ev, 64);

        for (i = 0; i < n; i++) {
            apply(&ev[i]);
        }

        if (cond(c, arg)) {
            return 1;
        }

        if (n == 64) {
            continue;
        }

        left = (int64_t) (deadline - now_ms());

        if (left <= 0) {
            return 0;
        }

        pfd.fd = fg_shm_client_fd(c);
        pfd.events = POLLIN;
        poll(&pfd, 1, left < 50 ? (int) left : 50);

        fg_shm_client_tick(c, NULL, 0);
    }
}


static int
finals_at_least(fg_shm_client_t *c, uint64_t arg)
{
    uint32_t  i, n;

    (void) c;

    for (i = 0, n = 0; i < MAX_REQ; i++) {
        n += rq[i].finals;
    }

    return n >= arg;
}


static int
final_of(fg_shm_client_t *c, uint64_t id)
{
    (void) c;

    return rq[id].finals > 0;
}


static int
tokens_of(fg_shm_client_t *c, uint64_t arg)
{
    (void) c;

    /* arg: id << 32 | tokens */
    return rq[arg >> 32].n >= (arg & 0xffffffff);
}


static int
idle(fg_shm_client_t *c, uint64_t workers)
{
    fg_shm_load_t  load;

    return fg_shm_client_status(c, &load) == FG_SHM_OK
           && load.running == 0 && load.waiting == 0
           && load.kv_free == load.kv_blocks
           && (workers == 0 || load.workers == workers);
}


static int
busy(fg_shm_client_t *c, uint64_t held)
{
    fg_shm_load_t  load;

    return fg_shm_client_status(c, &load) == FG_SHM_OK
           && load.running + load.waiting >= held;
}


static int
never(fg_shm_client_t *c, uint64_t arg)
{
    (void) c;
    (void) arg;

    return 0;
}


static void
prompt_of(int32_t *p, uint32_t n, uint32_t salt)
{
    uint32_t  i;

    for (i = 0; i < n; i++) {
        p[i] = (int32_t) ((i * 37 + salt * 101 + 3) % VOCAB);
    }
}


static int
submit(fg_shm_client_t *c, uint64_t id, uint32_t n_prompt,
    uint32_t max_tokens, uint32_t salt)
{
    int32_t          prompt[4096];
    fg_shm_submit_t  req;

    prompt_of(prompt, n_prompt, salt);

    memset(&req, 0, sizeof(req));
    req.req_id = id;
    req.prompt = prompt;
    req.n_prompt = n_prompt;
    req.max_tokens = max_tokens;

    return fg_shm_client_submit(c, &req);
}


static void
collect(void *ctx, const fg_batch_event_t *ev)
{
    (void) ctx;

    if (ev->token >= 0) {
        ref_out[ref_n++] = ev->token;
    }
}


/* the tokens a request gets from the batcher and sim in this process */
static void
reference(uint32_t n_prompt, uint32_t max_tokens, uint32_t salt,
    int32_t *out)
{
    char               err[256];
    int32_t            prompt[4096];
    uint32_t           i;
    fg_kv_t           *kv;
    fg_batch_t        *batch;
    fg_backend_t      *b;
    fg_batch_req_t     req;
    fg_batch_conf_t    bc;
    fg_backend_conf_t  conf;

    fg_test_backend_sim(&conf, KV_BLOCKS, 16, 0, 0, STEP_MODEL, 1e9, VOCAB);

    b = fg_backend_sim.create(&conf, err, sizeof(err));
    kv = fg_kv_create(KV_BLOCKS, 16, err, sizeof(err));

    fg_test_batch_conf(&bc, MAX_BATCH, 64, MAX_SEQS, collect, NULL);

    batch = fg_batch_create(&bc, &fg_backend_sim, b, kv, err, sizeof(err));

    prompt_of(prompt, n_prompt, salt);
    memset(&req, 0, sizeof(req));
    req.prompt = prompt;
    req.n_prompt = n_prompt;
    req.max_tokens = max_tokens;
    fg_sample_params_init(&req.sampling);

    ref_out = out;
    ref_n = 0;
    fg_batch_submit(batch, &req, err, sizeof(err));

    for (i = 0; i < 10000 && fg_batch_step(batch, err, sizeof(err)) > 0; i++)
    {
        /* void */
    }

    fg_batch_destroy(batch);
    fg_kv_destroy(kv);
    fg_backend_sim.destroy(b);
}


static int
same(const rq_t *r, const int32_t *ref, uint32_t n)
{
    return r->n == n && memcmp(r->tokens, ref, n * sizeof(int32_t)) == 0;
}


/* ---- the tests ---- */

static void
test_segment(fg_shm_client_t *c)
{
    int                   fd;
    struct stat           st;
    struct group         *gr;
    const fg_shm_info_t  *info;

    info = fg_shm_client_info(c);

    ok(info && info->shape.vocab == VOCAB && info->shape.context == 4096
       && info->shape.kv_blocks == KV_BLOCKS
       && info->shape.max_batch == MAX_BATCH
       && info->shape.eos == 2 && strcmp(info->backend, "sim") == 0,
       "the header tells the model and the engine's limits");
    ok(info && info->generation != 0, "a generation is set");

    memset(&st, 0, sizeof(st));
    fd = shm_open(shm_name, O_RDONLY, 0);

    if (fd != -1) {
        fstat(fd, &st);
    }

    ok(fd != -1 && (st.st_mode & 0777) == 0660, "the segment is mode 0660 "
       "(%o)", (unsigned) (st.st_mode & 0777));

    if (group) {
        gr = getgrnam(group);
        ok(gr && st.st_gid == gr->gr_gid, "and belongs to group %s", group);

    } else {
        ok(1, "# skip the group: not root");
    }

    if (fd != -1) {
        close(fd);
    }
}


static void
test_stream(fg_shm_client_t *c)
{
    int       all;
    int32_t   ref[3][64];
    uint32_t  i, lens[3] = { 5, 300, 10 };

    reset();

    for (i = 0; i < 3; i++) {
        reference(lens[i], 20, i, ref[i]);
        is_int(submit(c, i, lens[i], 20, i), FG_SHM_OK,
               "submit a prompt of %u tokens", lens[i]);
    }

    ok(pump(c, 5000, finals_at_least, 3), "three requests end");

    all = 1;

    for (i = 0; i < 3; i++) {
        if (!same(&rq[i], ref[i], 20) || rq[i].finish != FG_SHM_FINISH_LENGTH
            || rq[i].finals != 1 || rq[i].n_prompt != lens[i]
            || rq[i].n_generated != 20)
        {
            diag("request %u: %u tokens, finish %s, usage %u + %u", i,
                 rq[i].n, fg_shm_finish_name(rq[i].finish), rq[i].n_prompt,
                 rq[i].n_generated);
            all = 0;
        }
    }

    ok(all, "each streams the batcher's 20 tokens, then one final event "
       "with usage (a 300-token prompt in two slots)");
    is_int(strays, 0, "no event for anything else");
}


/*
 * Embeddings: the vector's pieces, in order, then one final event; the
 * same prompt gives the same vector, another another; a generating
 * request beside them streams as ever.
 */
static void
test_embed(fg_shm_client_t *c)
{
    double           norm, same_d, other_d;
    int32_t          prompt[300];
    uint32_t         i, k, lens[3] = { 300, 7, 300 }, salts[3] = { 1, 2, 1 };
    fg_shm_submit_t  req;

    reset();

    is_int(fg_shm_client_info(c)->embd, 16, "the engine says its "
           "embeddings' width");

    for (i = 0; i < 3; i++) {
        prompt_of(prompt, lens[i], salts[i]);
        memset(&req, 0, sizeof(req));
        req.req_id = i;
        req.prompt = prompt;
        req.n_prompt = lens[i];
        req.embed = FG_SHM_EMBED_MEAN;

        is_int(fg_shm_client_submit(c, &req), FG_SHM_OK, "submit an "
               "embedding of %u tokens", lens[i]);
    }

    is_int(submit(c, 3, 10, 8, 0), FG_SHM_OK, "and a generation");

    req.embed = 7;
    req.req_id = 4;
    is_int(fg_shm_client_submit(c, &req), FG_SHM_EINVAL, "an unknown kind "
           "of embedding is refused");

    ok(pump(c, 5000, finals_at_least, 4), "four requests end");

    for (i = 0; i < 3; i++) {
        norm = 0.0;

        for (k = 0; k < rq[i].n_vec; k++) {
            norm += (double) rq[i].vec[k] * rq[i].vec[k];
        }

        ok(rq[i].n_vec == 16 && rq[i].finish == FG_SHM_FINISH_STOP
           && rq[i].finals == 1 && rq[i].n == 0
           && rq[i].n_prompt == lens[i] && rq[i].n_generated == 0
           && fabs(norm - 1.0) < 1e-5,
           "embedding %u: 16 floats of unit length, then its end with "
           "usage (%u floats, finish %s, %u + %u)", i, rq[i].n_vec,
           fg_shm_finish_name(rq[i].finish), rq[i].n_prompt,
           rq[i].n_generated);
    }

    /* alike up to the rounding of sums over other chunks */
    same_d = 0.0;
    other_d = 0.0;

    for (k = 0; k < 16; k++) {
        same_d = fmax(same_d, fabs(rq[0].vec[k] - rq[2].vec[k]));
        other_d = fmax(other_d, fabs(rq[0].vec[k] - rq[1].vec[k]));
    }

    ok(same_d < 1e-6 && other_d > 1e-3, "the same prompt, the same vector "
       "(%.1e); another, another (%.1e)", same_d, other_d);
    ok(rq[3].n == 8 && rq[3].n_vec == 0, "the generation beside them "
       "streams its 8 tokens");
    is_int(strays, 0, "no event for anything else");
}


/* the prefix index, read by the worker: what the engine computed */
static void
test_prefix_index(fg_shm_client_t *c)
{
    int            done;
    int32_t        p[64], q[64], ref[20];
    uint64_t       h[8], g[8];
    uint32_t       n;
    fg_shm_load_t  load;

    reset();
    prompt_of(p, 64, 40);
    prompt_of(q, 64, 41);
    memcpy(q, p, 40 * sizeof(int32_t));
    reference(64, 20, 40, ref);

    n = fg_shm_block_hashes(p, 64, 16, h, 8);
    is_int(n, 4, "a prompt of 64 tokens has 4 block hashes");
    is_int(fg_shm_block_hashes(p, 64, 16, g, 3), 3, "at most max of them");
    is_int(fg_shm_client_prefix_match(c, h, 4), 0, "none is in the index "
           "before the engine ran it");

    submit(c, 0, 64, 20, 40);
    ok(pump(c, 5000, final_of, 0) && same(&rq[0], ref, 20)
       && rq[0].n_cached == 0, "the engine runs it: nothing cached");
    is_int(fg_shm_client_prefix_match(c, h, 4), 4, "the worker's hashes "
           "find its 4 blocks in the index");

    fg_shm_block_hashes(q, 64, 16, g, 8);
    ok(fg_shm_client_prefix_match(c, g, 4) == 2 && g[1] == h[1]
       && g[2] != h[2], "a prompt sharing 40 tokens matches 2 blocks");

    submit(c, 1, 64, 20, 40);
    done = pump(c, 5000, final_of, 1);
    ok(done && same(&rq[1], ref, 20) && rq[1].n_cached == 48,
       "the same prompt again: the same tokens, 48 reported cached (%u)",
       rq[1].n_cached);

    memset(&load, 0, sizeof(load));
    done = fg_shm_client_status(c, &load) == FG_SHM_OK;
    ok(done && load.cache_blocks >= 4 && load.cache_hit_tokens >= 48
       && load.cache_query_tokens >= 128 && load.cache_evictions == 0,
       "the status: %llu blocks cached, %llu of %llu prompt tokens reused",
       (unsigned long long) load.cache_blocks,
       (unsigned long long) load.cache_hit_tokens,
       (unsigned long long) load.cache_query_tokens);
}


static void
test_refusals(fg_shm_client_t *c)
{
    int32_t          bad[2] = { 5, VOCAB + 7 };
    fg_shm_submit_t  req;

    reset();

    memset(&req, 0, sizeof(req));
    req.req_id = 1;
    req.prompt = bad;
    req.n_prompt = 2;
    req.max_tokens = 5;
    is_int(fg_shm_client_submit(c, &req), FG_SHM_OK,
           "a token outside the vocabulary goes through the ring");

    submit(c, 2, 100, 4000, 0);
    submit(c, 3, 10, KV_BLOCKS * 16 - 8, 3);
    submit(c, 4, 10, 10, 4);
    submit(c, 4, 10, 10, 4);

    req.n_prompt = 5000;
    is_int(fg_shm_client_submit(c, &req), FG_SHM_EINVAL,
           "a prompt beyond the context is refused by the client");

    ok(pump(c, 5000, finals_at_least, 4), "all answered");

    ok(rq[1].finish == FG_SHM_FINISH_REFUSED
       && rq[1].error == FG_SHM_ERR_INVALID, "bad token: refused, invalid");
    ok(rq[2].finish == FG_SHM_FINISH_REFUSED
       && rq[2].error == FG_SHM_ERR_CONTEXT,
       "prompt + max_tokens beyond the context: refused, context (%s)",
       fg_shm_error_name(rq[2].error));
    ok(rq[3].finish == FG_SHM_FINISH_REFUSED && rq[3].error == FG_SHM_ERR_KV,
       "beyond the KV pool even alone: refused, kv (%s)",
       fg_shm_error_name(rq[3].error));
    ok(rq[4].finish == FG_SHM_FINISH_LENGTH && rq[4].n == 10,
       "an id used twice runs once");
    is_int(dups, 1, "and the second is refused as a duplicate");
    is_int(strays, 0, "no other event");
}


static void
test_cancel(fg_shm_client_t *c)
{
    reset();

    submit(c, 1, 8, LONG, 1);
    ok(pump(c, 5000, tokens_of, (1ULL << 32) | 5), "a long request streams");

    is_int(fg_shm_client_cancel(c, 1), FG_SHM_OK, "cancel it");
    pump(c, 5000, final_of, 1);
    ok(rq[1].finals == 1 && rq[1].finish == FG_SHM_FINISH_CANCEL
       && rq[1].n < 1000, "its final event says cancel (after %u tokens)",
       rq[1].n);
    ok(pump(c, 5000, idle, 0), "its blocks are free in the status");

    /* a cancel right behind its submission, maybe before the engine
     * took it: one final event either way */
    submit(c, 2, 8, LONG, 2);
    fg_shm_client_cancel(c, 2);
    ok(pump(c, 5000, final_of, 2) && rq[2].finish == FG_SHM_FINISH_CANCEL
       && rq[2].finals == 1, "a cancel on the heels of its submission ends "
       "it");

    /* a cancel of what is not held changes nothing */
    is_int(fg_shm_client_cancel(c, 40), FG_SHM_OK, "cancel an unknown id");
    submit(c, 3, 8, 5, 3);
    ok(pump(c, 5000, final_of, 3) && rq[3].finish == FG_SHM_FINISH_LENGTH,
       "the next request runs normally");
    is_int(strays, 0, "no stray event");
}


static void
test_full(fg_shm_client_t *c)
{
    int            rc;
    uint32_t       i, accepted, full;
    fg_shm_load_t  load;

    reset();

    /* MAX_SEQS held, SUB_SLOTS more in the ring, then full */
    accepted = full = 0;

    for (i = 0; i < 40; i++) {
        rc = submit(c, i, 8, LONG, i);

        if (rc == FG_SHM_OK) {
            accepted++;

        } else if (rc == FG_SHM_EFULL) {
            full++;
        }
    }

    ok(full > 0 && accepted >= SUB_SLOTS && accepted <= SUB_SLOTS + MAX_SEQS,
       "a full ring says so at once: %u taken, %u full", accepted, full);

    ok(pump(c, 3000, busy, MAX_SEQS), "the engine holds all it can");

    memset(&load, 0, sizeof(load));
    rc = fg_shm_client_status(c, &load);
    ok(rc == FG_SHM_OK
       && load.running == MAX_BATCH && load.waiting == MAX_SEQS - MAX_BATCH
       && load.overload == 1 && load.kv_free < KV_BLOCKS,
       "status: %llu running, %llu waiting, overload %llu, %llu KV blocks "
       "free", (unsigned long long) load.running,
       (unsigned long long) load.waiting, (unsigned long long) load.overload,
       (unsigned long long) load.kv_free);

    for (i = 0; i < accepted; i++) {
        fg_shm_client_cancel(c, i);
    }

    ok(pump(c, 5000, finals_at_least, accepted),
       "every one of them, held or still in the ring, ends on its cancel");

    for (i = 0, rc = 1; i < accepted; i++) {
        rc &= rq[i].finals == 1 && rq[i].finish == FG_SHM_FINISH_CANCEL;
    }

    ok(rc, "with exactly one final event, cancel");
    ok(pump(c, 5000, idle, 0), "and the engine is idle again");
}


/* a second worker that vanishes mid-stream (mode 0) or stops reading and
 * beating its heartbeat (mode 1) */
static pid_t
worker_start(int mode, int *ready_fd)
{
    int              p[2];
    char             err[256];
    pid_t            pid;
    fg_shm_client_t *c;

    if (pipe(p) != 0) {
        return 0;
    }

    pid = fork();

    if (pid != 0) {
        close(p[1]);
        *ready_fd = p[0];
        return pid;
    }

    close(p[0]);

    c = fg_shm_client_create(shm_name, DEAD_MS, err, sizeof(err));

    if (c == NULL || fg_shm_client_attach(c, err, sizeof(err)) != FG_SHM_OK)
    {
        _exit(1);
    }

    reset();
    submit(c, 1, 8, LONG, 11);
    submit(c, 2, 8, LONG, 12);

    if (mode == 0) {
        pump(c, 5000, tokens_of, (1ULL << 32) | 5);

        if (write(p[1], "R", 1) != 1) {
            _exit(1);
        }

        /* gone without a word: no detach, no cancel */
        _exit(0);
    }

    if (write(p[1], "R", 1) != 1) {
        _exit(1);
    }

    /* alive, but never reads again */
    for ( ;; ) {
        pause();
    }
}


static int
worker_ready(int fd)
{
    int            ok;
    char           c;
    struct pollfd  pfd;

    pfd.fd = fd;
    pfd.events = POLLIN;

    ok = poll(&pfd, 1, 5000) == 1 && read(fd, &c, 1) == 1 && c == 'R';
    close(fd);

    return ok;
}


static void
test_lost_workers(fg_shm_client_t *c)
{
    int            fd, status;
    pid_t          pid;
    fg_shm_load_t  before, load;

    fg_shm_client_status(c, &before);

    /* vanishes mid-stream */
    pid = worker_start(0, &fd);
    ok(pid > 0 && worker_ready(fd), "a second worker streams two requests");
    ok(waitpid(pid, &status, 0) == pid && WIFEXITED(status)
       && WEXITSTATUS(status) == 0, "and exits without a word");

    ok(pump(c, 3000, idle, 1), "the engine cancels its requests and frees "
       "its blocks and slot");

    /* stops reading, alive */
    pid = worker_start(1, &fd);
    ok(pid > 0 && worker_ready(fd), "a third worker submits and stops "
       "reading");
    ok(pump(c, 3000, busy, 2), "its requests run");

    ok(pump(c, 5000, idle, 1), "its ring fills, its heartbeat ages: the "
       "engine drops it");
    ok(kill(pid, 0) == 0, "while its process is still alive");

    fg_shm_client_status(c, &load);
    ok(load.lost_workers >= before.lost_workers + 2,
       "both counted as lost workers (%llu)",
       (unsigned long long) load.lost_workers);

    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);

    /* not wedged */
    reset();
    submit(c, 5, 8, 12, 5);
    ok(pump(c, 5000, final_of, 5) && rq[5].n == 12
       && rq[5].finish == FG_SHM_FINISH_LENGTH,
       "this worker is still served");
}


static int
lost(fg_shm_client_t *c, uint64_t arg)
{
    (void) arg;

    return !fg_shm_client_attached(c);
}


static void
test_restart(fg_shm_client_t *c, pid_t *engine)
{
    int       ev, status;
    uint64_t  gen, deadline;

    gen = fg_shm_client_info(c)->generation;

    reset();
    submit(c, 1, 8, LONG, 1);
    pump(c, 5000, tokens_of, (1ULL << 32) | 3);

    /* a crash: the segment stays behind with a stale heartbeat */
    kill(*engine, SIGKILL);
    waitpid(*engine, NULL, 0);

    ok(pump(c, 3000, lost, 0), "a killed engine is noticed");
    is_int(submit(c, 2, 8, 5, 2), FG_SHM_EDOWN,
           "submissions get 'down' while it is away");
    is_int(rq[1].finals, 0, "the open request got no final event: the "
           "gateway ends it");

    *engine = engine_start();
    ok(*engine > 0, "a new engine replaces the stale segment");

    ev = FG_SHM_EV_NONE;
    deadline = now_ms() + 3000;

    while (ev != FG_SHM_EV_BACK && now_ms() < deadline) {
        ev = fg_shm_client_tick(c, NULL, 0);

        if (ev != FG_SHM_EV_BACK) {
            pump(c, 20, never, 0);
        }
    }

    is_int(ev, FG_SHM_EV_BACK, "the client attaches again by itself");
    ok(fg_shm_client_info(c)->generation != gen,
       "to a new generation");

    reset();
    submit(c, 3, 8, 6, 3);
    ok(pump(c, 5000, final_of, 3) && rq[3].n == 6, "and is served");

    /* a clean stop */
    kill(*engine, SIGTERM);
    ok(waitpid(*engine, &status, 0) == *engine && WIFEXITED(status)
       && WEXITSTATUS(status) == 0, "SIGTERM stops the engine cleanly");
    *engine = 0;

    ok(shm_open(shm_name, O_RDONLY, 0) == -1 && errno == ENOENT,
       "and removes its segment");
    is_int(fg_shm_client_tick(c, NULL, 0), FG_SHM_EV_LOST,
           "the client sees it stopped at its next tick");
}


/* a worker running as nobody: served when in the segment's group */
static int
as_nobody(gid_t gid)
{
    char              err[256];
    pid_t             pid;
    int               status;
    fg_shm_client_t  *c;

    pid = fork();

    if (pid == 0) {
        if (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(65534) != 0)
        {
            _exit(10);
        }

        c = fg_shm_client_create(shm_name, DEAD_MS, err, sizeof(err));

        if (c == NULL) {
            _exit(11);
        }

        if (fg_shm_client_attach(c, err, sizeof(err)) != FG_SHM_OK) {
            _exit(strstr(err, "Permission denied") ? 12 : 13);
        }

        reset();
        submit(c, 1, 6, 7, 1);

        if (!pump(c, 5000, final_of, 1) || rq[1].n != 7) {
            _exit(14);
        }

        fg_shm_client_destroy(c);
        _exit(0);
    }

    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
        return -1;
    }

    return WEXITSTATUS(status);
}


static void
test_other_user(void)
{
    struct group  *gr;

    if (group == NULL) {
        ok(1, "# skip another user's worker: not root");
        ok(1, "# skip another user's worker: not root");
        return;
    }

    gr = getgrnam(group);

    is_int(as_nobody(gr->gr_gid), 0, "a worker running as nobody in group "
           "%s attaches and is served", group);
    is_int(as_nobody(12345), 12, "one outside the group is refused: "
           "permission denied");
}


int
main(void)
{
    char              err[256];
    pid_t             engine;
    fg_shm_client_t  *c;

    snprintf(shm_name, sizeof(shm_name), "/fg-test-shm-%d", (int) getpid());
    group = geteuid() == 0 && getgrnam("nogroup") ? "nogroup" : NULL;

    signal(SIGPIPE, SIG_IGN);

    c = fg_shm_client_create(shm_name, DEAD_MS, err, sizeof(err));
    ok(c != NULL, "a client");
    is_int(fg_shm_client_attach(c, err, sizeof(err)), FG_SHM_EAGAIN,
           "no engine yet: try again (%s)", err);
    is_int(submit(c, 1, 4, 4, 0), FG_SHM_EDOWN, "submit: down");

    engine = engine_start();
    ok(engine > 0, "the engine starts");

    if (engine <= 0) {
        return done_testing();
    }

    is_int(fg_shm_client_tick(c, err, sizeof(err)), FG_SHM_EV_BACK,
           "the client's tick attaches");

    test_segment(c);
    test_stream(c);
    test_embed(c);
    test_prefix_index(c);
    test_refusals(c);
    test_cancel(c);
    test_full(c);
    test_lost_workers(c);
    test_other_user();
    test_restart(c, &engine);

    if (engine > 0) {
        kill(engine, SIGKILL);
        waitpid(engine, NULL, 0);
    }

    fg_shm_client_destroy(c);
    shm_unlink(shm_name);

    return done_testing();
}
