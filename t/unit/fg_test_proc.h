
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
    ssize_t        r;
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

        if (pfd[0].revents) {
            r = read(pfd[0].fd, out_buf + lo, FG_TEST_OUT_MAX - 1 - lo);

            if (r <= 0) {
                pfd[0].fd = -1;
                open_fds--;

            } else {
                lo += (size_t) r;
                out_buf[lo] = '\0';
            }
        }

        if (pfd[1].revents) {
            r = read(pfd[1].fd, err_buf + le, FG_TEST_OUT_MAX - 1 - le);

            if (r <= 0) {
                pfd[1].fd = -1;
                open_fds--;

            } else {
                le += (size_t) r;
                err_buf[le] = '\0';
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
