
/*
 * fairgate: the cost of a model's own chat template in the worker: a
 * template parsed (once per model, at load) and rendered (once per chat
 * request), for templates of t/chat_templates/ over a short conversation
 * (a system prompt and three turns) and a long one (1,024 messages,
 * 2 MB of text: the request parser's limits).  Each case runs
 * FG_BENCH_REPEAT times and the median is reported.  Prints one JSON line
 * per template and conversation.  Run from the tree's root.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_bench.h"
#include "fg_jinja.h"


#define FG_BENCH_REPEAT  7


static char *
bench_slurp(const char *path, size_t *len)
{
    long   n;
    FILE  *f;
    char  *s;

    f = fopen(path, "rb");
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0
        || fseek(f, 0, SEEK_SET) != 0)
    {
        return NULL;
    }

    s = malloc(n + 1);

    if (s == NULL || fread(s, 1, n, f) != (size_t) n) {
        return NULL;
    }

    s[n] = '\0';
    *len = n;
    fclose(f);

    return s;
}


static json_t *
bench_conversation(size_t n, size_t words)
{
    char    *text;
    size_t   i;
    json_t  *msgs;

    text = malloc(5 * words + 1);

    for (i = 0; i < words; i++) {
        memcpy(text + 5 * i, "word ", 5);
    }

    text[5 * words] = '\0';
    msgs = json_array();

    json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "system",
                                          "content", "Be brief."));

    for (i = 1; i < n; i++) {
        json_array_append_new(msgs, json_pack("{s:s,s:s}", "role",
                                              i % 2 ? "user" : "assistant",
                                              "content", text));
    }

    free(text);

    return json_pack("{s:o}", "messages", msgs);
}


/* the median time of one call of what is timed, in microseconds */
static double
bench_run(const char *src, size_t len, json_t *vars, json_t *conv,
    int parse, int calls)
{
    int              r, i;
    double           t0, runs[FG_BENCH_REPEAT];
    fg_jinja_t      *t;
    fg_jinja_err_t   err;
    fg_jinja_out_t   out;

    t = fg_jinja_parse(src, len, &err);

    for (r = 0; r < FG_BENCH_REPEAT; r++) {
        t0 = fg_bench_now();

        for (i = 0; i < calls; i++) {
            if (parse) {
                fg_jinja_free(fg_jinja_parse(src, len, &err));
                continue;
            }

            if (fg_jinja_render(t, vars, conv, NULL, &out, &err) != 0) {
                fprintf(stderr, "render: %s\n", err.message);
                exit(1);
            }

            fg_jinja_out_free(&out);
        }

        runs[r] = (fg_bench_now() - t0) / calls * 1e6;
    }

    fg_jinja_free(t);
    qsort(runs, FG_BENCH_REPEAT, sizeof(double), fg_bench_cmp);

    return fg_bench_median(runs, FG_BENCH_REPEAT);
}


int
main(void)
{
    char        path[256], *src;
    size_t      i, len;
    json_t     *vars, *shortc, *longc;

    static const char  *names[] = { "chatml", "llama2", "llama3_1" };

    vars = json_pack("{s:s,s:s,s:b}", "bos_token", "<s>", "eos_token",
                     "</s>", "add_generation_prompt", 1);
    shortc = bench_conversation(4, 20);
    longc = bench_conversation(1024, 400);

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(path, sizeof(path), "t/chat_templates/%s.jinja", names[i]);

        src = bench_slurp(path, &len);
        if (src == NULL) {
            fprintf(stderr, "%s: cannot read (run from the tree's root)\n",
                    path);
            return 1;
        }

        printf("{\"bench\":\"jinja\",\"template\":\"%s\",\"bytes\":%zu,"
               "\"parse_us\":%.1f,\"render_short_us\":%.1f,"
               "\"render_long_ms\":%.2f}\n", names[i], len,
               bench_run(src, len, NULL, NULL, 1, 200),
               bench_run(src, len, vars, shortc, 0, 2000),
               bench_run(src, len, vars, longc, 0, 3) / 1000);

        free(src);
    }

    json_decref(vars);
    json_decref(shortc);
    json_decref(longc);

    return 0;
}
