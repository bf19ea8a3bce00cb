#!/usr/bin/env bash
# FairServe's experiment through the real gateway (issue 7): the fairserve
# trace (docs/load.md: FairServe's Table 4 apps, Table 2's interaction
# sizes, three abusive users) replayed by fairgate-load against nginx with
# the fairgate module in local mode and fairgate-engine's sim backend
# stepping at the A10G Llama-2-7B profile's speed, once per policy; the
# simulator runs the same trace with the same policy beside it.
#
#     engine/tools/load/fairserve-suite.sh [OUTDIR]  (default: build/fairserve)
#
# Writes OUTDIR/table.md: two rows per policy, the gateway's and the
# simulator's: interactions aborted, tokens wasted, FairServe's Table 3
# figures (service % requests and interactions, served users % by
# requests and by interactions; over all users, the normal ones and the
# abusive ones: docs/load.md), throughput, TTFT and the requests by
# status; and per policy POLICY.nginx.conf, the results and analyze's
# JSON of both.
#
# Interactions replay with dependent stages (docs/load.md): a stage goes
# out when the trace says or when the one before it ended, whichever is
# later, and is skipped when an earlier one failed; STAGES=open-loop sends
# every request at its trace time instead.
#
# TIME_SCALE=1 by default: the gateway's rate windows (rpm, OIT's user and
# app limits) are 60 real seconds whatever the scale, so a scaled run lets
# bursts through that the simulator's windows do not.  At TIME_SCALE below
# 1 the trace plays faster (0.1: 10x), the engine runs at --speedup
# 1 / TIME_SCALE, and analyze --time-scale puts the results back on the
# trace's clock; every limit and timeout below is given on the trace's
# clock and converted for the gateway, whose clock is the real one:
# requests a minute divided by TIME_SCALE, seconds multiplied by it.  The
# defaults (300 trace seconds at scale 1) take about 6 minutes a policy.
#
# Environment:
#   POLICIES        rpm vtc wsc wsc+oit
#   TIME_SCALE      1
#   SEED            1
#   DURATION        300 trace seconds (0: the suite's, 600)
#   STAGES          dependent (default) or open-loop
#   RPM             10: the rpm policy's requests a trace minute and user
#   OIT_USER_RPM    10: wsc+oit's user limit, requests a trace minute
#   OIT_APP_RPM     120: wsc+oit's app limit
#   OIT_OVERLOAD    0.9: the share of KV over which OIT throttles
#   QUEUE_TIMEOUT   30: trace seconds a request may wait in the queue
#   IDLE            60: trace seconds an interaction may idle
#   PROFILES        oit: fairgate_app_profile for wsc+oit only; all: for
#                   wsc too
#   WORDS           0.52: prompt words a trace token (gateway-suites.sh)
#   PORT            18490
#   FAIRGATE_NGINX, FAIRGATE_PROFILE as gateway-suites.sh
# Loopback only; nginx, the engine and the segment are removed on exit,
# whatever the exit.

. "$(dirname "$0")/../sim/script-start.sh"
cd "$top"

out=$(realpath -m "${1:-build/fairserve}")
policies=(${POLICIES:-rpm vtc wsc wsc+oit})
ts=${TIME_SCALE:-1}
seed=${SEED:-1}
duration=${DURATION:-300}
rpm=${RPM:-10}
oit_user=${OIT_USER_RPM:-10}
oit_app=${OIT_APP_RPM:-120}
oit_overload=${OIT_OVERLOAD:-0.9}
qtimeout=${QUEUE_TIMEOUT:-30}
idle=${IDLE:-60}
profiles=${PROFILES:-oit}
stages=${STAGES:-dependent}
words=${WORDS:-0.52}
port=${PORT:-18490}

. engine/tools/load/gateway-run.sh
gateway_tools

positive() {   # name value
    awk -v v="$2" 'BEGIN { exit !(v > 0) }' || die "$1=$2: expected a positive number"
}
gateway_clock "$ts" 0    # no bound: the suite's own request timeout
for v in RPM:$rpm OIT_USER_RPM:$oit_user OIT_APP_RPM:$oit_app \
         QUEUE_TIMEOUT:$qtimeout IDLE:$idle WORDS:$words; do
    positive "${v%%:*}" "${v#*:}"
done
awk -v o="$oit_overload" 'BEGIN { exit !(o > 0 && o <= 1) }' \
    || die "OIT_OVERLOAD=$oit_overload: expected a share in (0, 1]"
case $profiles in oit|all) ;; *) die "PROFILES=$profiles: oit or all" ;; esac
case $stages in
dependent) stage_args=(); stage_mode=dependent ;;
open-loop) stage_args=(--open-loop-stages); stage_mode=open-loop ;;
*) die "STAGES=$stages: dependent or open-loop" ;;
esac
for p in "${policies[@]}"; do
    case $p in rpm|vtc|wsc|wsc+oit) ;; *) die "unknown policy $p" ;; esac
done

gateway_port "$port"

# the gateway's clock: limits a real minute, times in real milliseconds
per_real() { awk -v r="$1" -v t="$ts" 'BEGIN { printf "%d", r / t + 0.5 }'; }
real_ms() { awk -v s="$1" -v t="$ts" 'BEGIN { printf "%d", s * t * 1000 + 0.5 }'; }
rpm_real=$(per_real "$rpm")
oit_user_real=$(per_real "$oit_user")
oit_app_real=$(per_real "$oit_app")
qtimeout_ms=$(real_ms "$qtimeout")
idle_ms=$(real_ms "$idle")
# a request not answered 120 trace seconds after it went out is a timeout
request_timeout=$(awk -v t="$ts" 'BEGIN { printf "%g", 120 * t }')

mkdir -p "$out"
shm=/fg-fairserve-$$


gateway_init sim

# stories260K's tokenizer in a model with room for the suite's prompts:
# app7's longest, 5,300 trace tokens, is as many of the engine's
gateway_model 8192 fairserve

trace=$out/fairserve.trace
gargs=(--suite fairserve --seed "$seed" --out "$trace")
[ "$duration" = 0 ] || gargs+=(--duration "$duration")
"$sim" gen "${gargs[@]}"

gateway_words "$words" "$trace" "$out/fairserve.gw.trace"

# each app's mean input without the system prompt, system prompt and
# output (trace tokens, all stages alike): its fairgate_app_profile
profile_lines=$(awk '
    function num(name) {
        return match($0, "\"" name "\": [0-9]+") \
               ? substr($0, RSTART + length(name) + 4,
                        RLENGTH - length(name) - 4) + 0 : 0
    }
    match($0, /"app": "[^"]*"/) {
        app = substr($0, RSTART + 8, RLENGTH - 9)
        if (!(app in n)) order[++napps] = app
        n[app]++
        sys = num("system_tokens")
        in_[app] += num("input_tokens") - sys
        sy[app] += sys
        ou[app] += num("output_tokens")
    }
    END {
        for (i = 1; i <= napps; i++) {
            a = order[i]
            printf "            fairgate_app_profile %s %d/%d/%d learn=on;\n",
                   a, in_[a] / n[a] + 0.5, sy[a] / n[a] + 0.5,
                   ou[a] / n[a] + 0.5
        }
    }
' "$trace")


write_conf() {   # policy file
    local policy=$1 zone oit= prof=

    case $policy in
    rpm) zone="policy=rpm rpm=$rpm_real" ;;
    vtc) zone="policy=vtc" ;;
    wsc|wsc+oit)
        zone="policy=wsc wsc=1:2:1 interactions=8192 interaction_idle=${idle_ms}ms"
        ;;
    esac

    if [ "$policy" = wsc+oit ]; then
        oit="            fairgate_oit on overload=$oit_overload user_rpm=$oit_user_real app_rpm=$oit_app_real;"
    fi
    if [ "$policy" = wsc+oit ] || { [ "$policy" = wsc ] && [ "$profiles" = all ]; }; then
        prof=$profile_lines
    fi

    write_nginx_conf "${2%.nginx.conf}" \
"    fairgate_zone zone=fs:16m $zone;
    fairgate_engine local shm=$shm \"model=$model\" id=fairserve;" \
"            # the simulator's queue: no bound, QUEUE_TIMEOUT trace seconds
            fairgate zone=fs queue=100000 timeout=${qtimeout_ms}ms;
            fairgate_identity user=\$http_x_user app=\$http_x_app;${oit:+
$oit}${prof:+
$prof}
            fairgate_engine_pass local;"
}

start_gateway() {   # policy
    start_engine "$out/$1"
    start_nginx "$out/$1"
}

command -v jq > /dev/null || die "jq is needed for the table"

row() {   # policy run json results: a row of table.md
    local counts
    counts=$(for st in ok rejected timeout error skipped; do
                 grep -c "\"status\": *\"$st\"" "$4" || true
             done | paste -sd/ - | sed 's|/| / |g')
    jq -r --arg policy "$1" --arg run "$2" --arg counts "$counts" '
        def pct: . * 1000 | round / 10;
        def two(a; b): "\(a | pct) / \(b | pct)";
        .fairness as $f | .latency.all.ttft as $t |
        [$policy, $run,
         "\($f.interactions_aborted) (of \($f.interactions))",
         ($f.tokens_wasted | tostring),
         ($f.service_requests | pct | tostring),
         ($f.service_interactions | pct | tostring),
         ($f.served_users_requests | pct | tostring),
         ($f.served_users_interactions | pct | tostring),
         two($f.normal.service_requests; $f.normal.service_interactions),
         two($f.normal.served_users_requests;
             $f.normal.served_users_interactions),
         two($f.abusive.service_requests; $f.abusive.service_interactions),
         two($f.abusive.served_users_requests;
             $f.abusive.served_users_interactions),
         ($f.throughput | round | tostring),
         "\($t.mean * 100 | round / 100) / \($t.p99 * 100 | round / 100)",
         $counts]
        | "| " + join(" | ") + " |"' "$3"
}

table=$out/table.md
{
    printf 'fairserve trace, seed %s, %s requests, %s s; time scale %s; %s stages; rpm %s, OIT user %s / app %s a trace minute, overload %s; queue timeout %s s (trace clock)\n\n' \
        "$seed" "$(wc -l < "$trace")" "${duration/#0/600}" "$ts" \
        "$stage_mode" "$rpm" "$oit_user" "$oit_app" "$oit_overload" \
        "$qtimeout"
    printf '| policy | run | interactions aborted | tokens wasted | service %% requests | service %% interactions | served users %% requests | served users %% interactions | normal users: service %% req / int | normal: served users %% req / int | abusive users: service %% req / int | abusive: served users %% req / int | throughput (tokens/s) | TTFT mean / p99 (s) | ok / rejected / timeout / error / skipped |\n'
    printf '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n'
} > "$table"

for policy in "${policies[@]}"; do
    pre=$out/$policy

    say "$policy: simulator"
    case $policy in
    rpm) sargs=(--policy rpm --rpm "$rpm") ;;
    vtc) sargs=(--policy vtc) ;;
    wsc) sargs=(--policy wsc) ;;
    wsc+oit)
        sargs=(--policy wsc --oit --oit-threshold "$oit_overload"
               --oit-user-rpm "$oit_user" --oit-app-rpm "$oit_app"
               --oit-idle-timeout "$idle")
        ;;
    esac
    "$sim" --trace "$trace" "${sargs[@]}" "${stage_args[@]}" \
        --queue-timeout "$qtimeout" --engine "profile:$profile" \
        --seed "$seed" --out "$pre.sim.results" > /dev/null
    "$load" analyze --results "$pre.sim.results" > "$pre.sim.json"

    say "$policy: gateway (time scale $ts, engine speedup $speedup)"
    write_conf "$policy" "$pre.nginx.conf"
    mkdir -p "$out/tmp"
    "$nginx" -t -p "$out/" -e "$pre.nginx.log" -c "$pre.nginx.conf" \
        > "$pre.nginx-t.log" 2>&1 \
        || { cat "$pre.nginx-t.log" >&2; die "nginx -t rejects $pre.nginx.conf"; }
    start_gateway "$policy"
    gateway_replay "$pre" "$out/fairserve.gw.trace" fairserve "$policy" \
        --time-scale "$ts" --max-connections 8192 \
        --request-timeout "$request_timeout" "${stage_args[@]}"
    "$load" analyze --results "$pre.gw.results" --time-scale "$ts" \
        > "$pre.gw.json"

    row "$policy" gateway "$pre.gw.json" "$pre.gw.results" | tee -a "$table"
    row "$policy" simulator "$pre.sim.json" "$pre.sim.results" \
        | tee -a "$table"
done

say "table: $table"
