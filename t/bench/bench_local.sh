#!/usr/bin/env bash
# fairgate: local mode's own cost (docs/local-mode.md, "Benchmark").
#
# Starts build/fairgate-engine on the sim backend with bench_shm's flags
# (--speedup 1e6: a step's compute is negligible, so what remains is the
# protocol, the loop and, here, the gateway) and nginx with the module in
# front of it, then measures through the gateway:
#
#   ttft      time to first token of one streamed /v1/completions request
#             at a time (a 32-token prompt, max_tokens 1, keep-alive):
#             p50, p99; set beside bench_shm's ttft, a client on the
#             segment directly, the difference is the gateway's latency;
#   streams   tokens per second with STREAMS concurrent streams of TOKENS
#             tokens each (wrk, closed loop, ignore_eos), for SECONDS.
#
#   t/bench/bench_local.sh [-n STREAMS] [-m TOKENS] [-d SECONDS] [-r RUNS]
#                          [-k TTFT_REQUESTS]
#
# Run from the top of the tree (make bench does), after make.  Needs nginx,
# python3 and wrk.  RUNS > 1 repeats each measurement and prints the median.

set -euo pipefail

cd "$(dirname "$0")/../.."
root=$PWD

streams=1000
tokens=64
seconds=15
runs=1
ttft_n=500

while getopts n:m:d:r:k: o; do
    case $o in
    n) streams=$OPTARG ;;
    m) tokens=$OPTARG ;;
    d) seconds=$OPTARG ;;
    r) runs=$OPTARG ;;
    k) ttft_n=$OPTARG ;;
    *) echo "usage: bench_local.sh [-n STREAMS] [-m TOKENS] [-d SECONDS] [-r RUNS] [-k TTFT_REQUESTS]" >&2
       exit 2 ;;
    esac
done

nginx=${FAIRGATE_NGINX:-/usr/sbin/nginx}
model=${FAIRGATE_MODEL:-$root/../shared/models/stories260K.gguf}
engine=$root/build/fairgate-engine
module=$root/build/ngx_http_fairgate_module.so

for f in "$engine" "$module"; do
    [ -f "$f" ] || { echo "bench_local: $f is missing: run make" >&2; exit 1; }
done
if [ ! -r "$model" ]; then
    echo "bench_local: no model at $model (set FAIRGATE_MODEL): skipped"
    exit 0
fi
for c in "$nginx" python3 wrk; do
    command -v "$c" > /dev/null || { echo "bench_local: $c not found: skipped"; exit 0; }
done

dir=$(mktemp -d /tmp/fairgate-bench-local-XXXXXX)
shm=/fg-bench-local-$$
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
engine_pid=
nginx_pid=

cleanup() {
    [ -n "$nginx_pid" ] && { kill -QUIT "$nginx_pid" 2> /dev/null; wait "$nginx_pid" 2> /dev/null || true; }
    [ -n "$engine_pid" ] && { kill -TERM "$engine_pid" 2> /dev/null; wait "$engine_pid" 2> /dev/null || true; }
    rm -f "/dev/shm/${shm#/}"
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

group_args=()
if [ "$(id -u)" -eq 0 ]; then
    group_args=(--shm-group "$(id -gn nobody)")
fi

# bench_shm's engine, with the model for the gateway's tokenizer
"$engine" --backend sim --model "$model" --shm "$shm" "${group_args[@]}" \
    --max-batch 256 --step-tokens 2048 --max-seqs 4096 --kv-blocks 16384 \
    --speedup 1e6 > "$dir/engine.log" 2>&1 < /dev/null &
engine_pid=$!

for (( i = 0; ; i++ )); do
    grep -q serving "$dir/engine.log" && break
    kill -0 "$engine_pid" 2> /dev/null && (( i < 300 )) \
        || { cat "$dir/engine.log" >&2; echo "bench_local: the engine did not start" >&2; exit 1; }
    sleep 0.1
done

mkdir -p "$dir/tmp"
cat > "$dir/nginx.conf" << EOF
load_module $module;
daemon off;
worker_processes 2;
worker_rlimit_nofile 16384;
error_log $dir/error.log notice;
pid $dir/nginx.pid;
events { worker_connections 8192; }
http {
    client_body_temp_path $dir/tmp;
    log_format st '\$status \$fairgate_outcome';
    access_log $dir/access.log st;
    fairgate_zone zone=bench:16m policy=vtc;
    fairgate_engine bench "shm=$shm" "model=$model" id=bench;
    map \$http_x_user \$tenant { "" anonymous; default \$http_x_user; }
    server {
        listen 127.0.0.1:$port backlog=4096;
        keepalive_requests 1000000;
        location /v1/ {
            fairgate zone=bench queue=4096 timeout=300s;
            fairgate_identity user=\$tenant;
            client_body_buffer_size 64k;
            fairgate_engine_pass bench;
        }
        location = /fairgate/status { fairgate_status; }
    }
}
EOF

"$nginx" -p "$dir/" -e "$dir/error.log" -c "$dir/nginx.conf" < /dev/null &
nginx_pid=$!

for (( i = 0; ; i++ )); do
    curl -sf "http://127.0.0.1:$port/v1/models" > /dev/null 2>&1 && break
    kill -0 "$nginx_pid" 2> /dev/null && (( i < 100 )) \
        || { cat "$dir/error.log" >&2; echo "bench_local: nginx did not start" >&2; exit 1; }
    sleep 0.1
done
# the workers attach within a tick
sleep 0.5

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "engine: sim, $(basename "$model"), --max-batch 256 --speedup 1e6 (bench_shm's);" \
     "nginx $("$nginx" -v 2>&1 | sed 's|.*/||'), 2 workers; $(nproc) cores"


# ttft: one streamed request at a time on one keep-alive connection

cat > "$dir/ttft.py" << 'EOF'
import json, socket, sys, time

port, n = int(sys.argv[1]), int(sys.argv[2])
# stories260K's tokenizer: 31 tokens (bench_shm's prompt: 32)
body = json.dumps({"model": "bench", "prompt": "Once upon a time there was a little girl named Lily. She loved to play outside in the park.",
                   "max_tokens": 1, "stream": True, "stream_options": {"include_usage": True}}).encode()
req = (b"POST /v1/completions HTTP/1.1\r\nHost: b\r\nX-User: ttft\r\n"
       b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)) + body

s = socket.create_connection(("127.0.0.1", port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
v, prompt = [], None
for k in range(n + 20):
    t0 = time.perf_counter()
    s.sendall(req)
    buf, first = b"", None
    while not buf.endswith(b"0\r\n\r\n") or b"[DONE]" not in buf:
        d = s.recv(65536)
        if not d:
            sys.exit("bench_local: the connection closed")
        buf += d
        if first is None and b'"text":' in buf:
            first = time.perf_counter()
    if b" 200 OK" not in buf[:20]:
        sys.exit("bench_local: " + buf[:300].decode(errors="replace"))
    if prompt is None:
        i = buf.find(b'"prompt_tokens":')
        prompt = int(buf[i + 16:buf.find(b",", i)])
    if k >= 20:   # warm-up left out
        v.append((first - t0) * 1e6)
v.sort()
pct = lambda p: v[int(p * (len(v) - 1))]
print("%.1f %.1f %d" % (pct(0.5), pct(0.99), prompt))
EOF

p50s=() p99s=()
for (( r = 0; r < runs; r++ )); do
    read -r p50 p99 ptok < <(python3 "$dir/ttft.py" "$port" "$ttft_n")
    p50s+=("$p50") p99s+=("$p99")
done
printf 'ttft through the gateway, one request at a time (%d requests, %d-token prompt, streamed): p50 %s us, p99 %s us%s\n' \
    "$ttft_n" "$ptok" "$(printf '%s\n' "${p50s[@]}" | median)" \
    "$(printf '%s\n' "${p99s[@]}" | median)" \
    "$( (( runs > 1 )) && echo " (median of $runs runs: p50s ${p50s[*]})")"


# streams: wrk, STREAMS connections each sending one stream after another

cat > "$dir/streams.lua" << EOF
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model": "bench", "prompt": "Once upon a time", "max_tokens": $tokens, "ignore_eos": true, "stream": true}'
local n = 0
function setup(thread) thread:set("id", n); n = n + 1 end
function init(args) wrk.headers["X-User"] = "user" .. id end
EOF

generated() {
    curl -s "http://127.0.0.1:$port/fairgate/status" \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["engines"][0]["load"]["generated"])'
}

tpss=()
for (( r = 0; r < runs; r++ )); do
    : > "$dir/access.log"
    g0=$(generated)
    t0=$(date +%s.%N)
    wrk -t2 -c"$streams" -d"${seconds}s" --timeout 120s -s "$dir/streams.lua" \
        "http://127.0.0.1:$port/v1/completions" > "$dir/wrk.out" 2>&1
    t1=$(date +%s.%N)
    g1=$(generated)
    rps=$(awk '/^Requests\/sec/ { print $2 }' "$dir/wrk.out")
    errs=$(grep -E 'Socket errors' "$dir/wrk.out" | tr -s ' ' || true)
    # what the gateway answered other than 200, and why (wrk cuts the
    # streams open at its end: those are "aborted")
    bad=$(awk '$2 != "served" && $2 != "-" && $2 != "aborted" { n[$1 " " $2]++ } $2 == "aborted" { a++ } END { for (k in n) { printf "%s%s x%d", s, k, n[k]; s = ", " } if (a) printf "%s%d open at the end, cut", s, a }' "$dir/access.log")
    errs=${errs}${bad:+${errs:+; }not served: $bad}
    lat=$(awk '/Latency/ && !/Distribution/ { print $2; exit }' "$dir/wrk.out")
    tps=$(awk -v r="$rps" -v m="$tokens" 'BEGIN { printf "%.0f", r * m }')
    etps=$(awk -v a="$g0" -v b="$g1" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.0f", (b - a) / (t1 - t0) }')
    echo "  run $((r + 1)): $rps streams/s, $tps tokens/s delivered (engine: $etps tokens/s generated), mean stream $lat${errs:+; $errs}"
    tpss+=("$tps")
done
printf '%d concurrent streams of %d tokens through the gateway (wrk, %d s): %s tokens/s%s\n' \
    "$streams" "$tokens" "$seconds" "$(printf '%s\n' "${tpss[@]}" | median)" \
    "$( (( runs > 1 )) && echo " (median of $runs runs)")"

if grep -q '\[alert\]\|\[crit\]\|\[emerg\]' "$dir/error.log"; then
    grep '\[alert\]\|\[crit\]\|\[emerg\]' "$dir/error.log" | head -5 >&2
    echo "bench_local: nginx logged alerts" >&2
    exit 1
fi
