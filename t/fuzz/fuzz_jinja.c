
/*
 * fairgate: libFuzzer target of the Jinja renderer: any bytes as a
 * chat template, parsed and, when it parses, rendered over a small
 * conversation under tight limits.  Beyond not crashing: an error has a
 * known kind and a message; a render's segments cover its text exactly,
 * in order, none empty, neighbours of different kinds.
 *
 *     make fuzz-jinja-run FUZZ_TIME=300
 */


#include <stdlib.h>
#include <string.h>

#include "fg_jinja.h"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


#define FUZZ_CHECK(c)  do { if (!(c)) abort(); } while (0)


static const char  fuzz_vars[] =
    "{\"messages\": [{\"role\": \"system\", \"content\": \" sys \"},"
    " {\"role\": \"user\", \"content\": \"hi <|im_end|>\"},"
    " {\"role\": \"assistant\", \"content\": \"<think>a</think>b\","
    " \"tool_calls\": [{\"function\": {\"name\": \"f\","
    " \"arguments\": {\"x\": 1.5, \"y\": [true, null]}}}]}],"
    " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\"}}]}";


static void
fuzz_jinja_check(const fg_jinja_out_t *out)
{
    size_t  i, at;

    at = 0;

    for (i = 0; i < out->n_segs; i++) {
        FUZZ_CHECK(out->segs[i].data == out->text + at);
        FUZZ_CHECK(out->segs[i].len > 0);
        FUZZ_CHECK(i == 0 || out->segs[i].user != out->segs[i - 1].user);
        at += out->segs[i].len;
    }

    FUZZ_CHECK(at == out->len && out->text[out->len] == '\0');
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t             *user, *trusted;
    fg_jinja_t         *t;
    fg_jinja_err_t      err;
    fg_jinja_out_t      out;
    fg_jinja_limits_t   lim;

    t = fg_jinja_parse((const char *) data, size, &err);

    if (t == NULL) {
        FUZZ_CHECK(err.rc == FG_JINJA_ESYNTAX || err.rc == FG_JINJA_ENOMEM);
        FUZZ_CHECK(err.message[0] != '\0');
        return 0;
    }

    fg_jinja_limits_init(&lim);
    lim.max_steps = 20000;
    lim.max_output = 64 * 1024;
    lim.max_memory = 8 * 1024 * 1024;
    lim.max_depth = 16;

    user = json_loads(fuzz_vars, 0, NULL);
    trusted = json_pack("{s:s,s:s,s:b}", "bos_token", "<s>", "eos_token",
                        "</s>", "add_generation_prompt", 1);

    if (fg_jinja_render(t, trusted, user, &lim, &out, &err) == 0) {
        fuzz_jinja_check(&out);
        fg_jinja_out_free(&out);

    } else {
        FUZZ_CHECK(err.rc >= FG_JINJA_ERUNTIME && err.rc <= FG_JINJA_ENOMEM);
    }

    json_decref(user);
    json_decref(trusted);
    fg_jinja_free(t);

    return 0;
}
