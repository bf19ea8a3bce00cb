#!/usr/bin/env bash
# The dashboard under a fairness run, as a picture (docs/dashboard.md):
# nginx with the module in local mode before fairgate-engine's sim backend,
# policy vtc; two users flood it ("heavy-a" and "heavy-b", far more than the
# engine serves), one asks for little ("light", three-stage interactions);
# headless chromium watches /fairgate/dashboard from before the load starts
# and takes the picture after SECONDS.
#
#     engine/tools/load/dashboard-shot.sh [PNG]
#         (default: docs/img/dashboard-fairness.png)
#
# Environment: SECONDS_RUN (90), PORT (18490), FAIRGATE_NGINX,
# FAIRGATE_CHROMIUM, OUT (build/dashboard-shot: the logs, the trace).
# Self-contained: a generated model (a byte-level tokenizer), no download.
# Loopback only; nginx, the engine, the load, the browser and the segment
# are stopped or removed on exit, whatever the exit.

. "$(dirname "$0")/../sim/script-start.sh"
cd "$top"
. engine/tools/load/gateway-run.sh

png=$(realpath -m "${1:-docs/img/dashboard-fairness.png}")
run_s=${SECONDS_RUN:-90}
port=${PORT:-18490}
nginx=${FAIRGATE_NGINX:-/usr/sbin/nginx}
out=$(realpath -m "${OUT:-build/dashboard-shot}")
load=build/fairgate-load
engine=build/fairgate-engine
module=build/ngx_http_fairgate_module.so

for f in "$load" "$engine" "$module" build/fairgate-gguf-gen; do
    [ -f "$f" ] || die "$f is missing: run make first"
done
[ -x "$nginx" ] || die "$nginx not found (FAIRGATE_NGINX)"
[[ $run_s =~ ^[0-9]+$ ]] && (( run_s >= 10 )) \
    || die "SECONDS_RUN=$run_s: expected 10 or more seconds"
perl -It/lib -MFairgate::Browser=chromium -e 'exit(chromium() ? 0 : 1)' \
    || die "chromium is not installed: apt-get install chromium"
gateway_port "$port"

mkdir -p "$out" "$(dirname "$png")"
shm=/fg-dashboard-$$
shot_pid=

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    stop_pid "$shot_pid" TERM
    stop_all
    exit "$rc"
}

gateway_init
trap cleanup EXIT

model=$out/model.gguf
[ -f "$model" ] || build/fairgate-gguf-gen -o "$model" --name shot > /dev/null \
    || die "could not generate $model"


# The engine: 32 sequences a step, 10,240 KV positions, a decode step of
# 2 ms a sequence (about 500 tokens/s whatever the batch) and 0.05 ms a
# prefilled token.
pre=$out/shot
run_engine "$pre" 0 --backend sim --model "$model" \
    --step-model linear:0.00005,0.002 --kv-blocks 640 --max-batch 32

# The gateway: each user may have 24 requests waiting, for 20 s at most,
# and 100 requests a minute (the heavy ones ask for 240).
write_nginx_conf "$pre" \
"    fairgate_zone zone=llm:16m policy=vtc;
    fairgate_engine local shm=$shm \"model=$model\" id=shot;" \
"            fairgate zone=llm queue=24 timeout=20s;
            fairgate_identity user=\$http_x_user app=\$http_x_app;
            fairgate_user_limit rpm=100;
            fairgate_engine_pass local;" \
    2 "        location = /fairgate/dashboard { fairgate_dashboard; }"
start_nginx "$pre"

# The trace: heavy-a and heavy-b send 4 requests a second each (64 prompt
# words, 128 tokens out), light starts an interaction of three stages every
# 6 s (16 words, 64 tokens out); all of it for SECONDS_RUN.
trace=$out/shot.trace
awk -v s="$run_s" 'BEGIN {
    for (t = 0; t < s; t += 0.25) {
        for (c = 0; c < 2; c++) {
            printf "{\"t\": %.3f, \"client\": \"heavy-%s\", " \
                   "\"app\": \"batch\", " \
                   "\"input_tokens\": 64, \"output_tokens\": 128}\n", \
                   t + c * 0.125, c ? "b" : "a"
        }
    }
    for (t = 1; t < s; t += 6) {
        for (st = 0; st < 3; st++) {
            printf "{\"t\": %.3f, \"client\": \"light\", \"app\": \"chat\", " \
                   "\"interaction\": \"chat-%d\", \"stage\": %d, " \
                   "\"input_tokens\": 16, \"output_tokens\": 64}\n", t, t, st
        }
    }
}' > "$trace"

# the browser first, so that its history starts before the load; the
# picture is taken SECONDS_RUN after the load starts
ready=$out/shot.ready
rm -f "$ready"
perl -It/lib -MFairgate::Browser -e '
    my ($url, $ready, $seconds, $png) = @ARGV;
    my $b = Fairgate::Browser->new(width => 1400, height => 1000);
    $b->navigate($url);
    $b->wait_for("+document.body.dataset.polls >= 2", 30)
        or die "the dashboard does not poll\n";
    open my $fh, ">", $ready or die "$ready: $!\n";
    close $fh;
    # the run itself is what takes this long: the picture is of it
    $b->pause($seconds);
    my @err = $b->errors;
    die "the page: @err\n" if @err;
    $b->screenshot($png);
    $b->stop;
' "http://127.0.0.1:$port/fairgate/dashboard" "$ready" "$run_s" "$png" &
shot_pid=$!

for (( i = 0; ; i++ )); do
    [ -f "$ready" ] && break
    kill -0 "$shot_pid" 2> /dev/null || { shot_pid=; die "the browser failed"; }
    (( i < 300 )) || die "the dashboard is not polling after 30 s"
    sleep 0.1
done

say "load for $run_s s: heavy-a, heavy-b flooding, light interactive"
"$load" --trace "$trace" --url "http://127.0.0.1:$port/v1/chat/completions" \
    --model shot --max-seconds "$((run_s + 5))" --request-timeout 60 --quiet \
    --out "$out/shot.results" > "$out/shot.summary" &
load_pid=$!

wait "$shot_pid" || { shot_pid=; die "the screenshot failed"; }
shot_pid=
say "wrote $png"
