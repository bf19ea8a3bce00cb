#!/bin/sh
# fairgate: a fuzzing campaign, `make fuzz-campaign`: each target in turn
# (one job: the machine is shared) until FUZZ_RUNS executions or
# FUZZ_MAX seconds, from its kept corpus t/fuzz/corpus/NAME/ (and the
# seeds of fuzz.mk's make fuzz-NAME-run), which is then minimized back in
# place: -set_cover_merge=1 over edges (-use_counters=0) keeps every edge
# covered in a few dozen files, where counters would keep hundreds.  Logs in build/fuzz/NAME.log;
# the last lines give executions, cov and ft.
#
#     t/fuzz/campaign.sh [NAME ...]      (default: every target)
#     make fuzz FUZZ_TARGETS="usage json" FUZZ_MAX=600

set -e

runs=${FUZZ_RUNS:-10000000}
max=${FUZZ_MAX:-1200}
build=${BUILD:-build}

fuzz_len() {
    case $1 in
    gguf)       echo 32768 ;;
    tokenizer)  echo 512 ;;
    shm_engine|shm_client) echo 8192 ;;
    *)          echo 4096 ;;
    esac
}

fuzz_extra() {
    case $1 in
    openai)     echo -dict=t/fuzz/fuzz_openai.dict ;;
    esac
}

for name in ${*:-json openai gguf tokenizer usage shm_engine shm_client keys}; do
    bin=$build/fuzz/fuzz_$name
    work=$build/fuzz/campaign-$name
    kept=t/fuzz/corpus/$name

    make --no-print-directory "fuzz-$name"
    rm -rf "$work" "$work.min"
    mkdir -p "$work" "$work.min" "$kept"
    cp "$kept"/* "$work"/ 2>/dev/null || true

    case $name in
    gguf)
        make --no-print-directory "$build/fuzz/fuzz_gguf_seeds"
        "$build/fuzz/fuzz_gguf_seeds" "$work" ;;
    openai)
        make --no-print-directory fuzz-openai-run FUZZ_TIME=1 >/dev/null 2>&1
        cp "$build"/fuzz/corpus-openai/seed-* "$work"/ ;;
    keys)
        make --no-print-directory fuzz-keys-run FUZZ_TIME=1 >/dev/null 2>&1
        cp "$build"/fuzz/corpus-keys/seed-* "$work"/ ;;
    esac

    start=$(date +%s)
    "$bin" -runs="$runs" -max_total_time="$max" -max_len="$(fuzz_len $name)" \
        -print_final_stats=1 $(fuzz_extra $name) "$work" \
        > "$build/fuzz/$name.log" 2>&1
    echo "$name: $(( $(date +%s) - start )) s" >> "$build/fuzz/$name.log"

    "$bin" -set_cover_merge=1 -use_counters=0 -max_len="$(fuzz_len $name)" \
        "$work.min" "$work" \
        >> "$build/fuzz/$name.log" 2>&1
    rm -f "$kept"/*
    cp "$work.min"/* "$kept"/
    echo "$name: $(ls "$kept" | wc -l) files kept" \
        | tee -a "$build/fuzz/$name.log"
done
