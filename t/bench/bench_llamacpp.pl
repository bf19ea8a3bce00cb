#!/usr/bin/env perl

# fairgate's engine (cpu backend) beside llama.cpp (node-llama-cpp's
# prebuilt CPU build) on the same GGUF file and the same threads: tokens
# per second of
#
#   decode1     one sequence, one token a step (its 32-token prompt in the
#               cache), timed from its first generated token
#   prefill512  one prompt of 512 tokens in one step, to its logits
#   decode8     8 sequences decoding together, 8 tokens a step
#   decode32    32 of them
#
# for each shape (100m: fairgate-gguf-gen's 100m preset, Llama, 12 x 768,
# vocabulary 32000, tied; 1b: Llama 3.2 1B's, 16 x 2048, 32/8 heads,
# feed-forward 8192, vocabulary 128256, tied), each type fairgate-gguf-gen
# writes (the others are listed as not written yet) and each thread count.
# The files are written once into --dir (build/bench) and reused.  Both
# sides run as drivers of one line protocol (t/lib/Fairgate/LlamaCpp.pm),
# token ids in; each round asks each case of one side then the other, the
# order alternating round by round.  Decode steps per round: as many as
# --budget seconds (2) hold on the slower side, 4 to 64; the same number
# on both sides.  Reported: the medians of the rounds and their spread
# (min-max), the median of the rounds' ratios fairgate / llama.cpp, each
# side's CPU seconds per wall second while timed (below the threads: other
# work had the cores), and each side's peak resident size and KV cache
# bytes per position (llama.cpp's with node's own, given apart; the CPU
# build of llama.cpp that node-llama-cpp loaded in the last column).
#
# Usage: bench_llamacpp.pl [--shapes 100m,1b] [--types f32,f16,...]
#                          [--threads 1,2] [--rounds 5] [--budget S]
#                          [--cases decode1,prefill512,decode8,decode32]
#                          [--dir DIR] [--simd avx2] [--kv-type f16|f32]
#
# --simd avx2 measures both as on a machine with AVX2 and no AVX-512:
# fairgate held to its AVX2 kernels (FAIRGATE_CPU_SIMD=avx2), llama.cpp to
# its haswell build (AVX2, FMA, F16C: the same level) by a copy of t/node
# of hard links where the other CPU builds are left out (ggml loads the
# best one it finds beside itself).
#
# --kv-type: fairgate's KV cache, f16 (its default, as llama.cpp's) or f32.
#
# make bench-llamacpp runs it with its defaults: every shape, type and
# thread count; on a 2-core machine about an hour per type of the 1b
# shape.  The table it prints is docs/engine-speed.md's.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use File::Temp ();
use Getopt::Long ();
use POSIX ();

use Fairgate::Bench qw(median);
use Fairgate::LlamaCpp qw(missing gen_model);
use Fairgate::Test qw($REPO);


my %SHAPES = (
    # not in the defaults: a run of the script itself in seconds
    'small' => [qw(--embd 256 --layers 2 --heads 4 --kv-heads 2 --ff 512
                   --vocab 1024 --tied)],
    '100m' => [qw(--preset 100m)],
    '1b'   => [qw(--embd 2048 --layers 16 --heads 32 --kv-heads 8 --ff 8192
                  --vocab 128256 --rope-base 500000 --tied)],
);
my @TYPES = qw(f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k q2_k
               q3_k q4_k_m q5_k_m);
my %CASES = (
    decode1    => sub { "decode 1 $_[0]" },
    prefill512 => sub { 'prefill 512' },
    decode8    => sub { "decode 8 $_[0]" },
    decode32   => sub { "decode 32 $_[0]" },
);

my %o = (shapes => '100m,1b', types => join(',', @TYPES), threads => '1,2',
         rounds => 5, budget => 2,
         cases => 'decode1,prefill512,decode8,decode32',
         dir => "$REPO/build/bench", 'kv-type' => 'f16');
Getopt::Long::GetOptions(\%o, 'shapes=s', 'types=s', 'threads=s',
                         'rounds=i', 'budget=f', 'cases=s', 'dir=s',
                         'simd=s', 'kv-type=s')
    && $o{'kv-type'} =~ /^f(16|32)$/
    or die "usage: bench_llamacpp.pl [--shapes ..] [--types ..] "
           . "[--threads ..] [--rounds N] [--budget S] [--cases ..] "
           . "[--dir DIR] [--simd avx2] [--kv-type f16|f32]\n";

my $why = missing();
die "bench_llamacpp: $why\n" if $why;

# stopped: the drivers are stopped too (Fairgate::LlamaCpp's END)
$SIG{INT} = $SIG{TERM} = sub { exit 1 };

my $node_dir = simd($o{simd});

my @cases = split /,/, $o{cases};
$CASES{$_} or die "bench_llamacpp: no case $_\n" for @cases;

mkdir $o{dir};

header();

for my $shape (split /,/, $o{shapes}) {
    $SHAPES{$shape} or die "bench_llamacpp: no shape $shape\n";

    for my $type (split /,/, $o{types}) {
        my $file = model($shape, $type) or next;

        # a side that refuses the file or fails: its row says why
        for my $threads (split /,/, $o{threads}) {
            next if eval { bench($shape, $type, $file, $threads); 1 };
            (my $why = $@) =~ s/\s+/ /g;
            print "| $shape | $type | $threads | failed | $why | | | |\n";
        }
    }
}


# --simd: t/node, or a copy of it (hard links, removed at exit) whose
# llama.cpp has only the CPU build of that level
sub simd {
    my ($level) = @_;
    return "$REPO/t/node" unless defined $level;
    die "bench_llamacpp: --simd avx2 only\n" unless $level eq 'avx2';

    $ENV{FAIRGATE_CPU_SIMD} = 'avx2';
    my $dir = File::Temp::tempdir('fairgate-node-XXXXXX', TMPDIR => 1,
                                  CLEANUP => 1);
    system('cp', '-al', "$REPO/t/node/.", $dir) == 0
        or die "bench_llamacpp: cp -al t/node $dir failed\n";

    my $bins = "$dir/node_modules/\@node-llama-cpp/linux-x64/bins/linux-x64";
    my @cpu = grep { !/-haswell\.so$/ } glob("$bins/libggml-cpu-*.so");
    die "bench_llamacpp: no haswell build in $bins\n"
        unless -e "$bins/libggml-cpu-haswell.so";
    unlink @cpu;

    return $dir;
}


# the machine and the versions, for the table's heading
sub header {
    my ($cpu) = `lscpu` =~ /^Model name:\s*(.+)$/m;
    my $avx512 = `grep -m1 -o avx512f /proc/cpuinfo` ? 'AVX-512' : 'no AVX-512';
    $avx512 .= ", both held to $o{simd}" if $o{simd};
    my $cores = `nproc`;
    chomp $cores;
    my $nlc = do {
        open my $fh, '<',
             "$REPO/t/node/node_modules/node-llama-cpp/package.json";
        local $/;
        (<$fh> // '') =~ /"version":\s*"([^"]+)"/ ? $1 : '?';
    };

    printf "%s, %s (%s), %s cores, node-llama-cpp %s, %d rounds\n\n",
           POSIX::strftime('%Y-%m-%d', gmtime), $cpu // '?', $avx512,
           $cores, $nlc, $o{rounds};
    print "| shape | type | threads | case | fairgate tok/s | llama.cpp tok/s "
          . "| ratio | cpu (f/l) |\n";
    print "|---|---|---|---|---|---|---|---|\n";
}


# the shape's file of this type, written once; undef where
# fairgate-gguf-gen does not write the type yet
sub model {
    my ($shape, $type) = @_;
    my $file = "$o{dir}/llamacpp-$shape-$type.gguf";

    return $file if -s $file;

    my $ok = eval { gen_model("$file.part", '-t', $type,
                              @{ $SHAPES{$shape} }); 1 };
    if (!$ok) {
        unlink "$file.part";
        print "| $shape | $type | | | not written yet | | | |\n";
        return undef;
    }

    rename "$file.part", $file or die "$file: $!\n";
    return $file;
}


# one answer of a side, with its CPU seconds per wall second
sub timed {
    my ($d, $line) = @_;
    my $a = $d->ask($line, 3600);
    $a->{cpu} = $a->{cpu_s} / $a->{s};
    return $a;
}


# decode steps a round: what the budget holds on the slower side
sub steps {
    my ($sides, $case) = @_;
    my $b = $case eq 'decode1' ? 1 : $case eq 'decode8' ? 8 : 32;
    my $slow = 0;

    for my $d (@$sides) {
        my $a = $d->ask("decode $b 4", 3600);
        $slow = $a->{s} / 4 if $a->{s} / 4 > $slow;
    }

    my $n = int($o{budget} / ($slow || 1e-3));
    return $n < 4 ? 4 : $n > 64 ? 64 : $n;
}


sub bench {
    my ($shape, $type, $file, $threads) = @_;
    my @sides = map {
        Fairgate::LlamaCpp->new(side => $_, model => $file,
                                threads => $threads, timeout => 600,
                                node_dir => $node_dir,
                                kv_type => $o{'kv-type'})
    } qw(fairgate llamacpp);

    # the first steps pay the file's page faults: a warm-up, and the steps
    my %steps = map { $_ => /^decode/ ? steps(\@sides, $_) : 0 } @cases;
    my %r;

    for my $round (1 .. $o{rounds}) {
        for my $case (@cases) {
            my @order = $round % 2 ? (0, 1) : (1, 0);
            for my $i (@order) {
                push @{ $r{$case}[$i] },
                     timed($sides[$i], $CASES{$case}->($steps{$case}));
            }
        }
    }

    for my $case (@cases) {
        row($shape, $type, $threads, $case, @{ $r{$case} });
    }

    mem($shape, $type, $threads, @sides);
    $_->stop for @sides;
}


# tokens per second: whole from 100 on
sub tps { $_[0] >= 100 ? sprintf('%.0f', $_[0]) : sprintf('%.3g', $_[0]) }

# median [min-max] of a list
sub spread {
    my @v = sort { $a <=> $b } @_;
    return sprintf('%s [%s-%s]', tps(median(@v)), tps($v[0]), tps($v[-1]));
}

sub row {
    my ($shape, $type, $threads, $case, $f, $l) = @_;
    my @ratio = map { $f->[$_]{tok_s} / $l->[$_]{tok_s} } 0 .. $#$f;

    printf "| %s | %s | %d | %s | %s | %s | %.2f [%.2f-%.2f] | %.1f/%.1f |\n",
           $shape, $type, $threads, $case,
           spread(map { $_->{tok_s} } @$f), spread(map { $_->{tok_s} } @$l),
           median(@ratio), (sort { $a <=> $b } @ratio)[0, -1],
           median(map { $_->{cpu} } @$f), median(map { $_->{cpu} } @$l);
}

sub mem {
    my ($shape, $type, $threads, $f, $l) = @_;
    my ($mf, $ml) = map { $_->ask('mem') } $f, $l;

    printf "| %s | %s | %d | memory | peak RSS %.0f MiB, KV %d B/position "
           . "| peak RSS %.0f MiB (node alone %.0f), KV %d B/position "
           . "| | %s |\n", $shape, $type, $threads,
           $mf->{hwm_kib} / 1024, $mf->{kv_bytes_token},
           $ml->{hwm_kib} / 1024, $ml->{base_rss_kib} / 1024,
           $ml->{kv_bytes_token} // 0, $ml->{cpu_build} // '?';
}
