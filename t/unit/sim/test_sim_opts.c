
/*
 * fairgate: tests of the tools' command lines (fg_sim_opts.h): values
 * where each command's table says, the repeatable option, and every usage
 * error exiting 2 with its message (in a child, as it exits).
 */


#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fg_tap.h"
#include "fg_sim_opts.h"


#define MAXARGS  80


enum { T_TRACE, T_OUT, T_QUIET, T_N };

static const struct option  options[] = {
    FG_SIM_OPT_VALUE("trace", T_TRACE),
    FG_SIM_OPT_VALUE("out", T_OUT),
    FG_SIM_OPT_FLAG("quiet", T_QUIET),
    FG_SIM_OPT_REPEAT("header"),
    FG_SIM_OPT_HELP,
    FG_SIM_OPT_END
};


static const char  *v[T_N];
static const char  *headers[2];
static size_t       nheaders;


/* argv: "tool", then arg and the rest of args up to NULL; returns argc */
static int
make_argv(char **argv, const char *arg, va_list args)
{
    int  argc;

    argv[0] = "tool";

    for (argc = 1; arg != NULL && argc < MAXARGS - 1;
         arg = va_arg(args, const char *))
    {
        argv[argc++] = (char *) arg;
    }

    argv[argc] = NULL;

    return argc;
}


/* parses "tool ARGS... NULL"; returns what fg_sim_opts_parse() did */
static int
parse(const char *arg, ...)
{
    int                 argc, rc;
    char               *argv[MAXARGS];
    va_list             args;
    fg_sim_opt_list_t   list = { headers, 0, 2 };

    memset(v, 0, sizeof(v));

    va_start(args, arg);
    argc = make_argv(argv, arg, args);
    va_end(args);

    rc = fg_sim_opts_parse("tool", argc, argv, options, v, &list);
    nheaders = list.n;

    return rc;
}


/*
 * Runs parse(ARGS...) in a child: ok when it exits 2 with want in its
 * stderr.
 */
#define dies(want, what, ...)  dies_((want), (what), __VA_ARGS__, NULL)

static void
dies_(const char *want, const char *what, const char *arg, ...)
{
    int       fd[2], status, argc;
    char      err[1024], *argv[MAXARGS];
    pid_t     pid;
    size_t    len;
    ssize_t   n;
    va_list   args;

    va_start(args, arg);
    argc = make_argv(argv, arg, args);
    va_end(args);

    if (pipe(fd) != 0) {
        ok(0, "%s: pipe", what);
        return;
    }

    pid = fork();

    if (pid == 0) {
        fg_sim_opt_list_t  list = { headers, 0, 2 };

        dup2(fd[1], 2);
        close(fd[0]);
        (void) fg_sim_opts_parse("tool", argc, argv, options, v, &list);
        _exit(0);
    }

    close(fd[1]);
    len = 0;

    while (len < sizeof(err) - 1
           && (n = read(fd[0], err + len, sizeof(err) - 1 - len)) > 0)
    {
        len += (size_t) n;
    }

    err[len] = '\0';
    close(fd[0]);
    waitpid(pid, &status, 0);

    ok(WIFEXITED(status) && WEXITSTATUS(status) == 2
       && strstr(err, want) != NULL
       && strstr(err, "tool: see tool --help") != NULL,
       "%s: exit 2, \"%s\"", what, want);
}


static void
test_values(void)
{
    ok(parse("--trace", "a.trace", "--out=b.res", "--quiet", NULL) == 0
       && strcmp(v[T_TRACE], "a.trace") == 0
       && strcmp(v[T_OUT], "b.res") == 0 && strcmp(v[T_QUIET], "") == 0,
       "--name VALUE, --name=VALUE, a flag as \"\"");

    ok(parse("--out", "x", NULL) == 0 && v[T_TRACE] == NULL
       && v[T_QUIET] == NULL, "options not given stay NULL");

    ok(parse("--trace", "--quiet", "--out=", NULL) == 0
       && strcmp(v[T_TRACE], "--quiet") == 0 && v[T_QUIET] == NULL
       && strcmp(v[T_OUT], "") == 0,
       "a value may look like an option, or be empty");

    ok(parse("--header", "X-A: 1", "--trace", "t", "--header=X-B: 2", NULL)
       == 0 && nheaders == 2 && strcmp(headers[0], "X-A: 1") == 0
       && strcmp(headers[1], "X-B: 2") == 0,
       "the repeatable option collects its values in order");

    ok(parse(NULL) == 0 && v[T_TRACE] == NULL && nheaders == 0,
       "no options");

    ok(parse("--trace", "t", "--help", NULL) == 1
       && parse("-h", "--nope", NULL) == 1,
       "--help and -h: 1, from where they stand");
}


static void
test_errors(void)
{
    dies("unknown option \"--nope\"", "an unknown option", "--nope");
    dies("unknown option \"--nope\"", "an unknown option with a value",
         "--nope=1");
    dies("unknown option \"--tra\"", "an abbreviation", "--tra", "x");
    dies("option --trace given twice", "an option twice", "--trace", "a",
         "--trace=b");
    dies("option --quiet given twice", "a flag twice", "--quiet",
         "--quiet");
    dies("option --trace needs a value", "no value", "--out", "o",
         "--trace");
    dies("option --quiet takes no value", "a flag with a value",
         "--quiet=1");
    dies("unexpected argument \"extra\"", "an argument",
         "--trace", "t", "extra");
    dies("unexpected argument \"-x\"", "a short option", "-x");
    dies("unexpected argument \"-hx\"", "short options run together",
         "-hx");
    dies("unknown option \"--\"", "\"--\"", "--", "--trace", "t");
    dies("more than 2 --header", "the repeatable option once too often",
         "--header", "a: 1", "--header", "b: 2", "--header", "c: 3");
}


static void
bad_uint(void)
{
    (void) fg_sim_opts_uint("tool", "-1", "x", 0, 10);
}


static void
bad_number(void)
{
    (void) fg_sim_opts_number("tool", "1e9", "x", 0, 10);
}


static void
bad_cost(void)
{
    (void) fg_sim_opts_cost("tool", "quadratic");
}


/* ok when check(), in a child, exits 2 */
static void
exits_2(void (*check)(void), const char *what)
{
    int    status;
    pid_t  pid;

    pid = fork();

    if (pid == 0) {
        if (freopen("/dev/null", "w", stderr) == NULL) {
            _exit(1);
        }

        check();
        _exit(0);
    }

    waitpid(pid, &status, 0);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 2, "%s: exit 2", what);
}


static void
test_checks(void)
{
    is_num(fg_sim_opts_number("tool", "2.5", "x", 0, 10), 2.5, 0,
           "a number in range");
    ok(fg_sim_opts_uint("tool", "18446744073709551615", "x", 0,
                        UINT64_MAX) == UINT64_MAX, "the largest integer");
    ok(fg_sim_opts_cost("tool", NULL).in == 1
       && fg_sim_opts_cost("tool", NULL).out == 2, "no --cost: linear");

    exits_2(bad_uint, "a negative integer");
    exits_2(bad_number, "a number out of range");
    exits_2(bad_cost, "an unknown cost");
}


int
main(void)
{
    test_values();
    test_errors();
    test_checks();

    return done_testing();
}
