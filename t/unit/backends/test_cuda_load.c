
/*
 * fairgate: the cuda backend's loading, on any machine (CI has no GPU).
 *
 * - Where nvcc was found at build time, build/fairgate-backend-cuda.so is
 *   built and exports its table alone (its GGUF reader stays local).
 * - fairgate-engine links no CUDA library: the backend is dlopen()ed.
 * - --backend cuda on a machine without a GPU (or without the .so) exits
 *   1 with one line naming the problem; with a GPU it runs (rc 0).
 * - A .so that cannot be loaded is named with the loader's reason.
 * - The engine runs end to end on the backend compiled over the CPU
 *   emulation of CUDA (t/cuda_emu), as the cpu backend runs.
 * - make bench-gpu's program runs end to end there on a tiny model.
 *
 * Run from the top of the tree, as prove runs it.
 */


#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

/* an engine on the emulated backend may take a while under valgrind */
#define FG_TEST_RUN_MS  60000

#include "fg_tap.h"
#include "fg_test_model.h"
#include "fg_test_proc.h"


#define ENGINE      "build/fairgate-engine"
#define CUDA_SO     "build/fairgate-backend-cuda.so"
#define EMU_SO      "build/t/fairgate-backend-cuda-emu.so"
#define BENCH_EMU   "build/t/bench_cuda_emu"

#ifndef FG_TEST_CUDA_SO
#define FG_TEST_CUDA_SO  0
#endif


/* stories260K, where fg_test_stories() finds it */
static char  *model;


static size_t
lines(const char *s)
{
    size_t  n;

    for (n = 0; *s; s++) {
        n += *s == '\n';
    }

    return n;
}


static void
test_so(void)
{
    void  *so;

    if (!FG_TEST_CUDA_SO) {
        ok(access(CUDA_SO, F_OK) != 0, "no nvcc at build time: no %s",
           CUDA_SO);
        return;
    }

    ok(access(CUDA_SO, R_OK) == 0, "nvcc found at build time: %s built",
       CUDA_SO);

    /* loads cudart and cuBLAS, which are there where nvcc was */
    so = dlopen(CUDA_SO, RTLD_NOW | RTLD_LOCAL);

    if (!ok(so != NULL, "it loads")) {
        diag("dlopen: %s", dlerror());
        return;
    }

    ok(dlsym(so, "fg_backend_cuda") != NULL, "it exports fg_backend_cuda");
    ok(dlsym(so, "fg_gguf_open") == NULL && dlsym(so, "fg_cuk_gemv") == NULL,
       "and keeps its GGUF reader and kernels to itself");

    dlclose(so);
}


static void
test_engine_links_no_cuda(void)
{
    int    found;
    char   line[512];
    FILE  *f;

    f = popen("ldd " ENGINE " 2>&1", "r");

    if (!ok(f != NULL, "ldd runs")) {
        return;
    }

    found = 0;

    while (fgets(line, sizeof(line), f)) {
        found |= strstr(line, "libcudart") != NULL
                 || strstr(line, "libcublas") != NULL;
    }

    pclose(f);

    ok(!found, "fairgate-engine links neither cudart nor cuBLAS");
}


static void
test_engine_cuda(void)
{
    int          rc;
    const char  *want;

    rc = fg_test_run((char *[]) { ENGINE, "--backend", "cuda",
                          "--model", model, "--prompt", "Once upon a time",
                          "-n", "8", "--kv-blocks", "64", NULL });

    if (rc == 0) {
        /* a GPU machine: make test-gpu is where the backend is checked */
        ok(strlen(out_buf) > 0, "a GPU is here: --backend cuda ran and "
           "wrote a continuation");
        diag("stderr: %.*s", (int) strcspn(err_buf, "\n"), err_buf);
        return;
    }

    want = FG_TEST_CUDA_SO ? "the cuda backend found no usable GPU"
                           : "the cuda backend is not built";

    is_int(rc, 1, "--backend cuda without a GPU: exit 1");
    ok(strncmp(err_buf, "fairgate-engine: ", 17) == 0
       && strstr(err_buf, want) != NULL, "it says \"%s\"", want);
    is_int(lines(err_buf), 1, "in one line");
    diag("%.*s", (int) strcspn(err_buf, "\n"), err_buf);
    ok(out_buf[0] == '\0', "and prints no continuation");
}


/*
 * The engine end to end on the backend's host side over the CPU emulation
 * of CUDA (t/cuda_emu): loaded by FAIRGATE_CUDA_BACKEND, the cache
 * sized from "free memory", the same greedy continuation as the cpu's.
 */
static void
test_engine_emulated(void)
{
    int   rc;
    char  cpu[FG_TEST_OUT_MAX];

    if (access(EMU_SO, R_OK) != 0) {
        ok(0, "%s is built", EMU_SO);
        return;
    }

    rc = fg_test_run((char *[]) { ENGINE, "--backend", "cpu", "--model", model,
                          "--prompt", "Once upon a time", "-n", "40",
                          "--kv-blocks", "64", NULL });
    memcpy(cpu, out_buf, FG_TEST_OUT_MAX);

    setenv("FAIRGATE_CUDA_BACKEND", EMU_SO, 1);
    setenv("FG_EMU_MEM_MB", "256", 1);

    rc |= fg_test_run((char *[]) { ENGINE, "--backend", "cuda",
                           "--model", model, "--prompt", "Once upon a time",
                           "-n", "40", NULL });

    unsetenv("FAIRGATE_CUDA_BACKEND");
    unsetenv("FG_EMU_MEM_MB");

    is_int(rc, 0, "the engine on the emulated cuda backend: exit 0");
    ok(strstr(err_buf, "fairgate-engine: cuda: CPU emulation") != NULL
       && strstr(err_buf, "KV cache ") != NULL,
       "it logs the device and the cache it sized");
    diag("%.*s", (int) strcspn(err_buf, "\n"), err_buf);
    ok(cpu[0] != '\0' && strcmp(out_buf, cpu) == 0,
       "the same 40 greedy tokens as the cpu backend");
}


static void
test_bad_so(void)
{
    int  rc;

    setenv("FAIRGATE_CUDA_BACKEND", "/nonexistent/fairgate-backend-cuda.so",
           1);

    rc = fg_test_run((char *[]) { ENGINE, "--backend", "cuda",
                          "--model", model, "--prompt", "Once", NULL });

    is_int(rc, 1, "FAIRGATE_CUDA_BACKEND naming no file: exit 1");
    ok(strstr(err_buf, "the cuda backend cannot be loaded: ") != NULL
       && strstr(err_buf, "/nonexistent/") != NULL,
       "the loader's reason, naming the file");
    is_int(lines(err_buf), 1, "in one line");

    /* a file that is not a shared object */
    setenv("FAIRGATE_CUDA_BACKEND", model, 1);

    rc = fg_test_run((char *[]) { ENGINE, "--backend", "cuda",
                          "--model", model, "--prompt", "Once", NULL });

    is_int(rc, 1, "FAIRGATE_CUDA_BACKEND naming a model file: exit 1");
    ok(strstr(err_buf, "the cuda backend cannot be loaded: ") != NULL,
       "the loader's reason");

    unsetenv("FAIRGATE_CUDA_BACKEND");

    rc = fg_test_run((char *[]) { ENGINE, "--backend", "cuda", NULL });
    is_int(rc, 2, "--backend cuda without --model: exit 2");
    ok(strstr(err_buf, "--model PATH is required") != NULL,
       "naming --model");

    /* the cpu backend is untouched by all this */
    rc = fg_test_run((char *[]) { ENGINE, "--backend", "cpu", "--model", model,
                          "--prompt", "Once", "-n", "4", "--kv-blocks", "16",
                          NULL });
    is_int(rc, 0, "--backend cpu still runs");
}


/*
 * bench_cuda (make bench-gpu) over the emulation, on a tiny model that it
 * writes itself: the program's steps, cache sizing and table, checked
 * before a GPU ever runs it.  The figures mean nothing here.
 */
static void
test_bench_emulated(void)
{
    int    rc;
    char   dir[] = "/tmp/fg-bench-emu-XXXXXX", path[256];
    char  *args[] = { BENCH_EMU, "--layers", "2", "--embd", "64", "--ff",
                      "128", "--heads", "4", "--kv-heads", "2", "--vocab",
                      "320", "--batches", "1,4", "--ctx", "20", "--steps",
                      "2", "--prefill", "40", "--chunk", "16", "--gemm",
                      "32", "--copy-mb", "1", NULL };

    if (access(BENCH_EMU, X_OK) != 0 || mkdtemp(dir) == NULL) {
        ok(0, "%s is built", BENCH_EMU);
        return;
    }

    setenv("TMPDIR", dir, 1);
    setenv("FAIRGATE_CUDA_BACKEND", EMU_SO, 1);
    setenv("FG_EMU_MEM_MB", "256", 1);

    rc = fg_test_run(args);

    unsetenv("TMPDIR");
    unsetenv("FAIRGATE_CUDA_BACKEND");
    unsetenv("FG_EMU_MEM_MB");

    snprintf(path, sizeof(path), "%s/fg-bench-f16-e64-l2-f128-h4-k2-v320"
             ".gguf", dir);

    is_int(rc, 0, "bench_cuda on the emulation, a tiny model: exit 0");
    ok(access(path, R_OK) == 0, "it wrote the model it asked for");
    ok(strstr(out_buf, "| 1 | 20 | 2 | ") != NULL
       && strstr(out_buf, "% (") != NULL
       && strstr(out_buf, "| 4 | 20 | 2 | ") != NULL,
       "a decode row for batch 1, with its roofline fraction, and batch 4");
    ok(strstr(out_buf, "prefill: 40 tokens in steps of 16: ") != NULL
       && strstr(out_buf, "TFLOPS: ") != NULL,
       "the prefill line, with its flops");

    if (rc != 0) {
        diag("%s", err_buf);
    }

    unlink(path);
    rmdir(dir);
}


int
main(void)
{
    model = (char *) fg_test_stories();

    if (access(ENGINE, X_OK) != 0 || access(model, R_OK) != 0) {
        printf("1..0 # SKIP needs %s and %s\n", ENGINE, model);
        return 0;
    }

    test_so();
    test_engine_links_no_cuda();
    test_engine_cuda();
    test_engine_emulated();
    test_bench_emulated();
    test_bad_so();

    return fg_tap_done();
}
