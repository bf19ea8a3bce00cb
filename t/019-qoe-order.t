#!/usr/bin/env perl

# The zone's qoe order (fairgate_zone order=qoe): of a tenant's waiting
# requests, the one with the most QoE still to gain goes first: the least
# late (its first token due at arrival + its TTFT target), then the
# smaller.  An upstream that serves one request at a time (inflight=1)
# is held by a slow request while two more of one tenant wait, the older
# first; when it frees, order=arrival sends the older, order=qoe the
# newer.  The policy still picks the tenant: under vtc a tenant's fresh
# flood does not pass another's older request, as it does under fcfs.  nginx -t refuses
# order=qoe with the prefix policies and an unknown order.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use JSON::PP ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test qw(:DEFAULT gateway);
use Fairgate::MockUpstream;


my $up = Fairgate::MockUpstream->new;
my $json = JSON::PP->new;

my $CHAT = { method => 'POST', uri => '/v1/chat/completions',
             body => '{"model":"m","max_tokens":4,'
                     . '"messages":[{"role":"user","content":"hi"}]}' };


sub server {
    my ($order, $policy) = @_;
    my $s = gateway(zone => "inflight=1 policy=$policy order=$order",
                    queue => 50, user => '$http_x_tenant',
                    v1 => "        fairgate_qoe ttft=1s speed=5;\n",
                    pass => 'proxy_pass http://' . $up->addr);
    $up->clear_log;
    return $s;
}


sub send_tagged {
    my ($s, $tenant, $tag, @more) = @_;
    return $s->send_later($CHAT,
        headers => ['Content-Type: application/json', "X-Tenant: $tenant",
                    "X-Tag: $tag", @more]);
}


# polls the status page until the zone has n waiting (a deadline, not a
# sleep as synchronisation)
sub waiting_until {
    my ($s, $n) = @_;
    my $deadline = Time::HiRes::time() + 10;
    my $zone;

    while (Time::HiRes::time() < $deadline) {
        $zone = $json->decode($s->get('/status')->{body})->{zones}[0];
        return 1 if $zone->{waiting} >= $n;
        select undef, undef, undef, 0.01;
    }

    diag($json->encode($zone // {}));
    return 0;
}


# a slow request holds the upstream; then, each once the one before it
# waits, the tagged ones; the order they reached the upstream in
sub served_after_hold {
    my ($s, @reqs) = @_;
    my @socks = (send_tagged($s, 'hold', 'hold', 'X-Mock-Delay: 0.5'));
    my $n = 0;

    for my $r (@reqs) {
        push @socks, send_tagged($s, @$r);
        waiting_until($s, ++$n) or fail("request $r->[1] never waited");
    }

    $s->read_later($_) for @socks;

    return join ' ', $up->served;
}


subtest 'order=arrival: the older first' => sub {
    my $s = server('arrival', 'vtc');
    is(served_after_hold($s, ['a', 'old'], ['a', 'new']), 'hold old new',
       'the oldest waiting request goes first');
    $s->stop;
};


subtest 'order=qoe: the least late first' => sub {
    my $s = server('qoe', 'vtc');
    is(served_after_hold($s, ['a', 'old'], ['a', 'new']), 'hold new old',
       'the newer, less late, goes first');
    $s->stop;
};


subtest 'order=qoe: a TTFT due after the horizon waits' => sub {
    my $s = server('qoe', 'vtc');
    is(served_after_hold($s, ['a', 'lenient', 'X-Fairgate-TTFT: 60'],
                         ['a', 'old'], ['a', 'new']),
       'hold new old lenient',
       'one whose first token is not due for a minute goes last');
    $s->stop;
};


subtest 'order=qoe: the policy picks the tenant' => sub {
    my %order;

    for my $policy ('vtc', 'fcfs') {
        my $s = server('qoe', $policy);
        $order{$policy} = served_after_hold($s, ['b', 'b1'],
                                            map { ['a', "a$_"] } 1 .. 3);
        $s->stop;
    }

    # b and a start level (vtc's lift): b's one older request goes
    # between a's, a's in their own qoe order
    like($order{vtc}, qr/^hold (b1 a3 a2 a1|a3 b1 a2 a1)$/,
         "vtc: a's fresh flood does not push b's request back "
         . "($order{vtc})");
    is($order{fcfs}, 'hold a3 a2 a1 b1',
       'fcfs has no tenant order: the least late of anyone first');
};


subtest 'nginx -t' => sub {
    for my $c (['order=qoe policy=dlpm', qr/"order=qoe" does not work with policy "dlpm"/],
               ['order=qoe policy=lpm', qr/"order=qoe" does not work with policy "lpm"/],
               ['order=newest', qr/invalid order "newest" in "fairgate_zone", expected arrival or qoe/],
               ['order=qoe order=qoe', qr/duplicate|given once|twice/i])
    {
        my $t = Fairgate::Test::Server->new(
            http_config => "    fairgate_zone zone=llm:16m $c->[0];",
            config => "    location / { fairgate zone=llm; "
                      . "proxy_pass http://${\ $up->addr }; }");
        my ($rc, $out) = $t->test_config;
        isnt($rc, 0, "$c->[0] fails");
        like($out, $c->[1], "$c->[0]: says why");
    }
};


done_testing;
