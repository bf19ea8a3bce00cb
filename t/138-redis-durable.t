#!/usr/bin/env perl

# Durable quota counters (fairgate_quota's windows): synced through a real
# redis-server (fairgate_redis) and kept in a state file
# (fairgate_quota_state).  Under a bounded load (tens of requests, a few
# connections), the totals in Redis and in the state file are what the
# mock upstream served: Redis killed in the middle of the load (every
# request still served) and restarted empty, the snapshots bring it up to
# date; nginx stopped and started while Redis is down, the state file
# keeps the counts and a quota still holds; nginx killed outright and
# started again while Redis kept everything, no count is lost or counted
# twice, with its state file or without.
# Two gateways hold one quota together.  nginx -t refuses a state
# directory that is not one.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Digest::SHA qw(sha256_hex);
use File::Temp ();
use POSIX ();
use Time::HiRes ();
use Test::More;

use Fairgate::Test qw(wait_for run_refused);
use Fairgate::MockUpstream;
use Fairgate::Redis;


plan skip_all => 'redis-server is not installed (apt-get install '
                 . 'redis-server)' unless Fairgate::Redis::path();

my $Z = "fairgate_zone zone=main:16m;\n";

# a pattern written over two lines
sub re { my ($text) = @_; return qr/$text/ }

run_refused(
    ['nginx -t: no such directory',
     "${Z}fairgate_quota_state /nonexistent/fairgate;\n", '',
     re('"fairgate_quota_state" needs a directory, "/nonexistent/fairgate" '
        . 'is not one .* in \S+nginx\.conf:\d+')],
    ['nginx -t: twice',
     "${Z}fairgate_quota_state /;\nfairgate_quota_state /;\n", '',
     qr/"fairgate_quota_state" directive is duplicate in \S+nginx\.conf:\d+/],
    ['nginx -t: a bad interval',
     "${Z}fairgate_quota_state / interval=5ms;\n", '',
     qr/invalid parameter "interval=5ms" in "fairgate_quota_state"/],
    ['nginx -t: an unknown parameter',
     "${Z}fairgate_quota_state / every=1s;\n", '',
     re('invalid parameter "every=1s" in "fairgate_quota_state", expected '
        . 'interval=100ms to 1h in \S+nginx\.conf:\d+')]);


my $up = Fairgate::MockUpstream->new;

my $dir = File::Temp::tempdir('fairgate-durable-XXXXXX', TMPDIR => 1,
                              CLEANUP => 1);
chmod 0755, $dir;
mkdir "$dir/state", 0777;
chmod 0777, "$dir/state";

open my $fh, '>', "$dir/keys" or die;
print {$fh} map { sha256_hex("sk-$_") . " $_ - 1\n" } qw(alice bob carol);
close $fh;

my $redis = Fairgate::Redis->new(dir => $dir);
$redis->start or BAIL_OUT('redis-server did not start');

# a gateway: gw1 keeps a state file
sub gateway {
    my ($id, $workers, $state) = @_;

    my $s = Fairgate::Test::Server->new(
        workers => $workers,
        http_config => <<"END",
    fairgate_zone zone=llm:16m;
    fairgate_redis 127.0.0.1:${\ $redis->port } interval=100ms timeout=1s
                   id=$id prefix=t138:;
    $state
END
        config => <<"END");
    location /v1/ {
        fairgate zone=llm queue=100 timeout=30s;
        fairgate_keys $dir/keys;
        fairgate_quota user requests=1000 per=day;
        fairgate_quota user requests=1000 per=1h rolling;
        fairgate_quota user bob requests=5 per=day;
        fairgate_quota user carol requests=4 per=day;
        proxy_pass http://${\ $up->addr };
    }
    location /status { fairgate_status; }
END

    $s->start or BAIL_OUT($s->last_error);
    return $s;
}

my $g = gateway('gw1', 2, "fairgate_quota_state $dir/state interval=100ms;");


my $body = '{"model":"m","max_tokens":4,'
           . '"messages":[{"role":"user","content":"hi"}]}';

sub request_of {
    my ($user) = @_;
    return { method => 'POST', uri => '/v1/chat/completions',
             body => $body,
             headers => ["Authorization: Bearer sk-$user",
                         'Content-Type: application/json',
                         'X-Mock-Delay: 0.01'] };
}

# alice's load: n requests by c clients at once, each waiting for its
# answer (none given up on: what was sent was served); the statuses
sub load {
    my ($n, $c) = @_;
    my @kids;

    for my $k (1 .. $c) {
        my $pid = open(my $kid, '-|') // die "fork: $!\n";

        if (!$pid) {
            my $r = request_of('alice');
            for my $i (1 .. $n / $c) {
                my $res = eval {
                    $g->post($r->{uri}, $r->{body},
                             headers => [@{ $r->{headers} },
                                         "X-Tag: alice-$k-$i"]) } // {};
                print(($res->{status} // 0), "\n");

                # nginx away (restarting): the next try a little later
                Time::HiRes::sleep(0.05) unless $res->{status};
            }
            POSIX::_exit(0);
        }

        push @kids, $kid;
    }

    my @s;

    for my $kid (@kids) {
        push @s, <$kid>;
        close $kid;
    }

    chomp @s;
    return @s;
}

sub chat {
    my ($user, $s) = @_;
    my $r = request_of($user);
    return ($s // $g)->post($r->{uri}, $r->{body}, headers => $r->{headers})
           ->{status};
}

# what the upstream served of a user (the load tags alice's)
sub served_alice { scalar grep { ($_ // '') =~ /^alice-/ } $up->served }

# nginx killed outright (the master first: it would log its workers'
# deaths), its workers gone
sub kill_nginx {
    my @workers = $g->worker_pids;
    kill 'KILL', $g->pid;
    kill 'KILL', @workers;
    wait_for(5, sub { !grep { kill 0, $_ } @workers });
    $g->stop;
}

# a user's requests in a window in Redis, every gateway's field summed:
# per is "d" (the day) or "r3600" (the rolling hour's buckets)
sub redis_total {
    my ($user, $per) = @_;
    my $n = 0;
    for my $key (split /\n/, $redis->cli('--scan', '--pattern',
                                         "t138:llm:q:u:$per:*:$user")) {
        my %h = split /\n/, $redis->cli('HGETALL', $key);
        $n += (split ' ', $_)[0] for values %h;
    }
    return $n;
}

# and in the state file
sub state_total {
    my ($user, $rolling) = @_;
    open my $in, '<', "$dir/state/llm.quota" or return -1;
    my $n = 0;
    while (<$in>) {
        my @f = split ' ', $_, 9;
        next if /^#/ || @f < 9;
        chomp $f[8];
        $n += $f[5] if $f[0] == 0 && $f[8] eq $user && $f[2] == $rolling;
    }
    return $n;
}

# the totals are what the upstream served
sub totals_are {
    my $n = served_alice();
    return redis_total('alice', 'd') == $n
           && redis_total('alice', 'r3600') == $n
           && state_total('alice', 0) == $n
           && state_total('alice', 1) == $n;
}

sub diag_totals {
    diag(sprintf 'served %d; Redis day %d, rolling %d; state %d, %d',
         served_alice(), redis_total('alice', 'd'),
         redis_total('alice', 'r3600'), state_total('alice', 0),
         state_total('alice', 1));
}


$up->clear_log;

subtest 'the counts reach Redis and the state file' => sub {
    my @s = load(30, 3);
    my $served = served_alice();
    is(scalar(grep { $_ == 200 } @s), scalar @s, 'all served');
    is($served, 30, 'the upstream saw 30');

    ok(wait_for(5, sub { totals_are() }),
       'Redis and the state file say what the upstream served, '
       . 'day and rolling hour')
        or diag_totals();

    is(chat('bob'), 200, "bob's 1st") for 1 .. 3;
};


subtest 'Redis killed mid-load and restarted empty' => sub {
    my $pid = open(my $kid, '-|') // die "fork: $!\n";

    if (!$pid) {
        my @s = eval { load(60, 3) };
        print "error $@\n" if $@;
        print "$_\n" for @s;
        POSIX::_exit(0);
    }

    ok(wait_for(30, sub { served_alice() >= 45 }), 'the load is under way');
    $redis->kill;
    cmp_ok(served_alice(), '<', 85, 'Redis went in the middle of it');

    my @s = <$kid>;
    close $kid;
    chomp @s;

    is(scalar @s, 60, 'the load ran to its end');
    is(scalar(grep { $_ eq '200' } @s), scalar @s,
       'every request served, Redis or not')
        or diag("@s[0 .. 4]");
    my $served = served_alice();
    cmp_ok(redis_total('alice', 'd'), '==', 0, 'Redis is gone');

    ok(wait_for(5, sub { state_total('alice', 0) == served_alice() }),
       'the state file has every one meanwhile');

    $redis->start or BAIL_OUT('redis-server did not restart');

    ok(wait_for(10, sub { totals_are() }),
       "the restarted, empty Redis gets every count back: $served")
        or diag_totals();
};


subtest 'nginx restarted while Redis is down: the state file' => sub {
    $redis->kill;
    is($g->stop, 0, 'nginx stops');
    my $served = served_alice();
    is(state_total('alice', 0), $served, "its exit wrote the state: $served");

    ok($g->start, 'nginx starts again') or diag($g->last_error);
    like($g->error_log, re('fairgate_quota_state: \d+ counts of zone "llm" '
                           . 'read from'), 'it read the state');

    # bob had 3 of his 5 a day before the restart
    is(chat('bob'), 200, "bob's 4th") for 1 .. 2;
    is(chat('bob'), 429, "bob's 6th refused: his quota survived");

    my @s = load(10, 2);
    is(scalar(grep { $_ == 200 } @s), scalar @s, '10 more of alice');
    $served = served_alice();

    $redis->start or BAIL_OUT('redis-server did not restart');

    ok(wait_for(10, sub { totals_are() }),
       "Redis, back empty, gets all $served")
        or diag_totals();
    ok(wait_for(5, sub { redis_total('bob', 'd') == 5 }), "and bob's 5");
};


subtest 'nginx stopped and started under load' => sub {
    my $before = served_alice();
    my $pid = open(my $kid, '-|') // die "fork: $!\n";

    if (!$pid) {
        print "$_\n" for load(60, 3);
        POSIX::_exit(0);
    }

    ok(wait_for(30, sub { served_alice() >= $before + 15 }),
       'the load is under way');
    is($g->stop, 0, 'nginx stops, its requests in flight answered');
    ok($g->start, 'and starts again') or diag($g->last_error);

    my @s = <$kid>;
    close $kid;
    chomp @s;

    my $ok = grep { $_ eq '200' } @s;
    cmp_ok($ok, '<', 60, 'some requests found nginx away');
    cmp_ok(served_alice() - $before, '>', 15, 'most were served');
    is(scalar(grep { $_ ne '200' && $_ ne '0' } @s), 0,
       'none answered but 200');

    ok(wait_for(10, sub { totals_are() }),
       'Redis and the state file say what the upstream served')
        or diag_totals();
};


subtest 'nginx killed outright: no count lost or counted twice' => sub {
    my $before = served_alice();
    ok(wait_for(5, sub { totals_are() }), 'all counted, before');
    $before = served_alice();

    kill_nginx();

    ok($g->start, 'nginx starts again') or diag($g->last_error);

    my @s = load(5, 1);
    is(scalar(grep { $_ == 200 } @s), scalar @s, '5 more of alice');
    my $served = served_alice();

    ok(wait_for(10, sub { totals_are() }),
       "Redis and the state file say $served: none lost, none twice")
        or diag_totals();
};


subtest 'nginx killed and its state file lost: Redis has the counts' => sub {
    my $before = served_alice();
    ok(wait_for(5, sub { totals_are() }), 'all counted, before');

    kill_nginx();
    unlink "$dir/state/llm.quota" or die "unlink: $!\n";

    ok($g->start, 'nginx starts again') or diag($g->last_error);

    my @s = load(6, 2);
    is(scalar(grep { $_ == 200 } @s), scalar @s, '6 more of alice');
    my $served = served_alice();

    ok(wait_for(10, sub { totals_are() }),
       "Redis and the state file say $served: the counts before are added "
       . 'to the new ones')
        or diag_totals();
};


subtest 'two gateways: one quota across both' => sub {
    my $g2 = gateway('gw2', 1, '');

    is(chat('carol'), 200, "carol's 1st through gateway 1") for 1 .. 3;
    ok(wait_for(5, sub { redis_total('carol', 'd') == 3 }), 'in Redis');

    is(chat('carol', $g2), 200, "carol's 4th through gateway 2");
    ok(wait_for(5, sub { redis_total('carol', 'd') == 4 }),
       'gateway 2 synced it');

    # a round more, that gateway 2 has the answer of the one that wrote
    my $syncs = $g2->status_json->{redis}{zones}[0]{syncs};
    ok(wait_for(5, sub { $g2->status_json->{redis}{zones}[0]{syncs}
                         > $syncs + 1 }), 'and went on syncing');

    is(chat('carol', $g2), 429, "carol's 5th refused by gateway 2");
    is(chat('carol'), 429, 'and by gateway 1');

    is($g2->stop, 0, 'gateway 2 exits cleanly');
};


is($g->stop, 0, 'nginx exits cleanly');
unlike($g->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');

$redis->kill;
$up->stop;

done_testing();
