#!/usr/bin/env perl

# Two gateways sharing their counters through a real redis-server
# (fairgate_redis): a user's request limit holds across both; a tenant
# sending through both gateways gets the same service under vtc as one
# sending through one; Redis killed in the middle of a run fails no request
# and the limits fall back to each gateway's own; Redis back, the gateways
# resynchronise and their counters converge; Redis hung, the gateways do
# not wait on it; a reload hands the sync over.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Digest::SHA qw(sha256_hex);
use File::Temp ();
use JSON::PP ();
use POSIX ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test qw(wait_for);
use Fairgate::MockUpstream;
use Fairgate::Redis;
use Fairgate::Load qw(closed_loop);


plan skip_all => 'redis-server is not installed (apt-get install '
                 . 'redis-server)' unless Fairgate::Redis::path();

my $json = JSON::PP->new->canonical;
my $up = Fairgate::MockUpstream->new;

my $dir = File::Temp::tempdir('fairgate-redis-XXXXXX', TMPDIR => 1,
                              CLEANUP => 1);
chmod 0755, $dir;

open my $fh, '>', "$dir/keys" or die;
print {$fh} map { sha256_hex("sk-$_") . " $_ - 1\n" } qw(a b c);
print {$fh} map { sha256_hex("sk-$_") . " $_ - 1 rpm=10\n" } qw(lim fb);
close $fh;

my $redis = Fairgate::Redis->new(dir => $dir);
my $rport = $redis->port;


sub gateway {
    my ($id) = @_;

    my $s = Fairgate::Test::Server->new(
        workers => 2,
        http_config => <<"END",
    fairgate_zone zone=llm:16m inflight=1 policy=vtc;
    fairgate_redis 127.0.0.1:$rport interval=100ms timeout=1s id=$id
                   prefix=t011:;
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

    $s->start or die $s->last_error;
    return $s;
}


sub redis_zone { ($_[0]->status_json->{redis}{zones} // [])->[0] // {} }


# what the other gateways counted of a user, as this gateway sees it
sub remote_rpm {
    my ($s, $user) = @_;
    return (redis_zone($s)->{users}{$user} // {})->{rpm} // -1;
}


# what this gateway counted itself
sub local_rpm {
    my ($s, $user) = @_;
    my ($u) = grep { $_->{name} eq $user }
              @{ $s->status_json->{zones}[0]{users} // [] };
    return $u ? $u->{rpm} : -1;
}


my $body = '{"model":"m","max_tokens":4,'
           . '"messages":[{"role":"user","content":"hi"}]}';


sub chat {
    my ($s, $user, @h) = @_;
    return $s->post('/v1/chat/completions', $body,
                    headers => ["Authorization: Bearer sk-$user",
                                'Content-Type: application/json', @h]);
}


sub statuses {
    my ($s, $user, $n) = @_;
    my %n;
    $n{ chat($s, $user)->{status} // 0 }++ for 1 .. $n;
    return \%n;
}


$redis->start or BAIL_OUT("redis-server did not start on port $rport");

my $g1 = gateway('gw1');
my $g2 = gateway('gw2');


subtest 'both gateways sync with Redis' => sub {
    ok(wait_for(10, sub { (redis_zone($g1)->{state} // '') eq 'up'
                          && (redis_zone($g2)->{state} // '') eq 'up' }),
       'state "up" on both')
        or diag($json->encode(redis_zone($g1)), $json->encode(redis_zone($g2)));

    my $z = redis_zone($g1);
    cmp_ok($z->{syncs}, '>', 0, 'rounds completed');
    ok($z->{owner}, 'one worker syncs the zone');

    like($g1->get('/metrics')->{body}, qr/^fairgate_redis_up\{zone="llm"\} 1$/m,
         'Prometheus: fairgate_redis_up 1');
};


subtest 'a global request limit holds across both gateways' => sub {
    # lim may send 10 a minute, wherever it sends them
    is_deeply(statuses($g2, 'lim', 1), { 200 => 1 }, '1 through gateway 2');
    is_deeply(statuses($g1, 'lim', 6), { 200 => 6 }, '6 through gateway 1');

    ok(wait_for(5, sub { remote_rpm($g2, 'lim') == 6
                         && remote_rpm($g1, 'lim') == 1 }),
       'each gateway sees what the other counted')
        or diag($json->encode(redis_zone($g2)));

    my $r = chat($g2, 'lim');
    is($r->{status}, 200, 'gateway 2 lets the 8th in');
    is($r->{headers}{'x-ratelimit-remaining-requests'}, 2,
       'and says 2 are left of the 10, not 8');

    is_deeply(statuses($g2, 'lim', 5), { 200 => 2, 429 => 3 },
              'gateway 2 lets in 2 more, then refuses: 10 in all');

    ok(wait_for(5, sub { remote_rpm($g1, 'lim') == 4 }),
       'gateway 1 sees the 4 of gateway 2');

    is_deeply(statuses($g1, 'lim', 2), { 429 => 2 },
              'gateway 1 refuses too: the limit is global');
};


subtest 'vtc: one fair share, not one a gateway' => sub {
    # a sends through both gateways, b through gateway 1 only; each
    # gateway serves one request at a time at the same speed.  Local
    # counters would give a 3/4 (all of gateway 2, half of gateway 1).

    my $req = sub {
        my ($user) = @_;
        return { method => 'POST', uri => '/v1/chat/completions',
                 body => $body,
                 headers => ["Authorization: Bearer sk-$user",
                             'Content-Type: application/json',
                             'X-Mock-Delay: 0.02'] };
    };

    my @done = closed_loop(port => $g1->port, total => 160, timeout => 60,
        tenants => [
            { name => 'a1', concurrency => 3, request => $req->('a') },
            { name => 'a2', concurrency => 3, request => $req->('a'),
              port => $g2->port },
            { name => 'b', concurrency => 3, request => $req->('b') },
        ]);

    my @bad = grep { $_->{status} != 200 } @done;
    is(scalar @bad, 0, 'every answer is 200');

    my %n;
    $n{substr $_->{tenant}, 0, 1}++ for @done[40 .. $#done];

    my $share = $n{a} / ($n{a} + $n{b});
    diag(sprintf "a:b = %d:%d, a's share %.3f", $n{a}, $n{b}, $share);
    cmp_ok($share, '>', 0.38, 'a gets about half');
    cmp_ok($share, '<', 0.62, 'a gets about half');
};


subtest 'Redis killed mid-run: no request fails, limits fall back' => sub {
    my $pid = open(my $kid, '-|') // die "fork: $!\n";

    if (!$pid) {
        my @done = eval {
            closed_loop(port => $g1->port, total => 300, timeout => 60,
                tenants => [
                    map { { name => "c$_", concurrency => 2,
                            port => ($_ == 1 ? $g1 : $g2)->port,
                            request => { method => 'POST',
                                uri => '/v1/chat/completions', body => $body,
                                headers => ['Authorization: Bearer sk-c',
                                            'Content-Type: application/json',
                                            'X-Mock-Delay: 0.01'] } } }
                        1 .. 2 ]);
        };
        print "error $@\n" if $@;
        print "$_->{status}\n" for @done;
        POSIX::_exit(0);
    }

    my $admitted = sub {
        my $n = 0;
        for my $s ($g1, $g2) {
            my ($u) = grep { $_->{name} eq 'c' }
                      @{ $s->status_json->{zones}[0]{users} // [] };
            $n += $u ? $u->{admitted} : 0;
        }
        return $n;
    };

    # killed once the run is well under way
    ok(wait_for(30, sub { $admitted->() >= 40 }), 'the run is under way');

    my @mark = map { $_->log_mark } $g1, $g2;
    $redis->kill;
    my $at_kill = $admitted->();

    my @status = <$kid>;
    close $kid;
    chomp @status;

    my @bad = grep { $_ ne '200' } @status;
    # (the load may overshoot its total by the answers of its last read)
    cmp_ok(scalar @status, '>=', 300, 'every request answered');
    is(scalar @bad, 0, 'every answer is 200') or diag("@bad[0 .. 4]");
    cmp_ok($at_kill, '<', 250, 'Redis went in the middle of the run')
        or diag("$at_kill admitted when Redis was killed");

    ok(wait_for(10, sub { (redis_zone($g1)->{state} // '') eq 'down'
                          && (redis_zone($g2)->{state} // '') eq 'down' }),
       'both gateways say "down"');

    like($g1->get('/metrics')->{body}, qr/^fairgate_redis_up\{zone="llm"\} 0$/m,
         'Prometheus: fairgate_redis_up 0');

    # the limit of 10 now holds on each gateway alone
    is_deeply(statuses($g1, 'fb', 10), { 200 => 10 }, 'fb: 10 on gateway 1');
    is_deeply(statuses($g2, 'fb', 11), { 200 => 10, 429 => 1 },
              'and 10 on gateway 2, its local limit');

    for my $i (0, 1) {
        my @down = ($g1, $g2)[$i]->error_log($mark[$i])
                   =~ /Redis at \S+ is down/g;
        is(scalar @down, 1, 'the outage is logged once');
    }
};


subtest 'Redis back: the gateways resynchronise, counters converge' => sub {
    $redis->start or BAIL_OUT("redis-server did not restart");

    ok(wait_for(15, sub { (redis_zone($g1)->{state} // '') eq 'up'
                          && (redis_zone($g2)->{state} // '') eq 'up' }),
       'both gateways are "up" again');

    # the restarted Redis was empty: each gateway's counts came back
    ok(wait_for(5, sub { remote_rpm($g1, 'fb') == local_rpm($g2, 'fb')
                         && remote_rpm($g2, 'fb') == local_rpm($g1, 'fb') }),
       "each sees the other's count of fb")
        or diag($json->encode(redis_zone($g1)), $json->encode(redis_zone($g2)));
    is(remote_rpm($g1, 'fb'), 10, 'gateway 1 sees 10 on gateway 2');

    is_deeply(statuses($g1, 'fb', 1), { 429 => 1 },
              'the limit is global again: fb has had its 10');

    like($g1->error_log, qr/Redis at \S+ is back/, 'the return is logged');
    cmp_ok(redis_zone($g1)->{failures}, '>=', 1, 'the failure is counted');
};


subtest 'Redis hung: rounds time out, the gateways go on locally' => sub {
    my $failures = redis_zone($g1)->{failures};

    # the connection stays open, nothing answers
    kill 'STOP', $redis->pid;

    ok(wait_for(10, sub { (redis_zone($g1)->{state} // '') eq 'down'
                          && (redis_zone($g2)->{state} // '') eq 'down' }),
       'both gateways say "down" once a round is late');
    is(redis_zone($g1)->{failures}, $failures + 1, 'one more failure');

    my $t = Time::HiRes::time();
    is_deeply(statuses($_, 'c', 5), { 200 => 5 }, 'requests go on')
        for $g1, $g2;
    cmp_ok(Time::HiRes::time() - $t, '<', 2, 'without waiting on Redis');

    kill 'CONT', $redis->pid;

    ok(wait_for(15, sub { (redis_zone($g1)->{state} // '') eq 'up'
                          && (redis_zone($g2)->{state} // '') eq 'up' }),
       'and come back when it answers again');
};


subtest 'a reload hands the sync to the new workers' => sub {
    my $owner = redis_zone($g2)->{owner};
    my $syncs = redis_zone($g2)->{syncs};

    ok($g2->reload, 'gateway 2 reloads') or diag($g2->last_error);

    my %new = map { $_ => 1 } $g2->worker_pids;

    ok(wait_for(10, sub { my $z = redis_zone($g2);
                          $new{ $z->{owner} // 0 } && $z->{syncs} > $syncs
                          && $z->{state} eq 'up' }),
       'a new worker syncs the zone, which stays "up"')
        or diag($json->encode(redis_zone($g2)));
    isnt(redis_zone($g2)->{owner}, $owner, 'not the old one');

    is(remote_rpm($g2, 'fb'), 10, 'the global picture is kept');
    is_deeply(statuses($g2, 'lim', 1), { 429 => 1 },
              'and the limit stays global: lim had its 10 on both');

    ok($g2->reload(http_config => <<"END"), 'a reload drops fairgate_redis');
    fairgate_zone zone=llm:16m inflight=1 policy=vtc;
END
    is(redis_zone($g2)->{state}, undef, 'no "redis" in the status');
    is_deeply(statuses($g2, 'lim', 1), { 200 => 1 },
              'the limit is local again: gateway 2 let in only 4 of lim');
};


for my $s ($g1, $g2) {
    is($s->stop, 0, 'nginx exits cleanly');
    unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');
}

$redis->kill;
$up->stop;

done_testing();
