# engine/grammar/: constrained decoding, libfggrammar.a.  GBNF parsed into
# rules (fg_gram_parse.c, fg_gram_build.c), JSON Schema compiled to GBNF
# (fg_gram_schema.c, fg_gram_json.c; integer bounds in fg_gram_range.c,
# patterns in fg_gram_regex.c), a vocabulary's byte trie (fg_gram_vocab.c),
# a sequence's pushdown matcher (fg_gram_match.c) and the mask of the
# tokens it allows (fg_gram_mask.c).
# It reads token bytes from model's tokenizer; batch calls it; jansson
# parses the schemas.

FG_GRAMMAR_SRCS := engine/grammar/fg_gram_build.c \
                   engine/grammar/fg_gram_parse.c \
                   engine/grammar/fg_gram_json.c \
                   engine/grammar/fg_gram_range.c \
                   engine/grammar/fg_gram_regex.c \
                   engine/grammar/fg_gram_schema.c \
                   engine/grammar/fg_gram_vocab.c \
                   engine/grammar/fg_gram_match.c \
                   engine/grammar/fg_gram_mask.c
FG_GRAMMAR_INC  := -Iengine/grammar $(FG_MODEL_INC)

# what links libfggrammar.a links these after it
FG_GRAMMAR_LINK := $(BUILD)/libfggrammar.a $(BUILD)/libfgmodel.a
FG_GRAMMAR_LIBS := -ljansson -lm

$(BUILD)/obj/engine/grammar/%.o: FG_INC := $(FG_GRAMMAR_INC)

$(eval $(call fg_lib,grammar,$(FG_GRAMMAR_SRCS)))
