#!/bin/bash
# make test-asan's verdict on the sanitizers' reports: each file in the
# folder given (ASan and UBSan's log_path) is listed with its first lines,
# and any fails the run.
dir=$1
shopt -s nullglob
reports=("$dir"/*)
if [ ${#reports[@]} -eq 0 ]; then
    echo "test-asan: no sanitizer reports"
    exit 0
fi
for f in "${reports[@]}"; do
    echo "== $f"
    head -40 "$f"
done
echo "test-asan: ${#reports[@]} sanitizer report(s) in $dir" >&2
exit 1
