# The gateway of the experiments, for the scripts that source this file
# (gateway-suites.sh, fairserve-suite.sh, locality-suite.sh, qoe-suite.sh,
# dashboard-shot.sh): nginx with the module in local mode and
# fairgate-engine's sim backend at the A10G profile's speed, and the
# bookkeeping that stops them, whatever the exit.
#
# The sourcing script starts with engine/tools/sim/script-start.sh (top,
# die), calls gateway_tools (the tools and the files they read: nginx,
# engine, module, load, sim, profile, stories), sets out, shm, port
# (gateway_clock sets speedup and max_s, gateway_port checks the port),
# then calls gateway_init once (and gateway_model, the model of the
# suites, generated once into out).  Per run: start_engine PRE (and
# start_engine PRE I ARGS... for an engine I > 0 of several, on segment
# $(engine_shm I), or for engine arguments; run_engine for another
# backend), write_nginx_conf (or write_suite_conf) and start_nginx PRE,
# gateway_replay PRE ... (fairgate-load, then stop_all); count reads the
# results.  engine_pid, engine_pids (engines 1 and up), nginx_pid and
# load_pid are what to stop.

engine_pid=
engine_pids=()
nginx_pid=
load_pid=

# the tools every experiment runs, built, and the files they read
gateway_tools() {
    local f

    nginx=${FAIRGATE_NGINX:-/usr/sbin/nginx}
    profile=${FAIRGATE_PROFILE:-$top/../shared/data/vtc-a10g-llama7b-cost-profile.json}
    stories=$top/../shared/models/stories260K.gguf
    sim=build/fairgate-sim
    load=build/fairgate-load
    engine=build/fairgate-engine
    module=build/ngx_http_fairgate_module.so

    for f in "$sim" "$load" "$engine" "$module" build/fairgate-gguf-gen; do
        [ -f "$f" ] || die "$f is missing: run make first"
    done
    [ -x "$nginx" ] || die "$nginx not found (FAIRGATE_NGINX)"
    [ -r "$profile" ] || die "no cost profile at $profile"
    [ -r "$stories" ] || die "no $stories (its tokenizer is the model's)"
}

# model, $out/model.gguf: stories260K's tokenizer in a file of CTX
# positions (the sim backend takes vocabulary and context from it, the
# workers its tokenizer), generated unless there
gateway_model() {   # ctx name
    model=$out/model.gguf
    [ -f "$model" ] || build/fairgate-gguf-gen -o "$model" \
        --tokenizer "$stories" --ctx "$1" --name "$2" > /dev/null \
        || die "could not generate $model"
}

# the tools, the clock (TIME_SCALE ts, bounded at MAX trace seconds) and
# the port checked; out made, and the segment named
gateway_start() {   # max-trace-seconds name
    gateway_tools
    gateway_clock "$ts" "$1"
    gateway_port "$port"
    mkdir -p "$out"
    shm=/fg-$2-$$
}

# the run's clock: TIME_SCALE checked; the engine's speedup, and max_s,
# MAX trace seconds on the run's clock
gateway_clock() {   # time-scale max-trace-seconds
    awk -v t="$1" 'BEGIN { exit !(t > 0 && t <= 1) }' \
        || die "TIME_SCALE=$1: expected a number in (0, 1]"
    speedup=$(awk -v t="$1" 'BEGIN { printf "%g", 1 / t }')
    max_s=$(awk -v t="$1" -v m="$2" 'BEGIN { printf "%g", m * t }')
}

gateway_port() {   # port: free on 127.0.0.1, or die
    if (exec 3<> "/dev/tcp/127.0.0.1/$1") 2> /dev/null; then
        die "port $1 on 127.0.0.1 is taken: PORT=another"
    fi
}

# The gateway's copy of a trace: fairgate-load sends N common words for N
# tokens, which stories260K's tokenizer splits into about 1.93 tokens
# each, so the copy asks for WORDS (0.52) words a token of input, and of
# its prefix and system prompt alike (the same rounding: a prefix stays a
# prefix), and the engine prefills what the simulator does
gateway_words() {   # words trace copy
    awk -v w="$1" '
        function scale(key,    n, m, k) {
            if (!match($0, "\"" key "\": [0-9]+"))
                return
            k = length(key) + 4
            n = substr($0, RSTART + k, RLENGTH - k) + 0
            m = int(n * w + 0.5)
            if (m < 1) m = 1
            $0 = substr($0, 1, RSTART - 1) "\"" key "\": " m \
                 substr($0, RSTART + RLENGTH)
        }
        {
            scale("input_tokens"); scale("prefix_tokens")
            scale("system_tokens"); print
        }
    ' "$2" > "$3"
}

# fairgate-load replays TRACE through the gateway as MODEL's requests,
# with ARGS (clock, connections, timeouts), results into PRE.gw.results;
# then everything stops.  In the background, so that a signal runs the
# trap at once.
gateway_replay() {   # log-prefix trace model what args...
    local pre=$1 trace=$2 model_id=$3 what=$4

    shift 4
    "$load" --trace "$trace" \
        --url "http://127.0.0.1:$port/v1/chat/completions" \
        --model "$model_id" --quiet --out "$pre.gw.results" "$@" \
        > "$pre.gw.summary" &
    load_pid=$!
    wait "$load_pid" || die "fairgate-load failed on $what"
    load_pid=
    stop_all
}

count() {   # status results-file: requests with that status
    grep -c "\"status\": *\"$1\"" "$2" || true
}

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

# ENGINE ARGS... as engine I of a run, on segment $(engine_shm I), until
# it says it serves
run_engine() {   # log-prefix index engine-args...
    local pre=$1 index=$2 log pid i

    shift 2
    log=$pre.engine.log
    [ "$index" -eq 0 ] || log=$pre.engine$index.log

    "$engine" --shm "$(engine_shm "$index")" "${group_args[@]}" "$@" \
        > "$log" 2>&1 < /dev/null &
    pid=$!
    if [ "$index" -eq 0 ]; then engine_pid=$pid; else engine_pids+=("$pid"); fi
    for (( i = 0; ; i++ )); do
        grep -q serving "$log" 2> /dev/null && break
        kill -0 "$pid" 2> /dev/null \
            || { cat "$log" >&2; die "engine $index did not start"; }
        (( i < 600 )) || die "engine $index is not serving after 60 s"
        sleep 0.1
    done
}

# the simulator's engine: KV 10,000 tokens (625 blocks of 16), batch
# bounded by KV only, the A10G profile's step times; its prefix cache on
# unless ARGS say --prefix-cache off
start_engine() {   # log-prefix [index [engine args...]]
    local pre=$1 index=${2:-0}
    local -a step=(--step-model "profile:$profile")

    shift
    [ $# -gt 0 ] && shift

    # a suite that names its own step model runs on it alone: the engine
    # refuses two for one model
    case " $* " in *" --step-model "*) step=() ;; esac

    run_engine "$pre" "$index" --backend sim --model "$model" \
        "${step[@]}" --speedup "$speedup" \
        --kv-blocks 625 --max-batch 256 --step-tokens 4096 --max-seqs 1024 \
        "$@"
}

# PRE.nginx.conf: one worker (or the fourth argument's) on 127.0.0.1:$port,
# HTTP's lines (the zone, the engines), /v1/'s lines (fairgate, identity,
# the engine's pass), the status page and the server's other lines
write_nginx_conf() {   # log-prefix http-lines v1-lines [workers [server-lines]]
    cat > "$1.nginx.conf" << EOF
load_module $module;
daemon off;
$user_line
worker_processes ${4:-1};
error_log $1.nginx.log notice;
pid $1.nginx.pid;
events { worker_connections 16384; }
http {
    client_body_temp_path $out/tmp/body;
    proxy_temp_path $out/tmp/proxy;
    fastcgi_temp_path $out/tmp/fastcgi;
    uwsgi_temp_path $out/tmp/uwsgi;
    scgi_temp_path $out/tmp/scgi;
    access_log off;
$2
    server {
        listen 127.0.0.1:$port;
        location /v1/ {
$3
            client_max_body_size 1m;
            client_body_buffer_size 1m;
        }
        location = /fairgate/status { fairgate_status; }
${5:-}
    }
}
EOF
}

# nginx on PRE.nginx.conf, until its workers are attached to the engine,
# or to N engines
# write_nginx_conf for a suite's run: the zone (NAME:SIZE and its
# arguments) and the engine lines; in /v1/, the simulator's queue
# (unbounded, no timeout), users by X-User, then the pass lines
write_suite_conf() {   # log-prefix zone:size zone-args engine-lines pass-lines
    write_nginx_conf "$1" \
"    fairgate_zone zone=$2 $3;
$4" \
"            # the simulator's queue: unbounded, no timeout
            fairgate zone=${2%%:*} queue=100000 timeout=3600s;
            fairgate_identity user=\$http_x_user;
$5"
}

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
