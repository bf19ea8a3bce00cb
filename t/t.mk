# t/: the tests (the tools that measure the system are engine/tools/).
#
#     *.t          the gateway's tests through nginx (prove, harness in lib/)
#     unit/        C unit tests, one folder per part (unit/unit.mk)
#     cuda_emu/    CUDA C++'s device side on the CPU: the GPU tests in
#                  make test (cuda_emu/cuda_emu.mk)
#     gpu/         the GPU tests and benchmark on a GPU (gpu/gpu.mk)
#     fuzz/        libFuzzer targets of every parser (fuzz/fuzz.mk)
#     asan/        make test-asan: everything under ASan+UBSan (asan/asan.mk)
#     bench/       benchmarks: make bench, figures in docs/ (bench/bench.mk)
#     node/        the official openai npm package against the gateway,
#                  the reference tokenizers and templates, llama.cpp
#                  (node-llama-cpp), the engine's yardstick
#     llamacpp/    the engine's side of that comparison (llamacpp.mk)
#     data/        the generated corpus of the tokenizer's reference check
#     soak/        make soak: load and faults for a while, invariants checked

include t/unit/unit.mk
include t/gpu/gpu.mk
include t/cuda_emu/cuda_emu.mk
include t/fuzz/fuzz.mk
include t/llamacpp/llamacpp.mk
include t/bench/bench.mk
include t/soak/soak.mk
include t/asan/asan.mk
