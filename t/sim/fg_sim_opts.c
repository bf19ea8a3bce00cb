
/*
 * fairgate: the command-line options of the project's tools.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_sim_opts.h"


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


int
fg_sim_opts_parse(const char *prog, int argc, char **argv,
    fg_sim_opt_t *opts, fg_sim_opt_list_t *list)
{
    int            i;
    char          *arg, *eq;
    size_t         len;
    const char    *value;
    fg_sim_opt_t  *o;

    for (i = 0; i < argc; i++) {
        arg = argv[i];

        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            return 1;
        }

        if (strncmp(arg, "--", 2) != 0) {
            fg_sim_opts_die(prog, 2, "unexpected argument \"%s\"", arg);
        }

        eq = strchr(arg, '=');
        len = eq ? (size_t) (eq - arg) : strlen(arg);

        for (o = opts; o->name != NULL; o++) {
            if (strlen(o->name) == len - 2
                && strncmp(o->name, arg + 2, len - 2) == 0)
            {
                break;
            }
        }

        if (o->name == NULL) {
            fg_sim_opts_die(prog, 2, "unknown option \"%.*s\"", (int) len,
                            arg);
        }

        if (o->value != NULL && *o->value != NULL) {
            fg_sim_opts_die(prog, 2, "option --%s given twice", o->name);
        }

        if (o->flag) {
            if (eq != NULL) {
                fg_sim_opts_die(prog, 2, "option --%s takes no value",
                                o->name);
            }

            value = "";

        } else if (eq != NULL) {
            value = eq + 1;

        } else if (i + 1 < argc) {
            value = argv[++i];

        } else {
            fg_sim_opts_die(prog, 2, "option --%s needs a value", o->name);
        }

        if (o->value != NULL) {
            *o->value = value;
            continue;
        }

        if (list == NULL || list->n == list->max) {
            fg_sim_opts_die(prog, 2, "more than %zu --%s",
                            list ? list->max : 0, o->name);
        }

        list->values[list->n++] = value;
    }

    return 0;
}
