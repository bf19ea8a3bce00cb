# engine/model/: what a model file holds: the GGUF reader and its typed
# getters, ggml's tensor types, the Llama binding and the tokenizer,
# libfgmodel.a.  Pure C: the engine, its backends and the nginx module
# (which tokenizes in the worker) link it; xxhash is used header-only.

FG_MODEL_SRCS := engine/model/fg_gguf.c \
                 engine/model/fg_gguf_get.c \
                 engine/model/fg_ggml_types.c \
                 engine/model/fg_llama.c \
                 engine/model/fg_llama_arch.c \
                 engine/model/fg_llama_get.c \
                 engine/model/fg_tokenizer.c \
                 engine/model/fg_tok_encode.c \
                 engine/model/fg_tok_pre.c \
                 engine/model/fg_tok_decode.c
FG_MODEL_INC  := -Iengine/model $(FG_UTIL_INC)

$(BUILD)/obj/engine/model/%.o: FG_INC := $(FG_MODEL_INC)

$(eval $(call fg_lib,model,$(FG_MODEL_SRCS)))
