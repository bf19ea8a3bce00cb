
/*
 * fairgate: the tree's one hash, XXH3 (xxHash 0.8), used header-only: it
 * is inlined where it runs (the tokenizer's vocabulary and merge lookups,
 * the GGUF reader's key index, interaction ids), which for short keys is
 * most of its cost, and no part links libxxhash.
 */

#ifndef _FG_HASH_H_INCLUDED_
#define _FG_HASH_H_INCLUDED_


#define XXH_INLINE_ALL
#include <xxhash.h>


#endif /* _FG_HASH_H_INCLUDED_ */
