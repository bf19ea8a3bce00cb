# t/gpu/: the cuda backend's tests and benchmark on a GPU (docs/cuda.md).
# `make test-gpu` compares it with the cpu backend, and the sampling
# kernels with the CPU's (it fails, saying so, where there is no GPU);
# `make bench-gpu` is its benchmark.  The same test programs run in
# `make test` on the CPU emulation (t/cuda_emu/).

.PHONY: test-gpu bench-gpu

# what the GPU tests and the benchmark see and link beside the backend
FG_GPU_T_INC  := -It/unit $(FG_CUDA_BACKEND_INC) $(FG_CPU_INC) $(FG_GEN_INC)
FG_GPU_T_LINK := $(BUILD)/libfggen.a $(FG_BACKENDS_LINK)
FG_GPU_T_LIBS := $(FG_BACKENDS_LIBS)

ifneq ($(FG_NVCC),)

$(BUILD)/obj/t/gpu/%.o: FG_INC := $(FG_GPU_T_INC) -I$(CUDA_HOME)/include

# the cpu backend in-process, the cuda one through the loader as the
# engine loads it
$(BUILD)/t/test_cuda: $(BUILD)/obj/t/gpu/test_cuda.o \
                      $(FG_GPU_T_LINK) | $(FG_CUDA_SO)
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_GPU_T_LIBS) $(FG_CUDA_LIBS)

# the kernels that the backend does not call (device sampling), linked
# directly beside the CPU's
$(BUILD)/t/test_cuda_sample: $(BUILD)/obj/t/gpu/test_cuda_sample.o \
                    $(BUILD)/obj/kernels/cuda/fg_kernels_cuda_sample.o \
                    $(BUILD)/libfgkernels.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_KERNELS_LIBS) $(FG_CUDA_LIBS)

# the quantized kernels and the backend's batched product (fg_cuda_gemm)
# against the CPU's dequantization
$(BUILD)/t/test_cuda_quant: $(BUILD)/obj/t/gpu/test_cuda_quant.o \
                    $(BUILD)/obj/engine/backends/cuda/fg_cuda_gemm.o \
                    $(patsubst %.cu,$(BUILD)/obj/%.o,$(FG_CUK_SRCS)) \
                    $(BUILD)/libfgkernels.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_KERNELS_LIBS) $(FG_CUDA_LIBS)

test-gpu: all $(BUILD)/t/test_cuda $(BUILD)/t/test_cuda_sample \
          $(BUILD)/t/test_cuda_quant
	prove -v --exec '' $(BUILD)/t/test_cuda $(BUILD)/t/test_cuda_sample \
	    $(BUILD)/t/test_cuda_quant

$(BUILD)/obj/t/bench/bench_cuda.o: FG_INC := $(FG_GPU_T_INC) \
                                             -I$(CUDA_HOME)/include

$(BUILD)/bench/bench_cuda: $(BUILD)/obj/t/bench/bench_cuda.o \
                           $(FG_GPU_T_LINK) | $(FG_CUDA_SO)
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_GPU_T_LIBS) $(FG_CUDA_LIBS)

bench-gpu: all $(BUILD)/bench/bench_cuda $(BUILD)/fairgate-gguf-gen
	$(BUILD)/bench/bench_cuda $(BENCH_GPU_ARGS)

FG_CUDA_CFLAGS := -DFG_TEST_CUDA_SO=1
FG_CUDA_SO_DEP := $(FG_CUDA_SO)

else

test-gpu bench-gpu:
	@echo "$@: nvcc not found (NVCC=$(NVCC)): the cuda backend is not" \
	      "built, nothing to run" >&2; exit 1

FG_CUDA_CFLAGS := -DFG_TEST_CUDA_SO=0
FG_CUDA_SO_DEP :=

endif

# always (t/unit/backends/test_cuda_load.c): --backend cuda fails cleanly
# where it cannot run, and the .so is built wherever nvcc is
$(BUILD)/obj/t/unit/backends/test_cuda_load.o: FG_CFLAGS += $(FG_CUDA_CFLAGS)

$(BUILD)/t/test_cuda_load: | $(BUILD)/fairgate-engine $(FG_CUDA_SO_DEP)
