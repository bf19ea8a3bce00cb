# engine/cuda.mk: the cuda backend (docs/cuda.md), where nvcc is found.
#
# build/fairgate-backend-cuda.so: the backend (engine/fg_backend_cuda.c),
# its kernels (kernels/fg_kernels_cuda.cu) and its own copy of the GGUF
# reader, linked against cudart and cuBLAS; fairgate-engine dlopen()s it
# for --backend cuda and links no CUDA itself.  Without nvcc nothing here
# is built and `make test` passes all the same.
#
# `make test-gpu` compares it with the cpu backend on a GPU (it fails,
# saying so, where there is none); `make bench-gpu` is its benchmark.
# NVCC=/path/to/nvcc picks another compiler, FG_CUDA_ARCH other GPUs.

NVCC      ?= $(or $(shell command -v nvcc 2>/dev/null),/usr/local/cuda/bin/nvcc)
FG_NVCC   := $(wildcard $(NVCC))
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(realpath $(FG_NVCC)))
CUDA_LIB  ?= $(firstword $(wildcard $(CUDA_HOME)/lib64 \
                                    $(CUDA_HOME)/lib/x86_64-linux-gnu))

# A100, L4 / RTX 4090, H100 / H200, and PTX for what comes after
FG_CUDA_ARCH ?= -gencode arch=compute_80,code=sm_80 \
                -gencode arch=compute_89,code=sm_89 \
                -gencode arch=compute_90,code=[sm_90,compute_90]

FG_NVCCFLAGS = -O3 -std=c++17 $(FG_CUDA_ARCH) -Werror all-warnings \
               -Xcompiler -fPIC,-fvisibility=hidden,-Wall,-Wextra,-Werror \
               -Ikernels -Iengine

FG_CUDA_SO   := $(BUILD)/fairgate-backend-cuda.so
FG_CUDA_LIBS  = -L$(CUDA_LIB) -Wl,-rpath,$(CUDA_LIB) -lcublas -lcudart \
                -lstdc++ -lm -pthread

.PHONY: test-gpu bench-gpu

# what the GPU tests and benchmark link beside the backend
FG_CUDA_T_LINK := $(BUILD)/libfgcpu.a $(BUILD)/libfgengine.a \
                  $(BUILD)/libfggen.a $(BUILD)/libfgtok.a \
                  $(BUILD)/libfgkernels.a

ifneq ($(FG_NVCC),)

FG_CUDA_OBJS := $(BUILD)/obj/engine/fg_backend_cuda.o \
                $(BUILD)/obj/kernels/fg_kernels_cuda.o \
                $(BUILD)/obj/engine/fg_gguf.o

$(BUILD)/obj/kernels/fg_kernels_cuda.o: kernels/fg_kernels_cuda.cu \
                                        kernels/fg_kernels_cuda.h \
                                        kernels/fg_kernels.h
	@mkdir -p $(dir $@)
	$(FG_NVCC) $(FG_NVCCFLAGS) -c $< -o $@

$(BUILD)/obj/engine/fg_backend_cuda.o: FG_CFLAGS += -I$(CUDA_HOME)/include \
                                                   -fvisibility=hidden

$(FG_CUDA_SO): $(FG_CUDA_OBJS) engine/fg_backend_cuda.map
	$(CC) -shared -o $@ $(FG_CUDA_OBJS) -Wl,--no-undefined \
	    -Wl,--version-script=engine/fg_backend_cuda.map $(FG_CUDA_LIBS)

FG_TOOLS += $(FG_CUDA_SO)

# the GPU tests: the cpu backend in-process, the cuda one through the
# loader as the engine loads it, and the kernels that the backend does not
# call (device sampling) linked directly
$(BUILD)/obj/t/gpu/%.o: FG_CFLAGS += -It/unit -I$(CUDA_HOME)/include

$(BUILD)/t/test_cuda: $(BUILD)/obj/t/gpu/test_cuda.o \
                      $(BUILD)/obj/kernels/fg_kernels_cuda.o \
                      $(FG_CUDA_T_LINK) | $(FG_CUDA_SO)
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_RT_LIBS) $(FG_CUDA_LIBS) -ldl

test-gpu: all $(BUILD)/t/test_cuda
	prove -v --exec '' $(BUILD)/t/test_cuda

$(BUILD)/bench/bench_cuda: $(BUILD)/obj/t/bench/bench_cuda.o \
                           $(FG_CUDA_T_LINK) | $(FG_CUDA_SO)
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_RT_LIBS) $(FG_CUDA_LIBS) -ldl

$(BUILD)/obj/t/bench/bench_cuda.o: FG_CFLAGS += -I$(CUDA_HOME)/include

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

# always: --backend cuda fails cleanly where it cannot run, and the .so is
# built wherever nvcc is
$(BUILD)/obj/t/unit/test_cuda_load.o: FG_CFLAGS += $(FG_CUDA_CFLAGS)

$(BUILD)/t/test_cuda_load: $(BUILD)/obj/t/unit/test_cuda_load.o \
                           | $(BUILD)/fairgate-engine \
                             $(FG_CUDA_SO_DEP)
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ -ldl

FG_TESTS += $(BUILD)/t/test_cuda_load

# everywhere: the backend and its real kernels over a CPU emulation of
# CUDA and cuBLAS (t/unit/cuda_emu/), with the GPU tests' own code: the
# kernels, the passes, staging, wanted rows, cache layout and graph
# replays against the cpu backend, on machines without a GPU or nvcc.
# g++ compiles the .cu with cuda_runtime.h forced in, as nvcc does, once
# its launches and dynamic shared memory are rewritten in plain C++; its
# threads are fibers (fg_simt.cc, Boost.Context).  The sampler runs in
# blocks of 256 there: a fiber switch per thread and barrier is the cost.
FG_EMU_CFLAGS := -It/unit/cuda_emu -It/unit -DFG_TEST_CUDA_EMU
FG_SIMT_FLAGS := -std=c++17 -O2 -g -fPIC -Wall -Wextra -Werror \
                 -Wno-unknown-pragmas -It/unit/cuda_emu -Ikernels -Iengine \
                 -DFG_CUK_SAMPLE_THREADS=256
FG_EMU_LIBS   := -lboost_context -lstdc++

$(BUILD)/obj/emu/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(FG_CFLAGS) $(FG_EMU_CFLAGS) -MMD -MP -c $< -o $@

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

$(BUILD)/obj/emu/%.cu.o: $(BUILD)/emu/%.cc
	@mkdir -p $(dir $@)
	$(CXX) $(FG_SIMT_FLAGS) -It/unit -include cuda_runtime.h -MMD -MP \
	    -c $< -o $@

FG_EMU_OBJS := $(BUILD)/obj/emu/engine/fg_backend_cuda.o \
               $(BUILD)/obj/emu/t/unit/cuda_emu/fg_cuda_emu.o \
               $(BUILD)/obj/emu/t/unit/cuda_emu/fg_simt.o \
               $(BUILD)/obj/emu/kernels/fg_kernels_cuda.cu.o

$(BUILD)/t/test_cuda_emu: $(BUILD)/obj/emu/t/gpu/test_cuda.o \
                          $(FG_EMU_OBJS) \
                          $(BUILD)/libfgcpu.a $(BUILD)/libfggen.a \
                          $(BUILD)/libfgtok.a $(BUILD)/libfgkernels.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_KERNELS_LIBS) $(FG_EMU_LIBS)

FG_TESTS += $(BUILD)/t/test_cuda_emu

# the emulation itself: what it does as a GPU does, and the faults it
# reports (t/unit/test_simt.cu)
$(BUILD)/t/test_simt: $(BUILD)/obj/emu/t/unit/test_simt.cu.o \
                      $(BUILD)/obj/emu/t/unit/cuda_emu/fg_cuda_emu.o \
                      $(BUILD)/obj/emu/t/unit/cuda_emu/fg_simt.o \
                      $(BUILD)/libfgkernels.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_KERNELS_LIBS) $(FG_EMU_LIBS)

FG_TESTS += $(BUILD)/t/test_simt

# the same emulation as a backend object, for fairgate-engine end to end
# (test_cuda_load: FAIRGATE_CUDA_BACKEND=build/t/fairgate-backend-cuda-emu.so)
$(BUILD)/t/fairgate-backend-cuda-emu.so: $(FG_EMU_OBJS) \
                          $(BUILD)/obj/engine/fg_gguf.o \
                          $(BUILD)/libfgkernels.a engine/fg_backend_cuda.map
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(filter %.o %.a,$^) -Wl,--no-undefined \
	    -Wl,--version-script=engine/fg_backend_cuda.map $(FG_KERNELS_LIBS) \
	    $(FG_EMU_LIBS)

$(BUILD)/t/test_cuda_load: | $(BUILD)/t/fairgate-backend-cuda-emu.so

# the benchmark program over the emulation, run by test_cuda_load with a
# tiny shape: its steps, cache sizing and arithmetic checked before a GPU
$(BUILD)/t/bench_cuda_emu: $(BUILD)/obj/emu/t/bench/bench_cuda.o \
                           $(BUILD)/obj/emu/t/unit/cuda_emu/fg_cuda_emu.o \
                           $(FG_CUDA_T_LINK)
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_RT_LIBS) -ldl

$(BUILD)/t/test_cuda_load: | $(BUILD)/t/bench_cuda_emu

# make test-cuda-asan: the same tests with the kernels, the backend and
# the emulated runtime under AddressSanitizer, device memory being host
# memory: a kernel reading or writing past a buffer, or a leak, is
# reported as compute-sanitizer would (about twice test_cuda_emu's time;
# not in make test).  The fibers' switcher is left uninstrumented.
FG_ASAN := -fsanitize=address -fno-omit-frame-pointer

$(BUILD)/obj/asan/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(FG_CFLAGS) $(FG_EMU_CFLAGS) $(FG_ASAN) -MMD -MP -c $< -o $@

$(BUILD)/obj/asan/%.cu.o: $(BUILD)/emu/%.cc
	@mkdir -p $(dir $@)
	$(CXX) $(FG_SIMT_FLAGS) -It/unit $(FG_ASAN) -include cuda_runtime.h \
	    -MMD -MP -c $< -o $@

$(BUILD)/t/test_cuda_asan: $(BUILD)/obj/asan/t/gpu/test_cuda.o \
                           $(BUILD)/obj/asan/engine/fg_backend_cuda.o \
                           $(BUILD)/obj/asan/t/unit/cuda_emu/fg_cuda_emu.o \
                           $(BUILD)/obj/asan/kernels/fg_kernels_cuda.cu.o \
                           $(BUILD)/obj/emu/t/unit/cuda_emu/fg_simt.o \
                           $(BUILD)/libfgcpu.a $(BUILD)/libfggen.a \
                           $(BUILD)/libfgtok.a $(BUILD)/libfgkernels.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) $(FG_ASAN) -o $@ $^ $(FG_KERNELS_LIBS) \
	    $(FG_EMU_LIBS)

.PHONY: test-cuda-asan

test-cuda-asan: $(BUILD)/t/test_cuda_asan
	prove -v --exec '' $<
