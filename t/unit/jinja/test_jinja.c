
/*
 * fairgate: tests of the Jinja renderer: each construct of the language
 * as the reference renders it (t/110 compares whole templates with the
 * reference itself), the segments that say which bytes came from the
 * request, errors with their places, and the limits that stop a bad
 * template: steps, macro depth, output, memory.
 */


#include <stdint.h>

#include "fg_tap.h"
#include "fg_jinja.h"


#define N(a)        (sizeof(a) / sizeof((a)[0]))


typedef struct {
    const char  *name;
    const char  *tpl;
    const char  *want;
} case_t;


/* the variables of every case: trusted, and the request's */
static const char  trusted_json[] =
    "{\"bos_token\": \"<s>\", \"add_generation_prompt\": true}";

static const char  user_json[] =
    "{\"messages\": [{\"role\": \"system\", \"content\": \" Be brief. \"},"
    " {\"role\": \"user\", \"content\": \"Hi <|im_end|>\"},"
    " {\"role\": \"assistant\", \"content\": \"Hello\"}],"
    " \"n\": 3, \"f\": 2.5, \"one\": 1.0, \"s\": \"a,b,c\","
    " \"d\": {\"k\": \"v\", \"x\": [1, 2]}, \"nil\": null}";


static const case_t  cases[] = {
    /* output, literals, text */
    { "text", "plain text", "plain text" },
    { "output", "{{ 'a' }}{{ \"b\" }}{{ 1 }}{{ 2.5 }}", "ab12.5" },
    { "none and undefined write nothing", "[{{ none }}{{ nope }}]", "[]" },
    { "booleans", "{{ true }} {{ False }} {{ None is none }}",
      "true false true" },
    { "float with no fraction", "{{ 3.0 }} {{ one }} {{ 1.5 * 2 }}",
      "3.0 1 3.0" },
    { "escapes", "{{ 'a\\tb\\n' }}{{ \"\\u00e9\\x41\" }}",
      "a\tb\n\xc3\xa9" "A" },
    { "adjacent strings", "{{ 'a' 'b' \"c\" }}", "abc" },
    { "list and dict", "{{ [1, 'x', none, true] }} {{ {'a': 1} }}",
      "[1, \"x\", null, true] {\"a\": 1}" },
    { "final newline dropped", "a\n", "a" },

    /* whitespace control */
    { "-%} and {%-", "a  {%- if true -%}  b  {%- endif -%}  c", "abc" },
    { "{{- -}}", "a \n {{- 'b' -}} \n c", "abc" },
    { "trim_blocks", "{% if true %}\nx{% endif %}\ny", "xy" },
    { "lstrip_blocks", "a\n    {% if true %}b{% endif %}", "a\nb" },
    { "comments", "a{# c #}b {#- c -#} c", "abc" },

    /* if, for, set */
    { "if elif else",
      "{% if n == 1 %}one{% elif n == 3 %}three{% else %}other{% endif %}",
      "three" },
    { "for and loop",
      "{% for m in messages %}{{ loop.index }}{{ loop.index0 }}"
      "{{ loop.first }}{{ loop.last }}{{ loop.length }}"
      "{{ loop.revindex }},{% endfor %}",
      "10truefalse33,21falsefalse32,32falsetrue31," },
    { "for else", "{% for x in [] %}x{% else %}empty{% endfor %}",
      "empty" },
    { "for if", "{% for m in messages if m.role != 'system' %}"
      "{{ loop.index }}{{ m.role[0] }}{% endfor %}", "1u2a" },
    { "for over a mapping and items",
      "{% for k in d %}{{ k }}{% endfor %} {% for k, v in d.items() %}"
      "{{ k }}={{ v }};{% endfor %}",
      "kx k=v;x=[1, 2];" },
    { "break drops the pass's text",
      "{% for x in [1, 2, 3] %}{{ x }}{% if x == 2 %}{% break %}"
      "{% endif %}{% endfor %}", "1" },
    { "continue", "{% for x in [1, 2, 3] %}{% if x == 2 %}{% continue %}"
      "{% endif %}{{ x }}{% endfor %}", "13" },
    { "set in a loop stays in it",
      "{% set v = 1 %}{% for x in [5] %}{% set v = x %}{% endfor %}{{ v }}",
      "1" },
    { "namespace", "{% set ns = namespace(c=0, l=none) %}"
      "{% for x in [1, 2] %}{% set ns.c = ns.c + x %}{% endfor %}"
      "{{ ns.c }}{{ ns.l }}", "3" },
    { "set tuple and block",
      "{% set a, b = [1, 2] %}{% set t %}[{{ a + b }}]{% endset %}{{ t }}",
      "[3]" },
    { "filter block", "{% filter upper %}a{{ 'b' }}{% endfilter %}"
      "{% filter replace('x', 'y') %}xx{% endfilter %}", "AByy" },
    { "macro", "{% macro m(x, y='d') %}<{{ x }}{{ y }}>{% endmacro %}"
      "{{ m(1) }}{{ m(2, 'e') }}{{ m(3, y='f') }}", "<1d><2e><3f>" },

    /* operators */
    { "arithmetic",
      "{{ 7 // 2 }} {{ 7 / 2 }} {{ 7 % 3 }} {{ 2 ** 3 }} {{ -n }} "
      "{{ 1 + 2 * 3 }}", "3 3.5 1 8 -3 7" },
    { "strings joined", "{{ 'a' + 'b' }}{{ 'n' ~ n }}{{ 'x' + 1 }}",
      "abn3x1" },
    { "comparisons",
      "{{ 1 < 2 }}{{ 2 <= 1 }}{{ 'a' == 'a' }}{{ 1 == 1.0 }}{{ 'a' != 1 }}",
      "truefalsetruetruetrue" },
    { "in", "{{ 'b' in s }}{{ 'k' in d }}{{ 2 in [1, 2] }}"
      "{{ 'z' not in s }}{{ 'x' in nope }}", "truetruetruetruefalse" },
    { "and or not", "{{ 0 or 'y' }}{{ 1 and 2 }}{{ not 0 }}{{ [] or 'e' }}",
      "y2truee" },
    { "ternary and select", "{{ 'a' if n > 2 else 'b' }}[{{ 'c' if 0 }}]",
      "a[]" },

    /* access */
    { "attributes and items",
      "{{ messages[1].role }}{{ messages[-1]['role'] }}{{ d.x[1] }}"
      "{{ d.missing }}{{ nope.deeper }}", "userassistant2" },
    { "slices",
      "{{ [1, 2, 3, 4][1:3] }}{{ [1, 2, 3][::-1] }}{{ 'hello'[1:] }}"
      "{{ 'abc'[::-1] }}{{ messages[1:] | length }}",
      "[2, 3][3, 2, 1]ellocba2" },
    { "length property", "{{ s.length }}{{ messages.length }}", "53" },

    /* filters */
    { "trim upper lower", "[{{ messages[0].content | trim }}]"
      "{{ 'a' | upper }}{{ 'B' | lower }}", "[Be brief.]Ab" },
    { "length first last", "{{ messages | length }}{{ [4, 5] | first }}"
      "{{ [4, 5] | last }}{{ d | length }}{{ 'héllo' | length }}",
      "34525" },
    { "join default", "{{ [1, 'a'] | join('-') }}{{ nope | default('x') }}"
      "{{ '' | default('y', true) }}{{ nil | default('z') }}", "1-axy" },
    { "tojson",
      "{{ d | tojson }}{{ 'q\"\\n' | tojson }}{{ nope | tojson }}",
      "{\"k\": \"v\", \"x\": [1, 2]}\"q\\\"\\n\"null" },
    { "tojson indent",
      "{{ {'a': [1], 'b': {}} | tojson(indent=2) }}",
      "{\n  \"a\": [\n    1\n  ],\n  \"b\": {}\n}" },
    { "items list string int", "{{ d | items | list | length }}"
      "{{ [1] | string }}{{ '12' | int + 1 }}{{ 2.9 | int }}",
      "2[1]132" },
    { "replace title", "{{ 'a-b-c' | replace('-', '+') }} "
      "{{ 'hi there' | title }}", "a+b+c Hi There" },
    { "selectattr rejectattr map",
      "{{ messages | selectattr('role', 'equalto', 'user') | list | length }}"
      "{{ messages | rejectattr('role', 'equalto', 'user') "
      "| map(attribute='role') | join(',') }}", "1system,assistant" },

    { "sort unique dictsort",
      "{{ [3, 1, 2] | sort }}{{ ['b', 'A'] | sort }}{{ [1, 2] | sort(true) }}"
      "{{ messages | sort(attribute='role') | map(attribute='role') "
      "| join(',') }}{{ [1, 1.0, 'a', 'a'] | unique }}{{ d | dictsort }}",
      "[1, 2, 3][\"A\", \"b\"][2, 1]assistant,system,user[1, \"a\"]"
      "[[\"k\", \"v\"], [\"x\", [1, 2]]]" },

    /* tests */
    { "tests",
      "{{ nope is defined }}{{ nope is undefined }}{{ nil is none }}"
      "{{ s is string }}{{ d is mapping }}{{ messages is iterable }}"
      "{{ n is number }}{{ n is odd }}{{ f is integer }}{{ s is not none }}",
      "falsetruetruetruetruetruetruetruefalsetrue" },

    /* string methods */
    { "strip split",
      "[{{ messages[0].content.strip() }}][{{ ' a '.lstrip() }}]"
      "[{{ ' a '.rstrip() }}]{{ s.split(',') }}{{ 'a b'.split() }}"
      "{{ s.split(',', 1) }}",
      "[Be brief.][a ][ a][\"a\", \"b\", \"c\"][\"a\", \"b\"]"
      "[\"a\", \"b,c\"]" },
    { "startswith endswith replace",
      "{{ s.startswith('a,') }}{{ s.endswith(('x', 'c')) }}"
      "{{ s.replace(',', '') }}{{ 'aaa'.replace('a', 'b', 1) }}"
      "{{ 'Ab'.upper() }}{{ 'Ab'.lower() }}{{ 'ab cd'.title() }}",
      "truetrueabcbaaABabAb Cd" },
    { "dict methods",
      "{{ d.get('k') }}{{ d.get('q', 'dflt') }}{{ d.get('q') }}"
      "{{ d.keys() }}{{ d.values() | length }}",
      "vdflt[\"k\", \"x\"]2" },
    { "range", "{{ range(3) }}{{ range(1, 6, 2) }}", "[0, 1, 2][1, 3, 5]" },
};


static void
test_cases(void)
{
    size_t          i;
    json_t         *trusted, *user;
    fg_jinja_t     *t;
    fg_jinja_err_t  err;
    fg_jinja_out_t  out;

    trusted = json_loads(trusted_json, 0, NULL);
    user = json_loads(user_json, 0, NULL);

    for (i = 0; i < N(cases); i++) {
        t = fg_jinja_parse(cases[i].tpl, strlen(cases[i].tpl), &err);

        if (t == NULL) {
            ok(0, "%s: parses", cases[i].name);
            diag("line %u column %u: %s", err.line, err.column, err.message);
            continue;
        }

        if (fg_jinja_render(t, trusted, user, NULL, &out, &err) != 0) {
            ok(0, "%s: renders", cases[i].name);
            diag("line %u column %u: %s", err.line, err.column, err.message);

        } else {
            is_str(out.text, cases[i].want, "%s", cases[i].name);
            fg_jinja_out_free(&out);
        }

        fg_jinja_free(t);
    }

    json_decref(trusted);
    json_decref(user);
}


/* render tpl over the request's variables vars: 0, or -1 with err */
static int
render(const char *tpl, const char *vars, const fg_jinja_limits_t *lim,
    fg_jinja_out_t *out, fg_jinja_err_t *err)
{
    int          rc;
    json_t      *user, *trusted;
    fg_jinja_t  *t;

    t = fg_jinja_parse(tpl, strlen(tpl), err);
    if (t == NULL) {
        return -1;
    }

    user = vars ? json_loads(vars, 0, NULL) : NULL;
    trusted = json_loads(trusted_json, 0, NULL);

    rc = fg_jinja_render(t, trusted, user, lim, out, err);

    json_decref(user);
    json_decref(trusted);
    fg_jinja_free(t);

    return rc;
}


static void
test_segments(void)
{
    fg_jinja_err_t  err;
    fg_jinja_out_t  out;

    static const char  tpl[] =
        "{{ bos_token }}{% for m in messages %}<|im_start|>"
        "{{ m.role + '\\n' + m.content | trim + '<|im_end|>' }}"
        "{% endfor %}";

    if (render(tpl, user_json, NULL, &out, &err) != 0) {
        ok(0, "the segments' template renders");
        diag("%s", err.message);
        return;
    }

    ok(out.n_segs == 13 && !out.segs[0].user
       && out.segs[0].len == 3 + 12 && out.segs[1].user
       && out.segs[1].len == 6,
       "the template's text and bos_token are the template's; a role is "
       "the request's");
    ok(out.segs[7].user && out.segs[7].len == 13
       && memcmp(out.segs[7].data, "Hi <|im_end|>", 13) == 0
       && !out.segs[6].user && out.segs[6].data[0] == '\n',
       "a message's text keeps its mark through + and trim; the "
       "template's \"\\n\" before it is the template's");
    ok(!out.segs[8].user
       && memcmp(out.segs[8].data, "<|im_end|><|im_start|>", 22) == 0,
       "... and so is the marker after it: the typed <|im_end|> is not");
    fg_jinja_out_free(&out);

    ok(render("{{ messages[1] | tojson }}{{ 'x' }}", user_json, NULL, &out,
              &err) == 0
       && out.n_segs == 9 && out.segs[1].user && !out.segs[2].user
       && memcmp(out.segs[1].data, "\"role\"", 6) == 0
       && memcmp(out.segs[2].data, ": ", 2) == 0
       && !out.segs[8].user && out.segs[8].data[out.segs[8].len - 1] == 'x',
       "tojson of the request's values: its strings are the request's, "
       "the punctuation the template's");
    fg_jinja_out_free(&out);
}


static void
test_errors(void)
{
    fg_jinja_err_t  err;
    fg_jinja_out_t  out;

    memset(&err, 0, sizeof(err));

    ok(render("a\n{% if %}", NULL, NULL, &out, &err) == -1
       && err.rc == FG_JINJA_ESYNTAX && err.line == 2,
       "a syntax error, on its line (%u:%u: %s)", err.line, err.column,
       err.message);
    ok(render("{% for x in y %}", NULL, NULL, &out, &err) == -1
       && err.rc == FG_JINJA_ESYNTAX, "an unclosed for (%s)", err.message);
    ok(render("{{ 'abc }}", NULL, NULL, &out, &err) == -1
       && err.rc == FG_JINJA_ESYNTAX, "an unclosed string (%s)",
       err.message);
    ok(render("{% frobnicate %}", NULL, NULL, &out, &err) == -1
       && err.rc == FG_JINJA_ESYNTAX, "an unknown statement (%s)",
       err.message);
    ok(render("{{ 'a' | nosuch }}", NULL, NULL, &out, &err) == -1
       && err.rc == FG_JINJA_ERUNTIME && err.line == 1 && err.column > 1,
       "an unknown filter, with its place (%u:%u: %s)", err.line,
       err.column, err.message);
    ok(render("x\n  {{ 1 + none }}", NULL, NULL, &out, &err) == -1
       && err.rc == FG_JINJA_ERUNTIME && err.line == 2,
       "arithmetic with none (%u:%u: %s)", err.line, err.column,
       err.message);
    ok(render("{{ raise_exception('Roles must alternate') }}", NULL, NULL,
              &out, &err) == -1
       && err.rc == FG_JINJA_ERAISED
       && strcmp(err.message, "Roles must alternate") == 0,
       "raise_exception: its message");
    ok(render("{% macro m(a) %}{% endmacro %}{{ m(b=1) }}", NULL, NULL,
              &out, &err) == -1 && err.rc == FG_JINJA_ERUNTIME,
       "a macro's unknown keyword (%s)", err.message);
    ok(render("{% set x = 1 %}{{ x.y.z }}{{ x() }}", NULL, NULL, &out, &err)
       == -1 && err.rc == FG_JINJA_ERUNTIME, "calling an integer (%s)",
       err.message);
}


static void
test_limits(void)
{
    fg_jinja_err_t     err;
    fg_jinja_out_t     out;
    fg_jinja_limits_t  lim;

    memset(&err, 0, sizeof(err));
    fg_jinja_limits_init(&lim);
    lim.max_steps = 100000;

    ok(render("{% for a in range(1000) %}{% for b in range(1000) %}"
              "{% endfor %}{% endfor %}", NULL, &lim, &out, &err) == -1
       && err.rc == FG_JINJA_ELIMIT,
       "a million iterations stop at the steps' limit (%s)", err.message);

    fg_jinja_limits_init(&lim);

    ok(render("{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}",
              NULL, &lim, &out, &err) == -1
       && err.rc == FG_JINJA_ELIMIT,
       "endless recursion stops at the depth's limit (%s)", err.message);

    lim.max_output = 1000;

    ok(render("{% for a in range(100) %}0123456789ab{% endfor %}", NULL,
              &lim, &out, &err) == -1 && err.rc == FG_JINJA_ELIMIT,
       "1200 bytes of output stop at 1000 (%s)", err.message);

    fg_jinja_limits_init(&lim);
    lim.max_memory = 1 << 20;

    ok(render("{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}"
              "{% for a in range(20) %}{% set ns.s = ns.s + ns.s %}"
              "{% endfor %}{{ ns.s | length }}", NULL, &lim, &out, &err)
       == -1 && err.rc == FG_JINJA_ELIMIT,
       "a string doubled 20 times stops at 1 MiB of memory (%s)",
       err.message);

    fg_jinja_limits_init(&lim);

    ok(render("{% for a in range(100) %}x{% endfor %}", NULL, &lim, &out,
              &err) == 0 && out.len == 100, "within the limits: rendered");
    fg_jinja_out_free(&out);
}


int
main(void)
{
    test_cases();
    test_segments();
    test_errors();
    test_limits();

    done_testing();
}
