
/*
 * fairgate: the grammar's internals, for the part's own files.
 *
 * A compiled grammar is a flat array of elements: each rule is a list of
 * alternatives, each alternative a sequence of elements ended by END.  An
 * element is a character class (CLASS, its index) or a reference to a
 * rule (REF, its index).  Repetitions and groups were rewritten into rules
 * of their own when parsed, so a matcher knows only these three.
 */

#ifndef _FG_GRAM_INT_H_INCLUDED_
#define _FG_GRAM_INT_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_grammar.h"


#define FG_GRAM_END        0u
#define FG_GRAM_CLASS      1u
#define FG_GRAM_REF        2u
#define FG_GRAM_ALT        3u               /* while building only */

#define fg_gram_el(type, v)    (((uint32_t) (type) << 30) | (uint32_t) (v))
#define fg_gram_type(e)        ((e) >> 30)
#define fg_gram_val(e)         ((e) & 0x3fffffffu)

#define FG_GRAM_NIL        0xffffffffu


/* a set of code points: ranges, maybe negated; ASCII as a bitmap */
typedef struct {
    uint32_t   first;                       /* in ranges[], pairs */
    uint32_t   n;
    uint32_t   negate;
    uint32_t   high;                        /* FG_GRAM_HIGH_* */
    uint32_t   ascii[4];                    /* after negation */
} fg_gram_class_t;


/* what a class holds above ASCII: nothing, everything, or some */
#define FG_GRAM_HIGH_NONE  0
#define FG_GRAM_HIGH_ALL   1
#define FG_GRAM_HIGH_SOME  2


struct fg_gram_s {
    uint32_t          *elems;
    uint32_t           n_elems;
    uint32_t          *alts;                /* each alternative's start */
    uint32_t          *rule_alt;            /* rule r: alts[rule_alt[r]..] */
    uint32_t           n_rules;
    fg_gram_class_t   *classes;
    uint32_t           n_classes;
    uint32_t          *ranges;              /* lo, hi, lo, hi ... */
    uint32_t           root;
    uint32_t          *rule_of;             /* an element's rule */
    uint32_t          *chain;               /* a rule's place in a chain of
                                             * x{m,n}'s optionals (1: the
                                             * last one), or 0 */
};


/* a growing array of uint32_t */
typedef struct {
    uint32_t  *a;
    uint32_t   n;
    uint32_t   cap;
} fg_gram_vec_t;


/* a rule while the grammar is built: elements, alternatives by ALT */
typedef struct {
    char           *name;                   /* NULL: made by the parser */
    fg_gram_vec_t   el;
    uint32_t        defined;
    uint32_t        chain;                  /* x{m,n}'s i-th optional */
    uint32_t        line;                   /* first use, for errors */
    uint32_t        col;
} fg_gram_brule_t;


typedef struct {
    fg_gram_brule_t  *rules;
    uint32_t          n_rules;
    uint32_t          cap_rules;
    fg_gram_vec_t     classes;              /* first, n, negate triples */
    fg_gram_vec_t     ranges;
    uint32_t          n_elems;
    char             *err;
    size_t            errlen;
} fg_gram_build_t;


int fg_gram_vec_push(fg_gram_vec_t *v, uint32_t x);
void fg_gram_build_free(fg_gram_build_t *b);
/* the rule named (made undefined when new), or a new unnamed rule */
int64_t fg_gram_build_rule(fg_gram_build_t *b, const char *name,
    size_t len, uint32_t line, uint32_t col);
/* a new class of n ranges (lo, hi pairs) */
int64_t fg_gram_build_class(fg_gram_build_t *b, const uint32_t *ranges,
    uint32_t n, int negate);
int fg_gram_build_emit(fg_gram_build_t *b, uint32_t rule, uint32_t el);
fg_gram_t *fg_gram_build_finish(fg_gram_build_t *b);

int fg_gram_class_has(const fg_gram_t *g, uint32_t cls, uint32_t cp);
int fg_gram_class_meets(const fg_gram_t *g, uint32_t cls, uint32_t lo,
    uint32_t hi);


/* a vocabulary as a trie in depth-first order */
typedef struct {
    uint32_t   skip;                        /* the node after the subtree */
    uint32_t   tok;                         /* first token ending here */
    uint16_t   depth;                       /* 1: the first byte */
    uint8_t    byte;
    uint8_t    pad;
} fg_gram_tnode_t;


struct fg_gram_vocab_s {
    uint32_t          n_vocab;
    fg_gram_tnode_t  *nodes;
    uint32_t          n_nodes;
    uint32_t         *tok_next;             /* tokens of the same bytes */
    uint32_t         *eog;                  /* the EOG tokens' ids */
    uint32_t          n_eog;
    uint8_t          *is_eog;
    char            **pieces;
    char             *store;                /* the pieces' bytes */
    uint32_t         *lens;
    uint32_t          max_len;
};


/* a frame of a stack: the element to match (or to go on at), the frame
 * below; frames are shared between the stacks of a state */
typedef struct {
    uint32_t   pos;
    uint32_t   up;
    uint32_t   depth;
} fg_gram_node_t;


/* a state's successor already made, by the set of its stacks that took
 * the character (bit i: stack i): the successor depends on that set
 * alone, so the letters of a string, or the digits of a number, make it
 * once */
typedef struct {
    uint64_t   sig;
    uint32_t   first;                       /* a walk: the state's id */
    uint32_t   n;
} fg_gram_memo_t;


#define FG_GRAM_MEMO  4


/* the state at one byte: its stacks' tops in the matcher's buffer, a
 * character begun but not ended, and its successors kept while it is
 * walked (the buffer and frames up to keep_buf, keep_nodes) */
typedef struct {
    uint32_t         first;
    uint32_t         n;
    uint32_t         cp;
    uint32_t         left;                  /* bytes still to come */
    uint32_t         keep_nodes;
    uint32_t         keep_buf;
    uint32_t         high;                  /* 0: not known; 1: high_sig
                                             * is the set that takes any
                                             * character over ASCII; 2:
                                             * it depends on which */
    uint64_t         high_sig;
    uint32_t         high_succ;             /* a walk: after any of them */
    uint32_t         n_memo;
    fg_gram_memo_t   memo[FG_GRAM_MEMO];
} fg_gram_level_t;


/* a mask's walk at one byte: its state (in the walk's table of distinct
 * states) and a character begun */
typedef struct {
    uint32_t   st;
    uint32_t   cp;
    uint32_t   left;
} fg_gram_wlevel_t;


#define FG_GRAM_MAX_STATES  65536           /* distinct states of a walk */
#define FG_GRAM_BUCKETS     4096


typedef struct {
    uint64_t   hash;
    uint64_t   used;                        /* 0: empty */
    uint32_t  *key;
    uint32_t   key_len;
    uint32_t  *bits;
    int64_t    n_allowed;
} fg_gram_centry_t;


struct fg_gram_cache_s {
    const fg_gram_t        *g;
    const fg_gram_vocab_t  *v;
    fg_gram_centry_t       *e;
    uint32_t                n;
    uint64_t                clock;
};


struct fg_gram_match_s {
    const fg_gram_t        *g;
    const fg_gram_vocab_t  *v;
    fg_gram_node_t         *nodes;
    uint32_t                n_nodes;
    uint32_t                cap_nodes;
    fg_gram_vec_t           buf;            /* the walk's stacks */
    uint32_t               *bcls;           /* their tops' classes */
    uint32_t                cap_bcls;
    fg_gram_vec_t           cur;            /* the state's stacks */
    uint32_t                cp;
    uint32_t                left;
    uint32_t                failed;
    uint32_t                done;
    uint64_t                work;           /* frames compared, a step */
    fg_gram_level_t        *levels;
    fg_gram_wlevel_t       *wlv;
    fg_gram_level_t        *states;         /* a walk's distinct states */
    uint64_t               *st_hash;
    uint32_t               *st_next;
    uint32_t               *trans;          /* by state, ASCII byte */
    uint32_t                n_states;
    uint32_t                cap_states;
    uint32_t               *buckets;
    fg_gram_vec_t           key;
    fg_gram_cache_t        *cache;          /* NULL: none */
    uint32_t                own_cache;
    uint32_t               *remap;
    uint32_t                cap_remap;
    uint32_t                compact_at;
    uint32_t               *tmp;            /* fg_gram_bias()'s mask */
};


/* the stacks that follow level in after one byte (out: its counts); 0
 * when none does, -1 when the matcher must fail */
int fg_gram_step(fg_gram_match_t *m, fg_gram_level_t *in, uint8_t byte,
    fg_gram_level_t *out);
/* the code point a byte ends (1), or the bytes of one begun (0), into
 * out's cp and left; -1 where UTF-8 has no such byte */
int fg_gram_utf8(const fg_gram_level_t *in, uint8_t byte,
    fg_gram_level_t *out);
/* the set of the level's stacks whose classes hold cp (bit i: stack i) */
uint64_t fg_gram_sig(const fg_gram_match_t *m, const fg_gram_level_t *in,
    uint32_t cp);
/* fills l->high and l->high_sig */
void fg_gram_high(const fg_gram_match_t *m, fg_gram_level_t *l);
/* whether a class of the level holds a character its bytes begin */
int fg_gram_may(const fg_gram_match_t *m, const fg_gram_level_t *l);
/* the stacks of the set sig moved past cp, appended to m->buf */
int fg_gram_advance(fg_gram_match_t *m, const fg_gram_level_t *in,
    uint64_t sig, uint32_t cp);
/* whether two stacks hold the same frames */
int fg_gram_same(fg_gram_match_t *m, uint32_t a, uint32_t b);
/* a stack into m->buf, its top's class beside it */
int fg_gram_buf_push(fg_gram_match_t *m, uint32_t h);
/* the stacks of a sequence's start into m->buf */
int fg_gram_start(fg_gram_match_t *m);
/* frees the frames no stack of cur uses */
int fg_gram_compact(fg_gram_match_t *m);

/* JSON Schema to GBNF text */
char *fg_gram_schema_text(const json_t *schema, char *err, size_t errlen);


#endif /* _FG_GRAM_INT_H_INCLUDED_ */
