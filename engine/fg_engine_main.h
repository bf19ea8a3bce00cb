
/*
 * fairgate: fairgate-engine's start-up, shared by its one-model path
 * (fg_engine_main.c) and its several-models path (fg_engine_main_mux.c).
 */

#ifndef _FG_ENGINE_MAIN_H_INCLUDED_
#define _FG_ENGINE_MAIN_H_INCLUDED_


#include <signal.h>

#include "fg_backend.h"
#include "fg_batch.h"
#include "fg_engine_options.h"
#include "fg_kv.h"
#include "fg_shm_engine.h"
#include "fg_tokenizer.h"


#define FG_MAIN_MAX_EOG     64


/* the end-of-generation ids of a tokenizer */
uint32_t fg_main_eog(const fg_tokenizer_t *tok, int32_t *eog, uint32_t max);

/* the model file's tokenizer: NULL with the reason on stderr */
fg_tokenizer_t *fg_main_tokenizer(const char *model);

/*
 * the backend of a->model, a->kv_blocks blocks, in arena's head blocks
 * that map says (several models on the cpu backend) or, arena NULL, a
 * cache of its own; NULL, reason on stderr
 */
fg_backend_t *fg_main_backend(fg_main_args_t *a, const fg_backend_ops_t *ops,
    const fg_tokenizer_t *tok, fg_kv_arena_t *arena, const uint32_t *map,
    fg_backend_info_t *info);

/* the segment's conf for a model (its name left to the caller) */
void fg_main_shm_conf(const fg_main_args_t *a, const fg_backend_ops_t *ops,
    fg_kv_t *kv, const fg_tokenizer_t *tok, const fg_backend_info_t *info,
    fg_shm_engine_conf_t *sc);

/* the batcher's conf for serving a segment; eog: FG_MAIN_MAX_EOG room */
void fg_main_batch_conf(const fg_main_args_t *a, const fg_tokenizer_t *tok,
    int32_t *eog, fg_shm_engine_t *shm, fg_batch_conf_t *bc);

/*
 * Several models (--model and --shm in pairs, --mux): each model's
 * tokenizer, backend, KV pool, segment and batcher, then
 * fg_engine_mux_serve() until *stop.  The exit status.
 */
int fg_main_mux(fg_main_args_t *a, const fg_backend_ops_t *ops,
    volatile sig_atomic_t *stop);


#endif /* _FG_ENGINE_MAIN_H_INCLUDED_ */
