# t/fuzz/: libFuzzer targets of the parsers that meet outside bytes:
# `make fuzz-NAME-run FUZZ_TIME=300` builds one with clang, AddressSanitizer
# and UndefinedBehaviorSanitizer, seeds its corpus in build/fuzz/ and runs
# it.  Their kept corpora (corpus/NAME/, minimized) and the crashes found
# (crash/NAME/) are replayed by `make test`: each target built with $(CC),
# AddressSanitizer and UndefinedBehaviorSanitizer, and fuzz_replay.c's
# main instead of libFuzzer.

FG_FUZZ_CC    ?= clang
FG_FUZZ_FLAGS := -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined \
                 -fno-sanitize-recover=undefined
FUZZ_TIME     ?= 60

# every target in turn until 10 million runs (or FUZZ_MAX s), each kept
# corpus minimized back in place: t/fuzz/campaign.sh
fuzz fuzz-campaign:
	FUZZ_RUNS=$(or $(FUZZ_RUNS),10000000) BUILD=$(BUILD) \
	    $(SHELL) t/fuzz/campaign.sh $(FUZZ_TARGETS)

.PHONY: fuzz fuzz-campaign fuzz-json fuzz-json-run fuzz-gguf fuzz-gguf-run fuzz-tokenizer \
        fuzz-tokenizer-run fuzz-openai fuzz-openai-run

# the JSON scanner, differential against jansson
$(BUILD)/fuzz/fuzz_json: t/fuzz/fuzz_json.c $(FG_OPENAI_SRCS) \
                         $(wildcard ngx_module/openai/*.h)
	@mkdir -p $(dir $@)
	$(FG_FUZZ_CC) $(FG_FUZZ_FLAGS) $(FG_OPENAI_INC) -o $@ \
	    t/fuzz/fuzz_json.c ngx_module/openai/fg_json.c -ljansson

fuzz-json: $(BUILD)/fuzz/fuzz_json

fuzz-json-run: $(BUILD)/fuzz/fuzz_json
	@mkdir -p $(BUILD)/fuzz/corpus-json
	$(BUILD)/fuzz/fuzz_json -max_total_time=$(FUZZ_TIME) \
	    -max_len=4096 $(BUILD)/fuzz/corpus-json

# the GGUF reader and the tokenizer's loading of any file, and the
# kernels' conversion of the tensors' rows to float: built with $(CC) (the
# kernels' CPU dispatch names features clang may not know), in the
# replays compiled with the sanitizers
FG_FUZZ_GGUF_INC  := $(FG_MODEL_INC) $(FG_KERNELS_INC) -Ikernels/cpu
FG_FUZZ_GGUF_SRCS := $(FG_MODEL_SRCS) $(FG_KERNELS_ROW_SRCS)

$(BUILD)/fuzz/fuzz_gguf: t/fuzz/fuzz_gguf.c $(FG_MODEL_SRCS) \
                         $(BUILD)/libfgkernels.a \
                         $(wildcard engine/model/*.h)
	@mkdir -p $(dir $@)
	$(FG_FUZZ_CC) $(FG_FUZZ_FLAGS) $(FG_FUZZ_GGUF_INC) -o $@ \
	    t/fuzz/fuzz_gguf.c $(FG_MODEL_SRCS) $(BUILD)/libfgkernels.a -lm \
	    $(FG_KERNELS_LIBS)

fuzz-gguf: $(BUILD)/fuzz/fuzz_gguf

# its seeds: the GGUF writer's files
$(BUILD)/obj/t/fuzz/%.o: FG_INC := $(FG_GEN_INC)

$(BUILD)/fuzz/fuzz_gguf_seeds: $(BUILD)/obj/t/fuzz/fuzz_gguf_seeds.o \
                               $(FG_GEN_LINK)
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_GEN_LIBS)

fuzz-gguf-run: $(BUILD)/fuzz/fuzz_gguf $(BUILD)/fuzz/fuzz_gguf_seeds
	@mkdir -p $(BUILD)/fuzz/corpus
	$(BUILD)/fuzz/fuzz_gguf_seeds $(BUILD)/fuzz/corpus
	$(BUILD)/fuzz/fuzz_gguf -max_total_time=$(FUZZ_TIME) \
	    -max_len=32768 $(BUILD)/fuzz/corpus

# the tokenizer on arbitrary text, checking round trips and the stream
$(BUILD)/fuzz/fuzz_tokenizer: t/fuzz/fuzz_tokenizer.c $(FG_MODEL_SRCS) \
                              $(FG_GEN_SRCS) $(BUILD)/libfgkernels.a \
                              $(wildcard engine/model/*.h engine/tools/gguf/*.h)
	@mkdir -p $(dir $@)
	$(FG_FUZZ_CC) $(FG_FUZZ_FLAGS) $(FG_GEN_INC) -o $@ \
	    t/fuzz/fuzz_tokenizer.c $(FG_MODEL_SRCS) $(FG_GEN_SRCS) \
	    $(BUILD)/libfgkernels.a -ljansson -lm $(FG_KERNELS_LIBS)

fuzz-tokenizer: $(BUILD)/fuzz/fuzz_tokenizer

fuzz-tokenizer-run: $(BUILD)/fuzz/fuzz_tokenizer
	@mkdir -p $(BUILD)/fuzz/corpus-tok
	$(BUILD)/fuzz/fuzz_tokenizer -max_total_time=$(FUZZ_TIME) \
	    -max_len=512 $(BUILD)/fuzz/corpus-tok

# the OpenAI API layer: bodies, templates, writers, stops
$(BUILD)/fuzz/fuzz_openai: t/fuzz/fuzz_openai.c $(FG_OPENAI_SRCS) \
                           $(FG_JINJA_SRCS) $(FG_MODEL_SRCS) \
                           $(FG_GRAMMAR_SRCS) \
                           $(wildcard ngx_module/openai/*.h engine/model/*.h \
                                      ngx_module/jinja/*.h \
                                      engine/grammar/*.h)
	@mkdir -p $(dir $@)
	$(FG_FUZZ_CC) $(FG_FUZZ_FLAGS) $(FG_OPENAI_INC) -o $@ \
	    t/fuzz/fuzz_openai.c $(FG_OPENAI_SRCS) $(FG_JINJA_SRCS) \
	    $(FG_GRAMMAR_SRCS) $(FG_MODEL_SRCS) -ljansson -lm -lcrypto

fuzz-openai: $(BUILD)/fuzz/fuzz_openai

fuzz-openai-run: $(BUILD)/fuzz/fuzz_openai
	@mkdir -p $(BUILD)/fuzz/corpus-openai
	@printf '\000{"model":"m","messages":[{"role":"user","content":"hi"}],"stop":["i"],"stream":true}' \
	    > $(BUILD)/fuzz/corpus-openai/seed-chat
	@printf '\001{"model":"m","prompt":"Once upon","stop":"on","max_tokens":5}' \
	    > $(BUILD)/fuzz/corpus-openai/seed-completion
	@printf '\201{"model":"m","instructions":"Be.","input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]}],"max_output_tokens":5,"metadata":{"k":"v"}}' \
	    > $(BUILD)/fuzz/corpus-openai/seed-responses
	@printf '\002{{ bos_token }}<|im_start|>system\\nYou are kind.<|im_end|>' \
	    > $(BUILD)/fuzz/corpus-openai/seed-template
	@printf '\000{"model":"m","input":["a",[[1,2]],[3]],"encoding_format":"base64","dimensions":8}' \
	    > $(BUILD)/fuzz/corpus-openai/seed-embeddings
	@printf '\000{"model":"m","tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\\"a\\":1}"}}]},{"role":"tool","tool_call_id":"c1","content":"<tool_call>{\\"name\\":\\"f\\",\\"arguments\\":{}}</tool_call>"}]}' \
	    > $(BUILD)/fuzz/corpus-openai/seed-tools
	$(BUILD)/fuzz/fuzz_openai -max_total_time=$(FUZZ_TIME) -max_len=4096 \
	    -dict=t/fuzz/fuzz_openai.dict $(BUILD)/fuzz/corpus-openai

# the reading of an upstream's response for its usage (drop-in mode)
FG_FUZZ_USAGE_SRCS := ngx_module/openai/fg_json.c ngx_module/openai/fg_usage.c

$(BUILD)/fuzz/fuzz_usage: t/fuzz/fuzz_usage.c $(FG_FUZZ_USAGE_SRCS) \
                          $(wildcard ngx_module/openai/*.h)
	@mkdir -p $(dir $@)
	$(FG_FUZZ_CC) $(FG_FUZZ_FLAGS) $(FG_OPENAI_INC) -o $@ \
	    t/fuzz/fuzz_usage.c $(FG_FUZZ_USAGE_SRCS)

fuzz-usage: $(BUILD)/fuzz/fuzz_usage

fuzz-usage-run: $(BUILD)/fuzz/fuzz_usage
	@mkdir -p $(BUILD)/fuzz/corpus-usage
	$(BUILD)/fuzz/fuzz_usage -max_total_time=$(FUZZ_TIME) -max_len=4096 \
	    $(BUILD)/fuzz/corpus-usage t/fuzz/corpus/usage

.PHONY: fuzz-usage fuzz-usage-run

# a chat template's Jinja: parsed, and rendered under tight limits
$(BUILD)/fuzz/fuzz_jinja: t/fuzz/fuzz_jinja.c $(FG_JINJA_SRCS) \
                          $(wildcard ngx_module/jinja/*.h)
	@mkdir -p $(dir $@)
	$(FG_FUZZ_CC) $(FG_FUZZ_FLAGS) $(FG_JINJA_INC) -o $@ \
	    t/fuzz/fuzz_jinja.c $(FG_JINJA_SRCS) -ljansson -lm

fuzz-jinja: $(BUILD)/fuzz/fuzz_jinja

fuzz-jinja-run: $(BUILD)/fuzz/fuzz_jinja
	@mkdir -p $(BUILD)/fuzz/corpus-jinja
	$(BUILD)/fuzz/fuzz_jinja -max_total_time=$(FUZZ_TIME) -max_len=8192 \
	    $(BUILD)/fuzz/corpus-jinja t/fuzz/corpus/jinja

.PHONY: fuzz-jinja fuzz-jinja-run

# the keys file's lines (fg_keys.c)
$(BUILD)/fuzz/fuzz_keys: t/fuzz/fuzz_keys.c ngx_module/openai/fg_keys.c \
                         ngx_module/openai/fg_keys.h
	@mkdir -p $(dir $@)
	$(FG_FUZZ_CC) $(FG_FUZZ_FLAGS) $(FG_OPENAI_INC) -o $@ \
	    t/fuzz/fuzz_keys.c ngx_module/openai/fg_keys.c

fuzz-keys: $(BUILD)/fuzz/fuzz_keys

FG_FUZZ_KEY := 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08

fuzz-keys-run: $(BUILD)/fuzz/fuzz_keys
	@mkdir -p $(BUILD)/fuzz/corpus-keys
	@printf '$(FG_FUZZ_KEY) alice chat 2 rpm=60 tpm=100000 priority=0.5 models=gpt-4o,llama3\n' \
	    > $(BUILD)/fuzz/corpus-keys/seed-full
	@printf '# keys\n\n$(FG_FUZZ_KEY) bob - 1\r\nA$(FG_FUZZ_KEY) c x 1e6#\n' \
	    > $(BUILD)/fuzz/corpus-keys/seed-lines
	$(BUILD)/fuzz/fuzz_keys -max_total_time=$(FUZZ_TIME) -max_len=4096 \
	    $(BUILD)/fuzz/corpus-keys t/fuzz/corpus/keys

.PHONY: fuzz-keys fuzz-keys-run

# the grammar compilers (GBNF, JSON Schema) and the matcher's masks
FG_FUZZ_GRAMMAR_INC  := $(FG_GRAMMAR_INC) $(FG_UTIL_INC)
FG_FUZZ_GRAMMAR_SRCS := $(FG_GRAMMAR_SRCS) $(FG_MODEL_SRCS)

$(BUILD)/fuzz/fuzz_grammar: t/fuzz/fuzz_grammar.c $(FG_FUZZ_GRAMMAR_SRCS) \
                            $(wildcard engine/grammar/*.h)
	@mkdir -p $(dir $@)
	$(FG_FUZZ_CC) $(FG_FUZZ_FLAGS) $(FG_FUZZ_GRAMMAR_INC) -o $@ \
	    t/fuzz/fuzz_grammar.c $(FG_FUZZ_GRAMMAR_SRCS) -ljansson -lm

fuzz-grammar: $(BUILD)/fuzz/fuzz_grammar

fuzz-grammar-run: $(BUILD)/fuzz/fuzz_grammar
	@mkdir -p $(BUILD)/fuzz/corpus-grammar
	$(BUILD)/fuzz/fuzz_grammar -max_total_time=$(FUZZ_TIME) -max_len=4096 \
	    $(BUILD)/fuzz/corpus-grammar t/fuzz/corpus/grammar

.PHONY: fuzz-grammar fuzz-grammar-run

FG_FUZZ_REPLAY_SAN := -fsanitize=address,undefined \
                      -fno-sanitize-recover=undefined

# $(call fg_fuzz_replay,NAME,INCLUDES,SOURCES,LIBS,CFLAGS): the replay of
# fuzz_NAME.c's corpus and crashes, a test of make test
define fg_fuzz_replay
$(BUILD)/t/fuzz_replay_$(1): t/fuzz/fuzz_$(1).c t/fuzz/fuzz_replay.c $(3)
	@mkdir -p $$(dir $$@)
	$$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror $$(FG_FUZZ_REPLAY_SAN) \
	    -DFG_FUZZ_NAME='"$(1)"' \
	    $(5) $(2) -o $$@ t/fuzz/fuzz_$(1).c t/fuzz/fuzz_replay.c $(3) $(4)

FG_TESTS += $(BUILD)/t/fuzz_replay_$(1)
endef

$(eval $(call fg_fuzz_replay,usage,$(FG_OPENAI_INC),$(FG_FUZZ_USAGE_SRCS)))
$(eval $(call fg_fuzz_replay,keys,$(FG_OPENAI_INC),ngx_module/openai/fg_keys.c))
$(eval $(call fg_fuzz_replay,jinja,$(FG_JINJA_INC),$(FG_JINJA_SRCS), \
    -ljansson -lm))

# the engine's reading of the workers' rings in the segment
FG_FUZZ_SHM_ENGINE_SRCS := $(FG_SHM_ENGINE_SRCS) $(FG_SHM_SRCS)
FG_FUZZ_SHM_INC         := -It/fuzz $(FG_SHM_INC) $(FG_UTIL_INC)

$(BUILD)/fuzz/fuzz_shm_engine: t/fuzz/fuzz_shm_engine.c \
                               t/fuzz/fuzz_shm_common.h \
                               $(FG_FUZZ_SHM_ENGINE_SRCS) \
                               $(wildcard engine/shm/*.h)
	@mkdir -p $(dir $@)
	$(FG_FUZZ_CC) $(FG_FUZZ_FLAGS) $(FG_FUZZ_SHM_INC) -o $@ \
	    t/fuzz/fuzz_shm_engine.c $(FG_FUZZ_SHM_ENGINE_SRCS) -lpthread

fuzz-shm_engine: $(BUILD)/fuzz/fuzz_shm_engine

fuzz-shm_engine-run: $(BUILD)/fuzz/fuzz_shm_engine
	@mkdir -p $(BUILD)/fuzz/corpus-shm_engine
	$(BUILD)/fuzz/fuzz_shm_engine -max_total_time=$(FUZZ_TIME) \
	    -max_len=8192 $(BUILD)/fuzz/corpus-shm_engine t/fuzz/corpus/shm_engine

.PHONY: fuzz-shm_engine fuzz-shm_engine-run

$(eval $(call fg_fuzz_replay,shm_engine,$(FG_FUZZ_SHM_INC), \
    $(FG_FUZZ_SHM_ENGINE_SRCS),-lpthread))

# the gateway's reading of the engine's side of the segment
$(BUILD)/fuzz/fuzz_shm_client: t/fuzz/fuzz_shm_client.c \
                               t/fuzz/fuzz_shm_common.h \
                               $(FG_FUZZ_SHM_ENGINE_SRCS) \
                               $(wildcard engine/shm/*.h)
	@mkdir -p $(dir $@)
	$(FG_FUZZ_CC) $(FG_FUZZ_FLAGS) $(FG_FUZZ_SHM_INC) -o $@ \
	    t/fuzz/fuzz_shm_client.c $(FG_FUZZ_SHM_ENGINE_SRCS) -lpthread

fuzz-shm_client: $(BUILD)/fuzz/fuzz_shm_client

fuzz-shm_client-run: $(BUILD)/fuzz/fuzz_shm_client
	@mkdir -p $(BUILD)/fuzz/corpus-shm_client
	$(BUILD)/fuzz/fuzz_shm_client -max_total_time=$(FUZZ_TIME) \
	    -max_len=8192 $(BUILD)/fuzz/corpus-shm_client t/fuzz/corpus/shm_client

.PHONY: fuzz-shm_client fuzz-shm_client-run

$(eval $(call fg_fuzz_replay,shm_client,$(FG_FUZZ_SHM_INC), \
    $(FG_FUZZ_SHM_ENGINE_SRCS),-lpthread))

$(eval $(call fg_fuzz_replay,json,$(FG_OPENAI_INC), \
    ngx_module/openai/fg_json.c,-ljansson))
$(eval $(call fg_fuzz_replay,openai,$(FG_OPENAI_INC), \
    $(FG_OPENAI_SRCS) $(FG_JINJA_SRCS) $(FG_GRAMMAR_SRCS) $(FG_MODEL_SRCS), \
    -ljansson -lm -lcrypto))
$(eval $(call fg_fuzz_replay,gguf,$(FG_FUZZ_GGUF_INC), \
    $(FG_FUZZ_GGUF_SRCS),-lm $(FG_KERNELS_LIBS)))
$(eval $(call fg_fuzz_replay,tokenizer,$(FG_GEN_INC) -Ikernels/cpu, \
    $(FG_MODEL_SRCS) $(FG_GEN_SRCS) $(FG_KERNELS_ROW_SRCS), \
    -ljansson -lm $(FG_KERNELS_LIBS), \
    -DFG_FUZZ_NEEDS='"../shared/models/stories260K.gguf"'))

$(eval $(call fg_fuzz_replay,grammar,$(FG_FUZZ_GRAMMAR_INC), \
    $(FG_FUZZ_GRAMMAR_SRCS),-ljansson -lm))
