#!/usr/bin/env bash
# Andes's QoE through fairgate-sim: the cyclic-burst suite at several
# loads (--rate-scale of the suite), fcfs and vtc at the zone, each in
# three ways: the arrival order and the engine's fcfs (the baseline, as
# vLLM), the zone's qoe order (Andes's order for requests not yet served)
# with the engine's fcfs, and the qoe order with the engine's andes
# (preemption by recomputation); the A10G profile (or the step model
# FAIRGATE_ENGINE names, e.g. gpu).
# Prints the tables of docs/simulator.md: average QoE, the share with QoE
# >= 0.95, throughput and preemptions per configuration and load; each
# over the baseline at each load; the highest load each sustains at an
# average QoE of 0.95 (interpolated between loads).  Writes traces,
# results and figures to OUTDIR:
#
#     engine/tools/sim/qoe-report.sh [OUTDIR]  (default: build/qoe)
#
# Deterministic: the same seed gives the same traces and figures anywhere.
# A few seconds on one core.

. "$(dirname "$0")/script-start.sh"

# the engine's step model (fg_step_model.h), e.g. FAIRGATE_ENGINE=gpu
engine=${FAIRGATE_ENGINE:-profile:$profile}
out=${1:-$top/build/qoe}
seed=${SEED:-1}
loads=${LOADS:-"0.2 0.3 0.4 0.5 0.6 0.8 1.0 1.2 1.5 2.0"}

need_built "$sim"
need_profile

mkdir -p "$out"

# a run's figures: qoe_mean qoe_share_095 throughput preemptions
figures() {
    json_figures '
        printf "%.4f %.4f %.1f %d\n", $m->{qoe_mean}, $m->{qoe_share_095},
            $m->{throughput}, $m->{preemptions} // 0;
    '
}

for load in $loads; do
    "$sim" gen --suite cyclic-burst --seed "$seed" --rate-scale "$load" \
        --out "$out/trace-$load.jsonl"

    for policy in fcfs vtc; do
        for run in arrival:fcfs qoe:fcfs qoe:andes; do
            order=${run%%:*}
            sched=${run##*:}
            name=$policy-$order-$sched-$load
            sim_figures "$policy $run $load" "$name" \
                --trace "$out/trace-$load.jsonl" --policy "$policy" \
                --engine "$engine" --cost profiled --order "$order" \
                --engine-sched "$sched"
        done
    done
done > "$out/figures.txt"

# the tables, from the figures: policy run load qoe good tput preempt
perl -e '
    my (%f, @loads, %seen);
    while (<>) {
        my ($p, $r, $l, @v) = split;
        $f{"$p $r"}{$l} = [@v];
        push @loads, $l unless $seen{$l}++;
    }
    my @runs = map { my $p = $_; map { "$p $_" }
                     ("arrival:fcfs", "qoe:fcfs", "qoe:andes") }
               ("fcfs", "vtc");
    my $name = sub {
        my ($p, $r) = split / /, shift;
        my ($o, $s) = split /:/, $r;
        return "$p, $o / $s";
    };

    print "| zone policy, order / engine | load | avg QoE | QoE >= 0.95 | ",
          "throughput (tok/s) | preemptions |\n|---|---|---|---|---|---|\n";
    for my $r (@runs) {
        for my $l (@loads) {
            my $v = $f{$r}{$l};
            printf "| %s | %s | %.3f | %.1f%% | %.0f | %d |\n",
                $name->($r), $l, $v->[0], 100 * $v->[1], $v->[2], $v->[3];
        }
    }

    print "\nQoE at a given load, over the baseline (arrival / fcfs) of ",
          "the same zone policy: QoE (x), throughput (x)\n\n",
          "| load | fcfs: qoe / fcfs | fcfs: qoe / andes ",
          "| vtc: qoe / fcfs | vtc: qoe / andes |\n",
          "|---|---|---|---|---|\n";
    for my $l (@loads) {
        printf "| %s", $l;
        for my $p ("fcfs", "vtc") {
            my $a = $f{"$p arrival:fcfs"}{$l};
            for my $r ("qoe:fcfs", "qoe:andes") {
                my $b = $f{"$p $r"}{$l};
                printf " | %.3f (%.2fx), %.2fx", $b->[0], $b->[0] / $a->[0],
                    $b->[2] / $a->[2];
            }
        }
        print " |\n";
    }

    # the highest load at average QoE >= 0.95: where the curve first
    # falls below it, linear between the two loads that bracket it
    print "\nLoad sustained at average QoE >= 0.95 (of the suite\x27s)\n\n",
          "| zone policy, order / engine | load |\n|---|---|\n";
    for my $r (@runs) {
        my ($prev, $at) = (undef, undef);
        for my $l (@loads) {
            my $q = $f{$r}{$l}[0];
            if ($q < 0.95) {
                $at = !defined $prev ? sprintf("< %s", $l)
                    : sprintf("%.2f", $prev->[0] + ($prev->[1] - 0.95)
                              * ($l - $prev->[0]) / ($prev->[1] - $q));
                last;
            }
            $prev = [$l, $q];
        }
        $at //= sprintf(">= %s", $loads[-1]);
        printf "| %s | %s |\n", $name->($r), $at;
    }
' "$out/figures.txt"
