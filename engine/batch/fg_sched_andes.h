
/*
 * fairgate: Andes's QoE scheduler, the decision alone (fg_batch.c gives
 * it the held sequences and applies what it decides).
 *
 * Each sequence is a candidate: when its reader runs dry (has read every
 * token delivered, at its speed; submit + TTFT target before the first),
 * its speed, when its tokens would start to flow if served (now for one
 * running, after its prefill or recompute for one waiting) and the KV
 * blocks it holds or would take.  Over a horizon H from now, the reader's
 * delay (the area between the tokens it expected and those it read,
 * Andes's S_delay) grows at its speed from the time it runs dry while no
 * token comes.  Waiting, that is v (end - dry)^2 / 2; served, the same up
 * to the first token, then no more (a step faster than the reader) or at
 * v - 1 / step.  The gain of serving is the difference as a share of the
 * reading expected by the horizon's end (v (end - first due)^2 / 2): QoE
 * is such a share (1 - S_delay / S_whole), and Andes's gain is Q_serve -
 * Q_wait, so a stream that has already lost most of its QoE gains less
 * from the same tokens than a fresh one.  Closed form, no timeline, O(1)
 * a candidate.
 *
 * value = gain x 1.5 for a running one (as the authors: staying is worth
 * more than coming in); for a waiting one that was preempted, less its
 * recompute's cost: the recompute's time is QoE lost by the running
 * readers who would run dry within the horizon.  Candidates go in order
 * of value per KV block (ties: running first, then the reader that runs
 * dry first, then the oldest: of those far ahead, the furthest goes) into
 * the pool and the batch's seats.  One already preempted as often as
 * allowed is pinned: running, it stays whatever its value, so that each
 * stream is recomputed a bounded number of times (each recompute costs
 * the whole batch a prefill); waiting, once its reader has read all it
 * was given, it is first in line as room frees (it preempts nobody), so
 * that fresher ones do not starve it (the QoE share favours the fresh:
 * an old stream's stall weighs little against its whole).
 * Running losers are preempted, the
 * lowest first, at most cap of them (a share of those running, at least
 * one): the rest stay; none when no waiting one wins (nobody would take
 * their room).
 */

#ifndef _FG_SCHED_ANDES_H_INCLUDED_
#define _FG_SCHED_ANDES_H_INCLUDED_


#include <stdint.h>


/* the defaults the engine and the simulator share (the authors' cap) */
#define FG_ANDES_TTFT     1.0       /* s, a request without a target */
#define FG_ANDES_SPEED    5.0       /* tokens/s, one without a speed */
#define FG_ANDES_CAP      0.3       /* preemptions, a share of running */
#define FG_ANDES_MAX_PREEMPT  1     /* preemptions of one sequence */
#define FG_ANDES_HORIZON  2.0       /* s the estimate looks ahead */


typedef struct {
    void            *seq;           /* the batcher's */
    double           dry;           /* s: the reader wants its next token */
    double           first;         /* s: its first token was due */
    double           speed;         /* tokens a second */
    double           ready;         /* s: served, its first token */
    double           recompute;     /* s of prefill it would redo (0: none) */
    uint32_t         blocks;        /* KV blocks it holds or would take */
    uint64_t         order;         /* age: the lower, the older */
    unsigned         running:1;
    unsigned         pinned:1;      /* preempted as often as it may be,
                                       and running or its reader dry */
    unsigned         keep:1;        /* out: served */
    unsigned         preempt:1;     /* out: running, preempted */
    double           value;         /* out */
    double           prio;          /* out: value per block */
} fg_andes_cand_t;


typedef struct {
    double           now;
    double           horizon;       /* s */
    double           step_s;        /* a decode step */
    double           cap;           /* preemptions, a share of running */
    uint32_t         pool;          /* blocks the batch may hold */
    uint32_t         seats;         /* sequences a step */
} fg_andes_conf_t;


/*
 * Whether a candidate is pinned (above): preempted as often as it may
 * be, and running or its reader dry by now.  The engine and the
 * simulator both ask here.
 */
static inline unsigned
fg_andes_pinned(uint32_t preempted, uint32_t max, unsigned running,
    double dry, double now)
{
    return preempted >= max && (running || dry <= now);
}


/* the QoE gained by serving c over the horizon: the delay area avoided,
 * as a share of the reading expected by the horizon's end */
double fg_andes_gain(const fg_andes_conf_t *cf, const fg_andes_cand_t *c);

/*
 * Decides: sets value, prio, keep and preempt of c[0 .. n), and sorts
 * order[0 .. n) (pointers into c) by priority, the best first.  Returns
 * the number of running candidates marked preempt (<= the cap).
 */
uint32_t fg_andes_decide(const fg_andes_conf_t *cf, fg_andes_cand_t *c,
    uint32_t n, fg_andes_cand_t **order);


#endif /* _FG_SCHED_ANDES_H_INCLUDED_ */
