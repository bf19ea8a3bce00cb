#!/usr/bin/env bash
# Andes's QoE through the real gateway: nginx with the fairgate module in
# local mode, fairgate-engine's sim backend at the A10G Llama-2-7B
# profile's speed, and fairgate-load replaying the cyclic-burst suite with
# each request's expectations (X-Fairgate-TTFT, X-Fairgate-Reading-Speed)
# and measuring each stream's QoE at the client, in three ways: the
# zone's arrival order and the engine's fcfs (the baseline), the zone's
# qoe order (fairgate_zone order=qoe) and the engine's fcfs, the qoe
# order and the engine's andes (--sched).  The simulator runs each beside
# it, on the same trace, for comparison.
#
#     engine/tools/load/qoe-suite.sh [OUTDIR]  (default: build/qoe-suite)
#
# Environment: LOADS (0.6 1.0 1.5: the suite's --rate-scale), RUNS
# ("arrival:fcfs qoe:fcfs qoe:andes": order:sched each), POLICY
# (fcfs: the zone's), STEP (the engine's step model, for the engine and the
# simulator alike: profile:FAIRGATE_PROFILE, or gpu, ...), TIME_SCALE
# (0.025), SEED (1), WORDS (0.52), PORT
# (18510), MAX_TRACE_S (2400), FAIRGATE_NGINX, FAIRGATE_PROFILE.  About
# seven minutes.  Writes OUTDIR/table.md (docs/qoe.md records it).
# Loopback only; nginx, the engine and its segment are removed on exit,
# whatever the exit.

. "$(dirname "$0")/../sim/script-start.sh"
cd "$top"

out=$(realpath -m "${1:-build/qoe-suite}")
loads=(${LOADS:-0.6 1.0 1.5})
runs=(${RUNS:-arrival:fcfs qoe:fcfs qoe:andes})
policy=${POLICY:-fcfs}
ts=${TIME_SCALE:-0.025}
seed=${SEED:-1}
words=${WORDS:-0.52}
port=${PORT:-18510}
step=${STEP:-}

. engine/tools/load/gateway-run.sh
gateway_start "${MAX_TRACE_S:-2400}" qoe
step=${step:-profile:$profile}

gateway_init sim

gateway_model 4096 qoe


start_gateway() {   # order sched log-prefix
    start_engine "$3" 0 --sched "$2" --step-model "$step"
    write_suite_conf "$3" qoe:64m "policy=$policy order=$1" \
        "    fairgate_engine local shm=$shm \"model=$model\" id=qoe;" \
        "            fairgate_engine_pass local;"
    start_nginx "$3"
}

# qoe_mean, qoe_share_095, throughput of a run's JSON (analyze's or the
# simulator's), and the simulator's preemptions
figures() {
    perl -MJSON::PP -e '
        local $/;
        my $j = decode_json(<STDIN>);
        my $m = $j->{fairness} // $j;
        printf "%.3f, %.0f%%, %.0f", $m->{qoe_mean},
            100 * $m->{qoe_share_095}, $m->{throughput};
        printf ", %d", $j->{preemptions} if exists $j->{preemptions};
    '
}

run() {   # rate order sched
    local rate=$1 order=$2 sched=$3 pre=$out/$1.$2.$3

    say "load $rate, $order / $sched: simulator"
    "$sim" --trace "$out/$rate.trace" --policy "$policy" \
        --engine "$step" --order "$order" --engine-sched "$sched" \
        --seed "$seed" --out "$pre.sim.results" > "$pre.sim.json" \
        2> "$pre.sim.notes"

    say "load $rate, $order / $sched: gateway (time scale $ts)"
    start_gateway "$order" "$sched" "$pre"
    gateway_replay "$pre" "$out/$rate.gw.trace" qoe \
        "load $rate, $order / $sched" \
        --time-scale "$ts" --max-connections 8192 --request-timeout 600 \
        --max-seconds "$max_s"
    "$load" analyze --results "$pre.gw.results" --time-scale "$ts" \
        > "$pre.gw.json"

    printf '| %s | %s / %s | %s | %s | %s |\n' "$rate" "$order" "$sched" \
        "$(figures < "$pre.gw.json")" "$(figures < "$pre.sim.json")" \
        "$(count ok "$pre.gw.results") / $(count timeout "$pre.gw.results") / $(count error "$pre.gw.results")" \
        | tee -a "$table"
}

table=$out/table.md
{
    printf '| load | zone order / engine | gateway: QoE mean, QoE >= 0.95, throughput | simulator: the same, preemptions | gateway ok / timeout / error |\n'
    printf '|---|---|---|---|---|\n'
} > "$table"

for rate in "${loads[@]}"; do
    "$sim" gen --suite cyclic-burst --seed "$seed" --rate-scale "$rate" \
        --out "$out/$rate.trace"
    gateway_words "$words" "$out/$rate.trace" "$out/$rate.gw.trace"

    for r in "${runs[@]}"; do
        run "$rate" "${r%%:*}" "${r##*:}"
    done
done

say "table: $table"
