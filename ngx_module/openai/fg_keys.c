
/*
 * fairgate: the keys file's lines parsed (fg_keys.h), pure C so that a
 * libFuzzer target reads it (t/fuzz/fuzz_keys.c).  One key a line:
 *
 *     SHA256-HEX USER APP WEIGHT [rpm=N] [tpm=N] [priority=E]
 *                                [models=NAME,NAME...]
 *                                [quota=WINDOW:LIMITS;...]
 *                                [budget=WINDOW:AMOUNT;...]
 *
 * quota= and budget= are kept as text: their windows and limits are the
 * policy core's to read (fg_quota_text()), which this layer may not call.
 *
 * The checks across lines (duplicate keys, a user's keys that disagree)
 * stay in the nginx glue, which keeps the entries.
 */

#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fg_keys.h"
#include "fg_utf8.h"


typedef struct {
    char    *data;
    size_t   len;
} fg_keys_word_t;


static int fg_keys_line(char *line, unsigned long n, fg_keys_entry_t *e,
    fg_keys_error_t *err);
static int fg_keys_words(char *p, fg_keys_word_t *word);
static int fg_keys_digest(fg_keys_word_t *word, fg_keys_entry_t *e,
    fg_keys_error_t *err);
static int fg_keys_names(fg_keys_word_t *word, fg_keys_entry_t *e,
    fg_keys_error_t *err);
static int fg_keys_options(fg_keys_word_t *word, int nwords,
    fg_keys_entry_t *e, fg_keys_error_t *err);
static int fg_keys_text(fg_keys_word_t *word, size_t skip,
    const char **text, size_t *len);
static int fg_keys_hex(char c);
static uint64_t fg_keys_count(const char *p, size_t len);
static void fg_keys_error(fg_keys_error_t *err, const char *what,
    fg_keys_word_t *word, const char *hint);
static void fg_keys_quote(fg_keys_error_t *err, const char *what,
    fg_keys_word_t *word);


int
fg_keys_parse(char *buf, size_t len, fg_keys_entry_pt entry, void *data,
    fg_keys_error_t *err)
{
    int               rc;
    char             *p, *last, *eol;
    unsigned long     line;
    fg_keys_entry_t   e;

    err->line = 0;
    err->what[0] = '\0';
    err->hint = "";

    buf[len] = '\0';
    last = buf + len;
    line = 0;

    for (p = buf; p < last; p = eol + 1) {
        line++;

        eol = memchr(p, '\n', last - p);
        if (eol == NULL) {
            eol = last;
        }

        *eol = '\0';

        rc = fg_keys_line(p, line, &e, err);

        if (rc < 0) {
            err->line = line;
            return -1;
        }

        if (rc > 0 && entry(data, &e) != 0) {
            err->line = 0;
            return -1;
        }
    }

    return 0;
}


/* 1: a key; 0: a blank or comment line; -1: an error */

static int
fg_keys_line(char *line, unsigned long n, fg_keys_entry_t *e,
    fg_keys_error_t *err)
{
    int             nwords;
    fg_keys_word_t  word[FG_KEYS_WORDS];

    nwords = fg_keys_words(line, word);

    if (nwords == 0) {
        return 0;
    }

    if (nwords < 0) {
        fg_keys_error(err, "too many fields", NULL, "");
        return -1;
    }

    if (nwords < 4) {
        fg_keys_error(err, "expected \"SHA256 USER APP WEIGHT [rpm=N] "
                      "[tpm=N]\"", NULL, "");
        return -1;
    }

    memset(e, 0, sizeof(fg_keys_entry_t));
    e->line = n;

    if (fg_keys_digest(&word[0], e, err) != 0
        || fg_keys_names(word, e, err) != 0
        || fg_keys_options(&word[4], nwords - 4, e, err) != 0)
    {
        return -1;
    }

    return 1;
}


/*
 * A line's words, separated by blanks (each NUL-terminated in place); a '#'
 * starts a comment.  -1: more than FG_KEYS_WORDS.
 */

static int
fg_keys_words(char *p, fg_keys_word_t *word)
{
    int  n;

    n = 0;

    for ( ;; ) {
        while (*p == ' ' || *p == '\t' || *p == '\r') {
            p++;
        }

        if (*p == '\0' || *p == '#') {
            return n;
        }

        if (n == FG_KEYS_WORDS) {
            return -1;
        }

        word[n].data = p;

        while (*p && *p != ' ' && *p != '\t' && *p != '\r' && *p != '#') {
            p++;
        }

        word[n].len = p - word[n].data;
        n++;

        if (*p == ' ' || *p == '\t' || *p == '\r') {
            *p++ = '\0';
        }
    }
}


/* the digest: 64 hex digits */

static int
fg_keys_digest(fg_keys_word_t *word, fg_keys_entry_t *e, fg_keys_error_t *err)
{
    int     hi, lo;
    size_t  i;

    for (i = 0; i < 32 && word->len == 64; i++) {
        hi = fg_keys_hex(word->data[2 * i]);
        lo = fg_keys_hex(word->data[2 * i + 1]);

        if (hi < 0 || lo < 0) {
            break;
        }

        e->digest[i] = (unsigned char) (hi * 16 + lo);
    }

    if (i < 32) {
        fg_keys_error(err, "invalid key hash", word,
                      ", expected 64 hex digits (SHA-256 of the key)");
        return -1;
    }

    return 0;
}


/*
 * the user and the app, printable with no quotes, strict UTF-8 ("-": no
 * app); weight
 */

static int
fg_keys_names(fg_keys_word_t *word, fg_keys_entry_t *e, fg_keys_error_t *err)
{
    char           *end;
    size_t          i, k;
    uint32_t        cp;
    unsigned char  *p, *last;

    for (i = 1; i < 3; i++) {
        p = (unsigned char *) word[i].data;
        last = p + word[i].len;

        while (p < last && *p >= 0x21 && *p != 0x7f && *p != '"'
               && *p != '\\')
        {
            k = fg_utf8_decode(p, last - p, &cp);

            if (k == 0) {
                break;
            }

            p += k;
        }

        if (p < last || word[i].len > FG_KEYS_NAME_LEN) {
            fg_keys_error(err, i == 1 ? "invalid user" : "invalid app",
                          &word[i],
                          p < last && *p >= 0x80 ? ", not valid UTF-8"
                                                 : "");
            return -1;
        }
    }

    e->user = word[1].data;
    e->user_len = word[1].len;

    if (word[2].len != 1 || word[2].data[0] != '-') {
        e->app = word[2].data;
        e->app_len = word[2].len;
    }

    e->weight = strtod(word[3].data, &end);

    if (end != word[3].data + word[3].len
        || !(e->weight > 0 && e->weight <= 1e6))
    {
        fg_keys_error(err, "invalid weight", &word[3],
                      ", expected a number above 0, at most 1000000");
        return -1;
    }

    return 0;
}


/*
 * rpm=N, tpm=N, priority=E, models=LIST, quota=TEXT and budget=TEXT, each
 * at most once
 */

static int
fg_keys_options(fg_keys_word_t *word, int nwords, fg_keys_entry_t *e,
    fg_keys_error_t *err)
{
    int        i;
    char      *end;
    uint64_t   v;

    for (i = 0; i < nwords; i++) {

        if (strncmp(word[i].data, "priority=", 9) == 0 && e->priority == 0) {
            e->priority = strtod(word[i].data + 9, &end);

            if (end != word[i].data + word[i].len
                || !(e->priority > 0 && e->priority <= 1e6))
            {
                fg_keys_error(err, "invalid priority", &word[i],
                              ", expected a number above 0, at most "
                              "1000000, once");
                return -1;
            }

            continue;
        }

        if (strncmp(word[i].data, "models=", 7) == 0) {
            if (e->models != NULL
                || fg_keys_models_valid(word[i].data + 7, word[i].len - 7)
                   != 0)
            {
                fg_keys_error(err, "invalid models", &word[i],
                              ", expected models=NAME[,NAME...], once");
                return -1;
            }

            e->models = word[i].data + 7;
            e->models_len = word[i].len - 7;
            continue;
        }

        if (strncmp(word[i].data, "quota=", 6) == 0
            && fg_keys_text(&word[i], 6, &e->quota, &e->quota_len) == 0)
        {
            continue;
        }

        if (strncmp(word[i].data, "budget=", 7) == 0
            && fg_keys_text(&word[i], 7, &e->budget, &e->budget_len) == 0)
        {
            continue;
        }

        if (strncmp(word[i].data, "rpm=", 4) == 0 && e->rpm == 0) {
            v = fg_keys_count(word[i].data + 4, word[i].len - 4);

            if (v > 0) {
                e->rpm = v;
                continue;
            }

        } else if (strncmp(word[i].data, "tpm=", 4) == 0 && e->tpm == 0) {
            v = fg_keys_count(word[i].data + 4, word[i].len - 4);

            if (v > 0) {
                e->tpm = v;
                continue;
            }
        }

        fg_keys_error(err, "invalid limit", &word[i],
                      ", expected rpm=N, tpm=N, priority=E, "
                      "models=LIST, quota=WINDOW:LIMITS or "
                      "budget=WINDOW:AMOUNT, each once");
        return -1;
    }

    if (e->priority == 0) {
        e->priority = 1.0;
    }

    return 0;
}


/* a quota's or budget's text, once, 1 to 1024 printable bytes: 0 or -1 */

static int
fg_keys_text(fg_keys_word_t *word, size_t skip, const char **text,
    size_t *len)
{
    size_t  i;

    if (*text != NULL || word->len == skip || word->len - skip > 1024) {
        return -1;
    }

    for (i = skip; i < word->len; i++) {
        if (word->data[i] < 0x21 || word->data[i] > 0x7e
            || word->data[i] == '"' || word->data[i] == '\\')
        {
            return -1;
        }
    }

    *text = word->data + skip;
    *len = word->len - skip;

    return 0;
}


int
fg_keys_models_valid(const char *p, size_t len)
{
    size_t  i, name;

    if (len == 0 || len > FG_KEYS_MODELS_LEN) {
        return -1;
    }

    name = 0;

    for (i = 0; i < len; i++) {
        if (p[i] == ',') {
            if (name == 0) {
                return -1;
            }

            name = 0;
            continue;
        }

        if (p[i] < 0x21 || p[i] > 0x7e || p[i] == '"' || p[i] == '\\'
            || ++name > FG_KEYS_MODEL_LEN)
        {
            return -1;
        }
    }

    return name ? 0 : -1;
}


/*
 * A digit's value, -1 for any other byte, from a table: a million keys'
 * digests are 64 million digits, and tests on random digits mispredict
 */

static int
fg_keys_hex(char c)
{
    static signed char  value[256];
    static int          made;
    int                 i;

    if (!made) {
        memset(value, -1, sizeof(value));

        for (i = 0; i < 10; i++) {
            value['0' + i] = (signed char) i;
        }

        for (i = 0; i < 6; i++) {
            value['a' + i] = (signed char) (10 + i);
            value['A' + i] = (signed char) (10 + i);
        }

        made = 1;
    }

    return value[(unsigned char) c];
}


/* decimal digits only, as ngx_atoi(): 0 for none, other bytes, overflow */

static uint64_t
fg_keys_count(const char *p, size_t len)
{
    uint64_t  v;

    if (len == 0) {
        return 0;
    }

    for (v = 0; len; len--, p++) {
        if (*p < '0' || *p > '9'
            || v > ((uint64_t) INT64_MAX - (uint64_t) (*p - '0')) / 10)
        {
            return 0;
        }

        v = v * 10 + (*p - '0');
    }

    return v;
}


/* the message names the word, cut at 256 bytes */

static void
fg_keys_error(fg_keys_error_t *err, const char *what, fg_keys_word_t *word,
    const char *hint)
{
    if (word == NULL) {
        snprintf(err->what, FG_KEYS_ERR_LEN, "%s", what);

    } else {
        fg_keys_quote(err, what, word);
    }

    err->hint = hint;
}


/*
 * what "WORD", the word cut at 256 bytes, and a byte that is a control
 * or not part of a valid UTF-8 character as \xNN: the error log gets no
 * raw byte of the file
 */

static void
fg_keys_quote(fg_keys_error_t *err, const char *what, fg_keys_word_t *word)
{
    size_t          n, k, i;
    uint32_t        cp;
    unsigned char  *p, *last;

    n = (size_t) snprintf(err->what, FG_KEYS_ERR_LEN, "%s \"", what);
    p = (unsigned char *) word->data;
    last = p + (word->len > 256 ? 256 : word->len);

    while (p < last && n + 6 < FG_KEYS_ERR_LEN) {
        k = (*p < 0x20 || *p == 0x7f) ? 0 : fg_utf8_decode(p, last - p, &cp);

        if (k == 0) {
            n += snprintf(err->what + n, FG_KEYS_ERR_LEN - n, "\\x%02x", *p);
            p++;
            continue;
        }

        for (i = 0; i < k && n + 2 < FG_KEYS_ERR_LEN; i++) {
            err->what[n++] = (char) *p++;
        }
    }

    snprintf(err->what + n, FG_KEYS_ERR_LEN - n, "\"");
}
