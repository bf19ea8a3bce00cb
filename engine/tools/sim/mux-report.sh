#!/usr/bin/env bash
# Several models on one simulated GPU (docs/multi-model.md): the
# multi-model suite (four models, engine/tools/sim/models-4.json) at each
# alpha of MuxServe's evaluation and a few loads (--rate-scale of the suite: 6
# req/s in all at 1), each shared three ways: spatial, temporal, muxserve.
# Prints the tables of docs/multi-model.md: throughput (output tokens/s
# served while requests came), SLO attainment (latency within 5x alone),
# the least-served model's share of its demand, and muxserve over each
# baseline; each figure the median of SEEDS (three) traces, the ratios
# with their range over the seeds.  Writes traces, results and figures to
# OUTDIR:
#
#     engine/tools/sim/mux-report.sh [OUTDIR]  (default: build/mux)
#
# Deterministic: the same seeds give the same figures anywhere.  Seconds.

. "$(dirname "$0")/script-start.sh"

models=${MODELS:-$top/engine/tools/sim/models-4.json}
out=${1:-$top/build/mux}
seeds=${SEEDS:-"1 2 3"}
alphas=${ALPHAS:-"0.7 0.9 1.3 1.7 2.1"}
loads=${LOADS:-"0.1 0.2 0.3 0.5"}
# the pool: 40,000 tokens of the largest model (the 13B-like one), what an
# 80 GB GPU holds beside the four models' weights (about 48 GB in fp16)
kv=${KV_TOKENS:-40000}

need_built "$sim"

mkdir -p "$out"

# a run's figures: throughput slo least-served-share
figures() {
    json_figures '
        my $least = 1;
        for my $x (@{$m->{models}}) {
            next unless $x->{requests};
            $least = $x->{served_share} if $x->{served_share} < $least;
        }
        printf "%.1f %.4f %.4f\n", $m->{all}{tokens_per_s},
            $m->{all}{slo_attainment}, $least;
    '
}

for alpha in $alphas; do
    for load in $loads; do
        for seed in $seeds; do
            trace=$out/trace-$alpha-$load-$seed.jsonl
            "$sim" gen --suite multi-model --alpha "$alpha" \
                --rate-scale "$load" --seed "$seed" --out "$trace"

            for mux in spatial temporal muxserve; do
                name=$mux-$alpha-$load-$seed
                sim_figures "$alpha $load $seed $mux" "$name" \
                    --trace "$trace" --policy fcfs --models "$models" \
                    --mux "$mux" --kv-tokens "$kv"
            done
        done
    done
done > "$out/figures.txt"

# the tables, from the figures: alpha load seed mux tput slo least
perl -e '
    my (%f, @keys, %seen);
    while (<>) {
        my ($a, $l, $s, $m, @v) = split;
        $f{"$a $l"}{$m}{$s} = [@v];
        push @keys, "$a $l" unless $seen{"$a $l"}++;
    }
    my @mux = ("spatial", "temporal", "muxserve");
    my $median = sub {
        my @v = sort { $a <=> $b } @_;
        return $v[$#v / 2] if @v % 2;
        return ($v[@v / 2 - 1] + $v[@v / 2]) / 2;
    };
    my $fig = sub {
        my ($k, $m, $i) = @_;
        return $median->(map { $_->[$i] } values %{$f{$k}{$m}});
    };
    my $ratio = sub {
        my ($k, $m, $base) = @_;
        my @r = map { $f{$k}{$m}{$_}[0] / $f{$k}{$base}{$_}[0] }
                keys %{$f{$k}{$m}};
        my @s = sort { $a <=> $b } @r;
        return sprintf "%.2fx (%.2f-%.2f)", $median->(@r), $s[0], $s[-1];
    };

    print "| alpha | load | throughput (tok/s) spatial / temporal / ",
          "muxserve | muxserve / spatial | muxserve / temporal |\n",
          "|---|---|---|---|---|\n";
    for my $k (@keys) {
        my ($a, $l) = split / /, $k;
        printf "| %s | %s | %.0f / %.0f / %.0f | %s | %s |\n", $a, $l,
            (map { $fig->($k, $_, 0) } @mux),
            $ratio->($k, "muxserve", "spatial"),
            $ratio->($k, "muxserve", "temporal");
    }

    print "\n| alpha | load | SLO attainment spatial / temporal / ",
          "muxserve | least-served model\x27s share spatial / temporal / ",
          "muxserve |\n|---|---|---|---|\n";
    for my $k (@keys) {
        my ($a, $l) = split / /, $k;
        printf "| %s | %s | %.1f%% / %.1f%% / %.1f%% | %.2f / %.2f / ",
            $a, $l, (map { 100 * $fig->($k, $_, 1) } @mux),
            (map { $fig->($k, $_, 2) } @mux[0 .. 1]);
        printf "%.2f |\n", $fig->($k, "muxserve", 2);
    }
' "$out/figures.txt" | tee "$out/tables.md"
