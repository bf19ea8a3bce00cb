
/*
 * fairgate: what the OpenAI layer's request tests share: bodies written
 * with ' for " to keep them readable (J()), and a body parsed with the
 * default limits.
 */

#ifndef _FG_TEST_OAI_H_INCLUDED_
#define _FG_TEST_OAI_H_INCLUDED_


#include <string.h>

#include "fg_openai_request.h"


/* the body J() wrote last */
static char  body[1 << 16];


static inline const char *
J(const char *s)
{
    size_t  i;

    for (i = 0; s[i] && i < sizeof(body) - 1; i++) {
        body[i] = (s[i] == '\'') ? '"' : s[i];
    }

    body[i] = '\0';

    return body;
}


/* text (J() applied) as a request of kind; err cleared first */
static inline fg_oai_request_t *
fg_test_oai_parse(fg_oai_kind_e kind, const char *text, fg_oai_error_t *err)
{
    fg_oai_limits_t  lim;

    fg_oai_limits_init(&lim);
    memset(err, 0, sizeof(fg_oai_error_t));

    text = J(text);

    return fg_oai_request_parse(kind, text, strlen(text), &lim, err);
}


#endif /* _FG_TEST_OAI_H_INCLUDED_ */
