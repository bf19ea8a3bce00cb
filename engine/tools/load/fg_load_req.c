
/*
 * fairgate: the load generator's requests.
 */


#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fg_load_req.h"
#include "fg_rand.h"


/* one token each, with their leading space, in the common BPE vocabularies */
static const char  *fg_load_words[] = {
    "the", "of", "and", "to", "in", "is", "was", "for", "on", "as", "with",
    "by", "at", "from", "his", "her", "that", "it", "be", "are", "this",
    "had", "not", "but", "have", "one", "all", "were", "they", "which",
    "you", "we", "an", "or", "their", "there", "been", "has", "more",
    "would", "out", "so", "up", "what", "about", "into", "time", "can",
    "only", "new", "some", "could", "than", "first", "other", "people",
    "very", "after", "made", "like"
};

#define FG_LOAD_NWORDS  (sizeof(fg_load_words) / sizeof(fg_load_words[0]))

/* the longest word, and its space */
#define FG_LOAD_WORD_MAX  7


char *
fg_load_prompt(uint32_t n, uint64_t seed)
{
    char           *text, *p;
    size_t          len;
    uint32_t        i;
    fg_rand_t       rng;
    const char     *w;

    text = malloc((size_t) n * FG_LOAD_WORD_MAX + 1);
    if (text == NULL) {
        return NULL;
    }

    fg_rand_stream(&rng, seed, 0x70726f6d7074ULL);
    p = text;

    for (i = 0; i < n; i++) {
        w = fg_load_words[fg_rand_next(&rng) % FG_LOAD_NWORDS];
        len = strlen(w);

        if (i > 0) {
            *p++ = ' ';
        }

        memcpy(p, w, len);
        p += len;
    }

    *p = '\0';

    return text;
}


int
fg_load_req_stream(const fg_load_req_conf_t *conf, const fg_sim_req_t *r)
{
    return r->stream >= 0 ? r->stream : conf->stream;
}


/* 64-bit FNV-1a of a name: the seed of the words it stands for */
static uint64_t
fg_load_name_seed(const char *name)
{
    uint64_t  h;

    for (h = 14695981039346656037ULL; name != NULL && *name; name++) {
        h = (h ^ (unsigned char) *name) * 1099511628211ULL;
    }

    return h;
}


/* the same words for one app and stage */
static uint64_t
fg_load_system_seed(const char *app, int32_t stage)
{
    return fg_load_name_seed(app)
           ^ ((uint64_t) (stage < 0 ? 0 : stage) << 48) ^ 0x73797374ULL;
}


/* the same words for one shared prefix, whatever its length */
static uint64_t
fg_load_prefix_seed(const char *prefix)
{
    return fg_load_name_seed(prefix) ^ 0x707265666978ULL;
}


static json_t *
fg_load_message(const char *role, uint32_t words, uint64_t seed)
{
    char    *text;
    json_t  *m;

    text = fg_load_prompt(words, seed);
    if (text == NULL) {
        return NULL;
    }

    m = json_pack("{ssss}", "role", role, "content", text);
    free(text);

    return m;
}


char *
fg_load_req_body(const fg_load_req_conf_t *conf, const fg_sim_trace_t *tr,
    size_t i)
{
    int                  stream;
    char                *body;
    json_t              *root, *messages, *m;
    uint32_t             user_words;
    const fg_sim_req_t  *r;

    r = &tr->reqs[i];
    stream = fg_load_req_stream(conf, r);

    messages = json_array();
    if (messages == NULL) {
        return NULL;
    }

    user_words = r->input_tokens;
    m = NULL;

    if (r->prefix != 0) {
        /* the first words of the prefix's own stream: a shorter use of
         * the id is a prefix of a longer one */
        m = fg_load_message("system", r->prefix_tokens,
                            fg_load_prefix_seed(fg_sim_trace_str_get(
                                                    tr, r->prefix)));

        /* a user message of at least one word: a prompt all prefix */
        user_words = r->prefix_tokens < r->input_tokens
                     ? r->input_tokens - r->prefix_tokens : 1;

    } else if (r->system_tokens > 0 && r->system_tokens < r->input_tokens) {
        m = fg_load_message("system", r->system_tokens,
                            fg_load_system_seed(fg_sim_trace_str_get(tr,
                                                                     r->app),
                                                r->stage));
        user_words -= r->system_tokens;
    }

    if (m != NULL && json_array_append_new(messages, m) != 0) {
        json_decref(messages);
        return NULL;
    }

    /* the request's index: its own text, the same in every replay */
    m = fg_load_message("user", user_words, (uint64_t) i);
    if (json_array_append_new(messages, m) != 0) {
        json_decref(messages);
        return NULL;
    }

    /* the trace's model when it names one (several models), else --model */
    root = json_pack("{sssosIsb}", "model",
                     r->model ? fg_sim_trace_str_get(tr, r->model)
                              : conf->model,
                     "messages",
                     messages, "max_tokens", (json_int_t) r->output_tokens,
                     "stream", stream);
    if (root == NULL) {
        return NULL;
    }

    if (stream
        && json_object_set_new(root, "stream_options",
                               json_pack("{sb}", "include_usage", 1))
           != 0)
    {
        json_decref(root);
        return NULL;
    }

    if (conf->ignore_eos
        && json_object_set_new(root, "ignore_eos", json_true()) != 0)
    {
        json_decref(root);
        return NULL;
    }

    body = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);

    return body;
}


/* appends a formatted header; frees the list and gives NULL on failure */
static struct curl_slist *
fg_load_header(struct curl_slist *list, const char *fmt, ...)
{
    int                  len;
    char                *h;
    va_list              args;
    struct curl_slist   *more;

    if (list == NULL) {
        return NULL;
    }

    va_start(args, fmt);
    len = vsnprintf(NULL, 0, fmt, args);
    va_end(args);

    h = len >= 0 ? malloc(len + 1) : NULL;
    if (h == NULL) {
        curl_slist_free_all(list);
        return NULL;
    }

    va_start(args, fmt);
    vsnprintf(h, len + 1, fmt, args);
    va_end(args);

    more = curl_slist_append(list, h);
    free(h);

    if (more == NULL) {
        curl_slist_free_all(list);
    }

    return more;
}


uint32_t *
fg_load_req_stages(const fg_sim_trace_t *tr)
{
    size_t               i;
    uint32_t            *stages;
    const fg_sim_req_t  *r;

    stages = calloc((size_t) tr->nstrs + 1, sizeof(uint32_t));
    if (stages == NULL) {
        return NULL;
    }

    for (i = 0; i < tr->n; i++) {
        r = &tr->reqs[i];

        /* stage <= FG_SIM_MAX_STAGE: stage + 1 does not wrap */
        if (r->interaction != 0 && r->stage >= 0
            && (uint32_t) r->stage + 1 > stages[r->interaction])
        {
            stages[r->interaction] = (uint32_t) r->stage + 1;
        }
    }

    return stages;
}


/* without a table: the interaction's largest stage + 1 among its lines */
static uint32_t
fg_load_req_count_stages(const fg_sim_trace_t *tr, uint32_t interaction)
{
    size_t    i;
    uint32_t  n;

    n = 0;

    for (i = 0; i < tr->n; i++) {
        if (tr->reqs[i].interaction == interaction && tr->reqs[i].stage >= 0
            && (uint32_t) tr->reqs[i].stage + 1 > n)
        {
            n = (uint32_t) tr->reqs[i].stage + 1;
        }
    }

    return n;
}


struct curl_slist *
fg_load_req_headers(const fg_load_req_conf_t *conf, const fg_sim_trace_t *tr,
    size_t i)
{
    uint32_t             stages;
    const char          *client, *user;
    struct curl_slist   *list, *more, *h;
    const fg_sim_req_t  *r;

    r = &tr->reqs[i];
    client = tr->clients[r->client].name;
    user = r->user ? fg_sim_trace_str_get(tr, r->user) : client;

    list = curl_slist_append(NULL, "Content-Type: application/json");

    /* curl would wait for a 100 Continue before a body over 1 KB */
    list = fg_load_header(list, "Expect:");

    if (r->key) {
        list = fg_load_header(list, "Authorization: Bearer %s",
                              fg_sim_trace_str_get(tr, r->key));

    } else if (conf->key_prefix != NULL) {
        list = fg_load_header(list, "Authorization: Bearer %s%s",
                              conf->key_prefix, client);
    }

    list = fg_load_header(list, "X-User: %s", user);

    if (r->app) {
        list = fg_load_header(list, "X-App: %s",
                              fg_sim_trace_str_get(tr, r->app));
    }

    if (r->interaction) {
        list = fg_load_header(list, "X-Fairgate-Interaction: %s",
                              fg_sim_trace_str_get(tr, r->interaction));
    }

    if (r->stage >= 0) {
        list = fg_load_header(list, "X-Fairgate-Stage: %d", (int) r->stage);
    }

    if (r->interaction) {
        stages = conf->stages != NULL ? conf->stages[r->interaction]
                 : fg_load_req_count_stages(tr, r->interaction);

        if (stages > 0) {
            list = fg_load_header(list, "X-Fairgate-Stages: %u", stages);
        }
    }

    /* the reader's expectations, on the run's clock, within what the
     * gateway's fairgate_qoe reads (3 decimals above 0; at most 10,000
     * tokens a second, a reader no stream outruns) */
    if (r->ttft_target > 0) {
        list = fg_load_header(list, "X-Fairgate-TTFT: %.3f",
                              fmax(r->ttft_target * conf->time_scale,
                                   0.001));
    }

    if (r->tokens_per_s > 0) {
        list = fg_load_header(list, "X-Fairgate-Reading-Speed: %.3f",
                              fmin(fmax(r->tokens_per_s / conf->time_scale,
                                        0.001), 10000));
    }

    for (h = conf->headers; h != NULL && list != NULL; h = h->next) {
        more = curl_slist_append(list, h->data);
        if (more == NULL) {
            curl_slist_free_all(list);
        }

        list = more;
    }

    return list;
}


int
fg_load_req_header_ok(const char *header)
{
    const char  *p;

    /* RFC 9110 token characters */
    for (p = header; *p != ':'; p++) {
        if (*p == '\0'
            || !(strchr("!#$%&'*+-.^_`|~", *p) != NULL
                 || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z')
                 || (*p >= 'A' && *p <= 'Z')))
        {
            return -1;
        }
    }

    if (p == header) {
        return -1;
    }

    for (p++; *p != '\0'; p++) {
        if (((unsigned char) *p < 0x20 && *p != '\t') || *p == 0x7f) {
            return -1;
        }
    }

    return 0;
}


const char *
fg_load_req_bad_client(const fg_sim_trace_t *tr)
{
    uint32_t              c;
    const unsigned char  *p;

    for (c = 0; c < tr->nclients; c++) {
        for (p = (const unsigned char *) tr->clients[c].name; *p; p++) {
            if (*p < 0x20 || *p == 0x7f) {
                return tr->clients[c].name;
            }
        }
    }

    return NULL;
}
