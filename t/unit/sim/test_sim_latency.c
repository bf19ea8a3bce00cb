
/*
 * fairgate: tests of the latency metrics: Andes's QoE on the cases of its
 * figure 5 worked by hand, percentiles, per-client figures from a results
 * file, and the series for the plots.
 */


#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fg_tap.h"
#include "fg_test_file.h"
#include "fg_sim_latency.h"


static void
test_qoe(void)
{
    size_t  i;
    double  t[11];

    /* reading speed 1 token/s, target 0, arrival 0: ideal_i = i */
    for (i = 0; i < 4; i++) {
        t[i] = (double) i;
    }

    is_num(fg_sim_qoe(0, t, 4, 0, 1), 1.0, 1e-12,
           "delivered on the ideal timeline: QoE 1");

    for (i = 0; i < 4; i++) {
        t[i] = 0.0;
    }

    is_num(fg_sim_qoe(0, t, 4, 0, 1), 1.0, 1e-12,
           "delivered all at once, early: QoE 1 (no faster than reading)");

    /* figure 5(b): a 5 s wait, then reading speed; 11 tokens */
    for (i = 0; i < 11; i++) {
        t[i] = 5.0 + (double) i;
    }

    /* S_delay = 11 * 5, S_whole = 55 + sum (10 - i) = 110 */
    is_num(fg_sim_qoe(0, t, 11, 0, 1), 0.5, 1e-12,
           "a long initial delay: 1 - 55 / 110");

    /* figure 5(c): half the reading speed, 3 tokens at 0, 2, 4 */
    t[0] = 0;
    t[1] = 2;
    t[2] = 4;
    is_num(fg_sim_qoe(0, t, 3, 0, 1), 1.0 - 3.0 / 9.0, 1e-12,
           "slow streaming: 1 - 3 / 9");

    /* figure 5(d): a pause; 0, 1, then 5, 5: read at 0, 1, 5, 6 */
    t[0] = 0;
    t[1] = 1;
    t[2] = 5;
    t[3] = 5;
    is_num(fg_sim_qoe(0, t, 4, 0, 1), 1.0 - 6.0 / 18.0, 1e-12,
           "a pause in the middle: 1 - 6 / 18");

    /* the target and the arrival shift the ideal timeline */
    for (i = 0; i < 4; i++) {
        t[i] = 10.0 + 2.0 + (double) i / 4.0;
    }

    is_num(fg_sim_qoe(10, t, 4, 2, 4), 1.0, 1e-12,
           "on time against arrival 10, target 2 s, 4 tokens/s");

    t[0] = 1.0;
    is_num(fg_sim_qoe(0, t, 1, 1, 1), 1.0, 1e-12, "one token on time: 1");
    t[0] = 1.5;
    is_num(fg_sim_qoe(0, t, 1, 1, 1), 0.0, 1e-12,
           "one token late: 0 (its delay is all there is)");
    is_num(fg_sim_qoe(0, t, 0, 1, 1), 1.0, 0, "no tokens to read: 1");
}


static void
test_percentile(void)
{
    double  v[10];
    size_t  i;

    for (i = 0; i < 10; i++) {
        v[i] = (double) (i + 1);
    }

    ok(fg_sim_percentile(v, 10, 0.5) == 5 && fg_sim_percentile(v, 10, 0.9)
       == 9 && fg_sim_percentile(v, 10, 0.99) == 10
       && fg_sim_percentile(v, 10, 0) == 1 && fg_sim_percentile(v, 10, 1)
       == 10, "nearest rank of 1..10: p50 5, p90 9, p99 10");
    ok(fg_sim_percentile(v, 1, 0.99) == 1 && fg_sim_percentile(v, 0, 0.5)
       == 0, "one value is every percentile; none gives 0");
}


/* the figures of the results test_compute() reads */
static void
check_figures(const fg_sim_latency_t *lat, const fg_sim_trace_t *tr,
    const fg_sim_latency_conf_t *conf)
{
    char                          *json;
    const fg_sim_latency_stats_t  *a, *b;

    a = &lat->clients[0];
    b = &lat->clients[1];

    ok(a->sent == 4 && a->count.served == 3 && a->count.rejected == 1
       && b->count.errors == 1 && lat->all.sent == 6
       && lat->all.count.served == 4,
       "counts by status, per client and over all");
    ok(a->ttft_mean == 2 && a->ttft_p50 == 2 && a->ttft_p90 == 3
       && a->ttft_p99 == 3 && a->e2e_p50 == 4 && a->e2e_p99 == 6
       && a->e2e_mean == 4, "a: TTFT 1, 2, 3 and e2e 2, 4, 6");
    ok(lat->all.ttft_p50 == 1 && lat->all.ttft_p99 == 3
       && b->ttft_mean == 0.5, "over all: TTFT 0.5, 1, 2, 3");
    is_num(a->tds_mean, (2.0 / 1 + 2.0 / 2 + 2.0 / 3) / 3, 1e-12,
           "TDS: (output - 1) / (finish - first_token), averaged");

    /*
     * b's first: tokens 4.5, 5, 5.5 against ideal 5, 5.5, 6: QoE 1.  a's
     * first (spread: 1, 1.5, 2; ideal 1, 1.5, 2): 1.  a's second (3, 4, 5
     * against 2, 2.5, 3): read 3, 4, 5; delay 1 + 1.5 + 2 = 4.5; whole
     * 3 + 2.5 + 2 = 7.5.
     */
    is_num(lat->qoe[4], 1.0, 1e-12, "b's streamed request on time: QoE 1");
    is_num(lat->qoe[0], 1.0, 1e-12, "a's first, spread evenly: QoE 1");
    is_num(lat->qoe[1], 1.0 - 4.5 / 7.5, 1e-12,
           "a's second, late and slow: 1 - 4.5 / 7.5");
    ok(lat->qoe[3] == 0 && lat->qoe[5] == 0, "not served: QoE 0");
    is_num(b->qoe_good, 0.5, 1e-12, "b: half its requests at QoE >= 0.95");

    json = fg_sim_latency_json(lat, tr, conf);
    ok(json != NULL && strstr(json, "\"qoe_mean\"") != NULL
       && strstr(json, "\"p99\"") != NULL, "JSON made");
    free(json);
}


static void
check_cdf(void)
{
    char    path[300], line[256];
    FILE   *fp;
    size_t  blocks, rows;

    snprintf(path, sizeof(path), "%s/cdf.dat", dir);
    fp = fopen(path, "r");
    blocks = rows = 0;

    while (fp != NULL && fgets(line, sizeof(line), fp) != NULL) {
        blocks += line[0] == '#';
        rows += line[0] != '#' && line[0] != '\n';
    }

    if (fp != NULL) {
        fclose(fp);
    }

    ok(blocks == 2 && rows == 4, "cdf.dat: a block a client, a row a "
       "served request");
}


static void
check_service(void)
{
    char     path[300], line[256];
    FILE    *fp;
    double   sum, first, second, t, sa, sb;
    size_t   rows;

    /* the service series holds every served request's cost, h = in + 2 out */
    snprintf(path, sizeof(path), "%s/service.dat", dir);
    fp = fopen(path, "r");
    rows = 0;
    sum = 0.0;
    first = second = -1.0;

    while (fp != NULL && fgets(line, sizeof(line), fp) != NULL) {
        if (line[0] == '#' || sscanf(line, "%lf %lf %lf", &t, &sa, &sb) != 3)
        {
            continue;
        }

        if (rows == 0) {
            first = t;

        } else if (rows == 1) {
            second = t;
        }

        sum += sa + sb;
        rows++;
    }

    if (fp != NULL) {
        fclose(fp);
    }

    is_num(sum * (second - first), 4 * (10 + 2 * 3), 0.01,
           "service.dat: the rates over time add up to the cost served");
}


static void
check_clients(void)
{
    char   path[300], line[256];
    FILE  *fp;

    snprintf(path, sizeof(path), "%s/clients.txt", dir);
    fp = fopen(path, "r");
    ok(fp != NULL && fgets(line, sizeof(line), fp) != NULL
       && strcmp(line, "a\n") == 0, "clients.txt names them");
    if (fp != NULL) {
        fclose(fp);
    }
}


static void
test_compute(void)
{
    int                     rc;
    char                    err[512];
    fg_sim_trace_t          tr;
    fg_sim_result_t        *res;
    fg_sim_latency_t        lat;
    fg_sim_token_times_t    tt;
    fg_sim_latency_conf_t   conf;

    fg_sim_trace_init(&tr);

    /*
     * a: TTFT 1, 2, 3 (e2e 2, 4, 6), one rejected; b: TTFT 0.5 streamed
     * on time with token times, one error.
     */
    rc = fg_sim_results_read_times(&tr, &res, &tt, file("lat.res",
        "{\"id\": 0, \"client\": \"a\", \"arrival\": 0, \"first_token\": 1, "
        "\"finish\": 2, \"input_tokens\": 10, \"output_tokens\": 3, "
        "\"status\": \"ok\"}\n"
        "{\"id\": 1, \"client\": \"a\", \"arrival\": 1, \"first_token\": 3, "
        "\"finish\": 5, \"input_tokens\": 10, \"output_tokens\": 3, "
        "\"status\": \"ok\"}\n"
        "{\"id\": 2, \"client\": \"a\", \"arrival\": 2, \"first_token\": 5, "
        "\"finish\": 8, \"input_tokens\": 10, \"output_tokens\": 3, "
        "\"status\": \"ok\"}\n"
        "{\"id\": 3, \"client\": \"a\", \"arrival\": 3, \"first_token\": null,"
        " \"finish\": null, \"input_tokens\": 10, \"output_tokens\": 3, "
        "\"status\": \"rejected\"}\n"
        "{\"id\": 4, \"client\": \"b\", \"arrival\": 4, \"first_token\": 4.5,"
        " \"finish\": 5.5, \"input_tokens\": 10, \"output_tokens\": 3, "
        "\"status\": \"ok\", \"token_times\": [4.5, 5, 5.5]}\n"
        "{\"id\": 5, \"client\": \"b\", \"arrival\": 5, \"first_token\": null,"
        " \"finish\": null, \"input_tokens\": 10, \"output_tokens\": 3, "
        "\"status\": \"error\"}\n"), err, sizeof(err));

    if (ok_rc(rc, err, "results read") != 0) {
        return;
    }

    fg_sim_latency_conf_init(&conf);
    conf.reading_speed = 2;
    conf.ttft_target = 1;

    rc = fg_sim_latency_compute(&lat, &tr, res, &tt, &conf);
    ok(rc == 0, "computed");
    if (rc != 0) {
        goto done;
    }

    check_figures(&lat, &tr, &conf);

    rc = fg_sim_latency_write_series(&lat, &tr, res, &conf, dir, err,
                                     sizeof(err));
    if (ok_rc(rc, err, "series written") != 0) {
        goto free;
    }

    check_cdf();
    check_service();
    check_clients();

free:

    fg_sim_latency_free(&lat);

done:

    free(res);
    fg_sim_token_times_free(&tt);
    fg_sim_trace_free(&tr);
}


int
main(void)
{
    fg_test_dir_make("latency");

    test_qoe();
    test_percentile();
    test_compute();

    fg_test_dir_remove();

    return done_testing();
}
