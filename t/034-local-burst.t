#!/usr/bin/env perl

# Local mode under bursts: a busy submission ring delays a request, it
# never refuses it.  The engine's ring has 2 slots (--sub-slots 2), so
# that bursts of 32 concurrent completions to two workers find it full
# (and its lock held by the other worker) again and again: every request
# is served while the engine lives, none gets 503.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use JSON::PP ();
use Test::More;

use Fairgate::Test qw(:DEFAULT gateway);
use Fairgate::Engine;

plan skip_all => "no $Fairgate::Engine::MODEL"
    unless -f $Fairgate::Engine::MODEL;

my $J = JSON::PP->new->canonical;

my $engine = Fairgate::Engine->new(backend => 'sim',
                                   args => ['--sub-slots', '2',
                                            '--speedup', '100']);
$engine->start;

my $s = gateway(engines => [['stories', $engine]], workers => 2,
                user => '$http_x_user');
my $mark = $s->log_mark;

my $BODY = $J->encode({ model => 'stories260K', max_tokens => 8,
                        messages => [{ role => 'user',
                                       content => 'Once upon a time' }] });

my (%got, $n);
for my $burst (1 .. 6) {
    my @r = $s->concurrent([map {
        +{ method => 'POST', uri => '/v1/chat/completions', body => $BODY,
           headers => ['Content-Type: application/json',
                       'X-User: u' . ($_ % 8)] }
    } 1 .. 32], timeout => 30);

    for my $r (@r) {
        my $code = eval { $J->decode($r->{body})->{error}{code} };
        $got{($r->{status} // 'none') . ($code ? " $code" : '')}++;
        $n++;
    }
}

is($got{200} // 0, $n, "$n requests in bursts of 32: every one served")
    or diag($J->encode(\%got) . "\n" . $s->log_tail(10));
is(join(', ', grep { !/^200$/ } sort keys %got), '',
   'none refused (no 503 engine_overloaded or engine_unavailable)');

my $log = $s->error_log($mark);
unlike($log, qr/submission ring stayed/, 'no request waited out its bound');
unlike($log, qr/\[(?:crit|alert|emerg)\]/, 'nothing logged at crit');

ok(kill(0, $engine->pid), 'the engine lived throughout');

$s->stop;
$engine->stop;

done_testing();
