
/*
 * fairgate: the unified KV pool of several models in one engine
 * (MuxServe's head-wise cache): one arena of head blocks, each one head's
 * keys or values for block_size positions, that every model's cache takes
 * from.  A model's token block (block_size positions of all its layers)
 * takes 2 x layers x kv_heads head blocks, from anywhere in the arena, so
 * models of different shapes share it without fragmentation; its fg_kv
 * takes them when it takes the block and gives them back when the block
 * is free again (fg_kv_set_arena()), and the model's backend reads them
 * through the map fg_kv keeps (kernels/fg_kernels.h, fg_k_kv_head()).
 *
 * The models' lanes run on threads, so taking and giving are under a
 * mutex; nothing else changes after creation.  The memory is anonymous
 * pages, taken as they are first written: the arena's resident size
 * follows the most head blocks the models held at once, where caches of
 * their own would each keep the most they had held.
 */

#ifndef _FG_KV_ARENA_H_INCLUDED_
#define _FG_KV_ARENA_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_backend.h"


typedef struct fg_kv_arena_s  fg_kv_arena_t;


/*
 * n head blocks of head_floats floats each (block_size x the largest
 * head size of the models).  NULL with err filled.
 */
fg_kv_arena_t *fg_kv_arena_create(uint32_t n, size_t head_floats,
    char *err, size_t errlen);
void fg_kv_arena_destroy(fg_kv_arena_t *a);

float *fg_kv_arena_base(const fg_kv_arena_t *a);
size_t fg_kv_arena_head_floats(const fg_kv_arena_t *a);
uint32_t fg_kv_arena_size(const fg_kv_arena_t *a);

/* head blocks free now; the most ever held at once */
uint32_t fg_kv_arena_free(fg_kv_arena_t *a);
uint32_t fg_kv_arena_peak(fg_kv_arena_t *a);

/* a backend's cache in the arena's head blocks that map says (fg_kv_map()) */
void fg_kv_arena_conf(const fg_kv_arena_t *a, const uint32_t *map,
    fg_backend_conf_t *conf);

/* n head blocks into out: 0, or -1 (fewer free; nothing taken) */
int fg_kv_arena_take(fg_kv_arena_t *a, uint32_t n, uint32_t *out);
void fg_kv_arena_give(fg_kv_arena_t *a, uint32_t n, const uint32_t *in);


#endif /* _FG_KV_ARENA_H_INCLUDED_ */
