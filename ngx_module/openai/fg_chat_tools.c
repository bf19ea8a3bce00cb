
/*
 * fairgate: what a model's chat template says of its tool calling: the
 * family whose calls its answers hold (fg_tool_parse.h), the control
 * token that starts a call when the family has one (the decoder must
 * write it out for the parser to see it), and whether the template reads
 * "tools" at all: one that does not would drop them unsaid.
 */


#include <string.h>

#include "fg_gguf.h"
#include "fg_tokenizer.h"
#include "fg_openai_tools.h"


static int
fg_chat_tools_mentions(const char *s, size_t len, const char *what)
{
    size_t  n;

    n = strlen(what);

    for ( /* void */ ; len >= n; s++, len--) {
        if (memcmp(s, what, n) == 0) {
            return 1;
        }
    }

    return 0;
}


void
fg_chat_tools_init(fg_chat_tools_t *ct, const fg_gguf_t *g,
    const fg_tokenizer_t *tok)
{
    char            err[8];
    const char     *marker;
    fg_gguf_str_t   tpl;

    memset(ct, 0, sizeof(fg_chat_tools_t));
    ct->marker = -1;

    if (fg_gguf_get_str(g, "tokenizer.chat_template", &tpl, err,
                        sizeof(err))
        != 0)
    {
        return;
    }

    ct->format = fg_tool_format_detect(tpl.data, tpl.len);
    ct->takes_tools = fg_chat_tools_mentions(tpl.data, tpl.len, "tools");

    marker = fg_tool_format_marker(ct->format);

    if (marker != NULL) {
        ct->marker = fg_tokenizer_find(tok, marker, strlen(marker));
    }
}
