#!/usr/bin/env perl

# fairgate_redis with Redis Sentinel: a master, a replica and a sentinel
# (quorum 1) of real redis-servers; two gateways given the sentinels (the
# first one listed is not there: they try the next).  The gateways find
# the master; a failover forced with SENTINEL failover moves them to the
# new master, a global limit holds across it, and the new master, emptied,
# gets every count back from the next rounds; the master killed, the
# sentinel promotes the replica and the gateways follow, serving all the
# while; the master made a replica behind the sentinel's back answers
# READONLY, the gateways ask again and come back when it is a master.  nginx -t refuses what an operator can get wrong.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Digest::SHA qw(sha256_hex);
use File::Temp ();
use JSON::PP ();
use Test::More;

use Fairgate::Test qw(wait_for free_port run_refused);
use Fairgate::MockUpstream;
use Fairgate::Redis;


plan skip_all => 'redis-server is not installed (apt-get install '
                 . 'redis-server)' unless Fairgate::Redis::path();

my $json = JSON::PP->new->canonical;


# nginx -t: each mistake named, in the file and at the line

my $Z = "fairgate_zone zone=main:16m;\n";
my $at = qr/ in \S+nginx\.conf:\d+/;
my $S = 'sentinel=127.0.0.1:26379';

run_refused(map {
    my ($name, $args, $said) = @$_;
    ["nginx -t: $name", "${Z}fairgate_redis $args;\n", '',
     qr/\Q$said\E(?:: [^\n]*)?$at/]
} ['sentinels without the master\'s name', $S,
   '"fairgate_redis" with "sentinel=" needs "master="'],
  ['an address and sentinels', "127.0.0.1:6379 $S master=m",
   '"fairgate_redis" takes an address or "sentinel=", not both'],
  ['a master\'s name without sentinels', '127.0.0.1:6379 master=m',
   '"fairgate_redis" takes "master=" and "sentinel_password=" only with '
   . '"sentinel="'],
  ['neither', 'password=x', '"fairgate_redis" needs an address or '
                            . '"sentinel="'],
  ['a bad sentinel port', 'sentinel=127.0.0.1:99999 master=m',
   'invalid sentinel address "127.0.0.1:99999" in "fairgate_redis"'],
  ['an empty sentinel', "$S,,127.0.0.1:26380 master=m",
   'invalid sentinel address "" in "fairgate_redis"'],
  ['a sentinel on a unix socket', 'sentinel=unix:/run/s.sock master=m',
   'invalid sentinel address "unix:/run/s.sock" in "fairgate_redis"'],
  ['sentinel= twice', "$S $S master=m",
   'duplicate "sentinel=" in "fairgate_redis"'],
  ['an empty master\'s name', "$S master=",
   'invalid parameter "master=" in "fairgate_redis"'],
  ['an empty sentinel password', "$S master=m sentinel_password=",
   'invalid parameter "sentinel_password=" in "fairgate_redis"']);


my $up = Fairgate::MockUpstream->new;

my $dir = File::Temp::tempdir('fairgate-sentinel-XXXXXX', TMPDIR => 1,
                              CLEANUP => 1);
chmod 0755, $dir;

open my $fh, '>', "$dir/keys" or die;
print {$fh} map { sha256_hex("sk-$_") . " $_ - 1\n" } qw(c);
print {$fh} map { sha256_hex("sk-$_") . " $_ - 1 rpm=10\n" } qw(lim fb);
close $fh;

my $m1 = Fairgate::Redis->new(dir => $dir);
$m1->start or BAIL_OUT('redis-server did not start');

my $m2 = Fairgate::Redis->new(dir => $dir,
                              args => ['--replicaof', '127.0.0.1', $m1->port]);
$m2->start or BAIL_OUT('the replica did not start');

ok(wait_for(10, sub { $m1->cli(qw(INFO replication))
                      =~ /^slave0:.*state=online/m }),
   'the replica follows the master');

my $s = Fairgate::Redis->new(dir => $dir,
                             sentinel => 'mymaster 127.0.0.1 ' . $m1->port);
$s->start or BAIL_OUT('the sentinel did not start');

my ($p1, $p2) = ($m1->port, $m2->port);

ok(wait_for(15, sub { $s->cli(qw(SENTINEL replicas mymaster))
                      =~ /^127\.0\.0\.1:$p2$/m }),
   'the sentinel knows the replica');

# no sentinel listens on the first port given
my $nowhere = free_port();


sub gateway {
    my ($id) = @_;

    my $g = Fairgate::Test::Server->new(
        http_config => <<"END",
    fairgate_zone zone=llm:16m;
    fairgate_redis sentinel=127.0.0.1:$nowhere,127.0.0.1:${\ $s->port }
                   master=mymaster interval=100ms timeout=1s id=$id
                   prefix=t137:;
END
        config => <<"END");
    location /v1/ {
        fairgate zone=llm queue=100 timeout=30s;
        fairgate_keys $dir/keys;
        proxy_pass http://${\ $up->addr };
    }
    location /status { fairgate_status; }
    location /metrics { fairgate_status format=prometheus; }
END

    $g->start or die $g->last_error;
    return $g;
}


sub zone { ($_[0]->status_json->{redis}{zones} // [])->[0] // {} }

sub remote_rpm {
    my ($g, $user) = @_;
    return ((zone($g)->{users} // {})->{$user} // {})->{rpm} // -1;
}

# both gateways up on this master, having seen this many failovers
sub on_master {
    my ($port, $failovers, @g) = @_;
    return !grep { my $z = zone($_);
                   ($z->{state} // '') ne 'up'
                   || ($z->{master} // '') ne "127.0.0.1:$port"
                   || ($z->{failovers} // -1) != $failovers } @g;
}

my $body = '{"model":"m","max_tokens":4,'
           . '"messages":[{"role":"user","content":"hi"}]}';

sub chat {
    my ($g, $user) = @_;
    return $g->post('/v1/chat/completions', $body,
                    headers => ["Authorization: Bearer sk-$user",
                                'Content-Type: application/json']);
}

sub statuses {
    my ($g, $user, $n) = @_;
    my %n;
    $n{ chat($g, $user)->{status} // 0 }++ for 1 .. $n;
    return \%n;
}

# this gateway's field of a user's hash on a server: its window's requests
sub field_requests {
    my ($r, $user, $id) = @_;
    my @kv = split /\n/, $r->cli('HGETALL', "t137:llm:u:$user");
    my %h = @kv % 2 ? () : @kv;
    my ($f) = grep { /^\Q$id\E:/ } keys %h;
    return $f ? (split ' ', $h{$f})[1] : -1;
}


my $g1 = gateway('gw1');
my $g2 = gateway('gw2');


subtest 'the gateways find the master through the sentinels' => sub {
    ok(wait_for(10, sub { on_master($p1, 0, $g1, $g2) }),
       "both sync with the sentinels' master")
        or diag($json->encode(zone($g1)));

    my $st = $g1->status_json->{redis};
    is_deeply($st->{sentinels}, ["127.0.0.1:$nowhere",
                                 '127.0.0.1:' . $s->port],
              'the status lists the sentinels');
    is($st->{master_name}, 'mymaster', 'and the master\'s name');

    like($g1->get('/metrics')->{body},
         qr/^fairgate_redis_failovers_total\{zone="llm"\} 0$/m,
         'Prometheus: fairgate_redis_failovers_total 0');
};


subtest 'a forced failover: the gateways follow, no count is lost' => sub {
    is_deeply(statuses($g1, 'lim', 6), { 200 => 6 }, '6 through gateway 1');
    is_deeply(statuses($g2, 'lim', 1), { 200 => 1 }, '1 through gateway 2');

    ok(wait_for(5, sub { remote_rpm($g2, 'lim') == 6
                         && remote_rpm($g1, 'lim') == 1 }),
       'each gateway sees what the other counted');

    is($s->cli(qw(SENTINEL failover mymaster)), "OK\n",
       'SENTINEL failover');

    ok(wait_for(20, sub { on_master($p2, 1, $g1, $g2) }),
       'both move to the new master, one failover seen')
        or diag($json->encode(zone($g1)), $json->encode(zone($g2)));

    my $moved = qq(master "mymaster" of zone "llm" is now at )
                . "127.0.0.1:$p2 (it was at 127.0.0.1:$p1)";
    ok(index($g1->error_log, $moved) >= 0, 'the move is logged');

    # the new master lost what it held: the next rounds write it again
    is($m2->cli('FLUSHALL'), "OK\n", 'the new master emptied');

    ok(wait_for(5, sub { field_requests($m2, 'lim', 'gw1') == 6
                         && field_requests($m2, 'lim', 'gw2') == 1 }),
       "each gateway's count is written to the new master again");

    ok(wait_for(5, sub { remote_rpm($g2, 'lim') == 6 }),
       'and read back');

    my $r = chat($g2, 'lim');
    is($r->{status}, 200, 'gateway 2 lets the 8th in');
    is($r->{headers}{'x-ratelimit-remaining-requests'}, 2,
       'and says 2 are left of the 10: the count went across');

    is_deeply(statuses($g2, 'lim', 4), { 200 => 2, 429 => 2 },
              'gateway 2 lets in 2 more, then refuses: 10 in all');

    ok(wait_for(5, sub { remote_rpm($g1, 'lim') == 4 }),
       'gateway 1 sees the 4 of gateway 2');
    is_deeply(statuses($g1, 'lim', 1), { 429 => 1 },
              'and refuses too: the limit is global on the new master');

    like($g1->get('/metrics')->{body},
         qr/^fairgate_redis_failovers_total\{zone="llm"\} 1$/m,
         'Prometheus: fairgate_redis_failovers_total 1');
};


subtest 'the master killed: the gateways serve on, then follow' => sub {
    # the old master turned into the new one's replica, in sync
    ok(wait_for(30, sub { $m1->cli('ROLE') =~ /\Aslave\n.*\n$p2\nconnected\n/s
                          && $s->cli(qw(SENTINEL replicas mymaster))
                             =~ /^127\.0\.0\.1:$p1$/m }),
       'the old master is the replica now')
        or diag($m1->cli('ROLE'));

    is_deeply(statuses($g1, 'fb', 4), { 200 => 4 }, '4 of fb on gateway 1');
    is_deeply(statuses($g2, 'fb', 1), { 200 => 1 }, '1 on gateway 2');
    ok(wait_for(5, sub { field_requests($m1, 'fb', 'gw1') == 4 }),
       'replicated');

    $m2->kill;

    is_deeply(statuses($_, 'c', 3), { 200 => 3 }, 'requests go on')
        for $g1, $g2;

    ok(wait_for(30, sub { on_master($p1, 2, $g1, $g2) }),
       'both follow the replica the sentinel promoted')
        or diag($json->encode(zone($g1)), $json->encode(zone($g2)));

    ok(wait_for(5, sub { remote_rpm($g2, 'fb') == 4 }),
       'gateway 2 sees the 4 of gateway 1 there');
    is_deeply(statuses($g2, 'fb', 6), { 200 => 5, 429 => 1 },
              'the limit holds across both: 5 more, not 9');
};


subtest 'the master turned replica behind the sentinels: READONLY' => sub {
    # a server the sentinel knows nothing of, that the master follows: it
    # answers READONLY to the next round, and ROLE says "slave"
    my $m3 = Fairgate::Redis->new(dir => $dir);
    $m3->start or BAIL_OUT('a third redis-server did not start');

    my $failures = zone($g1)->{failures};
    my $mark = $g1->log_mark;

    is($m1->cli('REPLICAOF', '127.0.0.1', $m3->port), "OK\n",
       'the master follows another server');

    ok(wait_for(10, sub { (zone($g1)->{state} // '') eq 'down'
                          && (zone($g2)->{state} // '') eq 'down' }),
       'both gateways count locally')
        or diag($json->encode(zone($g1)));
    is(zone($g1)->{failures}, $failures + 1, 'one failure more');
    like($g1->error_log($mark), qr/READONLY/, 'READONLY is why');

    is_deeply(statuses($_, 'c', 3), { 200 => 3 }, 'requests go on')
        for $g1, $g2;

    is($m1->cli(qw(REPLICAOF NO ONE)), "OK\n", 'a master again');

    ok(wait_for(15, sub { on_master($p1, 2, $g1, $g2) }),
       'asked again, the sentinel names it, ROLE agrees: both are back')
        or diag($json->encode(zone($g1)));

    # it copied the other server: empty; the next rounds fill it again
    ok(wait_for(5, sub { field_requests($m1, 'fb', 'gw1') == 4
                         && field_requests($m1, 'fb', 'gw2') == 6 }),
       'every count written to it again');

    $m3->kill;
};


for my $g ($g1, $g2) {
    is($g->stop, 0, 'nginx exits cleanly');
    unlike($g->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');
}

$s->kill;
$m1->kill;
$m2->kill;
$up->stop;

done_testing();
