
/*
 * fairgate: cost of service h(input, output).
 *
 * Pure C, no nginx types.  A cost is a quadratic polynomial
 *
 *     h(x, y) = in * x + out * y + in_out * x * y + out2 * y * y + base
 *
 * with x input tokens and y output tokens.  The linear cost of the VTC paper
 * (w_p * x + w_q * y) and its profiled A10G cost are both of this form.
 * Coefficients rather than a function pointer keep the cost valid in shared
 * memory across nginx reloads, where code addresses may change.
 */

#ifndef _FG_COST_H_INCLUDED_
#define _FG_COST_H_INCLUDED_


#include <stdint.h>


typedef struct {
    double  in;
    double  out;
    double  in_out;
    double  out2;
    double  base;
} fg_cost_t;


/* w_p * x + w_q * y; the paper's default is w_p = 1, w_q = 2 */
void fg_cost_linear(fg_cost_t *cost, double w_p, double w_q);

/* the VTC paper's profiled Llama-2-7B A10G cost (its appendix B.2) */
void fg_cost_profiled(fg_cost_t *cost);

/* parses "linear", "linear:WP,WQ" or "profiled"; returns 0 or -1 */
int fg_cost_parse(fg_cost_t *cost, const char *text);

double fg_cost_eval(const fg_cost_t *cost, double input, double output);

/* h(x, 0): what admission charges */
double fg_cost_input(const fg_cost_t *cost, uint32_t input);

/* h(x, to) - h(x, from): what output tokens from+1 .. to cost */
double fg_cost_output(const fg_cost_t *cost, uint32_t input, uint32_t from,
    uint32_t to);


#endif /* _FG_COST_H_INCLUDED_ */
