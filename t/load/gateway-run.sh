# The gateway of the experiments, for the scripts that source this file
# (gateway-suites.sh, fairserve-suite.sh): nginx with the module in local
# mode and fairgate-engine's sim backend at the A10G profile's speed, and
# the bookkeeping that stops them, whatever the exit.
#
# The sourcing script sets out, shm, port, nginx, engine, module, load,
# profile, speedup and die(), then calls gateway_init once; start_engine
# PRE (and start_engine PRE I ARGS... for an engine I > 0 of several, on
# segment $(engine_shm I), or for engine arguments) and start_nginx PRE
# (PRE.nginx.conf written) per run, stop_all between runs.  engine_pid,
# engine_pids (engines 1 and up), nginx_pid and load_pid are what to stop.

engine_pid=
engine_pids=()
nginx_pid=
load_pid=

stop_pid() {   # pid signal: signal, wait up to 10 s, then SIGKILL
    local pid=$1 sig=$2 i
    [ -n "$pid" ] || return 0
    kill "-$sig" "$pid" 2> /dev/null || { wait "$pid" 2> /dev/null || true; return 0; }
    for (( i = 0; i < 100; i++ )); do
        kill -0 "$pid" 2> /dev/null || break
        sleep 0.1
    done
    kill -KILL "$pid" 2> /dev/null || true
    wait "$pid" 2> /dev/null || true
}

stop_all() {
    local pid

    stop_pid "$load_pid" TERM
    load_pid=
    stop_pid "$nginx_pid" QUIT
    nginx_pid=
    stop_pid "$engine_pid" TERM
    engine_pid=
    for pid in "${engine_pids[@]}"; do
        stop_pid "$pid" TERM
    done
    engine_pids=()
    rm -f "/dev/shm/${shm#/}" "/dev/shm/${shm#/}"-*
}

gateway_cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    stop_all
    exit "$rc"
}

# traps, private copies of the binaries (a `make` during the run must not
# replace them under us: pass more tools to copy, by variable name), and
# who the workers run as
gateway_init() {
    local v

    trap gateway_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM

    mkdir -p "$out/bin" "$out/tmp"
    cp "$module" "$out/bin/module.so"
    module=$out/bin/module.so

    for v in engine load "$@"; do
        cp "${!v}" "$out/bin/$(basename "${!v}")"
        printf -v "$v" '%s' "$out/bin/$(basename "${!v}")"
    done

    group_args=()
    user_line=
    if [ "$(id -u)" -eq 0 ]; then
        group=$(id -gn nobody 2> /dev/null) || die "root, but no user nobody"
        user_line="user nobody $group;"
        group_args=(--shm-group "$group")
    fi
}

engine_shm() {   # index: the segment of engine I of a run
    if [ "$1" -eq 0 ]; then echo "$shm"; else echo "$shm-$1"; fi
}

# the simulator's engine: KV 10,000 tokens (625 blocks of 16), batch
# bounded by KV only, the A10G profile's step times; its prefix cache on
# unless ARGS say --prefix-cache off
start_engine() {   # log-prefix [index [engine args...]]
    local pre=$1 index=${2:-0} log pid i

    shift
    [ $# -gt 0 ] && shift
    log=$pre.engine.log
    [ "$index" -eq 0 ] || log=$pre.engine$index.log

    "$engine" --backend sim --model "$model" --shm "$(engine_shm "$index")" \
        "${group_args[@]}" --step-model "profile:$profile" \
        --speedup "$speedup" --kv-blocks 625 --max-batch 256 \
        --step-tokens 4096 --max-seqs 1024 "$@" \
        > "$log" 2>&1 < /dev/null &
    pid=$!
    if [ "$index" -eq 0 ]; then engine_pid=$pid; else engine_pids+=("$pid"); fi
    for (( i = 0; ; i++ )); do
        grep -q serving "$log" 2> /dev/null && break
        kill -0 "$pid" 2> /dev/null \
            || { cat "$log" >&2; die "engine $index did not start"; }
        (( i < 300 )) || die "engine $index is not serving after 30 s"
        sleep 0.1
    done
}

# nginx on PRE.nginx.conf, until its workers are attached to the engine,
# or to N engines
start_nginx() {   # log-prefix [N]
    local pre=$1 n=${2:-1} i

    "$nginx" -p "$out/" -e "$pre.nginx.log" -c "$pre.nginx.conf" < /dev/null &
    nginx_pid=$!
    for (( i = 0; ; i++ )); do
        (( $(curl -sf "http://127.0.0.1:$port/fairgate/status" 2> /dev/null \
             | grep -o '"attached": *true' | wc -l) >= n )) && break
        kill -0 "$nginx_pid" 2> /dev/null \
            || { nginx_pid=; tail "$pre.nginx.log" >&2; die "nginx did not start"; }
        (( i < 300 )) || die "nginx is not attached to the engine after 30 s"
        sleep 0.1
    done
}
