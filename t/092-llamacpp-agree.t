#!/usr/bin/env perl

# Greedy agreement with llama.cpp: for each line of the table, a GGUF file
# written by fairgate-gguf-gen (random weights, a separate output matrix:
# with a tied one, every continuation repeats the prompt's last token and
# even a broken forward pass would agree) goes to fairgate's cpu backend
# (build/t/fg_engine_drive) and to llama.cpp (node-llama-cpp's prebuilt
# CPU build, t/node/llamacpp_drive.mjs), one thread each; the same prompts
# of token ids (no tokenizer on either side), 64 greedy tokens each.
#
# The continuations must agree token for token, or part only at a near
# tie: where llama.cpp's token and fairgate's differ, fairgate's logit for
# llama.cpp's choice must lie within the line's gap of its own best (in
# standard deviations of that step's logits).  Near ties are honest: with
# random weights the top logits are close, ggml multiplies its F16 KV
# cache (the engine's is F16 too, by default) with q and the attention
# weights rounded to F16, and ggml rounds the activations to the weights'
# dot-product type first (F16, BF16, Q8_0; Q8_1 and Q8_K for the smaller
# quantized types), where the engine keeps them in F32 (F16, BF16) or
# rounds them to the same blocks, but from floats summed in another order
# (where an input lies near a rounding boundary, one unit in its last
# place can move its 8-bit value by a step).  A forward pass that
# computes another model parts at once and far from any tie: the control
# below, llama.cpp on a file of other weights, must fail the same check.
# And the line's share of all tokens must agree.
# What it cannot see: a fault that moves the logits less than the gap.
# Random weights make them weakly sensitive to attention: a rope base 5%
# off parts at gaps of 0.002-0.016 sd in F32 (caught), within Q8_0's bound.
#
# Measured on random-weight files of this shape, 8 prompts of 64 tokens
# (the largest gap seen at a parting, the least share agreed), llama and
# qwen2 on three seeds: f32 0.0011 sd, 0.89; f16 0.00045, 0.88; bf16
# 0.0066, 0.65; q8_0 0.04, 0.42; qwen3, gemma3 and phi3 on two: f32 every
# token; bf16 0.012, 0.69; q8_0 0.03, 0.37; the quantized types below on
# two (llama): 0.071, 0.24.  With x rounded to ggml's very blocks (seeds
# 1, 3, 4): q8_0 0.024, 0.30; the quantized types 0.059, 0.20, their
# shares as before within the seeds' spread.  With Q8_0's matrices packed
# (their sums in another order, docs/kernels.md), q8_0 on seeds 1, 3, 4
# and 5 of the five architectures agreed on 21-85% (mean 50%; plain, the
# same files: 33-83%, mean 53%), every parting within the 0.1 sd bound:
# gemma3's seed 1 at 21%.  The table's bounds are a few times
# those (shares: below the least seen).
#
# Skips, saying why, without node, node-llama-cpp (t/node/node_modules:
# make test installs it) or the driver (make).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use File::Temp ();
use Test::More;

use Fairgate::LlamaCpp qw(missing gen_model);


# One line a file: architecture, type, the largest logit gap (standard
# deviations) at which the continuations may part, the least share of
# the tokens that must agree, and fairgate-gguf-gen's options beside the
# shape.  A new type or architecture is a line here; a line whose type or
# architecture fairgate-gguf-gen refuses is skipped, saying so.
my @TABLE = (
    #  arch      type     gap    agree  options
    [ 'llama', 'f32',    0.005, 0.75 ],
    [ 'llama', 'f16',    0.005, 0.75 ],
    [ 'llama', 'bf16',   0.02,  0.5  ],
    [ 'llama', 'q8_0',   0.1,   0.15 ],
    [ 'qwen2', 'f32',    0.005, 0.75 ],
    [ 'qwen2', 'f16',    0.005, 0.75 ],
    [ 'qwen2', 'bf16',   0.02,  0.5  ],
    [ 'qwen2', 'q8_0',   0.1,   0.15 ],
    [ 'qwen3', 'f32',    0.005, 0.75 ],
    [ 'qwen3', 'q8_0',   0.1,   0.15 ],
    [ 'gemma3', 'f32',   0.005, 0.75 ],
    [ 'gemma3', 'q8_0',  0.1,   0.15 ],
    [ 'phi3', 'f32',     0.005, 0.75 ],
    [ 'phi3', 'q8_0',    0.1,   0.15 ],
    # Phi-3 128k's LongRoPE: the long factors and the attention factor
    # (a context of 2048 over an original of 256), and the short ones
    # (llama.cpp's context of 1024 is within the original 2048)
    [ 'phi3', 'f32',     0.005, 0.75, '--rope-longrope', 256 ],
    [ 'phi3', 'f32',     0.005, 0.75, '--rope-longrope', 2048 ],
    # gemma2 is always tied (fairgate-gguf-gen, as the architecture is):
    # its continuations soon repeat one token, a weak check
    [ 'gemma2', 'f32',   0.005, 0.75 ],

    # windows of 16 and 32, well inside the 65 to 128 positions of each
    # prompt and its answer, fairgate's sliding layers keeping only their
    # windows (--kv-window: slots the KV pool lets go of as each window
    # moves on)
    [ 'gemma3', 'f32',   0.005, 0.75, '--swa', 16, '--kv-window' ],
    [ 'gemma2', 'f32',   0.005, 0.75, '--swa', 32, '--kv-window' ],

    # the quantized types of issue 30: skipped until fairgate-gguf-gen
    # writes them, failing if it does and the engine does not run them.
    # Bounds from two seeds of each on the engine of the quantized
    # products (largest gap 0.071 sd, q3_k; least share 0.24, q6_k)
    [ 'llama', 'q4_0',   0.15,  0.15 ],
    [ 'llama', 'q4_1',   0.15,  0.15 ],
    [ 'llama', 'q5_0',   0.15,  0.15 ],
    [ 'llama', 'q5_1',   0.15,  0.15 ],
    [ 'llama', 'q4_k',   0.15,  0.15 ],
    [ 'llama', 'q5_k',   0.15,  0.15 ],
    [ 'llama', 'q6_k',   0.15,  0.15 ],
    [ 'llama', 'q2_k',   0.15,  0.15 ],
    [ 'llama', 'q3_k',   0.15,  0.15 ],
    [ 'llama', 'q4_k_m', 0.15,  0.15 ],
    [ 'llama', 'q5_k_m', 0.15,  0.15 ],
    [ 'qwen2', 'q4_k_m', 0.15,  0.15 ],
);

# small enough for seconds a file, in multiples of 256 for the k-quants'
# blocks; 4 heads of 64, grouped 2 to 1
my @SHAPE = qw(--embd 256 --layers 2 --heads 4 --kv-heads 2 --ff 512
               --vocab 1024 --untied);
my $N = 64;


my $why = missing();
plan skip_all => $why if $why;

my $tmp = File::Temp::tempdir('fairgate-agree-XXXXXX', TMPDIR => 1,
                              CLEANUP => !$ENV{FAIRGATE_KEEP});

# prompts of 1 to 64 tokens, BOS (1) first, the rest below the vocabulary
my @prompts;
my $x = 12345;
for my $len (1, 3, 7, 12, 20, 33, 48, 64) {
    my @p = (1);
    for (2 .. $len) {
        $x = ($x * 1103515245 + 12345) % 2**31;
        push @p, 3 + $x % 1000;
    }
    push @prompts, \@p;
}


# the prompts on both sides: for each, the tokens agreed and, where they
# part, fairgate's gap to llama.cpp's choice ('far': not in its 8 best)
sub compare {
    my ($ours, $theirs) = @_;
    my @res;

    for my $p (@prompts) {
        my $a = $ours->ask("greedy $N @$p")->{tokens};
        my $b = $theirs->ask("greedy $N @$p")->{tokens};
        my $i = 0;
        $i++ while $i < $N && $a->[$i] == $b->[$i];

        if ($i == $N) {
            push @res, [$i];
            next;
        }

        my $top = $ours->ask('top 8 ' . join ' ', @$p, @$a[0 .. $i - 1]);
        my %logit = map { $_->[0] => $_->[1] } @{ $top->{top} };
        my $gap = defined $logit{$b->[$i]}
                  ? ($top->{top}[0][1] - $logit{$b->[$i]}) / $top->{sd}
                  : 'far';
        push @res, [$i, $gap];
    }

    return @res;
}

# whether every parting is within the gap, the share agreed, and the
# agreement as a line: tokens agreed per prompt, the gap where they part
sub judge {
    my ($gap, @res) = @_;
    my ($agreed, $ties) = (0, 1);

    for my $r (@res) {
        $agreed += $r->[0];
        $ties = 0 if @$r > 1 && ($r->[1] eq 'far' || $r->[1] > $gap);
    }

    my $line = join ' ', map {
        @$_ == 1 ? $_->[0]
                 : $_->[1] eq 'far' ? "$_->[0](far)"
                 : sprintf('%d(%.2g)', @$_)
    } @res;

    return ($ties, $agreed / ($N * @prompts), $line);
}


# llama.cpp's side starts once and loads each file in turn
my ($theirs, $control);

for my $row (@TABLE) {
    my ($arch, $type, $gap, $share, @opts) = @$row;
    my $name = join(' ', $arch, $type, @opts);
    my $window = grep { $_ eq '--kv-window' } @opts;
    @opts = grep { $_ ne '--kv-window' } @opts;
    my $file = "$tmp/$arch-$type" . join('', map { "-$_" } @opts) . '.gguf';

    # a type or architecture the generator does not write yet
    if (!eval { gen_model($file, '--arch', $arch, '-t', $type, @SHAPE,
                          @opts); 1 }) {
        die $@ unless $@ =~ /--(type|arch): /;
        SKIP: { skip("$name: fairgate-gguf-gen does not write it yet", 2) }
        next;
    }

    my $ours = Fairgate::LlamaCpp->new(side => 'fairgate', model => $file,
                                       window => $window);
    if ($theirs) {
        $theirs->load($file);
    } else {
        $theirs = Fairgate::LlamaCpp->new(side => 'llamacpp', model => $file);
    }

    my ($ties, $agreed, $line) = judge($gap, compare($ours, $theirs));

    ok($ties, "$name: every parting from llama.cpp at a near tie "
              . "(gap <= $gap sd)") or diag("agreed (gap): $line");
    cmp_ok($agreed, '>=', $share,
           sprintf('%s: %.0f%% of %d tokens agree (at least %.0f%%)',
                   $name, 100 * $agreed, $N * @prompts, 100 * $share))
        or diag("agreed (gap): $line");
    note("$name: agreed (gap): $line");

    # the negative control, once: llama.cpp on the same shape with other
    # weights must fail the check
    if (!$control++) {
        $theirs->load(gen_model("$tmp/other.gguf", '--arch', $arch,
                                '-t', $type, '--seed', 2, @SHAPE, @opts));
        my ($t, $a, $l) = judge($gap, compare($ours, $theirs));
        ok(!$t && $a < $share, "$name: other weights fail the check "
                               . sprintf('(%.0f%% agree)', 100 * $a))
            or diag("agreed (gap): $l");
    }

    $ours->stop;
}

$theirs->stop if $theirs;

done_testing();
