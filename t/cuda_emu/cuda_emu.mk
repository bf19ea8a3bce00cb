# t/cuda_emu/: the cuda backend and its real kernels over a CPU emulation
# of CUDA and cuBLAS, with the GPU tests' own code (t/gpu/test_cuda.c,
# test_cuda_sample.c, test_cuda_quant.c): the kernels, the passes, staging, wanted rows,
# cache layout and graph replays against the cpu backend, in `make test`
# on machines without a GPU or nvcc.  g++ compiles each .cu with
# cuda_runtime.h forced in, as nvcc does, once its launches and dynamic
# shared memory are rewritten in plain C++;
# its threads are fibers (fg_simt.cc, Boost.Context).  The sampler runs in
# blocks of 256 there: a fiber switch per thread and barrier is the cost.

FG_EMU_INC    := $(call fg_uniq,-It/cuda_emu $(FG_GPU_T_INC))
FG_EMU_CFLAGS := -DFG_TEST_CUDA_EMU
FG_SIMT_FLAGS := -std=c++17 -O2 -g -fPIC -Wall -Wextra -Werror \
                 -Wno-unknown-pragmas -It/cuda_emu -It/unit $(FG_CUDA_INC) \
                 $(FG_UTIL_INC) -DFG_CUK_SAMPLE_THREADS=256
FG_EMU_LIBS   := -lboost_context -lstdc++

$(BUILD)/obj/emu/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(FG_CFLAGS) $(FG_EMU_INC) $(FG_EMU_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/obj/emu/%.o: %.cc
	@mkdir -p $(dir $@)
	$(CXX) $(FG_SIMT_FLAGS) -MMD -MP -c $< -o $@

# kernel<<<g, b, smem, s>>>(a) -> kernel % fg_simt_launch(g, b, smem, s)(a)
# extern __shared__ T name[]; -> T *name = (T *) fg_simt_dyn_smem();
FG_SIMT_DYN := $$1 *$$2 = ($$1 *) fg_simt_dyn_smem();

$(BUILD)/emu/%.cc: %.cu
	@mkdir -p $(dir $@)
	perl -pe 'print "#line 1 \"$$ARGV\"\n" if $$. == 1;' \
	    -e 's/<<</ % fg_simt_launch(/g; s/>>>/)/g;' \
	    -e 's/extern __shared__ (\w+)\s+(\w+)\[\];/$(FG_SIMT_DYN)/' \
	    $< > $@

# the rewritten sources are kept: their objects' dependency files name
# them, so a deleted one would be made again, and its object with it
.SECONDARY: $(patsubst %.cu,$(BUILD)/emu/%.cc,$(FG_CUK_SRCS) \
                t/cuda_emu/test_simt.cu)

$(BUILD)/obj/emu/%.cu.o: $(BUILD)/emu/%.cc
	@mkdir -p $(dir $@)
	$(CXX) $(FG_SIMT_FLAGS) -include cuda_runtime.h -MMD -MP -c $< -o $@

FG_EMU_RT    := $(BUILD)/obj/emu/t/cuda_emu/fg_cuda_emu.o \
                $(BUILD)/obj/emu/t/cuda_emu/fg_simt.o
FG_EMU_OBJS  := $(patsubst %.c,$(BUILD)/obj/emu/%.o,$(FG_CUDA_SRCS)) \
                $(patsubst %.cu,$(BUILD)/obj/emu/%.cu.o,$(FG_CUK_SRCS)) \
                $(FG_EMU_RT)

$(BUILD)/t/test_cuda_emu: $(BUILD)/obj/emu/t/gpu/test_cuda.o $(FG_EMU_OBJS) \
                          $(BUILD)/libfggen.a $(FG_BACKENDS_LINK)
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_BACKENDS_LIBS) $(FG_EMU_LIBS)

FG_TESTS += $(BUILD)/t/test_cuda_emu

# the prefix cache over the cuda backend: the batcher and the prefix
# suite of t/unit/batch/fg_test_prefix.h, as sim and cpu run it
$(BUILD)/obj/emu/t/cuda_emu/test_cuda_prefix.o: \
    FG_EMU_INC += -It/unit/batch $(FG_BATCH_INC)

$(BUILD)/t/test_cuda_prefix: $(BUILD)/obj/emu/t/cuda_emu/test_cuda_prefix.o \
                             $(FG_EMU_OBJS) $(BUILD)/libfggen.a \
                             $(FG_BATCH_LINK)
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_BATCH_LIBS) $(FG_EMU_LIBS)

FG_TESTS += $(BUILD)/t/test_cuda_prefix

# swap preemption over the cuda backend: t/unit/batch/fg_test_swap.h's
# suite, as the cpu backend runs it (test_swap)
$(BUILD)/obj/emu/t/cuda_emu/test_cuda_swap.o: \
    FG_EMU_INC += -It/unit/batch $(FG_BATCH_INC)

$(BUILD)/t/test_cuda_swap: $(BUILD)/obj/emu/t/cuda_emu/test_cuda_swap.o \
                           $(FG_EMU_OBJS) $(BUILD)/libfggen.a \
                           $(FG_BATCH_LINK)
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_BATCH_LIBS) $(FG_EMU_LIBS)

FG_TESTS += $(BUILD)/t/test_cuda_swap

# the sampling kernels against the CPU's (t/gpu/test_cuda_sample.c)
FG_EMU_SAMPLE := $(BUILD)/obj/emu/kernels/cuda/fg_kernels_cuda_sample.cu.o

$(BUILD)/t/test_cuda_sample_emu: $(BUILD)/obj/emu/t/gpu/test_cuda_sample.o \
                                 $(FG_EMU_SAMPLE) $(FG_EMU_RT) \
                                 $(BUILD)/libfgkernels.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_KERNELS_LIBS) $(FG_EMU_LIBS)

FG_TESTS += $(BUILD)/t/test_cuda_sample_emu

# the quantized types' kernels and the batched product by tiles against
# the CPU's dequantization (t/gpu/test_cuda_quant.c)
$(BUILD)/t/test_cuda_quant_emu: $(BUILD)/obj/emu/t/gpu/test_cuda_quant.o \
                                $(FG_EMU_OBJS) $(BUILD)/libfggen.a \
                                $(FG_BACKENDS_LINK)
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_BACKENDS_LIBS) $(FG_EMU_LIBS)

FG_TESTS += $(BUILD)/t/test_cuda_quant_emu

# the emulation itself: what it does as a GPU does, and the faults it
# reports (t/cuda_emu/test_simt.cu)
$(BUILD)/t/test_simt: $(BUILD)/obj/emu/t/cuda_emu/test_simt.cu.o \
                      $(FG_EMU_RT) $(BUILD)/libfgkernels.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_KERNELS_LIBS) $(FG_EMU_LIBS)

FG_TESTS += $(BUILD)/t/test_simt

# the same emulation as a backend object, for fairgate-engine end to end
# (test_cuda_load: FAIRGATE_CUDA_BACKEND=build/t/fairgate-backend-cuda-emu.so)
$(BUILD)/t/fairgate-backend-cuda-emu.so: $(FG_EMU_OBJS) \
                          $(BUILD)/libfgbackends.a $(BUILD)/libfgmodel.a \
                          $(BUILD)/libfgkernels.a \
                          $(FG_CUDA_MAP)
	@mkdir -p $(dir $@)
	$(CC) -shared $(FG_SAN) -o $@ $(filter %.o %.a,$^) -Wl,--no-undefined \
	    -Wl,--version-script=$(FG_CUDA_MAP) $(FG_KERNELS_LIBS) \
	    $(FG_EMU_LIBS)

# the benchmark program over the emulation, run by test_cuda_load with a
# tiny shape: its steps, cache sizing and arithmetic checked before a GPU
$(BUILD)/t/bench_cuda_emu: $(BUILD)/obj/emu/t/bench/bench_cuda.o \
                           $(BUILD)/obj/emu/t/cuda_emu/fg_cuda_emu.o \
                           $(FG_GPU_T_LINK)
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_GPU_T_LIBS)

$(BUILD)/t/test_cuda_load: | $(BUILD)/t/fairgate-backend-cuda-emu.so \
                             $(BUILD)/t/bench_cuda_emu

# make test-cuda-asan: the same tests with the kernels, the backend and
# the emulated runtime under AddressSanitizer, device memory being host
# memory: a kernel reading or writing past a buffer, or a leak, is
# reported as compute-sanitizer would (about twice test_cuda_emu's time;
# not in make test).  The fibers' switcher is left uninstrumented.
FG_ASAN := -fsanitize=address -fno-omit-frame-pointer

$(BUILD)/obj/asan/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(FG_CFLAGS) $(FG_EMU_INC) $(FG_EMU_CFLAGS) $(FG_ASAN) -MMD -MP \
	    -c $< -o $@

$(BUILD)/obj/asan/%.cu.o: $(BUILD)/emu/%.cc
	@mkdir -p $(dir $@)
	$(CXX) $(FG_SIMT_FLAGS) $(FG_ASAN) -include cuda_runtime.h \
	    -MMD -MP -c $< -o $@

FG_ASAN_OBJS := $(patsubst %.c,$(BUILD)/obj/asan/%.o,$(FG_CUDA_SRCS)) \
                $(patsubst %.cu,$(BUILD)/obj/asan/%.cu.o,$(FG_CUK_SRCS)) \
                $(BUILD)/obj/asan/t/cuda_emu/fg_cuda_emu.o \
                $(BUILD)/obj/emu/t/cuda_emu/fg_simt.o

$(BUILD)/t/test_cuda_asan: $(BUILD)/obj/asan/t/gpu/test_cuda.o \
                           $(FG_ASAN_OBJS) \
                           $(BUILD)/libfggen.a $(FG_BACKENDS_LINK)
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) $(FG_ASAN) -o $@ $^ $(FG_BACKENDS_LIBS) \
	    $(FG_EMU_LIBS)

$(BUILD)/t/test_cuda_sample_asan: $(BUILD)/obj/asan/t/gpu/test_cuda_sample.o \
                  $(BUILD)/obj/asan/kernels/cuda/fg_kernels_cuda_sample.cu.o \
                  $(BUILD)/obj/asan/t/cuda_emu/fg_cuda_emu.o \
                  $(BUILD)/obj/emu/t/cuda_emu/fg_simt.o \
                  $(BUILD)/libfgkernels.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) $(FG_ASAN) -o $@ $^ $(FG_KERNELS_LIBS) \
	    $(FG_EMU_LIBS)

$(BUILD)/t/test_cuda_quant_asan: $(BUILD)/obj/asan/t/gpu/test_cuda_quant.o \
                                 $(FG_ASAN_OBJS) \
                                 $(BUILD)/libfggen.a $(FG_BACKENDS_LINK)
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) $(FG_ASAN) -o $@ $^ $(FG_BACKENDS_LIBS) \
	    $(FG_EMU_LIBS)

.PHONY: test-cuda-asan

test-cuda-asan: $(BUILD)/t/test_cuda_asan $(BUILD)/t/test_cuda_sample_asan \
                $(BUILD)/t/test_cuda_quant_asan
	prove -v --exec '' $^
