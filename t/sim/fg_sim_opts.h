
/*
 * fairgate: the command-line options of the project's tools (fairgate-sim,
 * fairgate-load): --name VALUE, --name=VALUE, or --name for a flag; each at
 * most once, but for a repeatable option, which collects its values.
 * Errors name the option and exit 2 with a pointer to --help.
 */

#ifndef _FG_SIM_OPTS_H_INCLUDED_
#define _FG_SIM_OPTS_H_INCLUDED_


#include <stdarg.h>
#include <stddef.h>


typedef struct {
    const char   *name;
    const char  **value;         /* NULL: the repeatable option */
    unsigned      flag;          /* takes no value: set to "" when given */
} fg_sim_opt_t;


/* where the repeatable option's values go (a tool has one at most) */
typedef struct {
    const char  **values;
    size_t        n;
    size_t        max;
} fg_sim_opt_list_t;


/* "PROG: message", then, for status 2, where the options are; exits */
void fg_sim_opts_vdie(const char *prog, int status, const char *fmt,
    va_list args) __attribute__((noreturn));

/*
 * 1 when --help or -h was given (the caller prints its usage), else 0;
 * list may be NULL when no option repeats.
 */
int fg_sim_opts_parse(const char *prog, int argc, char **argv,
    fg_sim_opt_t *opts, fg_sim_opt_list_t *list);


#endif /* _FG_SIM_OPTS_H_INCLUDED_ */
