
/*
 * fairgate: the engine's step-time model.
 *
 * How long a prefill or a decode step takes, so that a simulated engine
 * (the simulator, the engine's sim backend) keeps the time of a real one.
 * Three models, chosen by a spec string:
 *
 *   linear:PREFILL,DECODE
 *       a prefill takes PREFILL seconds per input token of the new
 *       requests; a decode step takes DECODE seconds per running request.
 *
 *   profile:FILE
 *       measured timings, as published with the VTC paper's artifact:
 *       {input_len: {output_len: [batch_size, prefill_s, decode_s]}}, where
 *       prefill_s and decode_s are a full batch's totals divided by its
 *       size.  A request adds prefill(input) to the prefill that admits it
 *       and decode_s(input, output) / output to every decode step while it
 *       runs, output being its whole output length: the measured cost of
 *       one token of one request in a batch that fills the KV pool.
 *
 *   gpu[:STEP,PER_SEQ,PER_CTX,PREFILL]
 *       a memory-bound GPU: each step (a prefill's or a decode's) costs
 *       STEP seconds once, reading the weights; a decode step adds
 *       PER_SEQ per running request and PER_CTX per context token the
 *       batch holds (the KV cache read); a prefill adds PREFILL per input
 *       token.  As a request's share of every decode step, decode(in,
 *       out) is PER_SEQ + PER_CTX * (in + out / 2), the context it holds
 *       on average over its life (decode(pos, 1) at position pos);
 *       fg_step_model_step() gives STEP, which a user adds once per step.
 *       Bare "gpu" is a 7B fp16 model on an A10G-class GPU:
 *
 *       STEP     22 ms: 13.5 GB of weights read at ~600 GB/s.
 *       PREFILL  0.215 ms per token: the A10G profile's prefill at 512
 *                input tokens (0.110 s).
 *       PER_SEQ, PER_CTX  0.14 ms and 1.8 us: fitted, with STEP, to the
 *                profile's full-batch decode steps (13 requests at 512 +
 *                256 tokens: 38.6 ms; 37 at 8 + 256: 36 ms); 1.8 us is
 *                about twice a token's KV (0.5 MB) read at 600 GB/s.
 *
 *       So a decode step takes ~23 ms for one short request and ~40 ms
 *       for a batch filling a 10,000-token pool: nearly flat, where the
 *       other two models grow in proportion to the batch.
 *
 * Interpolation, for a profile:
 *
 *   prefill(in): each input row's mean prefill_s over its output points,
 *       piecewise linear in the input length between rows.
 *
 *   decode(in, out): per row, piecewise linear in the output length over
 *       the row's points; then piecewise linear in the input length
 *       between the two rows that bracket it: bilinear on the grid.  Only
 *       rows measured at two or more output lengths take part, when there
 *       are any: a row measured at one output length says nothing about
 *       how decode cost grows with output, and mixing it in would bend the
 *       surface at that input length (the A10G profile measures 16, 32 and
 *       128 input tokens at output 1 only).
 *
 *   Outside the grid both extrapolate linearly from the outermost segment
 *   rather than clamp: prefill grows with input and per-token decode cost
 *   with context length, so a clamp would make long requests free.  A
 *   result is never below zero.
 */

#ifndef _FG_STEP_MODEL_H_INCLUDED_
#define _FG_STEP_MODEL_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


typedef struct fg_step_model_s  fg_step_model_t;


/* bare "gpu": 7B fp16 on an A10G-class GPU, as above */
#define FG_STEP_GPU_STEP      0.022
#define FG_STEP_GPU_PER_SEQ   0.00014
#define FG_STEP_GPU_PER_CTX   0.0000018
#define FG_STEP_GPU_PREFILL   0.000215


/* NULL on error, with a message in err (size bytes) */
fg_step_model_t *fg_step_model_create(const char *spec, char *err,
    size_t size);
void fg_step_model_destroy(fg_step_model_t *m);

/* seconds that admitting one request adds to its prefill */
double fg_step_model_prefill(const fg_step_model_t *m, uint32_t input);

/* seconds that one running request adds to each decode step */
double fg_step_model_decode(const fg_step_model_t *m, uint32_t input,
    uint32_t output);

/* seconds every step costs once, whatever its batch: 0 but for gpu */
double fg_step_model_step(const fg_step_model_t *m);

/*
 * Seconds of one sequence's chunk of n tokens at position pos in a step:
 * a request's first chunk at 0 costs prefill(n), which carries its
 * overhead (prefill(0), what the profile's line gives at no input); a
 * later chunk prefill(pos + n) - prefill(pos); a first chunk past a
 * prefix the prefix cache held (first, pos > 0) the same and the overhead;
 * one token after the prompt decode(pos, 1).
 */
double fg_step_model_chunk(const fg_step_model_t *m, uint32_t pos,
    uint32_t n, int first);


#endif /* _FG_STEP_MODEL_H_INCLUDED_ */
