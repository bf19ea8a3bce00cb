#!/usr/bin/env perl

# Fair queuing in local mode: the engine (sim backend) runs two sequences
# at a time (--max-batch 2), which the zone learns from the engine's
# published status; two tenants flood it, one with twice as many requests
# outstanding.  fcfs serves them in proportion to what they send (2:1),
# vtc 1:1, with the real token counts charged as the tokens arrive.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use JSON::PP ();
use Test::More;

use Fairgate::Test qw(:DEFAULT gateway);
use Fairgate::Engine qw(wait_attached);
use Fairgate::Load qw(share_between two_tenants);

plan skip_all => "no $Fairgate::Engine::MODEL"
    unless -f $Fairgate::Engine::MODEL;

my $TOTAL = 90;
my $WARMUP = 20;

my $J = JSON::PP->new->canonical;

# 16 tokens of 1 ms each (a decode step of 1 ms a sequence): the engine is
# the bottleneck, not the test
my $engine = Fairgate::Engine->new(
    backend => 'sim',
    args => ['--max-batch', '2', '--step-model', 'linear:0.0001,0.001']);
$engine->start;


sub flood {
    my (%o) = @_;
    my $s = gateway(engines => [['stories', $engine]], workers => 2,
                    zone => "policy=$o{policy}", user => '$http_x_user');
    wait_attached($s);

    my $body = $J->encode({ model => 'stories260K', max_tokens => 16,
                            messages => [{ role => 'user',
                                           content => 'Tell me a story' }] });

    my ($na, $nb) = two_tenants($s, what => $o{policy}, body => $body,
        total => $TOTAL, warmup => $WARMUP,
        headers => sub { ["X-User: $_[0]", 'Content-Type: application/json'] });

    # the queue and the engine empty when the clients go
    my ($st, $eng);
    my $deadline = time + 10;
    while (time < $deadline) {
        my $all = $J->decode($s->get('/status')->{body});
        ($st, $eng) = ($all->{zones}[0], $all->{engines}[0]{load});
        last if $st->{waiting} == 0 && $st->{running} == 0
                && $eng->{running} == 0 && $eng->{kv_free} == $eng->{kv_blocks};
        select undef, undef, undef, 0.02;
    }
    ok($st->{waiting} == 0 && $st->{running} == 0,
       "$o{policy}: the queue empties") or diag($J->encode($st));
    ok($eng->{running} == 0 && $eng->{kv_free} == $eng->{kv_blocks},
       "$o{policy}: the engine frees every block") or diag($J->encode($eng));
    cmp_ok($st->{tokens_out}, '>=', 16 * $TOTAL,
           "$o{policy}: the zone counted the output tokens");

    is($s->stop, 0, "$o{policy}: nginx exits cleanly");
    unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');

    return ($na, $nb);
}


# each policy: a's share of the answers, within what bounds
for my $c (
    { name => 'fcfs serves in proportion to what each sends',
      policy => 'fcfs', lo => 0.58, hi => 0.75,
      what => 'a, with 6 outstanding, gets about 2/3' },
    { name => 'vtc serves them 1:1',
      policy => 'vtc', lo => 0.42, hi => 0.58, what => 'about half each' },
) {
    subtest $c->{name} => sub {
        my ($a, $b) = flood(policy => $c->{policy});
        share_between("local $c->{policy}", 'a', $a, $b,
                      @$c{qw(lo hi what)});
    };
}

$engine->stop;

done_testing();
