
/*
 * fairgate: tests of fairgate-load's run against a small HTTP server in a
 * thread (127.0.0.1 only): dependent stages (a stage goes out when the one
 * before it ended, not before; after a failed stage the rest are skipped,
 * never sent; requests at one stage do not wait for each other) and
 * --open-loop-stages; a prefix cache's figures read (usage's cached
 * tokens, the x-fairgate-engine header); QoE measured at the client from
 * a stream's chunks.  The server answers by the request's X-App: "slow"
 * after 0.3 s (its service time), "bad" with 429, "cached" with cached
 * tokens and an engine's name, "stream" with three chunks of content
 * after 0.3 s, any other at once.
 */


#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "fg_tap.h"
#include "fg_load_run.h"


/* the slow app's service time, seconds */
#define SLOW  0.3

/* requests of a test trace, at most */
#define NRES  4

/* how far a request may go out after it was due, on a loaded machine */
#define SLACK  0.1


typedef struct {
    int               fd;
    unsigned short    port;
    pthread_mutex_t   lock;
    size_t            received;        /* requests read, all connections */
    char              seen[64][32];    /* their X-Fairgate-Interaction:
                                          X-Fairgate-Stage */
} server_t;


typedef struct {
    server_t  *server;
    int        fd;
} conn_t;


static const char  answer[] =
    "{\"choices\": [{\"message\": {\"content\": \"a b\"}}], "
    "\"usage\": {\"prompt_tokens\": 2, \"completion_tokens\": 2}}";

static const char  answer_cached[] =
    "{\"choices\": [{\"message\": {\"content\": \"a b\"}}], "
    "\"usage\": {\"prompt_tokens\": 40, \"completion_tokens\": 2, "
    "\"prompt_tokens_details\": {\"cached_tokens\": 32}}}";


static const char  answer_stream[] =
    "data: {\"choices\": [{\"delta\": {\"content\": \"a\"}}]}\n\n"
    "data: {\"choices\": [{\"delta\": {\"content\": \" b\"}}]}\n\n"
    "data: {\"choices\": [{\"delta\": {\"content\": \" c\"}}]}\n\n"
    "data: [DONE]\n\n";


static const char  refusal[] =
    "{\"error\": {\"message\": \"slow down\", \"code\": \"rate_limited\"}}";


/* header name's value in head (NUL-terminated), copied to out */
static void
header(const char *head, const char *name, char *out, size_t size)
{
    size_t       n;
    const char  *p, *e;

    out[0] = '\0';
    n = strlen(name);

    for (p = head; (p = strstr(p, "\r\n")) != NULL; p += 2) {
        if (strncasecmp(p + 2, name, n) == 0 && p[2 + n] == ':') {
            p += 2 + n + 1;
            p += strspn(p, " ");
            e = strstr(p, "\r\n");
            n = e ? (size_t) (e - p) : strlen(p);
            n = n < size - 1 ? n : size - 1;
            memcpy(out, p, n);
            out[n] = '\0';
            return;
        }
    }
}


static void *
serve(void *data)
{
    char             buf[65536], app[32], inter[16], stage[8], reply[512];
    size_t           len, need;
    ssize_t          n;
    conn_t          *c = data;
    server_t        *s = c->server;
    const char      *end, *body;
    struct timespec  ts;

    len = 0;

    for ( ;; ) {
        buf[len] = '\0';
        end = strstr(buf, "\r\n\r\n");

        if (end != NULL) {
            header(buf, "Content-Length", reply, sizeof(reply));
            need = (size_t) (end + 4 - buf) + strtoul(reply, NULL, 10);

            if (len >= need) {
                header(buf, "X-App", app, sizeof(app));
                header(buf, "X-Fairgate-Interaction", inter, sizeof(inter));
                header(buf, "X-Fairgate-Stage", stage, sizeof(stage));

                pthread_mutex_lock(&s->lock);
                if (s->received < 64) {
                    snprintf(s->seen[s->received], sizeof(s->seen[0]),
                             "%s:%s", inter, stage);
                }
                s->received++;
                pthread_mutex_unlock(&s->lock);

                if (strcmp(app, "slow") == 0 || strcmp(app, "stream") == 0) {
                    ts.tv_sec = 0;
                    ts.tv_nsec = (long) (SLOW * 1e9);
                    nanosleep(&ts, NULL);
                }

                body = strcmp(app, "bad") == 0 ? refusal
                       : strcmp(app, "cached") == 0 ? answer_cached
                       : strcmp(app, "stream") == 0 ? answer_stream : answer;
                snprintf(reply, sizeof(reply), "HTTP/1.1 %s\r\n"
                         "Content-Type: %s\r\n%s"
                         "Content-Length: %zu\r\n\r\n%s",
                         strcmp(app, "bad") == 0 ? "429 Too Many Requests"
                                                 : "200 OK",
                         strcmp(app, "stream") == 0 ? "text/event-stream"
                                                    : "application/json",
                         strcmp(app, "cached") == 0
                         ? "X-Fairgate-Engine:  gpu-1 \r\n" : "",
                         strlen(body), body);

                if (write(c->fd, reply, strlen(reply)) < 0) {
                    break;
                }

                memmove(buf, buf + need, len - need);
                len -= need;
                continue;
            }
        }

        if (len == sizeof(buf) - 1) {
            break;
        }

        n = read(c->fd, buf + len, sizeof(buf) - 1 - len);
        if (n <= 0) {
            break;
        }

        len += (size_t) n;
    }

    close(c->fd);
    free(c);

    return NULL;
}


static void *
accept_loop(void *data)
{
    int         fd;
    conn_t     *c;
    server_t   *s = data;
    pthread_t   t;

    while ((fd = accept(s->fd, NULL, NULL)) >= 0) {
        c = malloc(sizeof(conn_t));
        if (c == NULL) {
            close(fd);
            continue;
        }

        c->server = s;
        c->fd = fd;

        if (pthread_create(&t, NULL, serve, c) != 0) {
            close(fd);
            free(c);
            continue;
        }

        pthread_detach(t);
    }

    return NULL;
}


static int
server_start(server_t *s, pthread_t *t)
{
    socklen_t           len;
    struct sockaddr_in  sin;

    memset(s, 0, sizeof(server_t));
    pthread_mutex_init(&s->lock, NULL);

    s->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (s->fd < 0) {
        return -1;
    }

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof(sin);

    if (bind(s->fd, (struct sockaddr *) &sin, sizeof(sin)) != 0
        || listen(s->fd, 64) != 0
        || getsockname(s->fd, (struct sockaddr *) &sin, &len) != 0)
    {
        close(s->fd);
        return -1;
    }

    s->port = ntohs(sin.sin_port);

    return pthread_create(t, NULL, accept_loop, s) == 0 ? 0 : -1;
}


/* appends a request of app and interaction at stage, due at t */
static void
add(fg_sim_trace_t *tr, double t, const char *app, const char *interaction,
    int32_t stage)
{
    fg_sim_req_t  *r;

    (void) fg_sim_trace_add(tr, t, (uint32_t) fg_sim_trace_client(tr, "u"),
                            2, 2, 2);

    r = &tr->reqs[tr->n - 1];
    r->user = (uint32_t) fg_sim_trace_str(tr, "u");
    r->app = (uint32_t) fg_sim_trace_str(tr, app);
    r->interaction = (uint32_t) fg_sim_trace_str(tr, interaction);
    r->stage = stage;
}


/* frees what an earlier run left in res, and clears it */
static void
clear(fg_load_result_t *res)
{
    size_t  i;

    for (i = 0; i < NRES; i++) {
        free(res[i].error);
        free(res[i].engine);
        free(res[i].token_times);
    }

    memset(res, 0, NRES * sizeof(fg_load_result_t));
}


static int
run(server_t *s, const fg_sim_trace_t *tr, int open_loop,
    fg_load_result_t *res, fg_load_summary_t *sum)
{
    int             rc;
    char            err[256], url[64];
    fg_load_conf_t  conf;

    snprintf(url, sizeof(url), "http://127.0.0.1:%u/v1/chat/completions",
             s->port);

    fg_load_conf_init(&conf);
    conf.url = url;
    conf.req.stream = 0;
    conf.request_timeout = 10.0;
    conf.max_seconds = 20.0;
    conf.open_loop_stages = open_loop;

    pthread_mutex_lock(&s->lock);
    s->received = 0;
    pthread_mutex_unlock(&s->lock);

    clear(res);

    rc = fg_load_run(&conf, tr, res, sum, err, sizeof(err));
    if (rc != 0) {
        diag("run: %s", err);
    }

    return rc;
}


/* the gateway's engine and the usage's cached tokens */
static void
test_cached(server_t *s, fg_load_result_t *res)
{
    fg_sim_trace_t     tr;
    fg_load_summary_t  sum;

    fg_sim_trace_init(&tr);
    add(&tr, 0.0, "cached", "n", 0);
    add(&tr, 0.0, "fast", "o", 0);

    if (run(s, &tr, 0, res, &sum) == 0) {
        ok(res[0].status == FG_SIM_OK && res[0].cached_tokens == 32
           && res[0].engine != NULL && strcmp(res[0].engine, "gpu-1") == 0,
           "usage's cached tokens and the x-fairgate-engine header read "
           "(%lld, %s)", (long long) res[0].cached_tokens,
           res[0].engine ? res[0].engine : "none");
        ok(res[1].status == FG_SIM_OK && res[1].cached_tokens == -1
           && res[1].engine == NULL, "neither when the answer has none");
    }

    fg_sim_trace_free(&tr);
}


/*
 * The stream's three chunks come 0.3 s after it was sent: before a 5 s
 * target, QoE 1; against a 0.01 s target at 1000 tokens/s all is late
 * (about 1 - 0.87 / 0.873).  Not streamed, or without expectations: none;
 * refused: 0.
 */
static void
test_qoe(server_t *s, fg_load_result_t *res)
{
    size_t             i;
    fg_sim_trace_t     tr;
    fg_load_summary_t  sum;

    fg_sim_trace_init(&tr);
    add(&tr, 0.0, "stream", "q", 0);
    add(&tr, 0.0, "stream", "r", 0);
    add(&tr, 0.0, "fast", "t", 0);
    add(&tr, 0.0, "bad", "u", 0);

    tr.reqs[0].ttft_target = 5.0;
    tr.reqs[1].ttft_target = 0.01;

    for (i = 0; i < 4; i++) {
        tr.reqs[i].stream = i != 2;
        tr.reqs[i].tokens_per_s = 1000;
    }

    if (run(s, &tr, 0, res, &sum) == 0) {
        ok(res[0].status == FG_SIM_OK && res[0].has_qoe
           && res[0].qoe.n == 3 && fg_qoe_value(&res[0].qoe) == 1.0,
           "three chunks before the reader's target: QoE 1");
        ok(res[1].status == FG_SIM_OK && res[1].has_qoe
           && fg_qoe_value(&res[1].qoe) < 0.1,
           "0.3 s against a 0.01 s target: QoE %.4f",
           fg_qoe_value(&res[1].qoe));
        ok(!res[2].has_qoe, "not streamed: no QoE");
        ok(res[3].status == FG_SIM_REJECTED && res[3].has_qoe,
           "refused: a QoE, written as 0");
    }

    fg_sim_trace_free(&tr);
}


int
main(void)
{
    size_t              i;
    server_t            s;
    pthread_t           t;
    fg_sim_trace_t      tr;
    fg_load_result_t    res[NRES];
    fg_load_summary_t   sum;

    memset(res, 0, sizeof(res));
    curl_global_init(CURL_GLOBAL_DEFAULT);

    if (server_start(&s, &t) != 0) {
        ok(0, "a server on 127.0.0.1: %s", strerror(errno));
        return done_testing();
    }

    /* stage 0 takes 0.3 s; stage 1 is due at 0.05, stage 2 at 0.1 */
    fg_sim_trace_init(&tr);
    add(&tr, 0.0, "slow", "i", 0);
    add(&tr, 0.05, "fast", "i", 1);
    add(&tr, 0.1, "fast", "i", 2);

    if (run(&s, &tr, 0, res, &sum) == 0) {
        ok(res[0].status == FG_SIM_OK && res[1].status == FG_SIM_OK
           && res[2].status == FG_SIM_OK, "all three served");
        ok(res[1].sent >= res[0].finish - 1e-3
           && res[1].sent < res[0].finish + SLACK,
           "stage 1 goes out when stage 0 ended (%.3f, ended %.3f)",
           res[1].sent, res[0].finish);
        ok(res[2].sent >= res[1].finish - 1e-3,
           "stage 2 after stage 1 (%.3f, ended %.3f)", res[2].sent,
           res[1].finish);
    }

    /* open loop: stage 1 at its trace time, while stage 0 runs */
    if (run(&s, &tr, 1, res, &sum) == 0) {
        ok(res[1].sent < 0.05 + SLACK && res[1].sent < res[0].finish,
           "--open-loop-stages: stage 1 at its time (%.3f), before stage "
           "0 ended (%.3f)", res[1].sent, res[0].finish);
    }

    fg_sim_trace_free(&tr);

    /* stage 0 refused (429): stages 1 and 2 are skipped, never sent */
    fg_sim_trace_init(&tr);
    add(&tr, 0.0, "bad", "j", 0);
    add(&tr, 0.05, "fast", "j", 1);
    add(&tr, 0.1, "fast", "j", 2);
    add(&tr, 0.1, "fast", "k", 0);

    if (run(&s, &tr, 0, res, &sum) == 0) {
        ok(res[0].status == FG_SIM_REJECTED
           && res[1].status == FG_SIM_SKIPPED
           && res[2].status == FG_SIM_SKIPPED && res[3].status == FG_SIM_OK,
           "after a rejected stage the rest are skipped, others served");
        ok(sum.count.skipped == 2 && sum.count.rejected == 1 && sum.sent == 2,
           "summary: 2 sent, 1 rejected, 2 skipped");

        pthread_mutex_lock(&s.lock);
        ok(s.received == 2, "the server saw 2 requests");
        for (i = 0; i < s.received && i < 64; i++) {
            ok(strcmp(s.seen[i], "j:0") == 0 || strcmp(s.seen[i], "k:0") == 0,
               "request %zu it saw: %s", i, s.seen[i]);
        }
        pthread_mutex_unlock(&s.lock);

        ok(res[1].sent >= 0.05 - 1e-3 && res[1].error != NULL,
           "a skipped request has a time and a reason");
    }

    fg_sim_trace_free(&tr);

    /*
     * Two requests at stage 1, one slow: both go out together after stage
     * 0, and stage 2 waits for the slow one.
     */
    fg_sim_trace_init(&tr);
    add(&tr, 0.0, "fast", "m", 0);
    add(&tr, 0.05, "slow", "m", 1);
    add(&tr, 0.05, "fast", "m", 1);
    add(&tr, 0.1, "fast", "m", 2);

    if (run(&s, &tr, 0, res, &sum) == 0) {
        ok(res[1].status == FG_SIM_OK && res[2].status == FG_SIM_OK
           && res[3].status == FG_SIM_OK, "all four served");
        ok(res[1].sent < 0.05 + SLACK && res[2].sent < 0.05 + SLACK
           && res[2].finish < res[1].finish,
           "same-stage requests go out together (%.3f, %.3f); the fast one "
           "ends first", res[1].sent, res[2].sent);
        ok(res[3].sent >= res[1].finish - 1e-3
           && res[3].sent < res[1].finish + SLACK,
           "the next stage waits for the slower (%.3f, ended %.3f)",
           res[3].sent, res[1].finish);
    }

    fg_sim_trace_free(&tr);

    test_cached(&s, res);
    test_qoe(&s, res);

    clear(res);

    shutdown(s.fd, SHUT_RDWR);
    close(s.fd);
    pthread_join(t, NULL);

    curl_global_cleanup();

    return done_testing();
}
