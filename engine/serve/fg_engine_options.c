
/*
 * fairgate: fairgate-engine's options.  One table says each option's
 * name, the field it sets, its range and the handler that reads it;
 * getopt_long's table is made from it, so an option is added in one
 * place.  Bad arguments are refused with a sentence that names them (the
 * command then exits with status 2).
 */


#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fg_engine_int.h"
#include "fg_mux.h"
#include "fg_shm_proto.h"


#define FG_MAIN_SHM         "/fairgate"
#define FG_MAIN_BACKEND     "cpu"
#define FG_MAIN_KV_BLOCKS   1024
#define FG_MAIN_MAX_BATCH   32
#define FG_MAIN_STEP_TOKENS 512
#define FG_MAIN_MAX_SEQS    1024
#define FG_MAIN_N           128

/* getopt_long's value for the table's entry i: above every character */
#define FG_MAIN_OPT_VAL     256

#define fg_main_field(a, o, type)  ((type *) ((char *) (a) + (o)->off))


typedef struct fg_main_opt_s  fg_main_opt_t;

/* reads an option's value into its field: 0, or -1 with the fault said */
typedef int (*fg_main_set_pt)(fg_main_args_t *a, const fg_main_opt_t *o,
    const char *val);

struct fg_main_opt_s {
    const char      *name;              /* as written: "--kv-blocks", "-n" */
    int              has_arg;
    fg_main_set_pt   set;
    size_t           off;               /* the field in fg_main_args_t */
    double           min;
    double           max;
};


static void
fg_main_usage(FILE *f)
{
    fprintf(f,
"usage: fairgate-engine --model PATH [options]           serve the gateway\n"
"       fairgate-engine --model PATH --prompt TEXT [...]  one continuation\n"
"\n"
"  --model PATH         GGUF model (sim: optional, for its vocabulary);\n"
"                       again, with a --shm after each, for several\n"
"                       models in one engine\n"
"  --mux MODE           several models: spatial, temporal or muxserve\n"
"                       (default) share one KV pool (docs/multi-model.md)\n"
"  --kv-head-blocks N   several models: the pool, in blocks of one head's\n"
"                       K or V (default: --kv-blocks of the largest)\n"
"  --model-rate R       several models, one per --model in order: its\n"
"                       expected requests/s, for its first quota (1)\n"
"  --backend NAME       cpu (default), cuda or sim\n"
"  --kv-blocks N        KV cache blocks of 16 positions (%d; cuda: what\n"
"                       free GPU memory holds)\n"
"  --kv-mib N           cpu, without --kv-blocks: as many blocks as N MiB\n"
"                       hold (sliding layers' windows counted)\n"
"  --kv-type T          the KV cache's values: f16 (default), as llama.cpp\n"
"                       keeps them, half the memory; f32 (cpu backend)\n"
"  --max-batch N        sequences in one step (%d)\n"
"  --step-tokens N      tokens in one step, prefill chunks included (%d)\n"
"  --max-seqs N         requests held, running and waiting (%d)\n"
"  --sub-slots N        the submission ring's slots, a power of two\n"
"                       (1024)\n"
"  --threads N          cpu: threads (0: one per core)\n"
"  --shm NAME           shared-memory segment (%s)\n"
"  --shm-group GROUP    the segment's group: nginx's workers' (0660)\n"
"  --worker-timeout MS  a worker silent this long with tokens unread is\n"
"                       lost (5000)\n"
"  --prefix-cache X     on (default): keep computed KV blocks for later\n"
"                       requests with the same prefix; off: free them\n"
"  --kv-window X        on (default): cpu, a model's sliding-window layers\n"
"                       keep only their windows; off: every position\n"
"  --sched NAME         fcfs (default): in submission order; andes: under\n"
"                       KV pressure, by each reader's QoE gain\n"
"  --preempt HOW        recompute (default): a preempted sequence's KV is\n"
"                       freed and computed again; swap: copied to host\n"
"                       memory and back (cpu, cuda; else recompute)\n"
"  --swap-mib N         swap: host memory for swapped KV, MiB (4096)\n"
"  --qoe-ttft S         a request's TTFT target when it gives none (1)\n"
"  --qoe-speed N        its reading speed, tokens/s, when none given (5)\n"
"  --step-model SPEC    sim: linear:PREFILL,DECODE, profile:FILE or\n"
"                       gpu[:STEP,PER_SEQ,PER_CTX,PREFILL]; several\n"
"                       models: one for all, or one per --model\n"
"  --speedup X          sim: divide step times by X (1)\n"
"  --vocab N            sim without --model: vocabulary size (32000)\n"
"  --prompt TEXT        one-shot: continue TEXT and print the continuation\n"
"  -n N                 one-shot: tokens to generate (%d)\n"
"  --temperature T      one-shot: 0 (default) is greedy\n"
"  --top-k N, --top-p P one-shot: sampling cuts\n"
"  --seed S             one-shot: the sampler's seed\n"
"  --ignore-eos         one-shot: generate all N tokens\n",
            FG_MAIN_KV_BLOCKS, FG_MAIN_MAX_BATCH, FG_MAIN_STEP_TOKENS,
            FG_MAIN_MAX_SEQS, FG_MAIN_SHM, FG_MAIN_N);
}


static int
fg_main_bad(const char *fmt, const char *opt, const char *val)
{
    fprintf(stderr, "fairgate-engine: ");
    fprintf(stderr, fmt, opt, val);
    fprintf(stderr, "\n(fairgate-engine --help lists the options)\n");

    return -1;
}


static int
fg_main_u32(const char *opt, const char *val, uint32_t min, uint32_t max,
    uint32_t *out)
{
    char           *end;
    unsigned long   v;

    errno = 0;
    v = strtoul(val, &end, 10);

    if (val[0] < '0' || val[0] > '9' || *end != '\0' || errno != 0
        || v < min || v > max)
    {
        fprintf(stderr, "fairgate-engine: %s \"%s\": expected a whole "
                "number from %u to %u\n", opt, val, min, max);
        return -1;
    }

    *out = (uint32_t) v;

    return 0;
}


static int
fg_main_double(const char *opt, const char *val, double min, double max,
    double *out)
{
    char    *end;
    double   v;

    errno = 0;
    v = strtod(val, &end);

    if (end == val || *end != '\0' || errno != 0 || !(v >= min && v <= max))
    {
        fprintf(stderr, "fairgate-engine: %s \"%s\": expected a number from "
                "%g to %g\n", opt, val, min, max);
        return -1;
    }

    *out = v;

    return 0;
}


static int
fg_main_set_str(fg_main_args_t *a, const fg_main_opt_t *o, const char *val)
{
    *fg_main_field(a, o, const char *) = val;

    return 0;
}


static int
fg_main_set_u32(fg_main_args_t *a, const fg_main_opt_t *o, const char *val)
{
    return fg_main_u32(o->name, val, (uint32_t) o->min, (uint32_t) o->max,
                       fg_main_field(a, o, uint32_t));
}


static int
fg_main_set_double(fg_main_args_t *a, const fg_main_opt_t *o,
    const char *val)
{
    return fg_main_double(o->name, val, o->min, o->max,
                          fg_main_field(a, o, double));
}


static int
fg_main_set_float(fg_main_args_t *a, const fg_main_opt_t *o, const char *val)
{
    double  d;

    if (fg_main_double(o->name, val, o->min, o->max, &d) != 0) {
        return -1;
    }

    *fg_main_field(a, o, float) = (float) d;

    return 0;
}


/* told, the cuda backend no longer sizes its cache from free memory */
static int
fg_main_set_kv_blocks(fg_main_args_t *a, const fg_main_opt_t *o,
    const char *val)
{
    if (fg_main_set_u32(a, o, val) != 0) {
        return -1;
    }

    a->kv_blocks_set = 1;

    return 0;
}


static int
fg_main_set_shm(fg_main_args_t *a, const fg_main_opt_t *o, const char *val)
{
    if (!fg_shm_name_valid(val)) {
        return fg_main_bad("%s \"%s\": expected a slash and a name "
                           "without another slash, as /fairgate",
                           o->name, val);
    }

    *fg_main_field(a, o, const char *) = val;

    return 0;
}


/* --model and --shm may come again, in pairs: one model per segment */
static int
fg_main_set_model(fg_main_args_t *a, const fg_main_opt_t *o,
    const char *val)
{
    if (a->n_models == FG_MAIN_MAX_MODELS) {
        return fg_main_bad("%s \"%s\": at most 8 models", o->name, val);
    }

    if (a->n_models == 0) {
        a->model = val;
    }

    a->models[a->n_models++] = val;

    return 0;
}


static int
fg_main_set_shms(fg_main_args_t *a, const fg_main_opt_t *o, const char *val)
{
    if (a->n_shms == FG_MAIN_MAX_MODELS) {
        return fg_main_bad("%s \"%s\": at most 8 segments", o->name, val);
    }

    if (fg_main_set_shm(a, o, val) != 0) {
        return -1;
    }

    a->shms[a->n_shms++] = val;

    return 0;
}


static int
fg_main_set_rate(fg_main_args_t *a, const fg_main_opt_t *o, const char *val)
{
    if (a->n_rates == FG_MAIN_MAX_MODELS) {
        return fg_main_bad("%s \"%s\": at most 8 rates", o->name, val);
    }

    return fg_main_double(o->name, val, o->min, o->max,
                          &a->rates[a->n_rates++]);
}


static int
fg_main_set_step_model(fg_main_args_t *a, const fg_main_opt_t *o,
    const char *val)
{
    if (a->n_step_models == FG_MAIN_MAX_MODELS) {
        return fg_main_bad("%s \"%s\": at most 8 step models", o->name, val);
    }

    a->step_models[a->n_step_models++] = val;
    a->step_model = a->step_models[0];

    return 0;
}


static int
fg_main_set_mux(fg_main_args_t *a, const fg_main_opt_t *o, const char *val)
{
    if (strcmp(val, "spatial") == 0) {
        a->mux = FG_MUX_SPATIAL;

    } else if (strcmp(val, "temporal") == 0) {
        a->mux = FG_MUX_TEMPORAL;

    } else if (strcmp(val, "muxserve") == 0) {
        a->mux = FG_MUX_MUXSERVE;

    } else {
        return fg_main_bad("%s \"%s\": expected spatial, temporal or "
                           "muxserve", o->name, val);
    }

    a->mux_set = 1;

    return 0;
}


static int
fg_main_set_seed(fg_main_args_t *a, const fg_main_opt_t *o, const char *val)
{
    char                *end;
    unsigned long long   seed;

    errno = 0;
    seed = strtoull(val, &end, 10);

    if (val[0] < '0' || val[0] > '9' || *end != '\0' || errno) {
        return fg_main_bad("%s \"%s\": expected a whole number from "
                           "0 to 2^64 - 1", o->name, val);
    }

    *fg_main_field(a, o, uint64_t) = seed;
    a->seeded = 1;

    return 0;
}


static int
fg_main_set_onoff(fg_main_args_t *a, const fg_main_opt_t *o, const char *val)
{
    if (strcmp(val, "on") != 0 && strcmp(val, "off") != 0) {
        return fg_main_bad("%s \"%s\": expected on or off", o->name, val);
    }

    *fg_main_field(a, o, uint32_t) = strcmp(val, "on") == 0;

    return 0;
}


static int
fg_main_set_sched(fg_main_args_t *a, const fg_main_opt_t *o, const char *val)
{
    if (strcmp(val, "fcfs") != 0 && strcmp(val, "andes") != 0) {
        return fg_main_bad("%s \"%s\": expected fcfs or andes", o->name,
                           val);
    }

    a->sched = strcmp(val, "andes") == 0 ? FG_SCHED_ANDES : FG_SCHED_FCFS;

    return 0;
}


static int
fg_main_set_preempt(fg_main_args_t *a, const fg_main_opt_t *o,
    const char *val)
{
    if (strcmp(val, "recompute") != 0 && strcmp(val, "swap") != 0) {
        return fg_main_bad("%s \"%s\": expected recompute or swap", o->name,
                           val);
    }

    a->preempt = strcmp(val, "swap") == 0 ? FG_PREEMPT_SWAP
                                          : FG_PREEMPT_RECOMPUTE;

    return 0;
}


static int
fg_main_set_kv_type(fg_main_args_t *a, const fg_main_opt_t *o,
    const char *val)
{
    if (strcmp(val, "f16") == 0) {
        a->kv_type = FG_BACKEND_KV_F16;
        return 0;
    }

    if (strcmp(val, "f32") == 0) {
        a->kv_type = FG_BACKEND_KV_F32;
        return 0;
    }

    return fg_main_bad("%s \"%s\": expected f16 or f32", o->name, val);
}


static int
fg_main_set_ignore_eos(fg_main_args_t *a, const fg_main_opt_t *o,
    const char *val)
{
    (void) o;
    (void) val;

    a->ignore_eos = 1;

    return 0;
}


#define FG_MAIN_OFF(field)  offsetof(fg_main_args_t, field)

static const fg_main_opt_t  fg_main_opts[] = {
    { "--model", 1, fg_main_set_model, 0, 0, 0 },
    { "--backend", 1, fg_main_set_str, FG_MAIN_OFF(backend), 0, 0 },
    { "--kv-blocks", 1, fg_main_set_kv_blocks, FG_MAIN_OFF(kv_blocks),
      1, 1u << 24 },
    { "--kv-mib", 1, fg_main_set_u32, FG_MAIN_OFF(kv_mib), 1, 1u << 24 },
    { "--kv-type", 1, fg_main_set_kv_type, 0, 0, 0 },
    { "--max-batch", 1, fg_main_set_u32, FG_MAIN_OFF(max_batch), 1, 4096 },
    { "--step-tokens", 1, fg_main_set_u32, FG_MAIN_OFF(step_tokens),
      1, 1u << 20 },
    { "--max-seqs", 1, fg_main_set_u32, FG_MAIN_OFF(max_seqs), 1, 1u << 20 },
    { "--sub-slots", 1, fg_main_set_u32, FG_MAIN_OFF(sub_slots), 1, 1u << 20 },
    { "--threads", 1, fg_main_set_u32, FG_MAIN_OFF(threads), 0, 1024 },
    { "--shm", 1, fg_main_set_shms, FG_MAIN_OFF(shm), 0, 0 },
    { "--mux", 1, fg_main_set_mux, 0, 0, 0 },
    { "--kv-head-blocks", 1, fg_main_set_u32, FG_MAIN_OFF(kv_head_blocks),
      1, 1u << 30 },
    { "--model-rate", 1, fg_main_set_rate, 0, 1e-6, 1e6 },
    { "--shm-group", 1, fg_main_set_str, FG_MAIN_OFF(group), 0, 0 },
    { "--worker-timeout", 1, fg_main_set_u32, FG_MAIN_OFF(worker_timeout),
      10, 3600000 },
    { "--prefix-cache", 1, fg_main_set_onoff, FG_MAIN_OFF(prefix_cache),
      0, 0 },
    { "--kv-window", 1, fg_main_set_onoff, FG_MAIN_OFF(kv_window), 0, 0 },
    { "--sched", 1, fg_main_set_sched, 0, 0, 0 },
    { "--preempt", 1, fg_main_set_preempt, 0, 0, 0 },
    { "--swap-mib", 1, fg_main_set_u32, FG_MAIN_OFF(swap_mib), 1, 1u << 24 },
    { "--qoe-ttft", 1, fg_main_set_double, FG_MAIN_OFF(qoe_ttft),
      1e-3, 3600.0 },
    { "--qoe-speed", 1, fg_main_set_double, FG_MAIN_OFF(qoe_speed),
      1e-3, 1e6 },
    { "--step-model", 1, fg_main_set_step_model, 0, 0, 0 },
    { "--speedup", 1, fg_main_set_double, FG_MAIN_OFF(speedup), 1e-3, 1e12 },
    { "--vocab", 1, fg_main_set_u32, FG_MAIN_OFF(vocab), 4, 1u << 24 },
    { "--prompt", 1, fg_main_set_str, FG_MAIN_OFF(prompt), 0, 0 },
    { "-n", 1, fg_main_set_u32, FG_MAIN_OFF(n), 1, 1u << 24 },
    { "--temperature", 1, fg_main_set_float, FG_MAIN_OFF(sp.temperature),
      0.0, FG_SAMPLE_MAX_TEMPERATURE },
    { "--top-k", 1, fg_main_set_u32, FG_MAIN_OFF(sp.top_k), 0, 1u << 24 },
    { "--top-p", 1, fg_main_set_float, FG_MAIN_OFF(sp.top_p), 1e-6, 1.0 },
    { "--seed", 1, fg_main_set_seed, FG_MAIN_OFF(sp.seed), 0, 0 },
    { "--ignore-eos", 0, fg_main_set_ignore_eos, 0, 0, 0 },
};

#define FG_MAIN_NOPTS  (sizeof(fg_main_opts) / sizeof(fg_main_opts[0]))


/* getopt_long's table: the long options of ours, then --help */
static void
fg_main_long_options(struct option *lo)
{
    size_t  i, n;

    n = 0;

    for (i = 0; i < FG_MAIN_NOPTS; i++) {
        if (fg_main_opts[i].name[1] != '-') {
            continue;
        }

        lo[n].name = fg_main_opts[i].name + 2;
        lo[n].has_arg = fg_main_opts[i].has_arg ? required_argument
                                                : no_argument;
        lo[n].flag = NULL;
        lo[n].val = FG_MAIN_OPT_VAL + (int) i;
        n++;
    }

    lo[n].name = "help";
    lo[n].has_arg = no_argument;
    lo[n].flag = NULL;
    lo[n].val = 'h';
    n++;

    memset(&lo[n], 0, sizeof(struct option));
}


/* the table's entry of what getopt_long returned (-n: 'n'); NULL: none */
static const fg_main_opt_t *
fg_main_option(int c)
{
    size_t  i;

    if (c >= FG_MAIN_OPT_VAL && c < FG_MAIN_OPT_VAL + (int) FG_MAIN_NOPTS) {
        return &fg_main_opts[c - FG_MAIN_OPT_VAL];
    }

    for (i = 0; i < FG_MAIN_NOPTS; i++) {
        if (fg_main_opts[i].name[1] == c && fg_main_opts[i].name[2] == '\0')
        {
            return &fg_main_opts[i];
        }
    }

    return NULL;
}


static void
fg_main_defaults(fg_main_args_t *a)
{
    memset(a, 0, sizeof(fg_main_args_t));
    a->backend = FG_MAIN_BACKEND;
    a->shm = FG_MAIN_SHM;
    a->kv_blocks = FG_MAIN_KV_BLOCKS;
    a->max_batch = FG_MAIN_MAX_BATCH;
    a->step_tokens = FG_MAIN_STEP_TOKENS;
    a->max_seqs = FG_MAIN_MAX_SEQS;
    a->n = FG_MAIN_N;
    a->prefix_cache = 1;
    a->kv_window = 1;
    a->qoe_ttft = 1.0;
    a->qoe_speed = 5.0;
    a->swap_mib = FG_BATCH_SWAP_BYTES >> 20;
    a->speedup = 1.0;
    a->mux = FG_MUX_MUXSERVE;
    fg_sample_params_init(&a->sp);
}


/* several models: --model and --shm in pairs, no one-shot */
static int
fg_main_check_mux(fg_main_args_t *a)
{
    uint32_t  i;

    if (a->n_models < 2 && !a->mux_set) {
        if (a->n_step_models > 1) {
            return fg_main_bad("%s%s: several for one model", "--step-model",
                               "");
        }

        return a->n_rates ? fg_main_bad("%s%s goes with several models",
                                        "--model-rate", "") : 0;
    }

    if (a->n_shms != a->n_models) {
        fprintf(stderr, "fairgate-engine: several models need one --shm "
                "each, after its --model (%u models, %u segments)\n",
                a->n_models, a->n_shms);
        return -1;
    }

    if (a->n_rates > a->n_models) {
        return fg_main_bad("%s%s: more rates than models", "--model-rate",
                           "");
    }

    if (a->n_step_models > 1 && a->n_step_models != a->n_models) {
        fprintf(stderr, "fairgate-engine: --step-model: one for all models "
                "or one per --model (%u models, %u step models)\n",
                a->n_models, a->n_step_models);
        return -1;
    }

    if (a->prompt) {
        return fg_main_bad("%s%s serves one model", "--prompt", "");
    }

    for (i = 0; i < a->n_models; i++) {
        a->rates[i] = i < a->n_rates ? a->rates[i] : 1.0;
        a->step_models[i] = a->n_step_models > 1 ? a->step_models[i]
                                                 : a->step_model;
    }

    return 0;
}


/* what no single option says: the options together */
static int
fg_main_check(fg_main_args_t *a)
{
    if (strcmp(a->backend, "cpu") != 0 && strcmp(a->backend, "sim") != 0
        && strcmp(a->backend, "cuda") != 0)
    {
        return fg_main_bad("%s \"%s\": expected cpu, cuda or sim",
                           "--backend", a->backend);
    }

    if (a->model == NULL && (strcmp(a->backend, "sim") != 0 || a->prompt)) {
        return fg_main_bad("%s is required%s", "--model PATH",
                           strcmp(a->backend, "sim") == 0
                           ? " (the one-shot mode needs its tokenizer)" : "");
    }

    if (fg_main_check_mux(a) != 0) {
        return -1;
    }

    if (a->step_tokens < a->max_batch) {
        fprintf(stderr, "fairgate-engine: --step-tokens must be at least "
                "--max-batch (%u < %u): every sequence of a step needs a "
                "token\n", a->step_tokens, a->max_batch);
        return -1;
    }

    if (a->max_seqs < a->max_batch) {
        a->max_seqs = a->max_batch;
    }

    if (!a->seeded) {
        a->sp.seed = (uint64_t) time(NULL) ^ ((uint64_t) getpid() << 32);
    }

    return 0;
}


int
fg_main_parse(int argc, char **argv, fg_main_args_t *a)
{
    int                   c;
    struct option         lo[FG_MAIN_NOPTS + 2];
    const fg_main_opt_t  *o;

    fg_main_defaults(a);
    fg_main_long_options(lo);

    opterr = 0;

    while ((c = getopt_long(argc, argv, ":n:h", lo, NULL)) != -1) {

        if (c == 'h') {
            fg_main_usage(stdout);
            exit(0);
        }

        if (c == ':') {
            return fg_main_bad("%s needs a value%s", argv[optind - 1], "");
        }

        o = fg_main_option(c);

        if (o == NULL) {
            return fg_main_bad("unknown option \"%s\"%s",
                               argv[optind - 1], "");
        }

        if (o->set(a, o, optarg) != 0) {
            return -1;
        }
    }

    if (optind < argc) {
        return fg_main_bad("unexpected argument \"%s\"%s", argv[optind], "");
    }

    return fg_main_check(a);
}
