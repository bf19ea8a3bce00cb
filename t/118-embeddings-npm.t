#!/usr/bin/env perl

# Embeddings in local mode with real clients (t/node/embed.mjs): the
# official openai package's embeddings.create() (base64 by default,
# decoded by the package; float; dimensions refused) and the AI SDK's
# embed() and embedMany() (ai, @ai-sdk/openai), against fairgate-engine
# on stories260K behind the fair queue.  Skips, saying why, without node,
# the packages (make test installs them) or the model.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Test::More;

use Fairgate::Test qw(:DEFAULT $REPO gateway node_bin node_missing);
use Fairgate::Engine qw(wait_attached);


my $why = node_missing(qw(openai ai @ai-sdk/openai));
plan skip_all => $why if $why;
my $node = node_bin();

plan skip_all => "no $Fairgate::Engine::MODEL"
    unless -f $Fairgate::Engine::MODEL;

# a cache of floats: the same input's vectors from separate requests are
# compared within 1e-5, which an F16 cache's rounding does not keep
my $e = Fairgate::Engine->new(backend => 'cpu', args => ['--kv-type', 'f32']);
$e->start;
my $s = gateway(engines => [['stories', $e, 'dead_after=1s']]);
ok(wait_attached($s), 'the worker attached to the engine');

my ($rc, $out) = Fairgate::Test::run_cmd('timeout', '120', $node,
    "$REPO/t/node/embed.mjs", $s->url('/v1'), 'stories260K');

is($rc, 0, 'node t/node/embed.mjs exits 0')
    or diag("its output:\n$out\n" . $s->log_tail);
like($out, qr/^openai one: ok width=64 tokens=\d+/m,
     'openai: embeddings.create() of a string');
like($out, qr/^openai many: ok items=4 /m,
     'openai: of several, base64 and float alike, in order');
like($out, qr/^openai dimensions: ok 400/m,
     'openai: dimensions other than the width refused, an APIError');
like($out, qr/^ai embed: ok width=64 /m, 'AI SDK: embed()');
like($out, qr/^ai embedMany: ok embeddings=4 /m, 'AI SDK: embedMany()');
note($out);

is($s->stop, 0, 'nginx exits cleanly');
unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');
$e->stop;

done_testing();
