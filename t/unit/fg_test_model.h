
/*
 * fairgate: where the unit tests find the small real model,
 * stories260K: $FG_STORIES, else ../shared/models/stories260K.gguf from
 * the top of the tree (make test) or from build/t.
 */

#ifndef _FG_TEST_MODEL_H_INCLUDED_
#define _FG_TEST_MODEL_H_INCLUDED_


#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>


#define FG_TEST_STORIES  "../shared/models/stories260K.gguf"


static inline const char *
fg_test_stories(void)
{
    const char   *env;
    static char   path[512];

    env = getenv("FG_STORIES");

    if (env != NULL) {
        return env;
    }

    if (access(FG_TEST_STORIES, R_OK) == 0) {
        return FG_TEST_STORIES;
    }

    snprintf(path, sizeof(path), "../../%s", FG_TEST_STORIES);

    return path;
}


#endif /* _FG_TEST_MODEL_H_INCLUDED_ */
