
/*
 * fairgate: the table of backends, by name.
 */


#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fg_backend.h"


#define FG_BACKEND_CUDA_SO  "fairgate-backend-cuda.so"


static const fg_backend_ops_t *fg_backend_cuda_open(char *err,
    size_t errlen);


const fg_backend_ops_t *
fg_backend_find(const char *name)
{
    char  err[256];

    return fg_backend_load(name, err, sizeof(err));
}


const fg_backend_ops_t *
fg_backend_load(const char *name, char *err, size_t errlen)
{
    if (strcmp(name, "sim") == 0) {
        return &fg_backend_sim;
    }

    if (strcmp(name, "cpu") == 0) {
        return &fg_backend_cpu;
    }

    if (strcmp(name, "cuda") == 0) {
        return fg_backend_cuda_open(err, errlen);
    }

    snprintf(err, errlen, "no backend \"%s\" (cpu, cuda or sim)", name);

    return NULL;
}


/*
 * The cuda backend is its own shared object, linked against cudart and
 * cuBLAS, opened on first use: an engine on the cpu or sim backend never
 * loads CUDA (cuBLAS alone costs some 90 ms at start), and a machine
 * without it runs the same binary.  It is looked for in
 * $FAIRGATE_CUDA_BACKEND, beside the executable, and one directory up
 * (the tests in build/t/).
 */
static const fg_backend_ops_t *
fg_backend_cuda_open(char *err, size_t errlen)
{
    char                            exe[4096], path[4096 + 64], *slash;
    void                           *so;
    size_t                          i, n;
    ssize_t                         len;
    const char                     *env, *cand[3];
    static const fg_backend_ops_t  *ops;

    static const char  *rel[2] = { "/" FG_BACKEND_CUDA_SO,
                                   "/../" FG_BACKEND_CUDA_SO };

    if (ops) {
        return ops;
    }

    n = 0;
    env = getenv("FAIRGATE_CUDA_BACKEND");

    if (env && env[0]) {
        cand[n++] = env;
    }

    len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    path[0] = '\0';

    for (i = 0; i < 2 && len > 0; i++) {
        exe[len] = '\0';
        slash = strrchr(exe, '/');

        if (slash == NULL) {
            break;
        }

        *slash = '\0';
        snprintf(path, sizeof(path), "%s%s", exe, rel[i]);
        *slash = '/';

        if (access(path, F_OK) == 0) {
            cand[n++] = path;
            break;
        }
    }

    if (n == 0) {
        snprintf(err, errlen, "the cuda backend is not built: no %s beside "
                 "the executable (make builds it where nvcc is found; "
                 "FAIRGATE_CUDA_BACKEND names another)", FG_BACKEND_CUDA_SO);
        return NULL;
    }

    /* the first candidate that exists is the one: an error is not hidden */
    so = dlopen(cand[0], RTLD_NOW | RTLD_LOCAL);

    if (so == NULL) {
        snprintf(err, errlen, "the cuda backend cannot be loaded: %s",
                 dlerror());
        return NULL;
    }

    ops = dlsym(so, "fg_backend_cuda");

    if (ops == NULL) {
        snprintf(err, errlen, "the cuda backend %s has no fg_backend_cuda",
                 cand[0]);
        dlclose(so);
        return NULL;
    }

    /* the object stays loaded: the table points into it */
    return ops;
}

