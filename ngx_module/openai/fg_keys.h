
/*
 * fairgate: the keys file's lines parsed (fg_keys.c), pure C: the bytes
 * in, each key's entry out through a callback, an error as its line and
 * its problem.  The nginx glue (ngx_http_fairgate_keys.c) reads the file,
 * copies the entries into its pool and logs the error with the file name.
 */

#ifndef FG_KEYS_H
#define FG_KEYS_H

#include <stddef.h>
#include <stdint.h>


/* the most words a line may have: hash, user, app, weight, options */
#define FG_KEYS_WORDS     10
/* the longest models= list, and a model name in it */
#define FG_KEYS_MODELS_LEN  4096
#define FG_KEYS_MODEL_LEN   256
/* the longest user or app, NGX_HTTP_FAIRGATE_NAME_LEN */
#define FG_KEYS_NAME_LEN  255
#define FG_KEYS_ERR_LEN   320


typedef struct {
    unsigned char   digest[32];
    const char     *user;       /* within the buffer, not NUL-terminated */
    size_t          user_len;
    const char     *app;        /* NULL and 0: none ("-") */
    size_t          app_len;
    double          weight;     /* (0, 1e6] */
    double          priority;   /* (0, 1e6], 1 by default */
    uint64_t        rpm;        /* 0: not given */
    uint64_t        tpm;
    const char     *models;     /* "a,b": the models it may use; NULL: any */
    size_t          models_len;
    /* quota=... and budget=...'s values, printable ASCII, read by the
     * glue (fg_quota_text()); NULL: none */
    const char     *quota;
    size_t          quota_len;
    const char     *budget;
    size_t          budget_len;
    unsigned long   line;       /* from 1 */
} fg_keys_entry_t;

typedef struct {
    unsigned long   line;       /* 0: the callback failed */
    /* the problem, then where: "%s in keys file F:L%s" */
    char            what[FG_KEYS_ERR_LEN];
    const char     *hint;       /* "" or ", expected ..." */
} fg_keys_error_t;

/* 0: go on; else the parsing stops and fg_keys_parse() returns -1 */
typedef int (*fg_keys_entry_pt)(void *data, const fg_keys_entry_t *entry);


/*
 * A models list, "NAME[,NAME...]": names of 1 to FG_KEYS_MODEL_LEN
 * printable ASCII bytes, no quote, backslash or comma.  0 or -1.
 */
int fg_keys_models_valid(const char *p, size_t len);

/*
 * buf holds len bytes and one more, writable: the lines and words are
 * NUL-terminated in place.  A line ends at LF; blanks are spaces, tabs and
 * CRs; '#' starts a comment; a NUL ends the line's words.  0 or -1.
 */
int fg_keys_parse(char *buf, size_t len, fg_keys_entry_pt entry, void *data,
    fg_keys_error_t *err);

#endif /* FG_KEYS_H */
