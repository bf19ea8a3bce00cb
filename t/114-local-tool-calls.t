#!/usr/bin/env perl

# Tool calls read from a model's answer, end to end: models generated
# with seeded random weights (fairgate-gguf-gen) and a tokenizer of seven
# tokens, one of which is a whole call of get_weather, in the JSON form
# or Hermes's <tool_call> block, with a chat template that names that
# family.  The seeds are found here, with the engine's one-shot mode on
# the prompt every request renders: one whose greedy answer is calls
# alone (several), and (Hermes) one whose answer is text, then calls.  Through the gateway: the calls in the body (ids as OpenAI's,
# distinct; name; arguments; content null or the text before them;
# finish_reason tool_calls), streamed as OpenAI's tool-call deltas (id,
# type and name first, then the arguments; the text before them as
# content), parallel_tool_calls false keeping the first, tool_choice
# none and a choice naming another tool leaving the answer as text; and
# the openai npm package reading the calls and accumulating the stream
# (t/node/tools.mjs).

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
                      . qq($args}</tool_call>));

# the family's tokenizer and template: the prompt is "a" whatever the
# request, the family named in a comment (as a template's markers are)
sub tokenizer {
    my ($family) = @_;
    my $tok = {
        version => '1.0',
        model => { type => 'BPE', unk_token => '<unk>', merges => ['a b'],
                   vocab => { '<unk>' => 0, '<s>' => 1, '</s>' => 2,
                              $call{$family} => 3, a => 4, b => 5,
                              ab => 6 } },
        added_tokens => [map { { id => $_->[0], content => $_->[1],
                                 special => JSON::PP::true } }
                         [0, '<unk>'], [1, '<s>'], [2, '</s>']],
        pre_tokenizer => { type => 'ByteLevel',
                           add_prefix_space => JSON::PP::false },
        decoder => { type => 'ByteLevel' },
    };
    my $cfg = { bos_token => '<s>', eos_token => '</s>',
                add_bos_token => JSON::PP::false,
                chat_template => $family eq 'hermes'
                                 ? '{# tools: <tool_call> #}a'
                                 : '{# tools #}a' };

    for ([tok => $tok], [cfg => $cfg]) {
        open my $fh, '>:raw', "$dir/$family.$_->[0].json" or die "$!\n";
        print {$fh} $J->encode($_->[1]);
        close $fh;
    }
}

# the seed's model, its greedy answer to "a" (3 tokens) and their number
sub model {
    my ($family, $seed) = @_;
    my $file = "$dir/$family-$seed.gguf";
    my ($rc, $out) = Fairgate::Test::run_cmd($gen, '-o', $file,
        '--tokenizer-json', "$dir/$family.tok.json",
        '--tokenizer-config', "$dir/$family.cfg.json",
        '--vocab', 7, '--seed', $seed);
    die "fairgate-gguf-gen: $out" if $rc;
    chmod 0644, $file;

    ($rc, $out) = Fairgate::Test::run_cmd($engine, '--model', $file,
                                          '--prompt', 'a', '-n', 3,
                                          '--threads', 1);
    die "fairgate-engine --prompt: $out" if $rc;
    my $text = join '', grep { !/^fairgate-engine: / } split /\n/, $out;
    my ($n) = $out =~ /(\d+) generated/;
    return ($file, $text, $n // 0);
}

# the first seed whose answer matches: the model, its text, its tokens
sub find {
    my ($family, $re) = @_;
    for my $seed (1 .. 80) {
        my ($file, $text, $n) = model($family, $seed);
        return ($file, $text, $n) if $text =~ $re;
    }
    return;
}

tokenizer($_) for qw(json hermes);

my ($cj, $ch) = map { quotemeta $call{$_} } qw(json hermes);
my %m;
@{ $m{calls} }{qw(file text n)} = find('json', qr/^(?:$cj){2,}$/);
@{ $m{hermes} }{qw(file text n)} = find('hermes', qr/^(?:$ch){2,}$/);
@{ $m{texted} }{qw(file text n)} = find('hermes', qr/^[ab]+(?:$ch)+$/);

plan skip_all => 'no seed of 1..80 gives the answers wanted: '
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

for my $name (qw(calls hermes texted)) {
    note("$name: $m{$name}{text}");

    subtest "$name: the calls read, whole and streamed" => sub {
        my $n = calls_in($name);
        my ($before) = $m{$name}{text} =~ /^([ab]*)/;

        my $r = post($name);
        is($r->{status}, 200, '200') or diag($r->{body});
        my $c = $r->{json}{choices}[0];
        is($c->{finish_reason}, 'tool_calls', 'finish_reason tool_calls');
        is($c->{message}{content}, length $before ? $before : undef,
           length $before ? "the text before them: '$before'"
                          : 'content null');
        my @calls = @{ $c->{message}{tool_calls} // [] };
        is(scalar @calls, $n, "$n calls");
        is(scalar(grep { $_->{id} =~ /^call_[0-9A-Za-z]{24}$/ } @calls), $n,
           'ids as OpenAI\'s');
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
            $ok &&= $first && $first->{id} =~ /^call_/
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

    for my $choice ('none', { type => 'function',
                              function => { name => 'local_time' } }) {
        my $what = ref $choice ? 'a choice of another tool' : 'none';
        $r = post('calls', tool_choice => $choice);
        my $c = $r->{json}{choices}[0];
        is($c->{message}{content}, $m{calls}{text}, "$what: the text");
        ok(!$c->{message}{tool_calls}, "$what: no calls");
        is($c->{finish_reason}, 'length', "$what: finish_reason length");
    }
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

is($s->stop, 0, 'nginx exits cleanly');
unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/,
       'no alert, crit or emerg in the log');
$_->[1]->stop for @engines;

done_testing();
