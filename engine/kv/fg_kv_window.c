
/*
 * fairgate: the slots of sliding-window layers (fg_kv_set_window()): a
 * block holds a slot only while a sequence's window needs its keys and
 * values, or while the prefix cache may give it to a later sequence.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_kv.h"
#include "fg_kv_int.h"
#include "fg_mem.h"


int
fg_kv_set_window(fg_kv_t *kv, uint32_t window, uint32_t n_slots,
    char *err, size_t errlen)
{
    uint32_t  i;

    if (kv->window == window && kv->n_slots == n_slots) {
        return 0;
    }

    if (kv->n_free != kv->n_blocks || kv->n_evictable || kv->window
        || window == 0 || n_slots == 0 || n_slots > INT32_MAX)
    {
        snprintf(err, errlen, "a window of %u positions in %u slots: both "
                 "at least 1, set once, before any block is taken",
                 window, n_slots);
        return -1;
    }

    kv->slot = malloc(kv->n_blocks * sizeof(int32_t));
    kv->srefs = calloc(kv->n_blocks, sizeof(uint32_t));
    kv->slot_free = malloc(n_slots * sizeof(int32_t));

    if (kv->slot == NULL || kv->srefs == NULL || kv->slot_free == NULL) {
        fg_kv_window_destroy(kv);
        snprintf(err, errlen, "no memory for %u window slots", n_slots);
        return -1;
    }

    for (i = 0; i < kv->n_blocks; i++) {
        kv->slot[i] = -1;
    }

    /* slot 0 on top, as the blocks' stack */
    for (i = 0; i < n_slots; i++) {
        kv->slot_free[i] = (int32_t) (n_slots - 1 - i);
    }

    kv->window = window;
    kv->n_slots = n_slots;
    kv->n_slot_free = n_slots;
    kv->cursor = 0;

    return 0;
}


void
fg_kv_window_destroy(fg_kv_t *kv)
{
    fg_free_all(kv->slot, kv->srefs, kv->slot_free);
    kv->slot = NULL;
    kv->srefs = NULL;
    kv->slot_free = NULL;
    kv->window = 0;
    kv->n_slots = 0;
    kv->n_slot_free = 0;
}


uint32_t
fg_kv_window(const fg_kv_t *kv)
{
    return kv->window;
}


uint32_t
fg_kv_window_slots(const fg_kv_t *kv)
{
    return kv->n_slots;
}


uint32_t
fg_kv_window_free(const fg_kv_t *kv)
{
    return kv->n_slot_free;
}


const int32_t *
fg_kv_slots(const fg_kv_t *kv)
{
    return kv->slot;
}


void
fg_kv_window_drop(fg_kv_t *kv, int32_t b)
{
    if (kv->window == 0 || kv->slot[b] < 0) {
        return;
    }

    kv->slot_free[kv->n_slot_free++] = kv->slot[b];
    kv->slot[b] = -1;
    kv->srefs[b] = 0;
}


/*
 * A slot for block b: a free one, else one that no sequence needs (a
 * cached block's, whose sliding layers are then lost: the prefix cache
 * stops its windows short of it).  -1 when every slot is needed.
 */
static int
fg_kv_window_take(fg_kv_t *kv, int32_t b)
{
    uint32_t  i, c;

    for (i = 0; kv->n_slot_free == 0 && i < kv->n_blocks; i++) {
        c = (kv->cursor + i) % kv->n_blocks;

        if (kv->slot[c] >= 0 && kv->srefs[c] == 0) {
            fg_kv_window_drop(kv, (int32_t) c);
            kv->cursor = (c + 1) % kv->n_blocks;
        }
    }

    if (kv->n_slot_free == 0) {
        return -1;
    }

    kv->slot[b] = kv->slot_free[--kv->n_slot_free];

    return 0;
}


/*
 * A sequence no longer needs block b's slot.  The last such sequence
 * lets it go, but a cached block keeps it when the sequence ended with
 * the block still in its window (kept): a later sequence with the same
 * prefix can start there.
 */
static void
fg_kv_window_unref(fg_kv_t *kv, int32_t b, int kept)
{
    if (kv->slot[b] < 0 || kv->srefs[b] == 0 || --kv->srefs[b] != 0) {
        return;
    }

    if (!(kept && kv->hash[b])) {
        fg_kv_window_drop(kv, b);
    }
}


void
fg_kv_window_seq_free(fg_kv_t *kv, fg_kv_seq_t *s)
{
    uint32_t  i;

    if (kv->window == 0) {
        return;
    }

    for (i = s->swa_lo; i < s->swa_hi && i < s->n_blocks; i++) {
        fg_kv_window_unref(kv, s->blocks[i], 1);
    }

    s->swa_lo = 0;
    s->swa_hi = 0;
}


int
fg_kv_seq_window(fg_kv_t *kv, fg_kv_seq_t *s, uint32_t pos, uint32_t n,
    uint32_t known)
{
    int32_t   b;
    uint32_t  lo, hi, i;

    if (kv->window == 0) {
        return 0;
    }

    lo = fg_kv_window_lo(kv, pos);
    hi = (uint32_t) (((uint64_t) pos + n + kv->block_size - 1)
                     / kv->block_size);

    if (hi > s->n_blocks) {
        return -1;
    }

    /* computed again from further back (a failed swap-in): its window
     * begins anew */
    if (lo < s->swa_lo) {
        for (i = s->swa_lo; i < s->swa_hi; i++) {
            fg_kv_window_unref(kv, s->blocks[i], 0);
        }

        s->swa_lo = lo;
        s->swa_hi = lo;
    }

    for (i = s->swa_lo; i < s->swa_hi && i < lo; i++) {
        fg_kv_window_unref(kv, s->blocks[i], 0);
    }

    s->swa_lo = lo > s->swa_lo ? lo : s->swa_lo;
    s->swa_hi = s->swa_hi > s->swa_lo ? s->swa_hi : s->swa_lo;

    for (i = s->swa_hi; i < hi; i++) {
        b = s->blocks[i];

        if (kv->slot[b] < 0) {
            if ((uint64_t) i * kv->block_size < known) {
                return -2;
            }

            if (fg_kv_window_take(kv, b) != 0) {
                return -1;
            }
        }

        kv->srefs[b]++;
        s->swa_hi = i + 1;
    }

    return 0;
}
