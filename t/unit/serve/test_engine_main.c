
/*
 * fairgate: tests of the fairgate-engine command (build/fairgate-engine,
 * run from the top of the tree as prove does): bad arguments exit 2
 * naming the argument, the one-shot mode prints a deterministic
 * continuation of stories260K's prompt, and the serving mode answers a
 * client, refuses a second engine on its segment, and on SIGTERM or
 * SIGINT stops with the segment removed.  On the cpu backend, six
 * stories260K requests in a KV pool for three (preemptions) each give the
 * greedy tokens they give alone.
 *
 * Waits read the engine's stderr (its "serving" line) through a pipe with
 * poll() and a deadline; nothing sleeps to synchronise.
 */


#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fg_tap.h"
#include "fg_shm_client.h"
#include "fg_test_proc.h"


/* the build tested: build/, or make test-asan's build/asan (unit.mk) */
#ifndef FG_TEST_BUILD
#define FG_TEST_BUILD "build"
#endif

#define ENGINE      FG_TEST_BUILD "/fairgate-engine"
#define GGUF_GEN    FG_TEST_BUILD "/fairgate-gguf-gen"
#define MODEL       "../shared/models/stories260K.gguf"


/*
 * A vocabulary of byte tokens alone (a generated model, make run's
 * fallback): the sim backend generates printable bytes from it.
 */
static void
test_sim_bytes(void)
{
    int     rc, printable;
    char    path[64];
    size_t  i, n;

    snprintf(path, sizeof(path), "/tmp/fg-test-bytes-%d.gguf", (int) getpid());

    rc = fg_test_run((char *[]) { GGUF_GEN, "-o", path,
                                  "--name", "generated", NULL });
    is_int(rc, 0, "a byte-vocabulary model generated");

    rc = fg_test_run((char *[]) { ENGINE, "--backend", "sim", "--model", path,
                                  "--prompt", "hi", "-n", "16", "--speedup",
                                  "1e6", NULL });
    is_int(rc, 0, "sim on a byte vocabulary: exit 0");

    n = strlen(out_buf);
    while (n && out_buf[n - 1] == '\n') {
        n--;
    }

    printable = 1;
    for (i = 0; i < n; i++) {
        if (out_buf[i] < 0x20 || out_buf[i] >= 0x7f) {
            printable = 0;
        }
    }

    ok(n == 16 && printable, "16 printable bytes (%zu: \"%.*s\")", n,
       (int) n, out_buf);

    unlink(path);
}



static void
test_bad_arguments(void)
{
    size_t  i;

    static struct {
        const char  *what;
        char        *argv[18];
        const char  *says;
    } cases[] = {
        { "a number that is not one",
          { ENGINE, "--backend", "sim", "--kv-blocks", "12x", NULL },
          "--kv-blocks \"12x\"" },
        { "zero KV blocks",
          { ENGINE, "--backend", "sim", "--kv-blocks", "0", NULL },
          "from 1" },
        { "a KV type the engine has not",
          { ENGINE, "--backend", "sim", "--kv-type", "q8_0", NULL },
          "--kv-type \"q8_0\": expected f16 or f32" },
        { "an unknown backend",
          { ENGINE, "--backend", "gpu", "--model", "m", NULL },
          "--backend \"gpu\": expected cpu, cuda or sim" },
        { "an unknown option",
          { ENGINE, "--frobnicate", NULL },
          "unknown option \"--frobnicate\"" },
        { "an option without its value",
          { ENGINE, "--backend", "sim", "--max-batch", NULL },
          "--max-batch needs a value" },
        { "no model for cpu",
          { ENGINE, "--backend", "cpu", NULL },
          "--model PATH is required" },
        { "a one-shot without a model",
          { ENGINE, "--backend", "sim", "--prompt", "hi", NULL },
          "needs its tokenizer" },
        { "a shm name with a slash inside",
          { ENGINE, "--backend", "sim", "--shm", "/a/b", NULL },
          "--shm \"/a/b\"" },
        { "a negative speed-up",
          { ENGINE, "--backend", "sim", "--speedup", "-2", NULL },
          "--speedup \"-2\"" },
        { "a temperature out of range",
          { ENGINE, "--backend", "sim", "--temperature", "500", NULL },
          "--temperature \"500\"" },
        { "a stray argument",
          { ENGINE, "--backend", "sim", "extra", NULL },
          "unexpected argument \"extra\"" },
        { "an unknown scheduler",
          { ENGINE, "--backend", "sim", "--sched", "lifo", NULL },
          "--sched \"lifo\": expected fcfs or andes" },
        { "an unknown preemption",
          { ENGINE, "--backend", "sim", "--preempt", "drop", NULL },
          "--preempt \"drop\": expected recompute or swap" },
        { "a reading speed of 0",
          { ENGINE, "--backend", "sim", "--qoe-speed", "0", NULL },
          "--qoe-speed \"0\"" },
        { "fewer step tokens than seats",
          { ENGINE, "--backend", "sim", "--max-batch", "64",
            "--step-tokens", "8", NULL },
          "--step-tokens must be at least --max-batch" },
        { "two models and one segment",
          { ENGINE, "--model", "a", "--model", "b", "--shm", "/a", NULL },
          "one --shm each" },
        { "an unknown mux",
          { ENGINE, "--model", "a", "--shm", "/a", "--mux", "merge", NULL },
          "--mux \"merge\": expected spatial, temporal or muxserve" },
        { "a rate with one model",
          { ENGINE, "--model", "a", "--model-rate", "2", NULL },
          "--model-rate goes with several models" },
        { "two step models for one model",
          { ENGINE, "--backend", "sim", "--step-model", "gpu",
            "--step-model", "gpu", NULL },
          "--step-model: several for one model" },
        { "step models neither one nor one a model",
          { ENGINE, "--model", "a", "--shm", "/a", "--model", "b", "--shm",
            "/b", "--model", "c", "--shm", "/c", "--step-model", "gpu",
            "--step-model", "gpu", NULL },
          "--step-model: one for all models or one per --model (3 models, "
          "2 step models)" },
        { "a one-shot of several models",
          { ENGINE, "--model", "a", "--shm", "/a", "--model", "b", "--shm",
            "/b", "--prompt", "hi", NULL },
          "--prompt serves one model" },
    };

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        is_int(fg_test_run(cases[i].argv), 2, "%s: exit 2", cases[i].what);
        ok(strstr(err_buf, cases[i].says) != NULL, "  and says so: %.*s",
           (int) strcspn(err_buf, "\n"), err_buf);
    }

    is_int(fg_test_run((char *[]) { ENGINE, "--help", NULL }), 0,
           "--help: exit 0");
    ok(strstr(out_buf, "--kv-blocks") != NULL, "  and lists the options");

    is_int(fg_test_run((char *[]) { ENGINE, "--backend", "sim", "--model",
                                    "/nonexistent.gguf", NULL }), 1,
           "a missing model file: exit 1");
    ok(strstr(err_buf, "/nonexistent.gguf") != NULL, "  naming the file");

    /* 16M blocks of stories260K's cache are 160 GiB in halves, 320 in
     * floats: no machine here */
    is_int(fg_test_run((char *[]) { ENGINE, "--backend", "cpu", "--model",
                                    MODEL, "--kv-blocks", "16777216",
                                    NULL }), 1,
           "a KV cache larger than the memory: exit 1");
    ok(strstr(err_buf, "stories260K.gguf: its weights") != NULL
       && strstr(err_buf, "KV cache (160.00 GiB)") != NULL
       && strstr(err_buf, "fewer --kv-blocks") != NULL,
       "  and says what does not fit: %.*s", (int) strcspn(err_buf, "\n"),
       err_buf);

    is_int(fg_test_run((char *[]) { ENGINE, "--backend", "cpu", "--model",
                                    MODEL, "--kv-blocks", "16777216",
                                    "--kv-type", "f32", NULL }), 1,
           "--kv-type f32: exit 1");
    ok(strstr(err_buf, "KV cache (320.00 GiB)") != NULL,
       "  a cache of floats, twice the size: %.*s",
       (int) strcspn(err_buf, "\n"), err_buf);
}


static void
test_oneshot(void)
{
    int   rc;
    char  first[4096];

    if (access(MODEL, R_OK) != 0) {
        ok(1, "# skip the one-shot mode: no %s", MODEL);
        return;
    }

    rc = fg_test_run((char *[]) { ENGINE, "--backend", "sim", "--model", MODEL,
                                  "--prompt", "Once upon a time", "-n", "24",
                                  "--speedup", "1e6", NULL });
    is_int(rc, 0, "sim one-shot: exit 0");
    ok(strlen(out_buf) > 10, "it prints a continuation (%zu bytes)",
       strlen(out_buf));
    ok(strstr(err_buf, "24 generated") && strstr(err_buf, "finish: length"),
       "and says 24 tokens, finish length on stderr");

    snprintf(first, sizeof(first), "%s", out_buf);
    fg_test_run((char *[]) { ENGINE, "--backend", "sim", "--model", MODEL,
                             "--prompt", "Once upon a time", "-n", "24",
                             "--speedup", "1e6", NULL });
    is_str(out_buf, first, "greedy: the same text twice");

    fg_test_run((char *[]) { ENGINE, "--backend", "sim", "--model", MODEL,
                             "--prompt", "Once upon a time", "-n", "24",
                             "--speedup", "1e6", "--temperature", "1.5",
                             "--seed", "7", NULL });
    snprintf(first, sizeof(first), "%s", out_buf);
    fg_test_run((char *[]) { ENGINE, "--backend", "sim", "--model", MODEL,
                             "--prompt", "Once upon a time", "-n", "24",
                             "--speedup", "1e6", "--temperature", "1.5",
                             "--seed", "7", NULL });
    is_str(out_buf, first, "sampled with a seed: the same text twice");

    fg_test_run((char *[]) { ENGINE, "--backend", "sim", "--model", MODEL,
                             "--prompt", "Once upon a time", "-n", "24",
                             "--speedup", "1e6", "--temperature", "1.5",
                             "--seed", "8", NULL });
    ok(strcmp(out_buf, first) != 0, "another seed, another text");

    test_sim_bytes();

    rc = fg_test_run((char *[]) { ENGINE, "--model", MODEL, "--prompt",
                                  "Once upon a time", "-n", "8", NULL });
    is_int(rc, 0, "the default cpu backend runs");
    ok(strlen(out_buf) > 4, "  and continues the prompt (%zu bytes)",
       strlen(out_buf));

    rc = fg_test_run((char *[]) { ENGINE, "--model", MODEL, "--prompt",
                                  "Once upon a time", "-n", "8", "--kv-type",
                                  "f32", NULL });
    is_int(rc, 0, "an F32 cache runs");
    ok(strlen(out_buf) > 4, "  and continues the prompt (%zu bytes)",
       strlen(out_buf));

    rc = fg_test_run((char *[]) { ENGINE, "--backend", "sim", "--model",
                                  MODEL, "--prompt", "Once upon a time", "-n",
                                  "8", "--speedup", "1e6", "--kv-type", "f32",
                                  NULL });
    is_int(rc, 0, "the sim backend takes either type (it keeps no cache)");
}


static void
test_serve(void)
{
    int               status, i, finished;
    char              name[64], err[256];
    size_t            n, j, k;
    int32_t           prompt[6] = { 5, 6, 7, 8, 9, 10 };
    fg_test_proc_t    p, q;
    fg_shm_comp_t     ev[64];
    struct pollfd     pfd;
    fg_shm_client_t  *c;
    fg_shm_submit_t   req;

    snprintf(name, sizeof(name), "/fg-test-main-%d", (int) getpid());

    out_buf[0] = err_buf[0] = '\0';
    fg_test_spawn(&p, (char *[]) { ENGINE, "--backend", "sim", "--shm", name,
                                   "--kv-blocks", "64", "--max-batch", "4",
                                   "--speedup", "1e4", NULL });

    i = fg_test_collect(&p, 5000, "serving");
    ok(i, "the engine serves: %.*s", (int) strcspn(err_buf, "\n"), err_buf);

    /* it said so once its segment was ready */
    c = fg_shm_client_create(name, 2000, err, sizeof(err));
    ok(c && fg_shm_client_tick(c, err, sizeof(err)) == FG_SHM_EV_BACK,
       "a client attaches");

    memset(&req, 0, sizeof(req));
    req.req_id = 9;
    req.prompt = prompt;
    req.n_prompt = 6;
    req.max_tokens = 10;
    is_int(fg_shm_client_submit(c, &req), FG_SHM_OK, "and submits");

    finished = 0;
    k = 0;

    for (i = 0; i < 500 && !finished; i++) {
        n = fg_shm_client_poll(c, ev, 64);

        for (j = 0; j < n; j++) {
            k += ev[j].token >= 0;
            finished |= ev[j].finish == FG_SHM_FINISH_LENGTH;
        }

        if (n == 0) {
            pfd.fd = fg_shm_client_fd(c);
            pfd.events = POLLIN;
            poll(&pfd, 1, 100);
        }
    }

    ok(finished && k == 10, "and gets its 10 tokens (%zu)", k);

    /* a second engine on the same segment */
    out_buf[0] = err_buf[0] = '\0';
    fg_test_spawn(&q, (char *[]) { ENGINE, "--backend", "sim", "--shm", name,
                                   NULL });
    fg_test_collect(&q, 5000, NULL);
    close(q.out);
    close(q.err);
    ok(waitpid(q.pid, &status, 0) == q.pid && WIFEXITED(status)
       && WEXITSTATUS(status) == 1
       && strstr(err_buf, "served by a running engine"),
       "a second engine on its segment refuses: %.*s",
       (int) strcspn(err_buf, "\n"), err_buf);

    kill(p.pid, SIGTERM);
    err_buf[0] = '\0';
    fg_test_collect(&p, 5000, NULL);
    close(p.out);
    close(p.err);

    ok(waitpid(p.pid, &status, 0) == p.pid && WIFEXITED(status)
       && WEXITSTATUS(status) == 0, "SIGTERM: exit 0");
    ok(strstr(err_buf, "removed") != NULL, "  saying %.*s",
       (int) strcspn(err_buf, "\n"), err_buf);
    ok(shm_open(name, O_RDONLY, 0) == -1 && errno == ENOENT,
       "  and the segment is gone");
    is_int(fg_shm_client_tick(c, NULL, 0), FG_SHM_EV_LOST,
           "the client sees the engine stopped");

    /* SIGINT, as Ctrl-C in make run */
    out_buf[0] = err_buf[0] = '\0';
    fg_test_spawn(&p, (char *[]) { ENGINE, "--backend", "sim", "--shm", name,
                                   NULL });
    fg_test_collect(&p, 5000, "serving");
    kill(p.pid, SIGINT);
    fg_test_collect(&p, 5000, NULL);
    close(p.out);
    close(p.err);
    ok(waitpid(p.pid, &status, 0) == p.pid && WIFEXITED(status)
       && WEXITSTATUS(status) == 0
       && shm_open(name, O_RDONLY, 0) == -1,
       "SIGINT: exit 0, the segment gone");

    fg_shm_client_destroy(c);
}


/* runs n requests through a client; tokens[i] gets request i's stream */
static int
stream_all(fg_shm_client_t *c, const int32_t (*prompts)[8], uint32_t n,
    uint32_t max_tokens, int32_t (*tokens)[128], uint32_t *finish)
{
    int              i;
    size_t           m, j;
    uint32_t         k, done, len[8];
    fg_shm_comp_t    ev[64];
    struct pollfd    pfd;
    fg_shm_submit_t  req;

    memset(len, 0, sizeof(len));

    for (k = 0; k < n; k++) {
        memset(&req, 0, sizeof(req));
        req.req_id = k;
        req.prompt = prompts[k];
        req.n_prompt = 8;
        req.max_tokens = max_tokens;
        req.ignore_eos = 1;

        if (fg_shm_client_submit(c, &req) != FG_SHM_OK) {
            return -1;
        }

        finish[k] = 0;
    }

    done = 0;

    for (i = 0; i < 2000 && done < n; i++) {
        m = fg_shm_client_poll(c, ev, 64);

        for (j = 0; j < m; j++) {
            k = (uint32_t) ev[j].req_id;

            if (k >= n) {
                continue;
            }

            if (ev[j].token >= 0 && len[k] < 128) {
                tokens[k][len[k]++] = ev[j].token;
            }

            if (ev[j].finish) {
                finish[k] = ev[j].finish;
                done++;
            }
        }

        if (m == 0) {
            pfd.fd = fg_shm_client_fd(c);
            pfd.events = POLLIN;
            poll(&pfd, 1, 100);
        }
    }

    return done == n ? 0 : -1;
}


/* sched: fcfs, or andes, whose preemptions depend on the real clock: its
 * output must be the same all the same; preempt: recompute or swap */
static void
test_cpu_serve(char *sched, char *preempt)
{
    char              line[64];
    int               status, i, same;
    char              name[64], err[256];
    int32_t           alone[6][128], batch[6][128];
    uint32_t          j, k, finish[6];
    fg_test_proc_t    p;
    fg_shm_load_t     load;
    fg_shm_client_t  *c;

    static const int32_t  prompts[6][8] = {
        { 1, 403, 407, 261, 378, 300, 270, 291 },
        { 1, 10, 20, 30, 40, 50, 60, 70 },
        { 1, 300, 301, 302, 303, 304, 305, 306 },
        { 1, 77, 88, 99, 111, 122, 133, 144 },
        { 1, 500, 400, 300, 200, 100, 50, 25 },
        { 1, 260, 270, 280, 290, 300, 310, 320 },
    };

    if (access(MODEL, R_OK) != 0) {
        ok(1, "# skip the cpu backend behind shm: no %s", MODEL);
        return;
    }

    /* 24 blocks of 16: each request needs 7 (8 + 100 positions), so the
     * pool holds 3 of the 6 at a time and decodes preempt */
    snprintf(name, sizeof(name), "/fg-test-cpu-%d", (int) getpid());
    out_buf[0] = err_buf[0] = '\0';
    fg_test_spawn(&p, (char *[]) { ENGINE, "--model", MODEL, "--shm", name,
                                   "--kv-blocks", "24", "--max-batch", "4",
                                   "--threads", "1", "--sched", sched,
                                   "--preempt", preempt, NULL });

    snprintf(line, sizeof(line), "scheduler %s, preemption %s", sched,
             preempt);
    i = fg_test_collect(&p, 10000, "serving");
    ok(i && strstr(err_buf, line) != NULL, "--sched %s --preempt %s: the "
       "cpu backend serves stories260K: %.*s", sched, preempt,
       (int) strcspn(err_buf, "\n"), err_buf);

    c = fg_shm_client_create(name, 5000, err, sizeof(err));
    ok(c && fg_shm_client_tick(c, err, sizeof(err)) == FG_SHM_EV_BACK,
       "a client attaches");

    for (k = 0, same = 1; k < 6; k++) {
        same &= stream_all(c, prompts + k, 1, 100, alone + k, finish) == 0
                && finish[0] == FG_SHM_FINISH_LENGTH;
    }

    ok(same, "six requests one at a time: 100 tokens each");

    ok(stream_all(c, prompts, 6, 100, batch, finish) == 0,
       "six at once in a pool for three all complete");

    for (k = 0, same = 1; k < 6; k++) {
        same &= finish[k] == FG_SHM_FINISH_LENGTH;
    }

    ok(same, "each with finish length");
    for (k = 0, same = 1; k < 6; k++) {
        for (j = 0; j < 100 && alone[k][j] == batch[k][j]; j++) {
            /* void */
        }

        if (j < 100) {
            diag("request %u differs from token %u on", k, j);
            same = 0;
        }
    }

    ok(same, "each gives in the batch, preempted or not, the greedy tokens "
       "it gives alone");

    /* the engine publishes its status after the step that sent the last
     * tokens: the blocks come back within a few steps, not at once */
    for (j = 0; j < 2000; j++) {
        memset(&load, 0, sizeof(load));
        i = fg_shm_client_status(c, &load);

        if (i != FG_SHM_OK || load.kv_free == 24) {
            break;
        }

        (void) poll(NULL, 0, 1);
    }

    ok(i == FG_SHM_OK && load.kv_free == 24
       && (load.preemptions > 0 || strcmp(sched, "andes") == 0),
       "preemptions (%llu), the pool whole again (%u of 24 free)",
       (unsigned long long) load.preemptions, (unsigned) load.kv_free);

    fg_shm_client_destroy(c);

    kill(p.pid, SIGTERM);
    fg_test_collect(&p, 5000, NULL);
    close(p.out);
    close(p.err);
    ok(waitpid(p.pid, &status, 0) == p.pid && WIFEXITED(status)
       && WEXITSTATUS(status) == 0, "and it stops cleanly");
}


int
main(void)
{
    if (access(ENGINE, X_OK) != 0) {
        ok(0, "%s is built (run from the top of the tree)", ENGINE);
        return done_testing();
    }

    signal(SIGPIPE, SIG_IGN);

    test_bad_arguments();
    test_oneshot();
    test_serve();
    test_cpu_serve("fcfs", "recompute");
    test_cpu_serve("andes", "recompute");
    test_cpu_serve("fcfs", "swap");

    return done_testing();
}
