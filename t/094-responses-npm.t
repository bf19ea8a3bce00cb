#!/usr/bin/env perl

# Real clients of the Responses API against local mode: the openai npm
# package's responses.create() (not streamed, streamed, responses.stream(),
# a refusal read as an APIError) and the AI SDK's generateText() and
# streamText() on createOpenAI({ baseURL })(model), which calls
# /v1/responses; t/node/responses.mjs is the client, fairgate-engine on
# stories260K the engine.  Skips, saying why, without node, the packages
# (t/node/node_modules: make test installs them) or the model.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Test::More;

use Fairgate::Test qw(:DEFAULT gateway $REPO node_bin node_missing);
use Fairgate::Engine qw(wait_attached);


my $why = node_missing(qw(openai ai @ai-sdk/openai));
plan skip_all => $why if $why;
my $node = node_bin();

plan skip_all => "no $Fairgate::Engine::MODEL"
    unless -f $Fairgate::Engine::MODEL;


my $e = Fairgate::Engine->new(backend => 'cpu');
$e->start;
my $s = gateway(engines => [['stories', $e, 'dead_after=1s']], workers => 1,
                user => '$http_authorization');
ok(wait_attached($s), 'the worker attached to the engine');

my ($rc, $out) = Fairgate::Test::run_cmd('timeout', '120', $node,
    "$REPO/t/node/responses.mjs", $s->url('/v1'), 'stories260K');

is($rc, 0, 'node t/node/responses.mjs exits 0')
    or diag("its output:\n$out\n" . $s->log_tail);
like($out, qr/^responses: ok status=\w+ tokens=\d+ text="/m,
     'openai: responses.create() answers a Response');
like($out, qr/^responses stream: ok events=\d+ last=response\.\w+/m,
     'and streams it, numbered, the same text');
like($out, qr/^responses stream method: ok/m,
     'responses.stream() reads the same stream');
like($out, qr/^responses refused: ok/m,
     'previous_response_id: an APIError 400 naming it');
like($out, qr/^ai generateText: ok finish=\w+ tokens=\d+ text="/m,
     'AI SDK: generateText() on createOpenAI({ baseURL })(model)');
like($out, qr/^ai streamText: ok parts=\d+/m,
     'AI SDK: streamText(), the same text');
like($out, qr/^ai conversation: ok/m,
     'AI SDK: a conversation goes on with store: false, and an item '
     . 'reference is refused saying so');
like($out, qr/^ai refused: ok/m,
     'AI SDK: previousResponseId refused, saying nothing is stored');
note($out);

my $st = $s->status_json->{zones}[0] // {};
cmp_ok($st->{tokens_out} // 0, '>', 0, 'the zone metered them');

is($s->stop, 0, 'nginx exits cleanly');
unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');
$e->stop;

done_testing();
