#!/usr/bin/env perl

# Tool calls read from a model's answer, end to end: models generated
# with seeded random weights (fairgate-gguf-gen) and a tokenizer of six
# or seven tokens, one of which is a whole call of get_weather (the JSON
# form, Hermes's <tool_call> block, Mistral's array, Llama 3's object),
# and for Mistral and Llama 3 the control token that starts a call
# ([TOOL_CALLS], <|python_tag|>), with a chat template that names the
# family.  The seeds are found here, with the engine's one-shot mode on
# the prompt every request renders: one whose greedy answer is calls
# alone (several), and one whose answer is text, then calls (Hermes), or
# text, the control token, a call (Mistral, Llama 3: the decoder must
# write the token out for the call to be read).  Through the gateway:
# the calls in the body (ids as OpenAI's, distinct; name; arguments;
# content null or the text before them; finish_reason tool_calls),
# streamed as OpenAI's tool-call deltas (id, type and name first, then
# the arguments; the text before them as content), parallel_tool_calls
# false keeping the first, tool_choice none leaving the answer as text,
# a choice naming another tool giving none of this one's calls (the
# answer is held to the other's, which this vocabulary cannot write);
# n = 2, each choice read for its own calls, in its body entry or under
# its index; and the openai npm package reading the calls and
# accumulating the stream (t/node/tools.mjs), and the AI SDK's
# generateText and streamText with a tool, on the chat API
# (t/node/tools-aisdk.mjs).  The Responses API (/v1/responses) the same:
# function_call items whole and streamed as OpenAI's events, a call and
# its output taken back, other choices and refusals; and its clients
# (t/node/responses-tools.mjs).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use File::Temp ();
use JSON::PP ();
use Test::More;

use Fairgate::Test qw(:DEFAULT gateway $REPO);
use Fairgate::Engine qw(parse_sse check_chunk wait_attached);

my $gen = "$Fairgate::Test::BUILD/fairgate-gguf-gen";
my $engine = "$Fairgate::Test::BUILD/fairgate-engine";
plan skip_all => "$gen or $engine is missing: run make"
    unless -x $gen && -x $engine;

my $J = JSON::PP->new->canonical->utf8;

my $dir = File::Temp::tempdir('fairgate-calls-XXXXXX', TMPDIR => 1,
                              CLEANUP => !$ENV{FAIRGATE_KEEP});
chmod 0755, $dir;

my $args = '{"city":"Paris"}';
my %call = (json => qq({"name":"get_weather","arguments":$args}),
            hermes => qq(<tool_call>{"name":"get_weather","arguments":)
                      . qq($args}</tool_call>),
            mistral => qq([{"name":"get_weather","arguments":$args}]),
            llama3 => qq({"name":"get_weather","parameters":$args}));

# the families whose call starts with a control token
my %marker = (mistral => '[TOOL_CALLS]', llama3 => '<|python_tag|>');

# the family's tokenizer and template: the prompt is "a" whatever the
# request, the family named in a comment (as a template's markers are);
# where a control token starts the call, EOS is the only other one
sub tokenizer {
    my ($family) = @_;
    my $m = $marker{$family};
    my @special = $m ? ('</s>', $m) : ('<unk>', '<s>', '</s>');
    my %vocab = map { $special[$_] => $_ } 0 .. $#special;
    my $k = @special;
    $vocab{$_} = $k++ for $call{$family}, 'a', 'b', 'ab';

    my $tok = {
        version => '1.0',
        model => { type => 'BPE', merges => ['a b'], vocab => \%vocab,
                   ($m ? () : (unk_token => '<unk>')) },
        added_tokens => [map { { id => $vocab{$_}, content => $_,
                                 special => JSON::PP::true } } @special],
        pre_tokenizer => { type => 'ByteLevel',
                           add_prefix_space => JSON::PP::false },
        decoder => { type => 'ByteLevel' },
    };
    my $cfg = { bos_token => $special[-2], eos_token => '</s>',
                add_bos_token => JSON::PP::false,
                chat_template => '{# tools: '
                                 . ($m // ($family eq 'hermes'
                                           ? '<tool_call>' : ''))
                                 . ' #}a' };

    for ([tok => $tok], [cfg => $cfg]) {
        open my $fh, '>:raw', "$dir/$family.$_->[0].json" or die "$!\n";
        print {$fh} $J->encode($_->[1]);
        close $fh;
    }

    return scalar keys %vocab;
}

# the greedy answer of a model to "a" in n tokens: its text, and how
# many tokens came (fewer: EOS)
sub answer {
    my ($file, $n) = @_;
    my ($rc, $out) = Fairgate::Test::run_cmd($engine, '--model', $file,
                                             '--prompt', 'a', '-n', $n,
                                             '--threads', 1);
    die "fairgate-engine --prompt: $out" if $rc;
    my $text = join '', grep { !/^fairgate-engine: / } split /\n/, $out;
    my ($got) = $out =~ /(\d+) generated/;
    return ($text, $got // 0);
}

# the first seed of 1..120 whose answer passes $want: the model, its
# text, its tokens
sub find {
    my ($family, $want) = @_;
    my $vocab = tokenizer($family);
    for my $seed (1 .. 120) {
        my $file = "$dir/$family-$seed.gguf";
        my ($rc, $out) = Fairgate::Test::run_cmd($gen, '-o', $file,
            '--tokenizer-json', "$dir/$family.tok.json",
            '--tokenizer-config', "$dir/$family.cfg.json",
            '--vocab', $vocab, '--seed', $seed);
        die "fairgate-gguf-gen: $out" if $rc;
        chmod 0644, $file;

        my @got = $want->($file);
        return ($file, @got) if @got;
    }
    return;
}

my %q = map { $_ => quotemeta $call{$_} } keys %call;

# only calls, several, in 3 tokens
sub calls_only {
    my ($family) = @_;
    return sub {
        my ($text, $n) = answer($_[0], 3);
        return $text =~ /^(?:$q{$family}){2,}$/ ? ($text, $n) : ();
    };
}

# text, then the calls (3 tokens); with a marker: text, the marker
# (nothing to see, and no EOS), the call
sub text_then_call {
    my ($family) = @_;
    return sub {
        my ($t3, $n3) = answer($_[0], 3);
        return () unless $t3 =~ /^([ab]+)(?:$q{$family})+$/;
        my $before = $1;
        return ($t3, $n3) unless $marker{$family};
        my ($t1) = answer($_[0], 1);
        my ($t2, $n2) = answer($_[0], 2);
        return $t1 eq $before && $t2 eq $before && $n2 == 2 && $n3 == 3
               ? ($t3, $n3) : ();
    };
}

my %m;
@{ $m{calls} }{qw(file text n)} = find('json', calls_only('json'));
@{ $m{hermes} }{qw(file text n)} = find('hermes', calls_only('hermes'));
@{ $m{texted} }{qw(file text n)} = find('hermes', text_then_call('hermes'));
for my $f (qw(mistral llama3)) {
    @{ $m{$f} }{qw(file text n)} = find($f, text_then_call($f));
}

plan skip_all => 'no seed of 1..120 gives the answers wanted: '
                 . join(', ', grep { !$m{$_}{file} } sort keys %m)
    if grep { !$m{$_}{file} } keys %m;

my @engines;
for my $name (sort keys %m) {
    my $e = Fairgate::Engine->new(backend => 'cpu', model => $m{$name}{file});
    $e->start;
    push @engines, [$name, $e, "dead_after=1s id=$name"];
}

my $s = gateway(engines => \@engines, workers => 1);
ok(wait_attached($s, scalar @engines), 'the worker attached to the engines');

my @tools = map { { type => 'function',
                    function => { name => $_,
                                  parameters => { type => 'object' } } } }
            qw(get_weather local_time);

sub post {
    my ($model, %o) = @_;
    my $body = { model => $model, max_tokens => 3, temperature => 0,
                 tools => \@tools,
                 messages => [{ role => 'user', content => 'Paris?' }], %o };
    my $r = $s->post('/v1/chat/completions', $J->encode($body),
                     headers => ['Content-Type: application/json']);
    $r->{json} = eval { $J->decode($r->{body}) } unless $o{stream};
    return $r;
}

sub calls_in { my ($name) = @_; () = $m{$name}{text} =~ /get_weather/g }

for my $name (qw(calls hermes texted mistral llama3)) {
    note("$name: $m{$name}{text}");

    subtest "$name: the calls read, whole and streamed" => sub {
        my $n = calls_in($name);
        my ($before) = $m{$name}{text} =~ /^([ab]*)/;

        my $r = post($name);
        is($r->{status}, 200, 'a body: 200') or diag($r->{body});
        my $c = $r->{json}{choices}[0];
        is($c->{finish_reason}, 'tool_calls', 'finish_reason tool_calls');
        is($c->{message}{content}, length $before ? $before : undef,
           length $before ? "the text before them: '$before'"
                          : 'content null');
        my @calls = @{ $c->{message}{tool_calls} // [] };
        is(scalar @calls, $n, "$n calls");
        my $idre = $name eq 'mistral' ? qr/^[0-9A-Za-z]{9}$/
                                      : qr/^call_[0-9A-Za-z]{24}$/;
        is(scalar(grep { $_->{id} =~ $idre } @calls), $n,
           $name eq 'mistral' ? 'ids of 9 characters, as Mistral\'s'
                              : 'ids as OpenAI\'s');
        my %ids = map { $_->{id} => 1 } @calls;
        is(scalar keys %ids, $n, '... each its own');
        is(scalar(grep { $_->{type} eq 'function'
                         && $_->{function}{name} eq 'get_weather'
                         && $_->{function}{arguments} eq $args } @calls),
           $n, 'type, name and arguments');
        is($r->{json}{usage}{completion_tokens}, $m{$name}{n},
           "usage: the $m{$name}{n} tokens");

        my $st = post($name, stream => JSON::PP::true);
        is($st->{status}, 200, 'streamed: 200');
        my @ev = eval { parse_sse($st->{body}) };
        ok(@ev, 'the stream parses strictly') or diag($@);
        pop @ev;
        my @bad = map { check_chunk($_, 'chat') } @ev;
        is("@bad", '', 'every chunk follows the schema');
        my @d = map { $_->{choices}[0]{delta} } grep { @{ $_->{choices} } } @ev;
        is(join('', map { $_->{content} // '' } @d), $before,
           'the text before the calls streamed as content');
        my @tc = map { @{ $_->{tool_calls} // [] } } @d;
        is(scalar @tc, 2 * $n, 'two deltas a call');
        my $ok = 1;
        for my $i (0 .. $n - 1) {
            my ($first, $rest) = grep { $_->{index} == $i } @tc;
            $ok &&= $first && length $first->{id}
                    && $first->{type} eq 'function'
                    && $first->{function}{name} eq 'get_weather'
                    && $first->{function}{arguments} eq ''
                    && $rest && !defined $rest->{id}
                    && $rest->{function}{arguments} eq $args;
        }
        ok($ok, 'each: id, type and name first, then the arguments')
            or diag(explain(\@tc));
        my ($fin) = grep { $_->{choices}[0]{finish_reason} }
                    grep { @{ $_->{choices} } } @ev;
        is($fin->{choices}[0]{finish_reason}, 'tool_calls',
           'finish chunk: tool_calls');
    };
}

subtest 'choices that keep the answer text, or one call' => sub {
    my $r = post('calls', parallel_tool_calls => JSON::PP::false);
    is(scalar @{ $r->{json}{choices}[0]{message}{tool_calls} // [] }, 1,
       'parallel_tool_calls false: the first call only');

    $r = post('calls', tool_choice => 'none');
    my $c = $r->{json}{choices}[0];
    is($c->{message}{content}, $m{calls}{text}, 'none: the text');
    ok(!$c->{message}{tool_calls}, 'none: no calls');
    is($c->{finish_reason}, 'length', 'none: finish_reason length');

    # a named choice holds the answer to a call of that tool
    # (docs/structured-output.md): this vocabulary writes none, so the
    # answer fails rather than give the other tool's calls
    $r = post('calls', tool_choice => { type => 'function',
                                        function => { name => 'local_time' }
                                      });
    $c = $r->{json}{choices}[0];
    ok(!grep({ $_->{function}{name} ne 'local_time' }
             @{ $c->{message}{tool_calls} // [] })
       && !defined $c->{message}{content},
       'a choice of another tool: no call of another, no text');
};

subtest 'n = 2: each choice read for its calls' => sub {
    my ($before) = $m{texted}{text} =~ /^([ab]*)/;
    my $n = calls_in('texted');

    my $r = post('texted', n => 2);
    is($r->{status}, 200, 'a body: answered 200') or diag($r->{body});
    my @c = @{ $r->{json}{choices} // [] };
    is(scalar @c, 2, 'two choices');
    my $ok = 0;
    for my $i (0, 1) {
        my $c = $c[$i];
        $ok++ if $c->{index} == $i && $c->{finish_reason} eq 'tool_calls'
                 && $c->{message}{content} eq $before
                 && @{ $c->{message}{tool_calls} // [] } == $n;
    }
    is($ok, 2, 'each: its index, the text before, its calls, tool_calls');
    my %ids = map { $_->{id} => 1 }
              map { @{ $_->{message}{tool_calls} } } @c;
    is(scalar keys %ids, 2 * $n, 'every call its own id');
    is($r->{json}{usage}{completion_tokens}, 2 * $m{texted}{n},
       'usage: both choices\' tokens');

    my $st = post('texted', n => 2, stream => JSON::PP::true);
    my @ev = eval { parse_sse($st->{body}) };
    ok(@ev, 'streamed: the stream parses strictly') or diag($@);
    pop @ev;
    my @bad = map { check_chunk($_, 'chat', 2) } @ev;
    is("@bad", '', 'every chunk follows the schema, index 0 or 1');
    my (%text, %tc, %fin);
    for my $ev (grep { @{ $_->{choices} } } @ev) {
        my $c = $ev->{choices}[0];
        $text{ $c->{index} } .= $c->{delta}{content} // '';
        push @{ $tc{ $c->{index} } }, @{ $c->{delta}{tool_calls} // [] };
        $fin{ $c->{index} } = $c->{finish_reason} if $c->{finish_reason};
    }
    is_deeply([@text{0, 1}], [$before, $before],
              'each choice\'s text before its calls');
    is_deeply([map { scalar @{ $tc{$_} // [] } } 0, 1], [2 * $n, 2 * $n],
              'two deltas a call, under each index');
    is_deeply([@fin{0, 1}], ['tool_calls', 'tool_calls'],
              'each choice finishes with tool_calls');
};

# the Responses API: the same tools, written flat
my @rtools = map { { type => 'function', name => $_->{function}{name},
                     parameters => $_->{function}{parameters} } } @tools;

sub rpost {
    my ($model, %o) = @_;
    my $body = { model => $model, max_output_tokens => 3, temperature => 0,
                 tools => \@rtools, input => 'Paris?', store =>
                 JSON::PP::false, %o };
    my $r = $s->post('/v1/responses', $J->encode($body),
                     headers => ['Content-Type: application/json']);
    $r->{json} = eval { $J->decode($r->{body}) } unless $o{stream};
    return $r;
}

# "event: NAME" and its data of that type, numbered from 0 without a gap
sub rsp_events {
    my ($body) = @_;
    my @ev;
    for my $e (split /\n\n/, $body) {
        return () unless $e =~ /\Aevent: ([a-z_.]+)\ndata: ([^\n]*)\z/;
        my $j = eval { $J->decode($2) } // return ();
        return () unless $j->{type} eq $1
                         && $j->{sequence_number} == @ev;
        push @ev, $j;
    }
    return @ev;
}

# a Response's function_call items: as OpenAI's, each its own ids
sub fc_ok {
    my ($n, @fc) = @_;
    my %ids = map { $_->{call_id} => 1 } @fc;
    return @fc == $n && keys %ids == $n
           && !grep { !($_->{id} =~ /^fc_[0-9A-Za-z]+$/
                        && $_->{call_id} =~ /^call_[0-9A-Za-z]{24}$/
                        && $_->{name} eq 'get_weather'
                        && $_->{arguments} eq $args
                        && $_->{status} eq 'completed') } @fc;
}

for my $name (qw(calls texted)) {
    subtest "$name: /v1/responses, the calls as function_call items" => sub {
        my $n = calls_in($name);
        my ($before) = $m{$name}{text} =~ /^([ab]*)/;

        my $r = rpost($name);
        is($r->{status}, 200, 'a body: 200') or diag($r->{body});
        my @out = @{ $r->{json}{output} // [] };
        my @fc = grep { $_->{type} eq 'function_call' } @out;
        ok(fc_ok($n, @fc), "$n function_call items, fc_ and call_ ids")
            or diag(explain(\@out));
        if (length $before) {
            is($out[0]{type} . ':' . $out[0]{content}[0]{text},
               "message:$before", "the text before them a message first");
        } else {
            is(scalar @out, $n, 'no message: calls alone');
        }
        is($r->{json}{status}, 'completed', 'status completed');
        is($r->{json}{usage}{output_tokens}, $m{$name}{n},
           "usage: the $m{$name}{n} tokens");
        is($r->{json}{tools}[0]{name}, 'get_weather', 'the tools said back');

        my $st = rpost($name, stream => JSON::PP::true);
        is($st->{status}, 200, 'streamed: 200');
        my @ev = rsp_events($st->{body});
        ok(@ev, 'named events, numbered without a gap')
            or diag($st->{body});
        my $last = $ev[-1] // {};
        is($last->{type}, 'response.completed', 'response.completed last');
        my @sfc = grep { $_->{type} eq 'function_call' }
                  @{ $last->{response}{output} // [] };
        ok(fc_ok($n, @sfc), 'its output: the calls') or diag(explain($last));
        my $first = length $before ? 1 : 0;
        my $ok = 1;
        for my $k (0 .. $n - 1) {
            my $i = $first + $k;
            my @e = grep { ($_->{output_index} // -1) == $i
                           && $_->{type} =~ /output_item|function_call/ }
                    @ev;
            $ok &&= @e == 4
                    && $e[0]{type} eq 'response.output_item.added'
                    && $e[0]{item}{type} eq 'function_call'
                    && $e[0]{item}{arguments} eq ''
                    && $e[1]{type} eq 'response.function_call_arguments.delta'
                    && $e[1]{item_id} eq $e[0]{item}{id}
                    && $e[1]{delta} eq $args
                    && $e[2]{type} eq 'response.function_call_arguments.done'
                    && $e[2]{arguments} eq $args
                    && $e[2]{name} eq 'get_weather'
                    && $e[3]{type} eq 'response.output_item.done'
                    && $e[3]{item}{status} eq 'completed'
                    && $e[3]{item}{call_id}
                       eq $last->{response}{output}[$i]{call_id};
        }
        ok($ok, 'each call: added, arguments delta and done, item done, '
                . 'at its output_index') or diag(explain(\@ev));
        my $text = join '', map { $_->{delta} }
                   grep { $_->{type} eq 'response.output_text.delta' } @ev;
        is($text, $before, 'the text before them streamed as text');
    };
}

subtest '/v1/responses: after a call, choices, refusals' => sub {
    my $r = rpost('calls', input => [
        { role => 'user', content => 'Paris?' },
        { type => 'function_call', call_id => 'call_1',
          name => 'get_weather', arguments => $args },
        { type => 'function_call_output', call_id => 'call_1',
          output => '{"sky":"clear"}' }]);
    is($r->{status}, 200, 'a function_call and its output in the input')
        or diag($r->{body});

    $r = rpost('calls', parallel_tool_calls => JSON::PP::false);
    is(scalar(grep { $_->{type} eq 'function_call' }
              @{ $r->{json}{output} // [] }), 1,
       'parallel_tool_calls false: the first call only');

    $r = rpost('calls', tool_choice => 'none');
    is($r->{json}{output}[0]{content}[0]{text}, $m{calls}{text},
       'tool_choice none: the text');
    is($r->{json}{tool_choice}, 'none', '... said back');

    $r = rpost('calls', tools => [{ type => 'web_search' }]);
    is($r->{status}, 400, 'a web_search tool: 400');
    is($r->{json}{error}{param}, 'tools[0].type', '... naming it');

    $r = rpost('calls', input => [
        { type => 'function_call_output', call_id => 'call_9',
          output => 'x' }]);
    is($r->{status}, 400, 'an output of no call: 400');
};

my $node = (grep { -x "$_/node" } split /:/, $ENV{PATH} // '')[0];

SKIP: {
    skip 'node or t/node/node_modules/openai is missing (make test '
         . 'installs them)', 2
        unless $node && -f "$REPO/t/node/node_modules/openai/package.json";

    my ($rc, $out) = Fairgate::Test::run_cmd('timeout', '120',
        "$node/node", "$REPO/t/node/tools.mjs", $s->url('/v1'), 'calls');
    is($rc, 0, 'node t/node/tools.mjs exits 0') or diag($out);
    like($out, qr/^tools: ok finish=tool_calls \d+ calls/m,
         'the openai package reads the calls');
    like($out, qr/^tools stream: ok chunks=\d+ finish=tool_calls \d+ calls/m,
         'and accumulates them from the stream');
    note($out);
}

SKIP: {
    skip 'node or t/node/node_modules/ai is missing (make test installs '
         . 'them)', 3
        unless $node && -f "$REPO/t/node/node_modules/ai/package.json";

    my ($rc, $out) = Fairgate::Test::run_cmd('timeout', '120',
        "$node/node", "$REPO/t/node/tools-aisdk.mjs", $s->url('/v1'),
        'calls');
    is($rc, 0, 'node t/node/tools-aisdk.mjs exits 0') or diag($out);
    like($out, qr/^ai generateText tools: ok finish=tool-calls \d+ calls/m,
         'the AI SDK\'s generateText reads the calls, input checked');
    like($out, qr/^ai streamText tools: ok parts=\d+ finish=tool-calls /m,
         'and streamText from the stream');
    note($out);
}

SKIP: {
    skip 'node or t/node/node_modules/{openai,ai} is missing (make test '
         . 'installs them)', 7
        unless $node && -f "$REPO/t/node/node_modules/openai/package.json"
               && -f "$REPO/t/node/node_modules/ai/package.json";

    my ($rc, $out) = Fairgate::Test::run_cmd('timeout', '120',
        "$node/node", "$REPO/t/node/responses-tools.mjs", $s->url('/v1'),
        'calls');
    is($rc, 0, 'node t/node/responses-tools.mjs exits 0') or diag($out);
    like($out, qr/^responses tools: ok \d+ calls/m,
         'openai: responses.create() reads the function_call items');
    like($out, qr/^responses tools follow-up: ok/m,
         '... and takes them back with their function_call_output');
    like($out, qr/^responses tools stream: ok events=\d+ \d+ calls/m,
         'responses.stream() assembles them from the events');
    like($out, qr/^ai generateText responses tools: ok finish=tool-calls/m,
         'the AI SDK\'s generateText on the Responses API reads the calls');
    like($out, qr/^ai streamText responses tools: ok /m,
         'and streamText');
    like($out, qr/^ai responses tools two steps: ok steps=2/m,
         'a second step sends the call and its result back');
    note($out);
}

is($s->stop, 0, 'nginx exits cleanly');
unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/,
       'no alert, crit or emerg in the log');
$_->[1]->stop for @engines;

done_testing();
