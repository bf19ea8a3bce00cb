#!/usr/bin/env bash
# The VTC paper's synthetic suites through the real gateway: nginx with the
# fairgate module in local mode, the zone in shared memory, and
# fairgate-engine's sim backend stepping at the A10G Llama-2-7B profile's
# speed; fairgate-load replays each trace and `fairgate-load analyze` gives
# the same figures as fairgate-sim, which runs beside it for comparison.
#
#     engine/tools/load/gateway-suites.sh [OUTDIR]  (default: build/gateway-suites)
#
# Time-scaled: the trace is played at TIME_SCALE (0.025: 40x faster) and the
# engine runs at --speedup 1/TIME_SCALE, so engine and trace keep their
# ratio; analyze --time-scale puts the results back on the trace's clock.
# Environment: SUITES, POLICIES (fcfs vtc rpm), TIME_SCALE (0.025), SEED (1),
# RPM (30 a trace minute), PORT (18480), FAIRGATE_NGINX, FAIRGATE_PROFILE,
# RATE_SCALE (1: `fairgate-sim gen --rate-scale`, multiplies the suite's
# request rates; e.g. 1.17 scales a trace to the gateway engine's throughput;
# the simulator column then runs on the same scaled trace).
# Writes OUTDIR/table.md (docs/gateway-fairness.md records it) and one plot
# per suite, OUTDIR/SUITE.png.  Loopback only; nginx, the engine and the
# segment are removed on exit, whatever the exit.

. "$(dirname "$0")/../sim/script-start.sh"
cd "$top"

out=$(realpath -m "${1:-build/gateway-suites}")
suites=(${SUITES:-overload overload-multi on_off_overload poisson_short_long})
policies=(${POLICIES:-fcfs vtc rpm})
ts=${TIME_SCALE:-0.025}
seed=${SEED:-1}
rate_scale=${RATE_SCALE:-1}
rpm=${RPM:-30}
port=${PORT:-18480}

. engine/tools/load/gateway-run.sh
gateway_tools
command -v gnuplot > /dev/null || die "gnuplot is not installed"
awk -v r="$rate_scale" 'BEGIN { exit !(r > 0) }' \
    || die "RATE_SCALE=$rate_scale: expected a positive number"
# bounded: a run stops 1800 trace seconds after its start, whatever
gateway_clock "$ts" 1800
# the rpm policy's window is 60 s of the gateway's clock: RPM a trace
# minute is RPM / TIME_SCALE a real one
rpm_real=$(awk -v r="$rpm" -v t="$ts" 'BEGIN { printf "%d", r / t + 0.5 }')

gateway_port "$port"

mkdir -p "$out"
shm=/fg-suites-$$


# The model: the sim backend takes vocabulary and context from it, the
# workers its tokenizer.  stories260K's context (512) is too short for the
# suites' 256 + 256 (and 1024 + ...) requests: the same tokenizer in a
# generated file with a 4096 context.
gateway_init

gateway_model 4096 suites


start_gateway() {   # policy log-prefix
    local policy=$1 pre=$2 zone_args="policy=$1"

    [ "$policy" = rpm ] && zone_args+=" rpm=$rpm_real"

    start_engine "$pre"

    write_suite_conf "$pre" suites:64m "$zone_args" \
        "    fairgate_engine local shm=$shm \"model=$model\" id=suites;" \
        "            fairgate_engine_pass local;"
    start_nginx "$pre"
}

field() {   # name file: the first "name": number in it
    grep -m1 -o "\"$1\": *[0-9.e+-]*" "$2" | sed 's/.*: *//'
}

table=$out/table.md
{
    printf '| suite | policy | gateway max diff | gateway avg diff | gateway throughput (tokens/s) | sim max diff | sim avg diff | sim throughput | gateway ok / rejected / timeout / error |\n'
    printf '|---|---|---|---|---|---|---|---|---|\n'
} > "$table"

for suite in "${suites[@]}"; do
    trace=$out/$suite.trace
    "$sim" gen --suite "$suite" --seed "$seed" --rate-scale "$rate_scale" --out "$trace"
    gateway_words "${WORDS:-0.52}" "$trace" "$out/$suite.gw.trace"
    weighted=()
    case $suite in *weighted) weighted=(--weighted) ;; esac

    for policy in "${policies[@]}"; do
        pre=$out/$suite.$policy
        say "$suite, $policy: simulator"
        sargs=(--policy "$policy")
        [ "$policy" = rpm ] && sargs+=(--rpm "$rpm")
        "$sim" --trace "$trace" "${sargs[@]}" "${weighted[@]}" \
            --engine "profile:$profile" --seed "$seed" \
            --out "$pre.sim.results" > /dev/null
        mkdir -p "$pre.sim.series"
        "$load" analyze --results "$pre.sim.results" "${weighted[@]}" \
            --series-dir "$pre.sim.series" > "$pre.sim.json"

        say "$suite, $policy: gateway (time scale $ts, engine speedup $speedup)"
        start_gateway "$policy" "$pre"
        gateway_replay "$pre" "$out/$suite.gw.trace" suites "$suite, $policy" \
            --time-scale "$ts" --max-connections 8192 --request-timeout 600 \
            --max-seconds "$max_s"
        mkdir -p "$pre.gw.series"
        "$load" analyze --results "$pre.gw.results" --time-scale "$ts" \
            "${weighted[@]}" --series-dir "$pre.gw.series" > "$pre.gw.json"

        printf '| %s | %s | %.1f | %.1f | %.0f | %.1f | %.1f | %.0f | %s / %s / %s / %s |\n' \
            "$suite" "$policy" \
            "$(field max_diff "$pre.gw.json")" "$(field avg_diff "$pre.gw.json")" \
            "$(field throughput "$pre.gw.json")" \
            "$(field max_diff "$pre.sim.json")" "$(field avg_diff "$pre.sim.json")" \
            "$(field throughput "$pre.sim.json")" \
            "$(count ok "$pre.gw.results")" "$(count rejected "$pre.gw.results")" \
            "$(count timeout "$pre.gw.results")" "$(count error "$pre.gw.results")" \
            | tee -a "$table"
    done

    # one plot per suite: a panel per policy, service rate per client over
    # time, the gateway solid and the simulator dashed
    n=${#policies[@]}
    {
        printf "set terminal png size 900,%d noenhanced\n" $(( 300 * n ))
        printf "set output '%s/%s.png'\n" "$out" "$suite"
        printf "set multiplot layout %d,1 title '%s: service rate per client, gateway (solid) vs simulator (dashed)'\n" "$n" "$suite"
        printf "set xlabel 'trace time (s)'\nset ylabel 'service (cost units / s)'\nset yrange [0:*]\nset key outside right\n"
        for policy in "${policies[@]}"; do
            pre=$out/$suite.$policy
            dat=$pre.gw.series/service.dat
            sdat=$pre.sim.series/service.dat
            mapfile -t names < <(head -1 "$dat" | tr ' ' '\n' | sed -n 's/^service://p')
            mapfile -t snames < <(head -1 "$sdat" | tr ' ' '\n' | sed -n 's/^service://p')
            plot=
            for (( i = 0; i < ${#names[@]}; i++ )); do
                plot+="'$dat' using 1:$((i + 2)) with lines lw 2 lc $((i + 1)) title '${names[i]} gateway', "
                for (( j = 0; j < ${#snames[@]}; j++ )); do
                    [ "${snames[j]}" = "${names[i]}" ] || continue
                    plot+="'$sdat' using 1:$((j + 2)) with lines lw 1 dt 2 lc $((i + 1)) title '${names[i]} sim', "
                done
            done
            printf "set title '%s'\nplot %s\n" "$policy" "${plot%, }"
        done
        printf "unset multiplot\n"
    } > "$out/$suite.gp"
    gnuplot "$out/$suite.gp"
done

say "table: $table; plots: $out/*.png"
