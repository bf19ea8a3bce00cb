
/*
 * fairgate: the bounded writer of OpenAI bodies (fg_openai_write.c),
 * private to the layer's writers: it counts every byte and copies those
 * that fit, so that a writer returns the size it needs, as snprintf()
 * does.
 */

#ifndef _FG_OPENAI_WRITE_INT_H_INCLUDED_
#define _FG_OPENAI_WRITE_INT_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


typedef struct {
    char    *p;
    size_t   size;
    size_t   n;
} fg_oai_w_t;


void fg_oai_w_init(fg_oai_w_t *w, char *out, size_t size);
void fg_oai_put(fg_oai_w_t *w, const char *s, size_t len);
void fg_oai_put_str(fg_oai_w_t *w, const char *s);
void fg_oai_put_u64(fg_oai_w_t *w, uint64_t v);
void fg_oai_put_i64(fg_oai_w_t *w, int64_t v);

/* a JSON string: quotes, escapes, a bad byte as U+FFFD */
void fg_oai_put_json(fg_oai_w_t *w, const char *text, size_t len);

/* the same, or null for NULL */
void fg_oai_put_json_or_null(fg_oai_w_t *w, const char *s);


#endif /* _FG_OPENAI_WRITE_INT_H_INCLUDED_ */
