
/*
 * fairgate: the engine protocol's own cost, as a client talking to the
 * engine segment directly sees it (the baseline for the gateway's added
 * latency).  Starts build/fairgate-engine on the sim backend, attaches as
 * one worker, and measures:
 *
 *   ttft      time to first token of one request at a time: submit, the
 *             engine's wake-up, a step, the completion and the worker's
 *             wake-up (p50, p99), with the sim's compute made negligible
 *             (--speedup 1e6) so that what remains is the protocol and
 *             the loop;
 *   streams   N concurrent streams of M tokens each: tokens per second
 *             through the rings, and time to first token under that load.
 *
 *   bench_shm [-n STREAMS] [-m TOKENS] [-b MAX_BATCH] [-x SPEEDUP]
 *             [-v VOCAB]
 *
 * Run from the top of the tree (make bench does).
 */


#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fg_shm_client.h"


#define ENGINE  "build/fairgate-engine"


typedef struct {
    uint64_t    submitted;
    uint64_t    first;
    uint32_t    tokens;
    uint32_t    done;
} stream_t;


static pid_t  engine_pid;


static void
stop_engine(void)
{
    int  status;

    if (engine_pid > 0) {
        kill(engine_pid, SIGTERM);
        waitpid(engine_pid, &status, 0);
        engine_pid = 0;
    }
}


static int
start_engine(const char *shm, const char *batch, const char *speedup,
    const char *vocab)
{
    int            p[2];
    char           buf[4096];
    size_t         len;
    ssize_t        r;
    struct pollfd  pfd;

    if (pipe(p) != 0) {
        return -1;
    }

    engine_pid = fork();

    if (engine_pid == 0) {
        dup2(p[1], 2);
        close(p[0]);
        close(p[1]);
        execl(ENGINE, ENGINE, "--backend", "sim", "--shm", shm,
              "--max-batch", batch, "--step-tokens", "2048", "--max-seqs",
              "4096", "--kv-blocks", "16384", "--speedup", speedup,
              "--vocab", vocab, (char *) NULL);
        _exit(127);
    }

    close(p[1]);
    len = 0;
    pfd.fd = p[0];
    pfd.events = POLLIN;

    /* its "serving" line says the segment is ready */
    while (len < sizeof(buf) - 1 && poll(&pfd, 1, 10000) == 1) {
        r = read(p[0], buf + len, sizeof(buf) - 1 - len);

        if (r <= 0) {
            break;
        }

        len += (size_t) r;
        buf[len] = '\0';

        if (strstr(buf, "serving")) {
            close(p[0]);
            return 0;
        }
    }

    close(p[0]);
    fprintf(stderr, "bench_shm: the engine did not start: %s\n",
            len ? buf : "(nothing)");
    stop_engine();

    return -1;
}


static int
cmp_u64(const void *a, const void *b)
{
    uint64_t  x, y;

    x = *(const uint64_t *) a;
    y = *(const uint64_t *) b;

    return x < y ? -1 : x > y;
}


static double
pct(uint64_t *v, size_t n, double p)
{
    qsort(v, n, sizeof(uint64_t), cmp_u64);

    return (double) v[(size_t) (p * (double) (n - 1))] / 1000.0;
}


/* waits for the client's socket up to ms and reads what came */
static size_t
wait_events(fg_shm_client_t *c, fg_shm_comp_t *ev, size_t max, int ms)
{
    size_t         n;
    struct pollfd  pfd;

    n = fg_shm_client_poll(c, ev, max);

    if (n) {
        return n;
    }

    pfd.fd = fg_shm_client_fd(c);
    pfd.events = POLLIN;
    poll(&pfd, 1, ms);

    return fg_shm_client_poll(c, ev, max);
}


static int
run_ttft(fg_shm_client_t *c, uint32_t n_req)
{
    size_t           i, n;
    int32_t          prompt[32];
    uint32_t         k, got;
    uint64_t        *lat, t0, deadline;
    fg_shm_comp_t    ev[64];
    fg_shm_submit_t  req;

    lat = calloc(n_req, sizeof(uint64_t));

    for (i = 0; i < 32; i++) {
        prompt[i] = (int32_t) (100 + i);
    }

    memset(&req, 0, sizeof(req));
    req.prompt = prompt;
    req.n_prompt = 32;
    req.max_tokens = 1;

    for (k = 0; k < n_req; k++) {
        req.req_id = k;
        t0 = fg_shm_now();

        if (fg_shm_client_submit(c, &req) != FG_SHM_OK) {
            fprintf(stderr, "bench_shm: submit failed\n");
            free(lat);
            return -1;
        }

        got = 0;
        deadline = t0 + 5000000000ULL;

        while (!got && fg_shm_now() < deadline) {
            n = wait_events(c, ev, 64, 100);

            for (i = 0; i < n; i++) {
                if (ev[i].req_id == k && ev[i].finish) {
                    lat[k] = fg_shm_now() - t0;
                    got = 1;
                }
            }
        }

        if (!got) {
            fprintf(stderr, "bench_shm: request %u got no answer\n", k);
            free(lat);
            return -1;
        }
    }

    printf("ttft, one request at a time (%u requests, 32-token prompt): "
           "p50 %.1f us, p99 %.1f us\n", n_req, pct(lat, n_req, 0.5),
           pct(lat, n_req, 0.99));

    free(lat);

    return 0;
}


static int
run_streams(fg_shm_client_t *c, uint32_t n_streams, uint32_t n_tokens)
{
    int              rc;
    size_t           i, n;
    int32_t          prompt[32];
    uint32_t         k, done, next, vocab;
    uint64_t         t0, t1, deadline, total, *ttft;
    stream_t        *s;
    fg_shm_comp_t    ev[256];
    fg_shm_submit_t  req;

    s = calloc(n_streams, sizeof(stream_t));
    ttft = calloc(n_streams, sizeof(uint64_t));
    vocab = fg_shm_client_info(c)->shape.vocab;

    memset(&req, 0, sizeof(req));
    req.prompt = prompt;
    req.n_prompt = 32;
    req.max_tokens = n_tokens;

    done = 0;
    next = 0;
    total = 0;
    t0 = fg_shm_now();
    deadline = t0 + 120000000000ULL;

    while (done < n_streams && fg_shm_now() < deadline) {

        /* submit what the ring takes; the rest on the next turn */
        while (next < n_streams) {
            for (i = 0; i < 32; i++) {
                prompt[i] = (int32_t) ((next * 7 + i * 13) % (vocab - 3) + 3);
            }

            req.req_id = 1000000 + next;
            s[next].submitted = fg_shm_now();
            rc = fg_shm_client_submit(c, &req);

            if (rc == FG_SHM_EFULL || rc == FG_SHM_EAGAIN) {
                break;
            }

            if (rc != FG_SHM_OK) {
                fprintf(stderr, "bench_shm: submit: %d\n", rc);
                return -1;
            }

            next++;
        }

        n = wait_events(c, ev, 256, 100);

        for (i = 0; i < n; i++) {
            k = (uint32_t) (ev[i].req_id - 1000000);

            if (k >= n_streams) {
                continue;
            }

            if (ev[i].token >= 0) {
                if (s[k].tokens++ == 0) {
                    s[k].first = fg_shm_now();
                }

                total++;
            }

            if (ev[i].finish == FG_SHM_FINISH_REFUSED) {
                fprintf(stderr, "bench_shm: refused: %s\n",
                        fg_shm_error_name(ev[i].error));
                return -1;
            }

            if (ev[i].finish) {
                s[k].done = 1;
                done++;
            }
        }

        fg_shm_client_tick(c, NULL, 0);
    }

    t1 = fg_shm_now();

    for (k = 0; k < n_streams; k++) {
        ttft[k] = s[k].first ? s[k].first - s[k].submitted : t1 - t0;
    }

    printf("%u concurrent streams of %u tokens: %llu tokens in %.3f s, "
           "%.0f tokens/s; ttft p50 %.1f ms, p99 %.1f ms%s\n", n_streams,
           n_tokens, (unsigned long long) total, (double) (t1 - t0) / 1e9,
           (double) total / ((double) (t1 - t0) / 1e9),
           pct(ttft, n_streams, 0.5) / 1000.0,
           pct(ttft, n_streams, 0.99) / 1000.0,
           done < n_streams ? " (NOT ALL DONE)" : "");

    free(s);
    free(ttft);

    return done == n_streams ? 0 : -1;
}


int
main(int argc, char **argv)
{
    int               c, rc;
    char              name[64], err[256];
    const char       *batch, *speedup, *vocab;
    uint32_t          streams, tokens;
    fg_shm_client_t  *cl;

    streams = 1000;
    tokens = 64;
    batch = "256";
    speedup = "1e6";
    vocab = "512";

    while ((c = getopt(argc, argv, "n:m:b:x:v:")) != -1) {
        switch (c) {
        case 'n':
            streams = (uint32_t) strtoul(optarg, NULL, 10);
            break;
        case 'm':
            tokens = (uint32_t) strtoul(optarg, NULL, 10);
            break;
        case 'b':
            batch = optarg;
            break;
        case 'x':
            speedup = optarg;
            break;
        case 'v':
            vocab = optarg;
            break;
        default:
            fprintf(stderr, "usage: bench_shm [-n STREAMS] [-m TOKENS] "
                    "[-b MAX_BATCH] [-x SPEEDUP] [-v VOCAB]\n");
            return 2;
        }
    }

    if (streams == 0 || tokens == 0) {
        fprintf(stderr, "bench_shm: -n and -m must be at least 1\n");
        return 2;
    }

    signal(SIGPIPE, SIG_IGN);
    snprintf(name, sizeof(name), "/fg-bench-shm-%d", (int) getpid());

    if (start_engine(name, batch, speedup, vocab) != 0) {
        return 1;
    }

    cl = fg_shm_client_create(name, 5000, err, sizeof(err));

    if (cl == NULL || fg_shm_client_attach(cl, err, sizeof(err)) != FG_SHM_OK)
    {
        fprintf(stderr, "bench_shm: %s\n", err);
        stop_engine();
        return 1;
    }

    printf("engine: sim, vocabulary %s, --max-batch %s, --speedup %s; one "
           "client\n", vocab, batch, speedup);

    rc = run_ttft(cl, 500);

    if (rc == 0) {
        rc = run_streams(cl, streams, tokens);
    }

    fg_shm_client_destroy(cl);
    stop_engine();

    return rc == 0 ? 0 : 1;
}
