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

FG_CUDA_T_LINK := $(BUILD)/libfgcpu.a $(BUILD)/libfgengine.a \
                  $(BUILD)/libfggen.a $(BUILD)/libfgtok.a \
                  $(BUILD)/libfgkernels.a

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

# everywhere: the backend's host side over a CPU emulation of CUDA, cuBLAS
# and its kernels (t/unit/cuda_emu/), with the GPU tests' own code: its
# passes, staging, wanted rows, cache layout and graph replays against the
# cpu backend, on machines without a GPU or nvcc
FG_EMU_CFLAGS := -It/unit/cuda_emu -It/unit -DFG_TEST_CUDA_EMU

$(BUILD)/obj/emu/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(FG_CFLAGS) $(FG_EMU_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/t/test_cuda_emu: $(BUILD)/obj/emu/t/gpu/test_cuda.o \
                          $(BUILD)/obj/emu/engine/fg_backend_cuda.o \
                          $(BUILD)/obj/emu/t/unit/cuda_emu/fg_cuda_emu.o \
                          $(BUILD)/libfgcpu.a $(BUILD)/libfggen.a \
                          $(BUILD)/libfgtok.a $(BUILD)/libfgkernels.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_KERNELS_LIBS)

FG_TESTS += $(BUILD)/t/test_cuda_emu

# the same emulation as a backend object, for fairgate-engine end to end
# (test_cuda_load: FAIRGATE_CUDA_BACKEND=build/t/fairgate-backend-cuda-emu.so)
$(BUILD)/t/fairgate-backend-cuda-emu.so: \
                          $(BUILD)/obj/emu/engine/fg_backend_cuda.o \
                          $(BUILD)/obj/emu/t/unit/cuda_emu/fg_cuda_emu.o \
                          $(BUILD)/obj/engine/fg_gguf.o \
                          $(BUILD)/libfgkernels.a engine/fg_backend_cuda.map
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(filter %.o %.a,$^) -Wl,--no-undefined \
	    -Wl,--version-script=engine/fg_backend_cuda.map $(FG_KERNELS_LIBS)

$(BUILD)/t/test_cuda_load: | $(BUILD)/t/fairgate-backend-cuda-emu.so
