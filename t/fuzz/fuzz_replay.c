
/*
 * fairgate: a main() for the fuzz targets without libFuzzer, so that
 * `make test` replays their kept corpora (t/fuzz/corpus/NAME/) and the
 * crashes found (t/fuzz/crash/NAME/) through LLVMFuzzerTestOneInput with
 * gcc: each argument a file or a folder of files, by default the two
 * folders of FG_FUZZ_NAME (the target's name, given when it is compiled).
 * A TAP test: one line a folder; an input that crashes the target aborts
 * it, and prove says so.
 */


#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));
const char *__asan_default_options(void);


/* what a target keeps for its whole run (models) is no leak */
const char *
__asan_default_options(void)
{
    return "detect_leaks=0";
}


static int
fuzz_replay_file(const char *path)
{
    long      len;
    FILE     *f;
    uint8_t  *data;

    f = fopen(path, "rb");
    if (f == NULL) {
        return -1;
    }

    if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0
        || fseek(f, 0, SEEK_SET) != 0)
    {
        fclose(f);
        return -1;
    }

    /* an exact allocation: a read past the input is ASan's to see */
    data = malloc(len ? (size_t) len : 1);

    if (data == NULL || fread(data, 1, len, f) != (size_t) len) {
        free(data);
        fclose(f);
        return -1;
    }

    fclose(f);

    LLVMFuzzerTestOneInput(data, (size_t) len);

    free(data);

    return 0;
}


/* a folder's files (not recursively); -1 when the folder is unreadable */

static long
fuzz_replay_dir(const char *dir)
{
    DIR            *d;
    long            n;
    char            path[4096];
    struct stat     st;
    struct dirent  *e;

    d = opendir(dir);
    if (d == NULL) {
        return -1;
    }

    n = 0;

    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') {
            continue;
        }

        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);

        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
            continue;
        }

        if (fuzz_replay_file(path) != 0) {
            closedir(d);
            return -1;
        }

        n++;
    }

    closedir(d);

    return n;
}


int
main(int argc, char **argv)
{
    int          i, failed;
    long         n;
    char        *dirs[3];
    struct stat  st;

#ifdef FG_FUZZ_NEEDS
    /* the tokenizer's target loads stories260K: CI may not have it */
    if (getenv("FG_STORIES") == NULL && access(FG_FUZZ_NEEDS, R_OK) != 0) {
        printf("1..0 # SKIP %s is not there\n", FG_FUZZ_NEEDS);
        return 0;
    }
#endif

    if (LLVMFuzzerInitialize != NULL) {
        LLVMFuzzerInitialize(&argc, &argv);
    }

    if (argc == 1) {
        dirs[0] = argv[0];
        dirs[1] = "t/fuzz/corpus/" FG_FUZZ_NAME;
        dirs[2] = "t/fuzz/crash/" FG_FUZZ_NAME;
        argv = dirs;
        argc = 2 + (stat(dirs[2], &st) == 0);
    }

    printf("1..%d\n", argc - 1);

    failed = 0;

    for (i = 1; i < argc; i++) {
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            n = fuzz_replay_dir(argv[i]);

        } else {
            n = fuzz_replay_file(argv[i]) == 0 ? 1 : -1;
        }

        if (n < 0) {
            printf("not ok %d - %s unreadable\n", i, argv[i]);
            failed = 1;

        } else {
            printf("ok %d - %s: %ld inputs replayed\n", i, argv[i], n);
        }
    }

    return failed;
}
