#!/usr/bin/env perl

# Hostile clients against drop-in mode (a mock upstream): the cases of
# t/023-hostile-local.t (t/lib/Fairgate/Hostile.pm) where the gateway
# reads the body itself before proxying it: malformed, deep, oversized
# and mistyped bodies, invalid UTF-8 and NUL, lying framing, oversized
# headers, slow and half-closed clients, streams dropped by the dozen;
# each a clean error or a clean close, the workers alive, the zone idle
# afterwards, every tenant served.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use JSON::PP ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test;
use Fairgate::MockUpstream;
use Fairgate::Hostile qw($CHAT $CMPL $MAX_BODY $SERVER_CONF);

my $J = JSON::PP->new->canonical;

my $up = Fairgate::MockUpstream->new;
my $UP = $up->addr;

my $s = Fairgate::Test::Server->new(
    workers => 2,
    http_config => <<"END",
    fairgate_zone zone=api:1m max_tenants=100 inflight=8;
END
    config => $SERVER_CONF . <<"END");
    location /v1/ {
        fairgate zone=api queue=100 timeout=30s;
        fairgate_identity user=\$http_x_user;
        proxy_pass http://$UP;
        proxy_buffering off;
    }
    location /status { fairgate_status; }
END
$s->start or die $s->last_error;

sub wait_idle {
    my ($ok, $st) = $s->status_until(sub {
        my $z = $_[0]{zones} ? $_[0]{zones}[0] : undef;
        $z && $z->{running} == 0 && $z->{waiting} == 0
        && $z->{backlogged} == 0 });

    diag('not idle: ' . $J->encode($st->{zones} ? $st->{zones}[0] : {}))
        unless $ok;
    return $ok ? 1 : 0;
}

my $h = Fairgate::Hostile->new(server => $s, model => 'm', transparent => 1,
                               tenants => [qw(alice bob carol)]);

my $t0 = Time::HiRes::time();

subtest 'malformed, deep, oversized bodies, bad UTF-8, NUL, huge numbers'
    => sub { $h->bodies($CHAT, $MAX_BODY) };

# the fields the gateway reads to estimate a request's tokens; the others
# are the upstream's to judge
subtest 'wrong types in the fields the gateway reads: chat' => sub {
    $h->types('chat', $CHAT,
              [messages => 'array'], [max_tokens => 'integer'],
              [max_completion_tokens => 'integer'], [stream => 'bool'],
              [stream_options => 'object']);
    $h->message_types($CHAT);
};

subtest 'wrong types in the fields the gateway reads: completions' => sub {
    $h->types('completions', $CMPL,
              [prompt => 'prompt'], [max_tokens => 'integer'],
              [stream => 'bool']);
};

subtest 'lying Content-Length, bad chunks, oversized headers'
    => sub { $h->framing($CHAT) };

subtest 'slow and half-closed clients' => sub { $h->slow($CHAT) };

subtest 'streams dropped mid-stream: the zone released' => sub {
    $h->aborts($CHAT, 24);
    ok(wait_idle(), 'the zone idle: none running, waiting or backlogged');
};

subtest 'clients that leave while queued: the queue released' => sub {
    $h->queued_aborts($CHAT, 8, 12, sub {
        $J->decode($s->get('/status')->{body})->{zones}[0] });
};

subtest 'hostile names in X-User' => sub { $h->names($CHAT) };

note(sprintf 'hostile cases: %.1f s', Time::HiRes::time() - $t0);

$h->after($CHAT, $CMPL);

is($s->stop, 0, 'nginx exits cleanly');
$up->stop;

done_testing();
