#!/usr/bin/env perl

# Fair queuing in front of an upstream that serves one request at a time
# (inflight=1): two tenants flood it, one with twice as many requests
# outstanding as the other.  fcfs serves them in proportion to what they
# send (2:1); vtc serves them 1:1, and 1:2 when the lighter one has twice
# the weight.  Two workers share the queue, so dispatches cross workers.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use JSON::PP ();
use Test::More;

use Fairgate::Test qw(:DEFAULT keys_file);
use Fairgate::MockUpstream;
use Fairgate::Load qw(share_between two_tenants);


my $TOTAL = 90;     # answers per run
my $WARMUP = 20;    # the first answers, before both queues are full
my $DELAY = 0.02;   # seconds the upstream takes per request

my $up = Fairgate::MockUpstream->new;


sub flood {
    my (%o) = @_;
    my $keys = keys_file(['key-a', 'a', '-', $o{wa}],
                         ['key-b', 'b', '-', $o{wb}]);

    my $s = Fairgate::Test::Server->new(
        workers => 2,
        http_config => "    fairgate_zone zone=llm:16m inflight=1 "
                       . "policy=$o{policy};",
        config => <<"END");
    location /v1/ {
        fairgate zone=llm queue=100 timeout=30s;
        fairgate_keys $keys;
        proxy_pass http://${\ $up->addr };
    }
    location /status { fairgate_status; }
END

    $s->start or die $s->last_error;
    $up->clear_log;

    my $body = '{"model":"m","max_tokens":4,'
               . '"messages":[{"role":"user","content":"hi"}]}';

    my ($na, $nb, $done) = two_tenants($s, what => $o{policy}, body => $body,
        total => $TOTAL, warmup => $WARMUP,
        headers => sub { ["Authorization: Bearer key-$_[0]",
                          'Content-Type: application/json',
                          "X-Mock-Delay: $DELAY"] });

    # until the clients go: then nginx gives up the request in flight,
    # which the mock finishes anyway, and lets the next one in
    is($up->max_concurrency($done->[-1]{time}), 1,
       "$o{policy}: one request at a time reached the upstream");

    # the requests given up at the end leave the queue
    my $deadline = time + 10;
    my $st;
    while (time < $deadline) {
        $st = eval { JSON::PP->new->decode($s->get('/status')->{body})
                     ->{zones}[0] };
        last if $st && $st->{waiting} == 0 && $st->{running} == 0;
        select undef, undef, undef, 0.02;
    }
    ok($st && $st->{waiting} == 0 && $st->{running} == 0
       && $st->{inflight}{running} == 0,
       "$o{policy}: the queue empties when the clients go")
        or diag(JSON::PP->new->canonical->encode($st // {}));
    cmp_ok($st->{handoffs} // 0, '>', 0,
           "$o{policy}: workers dispatched each other's requests");

    is($s->stop, 0, "$o{policy}: nginx exits cleanly");
    unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');

    return ($na, $nb);
}


# each policy, b's weight: whose share of the answers, within what bounds
for my $c (
    { name => 'fcfs serves in proportion to what each sends',
      label => 'fcfs', policy => 'fcfs', wb => 1, who => 'a',
      lo => 0.58, hi => 0.75, what => 'a, with 6 outstanding, gets about 2/3' },
    { name => 'vtc serves them 1:1',
      label => 'vtc', policy => 'vtc', wb => 1, who => 'a',
      lo => 0.44, hi => 0.56, what => 'about half each' },
    { name => 'vtc with weights 1:2 serves them 1:2',
      label => 'vtc 1:2', policy => 'vtc', wb => 2, who => 'b',
      lo => 0.58, hi => 0.75, what => 'b, of weight 2, gets about 2/3' },
) {
    subtest $c->{name} => sub {
        my ($a, $b) = flood(policy => $c->{policy}, wa => 1, wb => $c->{wb});
        share_between(@$c{qw(label who)}, $a, $b, @$c{qw(lo hi what)});
    };
}


$up->stop;

done_testing();
