#!/usr/bin/env perl

# Two builds of the tree side by side in one run: this checkout and OLD
# (another checkout, of an earlier commit; both are built first), on the figures
# a change that should not change behaviour must keep:
#
#   dropin   bench_dropin.pl: fairgate's requests a second over plain
#            proxy_pass's in the same round, and the CPU time its worker
#            spends a request
#   engine   bench_engine: decode tokens a CPU second at batch 1 and 32,
#            one thread, per model (stories260K; the 100m model in f32 and
#            q8_0 unless --no-100m)
#   sched    bench_sched: vtc dispatch decisions a second with 100,000
#            backlogged tenants
#
# ROUNDS rounds (3); in each, both builds run every benchmark, the build
# that goes first alternating from round to round, since a shared
# machine's speed drifts.  Prints each build's median (min-max) of each
# figure and the median of the new/old ratios of the rounds' pairs.
#
#     git worktree add /tmp/old HEAD~1
#     t/bench/compare_builds.pl /tmp/old 3

use strict;
use warnings;

use Cwd ();
use FindBin;
use JSON::PP ();

my $old = shift or die "usage: compare_builds.pl OLD [ROUNDS] [--no-100m]\n";
my $rounds = 3;
my $no_100m = 0;

for (@ARGV) {
    if ($_ eq '--no-100m') { $no_100m = 1 } else { $rounds = $_ }
}

my %tree = (new => Cwd::abs_path("$FindBin::Bin/../.."),
            old => Cwd::abs_path($old));

# each tree's module, engine and benchmark programs, built if they are not
for my $b (sort keys %tree) {
    system("make -s -C $tree{$b} -j2 all build/bench/bench_engine "
           . "build/bench/bench_sched > /dev/null") == 0
        or die "compare_builds: make failed in $tree{$b}\n";
}

my %fig;        # $fig{$figure}{$build} = [ values by round ]

sub run {
    my ($b, $cmd) = @_;
    my $out = `cd $tree{$b} && $cmd 2>&1`;
    $? == 0 or die "compare_builds: $cmd in $tree{$b} failed:\n$out";
    return $out;
}

sub dropin {
    my ($b) = @_;
    my $out = run($b, 'perl t/bench/bench_dropin.pl 1 3');

    $out =~ /^fairgate\s+(\d+)\s+([\d.]+)\s+\(\S+\)\s+([\d.]+)/m
        or die "compare_builds: no fairgate line from bench_dropin:\n$out";

    push @{$fig{'dropin req/s over plain'}{$b}}, $2;
    push @{$fig{'dropin cpu us a request'}{$b}}, $3;
}

sub engine {
    my ($b) = @_;
    my $out = run($b, 'build/bench/bench_engine --runs 3'
                      . ($no_100m ? ' --no-100m' : ''));

    for my $line (split /\n/, $out) {
        next unless $line =~ /^\{/;

        my $j = JSON::PP::decode_json($line);

        next unless $j->{engine} eq 'fairgate' && $j->{case} eq 'decode'
                    && $j->{threads} == 1
                    && ($j->{batch} == 1 || $j->{batch} == 32);

        push @{$fig{"engine $j->{model} batch $j->{batch} tok/cpu-s"}{$b}},
             $j->{per_cpu_s};
    }
}

sub sched {
    my ($b) = @_;
    my $out = run($b, 'build/bench/bench_sched');

    $out =~ /"policy":\s*"vtc",\s*(?:"call":\s*"dispatch",\s*)?
             "backlogged_clients":\s*100000,.*?
             "decisions_per_second_median":\s*(\d+)/x
        or die "compare_builds: no vtc 100000 line from bench_sched:\n$out";

    push @{$fig{'sched vtc 100k tenants decisions/s'}{$b}}, $1;
}

for my $r (1 .. $rounds) {
    my @order = $r % 2 ? qw(old new) : qw(new old);

    for my $b (@order) {
        print STDERR "round $r: $b\n";
        dropin($b);
        engine($b);
        sched($b);
    }
}

sub median {
    my @v = sort { $a <=> $b } @_;
    return @v % 2 ? $v[$#v / 2] : ($v[@v / 2 - 1] + $v[@v / 2]) / 2;
}

sub fmt {
    my ($v) = @_;
    return sprintf(abs($v) >= 100 ? '%.0f' : '%.3g', $v);
}

printf "# %d rounds, builds alternating; old: %s\n", $rounds, $tree{old};
printf "%-40s %28s %28s %8s\n", 'figure', 'old median (min-max)',
       'new median (min-max)', 'new/old';

for my $f (sort keys %fig) {
    my ($o, $n) = ($fig{$f}{old}, $fig{$f}{new});
    next unless $o && $n && @$o == @$n;

    my @ratio = map { $o->[$_] ? $n->[$_] / $o->[$_] : 0 } 0 .. $#$o;
    my @so = sort { $a <=> $b } @$o;
    my @sn = sort { $a <=> $b } @$n;

    printf "%-40s %28s %28s %8.3f\n", $f,
           fmt(median(@$o)) . ' (' . fmt($so[0]) . '-' . fmt($so[-1]) . ')',
           fmt(median(@$n)) . ' (' . fmt($sn[0]) . '-' . fmt($sn[-1]) . ')',
           median(@ratio);
}
