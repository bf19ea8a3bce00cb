#!/usr/bin/env perl

# OIT in local mode: the overload signal is the engine's KV cache, as the
# zone reserves it for requests in flight.  The engine (sim backend) has
# 8 blocks of 16 positions; one request reserves 5 of them, so one in
# flight takes the KV use over fairgate_oit's overload=0.5.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use JSON::PP ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test qw(:DEFAULT gateway);
use Fairgate::Engine;

plan skip_all => "no $Fairgate::Engine::MODEL"
    unless -f $Fairgate::Engine::MODEL;

my $J = JSON::PP->new->canonical;

# 40 tokens of 40 ms: a request holds the KV for about 1.6 s
my $engine = Fairgate::Engine->new(
    backend => 'sim',
    args => ['--kv-blocks', '8', '--max-batch', '8',
             '--step-model', 'linear:0.0001,0.04']);
$engine->start;

my $s = gateway(engines => [['stories', $engine]], workers => 2,
                zone => 'policy=wsc', user => '$http_x_user app=chat',
                v1 => "        fairgate_oit on overload=0.5 user_rpm=2;\n");


sub until_status {
    my ($cond, $what) = @_;
    my ($ok, $st) = $s->status_until($cond);

    fail("status never showed $what") unless $ok;
    diag($J->encode($st // {})) unless $ok;
    return $st;
}


my $body = $J->encode({ model => 'stories260K', max_tokens => 40,
                        messages => [{ role => 'user',
                                       content => 'Tell me a story' }] });


sub headers {
    my ($user, $interaction, $stage, $stages) = @_;
    return ['Content-Type: application/json', "X-User: $user",
            defined $interaction
                ? ("X-Fairgate-Interaction: $interaction",
                   "X-Fairgate-Stage: $stage", "X-Fairgate-Stages: $stages")
                : ()];
}


my $CHAT = { method => 'POST', uri => '/v1/chat/completions',
             body => $body };


sub chat {
    return $s->request($CHAT, headers => headers(@_));
}


until_status(sub { $_[0]{engines}[0]{attached} }, 'the engine attached');

# not overloaded: one request at a time leaves the KV below half
is(chat('agent', 'plan', 0, 2)->{status}, 200, 'agent opens "plan"');
is(chat('agent', "side-$_", 0, 1)->{status}, 200,
   "agent opens side-$_, over its limit, not overloaded") for 1 .. 2;

my $z = $s->status_json->{zones}[0];
ok(!$z->{overloaded}, 'the zone was not overloaded');
is($z->{interactions}{throttled}, 0, 'nobody was throttled');

# a long request in flight holds over half the KV
my $bg = $s->send_later($CHAT, headers => headers('bg'));
$z = until_status(sub { $_[0]{zones}[0]{running} >= 1 },
                  'a request in flight')->{zones}[0];
cmp_ok($z->{inflight}{tokens}, '>=', 64, 'it reserves half the KV or more')
    or diag($J->encode($z->{inflight}));

my $res = chat('agent', 'fresh', 0, 1);
is($res->{status}, 429, 'overloaded: a new interaction over the limit '
                        . 'is throttled');
like($res->{body}, qr/overloaded, and user agent has reached its limit/,
     'and told why');

$res = chat('agent', 'plan', 1, 2);
is($res->{status}, 200, 'the open interaction goes on, over the limit');
like($res->{body}, qr/"chat\.completion"/, 'with a completion');

is($s->read_later($bg)->{status}, 200, 'the long request is served');

$z = $s->status_json->{zones}[0];
ok($z->{overloaded}, 'the zone saw the overload');
is($z->{interactions}{completed}, 3, 'plan and the sides completed');
is($z->{interactions}{throttled}, 1, 'one was throttled');
is($z->{interactions}{open}, 0, 'none is open');

is($s->stop, 0, 'nginx exits cleanly');
unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');

done_testing();
