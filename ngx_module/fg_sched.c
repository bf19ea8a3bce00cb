
/*
 * fairgate: the policy core.
 *
 * Clients with waiting requests sit in one indexed min-heap.  The heap's
 * key is what the policy serves first: the client's virtual counter for
 * lcf and the vtc family, nothing for fcfs and rpm; ties go to the client
 * whose oldest waiting request arrived first, which also makes fcfs a
 * global arrival order.  A dispatch decision is thus O(1) to find and
 * O(log n) to commit, whatever the number of backlogged clients.
 */


#include <math.h>
#include <string.h>

#include "fg_sched.h"


struct fg_sched_s {
    fg_sched_conf_t    conf;
    fg_heap_t          heap;

    uint32_t           clients;
    uint64_t           next_seq;

    /* vtc's lift when no client waits: the last client that left */
    fg_client_t       *last_left;
    double             last_left_counter;

    uint64_t           waiting;
    uint64_t           running;
    uint64_t           enqueued;
    uint64_t           rejected;
    uint64_t           admitted;
    uint64_t           finished;
    uint64_t           cancelled;

    fg_heap_entry_t    entries[];
};


static const char  *fg_sched_policy_names[] = {
    "fcfs", "rpm", "lcf", "vtc", "vtc-predict", "vtc-oracle"
};


#define fg_sched_client_of(n)                                                 \
    ((fg_client_t *) ((char *) (n) - offsetof(fg_client_t, heap)))

#define fg_sched_request_of(l)                                                \
    ((fg_request_t *) ((char *) (l) - offsetof(fg_request_t, link)))


static inline int
fg_sched_by_counter(fg_sched_t *s)
{
    return s->conf.policy >= FG_POLICY_LCF;
}


static inline int
fg_sched_lifts(fg_sched_t *s)
{
    return s->conf.policy >= FG_POLICY_VTC;
}


static void
fg_sched_place(fg_sched_t *s, fg_client_t *c)
{
    double         key;
    fg_request_t  *head;

    /* c has waiting requests; (re)position it by its key and oldest one */
    head = fg_sched_request_of(c->waiting.next);
    key = fg_sched_by_counter(s) ? c->counter : 0.0;

    if (c->heap.index == FG_HEAP_NONE) {
        /* cannot fail: the heap holds max_clients and clients are fewer */
        (void) fg_heap_insert(&s->heap, &c->heap, key, head->seq);

    } else {
        fg_heap_update(&s->heap, &c->heap, key, head->seq);
    }
}


/* c's waiting queue lost a request: reposition c, or let it leave */
static void
fg_sched_dequeued(fg_sched_t *s, fg_client_t *c)
{
    c->n_waiting--;
    s->waiting--;

    if (c->n_waiting > 0) {
        fg_sched_place(s, c);
        return;
    }

    fg_heap_remove(&s->heap, &c->heap);
    s->last_left = c;
}


static void
fg_sched_add(fg_sched_t *s, fg_client_t *c, double cost)
{
    c->counter += cost / c->weight;
    c->service += cost;

    if (c->heap.index != FG_HEAP_NONE && fg_sched_by_counter(s)) {
        fg_sched_place(s, c);
    }
}


void
fg_sched_conf_init(fg_sched_conf_t *conf, uint32_t max_clients)
{
    memset(conf, 0, sizeof(fg_sched_conf_t));

    conf->policy = FG_POLICY_VTC;
    fg_cost_linear(&conf->cost, 1.0, 2.0);
    conf->max_clients = max_clients;
    conf->rpm_window = 60.0;
}


const char *
fg_sched_conf_error(const fg_sched_conf_t *conf)
{
    if ((unsigned) conf->policy > FG_POLICY_VTC_ORACLE) {
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

    return NULL;
}


int
fg_sched_policy_parse(fg_policy_e *policy, const char *name)
{
    size_t  i;

    for (i = 0; i < sizeof(fg_sched_policy_names) / sizeof(char *); i++) {
        if (strcmp(name, fg_sched_policy_names[i]) == 0) {
            *policy = (fg_policy_e) i;
            return 0;
        }
    }

    return -1;
}


const char *
fg_sched_policy_name(fg_policy_e policy)
{
    if ((unsigned) policy > FG_POLICY_VTC_ORACLE) {
        return "unknown";
    }

    return fg_sched_policy_names[policy];
}


fg_sched_t *
fg_sched_create(const fg_sched_conf_t *conf, const fg_allocator_t *allocator)
{
    fg_sched_t  *s;

    if (fg_sched_conf_error(conf) != NULL) {
        return NULL;
    }

    s = allocator->alloc(allocator->ctx, sizeof(fg_sched_t)
                         + conf->max_clients * sizeof(fg_heap_entry_t));
    if (s == NULL) {
        return NULL;
    }

    memset(s, 0, sizeof(fg_sched_t));

    s->conf = *conf;
    fg_heap_init(&s->heap, s->entries, conf->max_clients);

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
    c->id = id;
    c->weight = weight;
    fg_window_init(&c->recent, s->conf.rpm_window);

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


int
fg_client_set_weight(fg_sched_t *s, fg_client_t *c, double weight)
{
    (void) s;

    if (!(weight > 0.0 && weight < 1e9)) {
        return FG_ERROR;
    }

    c->weight = weight;

    return FG_OK;
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
    double  floor;

    if (r->state != FG_REQ_NEW) {
        return FG_ERROR;
    }

    if (s->conf.policy == FG_POLICY_RPM) {
        /* count only what is let in, or a flood would lock out for good */
        if (fg_window_sum(&c->recent, now) >= s->conf.rpm_limit) {
            c->rejected++;
            s->rejected++;
            return FG_REJECTED;
        }

        fg_window_add(&c->recent, now, 1);
    }

    r->client = c;
    r->seq = s->next_seq++;
    r->arrival = now;
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

    r->link.prev = c->waiting.prev;
    r->link.next = &c->waiting;
    c->waiting.prev->next = &r->link;
    c->waiting.prev = &r->link;

    c->n_waiting++;
    c->enqueued++;
    s->waiting++;
    s->enqueued++;

    if (c->n_waiting == 1) {
        fg_sched_place(s, c);
    }

    return FG_OK;
}


fg_request_t *
fg_sched_peek(fg_sched_t *s)
{
    fg_client_t      *c;
    fg_heap_entry_t  *top;

    top = fg_heap_top(&s->heap);
    if (top == NULL) {
        return NULL;
    }

    c = fg_sched_client_of(top->node);

    return fg_sched_request_of(c->waiting.next);
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

    default:
        prepaid = 0;
    }

    r->prepaid_output = prepaid;

    c->n_running++;
    c->admitted++;
    c->input_tokens += r->input_tokens;
    s->running++;
    s->admitted++;

    /* counter first, then the heap moves c once for both changes */
    cost = fg_cost_input(&s->conf.cost, r->input_tokens);
    if (prepaid) {
        cost += fg_cost_output(&s->conf.cost, r->input_tokens, 0, prepaid);
    }

    c->counter += cost / c->weight;
    c->service += cost;

    fg_sched_dequeued(s, c);
}


fg_request_t *
fg_sched_dispatch(fg_sched_t *s, fg_sched_fit_pt fit, void *data)
{
    fg_request_t  *r;

    r = fg_sched_peek(s);
    if (r == NULL || (fit != NULL && !fit(r, data))) {
        return NULL;
    }

    fg_sched_admit(s, r);

    return r;
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

    fg_sched_add(s, r->client,
                 fg_cost_output(&s->conf.cost, r->input_tokens, from, to));
}


void
fg_sched_correct(fg_sched_t *s, fg_request_t *r, uint32_t input_tokens,
    uint32_t output_tokens)
{
    double        was, now;
    uint32_t      charged;
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

    charged = r->output_tokens > r->prepaid_output ? r->output_tokens
                                                   : r->prepaid_output;
    was = fg_cost_eval(&s->conf.cost, r->input_tokens, charged);

    charged = output_tokens > r->prepaid_output ? output_tokens
                                                : r->prepaid_output;
    now = fg_cost_eval(&s->conf.cost, input_tokens, charged);

    c->input_tokens = c->input_tokens - r->input_tokens + input_tokens;
    c->output_tokens = c->output_tokens - r->output_tokens + output_tokens;
    r->input_tokens = input_tokens;
    r->output_tokens = output_tokens;

    fg_sched_add(s, c, now - was);
}


static void
fg_sched_end(fg_sched_t *s, fg_request_t *r)
{
    fg_client_t  *c;

    c = r->client;

    if (r->output_tokens < r->prepaid_output) {
        fg_sched_add(s, c, -fg_cost_output(&s->conf.cost, r->input_tokens,
                                           r->output_tokens,
                                           r->prepaid_output));
    }

    r->state = FG_REQ_DONE;
    c->n_running--;
    s->running--;
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
    s->finished++;

    /* learnt always, so a switch to vtc-predict starts informed */
    if (c->has_prediction) {
        c->predicted_output = (4.0 * c->predicted_output + r->output_tokens)
                              / 5.0;

    } else {
        c->predicted_output = r->output_tokens;
        c->has_prediction = 1;
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
        fg_sched_dequeued(s, c);
        break;

    case FG_REQ_RUNNING:
        fg_sched_end(s, r);
        break;

    default:
        return;
    }

    c->cancelled++;
    s->cancelled++;
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
    stats->clients = s->clients;
    stats->backlogged = s->heap.n;
    stats->waiting = s->waiting;
    stats->running = s->running;
    stats->enqueued = s->enqueued;
    stats->rejected = s->rejected;
    stats->admitted = s->admitted;
    stats->finished = s->finished;
    stats->cancelled = s->cancelled;
}
