#!/usr/bin/env perl

# LangChain's OpenAI integration (@langchain/openai: ChatOpenAI,
# OpenAIEmbeddings) against the gateway, t/node/langchain.mjs the client.
# In local mode, fairgate-engine on stories260K and on a model whose
# greedy answer is tool calls (seeded random weights, a token that is a
# whole call of get_weather, as t/114's): invoke() and stream() (the same
# text, streamed in pieces), n = 2, withStructuredOutput() with a JSON
# schema and a zod one (json_schema: an object that validates; zod's
# int(), ISO date and bounded number), bindTools() (the calls in
# tool_calls, whole and streamed, strict with tool_choice "any", and
# taken back as tool messages), the Responses API (text and calls),
# embedDocuments() and embedQuery().  In drop-in mode, an upstream that
# answers as OpenAI does (Fairgate::MockUpstream): invoke(), stream() and
# the upstream's 429.  In both, the usage LangChain gives
# (usage_metadata, generate()'s tokenUsage) is what the gateway counted
# (its access log), and the gateway's 401 (no such key) and 429 (over the
# key's limit) are LangChain's errors with the gateway's message.  Skips,
# saying why, without node 20 or later, the packages (t/node/node_modules:
# make test installs them) or the model.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use File::Temp ();
use JSON::PP ();
use Test::More;

use Fairgate::Test qw(:DEFAULT $REPO gateway keys_file node_bin node_missing
                      run_cmd wait_for);
use Fairgate::Engine qw(wait_attached);
use Fairgate::MockUpstream;


my $why = node_missing(qw(@langchain/openai @langchain/core zod));
plan skip_all => $why if $why;
my $node = node_bin();
my (undef, $version) = run_cmd($node, '-p', 'process.versions.node');
chomp $version;
plan skip_all => "node $version: LangChain wants 20 or later"
    unless $version =~ /^(\d+)\./ && $1 >= 20;

plan skip_all => "no $Fairgate::Engine::MODEL"
    unless -f $Fairgate::Engine::MODEL;

my $gen = "$Fairgate::Test::BUILD/fairgate-gguf-gen";
my $engine = "$Fairgate::Test::BUILD/fairgate-engine";
plan skip_all => "$gen or $engine is missing: run make"
    unless -x $gen && -x $engine;

my $J = JSON::PP->new->canonical->utf8;

my $dir = File::Temp::tempdir('fairgate-lc-XXXXXX', TMPDIR => 1,
                              CLEANUP => !$ENV{FAIRGATE_KEEP});
chmod 0755, $dir;


# --- a model whose greedy answer to any chat is calls of get_weather: a
# vocabulary of seven tokens, one of them a whole call, and the first
# seed whose answer is calls alone

my $call = '{"name":"get_weather","arguments":{"city":"Paris"}}';

sub tool_model {
    my @vocab = ('<unk>', '<s>', '</s>', $call, 'a', 'b', 'ab');
    my %id = map { $vocab[$_] => $_ } 0 .. $#vocab;
    my $tok = {
        version => '1.0',
        model => { type => 'BPE', merges => ['a b'], vocab => \%id,
                   unk_token => '<unk>' },
        added_tokens => [map { { id => $_, content => $vocab[$_],
                                 special => JSON::PP::true } } 0 .. 2],
        pre_tokenizer => { type => 'ByteLevel',
                           add_prefix_space => JSON::PP::false },
        decoder => { type => 'ByteLevel' },
    };
    my $cfg = { bos_token => '<s>', eos_token => '</s>',
                add_bos_token => JSON::PP::false,
                chat_template => '{# tools #}a' };
    for ([tok => $tok], [cfg => $cfg]) {
        open my $fh, '>:raw', "$dir/$_->[0].json" or die "$!\n";
        print {$fh} $J->encode($_->[1]);
        close $fh;
    }

    for my $seed (1 .. 120) {
        my $file = "$dir/calls-$seed.gguf";
        my ($rc, $out) = run_cmd($gen, '-o', $file,
                                 '--tokenizer-json', "$dir/tok.json",
                                 '--tokenizer-config', "$dir/cfg.json",
                                 '--vocab', scalar @vocab, '--seed', $seed);
        die "fairgate-gguf-gen: $out" if $rc;
        chmod 0644, $file;
        ($rc, $out) = run_cmd($engine, '--model', $file, '--prompt', 'a',
                              '-n', 3, '--threads', 1);
        die "fairgate-engine --prompt: $out" if $rc;
        my $text = join '', grep { !/^fairgate-engine: / } split /\n/, $out;
        return $file if $text =~ /^(?:\Q$call\E){1,3}$/;
    }
    return undef;
}

my $calls = tool_model();
plan skip_all => 'no seed of 1..120 gives a model answering calls alone'
    unless $calls;


# --- the gateway's access log: each request's tag and usage

my $keys = keys_file(['sk-lc-tiny', 'tiny', '-', 1, 'tpm=10']);
my $log = q{    log_format lc '$http_x_tag $fairgate_tokens_in }
          . q{$fairgate_tokens_out $fairgate_usage';} . "\n";

# LOCATION's /k/ with the keys, passed on as /v1/ is
sub keyed {
    my ($pass) = @_;
    return <<"END";
    location /k/ {
        fairgate zone=llm queue=100 timeout=30s;
        fairgate_keys $keys;
        access_log logs/lc.log lc;
        $pass;
    }
END
}

# the access-log line of the request tagged lc-NAME: in, out, usage
sub logged {
    my ($s, $name) = @_;
    my $line;
    wait_for(5, sub {
        ($line) = grep { /^lc-\Q$name\E / } $s->access_lines('lc.log', 1);
        defined $line;
    });
    my (undef, @f) = split ' ', $line // '';
    return @f;
}

# what t/node/langchain.mjs said of each step: the gateway's log the same
sub check_usage {
    my ($s, $out, @names) = @_;
    for my $name (@names) {
        my ($seen) = $out =~ /^\Q$name\E: ok .*?(in=\d+ out=\d+)/m;
        my ($in, $o, $usage) = logged($s, $name =~ s/ /-/gr);
        is("in=" . ($in // '') . ' out=' . ($o // '') . ' '
           . ($usage // ''), ($seen // 'none') . ' reported',
           "$name: the usage LangChain gives is the gateway's");
    }
}

# the message of the gateway's refusal: LangChain's error has it
sub check_refusals {
    my ($s, $out, $model) = @_;
    for (['401', 'sk-lc-wrong', 'AUTHENTICATION'],
         ['429', 'sk-lc-tiny', 'RATE_LIMIT'])
    {
        my ($code, $key, $lc) = @$_;
        my $r = $s->post('/k/v1/chat/completions',
                         $J->encode({ model => $model, messages => [
                             { role => 'user', content => 'Once' }] }),
                         headers => ['Content-Type: application/json',
                                     "Authorization: Bearer $key"]);
        my $msg = (eval { $J->decode($r->{body}) } // {})->{error}{message};
        # the same words, the numbers the request's own
        my $said = quotemeta(JSON::PP->new->allow_nonref
                             ->encode($msg // 'none')) =~ s/\d+/\\d+/gr;
        is($r->{status}, $code, "the gateway answers $code")
            or diag($r->{body});
        like($out, qr/^$code: ok $code MODEL_$lc message=$said$/m,
             "LangChain's MODEL_$lc error with the gateway's message");
    }
}


# --- local mode

my $e = Fairgate::Engine->new(backend => 'cpu', args => ['--kv-type', 'f32']);
$e->start;
my $ec = Fairgate::Engine->new(backend => 'cpu', model => $calls);
$ec->start;
my $s = gateway(engines => [['stories', $e, 'dead_after=1s id=stories260K'],
                            ['calls', $ec, 'dead_after=1s id=calls']],
                workers => 1, user => '$http_authorization', http => $log,
                v1 => "        access_log logs/lc.log lc;\n",
                locations => keyed('fairgate_engine_pass'));
ok(wait_attached($s, 2), 'the worker attached to the engines');

my ($rc, $out) = run_cmd('timeout', '180', $node,
                         "$REPO/t/node/langchain.mjs", 'local', $s->url(''),
                         'stories260K', 'calls');
is($rc, 0, 'local: node t/node/langchain.mjs exits 0')
    or diag("its output:\n$out\n" . $s->log_tail);
note($out);

like($out, qr/^invoke: ok in=\d+ out=\d+ finish=\w+ text="/m,
     'ChatOpenAI.invoke(): a text, finish_reason, usage_metadata');
like($out, qr/^stream: ok in=\d+ out=\d+ pieces=\d+$/m,
     'stream(): the same text in pieces, usage_metadata from the stream');
like($out, qr/^n: ok choices=2 /m, 'n = 2: generate() has both choices');
like($out, qr/^structured: ok object=\{/m,
     'withStructuredOutput(json_schema): an object of the schema');
like($out, qr/^structured zod: ok object=\{/m,
     '... of a zod schema: int() bounded at 2^53 - 1, a date\'s pattern, '
     . 'a number in 0..1');
like($out, qr/^tools: ok calls=\d+ /m,
     'bindTools(): the calls in tool_calls, ids as OpenAI\'s');
like($out, qr/^tools stream: ok calls=\d+ /m, '... and from the stream');
like($out, qr/^tools required: ok calls=\d+ /m,
     '... strict, tool_choice "any" sent as required');
like($out, qr/^tools results: ok /m,
     '... taken back as ToolMessages, the gateway answers');
like($out, qr/^responses: ok /m,
     'useResponsesApi: the same text through /v1/responses');
like($out, qr/^responses tools: ok calls=\d+ /m,
     '... and bindTools(): the function_call items in tool_calls');
like($out, qr/^embeddings: ok vectors=2 width=64$/m,
     'OpenAIEmbeddings: embedDocuments() and embedQuery() agree');
check_usage($s, $out, 'invoke', 'stream', 'n', 'tools', 'tools stream',
            'tools required', 'tools results', 'responses',
            'responses tools');
my ($in, $o) = logged($s, 'embeddings');
ok(($in // 0) > 0 && defined $o && $o == 0,
   'embeddings: input tokens counted, no output');
check_refusals($s, $out, 'stories260K');
like($out, qr/^all: ok$/m, 'no request left for another host');

is($s->stop, 0, 'nginx exits cleanly');
unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');
$e->stop;
$ec->stop;


# --- drop-in mode

my $up = Fairgate::MockUpstream->new;
my $UP = $up->addr;
$s = gateway(user => '$http_authorization', http => $log,
             v1 => "        proxy_buffering off;\n"
                   . "        access_log logs/lc.log lc;\n",
             pass => "proxy_pass http://$UP",
             locations => keyed("proxy_pass http://$UP/"));

($rc, $out) = run_cmd('timeout', '120', $node, "$REPO/t/node/langchain.mjs",
                      'dropin', $s->url(''));
is($rc, 0, 'drop-in: node t/node/langchain.mjs exits 0')
    or diag("its output:\n$out\n" . $s->log_tail);
note($out);

like($out, qr/^invoke: ok in=\d+ out=5 finish=\w+ text="(tok ){5}"$/m,
     'drop-in invoke(): the upstream\'s text and usage');
like($out, qr/^stream: ok in=\d+ out=5 pieces=5$/m,
     'drop-in stream(): a piece a chunk, the usage of the last');
like($out, qr/^upstream 429: ok 429 /m,
     'the upstream\'s 429: LangChain\'s MODEL_RATE_LIMIT');
check_usage($s, $out, 'invoke', 'stream');
check_refusals($s, $out, 'm');

is($s->stop, 0, 'nginx exits cleanly');
unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');
$up->stop;

done_testing();
