#!/usr/bin/env bash
# Locality with fairness through fairgate-sim: the shared-prefix suite and
# DLPM's attacks s1 and s2 on one engine with a prefix cache, fcfs, vtc,
# lpm and dlpm (and vtc without the cache); then two and four engines, vtc
# and dlpm, by route; and shared-prefix with short answers, where prefill
# is most of the work; the A10G profile, or the step model FAIRGATE_ENGINE
# names (e.g. gpu).  Prints the tables of docs/simulator.md; writes the
# traces, results and figures to OUTDIR:
#
#     engine/tools/sim/locality-report.sh [OUTDIR]  (default: build/locality)
#
# Deterministic: the same seed gives the same traces and figures anywhere.
# About half a minute on one core.

. "$(dirname "$0")/script-start.sh"

# the engine's step model (fg_step_model.h), e.g. FAIRGATE_ENGINE=gpu
engine=${FAIRGATE_ENGINE:-profile:$profile}
out=${1:-$top/build/locality}
seed=${SEED:-1}
quantum=${QUANTUM:-2048}
big_quantum=${BIG_QUANTUM:-32768}

need_built "$sim"
need_profile

mkdir -p "$out"

# one row of figures from a run's JSON: throughput, hit rate, max and
# average difference, the attacker's share (or the clients' least and
# most), TTFT mean of the attacker and of the others
figures() {
    json_figures '
        my $c = $m->{clients};
        my (@s, @t, $as, $at);
        for my $n (sort keys %$c) {
            if ($n eq "attacker") {
                ($as, $at) = ($c->{$n}{share}, $c->{$n}{ttft_mean});
                next;
            }
            push @s, $c->{$n}{share};
            push @t, $c->{$n}{ttft_mean};
        }
        my ($lo, $hi) = (sort { $a <=> $b } @s)[0, -1];
        my $tt = 0;
        $tt += $_ for @t;
        $tt /= @t;
        printf "%.0f | %.1f%% | %.1f | %.1f | %s | %s\n",
            $m->{throughput}, 100 * $m->{cache_hit_rate}, $m->{max_diff},
            $m->{avg_diff},
            defined $as ? sprintf("%.1f%% (fair %.1f%%)", 100 * $as,
                                  100 / (@s + 1))
                        : sprintf("%.1f-%.1f%%", 100 * $lo, 100 * $hi),
            defined $at ? sprintf("%.0f / %.0f", $at, $tt)
                        : sprintf("%.0f", $tt);
    '
}

run() {
    local name=$1 trace=$2
    shift 2

    "$sim" --trace "$trace" --engine "$engine" --seed "$seed" \
        --out "$out/$name.results" "$@" > "$out/$name.json" \
        2> "$out/$name.notes"
}

policy_args() {
    case $1 in
    vtc-nocache)  echo "--policy vtc" ;;
    dlpm)         echo "--policy dlpm --quantum $quantum --prefix-cache" ;;
    dlpm-big)     echo "--policy dlpm --quantum $big_quantum --prefix-cache" ;;
    *)            echo "--policy $1 --prefix-cache" ;;
    esac
}

printf '| suite | policy | throughput (tokens/s) | cache hit | max diff '
printf '| avg diff | service share: attacker, or clients | TTFT mean (s): '
printf 'attacker / others |\n|---|---|---|---|---|---|---|---|\n'

for suite in shared-prefix s1 s2; do
    "$sim" gen --suite "$suite" --seed "$seed" --out "$out/$suite.trace"

    for policy in vtc-nocache fcfs vtc lpm dlpm dlpm-big; do
        # shellcheck disable=SC2046
        run "$suite.$policy" "$out/$suite.trace" $(policy_args "$policy")
        printf '| %s | %s | %s\n' "$suite" "$policy" \
            "$(figures < "$out/$suite.$policy.json") |"
    done
done

# answers of 32 tokens, four times the rate: prefill is most of the work
printf '\n| suite | policy | throughput (tokens/s) | cache hit | max diff '
printf '| avg diff | service share: clients | TTFT mean (s) |\n'
printf '|---|---|---|---|---|---|---|---|\n'

trace=$out/shared-prefix-short.trace
"$sim" gen --suite shared-prefix --seed "$seed" --output-tokens 32 \
    --rate-scale 4 --out "$trace"

for policy in vtc-nocache vtc lpm dlpm; do
    # shellcheck disable=SC2046
    run "shared-prefix-short.$policy" "$trace" $(policy_args "$policy")
    printf '| shared-prefix, 32 out, x4 | %s | %s\n' "$policy" \
        "$(figures < "$out/shared-prefix-short.$policy.json") |"
done

# several engines: as many times the load, so that each stays overloaded
printf '\n| engines | policy | route | throughput (tokens/s) | cache hit '
printf '| max diff | avg diff | service share: clients | TTFT mean (s) |\n'
printf '|---|---|---|---|---|---|---|---|---|\n'

for engines in 2 4; do
    trace=$out/shared-prefix-x$engines.trace
    "$sim" gen --suite shared-prefix --seed "$seed" --rate-scale "$engines" \
        --out "$trace"

    for policy in vtc dlpm; do
        for route in prefix least-load round-robin; do
            name=shared-prefix-x$engines.$policy.$route
            # shellcheck disable=SC2046
            run "$name" "$trace" $(policy_args "$policy") \
                --engines "$engines" --route "$route"
            printf '| %s | %s | %s | %s\n' "$engines" "$policy" "$route" \
                "$(figures < "$out/$name.json") |"
        done
    done
done
