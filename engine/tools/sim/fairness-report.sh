#!/usr/bin/env bash
# The VTC paper's synthetic suites through fairgate-sim: one table row per
# suite and policy (max and average service difference, throughput), and
# plots of per-client service rate over time.  docs/simulator.md records the
# output of:
#
#     engine/tools/sim/fairness-report.sh [OUTDIR]  (default: build/fairness)
#
# Deterministic: the same seed gives the same traces and figures anywhere.

. "$(dirname "$0")/script-start.sh"

out=${1:-$top/build/fairness}
seed=${SEED:-1}
rpm=${RPM:-30}

need_built "$sim"
[ -r "$profile" ] || { echo "no cost profile at $profile" >&2; exit 1; }

mkdir -p "$out"

suites=(overload overload-multi overload-weighted poisson_short_long
        poisson_short_long_2 on_off_overload dist_shift)
policies=(fcfs rpm lcf vtc vtc-predict vtc-predict-50 vtc-oracle)

field() {
    sed -n "s/^  \"$1\": \([0-9.e+-]*\),\{0,1\}$/\1/p" "$2"
}

printf '| suite | policy | max diff | avg diff | throughput (tokens/s) |\n'
printf '|---|---|---|---|---|\n'

for suite in "${suites[@]}"; do
    "$sim" gen --suite "$suite" --seed "$seed" --out "$out/$suite.trace"

    for policy in "${policies[@]}"; do
        args=(--policy "$policy")
        case $policy in
        rpm)            args+=(--rpm "$rpm") ;;
        vtc-predict-50) args=(--policy vtc-predict --predict-error 0.5) ;;
        esac

        # clients of different weights are compared per unit of weight
        case $suite in
        *weighted)      args+=(--weighted) ;;
        esac

        "$sim" --trace "$out/$suite.trace" "${args[@]}" \
            --engine "profile:$profile" --seed "$seed" \
            --out "$out/$suite.$policy.results" \
            --series "$out/$suite.$policy.dat" > "$out/$suite.$policy.json"

        printf '| %s | %s | %.1f | %.1f | %.0f |\n' "$suite" "$policy" \
            "$(field max_diff "$out/$suite.$policy.json")" \
            "$(field avg_diff "$out/$suite.$policy.json")" \
            "$(field throughput "$out/$suite.$policy.json")"
    done
done

# service rate per client over time, as the paper's figures 3-6
for suite in overload on_off_overload dist_shift; do
    for policy in fcfs vtc lcf; do
        dat=$out/$suite.$policy.dat
        n=$(head -1 "$dat" | tr ' ' '\n' | grep -c '^service:')

        plot=""
        for ((i = 0; i < n; i++)); do
            col=$((i + 2))
            name=$(head -1 "$dat" | tr ' ' '\n' | grep '^service:' \
                   | sed -n "$((i + 1))p" | sed 's/^service://')
            plot+="'$dat' using 1:$col with lines lw 2 title '$name', "
        done

        gnuplot <<GNUPLOT
set terminal png size 800,450 noenhanced
set output '$out/$suite-$policy.png'
set title '$suite, $policy: service received per client (60 s windows)'
set xlabel 'time (s)'
set ylabel 'service (cost units / s)'
set yrange [0:*]
set key top right
plot ${plot%, }
GNUPLOT
    done
done
