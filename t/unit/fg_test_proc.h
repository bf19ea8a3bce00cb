
/*
 * fairgate: a unit test's child processes: started with their stdout and
 * stderr on pipes, read with poll() and a deadline into out_buf and
 * err_buf (nothing sleeps to synchronise).
 */

#ifndef _FG_TEST_PROC_H_INCLUDED_
#define _FG_TEST_PROC_H_INCLUDED_


#include <poll.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>


#define FG_TEST_OUT_MAX  65536

/* how long fg_test_run() waits on a silent child, ms; a test may set it */
#ifndef FG_TEST_RUN_MS
#define FG_TEST_RUN_MS   10000
#endif


typedef struct {
    pid_t       pid;
    int         out;            /* its stdout */
    int         err;            /* its stderr */
} fg_test_proc_t;


static char  out_buf[FG_TEST_OUT_MAX];
static char  err_buf[FG_TEST_OUT_MAX];


static inline int
fg_test_spawn(fg_test_proc_t *p, char *const argv[])
{
    int  o[2], e[2];

    if (pipe(o) != 0 || pipe(e) != 0) {
        return -1;
    }

    p->pid = fork();

    if (p->pid == 0) {
        dup2(o[1], 1);
        dup2(e[1], 2);
        close(o[0]);
        close(e[0]);
        close(o[1]);
        close(e[1]);
        execv(argv[0], argv);
        _exit(127);
    }

    close(o[1]);
    close(e[1]);
    p->out = o[0];
    p->err = e[0];

    return 0;
}


/* what the pipe has for buf (len so far); 0 once it is closed */
static inline int
fg_test_drain(struct pollfd *pfd, char *buf, size_t *len)
{
    ssize_t  r;

    r = read(pfd->fd, buf + *len, FG_TEST_OUT_MAX - 1 - *len);

    if (r <= 0) {
        pfd->fd = -1;
        return 0;
    }

    *len += (size_t) r;
    buf[*len] = '\0';

    return 1;
}


/*
 * Reads the process's stdout and stderr until both close (or stop_at
 * appears in stderr, when given), for up to ms; returns whether it got
 * there.
 */
static inline int
fg_test_collect(fg_test_proc_t *p, int ms, const char *stop_at)
{
    int            n, open_fds, done;
    size_t         lo, le;
    struct pollfd  pfd[2];

    lo = strlen(out_buf);
    le = strlen(err_buf);
    open_fds = 2;

    pfd[0].fd = p->out;
    pfd[1].fd = p->err;
    pfd[0].events = pfd[1].events = POLLIN;

    while (open_fds) {
        n = poll(pfd, 2, ms);

        if (n <= 0) {
            return 0;
        }

        done = 0;

        if (pfd[0].revents && !fg_test_drain(&pfd[0], out_buf, &lo)) {
            open_fds--;
        }

        if (pfd[1].revents) {
            if (!fg_test_drain(&pfd[1], err_buf, &le)) {
                open_fds--;

            } else {
                done = stop_at && strstr(err_buf, stop_at) != NULL;
            }
        }

        if (done) {
            return 1;
        }
    }

    return stop_at == NULL;
}


/*
 * Runs argv to its end, its output in out_buf and err_buf; the exit
 * status, -1 if it did not exit (silent FG_TEST_RUN_MS at most).
 */
static inline int
fg_test_run(char *const argv[])
{
    int     status;
    fg_test_proc_t  p;

    out_buf[0] = '\0';
    err_buf[0] = '\0';

    if (fg_test_spawn(&p, argv) != 0) {
        return -1;
    }

    fg_test_collect(&p, FG_TEST_RUN_MS, NULL);
    close(p.out);
    close(p.err);

    if (waitpid(p.pid, &status, 0) != p.pid || !WIFEXITED(status)) {
        return -1;
    }

    return WEXITSTATUS(status);
}


#endif /* _FG_TEST_PROC_H_INCLUDED_ */
