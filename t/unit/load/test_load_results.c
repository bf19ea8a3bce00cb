
/*
 * fairgate: tests of the load generator's results file: what it writes
 * reads back through the project's results reader, its own fields say
 * what was measured, requests never sent have no line.
 */


#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "fg_tap.h"
#include "fg_test_file.h"
#include "fg_load_results.h"




/* five requests of two clients, one with a weight, one with fields */
static void
make_trace(fg_sim_trace_t *tr)
{
    fg_sim_trace_init(tr);

    (void) fg_sim_trace_client(tr, "alice");
    (void) fg_sim_trace_client(tr, "b\"ob");
    tr->clients[1].weight = 2;
    tr->clients[1].has_weight = 1;

    (void) fg_sim_trace_add(tr, 0.5, 0, 100, 4, 4);
    (void) fg_sim_trace_add(tr, 1.0, 1, 200, 3, 3);
    (void) fg_sim_trace_add(tr, 1.5, 0, 300, 2, 2);
    (void) fg_sim_trace_add(tr, 2.0, 1, 400, 1, 1);
    (void) fg_sim_trace_add(tr, 9.0, 0, 500, 1, 1);

    tr->reqs[1].app = (uint32_t) fg_sim_trace_str(tr, "chat");
    tr->reqs[1].key = (uint32_t) fg_sim_trace_str(tr, "sk-secret");
    tr->reqs[1].stage = 0;
}


/* what was measured of each: served twice, rejected, failed, never sent */
static void
make_results(fg_load_result_t *res)
{
    /* ok from usage, streamed with token times */
    res[0] = (fg_load_result_t) {
        .sent = 0.2502, .first_token = 0.3, .finish = 0.6,
        .input_tokens = 107, .output_tokens = 4, .from = FG_LOAD_FROM_USAGE,
        .status = FG_SIM_OK, .http_status = 200, .stream = 1,
        .cached_tokens = 96, .engine = strdup("gpu \"1\"")
    };
    (void) fg_load_result_token(&res[0], 0.3);
    (void) fg_load_result_token(&res[0], 0.4);
    (void) fg_load_result_token(&res[0], 0.5);
    (void) fg_load_result_token(&res[0], 0.6);

    /* ok, counted, not streamed; first token before the arrival recorded */
    res[1] = (fg_load_result_t) {
        .sent = 0.51, .first_token = 0.509, .finish = 0.509,
        .input_tokens = 200, .output_tokens = 3, .from = FG_LOAD_FROM_COUNT,
        .status = FG_SIM_OK, .http_status = 200, .cached_tokens = -1
    };

    /* rejected */
    res[2] = (fg_load_result_t) {
        .sent = 0.75, .first_token = -1, .input_tokens = 300,
        .output_tokens = 2, .status = FG_SIM_REJECTED, .http_status = 429
    };
    fg_load_result_error(&res[2], "HTTP %d: %s", 429, "slow down");

    /* an error whose message needs escaping */
    res[3] = (fg_load_result_t) {
        .sent = 1.0, .first_token = -1, .input_tokens = 400,
        .output_tokens = 1, .status = FG_SIM_ERROR, .stream = 1
    };
    fg_load_result_error(&res[3], "stream: bad \"chunk\"\nhere");

    /* never sent */
    res[4].sent = -1;
}


/* the file through the project's results reader: 0, or -1 unread */
static int
check_read_back(const char *path)
{
    int                    rc;
    char                   err[512];
    fg_sim_trace_t         back;
    fg_sim_result_t       *rres;
    fg_sim_token_times_t   tt;

    fg_sim_trace_init(&back);

    rc = fg_sim_results_read_times(&back, &rres, &tt, path, err,
                                   sizeof(err));
    if (ok_rc(rc, err, "and read by the project's results reader") != 0) {
        fg_sim_trace_free(&back);
        return -1;
    }

    is_int(back.n, 4, "four lines: the request never sent has none");
    ok(rres[0].status == FG_SIM_OK && rres[1].status == FG_SIM_OK
       && rres[2].status == FG_SIM_REJECTED
       && rres[3].status == FG_SIM_ERROR, "statuses");
    ok(back.reqs[0].t == 0.2502 && rres[0].first_token == 0.3
       && rres[0].finish == 0.6 && back.reqs[0].input_tokens == 107
       && back.reqs[0].output_tokens == 4,
       "arrival is when it was sent; times and tokens as measured");
    ok(rres[1].first_token == 0.51 && rres[1].finish == 0.51,
       "first token and finish never before the arrival");
    ok(back.reqs[2].input_tokens == 300 && back.reqs[3].output_tokens == 1,
       "requests not served carry the trace's lengths");
    ok(rres[0].has_cached && rres[0].cached_tokens == 96
       && strcmp(fg_sim_trace_str_get(&back, rres[0].engine), "gpu \"1\"")
          == 0 && !rres[1].has_cached && rres[1].engine == 0,
       "cached tokens and the engine, when said");
    ok(tt.start[1] - tt.start[0] == 4 && tt.times[3] == 0.6
       && tt.start[4] == 4, "token times of the streamed one only");
    ok(back.clients[back.reqs[1].client].weight == 2
       && strcmp(back.clients[back.reqs[1].client].name, "b\"ob") == 0
       && back.reqs[1].stage == 0
       && strcmp(fg_sim_trace_str_get(&back, back.reqs[1].app), "chat")
          == 0 && back.reqs[1].key == 0,
       "weight, name, optional fields; never the key");

    free(rres);
    fg_sim_token_times_free(&tt);
    fg_sim_trace_free(&back);

    return 0;
}


/* the fields of its own: 0, or -1 when the lines are not four objects */
static int
check_own_fields(const char *path)
{
    char     line[4096];
    FILE    *fp;
    json_t  *j[4];
    size_t   i, n;

    fp = fopen(path, "r");
    n = 0;

    while (fp != NULL && n < 4 && fgets(line, sizeof(line), fp) != NULL) {
        j[n++] = json_loads(line, 0, NULL);
    }

    if (fp != NULL) {
        fclose(fp);
    }

    for (i = 0; i < n && j[i] != NULL; i++) { /* void */ }

    ok(n == 4 && i == 4, "four JSON lines");
    if (n != 4 || i != 4) {
        return -1;
    }

    ok(json_real_value(json_object_get(j[0], "scheduled")) == 0.25
       && json_real_value(json_object_get(j[3], "scheduled")) == 1.0,
       "scheduled: the trace's t times the time scale");
    ok(json_integer_value(json_object_get(j[0], "http_status")) == 200
       && json_integer_value(json_object_get(j[2], "http_status")) == 429
       && json_integer_value(json_object_get(j[3], "http_status")) == 0,
       "http_status, 0 without an answer");
    ok(strcmp(json_string_value(json_object_get(j[0], "tokens_from")),
              "usage") == 0
       && strcmp(json_string_value(json_object_get(j[1], "tokens_from")),
                 "counted") == 0
       && strcmp(json_string_value(json_object_get(j[2], "tokens_from")),
                 "trace") == 0, "tokens_from: usage, counted, trace");
    ok(json_is_true(json_object_get(j[0], "stream"))
       && json_is_false(json_object_get(j[1], "stream")),
       "stream: what was sent");
    ok(json_object_get(j[0], "error") == NULL
       && strcmp(json_string_value(json_object_get(j[2], "error")),
                 "HTTP 429: slow down") == 0
       && strcmp(json_string_value(json_object_get(j[3], "error")),
                 "stream: bad \"chunk\"\nhere") == 0,
       "error messages, escaped");
    ok(json_object_get(j[1], "token_times") == NULL
       && json_array_size(json_object_get(j[0], "token_times")) == 4,
       "token_times only where tokens were timed");

    for (i = 0; i < n; i++) {
        json_decref(j[i]);
    }

    return 0;
}


static void
test_write(void)
{
    int                rc;
    char               err[512], path[256];
    fg_sim_trace_t     tr;
    fg_load_result_t  *res;

    make_trace(&tr);

    res = calloc(tr.n, sizeof(fg_load_result_t));
    if (res == NULL) {
        return;
    }

    make_results(res);

    snprintf(path, sizeof(path), "%s/run.res", dir);

    rc = fg_load_results_write(&tr, res, 0.5, 1, path, err, sizeof(err));
    if (ok_rc(rc, err, "results written") != 0) {
        goto done;
    }

    if (check_read_back(path) != 0 || check_own_fields(path) != 0) {
        goto done;
    }

    snprintf(path, sizeof(path), "%s/no/such/dir.res", dir);
    rc = fg_load_results_write(&tr, res, 1, 0, path, err, sizeof(err));
    ok(rc != 0 && strstr(err, "no/such/dir.res: ") != NULL,
       "an unwritable path fails naming it");

done:

    fg_load_results_free(res, tr.n);
    fg_sim_trace_free(&tr);
}


/* a token at each of times[0 .. n - 1] */
static void
tokens(fg_load_result_t *res, const double *times, int n)
{
    int  i;

    for (i = 0; i < n; i++) {
        fg_qoe_token(&res->qoe, times[i]);
    }
}


/*
 * QoE: the trace's expectations, else the defaults, in run seconds; and
 * "qoe" written, 0 for a request not served.
 */
static void
test_qoe(void)
{
    char               err[512], path[256];
    fg_sim_trace_t     tr, back;
    fg_sim_result_t   *rres;
    fg_load_result_t   res[2];
    fg_qoe_expect_t    none = { 0, 0 }, speed4 = { 0, 4 };
    double             on_time[] = { 11, 11.25, 11.5 };
    double             half[] = { 1.0, 1.25, 1.5 };
    double             late[] = { 2.0, 2.25, 2.5 };

    fg_sim_trace_init(&tr);
    (void) fg_sim_trace_client(&tr, "a");
    (void) fg_sim_trace_add(&tr, 0, 0, 10, 3, 3);
    (void) fg_sim_trace_add(&tr, 0, 0, 10, 3, 3);
    memset(res, 0, sizeof(res));

    res[0].stream = 1;
    fg_load_result_expect(&res[0], &tr.reqs[0], &none, 1, 10);
    ok(!res[0].has_qoe, "no expectations, no defaults: no QoE");

    /* ideal 11, 11.25, 11.5: the default TTFT target 1 s */
    fg_load_result_expect(&res[0], &tr.reqs[0], &speed4, 1, 10);
    tokens(&res[0], on_time, 3);
    ok(res[0].has_qoe && fg_qoe_value(&res[0].qoe) == 1.0,
       "--tokens-per-s alone: on time after 1 s is QoE 1");

    /* the trace's 2 s and 2 tokens/s at time scale 0.5: 1 s, 4/s */
    tr.reqs[0].ttft_target = 2;
    tr.reqs[0].tokens_per_s = 2;
    memset(&res[0], 0, sizeof(res[0]));
    res[0].stream = 1;
    fg_load_result_expect(&res[0], &tr.reqs[0], &speed4, 0.5, 0);
    tokens(&res[0], half, 3);
    is_num(fg_qoe_value(&res[0].qoe), 1.0, 1e-12,
           "the trace's expectations, scaled to the run's clock");

    /* each 1 s late: S_delay 3, S_whole 7.5 - 3.75 */
    fg_load_result_expect(&res[0], &tr.reqs[0], &none, 0.5, 0);
    tokens(&res[0], late, 3);
    is_num(fg_qoe_value(&res[0].qoe), 0.2, 1e-12, "a second late: 0.2");

    res[1].stream = 0;
    fg_load_result_expect(&res[1], &tr.reqs[0], &speed4, 1, 0);
    ok(!res[1].has_qoe, "not streamed: no QoE");

    res[0].status = FG_SIM_OK;
    res[0].first_token = 2.0;
    res[0].finish = 2.5;
    res[1].stream = 1;
    res[1].status = FG_SIM_TIMEOUT;
    fg_load_result_expect(&res[1], &tr.reqs[1], &speed4, 1, 0);
    tokens(&res[1], half, 3);

    snprintf(path, sizeof(path), "%s/qoe.res", dir);
    fg_sim_trace_init(&back);
    rres = NULL;
    ok(fg_load_results_write(&tr, res, 1, 0, path, err, sizeof(err)) == 0
       && fg_sim_results_read(&back, &rres, path, err, sizeof(err)) == 0
       && rres[0].has_qoe && fabs(rres[0].qoe - 0.2) < 1e-6
       && rres[1].has_qoe && rres[1].qoe == 0,
       "\"qoe\" written, 0 for a request not served");

    free(rres);
    fg_sim_trace_free(&back);
    fg_sim_trace_free(&tr);
}


int
main(void)
{
    fg_test_dir_make("load_results");

    test_write();
    test_qoe();

    fg_test_dir_remove();

    return done_testing();
}
