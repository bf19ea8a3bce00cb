
/*
 * fairgate: a model generated (fg_gguf_gen) into the test's temporary
 * directory (fg_test_file.h).
 */

#ifndef _FG_TEST_GEN_H_INCLUDED_
#define _FG_TEST_GEN_H_INCLUDED_


#include <stdio.h>

#include "fg_tap.h"
#include "fg_test_file.h"
#include "fg_test_gguf.h"


/* c into dir/file, its path in path; -1, said, when it could not */
static inline int
fg_test_gen(const char *file, fg_gguf_gen_conf_t *c, char *path, size_t len)
{
    char  err[FG_GGUF_ERR_LEN];

    snprintf(path, len, "%s/%s", dir, file);

    if (fg_gguf_gen_file(c, path, err, sizeof(err)) != 0) {
        diag("%s: %s", file, err);
        return -1;
    }

    return 0;
}


#endif /* _FG_TEST_GEN_H_INCLUDED_ */
