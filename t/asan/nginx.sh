#!/bin/bash
# Debian's nginx with the ASan runtime preloaded, for the ASan build of the
# module (make test-asan): the runtime must come first in the process.
# Leak detection is off in nginx: nginx leaves its cycle's and workers'
# pools to exit() rather than freeing them, so LeakSanitizer would report
# every configuration allocation; the module's per-request memory lives in
# the request pools, which nginx frees, and use-after-free or overflows
# there are still reported.
export LD_PRELOAD=$(gcc -print-file-name=libasan.so)${LD_PRELOAD:+:$LD_PRELOAD}
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
exec /usr/sbin/nginx "$@"
