
/*
 * fairgate: the command lines of the project's tools (fairgate-sim,
 * fairgate-load) on glibc's getopt_long: --name VALUE, --name=VALUE, or
 * --name for a flag; each at most once, but for a command's one repeatable
 * option, which collects its values.  What getopt_long leaves to its
 * caller is here once for every command: an option given twice, names in
 * full (an abbreviation that works today breaks when an option is added),
 * no argument that is not an option, and errors that name the option and
 * exit 2 with a pointer to --help.  The checks of the values' ranges
 * report the same way.
 *
 * A command describes its options with getopt_long's table, each entry
 * saying where its value goes:
 *
 *     enum { FG_X_TRACE, FG_X_QUIET, FG_X_N };
 *
 *     static const struct option  fg_x_options[] = {
 *         FG_SIM_OPT_VALUE("trace", FG_X_TRACE),
 *         FG_SIM_OPT_FLAG("quiet", FG_X_QUIET),
 *         FG_SIM_OPT_HELP,
 *         FG_SIM_OPT_END
 *     };
 *
 *     const char  *v[FG_X_N] = { NULL };
 *
 * and after fg_sim_opts_parse(), v[FG_X_TRACE] is --trace's value or NULL,
 * v[FG_X_QUIET] "" when --quiet was given.
 */

#ifndef _FG_SIM_OPTS_H_INCLUDED_
#define _FG_SIM_OPTS_H_INCLUDED_


#include <getopt.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "fg_cost.h"


/* the val of the option whose value goes to values[i]: no character's */
#define FG_SIM_OPT(i)      (0x100 + (i))

/* the val of a command's repeatable option */
#define FG_SIM_OPT_LIST    0xff


/* the entries of a command's table */
#define FG_SIM_OPT_VALUE(name, i)                                             \
    { name, required_argument, NULL, FG_SIM_OPT(i) }

#define FG_SIM_OPT_FLAG(name, i)                                              \
    { name, no_argument, NULL, FG_SIM_OPT(i) }

#define FG_SIM_OPT_REPEAT(name)                                               \
    { name, required_argument, NULL, FG_SIM_OPT_LIST }

#define FG_SIM_OPT_HELP    { "help", no_argument, NULL, 'h' }
#define FG_SIM_OPT_END     { NULL, 0, NULL, 0 }


/* where the repeatable option's values go */
typedef struct {
    const char  **values;
    size_t        n;
    size_t        max;
} fg_sim_opt_list_t;


/* "PROG: message", then, for status 2, where the options are; exits */
void fg_sim_opts_vdie(const char *prog, int status, const char *fmt,
    va_list args) __attribute__((noreturn));

/*
 * Parses argv[1] on (argv[0] is the command's name); 1 when --help or -h
 * was given (the caller prints its usage), else 0; list may be NULL when
 * no option repeats.
 */
int fg_sim_opts_parse(const char *prog, int argc, char **argv,
    const struct option *opts, const char **values, fg_sim_opt_list_t *list);

/* the value of --name: an integer, or a number, in [min, max]; else exits */
uint64_t fg_sim_opts_uint(const char *prog, const char *text,
    const char *name, uint64_t min, uint64_t max);
double fg_sim_opts_number(const char *prog, const char *text,
    const char *name, double min, double max);

/* the value of --cost, linear when NULL; else exits */
fg_cost_t fg_sim_opts_cost(const char *prog, const char *text);


#endif /* _FG_SIM_OPTS_H_INCLUDED_ */
