#!/usr/bin/env perl

# Structured output through real clients against local mode: the openai
# npm package's chat.completions.create() with response_format json_schema
# (streamed and not) and json_object, a refused schema read as an
# APIError, and the AI SDK's generateObject() on the Responses API and on
# chat completions; t/node/structured.mjs is the client, fairgate-engine on
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
    "$REPO/t/node/structured.mjs", $s->url('/v1'), 'stories260K');

is($rc, 0, 'node t/node/structured.mjs exits 0')
    or diag("its output:\n$out\n" . $s->log_tail);
like($out, qr/^json_schema: ok ended=\d+/m,
     'openai: response_format json_schema, each answer validates');
like($out, qr/^json_schema stream: ok/m, 'streamed, the same text');
like($out, qr/^json_object: ok/m, 'json_object: an object');
like($out, qr/^refused: ok/m, 'multipleOf: an APIError 400 naming it');
like($out, qr/^ai generateObject responses: ok object=\{/m,
     'AI SDK: generateObject() on the Responses API');
like($out, qr/^ai generateObject chat: ok object=\{/m,
     'AI SDK: generateObject() on chat completions');

is($s->stop, 0, 'nginx exits cleanly');
unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');
$e->stop;

done_testing();
