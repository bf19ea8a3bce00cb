
/*
 * fairgate: the prefix cache on the cpu backend: with a generated model
 * (GQA, f32 and q8_0) and with stories260K where it is, prompts sharing
 * no block, some, all but the last token, the same prompt and a chat's
 * next turn give greedy, token for token, what the cache off gives, the
 * backend running only the uncached tokens; and so do requests sharing a
 * prefix in a pool too small for them (fg_test_prefix.h's suite).  The
 * cached prefix was computed in another step, chunk and batch than the
 * rest: this is the cpu backend's batch invariance at work.
 */


#include "fg_test_file.h"
#include "fg_test_model.h"
#include "fg_test_prefix.h"
#include "fg_ggml_types.h"


/* the suite's rig on one thread */
static fg_backend_conf_t
cpu_conf(const char *path)
{
    fg_backend_conf_t  conf;

    conf = px_conf(path);
    conf.threads = 1;

    return conf;
}


static void
test_generated(uint32_t type, const char *name)
{
    char               path[512], what[64];
    fg_backend_conf_t  conf;

    snprintf(path, sizeof(path), "%s/prefix-%s.gguf", dir, name);

    if (px_model(type, 16, path) != 0) {
        return;
    }

    snprintf(what, sizeof(what), "cpu, generated %s", name);
    conf = cpu_conf(path);
    px_suite(what, &fg_backend_cpu, &conf, 300);
}


int
main(void)
{
    fg_backend_conf_t  conf;

    fg_test_dir_make("prefix_cpu");

    test_generated(FG_GGML_F32, "f32");
    test_generated(FG_GGML_Q8_0, "q8_0");

    if (access(fg_test_stories(), R_OK) == 0) {
        conf = cpu_conf(fg_test_stories());
        px_suite("cpu, stories260K", &fg_backend_cpu, &conf, 512);

    } else {
        diag("no %s: stories260K's part skipped", fg_test_stories());
    }

    fg_test_dir_remove();

    return fg_tap_done();
}
