
/*
 * fairgate: the request bodies of OpenAI's POST /v1/chat/completions,
 * POST /v1/completions, POST /v1/responses (a chat: its input and
 * instructions become messages) and POST /v1/embeddings, parsed (jansson)
 * and validated for local mode.
 *
 * Pure C, no nginx types: the nginx glue hands over the body it read and
 * gets either a request, self-contained (every string copied, the JSON
 * tree freed), or an OpenAI-shaped error that names the offending
 * parameter.  A field that would change the output and that fairgate
 * does not implement (audio, a JSON Schema keyword the grammars lack ...)
 * is refused with a 400, never ignored; fields that change nothing here
 * are accepted with the values that keep them harmless.  The full list is
 * in docs/openai-api.md.
 */

#ifndef _FG_OPENAI_REQUEST_H_INCLUDED_
#define _FG_OPENAI_REQUEST_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


/* OpenAI takes at most four stop strings */
#define FG_OAI_MAX_STOP       4
#define FG_OAI_MAX_N          16      /* choices per request */

/* the longest stop string the stream matcher can hold back, in bytes */
#define FG_OAI_STOP_MAX_LEN   256

/* logit_bias entries (the engine's protocol carries 128), chat's
 * top_logprobs and completions' logprobs, as OpenAI bounds them */
#define FG_OAI_MAX_BIAS       128
#define FG_OAI_MAX_TOP_CHAT   20
#define FG_OAI_MAX_TOP_TEXT   5

/* a grammar's GBNF text, in bytes: what the engine's protocol carries
 * (FG_SHM_MAX_GRAMMAR) */
#define FG_OAI_MAX_GRAMMAR    65536


typedef enum {
    FG_OAI_CHAT = 1,                /* /v1/chat/completions */
    FG_OAI_COMPLETION,              /* /v1/completions */
    FG_OAI_RESPONSES,               /* /v1/responses: a chat underneath */
    FG_OAI_EMBEDDING                /* /v1/embeddings */
} fg_oai_kind_e;


/* OpenAI takes at most 2048 inputs in one embeddings request */
#define FG_OAI_MAX_INPUTS     2048


typedef enum {
    FG_OAI_SYSTEM = 0,
    FG_OAI_DEVELOPER,               /* OpenAI's newer name for system */
    FG_OAI_USER,
    FG_OAI_ASSISTANT,
    FG_OAI_TOOL                     /* a tool's result (fg_openai_tools.c) */
} fg_oai_role_e;


/* bytes and length; data is NUL-terminated too (jansson refuses \u0000) */
typedef struct {
    const char          *data;
    size_t               len;
} fg_oai_str_t;


/* a call an assistant message made, as the client gives it back */
typedef struct {
    fg_oai_str_t         id;
    fg_oai_str_t         name;
    fg_oai_str_t         arguments; /* JSON text, as the client sent it */
} fg_oai_tool_call_t;


typedef struct {
    fg_oai_role_e        role;
    fg_oai_str_t         content;   /* text parts joined with "\n" */

    /* assistant: the calls it made; tool: the call it answers (zero
     * when unused: a caller building messages itself clears them) */
    fg_oai_tool_call_t  *tool_calls;
    size_t               n_tool_calls;
    fg_oai_str_t         tool_call_id;
    unsigned             null_content:1;    /* content was null */
} fg_oai_message_t;


/* tool_choice: auto (the default with tools), none, required, a name */
typedef enum {
    FG_OAI_TOOLS_AUTO = 0,
    FG_OAI_TOOLS_NONE,
    FG_OAI_TOOLS_REQUIRED,
    FG_OAI_TOOLS_NAMED
} fg_oai_tool_choice_e;


/*
 * What a /v1/responses request says back in its Response object, beside
 * the fields every request has (fg_openai_responses.c).  The input and the
 * instructions are messages (the instructions a system message, first).
 */
typedef struct {
    fg_oai_str_t         instructions;    /* data NULL: none */
    fg_oai_str_t        *metadata;        /* key, value, key, value ... */
    fg_oai_str_t         format;          /* text.format as given, compact
                                             JSON; data NULL: "text" */
    size_t               n_metadata;      /* pairs */
    unsigned             tool_choice_none:1;   /* else "auto" */
    unsigned             parallel_tool_calls:1;
    unsigned             truncation_auto:1;    /* else "disabled" */
    fg_oai_str_t         tools;           /* as given, JSON; data NULL:
                                             none */
} fg_oai_responses_t;


/* one input of an embeddings request: text, or token ids (text.data
 * NULL); never empty */
typedef struct {
    fg_oai_str_t         text;
    int32_t             *ids;
    size_t               n_ids;
} fg_oai_input_t;


/*
 * Every limit a body is checked against; fg_oai_limits_init() sets the
 * defaults named in brackets.
 */
typedef struct {
    size_t               max_body;        /* bytes of JSON [4 MiB]: 413 */
    size_t               max_messages;    /* [1024] */
    size_t               max_parts;       /* text parts of one content [64] */
    size_t               max_text;        /* bytes of all message text, or
                                             of a prompt [2 MiB] */
    size_t               max_model;       /* bytes of "model" [256] */
    size_t               max_user;        /* bytes of "user" [256] */
    size_t               max_stop_len;    /* bytes of one stop string [256],
                                             at most FG_OAI_STOP_MAX_LEN */
    size_t               max_prompt_ids;  /* a token-id prompt [131072] */
    uint32_t             max_tokens;      /* largest max_tokens [1048576];
                                             the context is the glue's */
    uint32_t             n_vocab;         /* token ids must be below it;
                                             0: not checked here [0] */
} fg_oai_limits_t;


/*
 * An error as OpenAI returns it:
 *     {"error": {"message": M, "type": T, "param": P, "code": C}}
 * param "" and code NULL are written as null.  Params name the place in
 * the body: "max_tokens", "messages[2].content", "stop[1]",
 * "stream_options.include_usage".
 */
typedef struct {
    int                  status;    /* HTTP: 400, 413; 500 out of memory */
    const char          *type;      /* "invalid_request_error" ... */
    const char          *code;      /* "invalid_type" ... or NULL */
    char                 param[96];
    char                 message[400];
} fg_oai_error_t;


typedef struct {
    fg_oai_kind_e        kind;
    fg_oai_str_t         model;

    /* chat: at least one message */
    fg_oai_message_t    *messages;
    size_t               n_messages;

    /* completions: the prompt as text, or as token ids (prompt.data NULL) */
    fg_oai_str_t         prompt;
    int32_t             *prompt_ids;
    size_t               n_prompt_ids;

    /* 0: until the context ends (chat without max_tokens); completions
     * default to 16 as OpenAI's do */
    uint32_t             max_tokens;

    /* choices (n, 1 .. FG_OAI_MAX_N; 1 when not given) and completions'
     * best_of (0: not given; else n .. FG_OAI_MAX_N candidates, of which
     * the n of the highest cumulative log-probability are returned) */
    uint32_t             n;
    uint32_t             best_of;

    /* as the engine takes them (engine/shm/fg_shm_client.h): temperature in
     * [0, 2] (default 1), top_p in (0, 1] (top_p 0, "the most likely
     * token only", is given as temperature 0), top_k 0 for all */
    float                temperature;
    float                top_p;
    uint32_t             top_k;
    uint64_t             seed;          /* an int64 as its bit pattern */

    fg_oai_str_t         stop[FG_OAI_MAX_STOP];
    size_t               n_stop;

    fg_oai_str_t         user;          /* len 0: none */

    fg_oai_responses_t  *responses;     /* /v1/responses; NULL otherwise */
    /*
     * The logits' adjustments, as the engine takes them: OpenAI's
     * frequency and presence penalties in [-2, 2] (0: off), logit_bias
     * (token ids checked against lim->n_vocab, biases in [-100, 100]),
     * vLLM's and llama.cpp's repetition_penalty in (0, 100] (1: off) and
     * min_p in [0, 1] (0: off)
     */
    float                frequency_penalty;
    float                presence_penalty;
    float                repetition_penalty;
    float                min_p;
    int32_t             *bias_id;
    float               *bias;
    size_t               n_bias;

    /* log-probabilities: chat's logprobs true with top_logprobs 0 .. 20
     * alternatives, completions' logprobs N (0 .. 5) */
    uint32_t             top_logprobs;
    unsigned             logprobs:1;

    /* structured output: the GBNF text every output follows, from
     * response_format json_object or json_schema, text.format, or
     * llama.cpp's "grammar" (fg_openai_format.c); data NULL: none */
    fg_oai_str_t         grammar;

    /* completions: the prompt's text before the completion's (never with
     * logprobs: the engine has no log-probabilities of the prompt) */
    unsigned             echo:1;

    /* chat: "tools" as the client wrote them, compact JSON text (data
     * NULL: none), and their function names; tool_choice, and the name
     * a named choice gives (fg_openai_tools.c) */
    fg_oai_str_t         tools;
    fg_oai_str_t        *tool_names;
    size_t               n_tools;
    fg_oai_tool_choice_e tool_choice;
    fg_oai_str_t         tool_choice_name;
    unsigned             parallel_tool_calls:1;

    unsigned             has_max_tokens:1;
    unsigned             has_seed:1;
    unsigned             stream:1;
    unsigned             include_usage:1;
    unsigned             ignore_eos:1;

    /* embeddings: 1 .. FG_OAI_MAX_INPUTS inputs; dimensions 0 when not
     * given (the glue compares it with the model's width); base64: the
     * vectors as little-endian float32 bytes, base64-encoded */
    fg_oai_input_t      *inputs;
    size_t               n_inputs;
    uint32_t             dimensions;
    unsigned             base64:1;

    /* private: the memory all of the above lives in */
    void                *mem;
} fg_oai_request_t;


void fg_oai_limits_init(fg_oai_limits_t *lim);

/*
 * Parses and validates a body of len bytes (not NUL-terminated).  NULL
 * with err filled when it is refused or memory runs out.
 */
fg_oai_request_t *fg_oai_request_parse(fg_oai_kind_e kind, const char *body,
    size_t len, const fg_oai_limits_t *lim, fg_oai_error_t *err);

void fg_oai_request_free(fg_oai_request_t *r);

/* "system", "developer", "user", "assistant" */
const char *fg_oai_role_name(fg_oai_role_e role);

/* fills err (status 400, "invalid_request_error") for the glue's own
 * checks: unknown model, prompt longer than the context ...; param may be
 * NULL */
void fg_oai_error_set(fg_oai_error_t *err, int status, const char *code,
    const char *param, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));


#endif /* _FG_OPENAI_REQUEST_H_INCLUDED_ */
