#!/usr/bin/env perl

# Hostile clients against local mode (the sim engine): malformed, deep,
# oversized and mistyped bodies, invalid UTF-8 and NUL, lying framing,
# oversized headers, slow and half-closed clients, and streams dropped by
# the dozen; each a clean error or a clean close, the workers alive, and
# afterwards the zone idle, the engine's slots and KV blocks free, and
# every tenant served.  The cases: t/lib/Fairgate/Hostile.pm.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use JSON::PP ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test qw(:DEFAULT gateway);
use Fairgate::Engine;
use Fairgate::Hostile qw($CHAT $CMPL $MAX_BODY $SERVER_CONF);

plan skip_all => "no $Fairgate::Engine::MODEL"
    unless -f $Fairgate::Engine::MODEL;

my $J = JSON::PP->new->canonical;

# 2 ms a token: a dropped stream of 2000 tokens would run for 4 s
my $engine = Fairgate::Engine->new(backend => 'sim',
                 args => ['--step-model', 'linear:0.0001,0.002']);
$engine->start;

my $s = gateway(engines => [['stories', $engine, 'dead_after=2s']],
                workers => 2, user => '$http_x_user', server => $SERVER_CONF);

sub wait_until {
    my ($what, $cond) = @_;
    my ($ok, $st) = $s->status_until(sub { $_[0]{engines} && $cond->($_[0]) });

    diag("$what: " . $J->encode($st // {})) unless $ok;
    return $ok ? 1 : 0;
}

ok(wait_until('attached', sub { $_[0]{engines}[0]{attached} }),
   'the engine is attached');

my $h = Fairgate::Hostile->new(server => $s, model => 'stories260K',
                               tenants => [qw(alice bob carol)]);

my $t0 = Time::HiRes::time();

subtest 'malformed, deep, oversized bodies, bad UTF-8, NUL, huge numbers'
    => sub { $h->bodies($CHAT, $MAX_BODY) };

subtest 'wrong types in every field of a chat request' => sub {
    $h->types('chat', $CHAT,
              [model => 'string'], [messages => 'array'],
              [max_tokens => 'integer'], [max_completion_tokens => 'integer'],
              [stream => 'bool'], [temperature => 'number'],
              [top_p => 'number'], [n => 'integer'], [stop => 'stop'],
              [stream_options => 'object'], [seed => 'integer'],
              [presence_penalty => 'number'],
              [frequency_penalty => 'number'], [user => 'string']);
    $h->message_types($CHAT);
};

subtest 'wrong types in every field of a completions request' => sub {
    $h->types('completions', $CMPL,
              [model => 'string'], [prompt => 'prompt'],
              [max_tokens => 'integer'], [stream => 'bool'],
              [temperature => 'number'], [top_p => 'number'],
              [n => 'integer'], [stop => 'stop'], [echo => 'bool'],
              [seed => 'integer'], [user => 'string']);
};

subtest 'lying Content-Length, bad chunks, oversized headers'
    => sub { $h->framing($CHAT) };

subtest 'slow and half-closed clients' => sub { $h->slow($CHAT) };

subtest 'streams dropped mid-stream: the zone and the engine released'
    => sub {
    $h->aborts($CHAT, 24);
    ok(wait_until('released', sub {
           my ($z, $e) = ($_[0]{zones}[0], $_[0]{engines}[0]{load});
           $z->{running} == 0 && $z->{waiting} == 0 && $e
           && $e->{running} == 0 && $e->{kv_free} == $e->{kv_blocks} }),
       'the zone idle, the engine running none, every KV block free');
};

subtest 'hostile names in X-User' => sub { $h->names($CHAT) };

note(sprintf 'hostile cases: %.1f s', Time::HiRes::time() - $t0);

$h->after($CHAT, $CMPL);

is($s->stop, 0, 'nginx exits cleanly');
$engine->stop;

done_testing();
