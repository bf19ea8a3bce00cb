#!/usr/bin/env perl

# Drop-in metering of the APIs clients use besides chat: the Responses API
# (/v1/responses), embeddings (/v1/embeddings) and Anthropic's Messages API
# (/v1/messages), each streamed and not, against the mock upstream, which
# answers them as the real APIs do.  For each: the access log's
# $fairgate_tokens_in, _out, $fairgate_usage and $fairgate_cached_tokens
# and the zone's counters (the status JSON) are what the upstream reported
# (Anthropic's input is its input_tokens plus the prompt cache's reads and
# writes); the estimate at admission when it reports nothing usable (token
# ids, system blocks); a stream cut mid-way is charged what flowed; usage
# over what the request could use is capped; the limits (tpm) see them, an
# embedding reserving no output; keys come in x-api-key too, and the
# gateway's refusals of /v1/messages are in Anthropic's error shape; the
# pacer paces their streams; and VTC sees a heavy tenant on /v1/messages
# against a light one on chat.
# Real clients too, where t/node has them (make test installs them): the
# openai package's responses and embeddings, Anthropic's SDK's messages,
# streamed and not, its RateLimitError and AuthenticationError from the
# gateway's refusals (t/node/dropin-apis.mjs).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use File::Temp ();
use JSON::PP ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test qw(:DEFAULT gateway keys_file node_bin node_missing
                      run_cmd wait_for);
use Fairgate::Load qw(closed_loop);
use Fairgate::MockUpstream;

my $J = JSON::PP->new->canonical;

my $fault = File::Temp->new;
print {$fault} "none\n";
$fault->flush;

my $up = Fairgate::MockUpstream->new(fault_file => $fault->filename);
my $UP = $up->addr;

my $keys = keys_file(['sk-ant-key', 'anthro', '-', 1, 'tpm=400'],
                     ['sk-emb-key', 'embedder', '-', 1, 'tpm=300'],
                     ['sk-ant-sdk', 'npm', '-', 1],
                     ['sk-ant-tiny', 'tiny', '-', 1, 'tpm=10']);

my $log = q{    log_format apis '$http_x_tag $fairgate_user }
          . q{$fairgate_tokens_in $fairgate_tokens_out $fairgate_usage }
          . q{$fairgate_cached_tokens';} . "\n";

my $s = gateway(user => '$http_x_user', http => $log,
                v1 => "        proxy_buffering off;\n"
                      . "        access_log logs/apis.log apis;\n",
                pass => "proxy_pass http://$UP",
                locations => <<"END");
    location /paced/ {
        fairgate zone=llm queue=100 timeout=30s;
        fairgate_identity user=\$http_x_user;
        fairgate_qoe speed=20;
        fairgate_pace on;
        proxy_buffering off;
        access_log logs/apis.log apis;
        proxy_pass http://$UP/;
    }
    location /k/ {
        fairgate zone=llm queue=100 timeout=30s;
        fairgate_keys $keys;
        proxy_buffering off;
        access_log logs/apis.log apis;
        proxy_pass http://$UP/;
    }
END


# a request tagged TAG: its response and its access-log line's fields
sub ask {
    my ($tag, $uri, $req, @headers) = @_;
    my $body = ref $req ? $J->encode($req) : $req;
    my $r = $s->post($uri, $body,
                     headers => ["X-Tag: $tag",
                                 'Content-Type: application/json',
                                 @headers]);
    my $line;
    wait_for(5, sub {
        ($line) = grep { /^\Q$tag\E / } $s->access_lines('apis.log', 1);
        defined $line;
    });
    my (undef, $user, $in, $out, $usage, $cached) = split ' ', $line // '';
    return ($r, { user => $user // '', in => $in // -1, out => $out // -1,
                  usage => $usage // '', cached => $cached // '',
                  len => length $body });
}

# a user's record in the zone
sub user {
    my ($name) = @_;
    my ($t) = grep { $_->{name} eq $name }
              @{ ($s->status_json->{zones} // [{}])->[0]{users} // [] };
    return $t // {};
}

# in, out, usage and cached tokens ("-": not known)
sub fields {
    join ' ', map { length $_[0]{$_} ? $_[0]{$_} : '-' }
              qw(in out usage cached);
}

my $T = JSON::PP::true;
my @mock = ('X-Mock-Prompt-Tokens: 37', 'X-Mock-Tokens: 5',
            'X-Mock-Cached: 7');


# --- each API, streamed and not: what the upstream reported

my %req = (
    responses => { model => 'm', instructions => 'Be brief.',
                   input => 'Say something.', max_output_tokens => 10 },
    messages  => { model => 'm', max_tokens => 10,
                   system => [{ type => 'text', text => 'Be brief.' }],
                   messages => [{ role => 'user', content => 'Hi.' }] },
);

for my $api (qw(responses messages)) {
    for my $stream (0, 1) {
        my $name = "$api" . ($stream ? ' streamed' : '');
        my $user = "u-$api-$stream";
        my ($r, $l) = ask("$api-$stream", "/v1/$api",
                          { %{ $req{$api} }, ($stream ? (stream => $T) : ()) },
                          "X-User: $user", @mock,
                          'X-Mock-Cache-Write: 3');
        is($r->{status}, 200, "$name: 200");
        is(fields($l), '37 5 reported 7',
           "$name: the log has the upstream's usage, cached tokens too");

        my $u = user($user);
        is(($u->{tokens_in} // -1) . ' ' . ($u->{tokens_out} // -1), '37 5',
           "$name: the user's counters in the zone");

        if ($stream && $api eq 'responses') {
            like($r->{body}, qr/event: response\.completed\n/,
                 "$name: the events passed whole");
        } elsif ($stream) {
            like($r->{body}, qr/event: message_stop\n/,
                 "$name: the events passed whole");
        }
    }
}

my ($r, $l) = ask('emb', '/v1/embeddings',
                  { model => 'm', input => ['one two', 'three'] },
                  'X-User: u-emb', 'X-Mock-Prompt-Tokens: 12');
is($r->{status}, 200, 'embeddings: 200');
is(fields($l), '12 0 reported -',
   'embeddings: the upstream\'s prompt_tokens, no output');
is(user('u-emb')->{tokens_in} // -1, 12, 'embeddings: the zone counts them');

# a body over the 1 MB the gateway keeps: its usage read from its end
($r, $l) = ask('emb-big', '/v1/embeddings',
               { model => 'm', input => ['one', 'two'] },
               'X-User: u-emb-big', 'X-Mock-Prompt-Tokens: 12',
               'X-Mock-Dims: 200000');
cmp_ok(length $r->{body}, '>', 1024 * 1024, 'a body of '
       . length($r->{body}) . ' bytes');
is(fields($l), '12 0 reported -', 'its usage, read from its last bytes');

# chat's cached tokens, from its usage's prompt_tokens_details
for my $stream (0, 1) {
    ($r, $l) = ask("chat-cached-$stream", '/v1/chat/completions',
                   { model => 'm', max_tokens => 5,
                     messages => [{ role => 'user', content => 'a b c' }],
                     ($stream ? (stream => $T, stream_options =>
                                 { include_usage => $T }) : ()) },
                   'X-User: u-chat',
                   'X-Mock-Report: {"prompt_tokens_details":'
                   . '{"cached_tokens":4}}');
    is(fields($l), '6 5 reported 4',
       'chat' . ($stream ? ' streamed' : '')
       . ': prompt_tokens_details.cached_tokens');
}


# --- estimates, when the upstream says nothing usable

($r, $l) = ask('emb-ids', '/v1/embeddings',
               { model => 'm', input => [[1, 2, 3], [4, 5]] },
               'X-User: u-est', 'X-Mock-Report: {"prompt_tokens":"x"}');
is(fields($l), '5 0 estimated -', 'embeddings of token ids: one a token');

($r, $l) = ask('emb-text', '/v1/embeddings',
               { model => 'm', input => ['abcd efgh', 'ijkl'] },
               'X-User: u-est', 'X-Mock-Report: {"prompt_tokens":"x"}');
is(fields($l), '4 0 estimated -', 'embeddings of texts: a quarter of bytes');

($r, $l) = ask('msg-est', '/v1/messages',
               { model => 'm', max_tokens => 10,
                 system => [{ type => 'text', text => '12345678' }],
                 messages => [{ role => 'user', content => [
                     { type => 'text', text => 'abcdefgh' }] }] },
               'X-User: u-est', 'X-Mock-Tokens: 5',
               'X-Mock-Report: {"input_tokens":"x"}');
is("$l->{in} $l->{out} $l->{usage}", '8 5 estimated',
   'messages: system and content blocks estimated, the text counted');


# --- usage over what the request could use is capped (issue 33's checks)

my $BILLION = 1_000_000_000;
for my $stream (0, 1) {
    ($r, $l) = ask("msg-lie-$stream", '/v1/messages',
                   { %{ $req{messages} }, ($stream ? (stream => $T) : ()) },
                   'X-User: u-liar',
                   "X-Mock-Report: {\"output_tokens\":$BILLION}");
    is("$l->{out} $l->{usage}", '10 capped',
       'messages' . ($stream ? ' streamed' : '')
       . ': a billion output tokens capped at max_tokens');

    ($r, $l) = ask("rsp-lie-$stream", '/v1/responses',
                   { %{ $req{responses} }, ($stream ? (stream => $T) : ()) },
                   'X-User: u-liar',
                   "X-Mock-Report: {\"output_tokens\":$BILLION}");
    is("$l->{out} $l->{usage}", '10 capped',
       'responses' . ($stream ? ' streamed' : '')
       . ': capped at max_output_tokens');
}

($r, $l) = ask('emb-lie', '/v1/embeddings', { model => 'm', input => 'x' },
               'X-User: u-liar',
               "X-Mock-Report: {\"prompt_tokens\":$BILLION}");
is("$l->{in} $l->{out} $l->{usage}", ($l->{len} + 32768) . ' 0 capped',
   'embeddings: a billion prompt tokens capped at the body\'s bytes + 32768');

($r, $l) = ask('msg-lie-cached', '/v1/messages', $req{messages},
               'X-User: u-liar-cached',
               "X-Mock-Report: {\"cache_read_input_tokens\":$BILLION}");
is("$l->{in} $l->{cached} $l->{usage}",
   join(' ', ($l->{len} + 32768) x 2, 'capped'),
   'messages: a billion cached tokens capped with the input');
is(user('u-liar-cached')->{cached_tokens} // -1, $l->{len} + 32768,
   'and so in the zone');

ok(user('u-liar')->{tokens_out} < 100, 'the liar\'s tenant was not charged '
   . 'billions');


# --- a stream cut mid-way is charged what flowed (chunked: a close within
# its framing is a broken stream)

seek $fault, 0, 0;
print {$fault} "close\n";
$fault->flush;

($r, $l) = ask('msg-cut', '/v1/messages',
               { %{ $req{messages} }, max_tokens => 20, stream => $T },
               'X-User: u-cut-m', 'X-Mock-Prompt-Tokens: 37',
               'X-Mock-Tokens: 10', 'X-Mock-Token-Delay: 0.01',
               'X-Mock-Chunked: 1');
is("$l->{in} $l->{out}", '37 2',
   'messages cut after two deltas: the input message_start said, 2 out');
like($r->{body},
     qr/event: error\ndata: \{"type":"error","error":\{"type":"api_error"/,
     'messages cut: Anthropic\'s error event ends the stream');
is(user('u-cut-m')->{tokens_out} // -1, 2, 'messages cut: the zone has 2');

($r, $l) = ask('rsp-cut', '/v1/responses',
               { %{ $req{responses} }, max_output_tokens => 20,
                 stream => $T },
               'X-User: u-cut-r', 'X-Mock-Tokens: 10',
               'X-Mock-Token-Delay: 0.01', 'X-Mock-Chunked: 1');
is($l->{out}, 2, 'responses cut after two deltas: 2 out');
is(user('u-cut-r')->{tokens_out} // -1, 2, 'responses cut: the zone has 2');

seek $fault, 0, 0;
print {$fault} "none\n";
$fault->flush;


# --- keys in x-api-key; refusals in Anthropic's shape; tpm limits

my $msg = { model => 'm', max_tokens => 250, stream => $T,
            messages => [{ role => 'user', content => 'Hi.' }] };

($r) = ask('k-nokey', '/k/v1/messages', $msg);
my $e = eval { $J->decode($r->{body}) } // {};
is($r->{status}, 401, 'messages without a key: 401');
is(($e->{type} // '') . ' ' . ($e->{error}{type} // ''),
   'error authentication_error', 'in Anthropic\'s error shape');

($r) = ask('k-chat-nokey', '/k/v1/chat/completions',
           { model => 'm', messages => [{ role => 'user', content => 'x' }] });
$e = eval { $J->decode($r->{body}) } // {};
ok($r->{status} == 401 && !exists $e->{type} && exists $e->{error}{code},
   'chat without a key: OpenAI\'s shape');

($r, $l) = ask('k-m1', '/k/v1/messages', $msg, 'x-api-key: sk-ant-key',
               'X-Mock-Prompt-Tokens: 10', 'X-Mock-Tokens: 20');
is("$r->{status} $l->{user} $l->{in} $l->{out}", '200 anthro 10 20',
   'x-api-key: the key\'s user; the window settles to 30 of 400');

($r, $l) = ask('k-m2', '/k/v1/messages', $msg, 'x-api-key: sk-ant-key',
               'X-Mock-Prompt-Tokens: 300', 'X-Mock-Tokens: 20');
is("$r->{status} $l->{in}", '200 300',
   'a second fits (30 + its estimate); settles to 320 more');

($r) = ask('k-m3', '/k/v1/messages', { %$msg, max_tokens => 100 },
           'x-api-key: sk-ant-key');
$e = eval { $J->decode($r->{body}) } // {};
is($r->{status}, 429, 'the third is over tpm=400 with what the stream used');
is(($e->{type} // '') . ' ' . ($e->{error}{type} // ''),
   'error rate_limit_error', 'a 429 in Anthropic\'s shape');
ok($r->{headers}{'retry-after'}, 'with Retry-After');

($r) = ask('k-bad', '/k/v1/messages', $msg, 'x-api-key: sk-wrong');
$e = eval { $J->decode($r->{body}) } // {};
is("$r->{status} " . ($e->{error}{type} // ''), '401 authentication_error',
   'a wrong x-api-key: 401 authentication_error');

($r) = ask('k-count', '/k/v1/messages/count_tokens',
           { model => 'm', messages => [{ role => 'user', content => 'x' }] });
$e = eval { $J->decode($r->{body}) } // {};
is("$r->{status} " . ($e->{error}{type} // ''), '401 authentication_error',
   'count_tokens without a key: Anthropic\'s shape too');

($r, $l) = ask('k-emb', '/k/v1/embeddings',
               { model => 'm', input => 'word ' x 150 },
               'Authorization: Bearer sk-emb-key');
is("$r->{status} $l->{out}", '200 0',
   'an embedding of ~190 tokens fits tpm=300: no output is reserved');



# --- real clients: what each was told is what the gateway counted

SKIP: {
    my $why = node_missing(qw(openai @anthropic-ai/sdk));
    skip $why, 8 if $why;

    my ($rc, $out) = run_cmd('timeout', '120', node_bin(),
                             "$Fairgate::Test::REPO/t/node/dropin-apis.mjs",
                             $s->url(''));
    is($rc, 0, 'the openai package and Anthropic\'s SDK through the gateway')
        or diag($out);

    for my $name (qw(responses responses-stream embeddings messages
                     messages-stream)) {
        my ($seen) = $out =~ /^\Q$name\E: ok (in=\d+ out=\d+ cached=\S+)$/m;
        my $line;
        wait_for(5, sub {
            ($line) = grep { /^npm-\Q$name\E / }
                      $s->access_lines('apis.log', 1);
            defined $line;
        });
        my (undef, undef, $in, $o, $usage, $cached) = split ' ', $line // '';
        is("in=" . ($in // '') . " out=" . ($o // '') . ' cached='
           . (length($cached // '') ? $cached : '-') . ' ' . ($usage // ''),
           ($seen // 'none') . ' reported',
           "$name: the log says what the client was told");
    }

    like($out, qr/^messages-429: ok 429 rate_limit_error$/m,
         'Anthropic\'s SDK raises RateLimitError from a 429 of the gateway');
    like($out, qr/^messages-401: ok 401 authentication_error$/m,
         'and AuthenticationError from a 401');
}



# --- the pacer knows their text events: n tokens sent at once by the
# upstream, paced at 20 a second, take (n-1)/20 s at least

for my $api (qw(responses messages)) {
    my $t0 = Time::HiRes::time();
    ($r, $l) = ask("paced-$api", "/paced/v1/$api",
                   { %{ $req{$api} }, stream => $T }, 'X-User: u-paced',
                   'X-Mock-Tokens: 9');
    my $took = Time::HiRes::time() - $t0;
    is("$r->{status} $l->{out}", '200 9', "$api paced: 9 tokens");
    cmp_ok($took, '>=', 8 / 20 - 0.05, "$api paced: in $took s");
}

is($s->stop, 0, 'nginx exits cleanly');
unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');


# --- VTC: a heavy tenant on /v1/messages, a light one on chat

my $v = Fairgate::Test::Server->new(
    http_config => '    fairgate_zone zone=vtc:16m inflight=1 policy=vtc;',
    config => <<"END");
    location /v1/ {
        fairgate zone=vtc queue=100 timeout=30s;
        fairgate_identity user=\$http_x_user;
        proxy_buffering off;
        proxy_pass http://$UP;
    }
    location /status { fairgate_status; }
END
$v->start or die $v->last_error;

my $prompt = [{ role => 'user', content => 'Tell me.' }];
my @done = closed_loop(port => $v->port, total => 60, timeout => 60,
    tenants => [
        { name => 'heavy', concurrency => 3,
          request => { method => 'POST', uri => '/v1/messages',
                       body => $J->encode({ model => 'm', max_tokens => 64,
                                            stream => $T,
                                            messages => $prompt }),
                       headers => ['X-User: heavy', 'X-Mock-Tokens: 40',
                                   'X-Mock-Token-Delay: 0.0005'] } },
        { name => 'light', concurrency => 3,
          request => { method => 'POST', uri => '/v1/chat/completions',
                       body => $J->encode({ model => 'm', max_tokens => 64,
                                            messages => $prompt }),
                       headers => ['X-User: light', 'X-Mock-Tokens: 4',
                                   'X-Mock-Delay: 0.02'] } },
    ]);

is(scalar(grep { $_->{status} != 200 } @done), 0, 'vtc: every answer 200');
my %n;
$n{$_->{tenant}}++ for @done[10 .. $#done];
cmp_ok($n{light} // 0, '>', 3 * ($n{heavy} // 0),
       "vtc: light's chat served more than 3x heavy's messages "
       . "(light $n{light}, heavy " . ($n{heavy} // 0) . ')');

my ($ok, $st) = $v->status_until(sub {
    ($_[0]{zones} // [{}])->[0]{running} == 0 });
my %u = map { $_->{name} => $_ } @{ $st->{zones}[0]{users} // [] };
my ($ch, $cl) = map { $u{$_}{counter} // 0 } qw(heavy light);
cmp_ok(abs($ch - $cl), '<', 0.5 * ($ch + $cl),
       "vtc: their service counters are close (heavy $ch, light $cl)");
# the loop's end leaves streams in flight, cut and charged what flowed:
# each stream that ended was charged its 40 tokens, at least
my $heavy_done = grep { $_->{tenant} eq 'heavy' } @done;
cmp_ok($u{heavy}{tokens_out} // 0, '>=', 40 * $heavy_done,
       "vtc: heavy was charged each of its $heavy_done streams' 40 tokens");

is($v->stop, 0, 'the vtc gateway exits cleanly');
$up->stop;

done_testing();
