
/*
 * fairgate: tests of the engine's step-time model: grid points, bilinear
 * interpolation, extrapolation, a step's chunk (a cached prefix's too),
 * the linear model, and parse errors.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fg_tap.h"
#include "fg_test_file.h"
#include "fg_step_model.h"


#define EPS  1e-12


/* writes text to a file in the test's directory; returns "profile:PATH" */
static const char *
profile(const char *name, const char *text)
{
    static char  spec[272];

    snprintf(spec, sizeof(spec), "profile:%s", file(name, text));

    return spec;
}


/* the model must fail, and its message must mention want */
static void
fails(const char *spec, const char *want, const char *what)
{
    char              err[512];
    fg_step_model_t  *m;

    err[0] = '\0';
    m = fg_step_model_create(spec, err, sizeof(err));

    ok(m == NULL && strstr(err, want) != NULL, "%s: fails, saying \"%s\"",
       what, want);

    if (m != NULL || strstr(err, want) == NULL) {
        diag("got: %s", m ? "a model" : err);
    }

    fg_step_model_destroy(m);
}


/* the model of spec, told as what (and why not, when it fails) */
static fg_step_model_t *
made(const char *spec, const char *what)
{
    char              err[512];
    fg_step_model_t  *m;

    m = fg_step_model_create(spec, err, sizeof(err));

    if (!ok(m != NULL, "%s", what)) {
        diag("%s", err);
    }

    return m;
}


static void
test_profile(void)
{
    fg_step_model_t  *m;

    /*
     * Per-token decode (decode_s / output): input 10: 0.1 at output 10,
     * 0.2 at 20; input 30: 0.3 at 10, 0.4 at 20.  Input 20 is measured at
     * output 1 only (0.5 per token), so it must not bend the surface.
     * Mean prefill: 0.2 at input 10, 0.2 at 20, 0.6 at 30.
     */
    m = made(profile("grid.json",
        "{\"30\": {\"20\": [3, 0.7, 8.0], \"10\": [5, 0.5, 3.0]},\n"
        " \"10\": {\"10\": [9, 0.1, 1.0], \"20\": [7, 0.3, 4.0]},\n"
        " \"20\": {\"1\": [99, 0.2, 0.5]}}\n"),
        "a profile loads");
    if (m == NULL) {
        return;
    }

    is_num(fg_step_model_decode(m, 10, 10), 0.1, EPS, "grid point 10/10");
    is_num(fg_step_model_decode(m, 10, 20), 0.2, EPS, "grid point 10/20");
    is_num(fg_step_model_decode(m, 30, 10), 0.3, EPS, "grid point 30/10");
    is_num(fg_step_model_decode(m, 30, 20), 0.4, EPS, "grid point 30/20");

    is_num(fg_step_model_decode(m, 10, 15), 0.15, EPS,
           "between two outputs of a row");
    is_num(fg_step_model_decode(m, 20, 10), 0.2, EPS,
           "between two rows, ignoring the single-point row");
    is_num(fg_step_model_decode(m, 20, 15), 0.25, EPS, "bilinear inside");
    is_num(fg_step_model_decode(m, 15, 12), 0.12 + 0.05, EPS,
           "bilinear off-centre");

    is_num(fg_step_model_decode(m, 10, 30), 0.3, EPS,
           "output past the grid extrapolates linearly");
    is_num(fg_step_model_decode(m, 40, 10), 0.4, EPS,
           "input past the grid extrapolates linearly");
    is_num(fg_step_model_decode(m, 1, 1), 0.0, EPS,
           "extrapolation never goes below zero");

    is_num(fg_step_model_prefill(m, 10), 0.2, EPS,
           "prefill: the row's mean");
    is_num(fg_step_model_prefill(m, 20), 0.2, EPS,
           "prefill: single-point rows count");
    is_num(fg_step_model_prefill(m, 25), 0.4, EPS, "prefill between rows");
    is_num(fg_step_model_prefill(m, 40), 1.0, EPS,
           "prefill past the grid extrapolates");
    is_num(fg_step_model_prefill(m, 1), 0.2, EPS,
           "prefill before the grid extrapolates (flat segment)");

    fg_step_model_destroy(m);

    /* no row with two outputs: decode is flat in output, linear in input */
    m = made(profile("flat.json",
        "{\"10\": {\"1\": [1, 0.1, 0.5]}, \"20\": {\"1\": [1, 0.2, 1.5]}}"),
        "a profile of single points loads");
    if (m != NULL) {
        is_num(fg_step_model_decode(m, 15, 100), 1.0, EPS,
               "single points: interpolated in input only");
        fg_step_model_destroy(m);
    }
}


/* a step's chunk: first at 0, later, first past a cached prefix, decode */
static void
test_chunk(void)
{
    fg_step_model_t  *m;

    /* prefill(in) = 0.1 + 0.02 in (0.1: the overhead of a request);
     * decode(in, 1) = 0.5 at 10, 1.5 at 20 */
    m = made(profile("chunk.json",
        "{\"10\": {\"1\": [1, 0.3, 0.5]}, \"20\": {\"1\": [1, 0.5, 1.5]}}"),
        "a profile with an overhead loads");
    if (m == NULL) {
        return;
    }

    is_num(fg_step_model_chunk(m, 0, 10, 1), 0.3, EPS,
           "a prompt's first chunk: prefill(n), overhead included");
    is_num(fg_step_model_chunk(m, 10, 10, 0), 0.2, EPS,
           "a later chunk: what it adds to the prefill, no overhead");
    is_num(fg_step_model_chunk(m, 10, 10, 1), 0.3, EPS,
           "a first chunk past a cached prefix: that and the overhead");
    is_num(fg_step_model_chunk(m, 20, 1, 0), 1.5, EPS,
           "a decode token: decode(pos, 1)");
    is_num(fg_step_model_chunk(m, 20, 1, 1), 0.12, EPS,
           "the one uncached token of a cached prompt: a prefill's");
    is_num(fg_step_model_chunk(m, 20, 0, 1), 0.0, EPS, "no tokens: nothing");

    fg_step_model_destroy(m);
}


static void
test_linear(void)
{
    fg_step_model_t  *m;

    m = made("linear:0.001,0.02", "linear:0.001,0.02 parses");
    if (m == NULL) {
        return;
    }

    is_num(fg_step_model_prefill(m, 100), 0.1, EPS,
           "linear prefill: seconds per input token");
    is_num(fg_step_model_decode(m, 100, 7), 0.02, EPS,
           "linear decode: seconds per running request");
    is_num(fg_step_model_decode(m, 5000, 1), 0.02, EPS,
           "linear decode: independent of lengths");

    fg_step_model_destroy(m);
}


static void
test_gpu(void)
{
    char              err[512];
    double            t;
    fg_step_model_t  *m;

    m = made("gpu:0.02,0.001,0.0001,0.0002",
             "gpu:0.02,0.001,0.0001,0.0002 parses");
    if (m == NULL) {
        return;
    }

    is_num(fg_step_model_step(m), 0.02, EPS, "gpu: STEP once a step");
    is_num(fg_step_model_prefill(m, 100), 0.02, EPS,
           "gpu prefill: PREFILL per input token");
    is_num(fg_step_model_prefill(m, 0), 0.0, EPS,
           "gpu prefill: no per-request overhead");
    /* 0.001 + 0.0001 * (100 + 40 / 2) */
    is_num(fg_step_model_decode(m, 100, 40), 0.013, EPS,
           "gpu decode: PER_SEQ and PER_CTX of the mean context");
    is_num(fg_step_model_chunk(m, 300, 1, 0), 0.001 + 0.0001 * 300.5, EPS,
           "gpu chunk: a decode token at its position");
    is_num(fg_step_model_chunk(m, 100, 50, 0), 0.01, EPS,
           "gpu chunk: a later prefill chunk, its tokens only");

    /* a step of 4 requests at 100 + 40 tokens: nearly flat in the batch */
    t = fg_step_model_step(m) + 4 * fg_step_model_decode(m, 100, 40);
    is_num(t, 0.072, EPS, "gpu: a batch's step, STEP added once");

    fg_step_model_destroy(m);

    m = made("gpu", "bare gpu parses");
    if (m == NULL) {
        return;
    }

    is_num(fg_step_model_step(m), FG_STEP_GPU_STEP, EPS,
           "bare gpu: the default step");
    is_num(fg_step_model_prefill(m, 512), 512 * FG_STEP_GPU_PREFILL, EPS,
           "bare gpu: the default prefill");
    t = fg_step_model_step(m) + fg_step_model_decode(m, 64, 64);
    ok(t > 0.020 && t < 0.030, "bare gpu: one request's step %.4f s is "
       "20-30 ms", t);

    fg_step_model_destroy(m);

    m = fg_step_model_create("linear:0.001,0.02", err, sizeof(err));

    if (m != NULL) {
        is_num(fg_step_model_step(m), 0.0, EPS, "linear: no per-step cost");
        fg_step_model_destroy(m);
    }
}


static void
test_errors(void)
{
    fails("gpux", "expected gpu or gpu:STEP,PER_SEQ,PER_CTX,PREFILL",
          "gpu with junk after the name");
    fails("gpu:", "expected gpu or gpu:STEP", "gpu with no numbers");
    fails("gpu:0.02,0.001,0.0001", "expected gpu or gpu:STEP",
          "gpu missing PREFILL");
    fails("gpu:0.02,0.001,0.0001,0.0002,1", "expected gpu or gpu:STEP",
          "gpu with a fifth number");
    fails("gpu:0.02,x,0.0001,0.0002", "expected gpu or gpu:STEP",
          "gpu garbage");
    fails("gpu:0.02,-0.001,0.0001,0.0002", "seconds must be finite and "
          ">= 0", "negative gpu time");
    fails("gpu:inf,0.001,0.0001,0.0002", "seconds must be finite and "
          ">= 0", "infinite gpu time");
    fails("bogus", "expected profile:FILE or linear:PREFILL,DECODE",
          "unknown model");
    fails("profile:", "expected profile:FILE", "empty profile path");
    fails("linear:abc", "expected linear:PREFILL,DECODE", "linear garbage");
    fails("linear:0.1", "expected linear:PREFILL,DECODE",
          "linear missing decode");
    fails("linear:0.1,2x", "expected linear:PREFILL,DECODE",
          "linear trailing junk");
    fails("linear:-1,2", ">= 0", "negative linear time");

    fails("profile:/nonexistent/fg.json", "/nonexistent/fg.json",
          "missing file names the file");
    fails(profile("bad.json", "{\"8\": {\"1\": [1, 2, 3]},\n  oops}\n"),
          "bad.json:2:", "broken JSON names the line");
    fails(profile("arr.json", "[1, 2]"), "must be a non-empty object",
          "not an object");
    fails(profile("key.json", "{\"x8\": {\"1\": [1, 2, 3]}}"),
          "input length \"x8\" is not a positive integer", "bad input key");
    fails(profile("zero.json", "{\"8\": {\"0\": [1, 2, 3]}}"),
          "output length \"0\" is not a positive integer", "zero output");
    fails(profile("pt.json", "{\"8\": {\"1\": [1, 2]}}"),
          "[\"8\"][\"1\"] must be [batch_size, prefill_s, decode_s]",
          "short point");
    fails(profile("neg.json", "{\"8\": {\"1\": [1, -2, 3]}}"),
          "times finite and >= 0", "negative time");
    fails(profile("dup.json", "{\"8\": {\"1\": [1, 2, 3]}, "
                  "\"08\": {\"1\": [1, 2, 3]}}"),
          "input length 8 given twice", "the same input twice");
    fails(profile("row.json", "{\"8\": 3}"), "[\"8\"] must be a non-empty "
          "object", "a row that is not an object");
}


int
main(void)
{
    fg_test_dir_make("step");

    test_profile();
    test_chunk();
    test_linear();
    test_gpu();
    test_errors();

    fg_test_dir_remove();

    return done_testing();
}
