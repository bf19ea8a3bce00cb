
/*
 * fairgate: a unit test's temporary files, in a directory of their own
 * made at the start and removed at the end.
 */

#ifndef _FG_TEST_FILE_H_INCLUDED_
#define _FG_TEST_FILE_H_INCLUDED_


#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fg_tap.h"


/* the directory: "$TMPDIR/fg_test_NAME_XXXXXX" (/tmp without TMPDIR)
 * after fg_test_dir_make() */
static char  dir[192];


static inline void
fg_test_dir_make(const char *name)
{
    snprintf(dir, sizeof(dir), "%s/fg_test_%s_XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", name);

    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        exit(1);
    }
}


static inline void
fg_test_dir_remove(void)
{
    char  cmd[300];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);

    if (system(cmd) != 0) {
        diag("could not remove %s", dir);
    }
}


/* writes text to the file name in the directory; returns its path */
static inline const char *
file(const char *name, const char *text)
{
    FILE         *fp;
    static char   path[256];

    snprintf(path, sizeof(path), "%s/%s", dir, name);

    fp = fopen(path, "w");
    if (fp == NULL || fputs(text, fp) < 0 || fclose(fp) != 0) {
        perror(path);
        exit(1);
    }

    return path;
}


#endif /* _FG_TEST_FILE_H_INCLUDED_ */
