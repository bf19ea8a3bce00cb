
/*
 * fairgate: the policy core.
 *
 * Clients with waiting requests sit in one indexed min-heap.  The heap's
 * key is what the policy serves first: the client's virtual counter for
 * lcf and the vtc family, nothing for fcfs and rpm; ties go to the client
 * whose oldest waiting request arrived first, which also makes fcfs a
 * global arrival order.  A dispatch decision is thus O(1) to find and
 * O(log n) to commit, whatever the number of backlogged clients.
 *
 * wsc keeps a second heap, of the clients with waiting continuations
 * (requests of interactions under way, kept in a FIFO of their own), keyed
 * by the same counter; it is served first when not empty, so wsc's choice
 * is O(1) and its commit O(log n) too.
 *
 * lpm and dlpm choose among several waiting requests by what engines hold
 * in their prefix caches; they, the deficit and the routes among several
 * engines are in fg_sched_prefix.c.  dlpm's heap key is the refill round
 * from which a client's deficit is positive, so that the clients allowed
 * to admit are the heap's top.
 */


#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fg_sched_int.h"


static const char  *fg_sched_policy_names[] = {
    "fcfs", "rpm", "lcf", "vtc", "vtc-predict", "vtc-oracle", "wsc", "lpm",
    "dlpm"
};


#define fg_sched_cont_client_of(n)                                            \
    ((fg_client_t *) ((char *) (n) - offsetof(fg_client_t, cont_heap)))

/* wsc keeps continuations apart; other policies ignore the flag */
#define fg_sched_in_cont(s, r)  (fg_sched_is_wsc(s) && (r)->continues)


/* c's oldest waiting request, in either FIFO */
static fg_request_t *
fg_sched_oldest(fg_client_t *c)
{
    fg_request_t  *w, *k;

    w = (c->waiting.next != &c->waiting)
        ? fg_sched_request_of(c->waiting.next) : NULL;
    k = (c->cont.next != &c->cont) ? fg_sched_request_of(c->cont.next) : NULL;

    if (w == NULL || (k != NULL && k->seq < w->seq)) {
        return k;
    }

    return w;
}


void
fg_sched_place(fg_sched_t *s, fg_client_t *c)
{
    double         key;
    fg_request_t  *head;

    /* c has waiting requests; (re)position it by its key and oldest one */
    head = fg_sched_oldest(c);
    key = fg_sched_key(s, c);

    if (c->heap.index == FG_HEAP_NONE) {
        /* cannot fail: the heap holds max_clients and clients are fewer */
        (void) fg_heap_insert(&s->heap, &c->heap, key, head->seq);

    } else {
        fg_heap_update(&s->heap, &c->heap, key, head->seq);
    }

    if (c->n_cont == 0) {
        if (c->cont_heap.index != FG_HEAP_NONE) {
            fg_heap_remove(&s->cont, &c->cont_heap);
        }

        return;
    }

    head = fg_sched_request_of(c->cont.next);

    if (c->cont_heap.index == FG_HEAP_NONE) {
        (void) fg_heap_insert(&s->cont, &c->cont_heap, key, head->seq);

    } else {
        fg_heap_update(&s->cont, &c->cont_heap, key, head->seq);
    }
}


/* c's waiting queue lost a request: reposition c, or let it leave */
static void
fg_sched_dequeued(fg_sched_t *s, fg_client_t *c, fg_request_t *r)
{
    c->n_waiting--;
    s->st.waiting--;

    if (fg_sched_in_cont(s, r)) {
        c->n_cont--;
    }

    if (c->n_waiting > 0) {
        fg_sched_place(s, c);
        return;
    }

    fg_heap_remove(&s->heap, &c->heap);

    if (c->cont_heap.index != FG_HEAP_NONE) {
        fg_heap_remove(&s->cont, &c->cont_heap);
    }

    s->last_left = c;
}


/*
 * What a request costs: the policy's cost function, or for wsc
 * E * (alpha*in + beta*sys + gamma*out) / w_aj, E / w_aj fixed at admission
 * so that a learnt profile does not reprice requests under way.  lpm and
 * dlpm charge the input the engine had not cached: h(in - cached, 0) at
 * admission, then h(in, t) - h(in, t - 1) per token as the others (the
 * context decoded over is the whole input), h(in, out) - w_p * cached in
 * all.
 */
static inline uint32_t
fg_sched_cached_in(fg_sched_t *s, fg_request_t *r, uint32_t in)
{
    if (!fg_sched_by_prefix(s)) {
        return 0;
    }

    return r->cached_tokens < in ? r->cached_tokens : in;
}


static double
fg_sched_cost_in(fg_sched_t *s, fg_request_t *r)
{
    if (fg_sched_is_wsc(s)) {
        return r->wsc_scale * (s->conf.wsc_alpha * r->input_tokens
                               + s->conf.wsc_beta * r->system_tokens);
    }

    return fg_cost_input(&s->conf.cost, r->input_tokens
                                        - fg_sched_cached_in(s, r,
                                                             r->input_tokens));
}


static double
fg_sched_cost_out(fg_sched_t *s, fg_request_t *r, uint32_t from, uint32_t to)
{
    if (fg_sched_is_wsc(s)) {
        return r->wsc_scale * s->conf.wsc_gamma * ((double) to - from);
    }

    return fg_cost_output(&s->conf.cost, r->input_tokens, from, to);
}


static double
fg_sched_cost_eval(fg_sched_t *s, fg_request_t *r, uint32_t in, uint32_t out)
{
    if (fg_sched_is_wsc(s)) {
        return r->wsc_scale * (s->conf.wsc_alpha * in
                               + s->conf.wsc_beta * r->system_tokens
                               + s->conf.wsc_gamma * out);
    }

    return fg_cost_eval(&s->conf.cost, in, out)
           - s->conf.cost.in * fg_sched_cached_in(s, r, in);
}


/*
 * What r's in and out tokens are charged: h(in, max(out, prepaid)), the
 * prepaid output charged at admission whatever came of it.
 */
static double
fg_sched_cost_charged(fg_sched_t *s, fg_request_t *r, uint32_t in,
    uint32_t out)
{
    return fg_sched_cost_eval(s, r, in, out > r->prepaid_output
                                        ? out : r->prepaid_output);
}


/* c's counter (and dlpm's deficit) move by cost: c moves in the heap */
static void
fg_sched_counted(fg_sched_t *s, fg_client_t *c, double cost)
{
    c->counter += cost / c->weight;

    if (fg_sched_is_dlpm(s)) {
        fg_sched_deficit_charge(s, c, cost / c->weight);

    } else if (!fg_sched_by_counter(s)) {
        return;
    }

    if (c->heap.index != FG_HEAP_NONE) {
        fg_sched_place(s, c);
    }
}


static void
fg_sched_add(fg_sched_t *s, fg_client_t *c, double cost)
{
    c->service += cost;
    fg_sched_counted(s, c, cost);
}


void
fg_sched_conf_init(fg_sched_conf_t *conf, uint32_t max_clients)
{
    memset(conf, 0, sizeof(fg_sched_conf_t));

    conf->policy = FG_POLICY_VTC;
    fg_cost_linear(&conf->cost, 1.0, 2.0);
    conf->max_clients = max_clients;
    conf->rpm_window = 60.0;
    conf->wsc_alpha = 1.0;
    conf->wsc_beta = 2.0;
    conf->wsc_gamma = 1.0;
    conf->quantum = 2048.0;
    conf->window = 128;
    conf->route = FG_ROUTE_PREFIX;
    conf->order = FG_ORDER_ARRIVAL;
    conf->qoe_horizon = 5.0;
}


const char *
fg_sched_conf_error(const fg_sched_conf_t *conf)
{
    if ((unsigned) conf->policy > FG_POLICY_DLPM) {
        return "unknown policy";
    }

    if (conf->max_clients == 0 || conf->max_clients >= FG_HEAP_NONE / 2) {
        return "max_clients out of range";
    }

    if (conf->policy == FG_POLICY_RPM && conf->rpm_limit == 0) {
        return "policy rpm needs a positive limit";
    }

    if (!(conf->rpm_window > 0.0 && conf->rpm_window < 1e9)) {
        return "rpm window out of range";
    }

    if (!(conf->cost.in >= 0.0 && conf->cost.out > 0.0
          && conf->cost.in_out >= 0.0 && conf->cost.out2 >= 0.0
          && conf->cost.base >= 0.0))
    {
        /* output must cost something, or vtc stops counting service */
        return "cost coefficients out of range";
    }

    if (!(conf->wsc_alpha >= 0.0 && conf->wsc_alpha < 1e9
          && conf->wsc_beta >= 0.0 && conf->wsc_beta < 1e9
          && conf->wsc_gamma > 0.0 && conf->wsc_gamma < 1e9))
    {
        return "wsc token weights out of range";
    }

    if (!(conf->quantum > 0.0 && conf->quantum < 1e12)) {
        return "quantum out of range";
    }

    if (conf->window == 0 || conf->window > FG_SCHED_MAX_WINDOW) {
        return "window out of range";
    }

    if ((unsigned) conf->route > FG_ROUTE_ROUND_ROBIN) {
        return "unknown route";
    }

    if ((unsigned) conf->order > FG_ORDER_QOE) {
        return "unknown order";
    }

    if (conf->order == FG_ORDER_QOE && conf->policy >= FG_POLICY_LPM) {
        /* they choose by cached prefix among the oldest: no room for it */
        return "order qoe does not work with policies lpm and dlpm";
    }

    if (!(conf->qoe_horizon > 0.0 && conf->qoe_horizon < 1e6)) {
        return "qoe horizon out of range";
    }

    return NULL;
}


int
fg_sched_policy_parse(fg_policy_e *policy, const char *name)
{
    int  i;

    i = fg_sched_name_index(fg_sched_policy_names,
                            FG_SCHED_NAMES(fg_sched_policy_names), name);
    if (i < 0) {
        return -1;
    }

    *policy = (fg_policy_e) i;

    return 0;
}


const char *
fg_sched_policy_name(fg_policy_e policy)
{
    return fg_sched_name_of(fg_sched_policy_names,
                            FG_SCHED_NAMES(fg_sched_policy_names), policy);
}


static void *
fg_sched_heap_alloc(void *ctx, size_t size)
{
    (void) ctx;
    return malloc(size);
}


static void
fg_sched_heap_free(void *ctx, void *p)
{
    (void) ctx;
    free(p);
}


const fg_allocator_t  fg_sched_heap = {
    fg_sched_heap_alloc, fg_sched_heap_free, NULL
};


fg_sched_t *
fg_sched_create(const fg_sched_conf_t *conf, const fg_allocator_t *allocator)
{
    size_t       heaps;
    fg_sched_t  *s;

    if (fg_sched_conf_error(conf) != NULL) {
        return NULL;
    }

    /*
     * Room for wsc's second heap and lpm's and dlpm's scratch whatever the
     * policy: one layout for all, at 24 bytes a client and 32 a window's
     * entry.
     */
    heaps = 2 * (size_t) conf->max_clients * sizeof(fg_heap_entry_t);

    s = allocator->alloc(allocator->ctx, sizeof(fg_sched_t) + heaps
                                         + fg_sched_scratch_size(conf));
    if (s == NULL) {
        return NULL;
    }

    memset(s, 0, sizeof(fg_sched_t));

    s->conf = *conf;
    fg_heap_init(&s->heap, s->entries, conf->max_clients);
    fg_heap_init(&s->cont, s->entries + conf->max_clients,
                 conf->max_clients);
    fg_sched_scratch_init(s, (char *) s->entries + heaps);

    return s;
}


void
fg_sched_destroy(fg_sched_t *s, const fg_allocator_t *allocator)
{
    allocator->free(allocator->ctx, s);
}


const fg_sched_conf_t *
fg_sched_conf(fg_sched_t *s)
{
    return &s->conf;
}


int
fg_client_init(fg_sched_t *s, fg_client_t *c, uint64_t id, double weight)
{
    if (s->clients >= s->conf.max_clients
        || !(weight > 0.0 && weight < 1e9))
    {
        return FG_ERROR;
    }

    memset(c, 0, sizeof(fg_client_t));

    c->waiting.prev = &c->waiting;
    c->waiting.next = &c->waiting;
    c->heap.index = FG_HEAP_NONE;
    c->cont.prev = &c->cont;
    c->cont.next = &c->cont;
    c->cont_heap.index = FG_HEAP_NONE;
    c->id = id;
    c->weight = weight;
    c->priority = 1.0;
    fg_window_init(&c->recent, s->conf.rpm_window);
    fg_sched_deficit_init(s, c);

    s->clients++;

    return FG_OK;
}


int
fg_client_release(fg_sched_t *s, fg_client_t *c)
{
    if (c->n_waiting || c->n_running) {
        return FG_BUSY;
    }

    if (s->last_left == c) {
        s->last_left_counter = c->counter;
        s->last_left = NULL;
    }

    s->clients--;

    return FG_OK;
}


/* a client's weight or priority: above 0, below 1e9 */
static int
fg_client_set(double *field, double value)
{
    if (!(value > 0.0 && value < 1e9)) {
        return FG_ERROR;
    }

    *field = value;

    return FG_OK;
}


int
fg_client_set_weight(fg_sched_t *s, fg_client_t *c, double weight)
{
    (void) s;

    return fg_client_set(&c->weight, weight);
}


int
fg_client_set_priority(fg_sched_t *s, fg_client_t *c, double priority)
{
    (void) s;

    return fg_client_set(&c->priority, priority);
}


void
fg_app_init(fg_app_t *app, uint64_t id, unsigned learn)
{
    memset(app, 0, sizeof(fg_app_t));

    app->id = id;
    app->learn = learn ? 1 : 0;
}


int
fg_app_set_stage(fg_app_t *app, uint32_t stage, double in, double sys,
    double out)
{
    uint32_t  i;

    if (stage >= FG_APP_STAGES
        || !(in >= 0.0 && in < 1e9 && sys >= 0.0 && sys < 1e9
             && out >= 0.0 && out < 1e9))
    {
        return FG_ERROR;
    }

    /* stages skipped take this one's lengths until told otherwise */
    for (i = app->n_stages; i <= stage; i++) {
        app->stage[i].in = in;
        app->stage[i].sys = sys;
        app->stage[i].out = out;
    }

    app->stage[stage].in = in;
    app->stage[stage].sys = sys;
    app->stage[stage].out = out;

    if (stage >= app->n_stages) {
        app->n_stages = stage + 1;
    }

    return FG_OK;
}


double
fg_app_weight(fg_sched_t *s, fg_app_t *app, uint32_t stage)
{
    double           w;
    fg_app_stage_t  *st;

    if (app == NULL || app->n_stages == 0) {
        return 1.0;
    }

    st = &app->stage[stage < app->n_stages ? stage : app->n_stages - 1];

    w = s->conf.wsc_alpha * st->in + s->conf.wsc_beta * st->sys
        + s->conf.wsc_gamma * st->out;

    /* a profile of (nearly) empty requests must not make service free */
    return w < 1.0 ? 1.0 : w;
}


/* wsc: learns a stage's lengths from a finished request */
static void
fg_app_learn(fg_app_t *app, fg_request_t *r)
{
    uint32_t         stage;
    fg_app_stage_t  *st;

    stage = r->stage < FG_APP_STAGES ? r->stage : FG_APP_STAGES - 1;

    if (stage >= app->n_stages || app->stage[stage].samples == 0) {
        (void) fg_app_set_stage(app, stage, r->input_tokens,
                                r->system_tokens, r->output_tokens);
        app->stage[stage].samples = 1;
        return;
    }

    st = &app->stage[stage];

    /* the same 1/5 moving average as vtc-predict's */
    st->in = (4.0 * st->in + r->input_tokens) / 5.0;
    st->sys = (4.0 * st->sys + r->system_tokens) / 5.0;
    st->out = (4.0 * st->out + r->output_tokens) / 5.0;
    st->samples++;
}


void
fg_request_init(fg_request_t *r, uint32_t input_tokens,
    uint32_t max_output_tokens)
{
    memset(r, 0, sizeof(fg_request_t));

    r->input_tokens = input_tokens;
    r->max_output_tokens = max_output_tokens;
    r->hint_output = -1;
}


int
fg_sched_enqueue(fg_sched_t *s, fg_client_t *c, fg_request_t *r, double now)
{
    double      floor;
    fg_link_t  *q;

    if (r->state != FG_REQ_NEW) {
        return FG_ERROR;
    }

    if (s->conf.policy == FG_POLICY_RPM) {
        /* count only what is let in, or a flood would lock out for good */
        if (fg_window_sum(&c->recent, now) >= s->conf.rpm_limit) {
            c->rejected++;
            s->st.rejected++;
            return FG_REJECTED;
        }

        fg_window_add(&c->recent, now, 1);
    }

    r->client = c;
    r->seq = s->next_seq++;
    r->arrival = now;
    s->now = now;
    r->state = FG_REQ_QUEUED;

    if (c->n_waiting == 0 && fg_sched_lifts(s)) {
        /*
         * The lift: credit unused while away is not carried over, so a
         * returning client starts level with the least-served waiting one
         * (or with the last to leave when none waits), not below it.
         */
        if (s->heap.n > 0) {
            floor = fg_heap_top(&s->heap)->key;

        } else if (s->last_left != NULL) {
            floor = s->last_left->counter;

        } else {
            floor = s->last_left_counter;
        }

        if (c->counter < floor) {
            c->counter = floor;
        }
    }

    q = &c->waiting;

    if (fg_sched_in_cont(s, r)) {
        q = &c->cont;
        c->n_cont++;
    }

    r->link.prev = q->prev;
    r->link.next = q;
    q->prev->next = &r->link;
    q->prev = &r->link;

    c->n_waiting++;
    c->enqueued++;
    s->st.waiting++;
    s->st.enqueued++;

    if (c->n_waiting == 1 || (q == &c->cont && c->n_cont == 1)) {
        fg_sched_place(s, c);
    }

    return FG_OK;
}


void
fg_sched_set_clock(fg_sched_t *s, double now)
{
    s->now = now;
}


fg_request_t *
fg_sched_peek(fg_sched_t *s)
{
    fg_client_t      *c;
    fg_request_t     *r;
    fg_heap_entry_t  *top;

    if (fg_sched_by_prefix(s)) {
        return fg_sched_prefix_peek(s);
    }

    /* wsc: continuations first, the least-served user's oldest one */
    top = fg_heap_top(&s->cont);
    if (top != NULL) {
        c = fg_sched_cont_client_of(top->node);
        return fg_sched_request_of(c->cont.next);
    }

    top = fg_heap_top(&s->heap);
    if (top == NULL) {
        return NULL;
    }

    if (s->conf.order == FG_ORDER_QOE && !fg_sched_by_counter(s)) {
        return fg_sched_qoe_peek(s);
    }

    c = fg_sched_client_of(top->node);

    if (s->conf.order == FG_ORDER_QOE) {
        r = fg_sched_qoe_first(s, c);

        if (r != NULL) {
            return r;
        }
    }

    return fg_sched_oldest(c);
}


void
fg_sched_admit(fg_sched_t *s, fg_request_t *r)
{
    double        cost;
    uint32_t      prepaid;
    fg_client_t  *c;

    if (r->state != FG_REQ_QUEUED) {
        return;
    }

    c = r->client;

    r->link.prev->next = r->link.next;
    r->link.next->prev = r->link.prev;
    r->state = FG_REQ_RUNNING;

    switch (s->conf.policy) {

    case FG_POLICY_VTC_ORACLE:
        prepaid = r->oracle_output;
        break;

    case FG_POLICY_VTC_PREDICT:
        /*
         * A caller's hint is taken as given, even above max_output_tokens:
         * an estimate may err either way and finishing refunds the excess
         * (capping it would bias an unbiased predictor low).  The history
         * knows nothing of this request, so it is capped by its maximum.
         */
        if (r->hint_output >= 0) {
            prepaid = (uint32_t) r->hint_output;

        } else if (c->has_prediction) {
            prepaid = (uint32_t) lround(c->predicted_output);

            if (prepaid > r->max_output_tokens) {
                prepaid = r->max_output_tokens;
            }

        } else {
            prepaid = 0;
        }

        break;

    case FG_POLICY_WSC:
        r->wsc_scale = c->priority / fg_app_weight(s, r->app, r->stage);
        prepaid = 0;
        break;

    default:
        prepaid = 0;
    }

    r->prepaid_output = prepaid;

    c->n_running++;
    c->admitted++;
    c->input_tokens += r->input_tokens;
    c->cached_tokens += r->cached_tokens;
    s->st.running++;
    s->st.admitted++;

    /* counter first, then the heap moves c once for both changes */
    cost = fg_sched_cost_in(s, r);
    if (prepaid) {
        cost += fg_sched_cost_out(s, r, 0, prepaid);
    }

    c->counter += cost / c->weight;
    c->service += cost;

    if (fg_sched_is_dlpm(s)) {
        /* the refill fg_sched_dispatch_to() makes before choosing r */
        fg_sched_refill(s);
        fg_sched_deficit_charge(s, c, cost / c->weight);
    }

    fg_sched_dequeued(s, c, r);
}


void
fg_sched_charge(fg_sched_t *s, fg_request_t *r, uint32_t n)
{
    uint32_t  from, to;

    if (r->state != FG_REQ_RUNNING || n == 0) {
        return;
    }

    from = r->output_tokens;
    to = from + n;
    r->output_tokens = to;
    r->client->output_tokens += n;

    /* tokens up to the prepaid prediction were charged at admission */
    if (to <= r->prepaid_output) {
        return;
    }

    if (from < r->prepaid_output) {
        from = r->prepaid_output;
    }

    fg_sched_add(s, r->client, fg_sched_cost_out(s, r, from, to));
}


void
fg_sched_correct(fg_sched_t *s, fg_request_t *r, uint32_t input_tokens,
    uint32_t output_tokens)
{
    double        was, now;
    fg_client_t  *c;

    if (r->state != FG_REQ_RUNNING) {
        return;
    }

    c = r->client;

    /*
     * What a request has been charged so far is h(in, max(out, prepaid)):
     * h(in, 0) at admission, the prepaid output with it, then each token
     * beyond the prepaid ones.
     */

    was = fg_sched_cost_charged(s, r, r->input_tokens, r->output_tokens);
    now = fg_sched_cost_charged(s, r, input_tokens, output_tokens);

    c->input_tokens = c->input_tokens - r->input_tokens + input_tokens;
    c->output_tokens = c->output_tokens - r->output_tokens + output_tokens;
    r->input_tokens = input_tokens;
    r->output_tokens = output_tokens;

    fg_sched_add(s, c, now - was);
}


void
fg_sched_cached(fg_sched_t *s, fg_request_t *r, uint32_t cached_tokens)
{
    double        was, now;
    fg_client_t  *c;

    if (r->state != FG_REQ_RUNNING) {
        return;
    }

    c = r->client;

    /* what was charged so far is h(in, out) - w_p * cached (see above) */
    was = fg_sched_cost_charged(s, r, r->input_tokens, r->output_tokens);

    c->cached_tokens = c->cached_tokens - r->cached_tokens + cached_tokens;
    r->cached_tokens = cached_tokens;

    if (fg_sched_by_prefix(s)) {
        now = fg_sched_cost_charged(s, r, r->input_tokens, r->output_tokens);
        fg_sched_add(s, c, now - was);
    }
}


static void
fg_sched_end(fg_sched_t *s, fg_request_t *r)
{
    fg_client_t  *c;

    c = r->client;

    if (r->output_tokens < r->prepaid_output) {
        fg_sched_add(s, c, -fg_sched_cost_out(s, r, r->output_tokens,
                                              r->prepaid_output));
    }

    r->state = FG_REQ_DONE;
    c->n_running--;
    s->st.running--;
}


void
fg_sched_finish(fg_sched_t *s, fg_request_t *r)
{
    fg_client_t  *c;

    if (r->state != FG_REQ_RUNNING) {
        return;
    }

    c = r->client;

    fg_sched_end(s, r);

    c->finished++;
    s->st.finished++;

    /* learnt always, so a switch to vtc-predict starts informed */
    if (c->has_prediction) {
        c->predicted_output = (4.0 * c->predicted_output + r->output_tokens)
                              / 5.0;

    } else {
        c->predicted_output = r->output_tokens;
        c->has_prediction = 1;
    }

    if (fg_sched_is_wsc(s) && r->app != NULL && r->app->learn) {
        fg_app_learn(r->app, r);
    }
}


void
fg_sched_cancel(fg_sched_t *s, fg_request_t *r)
{
    fg_client_t  *c;

    c = r->client;

    switch (r->state) {

    case FG_REQ_QUEUED:
        r->link.prev->next = r->link.next;
        r->link.next->prev = r->link.prev;
        r->state = FG_REQ_DONE;
        fg_sched_dequeued(s, c, r);
        break;

    case FG_REQ_RUNNING:
        fg_sched_end(s, r);
        break;

    default:
        return;
    }

    c->cancelled++;
    s->st.cancelled++;
}


double
fg_sched_min_counter(fg_sched_t *s)
{
    double       min;
    uint32_t     i;
    fg_client_t  *c;

    if (s->heap.n == 0) {
        return -1;
    }

    if (fg_sched_by_counter(s)) {
        return s->heap.entries[0].key;
    }

    /* fcfs orders by arrival: the counters need a scan (read-out only) */
    min = HUGE_VAL;

    for (i = 0; i < s->heap.n; i++) {
        c = fg_sched_client_of(s->heap.entries[i].node);
        if (c->counter < min) {
            min = c->counter;
        }
    }

    return min;
}


void
fg_sched_stats(fg_sched_t *s, fg_sched_stats_t *stats)
{
    *stats = s->st;
    stats->clients = s->clients;
    stats->backlogged = s->heap.n;
}


void
fg_client_add_remote(fg_sched_t *s, fg_client_t *c, double cost)
{
    if (!(cost > 0)) {
        return;
    }

    fg_sched_counted(s, c, cost);
}
