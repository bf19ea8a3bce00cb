
/*
 * fairgate: decoding: the bytes each token stands for, and the streaming
 * decoder that turns generated tokens into whole UTF-8 characters for the
 * gateway's SSE chunks (a character may be split across byte tokens or
 * byte-level pieces; what cannot complete one becomes U+FFFD).
 */


#include <stdlib.h>


#include "fg_tok_int.h"


typedef struct {
    uint8_t      *p;
    size_t        cap;
    size_t        n;
    int           strip;            /* drop a space that comes first */
} fg_tok_sink_t;


/* bytes beyond cap are counted, not written: the caller asks again */
static inline void
fg_tok_put(fg_tok_sink_t *k, const void *p, size_t n)
{
    size_t  m;

    if (k->strip && n > 0) {
        k->strip = 0;

        if (*(const uint8_t *) p == ' ') {
            p = (const uint8_t *) p + 1;
            n--;
        }
    }

    if (k->n < k->cap) {
        m = k->cap - k->n < n ? k->cap - k->n : n;
        memcpy(k->p + k->n, p, m);
    }

    k->n += n;
}


/* the bytes token id stands for, as flags ask */
static void
fg_tok_piece(const fg_tokenizer_t *t, int32_t id, int flags,
    fg_tok_sink_t *k)
{
    int             b;
    size_t          i, n, clen;
    uint8_t         c;
    uint32_t        cp;
    const uint8_t  *s;

    s = (const uint8_t *) t->text + t->off[id];
    n = fg_tok_len(t, id);

    switch (t->types[id]) {

    case FG_TOK_CONTROL:
    case FG_TOK_UNUSED:
        if (flags & FG_TOK_SPECIAL) {
            fg_tok_put(k, s, n);
        }

        return;

    case FG_TOK_UNKNOWN:
        if (flags & FG_TOK_SPECIAL) {
            fg_tok_put(k, s, n);

        } else {
            /* what SentencePiece prints for it: U+2047 */
            fg_tok_put(k, "\xe2\x81\x87", 3);
        }

        return;

    case FG_TOK_BYTE:
        b = fg_tok_byte_of(t, id);

        if (b >= 0) {
            c = (uint8_t) b;
            fg_tok_put(k, &c, 1);
            return;
        }

        break;

    case FG_TOK_USER_DEFINED:
        if (t->model == FG_TOK_MODEL_BPE) {
            fg_tok_put(k, s, n);
            return;
        }

        break;
    }

    if (t->model == FG_TOK_MODEL_SPM) {
        for (i = 0; i < n; i++) {
            if (i + 2 < n && s[i] == 0xe2 && s[i + 1] == 0x96
                && s[i + 2] == 0x81)
            {
                fg_tok_put(k, " ", 1);
                i += 2;

            } else {
                fg_tok_put(k, &s[i], 1);
            }
        }

        return;
    }

    /* byte-level: each character stands for a byte */
    for (i = 0; i < n; i += clen) {
        clen = fg_tok_cp(s + i, n - i, &cp);

        if (cp < 324 && t->cp_byte[cp] >= 0) {
            c = (uint8_t) t->cp_byte[cp];
            fg_tok_put(k, &c, 1);

        } else {
            fg_tok_put(k, s + i, clen);
        }
    }
}


ssize_t
fg_tokenizer_piece(const fg_tokenizer_t *t, int32_t id, int flags,
    char *buf, size_t size)
{
    fg_tok_sink_t  k;

    if (id < 0 || (uint32_t) id >= t->n_vocab) {
        return -1;
    }

    k.p = (uint8_t *) buf;
    k.cap = size;
    k.n = 0;
    k.strip = 0;

    fg_tok_piece(t, id, flags, &k);

    return (ssize_t) k.n;
}


ssize_t
fg_tokenizer_decode(const fg_tokenizer_t *t, const int32_t *ids, size_t n,
    int flags, char *buf, size_t size)
{
    size_t         i;
    fg_tok_sink_t  k;

    k.p = (uint8_t *) buf;
    k.cap = size ? size - 1 : 0;
    k.n = 0;
    k.strip = (flags & FG_TOK_STRIP_SPACE) && t->add_space_prefix;

    for (i = 0; i < n; i++) {
        if (ids[i] < 0 || (uint32_t) ids[i] >= t->n_vocab) {
            return -1;
        }

        fg_tok_piece(t, ids[i], flags, &k);
    }

    if (size) {
        buf[k.n < size ? k.n : size - 1] = '\0';
    }

    return (ssize_t) k.n;
}


/* the streaming decoder */

void
fg_tok_stream_init(fg_tok_stream_t *s)
{
    memset(s, 0, sizeof(fg_tok_stream_t));
}


static inline size_t
fg_tok_fffd(uint8_t *out)
{
    memcpy(out, "\xef\xbf\xbd", 3);
    return 3;
}


/* one byte into the stream: what it completes comes out */
static size_t
fg_tok_stream_byte(fg_tok_stream_t *s, uint8_t c, uint8_t *o)
{
    size_t   w, need;
    uint8_t  lo, hi;

    w = 0;

    if (s->n_pending > 0) {
        /* the allowed range of this continuation byte */
        lo = 0x80;
        hi = 0xbf;

        if (s->n_pending == 1) {
            lo = s->pending[0] == 0xe0 ? 0xa0
                 : s->pending[0] == 0xf0 ? 0x90 : 0x80;
            hi = s->pending[0] == 0xed ? 0x9f
                 : s->pending[0] == 0xf4 ? 0x8f : 0xbf;
        }

        if (c >= lo && c <= hi) {
            s->pending[s->n_pending++] = c;
            need = fg_utf8_len(s->pending[0]);

            if (s->n_pending < need) {
                return 0;
            }

            memcpy(o, s->pending, need);
            s->n_pending = 0;

            return need;
        }

        /* the character broke off: replace it, then start afresh */
        w = fg_tok_fffd(o);
        s->n_pending = 0;
    }

    if (c < 0x80) {
        o[w++] = c;

    } else if (c >= 0xc2 && c <= 0xf4) {
        s->pending[s->n_pending++] = c;

    } else {
        w += fg_tok_fffd(o + w);
    }

    return w;
}


ssize_t
fg_tok_stream_push(const fg_tokenizer_t *t, fg_tok_stream_t *s, int32_t id,
    int flags, char *out, size_t size)
{
    int             strip;
    size_t          i, w;
    uint8_t         local[1024], *piece;
    fg_tok_sink_t   k;

    if (id < 0 || (uint32_t) id >= t->n_vocab
        || size < FG_TOK_STREAM_OUT(t->max_piece))
    {
        return -1;
    }

    piece = t->max_piece <= sizeof(local) ? local : malloc(t->max_piece);
    if (piece == NULL) {
        return -1;
    }

    strip = !s->started && (flags & FG_TOK_STRIP_SPACE)
            && t->add_space_prefix;

    k.p = piece;
    k.cap = t->max_piece;
    k.n = 0;
    k.strip = strip;

    fg_tok_piece(t, id, flags, &k);

    /* any byte, even a stripped space, starts the text */
    if (k.n > 0 || (strip && !k.strip)) {
        s->started = 1;
    }

    w = 0;

    for (i = 0; i < k.n; i++) {
        w += fg_tok_stream_byte(s, piece[i], (uint8_t *) out + w);
    }

    if (piece != local) {
        free(piece);
    }

    return (ssize_t) w;
}


ssize_t
fg_tok_stream_flush(fg_tok_stream_t *s, char *out, size_t size)
{
    if (s->n_pending == 0) {
        return 0;
    }

    if (size < 3) {
        return -1;
    }

    s->n_pending = 0;

    return (ssize_t) fg_tok_fffd((uint8_t *) out);
}
