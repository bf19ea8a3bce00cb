
/*
 * fairgate: Jinja templates as the Hub's chat templates use them, with
 * the output of Hugging Face's @huggingface/jinja (which renders them in
 * transformers.js) byte for byte.
 *
 * Pure C, no nginx types.  A template is parsed once (at load) and then
 * rendered by any number of threads, each render with its own memory.
 * A render is bounded: its steps, its macro depth, its output and the
 * memory of its values have limits, so that a bad template cannot hang
 * or swell a worker; errors name the template's line and column.
 *
 * The output comes as segments: each says whether its bytes came from
 * the template (its text, its string literals, the trusted variables
 * such as bos_token) or from the variables the request gave (messages,
 * tools).  Only the template's segments may hold control tokens.
 */

#ifndef _FG_JINJA_H_INCLUDED_
#define _FG_JINJA_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include <jansson.h>


typedef struct fg_jinja_s  fg_jinja_t;


typedef enum {
    FG_JINJA_OK = 0,
    FG_JINJA_ESYNTAX,          /* the template does not parse */
    FG_JINJA_ERUNTIME,         /* an operation the values do not allow */
    FG_JINJA_ERAISED,          /* the template's raise_exception() */
    FG_JINJA_ELIMIT,           /* a limit of fg_jinja_limits_t */
    FG_JINJA_ENOMEM
} fg_jinja_rc_e;


typedef struct {
    fg_jinja_rc_e        rc;
    unsigned             line;      /* 1-based; 0: no place */
    unsigned             column;
    char                 message[256];
} fg_jinja_err_t;


/* fg_jinja_limits_init() sets the defaults in brackets */
typedef struct {
    size_t               max_output;    /* bytes rendered [4 MiB] */
    size_t               max_memory;    /* bytes of a render's values
                                           [64 MiB] */
    uint64_t             max_steps;     /* nodes evaluated [10 million] */
    unsigned             max_depth;     /* nested macro calls [64] */
} fg_jinja_limits_t;


typedef struct {
    const char          *data;
    size_t               len;
    unsigned             user:1;        /* the request's bytes */
} fg_jinja_seg_t;


/* one malloc'd block: text NUL-terminated, segs pointing into it */
typedef struct {
    char                *text;
    size_t               len;
    fg_jinja_seg_t      *segs;
    size_t               n_segs;
} fg_jinja_out_t;


void fg_jinja_limits_init(fg_jinja_limits_t *lim);

/* NULL with err filled (FG_JINJA_ESYNTAX or ENOMEM) */
fg_jinja_t *fg_jinja_parse(const char *src, size_t len, fg_jinja_err_t *err);
void fg_jinja_free(fg_jinja_t *t);

/*
 * Renders with the keys of two JSON objects as variables: trusted's
 * (bos_token, add_generation_prompt ...) as the template's own text,
 * user's (messages, tools) as the request's; either may be NULL.  0 with
 * out filled (fg_jinja_out_free() frees it), or -1 with err.
 */
int fg_jinja_render(const fg_jinja_t *t, const json_t *trusted,
    const json_t *user, const fg_jinja_limits_t *lim, fg_jinja_out_t *out,
    fg_jinja_err_t *err);

void fg_jinja_out_free(fg_jinja_out_t *out);


#endif /* _FG_JINJA_H_INCLUDED_ */
