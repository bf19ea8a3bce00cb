# engine/backends/cuda/: the cuda backend (docs/cuda.md), where nvcc is
# found.
#
# build/fairgate-backend-cuda.so: the backend (FG_CUDA_SRCS), its
# kernels (kernels/cuda/, FG_CUK_SRCS) and its own copy of the GGUF reader
# (engine/model/), linked against cudart and cuBLAS; fairgate-engine
# dlopen()s it for --backend cuda and links no CUDA itself.  Without nvcc
# nothing here is built and `make test` passes all the same.  Its tests on a GPU
# (make test-gpu, make bench-gpu) are in t/gpu/gpu.mk, the same tests on a
# CPU emulation of CUDA in t/cuda_emu/cuda_emu.mk.
#
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

FG_CUDA_SRCS := engine/backends/cuda/fg_backend_cuda.c \
                engine/backends/cuda/fg_cuda_load.c \
                engine/backends/cuda/fg_cuda_pass.c \
                engine/backends/cuda/fg_cuda_gemm.c \
                engine/backends/cuda/fg_cuda_step.c
FG_CUDA_INC  := -Iengine/backends/cuda -Ikernels/cuda $(FG_KERNELS_INC)
FG_CUDA_MAP  := engine/backends/cuda/fg_backend_cuda.map

FG_NVCCFLAGS = -O3 -std=c++17 $(FG_CUDA_ARCH) -Werror all-warnings \
               -Xcompiler -fPIC,-fvisibility=hidden,-Wall,-Wextra,-Werror \
               $(FG_CUDA_INC)

FG_CUDA_SO   := $(BUILD)/fairgate-backend-cuda.so
FG_CUDA_LIBS  = -L$(CUDA_LIB) -Wl,-rpath,$(CUDA_LIB) -lcublas -lcudart \
                -lstdc++ -lm -pthread

# the backend's objects see the backend interface, the GGUF reader and
# the kernels' interface
FG_CUDA_BACKEND_INC := $(FG_BACKENDS_INC) $(FG_MODEL_INC) $(FG_CUDA_INC)

ifneq ($(FG_NVCC),)

FG_CUK_OBJS  := $(patsubst %.cu,$(BUILD)/obj/%.o,$(FG_CUK_SRCS))
FG_CUDA_OBJS := $(call fg_objs,$(FG_CUDA_SRCS)) $(FG_CUK_OBJS)

$(FG_CUK_OBJS): $(BUILD)/obj/%.o: %.cu $(FG_CUK_HDRS)
	@mkdir -p $(dir $@)
	$(FG_NVCC) $(FG_NVCCFLAGS) -c $< -o $@

$(BUILD)/obj/engine/backends/cuda/%.o: FG_INC := $(FG_CUDA_BACKEND_INC) \
                                                 -I$(CUDA_HOME)/include
$(BUILD)/obj/engine/backends/cuda/%.o: FG_CFLAGS += -fvisibility=hidden

# the GGUF reader from libfgmodel.a, the batch checks from
# libfgbackends.a and the CPU kernels' row conversions (small vectors are
# widened on the host): an archive gives only what is used
$(FG_CUDA_SO): $(FG_CUDA_OBJS) $(BUILD)/libfgbackends.a $(BUILD)/libfgmodel.a \
               $(BUILD)/libfgkernels.a $(FG_CUDA_MAP)
	$(CC) -shared $(FG_SAN) -o $@ $(FG_CUDA_OBJS) $(BUILD)/libfgbackends.a \
	    $(BUILD)/libfgmodel.a $(BUILD)/libfgkernels.a \
	    -Wl,--no-undefined \
	    -Wl,--version-script=$(FG_CUDA_MAP) $(FG_CUDA_LIBS) \
	    $(FG_KERNELS_LIBS)

FG_TOOLS += $(FG_CUDA_SO)

endif
