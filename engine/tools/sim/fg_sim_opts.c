
/*
 * fairgate: the command lines of the project's tools, on getopt_long.
 */


#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_sim_opts.h"


/*
 * "+": options end at the first argument that is not one (the tools take
 * none); ":": getopt_long's messages left to us, and ':' returned for an
 * option without its value.
 */
#define FG_SIM_OPTSTRING  "+:h"


static void fg_sim_opts_die(const char *prog, int status, const char *fmt,
    ...) __attribute__((noreturn, format(printf, 3, 4)));


void
fg_sim_opts_vdie(const char *prog, int status, const char *fmt,
    va_list args)
{
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, args);
    fputc('\n', stderr);

    if (status == 2) {
        fprintf(stderr, "%s: see %s --help\n", prog, prog);
    }

    exit(status);
}


static void
fg_sim_opts_die(const char *prog, int status, const char *fmt, ...)
{
    va_list  args;

    va_start(args, fmt);
    fg_sim_opts_vdie(prog, status, fmt, args);
}


/* the option that arg ("--name" or "--name=value") names in full, or NULL */
static const struct option *
fg_sim_opts_find(const struct option *opts, const char *arg)
{
    size_t  len;

    if (strncmp(arg, "--", 2) != 0) {
        return NULL;
    }

    len = strcspn(arg + 2, "=");

    for ( /* void */ ; opts->name != NULL; opts++) {
        if (strlen(opts->name) == len
            && strncmp(opts->name, arg + 2, len) == 0)
        {
            return opts;
        }
    }

    return NULL;
}


/* getopt_long's next option; *at: the argument it starts at */
static int
fg_sim_opts_next(const char *prog, int argc, char **argv,
    const struct option *opts, int *at)
{
    int  c;

    *at = optind > 0 ? optind : 1;

    c = getopt_long(argc, argv, FG_SIM_OPTSTRING, opts, NULL);

    /* getopt_long ends the options at "--": the tools know no such thing */
    if (c == -1 && optind > *at) {
        fg_sim_opts_die(prog, 2, "unknown option \"--\"");
    }

    return c;
}


int
fg_sim_opts_parse(const char *prog, int argc, char **argv,
    const struct option *opts, const char **values, fg_sim_opt_list_t *list)
{
    int                   c, at;
    const char           *arg, **value;
    const struct option  *o;

    /* from the start, as if no command had parsed before */
    optind = 0;

    while ((c = fg_sim_opts_next(prog, argc, argv, opts, &at)) != -1) {
        arg = argv[at];
        o = fg_sim_opts_find(opts, arg);

        if (c == 'h' && (o != NULL || strcmp(arg, "-h") == 0)) {
            return 1;
        }

        if (o == NULL && strncmp(arg, "--", 2) == 0) {
            fg_sim_opts_die(prog, 2, "unknown option \"%.*s\"",
                            (int) strcspn(arg, "="), arg);
        }

        if (o == NULL) {
            fg_sim_opts_die(prog, 2, "unexpected argument \"%s\"", arg);
        }

        if (c == ':') {
            fg_sim_opts_die(prog, 2, "option --%s needs a value", o->name);
        }

        if (c == '?') {
            fg_sim_opts_die(prog, 2, "option --%s takes no value", o->name);
        }

        if (c == FG_SIM_OPT_LIST) {
            if (list == NULL || list->n == list->max) {
                fg_sim_opts_die(prog, 2, "more than %zu --%s",
                                list ? list->max : 0, o->name);
            }

            list->values[list->n++] = optarg;
            continue;
        }

        value = &values[c - FG_SIM_OPT(0)];

        if (*value != NULL) {
            fg_sim_opts_die(prog, 2, "option --%s given twice", o->name);
        }

        *value = optarg != NULL ? optarg : "";
    }

    if (optind < argc) {
        fg_sim_opts_die(prog, 2, "unexpected argument \"%s\"", argv[optind]);
    }

    return 0;
}


uint64_t
fg_sim_opts_uint(const char *prog, const char *text, const char *name,
    uint64_t min, uint64_t max)
{
    char                *end;
    unsigned long long   v;

    errno = 0;
    v = strtoull(text, &end, 10);

    if (*text < '0' || *text > '9' || *end != '\0' || errno != 0
        || v < min || v > max)
    {
        fg_sim_opts_die(prog, 2, "--%s: \"%s\" is not an integer in [%"
                        PRIu64 ", %" PRIu64 "]", name, text, min, max);
    }

    return v;
}


double
fg_sim_opts_number(const char *prog, const char *text, const char *name,
    double min, double max)
{
    char    *end;
    double   v;

    v = strtod(text, &end);

    if (end == text || *end != '\0' || !(v >= min && v <= max)) {
        fg_sim_opts_die(prog, 2, "--%s: \"%s\" is not a number in [%g, %g]",
                        name, text, min, max);
    }

    return v;
}


fg_cost_t
fg_sim_opts_cost(const char *prog, const char *text)
{
    fg_cost_t  cost;

    if (text == NULL) {
        text = "linear";
    }

    if (fg_cost_parse(&cost, text) != 0) {
        fg_sim_opts_die(prog, 2, "--cost: \"%s\" is not linear, linear:WP,WQ "
                        "(both > 0) or profiled", text);
    }

    return cost;
}
