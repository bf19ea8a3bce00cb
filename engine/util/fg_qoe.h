
/*
 * fairgate: Andes's quality of experience of one streamed answer
 * (../shared/papers/andes-*.txt, equations 1-3), kept as it streams.
 *
 * The reader wants token i at its ideal time submit + ttft + i / speed and
 * consumes it at max(delivered_i, consumed_{i-1} + 1 / speed), token 0 at
 * max(delivered_0, submit + ttft): tokens early are held, never read
 * faster.  Over the n tokens so far,
 *
 *     S_delay = sum (consumed_i - ideal_i)
 *     S_whole = sum (consumed_{n-1} - ideal_i)
 *     QoE     = 1 - S_delay / S_whole
 *
 * so three running sums give it in O(1) time and memory a token.  Times are
 * kept relative to the submit time: absolute clocks (1.7e9 s) would lose
 * the sums' precision over long answers.
 *
 * Header-only, as all of engine/util: every part (core, engine, sim, load,
 * the nginx module) includes it without a library to link.
 */

#ifndef _FG_QOE_H_INCLUDED_
#define _FG_QOE_H_INCLUDED_


typedef struct {
    double    ttft;          /* target time to the first token, s */
    double    speed;         /* the reader's tokens a second */
} fg_qoe_expect_t;


typedef struct {
    double    submit;        /* absolute, s */
    double    ttft;
    double    gap;           /* 1 / speed; 0: an infinitely fast reader */
    double    last;          /* the last token's consumption, from submit */
    double    sum_ideal;     /* of the ideal times, from submit */
    double    sum_actual;    /* of the consumption times, from submit */
    unsigned  n;             /* tokens so far */
} fg_qoe_t;


static inline void
fg_qoe_init(fg_qoe_t *q, const fg_qoe_expect_t *e, double submit)
{
    q->submit = submit;
    q->ttft = e->ttft > 0 ? e->ttft : 0;
    q->gap = e->speed > 0 ? 1.0 / e->speed : 0;
    q->last = 0;
    q->sum_ideal = 0;
    q->sum_actual = 0;
    q->n = 0;
}


static inline void
fg_qoe_token(fg_qoe_t *q, double delivered)
{
    double  t, ideal, ready;

    t = delivered - q->submit;
    ideal = q->ttft + q->n * q->gap;
    ready = (q->n == 0) ? q->ttft : q->last + q->gap;

    q->last = (t > ready) ? t : ready;
    q->sum_ideal += ideal;
    q->sum_actual += q->last;
    q->n++;
}


/* the QoE of the tokens so far, 0..1; 1 for an answer of 0 tokens */

static inline double
fg_qoe_value(const fg_qoe_t *q)
{
    double  delay, whole;

    if (q->n == 0) {
        return 1.0;
    }

    delay = q->sum_actual - q->sum_ideal;
    whole = q->n * q->last - q->sum_ideal;

    /* rounding: on time means on time, even over a long answer */
    if (delay <= 1e-9 * (whole > 1.0 ? whole : 1.0)) {
        return 1.0;
    }

    if (delay >= whole) {
        return 0.0;
    }

    return 1.0 - delay / whole;
}


#endif /* _FG_QOE_H_INCLUDED_ */
