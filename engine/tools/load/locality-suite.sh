#!/usr/bin/env bash
# Locality with fairness through the real gateway: nginx with the fairgate
# module in local mode, fairgate-engine's sim backend with its prefix cache
# at the A10G Llama-2-7B profile's speed, and fairgate-load sending prompts
# that share system prompts (the trace's prefix).  The shared-prefix suite
# and DLPM's attacks s1 and s2 on one engine, by policy; then one trace on
# several engines of one model behind the zone, by policy and route.  The
# simulator runs each beside it, on the same trace, for comparison.
#
#     engine/tools/load/locality-suite.sh [OUTDIR]  (default: build/locality-suite)
#
# Environment: SUITES (shared-prefix s1 s2 shared-prefix-short: answers of
# 32 tokens at four times the rate), POLICIES (vtc-nocache vtc lpm dlpm;
# also fcfs), ENGINES (2: 0 skips the several-engine runs), ROUTES
# (vtc:round-robin vtc:least-load dlpm:prefix, POLICY:ROUTE), QUANTUM
# (2048), TIME_SCALE (0.025), SEED (1), WORDS (0.52), PORT (18500),
# MAX_TRACE_S (1800: a run stops that long after its start, on the
# trace's clock), CPU (1: the cpu backend's runs, below; 0 skips them),
# CPU_POLICIES (as POLICIES), CPU_ROUNDS (1), CPU_QUANTUM (512),
# FAIRGATE_NGINX, FAIRGATE_PROFILE.  About 15 minutes in all.
# Writes OUTDIR/table.md (docs/locality.md records it).  Loopback only;
# nginx, the engines and their segments are removed on exit, whatever the
# exit.

. "$(dirname "$0")/../sim/script-start.sh"
cd "$top"

out=$(realpath -m "${1:-build/locality-suite}")
suites=(${SUITES:-shared-prefix s1 s2 shared-prefix-short})
policies=(${POLICIES:-vtc-nocache vtc lpm dlpm})
n_engines=${ENGINES:-2}
routes=(${ROUTES:-vtc:round-robin vtc:least-load dlpm:prefix})
quantum=${QUANTUM:-2048}
cpu_quantum=${CPU_QUANTUM:-512}
ts=${TIME_SCALE:-0.025}
seed=${SEED:-1}
words=${WORDS:-0.52}
port=${PORT:-18500}
[[ $n_engines =~ ^[0-9]+$ ]] && (( n_engines <= 8 )) \
    || die "ENGINES=$n_engines: expected 0 to 8"

. engine/tools/load/gateway-run.sh
gateway_start "${MAX_TRACE_S:-1800}" locality


gateway_init sim

# the sim backend takes vocabulary and context from the model, the workers
# its tokenizer: stories260K's in a file whose context holds s2's 8,320 +
# 256 tokens
gateway_model 16384 locality


# a policy of the table: its zone and engine arguments, its simulator's
policy_of() { case $1 in vtc-nocache) echo vtc ;; *) echo "$1" ;; esac; }

engine_args() {
    case $1 in vtc-nocache) echo "--prefix-cache off" ;; esac
}

sim_args() {
    case $1 in
    vtc-nocache) echo "--policy vtc" ;;
    dlpm)        echo "--policy dlpm --quantum $quantum --prefix-cache" ;;
    *)           echo "--policy $1 --prefix-cache" ;;
    esac
}

start_gateway() {   # policy route engines log-prefix
    local policy=$1 route=$2 n=$3 pre=$4 i lines= zone_args

    zone_args="policy=$(policy_of "$policy") route=$route"
    [ "$policy" = dlpm ] && zone_args+=" quantum=$quantum"

    for (( i = 0; i < n; i++ )); do
        # shellcheck disable=SC2046
        start_engine "$pre" "$i" $(engine_args "$policy")
        lines+="${lines:+$'\n'}    fairgate_engine e$i shm=$(engine_shm "$i") \"model=$model\" id=locality;"
    done

    write_suite_conf "$pre" locality:64m "$zone_args" "$lines" \
"            add_header x-fairgate-engine \$fairgate_engine always;
            fairgate_engine_pass;"
    start_nginx "$pre" "$n"
}

# a suite's trace, and the gateway's copy (gateway_words)
make_trace() {   # name trace-args...
    local name=$1

    shift
    "$sim" gen --seed "$seed" "$@" --out "$out/$name.trace"
    gateway_words "$words" "$out/$name.trace" "$out/$name.gw.trace"
}

trace_args() {   # suite
    case $1 in
    shared-prefix-short) echo "--suite shared-prefix --output-tokens 32 --rate-scale 4" ;;
    *)                   echo "--suite $1" ;;
    esac
}

# one run: the simulator, then the gateway, and a row of both
run() {   # trace policy route engines
    local name=$1 policy=$2 route=$3 n=$4 pre

    pre=$out/$name.$policy.$route.x$n
    say "$name, $policy, $route, $n engine(s): simulator"
    # shellcheck disable=SC2046
    "$sim" --trace "$out/$name.trace" $(sim_args "$policy") \
        --engines "$n" --route "$route" --engine "profile:$profile" \
        --seed "$seed" --out "$pre.sim.results" > "$pre.sim.json" \
        2> "$pre.sim.notes"

    say "$name, $policy, $route, $n engine(s): gateway (time scale $ts)"
    start_gateway "$policy" "$route" "$n" "$pre"
    gateway_replay "$pre" "$out/$name.gw.trace" locality "$name, $policy" \
        --time-scale "$ts" --max-connections 8192 --request-timeout 600 \
        --max-seconds "$max_s"
    "$load" analyze --results "$pre.gw.results" --time-scale "$ts" \
        > "$pre.gw.json"

    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$policy" \
        "$([ "$n" -gt 1 ] && echo "$n, $route" || echo 1)" \
        "$(figures < "$pre.gw.json")" "$(figures < "$pre.sim.json")" \
        "$(count ok "$pre.gw.results") / $(count timeout "$pre.gw.results") / $(count error "$pre.gw.results")" \
        "$(ttft < "$pre.gw.json")" | tee -a "$table"
}

# throughput, cache hit, max and average difference, the attacker's
# service share (or the clients' least and most)
figures() {
    perl -MJSON::PP -e '
        local $/;
        my $j = decode_json(<STDIN>);
        my $m = $j->{fairness} // $j;
        my $c = $m->{clients};
        my @s = map { $c->{$_}{share} } grep { $_ ne "attacker" } keys %$c;
        my ($lo, $hi) = (sort { $a <=> $b } @s)[0, -1];
        printf "%.0f, %.0f%%, %.0f, %.0f, %s",
            $m->{throughput}, 100 * $m->{cache_hit_rate}, $m->{max_diff},
            $m->{avg_diff},
            exists $c->{attacker}
                ? sprintf("%.1f%%", 100 * $c->{attacker}{share})
                : sprintf("%.1f-%.1f%%", 100 * $lo, 100 * $hi);
    '
}

# TTFT mean on the trace's clock: the attacker's / the others'
ttft() {
    perl -MJSON::PP -e '
        local $/;
        my $j = decode_json(<STDIN>);
        my $c = ($j->{fairness} // $j)->{clients};
        my @t = map { $c->{$_}{ttft_mean} } grep { $_ ne "attacker" } keys %$c;
        my $t = 0;
        $t += $_ for @t;
        printf "%s%.0f", exists $c->{attacker}
            ? sprintf("%.0f / ", $c->{attacker}{ttft_mean}) : "", $t / @t;
    '
}

# The cpu backend on a 100M-parameter model of random weights (the 100m
# preset, stories260K's tokenizer): a scaled-down shared-prefix suite, 64
# requests of 8 groups' 448-token system prompts, a 32-token question and
# 16 tokens out, within 5 s, so that the engine is overloaded; its KV pool
# (160 blocks) holds about five groups' prompts when idle, as the
# simulator's holds five of eight.  Real time, no simulator column: no
# profile of this machine.
cpu_runs() {
    local policy round base rounds=${CPU_ROUNDS:-1}
    local cpu_model=$out/cpu-100m.gguf
    local -a cpol=(${CPU_POLICIES:-vtc-nocache vtc lpm dlpm})
    local -A lf=()

    [ -f "$cpu_model" ] || build/fairgate-gguf-gen -o "$cpu_model" \
        --preset 100m --tokenizer "$stories" --ctx 2048 --name locality \
        > /dev/null || die "could not generate $cpu_model"
    make_trace cpu --suite shared-prefix --groups 8 --prompts 32 \
        --system-tokens 448 --question-tokens 32 --output-tokens 16 \
        --duration 16
    {
        printf '\n| cpu backend, 100M: round | policy | throughput (tokens/s) | cache hit | max diff | avg diff | service share | TTFT mean (s) | last finish (s) | ok / timeout / error |\n'
        printf '|---|---|---|---|---|---|---|---|---|---|\n'
    } >> "$table"

    # rounds alternate the policies, so that the machine's load falls on
    # each alike
    for (( round = 1; round <= rounds; round++ )); do
        for policy in "${cpol[@]}"; do
            cpu_run "$cpu_model" "$policy" "$round"
            lf[$policy.$round]=$(last_finish < "$out/cpu.$policy.r$round.gw.json")
        done
    done

    # vtc's time to the last answer (or the first policy's) over each
    # other's, round by round: the median and the range
    base=${cpol[0]}
    [[ " ${cpol[*]} " == *" vtc "* ]] && base=vtc
    for policy in "${cpol[@]}"; do
        [ "$policy" != "$base" ] || continue
        for (( round = 1; round <= rounds; round++ )); do
            echo "${lf[$base.$round]} ${lf[$policy.$round]}"
        done | awk '{ print $1 / $2 }' | sort -g \
            | awk -v a="$base" -v b="$policy" '
            { r[NR] = $1 }
            END {
                m = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
                printf "\ntime to the last answer, %s over %s: %.2f " \
                       "(%.2f-%.2f), %d round(s)\n", a, b, m, r[1], r[NR], NR
            }' | tee -a "$table"
    done
}

cpu_run() {   # model policy round: one run, a row of the table
    local cpu_model=$1 policy=$2 round=$3 pre=$out/cpu.$2.r$3

    say "cpu backend, $policy, round $round"
    # shellcheck disable=SC2046
    start_cpu_gateway "$cpu_model" "$policy" "$pre" $(engine_args "$policy")
    gateway_replay "$pre" "$out/cpu.gw.trace" locality "cpu, $policy" \
        --max-connections 1024 --request-timeout 600 --max-seconds 600
    "$load" analyze --results "$pre.gw.results" > "$pre.gw.json"
    printf '| %s | %s | %s | %s | %s | %s |\n' "$round" "$policy" \
        "$(figures < "$pre.gw.json" | sed 's/, / | /g')" \
        "$(ttft < "$pre.gw.json")" "$(last_finish < "$pre.gw.json")" \
        "$(count ok "$pre.gw.results") / $(count timeout "$pre.gw.results") / $(count error "$pre.gw.results")" \
        | tee -a "$table"
}

last_finish() {
    perl -MJSON::PP -e '
        local $/;
        printf "%.1f", decode_json(<STDIN>)->{fairness}{last_finish};
    '
}

start_cpu_gateway() {   # model policy log-prefix [engine args...]
    local cpu_model=$1 policy=$2 pre=$3 zone_args

    shift 3
    run_engine "$pre" 0 --backend cpu --model "$cpu_model" --kv-blocks 160 \
        --max-batch 8 "$@"

    zone_args="policy=$(policy_of "$policy")"
    [ "$policy" = dlpm ] && zone_args+=" quantum=$cpu_quantum"
    write_nginx_conf "$pre" \
"    fairgate_zone zone=locality:16m $zone_args;
    fairgate_engine e0 shm=$shm \"model=$cpu_model\" id=locality;" \
"            fairgate zone=locality queue=100000 timeout=3600s;
            fairgate_identity user=\$http_x_user;
            fairgate_engine_pass;"
    start_nginx "$pre"
}

table=$out/table.md
{
    printf '| suite | policy | engines | gateway: throughput, cache hit, max diff, avg diff, share | simulator: the same | gateway ok / timeout / error | gateway TTFT mean (s) |\n'
    printf '|---|---|---|---|---|---|---|\n'
} > "$table"

for suite in "${suites[@]}"; do
    # shellcheck disable=SC2046
    make_trace "$suite" $(trace_args "$suite")
    for policy in "${policies[@]}"; do
        run "$suite" "$policy" prefix 1
    done
done

if (( n_engines > 1 )); then
    # as many times the load, so that each engine stays overloaded
    name=shared-prefix-x$n_engines
    make_trace "$name" --suite shared-prefix --rate-scale "$n_engines"
    for pr in "${routes[@]}"; do
        run "$name" "${pr%%:*}" "${pr#*:}" "$n_engines"
    done
fi

# the cpu backend: a real forward pass, where a hit saves real prefill
if (( ${CPU:-1} )); then
    cpu_runs
fi

say "table: $table"
