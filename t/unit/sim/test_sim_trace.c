
/*
 * fairgate: tests of the simulator's trace and results files: reading,
 * sorting, defaults, every parse error with its file:line, round trips.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fg_tap.h"
#include "fg_test_file.h"
#include "fg_sim_trace.h"


/* reading text as a trace must fail with "NAME:LINE: ...want..." */
static void
trace_fails(const char *text, int line, const char *want, const char *what)
{
    int              rc;
    char             err[512], where[64];
    fg_sim_trace_t   tr;

    fg_sim_trace_init(&tr);
    err[0] = '\0';

    rc = fg_sim_trace_read(&tr, file("bad.jsonl", text), err, sizeof(err));

    if (line > 0) {
        snprintf(where, sizeof(where), "bad.jsonl:%d: ", line);

    } else {
        snprintf(where, sizeof(where), "bad.jsonl: ");
    }

    ok(rc != 0 && strstr(err, where) != NULL && strstr(err, want) != NULL,
       "%s: fails at line %d saying \"%s\"", what, line, want);

    if (rc == 0 || strstr(err, where) == NULL || strstr(err, want) == NULL) {
        diag("got: %s", rc ? err : "success");
    }

    fg_sim_trace_free(&tr);
}


static void
results_fails(const char *text, int line, const char *want,
    const char *what)
{
    int                    rc;
    char                   err[512], where[64];
    fg_sim_trace_t         tr;
    fg_sim_result_t       *res;
    fg_sim_token_times_t   tt;

    fg_sim_trace_init(&tr);
    err[0] = '\0';
    res = NULL;

    /* with token times: their errors are the reader's too */
    rc = fg_sim_results_read_times(&tr, &res, &tt, file("bad.res", text),
                                   err, sizeof(err));

    snprintf(where, sizeof(where), "bad.res:%d: ", line);

    ok(rc != 0 && strstr(err, where) != NULL && strstr(err, want) != NULL,
       "results %s: fails at line %d saying \"%s\"", what, line, want);

    if (rc == 0 || strstr(err, where) == NULL || strstr(err, want) == NULL) {
        diag("got: %s", rc ? err : "success");
    }

    if (rc == 0) {
        free(res);
        fg_sim_token_times_free(&tt);
    }

    fg_sim_trace_free(&tr);
}


static void
test_read(void)
{
    int              rc;
    char             err[512];
    fg_sim_trace_t   tr;

    fg_sim_trace_init(&tr);

    rc = fg_sim_trace_read(&tr, file("ok.jsonl",
        "{\"t\": 2.5, \"client\": \"b\", \"input_tokens\": 3, "
        "\"output_tokens\": 4, \"weight\": 2}\n"
        "\n"
        "   \n"
        "{\"t\": 1, \"client\": \"a\", \"input_tokens\": 5, "
        "\"output_tokens\": 6, \"max_output_tokens\": 9}\n"
        "{\"t\": 2.5, \"client\": \"a\", \"input_tokens\": 7, "
        "\"output_tokens\": 8}\n"
        "{\"client\": \"b\", \"t\": 0, \"output_tokens\": 1, "
        "\"input_tokens\": 1, \"weight\": 2.0}"),
        err, sizeof(err));

    if (ok_rc(rc, err, "a trace with blank lines and no final newline reads")
        != 0)
    {
        return;
    }

    is_int(tr.n, 4, "four requests");
    is_int(tr.nclients, 2, "two clients");
    is_str(tr.clients[0].name, "b", "clients in order of appearance");
    is_num(tr.clients[0].weight, 2.0, 0, "b's weight");
    is_num(tr.clients[1].weight, 1.0, 0, "a's weight defaults to 1");
    ok(!tr.clients[1].has_weight, "a gave no weight");

    is_num(tr.reqs[0].t, 0.0, 0, "sorted: first at 0");
    is_num(tr.reqs[1].t, 1.0, 0, "sorted: then at 1");
    ok(tr.reqs[2].t == 2.5 && tr.reqs[2].client == 0
       && tr.reqs[3].t == 2.5 && tr.reqs[3].client == 1,
       "equal arrivals keep file order");
    is_int(tr.reqs[1].max_output_tokens, 9, "max_output_tokens read");
    is_int(tr.reqs[3].max_output_tokens, 8,
           "max_output_tokens defaults to output_tokens");
    ok(tr.reqs[1].input_tokens == 5 && tr.reqs[1].output_tokens == 6,
       "token counts read");

    fg_sim_trace_free(&tr);
}


static void
test_errors(void)
{
    const char  *good;

    good = "{\"t\": 0, \"client\": \"a\", \"input_tokens\": 1, "
           "\"output_tokens\": 1}\n";

    trace_fails("", 0, "no requests", "empty file");
    trace_fails("{\"t\": 0, \"client\": \"a\", \"input_tokens\": 1, "
                "\"output_tokens\": 1}\n{\"t\": 1,\n", 2, "not valid JSON",
                "broken JSON");
    trace_fails("[1]\n", 1, "expected a JSON object", "an array");
    trace_fails("{\"client\": \"a\", \"input_tokens\": 1, "
                "\"output_tokens\": 1}\n", 1, "\"t\" is missing",
                "missing t");
    trace_fails("{\"t\": -1, \"client\": \"a\", \"input_tokens\": 1, "
                "\"output_tokens\": 1}\n", 1,
                "\"t\" must be a number of seconds >= 0", "negative t");
    trace_fails("{\"t\": \"1\", \"client\": \"a\", \"input_tokens\": 1, "
                "\"output_tokens\": 1}\n", 1,
                "\"t\" must be a number of seconds >= 0", "t as a string");
    trace_fails("{\"t\": 0, \"client\": \"\", \"input_tokens\": 1, "
                "\"output_tokens\": 1}\n", 1,
                "\"client\" must be a non-empty string", "empty client");
    trace_fails("{\"t\": 0, \"client\": 7, \"input_tokens\": 1, "
                "\"output_tokens\": 1}\n", 1,
                "\"client\" must be a non-empty string", "numeric client");
    trace_fails("{\"t\": 0, \"client\": \"a\", \"input_tokens\": 0, "
                "\"output_tokens\": 1}\n", 1,
                "\"input_tokens\" must be in [1, 100000000], not 0",
                "zero input");
    trace_fails("{\"t\": 0, \"client\": \"a\", \"input_tokens\": 1.5, "
                "\"output_tokens\": 1}\n", 1,
                "\"input_tokens\" must be an integer", "fractional input");
    trace_fails("{\"t\": 0, \"client\": \"a\", \"input_tokens\": 1}\n", 1,
                "\"output_tokens\" is missing", "missing output");
    trace_fails("{\"t\": 0, \"client\": \"a\", \"input_tokens\": 1, "
                "\"output_tokens\": 1000000000}\n", 1,
                "\"output_tokens\" must be in [1, 100000000]", "huge output");
    trace_fails("{\"t\": 0, \"client\": \"a\", \"input_tokens\": 1, "
                "\"output_tokens\": 5, \"max_output_tokens\": 4}\n", 1,
                "\"max_output_tokens\" (4) is below \"output_tokens\" (5)",
                "reservation below output");
    trace_fails("{\"t\": 0, \"client\": \"a\", \"input_tokens\": 1, "
                "\"output_tokens\": 1, \"weight\": 0}\n", 1,
                "\"weight\" must be a number > 0", "zero weight");
    trace_fails("{\"t\": 0, \"client\": \"a\", \"input_tokens\": 1, "
                "\"output_tokens\": 1, \"weight\": 1}\n"
                "{\"t\": 1, \"client\": \"b\", \"input_tokens\": 1, "
                "\"output_tokens\": 1, \"weight\": 3}\n"
                "{\"t\": 2, \"client\": \"a\", \"input_tokens\": 1, "
                "\"output_tokens\": 1, \"weight\": 2}\n", 3,
                "client \"a\": weight 2 differs from 1 given on line 1",
                "conflicting weights");
    trace_fails("{\"t\": 0, \"client\": \"a\", \"input_tokens\": 1, "
                "\"output_tokens\": 1, \"wieght\": 2}\n", 1,
                "unknown key \"wieght\"", "misspelt key");
    trace_fails("{\"t\": 0, \"t\": 1, \"client\": \"a\", "
                "\"input_tokens\": 1, \"output_tokens\": 1}\n", 1,
                "not valid JSON", "duplicate key");

    /* the line number counts blank lines and good lines before */
    {
        char  text[1024];

        snprintf(text, sizeof(text), "%s\n%s{\"t\": 0}\n", good, good);
        trace_fails(text, 4, "\"client\" must be a non-empty string",
                    "line numbers count blank lines");
    }
}


static void
test_round_trip(void)
{
    int               rc;
    char              err[512];
    size_t            i;
    fg_sim_trace_t    tr, back, rtr;
    fg_sim_result_t   res[3], *rres;
    const char       *path;

    fg_sim_trace_init(&tr);
    fg_sim_trace_init(&back);
    fg_sim_trace_init(&rtr);

    (void) fg_sim_trace_client(&tr, "plain");
    (void) fg_sim_trace_client(&tr, "we\"ird \\ name");
    tr.clients[1].weight = 2.5;
    tr.clients[1].has_weight = 1;

    (void) fg_sim_trace_add(&tr, 0.25, 0, 10, 20, 20);
    (void) fg_sim_trace_add(&tr, 1.125, 1, 30, 40, 50);
    (void) fg_sim_trace_add(&tr, 2.5, 0, 1, 1, 1);

    path = file("rt.jsonl", "");
    rc = fg_sim_trace_write(&tr, path, err, sizeof(err));
    ok(rc == 0, "a trace writes");

    rc = fg_sim_trace_read(&back, path, err, sizeof(err));
    if (ok_rc(rc, err, "and reads back") != 0) {
        goto done;
    }

    rc = back.n == tr.n && back.nclients == tr.nclients
         && strcmp(back.clients[1].name, tr.clients[1].name) == 0
         && back.clients[1].weight == 2.5 && !back.clients[0].has_weight;

    for (i = 0; rc && i < tr.n; i++) {
        rc = memcmp(&back.reqs[i], &tr.reqs[i], sizeof(fg_sim_req_t)) == 0;
    }

    ok(rc, "the same trace, escaped name, weight and reservation included");

    memset(res, 0, sizeof(res));
    res[0].status = FG_SIM_OK;
    res[0].first_token = 0.5;
    res[0].finish = 3.75;
    res[1].status = FG_SIM_REJECTED;
    res[2].status = FG_SIM_TIMEOUT;

    path = file("rt.res", "");
    rc = fg_sim_results_write(&tr, res, path, err, sizeof(err));
    ok(rc == 0, "results write");

    rc = fg_sim_results_read(&rtr, &rres, path, err, sizeof(err));
    if (ok_rc(rc, err, "and read back") != 0) {
        goto done;
    }

    ok(rtr.n == 3 && rres[0].status == FG_SIM_OK
       && rres[0].first_token == 0.5 && rres[0].finish == 3.75
       && rres[1].status == FG_SIM_REJECTED
       && rres[2].status == FG_SIM_TIMEOUT
       && rtr.reqs[1].t == 1.125 && rtr.reqs[1].input_tokens == 30
       && rtr.reqs[1].output_tokens == 40
       && strcmp(rtr.clients[rtr.reqs[1].client].name, "we\"ird \\ name")
          == 0,
       "the same outcomes, arrivals, lengths and clients");

    ok(rtr.clients[rtr.reqs[1].client].has_weight
       && rtr.clients[rtr.reqs[1].client].weight == 2.5
       && !rtr.clients[rtr.reqs[0].client].has_weight
       && rtr.clients[rtr.reqs[0].client].weight == 1.0,
       "results carry the weight a trace gave, and only that one");

    free(rres);

done:

    fg_sim_trace_free(&tr);
    fg_sim_trace_free(&back);
    fg_sim_trace_free(&rtr);
}


static void
test_results_errors(void)
{
    results_fails("{\"id\": 0, \"client\": \"a\", \"arrival\": 1, "
                  "\"first_token\": null, \"finish\": 2, "
                  "\"input_tokens\": 1, \"output_tokens\": 1, "
                  "\"status\": \"ok\"}\n", 1,
                  "a served request needs arrival <= first_token <= finish",
                  "ok without first token");
    results_fails("{\"id\": 0, \"client\": \"a\", \"arrival\": 1, "
                  "\"first_token\": 3, \"finish\": 2, "
                  "\"input_tokens\": 1, \"output_tokens\": 1, "
                  "\"status\": \"ok\"}\n", 1,
                  "a served request needs arrival <= first_token <= finish",
                  "finish before first token");
    results_fails("{\"id\": 0, \"client\": \"a\", \"arrival\": 1, "
                  "\"first_token\": 1, \"finish\": 2, "
                  "\"input_tokens\": 1, \"output_tokens\": 1, "
                  "\"status\": \"rejected\"}\n", 1,
                  "must be null unless", "rejected with times");
    results_fails("{\"id\": 0, \"client\": \"a\", \"arrival\": 1, "
                  "\"first_token\": null, \"finish\": null, "
                  "\"input_tokens\": 1, \"output_tokens\": 1, "
                  "\"status\": \"lost\"}\n", 1,
                  "\"status\" must be \"ok\", \"rejected\", \"timeout\", "
                  "\"error\" or \"skipped\"", "unknown status");
    results_fails("{\"client\": \"a\"}\n", 1, "\"id\" must be an integer",
                  "no id");
    results_fails("{\"id\": 0, \"client\": \"a\", \"arrival\": 1, "
                  "\"first_token\": null, \"finish\": null, "
                  "\"input_tokens\": 1, \"output_tokens\": 1, "
                  "\"status\": \"rejected\", \"weight\": -1}\n", 1,
                  "\"weight\" must be a number > 0", "negative weight");
    results_fails("{\"id\": 0, \"client\": \"a\", \"arrival\": 1, "
                  "\"first_token\": null, \"finish\": null, "
                  "\"input_tokens\": 1, \"output_tokens\": 1, "
                  "\"status\": \"rejected\", \"weight\": \"2\"}\n", 1,
                  "\"weight\" must be a number > 0", "weight as a string");
    results_fails("{\"id\": 0, \"client\": \"a\", \"arrival\": 1, "
                  "\"first_token\": null, \"finish\": null, "
                  "\"input_tokens\": 1, \"output_tokens\": 1, "
                  "\"status\": \"rejected\", \"weight\": 2}\n"
                  "\n"
                  "{\"id\": 1, \"client\": \"a\", \"arrival\": 2, "
                  "\"first_token\": null, \"finish\": null, "
                  "\"input_tokens\": 1, \"output_tokens\": 1, "
                  "\"status\": \"rejected\", \"weight\": 3}\n", 3,
                  "client \"a\": weight 3 differs from 2 given on line 1",
                  "conflicting weights");
}


/* the optional fields: read, defaults, refused values, written back */
static void
test_optional(void)
{
    int                    rc;
    char                   err[512];
    const char            *path;
    fg_sim_trace_t         tr, back;
    const fg_sim_req_t    *r;

    fg_sim_trace_init(&tr);
    fg_sim_trace_init(&back);

    rc = fg_sim_trace_read(&tr, file("opt.jsonl",
        "{\"t\": 0, \"client\": \"a\", \"input_tokens\": 100, "
        "\"output_tokens\": 8, \"key\": \"sk-a\", \"user\": \"ann\", "
        "\"app\": \"chat\", \"interaction\": \"ann-1\", \"stage\": 0, "
        "\"system_tokens\": 60, \"stream\": false}\n"
        "{\"t\": 1, \"user\": \"bob\", \"input_tokens\": 5, "
        "\"output_tokens\": 6, \"app\": \"chat\", \"stage\": 2, "
        "\"stream\": true}\n"
        "{\"t\": 2, \"client\": \"a\", \"input_tokens\": 5, "
        "\"output_tokens\": 6}\n"
        "{\"t\": 3, \"client\": \"a\", \"input_tokens\": 2100, "
        "\"output_tokens\": 6, \"prefix\": \"sys-1\", "
        "\"prefix_tokens\": 2048}\n"
        "{\"t\": 4, \"client\": \"a\", \"input_tokens\": 64, "
        "\"output_tokens\": 6, \"prefix\": \"sys-1\", "
        "\"prefix_tokens\": 64}\n"), err, sizeof(err));

    if (ok_rc(rc, err, "a trace with the optional fields reads") != 0) {
        goto done;
    }

    r = &tr.reqs[0];
    ok(strcmp(fg_sim_trace_str_get(&tr, r->key), "sk-a") == 0
       && strcmp(fg_sim_trace_str_get(&tr, r->user), "ann") == 0
       && strcmp(fg_sim_trace_str_get(&tr, r->app), "chat") == 0
       && strcmp(fg_sim_trace_str_get(&tr, r->interaction), "ann-1") == 0
       && r->stage == 0 && r->system_tokens == 60 && r->stream == 0,
       "key, user, app, interaction, stage, system_tokens, stream read");

    r = &tr.reqs[1];
    ok(strcmp(tr.clients[r->client].name, "bob") == 0
       && strcmp(fg_sim_trace_str_get(&tr, r->user), "bob") == 0,
       "a line without client takes its user as client");
    ok(r->app == tr.reqs[0].app && r->stage == 2 && r->stream == 1
       && r->key == 0 && r->interaction == 0,
       "strings are kept once; absent ones are 0");

    r = &tr.reqs[2];
    ok(r->key == 0 && r->user == 0 && r->app == 0 && r->interaction == 0
       && r->stage == -1 && r->system_tokens == 0 && r->stream == -1
       && r->prefix == 0 && r->prefix_tokens == 0,
       "a plain line has none of them");
    ok(fg_sim_trace_str_get(&tr, 0) == NULL, "string 0 is none");

    r = &tr.reqs[3];
    ok(strcmp(fg_sim_trace_str_get(&tr, r->prefix), "sys-1") == 0
       && r->prefix_tokens == 2048 && tr.reqs[4].prefix == r->prefix
       && tr.reqs[4].prefix_tokens == 64,
       "prefix and prefix_tokens read, one id of several lengths, a "
       "prompt all prefix");

    path = file("opt-rt.jsonl", "");
    rc = fg_sim_trace_write(&tr, path, err, sizeof(err));
    if (rc == 0) {
        rc = fg_sim_trace_read(&back, path, err, sizeof(err));
    }

    ok(rc == 0 && back.n == 5
       && memcmp(back.reqs, tr.reqs, 5 * sizeof(fg_sim_req_t)) == 0
       && back.nstrs == tr.nstrs,
       "and they write and read back the same");
    if (rc != 0) {
        diag("%s", err);
    }

done:

    fg_sim_trace_free(&tr);
    fg_sim_trace_free(&back);

    trace_fails("{\"t\": 0, \"client\": \"a\", \"input_tokens\": 5, "
                "\"output_tokens\": 1, \"system_tokens\": 5}\n", 1,
                "\"system_tokens\" (5) must be below \"input_tokens\" (5)",
                "system prompt as long as the input");
    trace_fails("{\"t\": 0, \"client\": \"a\", \"input_tokens\": 5, "
                "\"output_tokens\": 1, \"stage\": -1}\n", 1,
                "\"stage\" must be an integer in [0, 1000000]",
                "negative stage");
    trace_fails("{\"t\": 0, \"client\": \"a\", \"input_tokens\": 5, "
                "\"output_tokens\": 1, \"stream\": 1}\n", 1,
                "\"stream\" must be true or false", "stream as a number");
    trace_fails("{\"t\": 0, \"client\": \"a\", \"input_tokens\": 5, "
                "\"output_tokens\": 1, \"key\": \"sk a\"}\n", 1,
                "\"key\" holds a character it may not (a key is visible "
                "ASCII)", "a key with a space");
    trace_fails("{\"t\": 0, \"client\": \"a\", \"input_tokens\": 5, "
                "\"output_tokens\": 1, \"user\": \"u\\r\\nX-Evil: 1\"}\n",
                1, "\"user\" holds a character it may not", "CRLF in user");
    trace_fails("{\"t\": 0, \"client\": \"a\", \"input_tokens\": 5, "
                "\"output_tokens\": 1, \"app\": \"\"}\n", 1,
                "\"app\" must be a non-empty string", "empty app");
    trace_fails("{\"t\": 0, \"input_tokens\": 5, \"output_tokens\": 1}\n",
                1, "\"client\" must be a non-empty string",
                "neither client nor user");
    trace_fails("{\"t\": 0, \"user\": 3, \"input_tokens\": 5, "
                "\"output_tokens\": 1}\n", 1,
                "\"user\" must be a non-empty string", "numeric user");
}


/* prefix and prefix_tokens refused */
static void
test_prefix_errors(void)
{
    trace_fails("{\"t\": 0, \"client\": \"a\", \"input_tokens\": 5, "
                "\"output_tokens\": 1, \"prefix\": \"p\", "
                "\"prefix_tokens\": 6}\n", 1,
                "\"prefix_tokens\" (6) exceeds \"input_tokens\" (5)",
                "a prefix longer than the prompt");
    trace_fails("{\"t\": 0, \"client\": \"a\", \"input_tokens\": 5, "
                "\"output_tokens\": 1, \"prefix\": \"p\", "
                "\"prefix_tokens\": 0}\n", 1,
                "\"prefix_tokens\" must be in [1, 100000000], not 0",
                "an empty prefix");
    trace_fails("{\"t\": 0, \"client\": \"a\", \"input_tokens\": 5, "
                "\"output_tokens\": 1, \"prefix\": \"p\"}\n", 1,
                "\"prefix\" and \"prefix_tokens\" go together",
                "a prefix without its length");
    trace_fails("{\"t\": 0, \"client\": \"a\", \"input_tokens\": 5, "
                "\"output_tokens\": 1, \"prefix_tokens\": 2}\n", 1,
                "\"prefix\" and \"prefix_tokens\" go together",
                "a length without its prefix");
    trace_fails("{\"t\": 0, \"client\": \"a\", \"input_tokens\": 5, "
                "\"output_tokens\": 1, \"prefix\": 3, "
                "\"prefix_tokens\": 2}\n", 1,
                "\"prefix\" must be a non-empty string", "a numeric prefix");
}


/* many strings: the index grows and finds each one again */
static void
test_strings(void)
{
    char            name[32];
    int64_t         idx[2000];
    uint32_t        i;
    fg_sim_trace_t  tr;

    fg_sim_trace_init(&tr);

    for (i = 0; i < 2000; i++) {
        snprintf(name, sizeof(name), "interaction-%u", i);
        idx[i] = fg_sim_trace_str(&tr, name);
    }

    for (i = 0; i < 2000; i++) {
        snprintf(name, sizeof(name), "interaction-%u", i);

        if (idx[i] != (int64_t) i + 1 || fg_sim_trace_str(&tr, name) != idx[i]
            || strcmp(fg_sim_trace_str_get(&tr, i + 1), name) != 0)
        {
            break;
        }
    }

    ok(i == 2000 && tr.nstrs == 2001, "2,000 strings kept, each found again");

    fg_sim_trace_free(&tr);
}


/* results of the load generator: error status, extra keys, token times */
static void
test_results_times(void)
{
    int                    rc;
    char                   err[512];
    fg_sim_trace_t         tr;
    fg_sim_result_t       *res;
    fg_sim_token_times_t   tt;

    fg_sim_trace_init(&tr);

    rc = fg_sim_results_read_times(&tr, &res, &tt, file("tt.res",
        "{\"id\": 0, \"client\": \"a\", \"arrival\": 1, \"first_token\": 2, "
        "\"finish\": 3, \"input_tokens\": 4, \"output_tokens\": 3, "
        "\"status\": \"ok\", \"scheduled\": 1, \"http_status\": 200, "
        "\"app\": \"chat\", \"stage\": 1, "
        "\"token_times\": [2, 2.5, 3]}\n"
        "{\"id\": 1, \"client\": \"a\", \"arrival\": 1, \"first_token\": null, "
        "\"finish\": null, \"input_tokens\": 4, \"output_tokens\": 3, "
        "\"status\": \"error\", \"error\": \"connection refused\"}\n"
        "{\"id\": 2, \"client\": \"b\", \"arrival\": 1, \"first_token\": 1, "
        "\"finish\": 1, \"input_tokens\": 4, \"output_tokens\": 1, "
        "\"status\": \"ok\", \"token_times\": [1]}\n"), err, sizeof(err));

    if (ok_rc(rc, err, "results with token_times and an error read") != 0) {
        fg_sim_trace_free(&tr);
        return;
    }

    ok(tt.n == 3 && tt.start[0] == 0 && tt.start[1] == 3
       && tt.start[2] == 3 && tt.start[3] == 4 && tt.times[1] == 2.5
       && tt.times[3] == 1.0,
       "each request's token times, none for the one without");
    ok(res[1].status == FG_SIM_ERROR, "status error read");
    ok(strcmp(fg_sim_trace_str_get(&tr, tr.reqs[0].app), "chat") == 0
       && tr.reqs[0].stage == 1, "optional fields read from results");

    free(res);
    fg_sim_token_times_free(&tt);
    fg_sim_trace_free(&tr);

    results_fails("{\"id\": 0, \"client\": \"a\", \"arrival\": 1, "
                  "\"first_token\": 2, \"finish\": 3, \"input_tokens\": 1, "
                  "\"output_tokens\": 2, \"status\": \"ok\", "
                  "\"token_times\": [3, 2]}\n", 1,
                  "\"token_times\" must be seconds >= 0, in order (item 1)",
                  "token times out of order");
    results_fails("{\"id\": 0, \"client\": \"a\", \"arrival\": 1, "
                  "\"first_token\": 2, \"finish\": 3, \"input_tokens\": 1, "
                  "\"output_tokens\": 2, \"status\": \"ok\", "
                  "\"token_times\": 2}\n", 1,
                  "\"token_times\" must be an array", "token times a number");
}


/* results' cached_tokens and engine: written, read back, refused */
static void
test_results_cache(void)
{
    int                rc;
    char               err[512];
    int64_t            e1;
    const char        *path;
    fg_sim_trace_t     tr, back;
    fg_sim_result_t    res[3], *rres;

    fg_sim_trace_init(&tr);
    fg_sim_trace_init(&back);

    (void) fg_sim_trace_client(&tr, "a");
    (void) fg_sim_trace_add(&tr, 0.5, 0, 2100, 20, 20);
    (void) fg_sim_trace_add(&tr, 1.5, 0, 2100, 20, 20);
    (void) fg_sim_trace_add(&tr, 2.5, 0, 10, 20, 20);
    tr.reqs[0].prefix = (uint32_t) fg_sim_trace_str(&tr, "g0");
    tr.reqs[0].prefix_tokens = 2048;
    tr.reqs[1].prefix = tr.reqs[0].prefix;
    tr.reqs[1].prefix_tokens = 2048;
    e1 = fg_sim_trace_str(&tr, "engine \"b\"");

    memset(res, 0, sizeof(res));
    res[0].status = FG_SIM_OK;
    res[0].first_token = 1;
    res[0].finish = 2;
    res[0].has_cached = 1;
    res[0].cached_tokens = 0;
    res[1] = res[0];
    res[1].first_token = 2;
    res[1].finish = 3;
    res[1].cached_tokens = 2048;
    res[1].engine = (uint32_t) e1;
    res[2].status = FG_SIM_REJECTED;

    path = file("cache.res", "");
    rc = fg_sim_results_write(&tr, res, path, err, sizeof(err));
    if (rc == 0) {
        rc = fg_sim_results_read(&back, &rres, path, err, sizeof(err));
    }

    if (ok_rc(rc, err, "results with cached tokens and engines write and "
              "read")
        != 0)
    {
        goto done;
    }

    ok(rres[0].has_cached && rres[0].cached_tokens == 0
       && rres[0].engine == 0,
       "cached_tokens 0 is said, no engine is none");
    ok(rres[1].has_cached && rres[1].cached_tokens == 2048
       && strcmp(fg_sim_trace_str_get(&back, rres[1].engine),
                 "engine \"b\"") == 0,
       "cached_tokens and an escaped engine name read back");
    ok(!rres[2].has_cached && rres[2].engine == 0,
       "neither on a line without them");
    ok(back.reqs[1].prefix_tokens == 2048
       && strcmp(fg_sim_trace_str_get(&back, back.reqs[1].prefix), "g0")
          == 0 && back.reqs[2].prefix == 0,
       "results carry the trace's prefix");

    free(rres);

done:

    fg_sim_trace_free(&tr);
    fg_sim_trace_free(&back);

    results_fails("{\"id\": 0, \"client\": \"a\", \"arrival\": 1, "
                  "\"first_token\": 1, \"finish\": 2, "
                  "\"input_tokens\": 1, \"output_tokens\": 1, "
                  "\"status\": \"ok\", \"cached_tokens\": -1}\n", 1,
                  "\"cached_tokens\" must be in [0,", "negative cached");
    results_fails("{\"id\": 0, \"client\": \"a\", \"arrival\": 1, "
                  "\"first_token\": 1, \"finish\": 2, "
                  "\"input_tokens\": 1, \"output_tokens\": 1, "
                  "\"status\": \"ok\", \"engine\": 0}\n", 1,
                  "\"engine\" must be a non-empty string", "numeric engine");
}

/* "model": read, written back in traces and results, refused when bad */
static void
test_model(void)
{
    int                rc;
    char               err[512];
    const char        *path;
    fg_sim_trace_t     tr, back;
    fg_sim_result_t    res[2], *rres;

    fg_sim_trace_init(&tr);
    fg_sim_trace_init(&back);

    rc = fg_sim_trace_read(&tr, file("model.jsonl",
        "{\"t\": 0, \"client\": \"a\", \"input_tokens\": 5, "
        "\"output_tokens\": 6, \"model\": \"m1\"}\n"
        "{\"t\": 1, \"client\": \"a\", \"input_tokens\": 5, "
        "\"output_tokens\": 6}\n"), err, sizeof(err));

    ok(rc == 0 && tr.n == 2 && tr.reqs[0].model != 0
       && strcmp(fg_sim_trace_str_get(&tr, tr.reqs[0].model), "m1") == 0
       && tr.reqs[1].model == 0,
       "model read; absent is 0, the one model");
    if (rc != 0) {
        diag("%s", err);
        goto done;
    }

    memset(res, 0, sizeof(res));
    res[0].status = FG_SIM_OK;
    res[0].first_token = 1;
    res[0].finish = 2;
    res[1].status = FG_SIM_REJECTED;

    path = file("model.res", "");
    rc = fg_sim_results_write(&tr, res, path, err, sizeof(err));
    if (rc == 0) {
        rc = fg_sim_results_read(&back, &rres, path, err, sizeof(err));
    }

    ok(rc == 0 && back.reqs[0].model != 0
       && strcmp(fg_sim_trace_str_get(&back, back.reqs[0].model), "m1") == 0
       && back.reqs[1].model == 0,
       "results carry the model");
    if (rc == 0) {
        free(rres);
    }

done:

    fg_sim_trace_free(&tr);
    fg_sim_trace_free(&back);

    trace_fails("{\"t\": 0, \"client\": \"a\", \"input_tokens\": 5, "
                "\"output_tokens\": 1, \"model\": 7}\n", 1,
                "\"model\" must be a non-empty string", "a numeric model");
    trace_fails("{\"t\": 0, \"client\": \"a\", \"input_tokens\": 5, "
                "\"output_tokens\": 1, \"model\": \"\"}\n", 1,
                "\"model\" must be a non-empty string", "an empty model");
}


int
main(void)
{
    fg_test_dir_make("trace");

    test_read();
    test_errors();
    test_round_trip();
    test_results_errors();
    test_optional();
    test_prefix_errors();
    test_strings();
    test_results_times();
    test_results_cache();
    test_model();

    fg_test_dir_remove();

    return done_testing();
}
