# t/: C unit tests (TAP binaries run by prove), the simulator and benches.

$(BUILD)/t/%: $(BUILD)/obj/t/unit/%.o $(BUILD)/libfgcore.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ -lm

FG_TESTS += $(BUILD)/t/test_cost $(BUILD)/t/test_heap \
            $(BUILD)/t/test_window $(BUILD)/t/test_sched \
            $(BUILD)/t/test_oit

# benchmarks: `make bench` runs them; their figures go in docs/
$(BUILD)/bench/%: $(BUILD)/obj/t/bench/%.o $(BUILD)/libfgcore.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ -lm

FG_BENCHES += $(BUILD)/bench/bench_sched

# the simulator: the policy core in front of a simulated engine (t/sim/)
FG_SIM_SRCS := t/sim/fg_sim_trace.c t/sim/fg_sim_gen.c t/sim/fg_sim_run.c \
               t/sim/fg_sim_metrics.c t/sim/fg_sim_latency.c \
               t/sim/fg_sim_opts.c
FG_SIM_OBJS := $(FG_SIM_SRCS:%.c=$(BUILD)/obj/%.o) \
               $(BUILD)/obj/engine/fg_step_model.o

$(BUILD)/libfgsim.a: $(FG_SIM_OBJS)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/fairgate-sim: $(BUILD)/obj/t/sim/fg_sim_main.o \
                       $(BUILD)/libfgsim.a $(BUILD)/libfgcore.a
	$(CC) $(FG_LDFLAGS) -o $@ $^ -ljansson -lm

FG_SIM_TESTS := $(BUILD)/t/test_sim_step_model $(BUILD)/t/test_sim_trace \
                $(BUILD)/t/test_sim_gen $(BUILD)/t/test_sim_run \
                $(BUILD)/t/test_sim_metrics $(BUILD)/t/test_sim_fairness \
                $(BUILD)/t/test_sim_latency

# the simulator's tests include its headers and link its library
$(BUILD)/obj/t/unit/test_sim_%.o: FG_CFLAGS += -It/sim

$(FG_SIM_TESTS): $(BUILD)/t/%: $(BUILD)/obj/t/unit/%.o \
                               $(BUILD)/libfgsim.a $(BUILD)/libfgcore.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ -ljansson -lm

FG_TOOLS += $(BUILD)/fairgate-sim

# the paper's suites for every policy, the table of docs/simulator.md
FG_BENCHES += t/sim/fairness-report.sh
FG_TESTS += $(FG_SIM_TESTS)

# the load generator and trace replayer (t/load/, docs/load.md): libcurl
# multi in one thread; its unit tests, and t/060-load.t against the mock
FG_LOAD_SRCS := t/load/fg_load_sse.c t/load/fg_load_req.c \
                t/load/fg_load_results.c t/load/fg_load_run.c
FG_LOAD_OBJS := $(FG_LOAD_SRCS:%.c=$(BUILD)/obj/%.o)
FG_LOAD_LIBS := -lcurl -ljansson -lm

$(BUILD)/obj/t/load/%.o: FG_CFLAGS += -It/sim
$(BUILD)/obj/t/unit/test_load_%.o: FG_CFLAGS += -It/sim -It/load

$(BUILD)/libfgload.a: $(FG_LOAD_OBJS)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/fairgate-load: $(BUILD)/obj/t/load/fg_load_main.o \
                        $(BUILD)/libfgload.a $(BUILD)/libfgsim.a \
                        $(BUILD)/libfgcore.a
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_LOAD_LIBS)

FG_LOAD_TESTS := $(BUILD)/t/test_load_sse $(BUILD)/t/test_load_req \
                 $(BUILD)/t/test_load_results $(BUILD)/t/test_load_run

$(FG_LOAD_TESTS): $(BUILD)/t/%: $(BUILD)/obj/t/unit/%.o \
                                $(BUILD)/libfgload.a $(BUILD)/libfgsim.a \
                                $(BUILD)/libfgcore.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_LOAD_LIBS)

FG_TOOLS += $(BUILD)/fairgate-load
FG_TESTS += $(FG_LOAD_TESTS)

# the VTC suites end to end through nginx, the module, the zone and the
# engine's sim backend, beside the simulator (docs/gateway-fairness.md):
# a few minutes, so `make bench` only, never `make test`
FG_BENCHES += t/load/gateway-suites.sh

# FairServe's experiment through the gateway (docs/fairserve.md): rpm, vtc,
# wsc and wsc+oit on the fairserve trace in real time, about 23 minutes,
# so its own target, not part of `make bench`
.PHONY: bench-fairserve
bench-fairserve: all
	t/load/fairserve-suite.sh

# fairgate_redis: throughput at 10,000 active tenants without and with the
# Redis sync (docs/redis.md)
FG_BENCHES += t/bench/bench_redis.pl

# kernels/: the CPU compute kernels the engine links, their tests and bench
FG_KERNELS_SRCS := kernels/fg_pool.c kernels/fg_kernels_mm.c \
                   kernels/fg_kernels_cpu.c
FG_KERNELS_OBJS := $(FG_KERNELS_SRCS:%.c=$(BUILD)/obj/%.o)
FG_KERNELS_LIBS := -lopenblas -lm -pthread

$(BUILD)/libfgkernels.a: $(FG_KERNELS_OBJS)
	rm -f $@
	ar rcs $@ $^

FG_KERNELS_TESTS := $(BUILD)/t/test_kernels_pool $(BUILD)/t/test_kernels_mm \
                    $(BUILD)/t/test_kernels_ops $(BUILD)/t/test_kernels_attn

$(FG_KERNELS_TESTS): $(BUILD)/t/%: $(BUILD)/obj/t/unit/%.o \
                                   $(BUILD)/libfgkernels.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_KERNELS_LIBS)

$(BUILD)/bench/bench_kernels: $(BUILD)/obj/t/bench/bench_kernels.o \
                              $(BUILD)/libfgkernels.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_KERNELS_LIBS)

FG_TOOLS += $(BUILD)/libfgkernels.a
FG_TESTS += $(FG_KERNELS_TESTS)
FG_BENCHES += $(BUILD)/bench/bench_kernels

# the GGUF reader, writer and tokenizer (engine/fg_gguf*, fg_tokenizer*)
FG_MODEL_TESTS := $(BUILD)/t/test_gguf $(BUILD)/t/test_gguf_bad \
                  $(BUILD)/t/test_tokenizer

$(FG_MODEL_TESTS): $(BUILD)/t/%: $(BUILD)/obj/t/unit/%.o \
                                 $(BUILD)/libfggen.a $(BUILD)/libfgtok.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ -lm

FG_TESTS += $(FG_MODEL_TESTS)

# libFuzzer target of the GGUF reader and tokenizer, not part of `make test`:
# `make fuzz-gguf-run FUZZ_TIME=300` seeds build/fuzz/corpus and runs it.
FG_FUZZ_CC    ?= clang
FG_FUZZ_FLAGS := -std=gnu11 -g -O1 -Iengine \
                 -fsanitize=fuzzer,address,undefined \
                 -fno-sanitize-recover=undefined
FUZZ_TIME     ?= 60

$(BUILD)/fuzz/fuzz_gguf: t/unit/fuzz_gguf.c $(FG_TOK_SRCS) \
                         $(wildcard engine/fg_gguf*.h engine/fg_tok*.h)
	@mkdir -p $(dir $@)
	$(FG_FUZZ_CC) $(FG_FUZZ_FLAGS) -o $@ t/unit/fuzz_gguf.c $(FG_TOK_SRCS) -lm

.PHONY: fuzz-gguf fuzz-gguf-run fuzz-tokenizer fuzz-tokenizer-run
fuzz-gguf: $(BUILD)/fuzz/fuzz_gguf

$(BUILD)/fuzz/fuzz_gguf_seeds: $(BUILD)/obj/t/unit/fuzz_gguf_seeds.o \
                               $(BUILD)/libfggen.a $(BUILD)/libfgtok.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ -lm

fuzz-gguf-run: $(BUILD)/fuzz/fuzz_gguf $(BUILD)/fuzz/fuzz_gguf_seeds
	@mkdir -p $(BUILD)/fuzz/corpus
	$(BUILD)/fuzz/fuzz_gguf_seeds $(BUILD)/fuzz/corpus
	$(BUILD)/fuzz/fuzz_gguf -max_total_time=$(FUZZ_TIME) \
	    -max_len=32768 $(BUILD)/fuzz/corpus

# the tokenizer on arbitrary text, checking round trips and the stream:
# `make fuzz-tokenizer-run FUZZ_TIME=300`
$(BUILD)/fuzz/fuzz_tokenizer: t/unit/fuzz_tokenizer.c $(FG_TOK_SRCS) \
                              engine/fg_gguf_write.c \
                              $(wildcard engine/fg_gguf*.h engine/fg_tok*.h)
	@mkdir -p $(dir $@)
	$(FG_FUZZ_CC) $(FG_FUZZ_FLAGS) -o $@ t/unit/fuzz_tokenizer.c \
	    $(FG_TOK_SRCS) engine/fg_gguf_write.c -lm

fuzz-tokenizer: $(BUILD)/fuzz/fuzz_tokenizer

fuzz-tokenizer-run: $(BUILD)/fuzz/fuzz_tokenizer
	@mkdir -p $(BUILD)/fuzz/corpus-tok
	$(BUILD)/fuzz/fuzz_tokenizer -max_total_time=$(FUZZ_TIME) \
	    -max_len=512 $(BUILD)/fuzz/corpus-tok

# the cpu backend's forward pass and backend (engine/fg_model*,
# fg_backend_cpu.c): against a reference, batched, on stories260K
FG_CPU_TESTS := $(BUILD)/t/test_model $(BUILD)/t/test_backend_cpu
FG_CPU_LINK  := $(BUILD)/libfgcpu.a $(BUILD)/libfggen.a $(BUILD)/libfgtok.a \
                $(BUILD)/libfgkernels.a

$(FG_CPU_TESTS): $(BUILD)/t/%: $(BUILD)/obj/t/unit/%.o $(FG_CPU_LINK)
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_KERNELS_LIBS)

FG_TESTS += $(FG_CPU_TESTS)

# decode and prefill tokens/s of the cpu backend (docs/engine.md)
$(BUILD)/bench/bench_engine: $(BUILD)/obj/t/bench/bench_engine.o \
                             $(FG_CPU_LINK)
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_KERNELS_LIBS)

FG_BENCHES += $(BUILD)/bench/bench_engine

# the engine's runtime (engine/fg_kv*, fg_sample*, fg_batch*, the sim
# backend): KV bookkeeping, sampling, batching over sim
FG_RT_TESTS := $(BUILD)/t/test_kv $(BUILD)/t/test_sample \
               $(BUILD)/t/test_batch
FG_RT_LINK  := $(BUILD)/libfgengine.a $(BUILD)/libfgtok.a \
               $(BUILD)/libfgkernels.a

$(FG_RT_TESTS): $(BUILD)/t/%: $(BUILD)/obj/t/unit/%.o $(FG_RT_LINK)
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_RT_LIBS)

FG_TESTS += $(FG_RT_TESTS)

# the engine protocol end to end: engine, workers and a fake gateway in
# forked processes
FG_SHM_TESTS := $(BUILD)/t/test_shm

$(FG_SHM_TESTS): $(BUILD)/t/%: $(BUILD)/obj/t/unit/%.o $(BUILD)/libfgserve.a \
                               $(FG_RT_LINK) $(BUILD)/libfgshm.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_RT_LIBS)

FG_TESTS += $(FG_SHM_TESTS)

# the fairgate-engine command itself, run as prove runs it
$(BUILD)/t/test_engine_main: $(BUILD)/obj/t/unit/test_engine_main.o \
                             $(BUILD)/libfgshm.a | $(BUILD)/fairgate-engine
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^

FG_TESTS += $(BUILD)/t/test_engine_main

# the protocol's own latency and throughput, a client on the segment
# directly (docs/engine-protocol.md)
$(BUILD)/bench/bench_shm: $(BUILD)/obj/t/bench/bench_shm.o \
                          $(BUILD)/libfgshm.a | $(BUILD)/fairgate-engine
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^

FG_BENCHES += $(BUILD)/bench/bench_shm

# local mode through the gateway: time to first token beside bench_shm's,
# and tokens per second with 1,000 streams (docs/local-mode.md)
FG_BENCHES += t/bench/bench_local.sh

# the OpenAI API layer of local mode (ngx_module/fg_openai_*,
# fg_chat_template*): pure C over jansson and the tokenizer, libfgoai.a,
# which the nginx glue links; its tests (docs/openai-api.md)
FG_OAI_SRCS := ngx_module/fg_openai_request.c ngx_module/fg_openai_response.c \
               ngx_module/fg_chat_template.c
FG_OAI_OBJS := $(FG_OAI_SRCS:%.c=$(BUILD)/obj/%.o)

$(BUILD)/libfgoai.a: $(FG_OAI_OBJS)
	rm -f $@
	ar rcs $@ $^

FG_OAI_TESTS := $(BUILD)/t/test_openai_request \
                $(BUILD)/t/test_openai_template \
                $(BUILD)/t/test_openai_response

$(FG_OAI_TESTS): $(BUILD)/t/%: $(BUILD)/obj/t/unit/%.o $(BUILD)/libfgoai.a \
                               $(BUILD)/libfggen.a $(BUILD)/libfgtok.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ -ljansson -lm

FG_TOOLS += $(BUILD)/libfgoai.a
FG_TESTS += $(FG_OAI_TESTS)

# libFuzzer target of the OpenAI API layer, not part of `make test`:
# `make fuzz-openai-run FUZZ_TIME=300` (bodies, templates, writers, stops)
$(BUILD)/fuzz/fuzz_openai: t/unit/fuzz_openai.c $(FG_OAI_SRCS) $(FG_TOK_SRCS) \
                           $(wildcard ngx_module/fg_openai_*.h \
                                      ngx_module/fg_chat_template.h)
	@mkdir -p $(dir $@)
	$(FG_FUZZ_CC) $(FG_FUZZ_FLAGS) -Ingx_module -o $@ t/unit/fuzz_openai.c \
	    $(FG_OAI_SRCS) $(FG_TOK_SRCS) -ljansson -lm

.PHONY: fuzz-openai fuzz-openai-run
fuzz-openai: $(BUILD)/fuzz/fuzz_openai

fuzz-openai-run: $(BUILD)/fuzz/fuzz_openai
	@mkdir -p $(BUILD)/fuzz/corpus-openai
	@printf '\000{"model":"m","messages":[{"role":"user","content":"hi"}],"stop":["i"],"stream":true}' \
	    > $(BUILD)/fuzz/corpus-openai/seed-chat
	@printf '\001{"model":"m","prompt":"Once upon","stop":"on","max_tokens":5}' \
	    > $(BUILD)/fuzz/corpus-openai/seed-completion
	@printf '\002{{ bos_token }}<|im_start|>system\\nYou are kind.<|im_end|>' \
	    > $(BUILD)/fuzz/corpus-openai/seed-template
	$(BUILD)/fuzz/fuzz_openai -max_total_time=$(FUZZ_TIME) -max_len=4096 \
	    -dict=t/unit/fuzz_openai.dict $(BUILD)/fuzz/corpus-openai
