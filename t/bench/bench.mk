# t/bench/: the benchmarks that `make bench` runs, in this order; their
# figures are recorded in docs/ beside the commands that took them.

# drop-in: fairgate against plain proxy_pass and limit_req (wrk)
FG_BENCHES += t/bench/bench_dropin.pl

# drop-in: fairgate_prefix against round robin and least_conn, the cached
# share at two mock peers and the balancer's cost (docs/dropin.md)
FG_BENCHES += t/bench/bench_dropin_prefix.pl

# the policy core's dispatch cost at up to 100,000 tenants
$(BUILD)/obj/t/bench/bench_sched.o: FG_INC := $(FG_CORE_INC) $(FG_UTIL_INC)

$(BUILD)/bench/bench_sched: $(BUILD)/obj/t/bench/bench_sched.o \
                            $(BUILD)/libfgcore.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ -lm

FG_BENCHES += $(BUILD)/bench/bench_sched

# a quota's check and count at admission, per window (docs/quotas.md)
$(BUILD)/obj/t/bench/bench_quota.o: FG_INC := $(FG_CORE_INC) $(FG_UTIL_INC)

$(BUILD)/bench/bench_quota: $(BUILD)/obj/t/bench/bench_quota.o \
                            $(BUILD)/libfgcore.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ -lm

FG_BENCHES += $(BUILD)/bench/bench_quota

# fairgate_redis: throughput at 10,000 active tenants without and with the
# Redis sync (docs/redis.md)
FG_BENCHES += t/bench/bench_redis.pl
FG_BENCHES += t/bench/bench_status.pl

# the CPU kernels (docs/kernels.md)
$(BUILD)/obj/t/bench/bench_kernels.o: FG_INC := $(FG_KERNELS_INC) -Ikernels/cpu \
                                                $(FG_UTIL_INC)

$(BUILD)/bench/bench_kernels: $(BUILD)/obj/t/bench/bench_kernels.o \
                              $(BUILD)/libfgkernels.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_KERNELS_LIBS)

FG_BENCHES += $(BUILD)/bench/bench_kernels

# ggml's quantized types beside Q8_0, best path and AVX2 (docs/kernels.md)
FG_BENCHES += t/bench/bench_kernels_quant.sh

# decode and prefill tokens/s of the cpu backend (docs/engine.md), and a
# prefill with its prefix cached against the same uncached, through the
# batcher (docs/engine-runtime.md)
$(BUILD)/obj/t/bench/bench_engine.o: FG_INC := $(FG_BATCH_INC) \
                                               $(FG_CPU_INC) $(FG_GEN_INC)

$(BUILD)/bench/bench_engine: $(BUILD)/obj/t/bench/bench_engine.o \
                             $(BUILD)/libfggen.a $(FG_BATCH_LINK)
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_BATCH_LIBS)

FG_BENCHES += $(BUILD)/bench/bench_engine

# several models: the memory one KV arena saves over a cache for each
# model when their load comes in turn (docs/multi-model.md)
$(BUILD)/obj/t/bench/bench_kv_arena.o: FG_INC := $(FG_KV_INC) \
                                                 $(FG_GEN_INC)

$(BUILD)/bench/bench_kv_arena: $(BUILD)/obj/t/bench/bench_kv_arena.o \
                               $(BUILD)/libfggen.a $(FG_KV_LINK)
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_KV_LIBS)

FG_BENCHES += $(BUILD)/bench/bench_kv_arena

# a sampled token's cost with the logits' adjustments and logprobs
# (docs/engine-runtime.md, "Sampling")
$(BUILD)/obj/t/bench/bench_sample.o: FG_INC := $(FG_BATCH_INC)

$(BUILD)/bench/bench_sample: $(BUILD)/obj/t/bench/bench_sample.o \
                             $(FG_BATCH_LINK)
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_BATCH_LIBS)

FG_BENCHES += $(BUILD)/bench/bench_sample

# structured output: the grammar's masks in the batcher's decode step, at
# batch 1 and 32, on the 100M shape with a real vocabulary
# (docs/structured-output.md); not in make bench: it needs the model file
# that its usage line says how to write
$(BUILD)/obj/t/bench/bench_grammar_step.o: FG_INC := $(FG_BATCH_INC)

$(BUILD)/bench/bench_grammar_step: $(BUILD)/obj/t/bench/bench_grammar_step.o \
                                   $(FG_BATCH_LINK)
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_BATCH_LIBS)

# the protocol's own latency and throughput, a client on the segment
# directly (docs/engine-protocol.md)
$(BUILD)/obj/t/bench/bench_shm.o: FG_INC := $(FG_SHM_INC)

$(BUILD)/bench/bench_shm: $(BUILD)/obj/t/bench/bench_shm.o \
                          $(BUILD)/libfgshm.a | $(BUILD)/fairgate-engine
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^

FG_BENCHES += $(BUILD)/bench/bench_shm

# local mode through the gateway: time to first token beside bench_shm's,
# and tokens per second with 1,000 streams (docs/local-mode.md)
FG_BENCHES += t/bench/bench_local.sh

# not in make bench (it needs an earlier build beside this one):
# t/bench/compare_builds.pl OLD [ROUNDS] runs bench_dropin, bench_engine
# and bench_sched for this checkout and OLD in turn (docs/architecture.md)

# a model's own chat template: parsed and rendered (docs/openai-api.md)
$(BUILD)/obj/t/bench/bench_jinja.o: FG_INC := $(FG_JINJA_INC)

$(BUILD)/bench/bench_jinja: $(BUILD)/obj/t/bench/bench_jinja.o \
                            $(BUILD)/libfgjinja.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ -ljansson -lm

FG_BENCHES += $(BUILD)/bench/bench_jinja
# fairgate's engine beside llama.cpp (node-llama-cpp, t/node) on the same
# files and threads (docs/engine-speed.md): not in make bench, its full
# run takes hours on the 1b shape.  make bench-llamacpp BENCH_ARGS="--shapes
# 100m --types f32,q8_0 --threads 1" runs a part.
.PHONY: bench-llamacpp
bench-llamacpp: $(BUILD)/t/fg_engine_drive $(BUILD)/fairgate-gguf-gen
	@[ -f t/node/node_modules/node-llama-cpp/package.json ] \
	    || (cd t/node && npm ci --no-audit --no-fund)
	perl t/bench/bench_llamacpp.pl $(BENCH_ARGS)

# constrained decoding: the mask's cost per decode step over 32,000 and
# ~150,000-token vocabularies (docs/structured-output.md); the script
# writes the real vocabularies' GGUF files when t/node has them
$(BUILD)/obj/t/bench/bench_grammar.o: FG_INC := $(FG_GRAMMAR_INC) \
                                                $(FG_UTIL_INC)

$(BUILD)/bench/bench_grammar: $(BUILD)/obj/t/bench/bench_grammar.o \
                              $(FG_GRAMMAR_LINK)
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_GRAMMAR_LIBS)

bench: $(BUILD)/bench/bench_grammar $(BUILD)/fairgate-gguf-gen
FG_BENCHES += t/bench/bench_grammar.sh
