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
# Two gateways hold one quota together; a binary upgrade carries the
# counts to the new master.  nginx -t refuses a state directory that is
# not one.

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
print {$fh} map { sha256_hex("sk-$_") . " $_ - 1\n" } qw(alice bob carol dave);
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
        fairgate_quota user budget=1000 per=week;
        fairgate_price * input=1.25 output=10;
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

# a user's requests, tokens and cost in a window in Redis, every
# gateway's and bucket's field summed: per is "d" (the day), "w" (the
# week's budget), keys of their windows' starts, or "r3600" (the rolling
# hour, one key)
sub redis_sums {
    my ($user, $per) = @_;
    my $pattern = $per =~ /^r/ ? "t138:llm:q:u:$per:$user"
                               : "t138:llm:q:u:$per:*:$user";
    my @n = (0, 0, 0);
    for my $key (split /\n/, $redis->cli('--scan', '--pattern', $pattern)) {
        my %h = split /\n/, $redis->cli('HGETALL', $key);
        for my $v (values %h) {
            my @f = split ' ', $v;
            $n[$_] += $f[$_] for 0 .. 2;
        }
    }
    return @n;
}

sub redis_total { (redis_sums(@_))[0] }

# and in the state file (unit 2: a day, 3: a week)
sub state_sums {
    my ($user, $unit, $rolling) = @_;
    open my $in, '<', "$dir/state/llm.quota" or return (-1, -1, -1);
    my @n = (0, 0, 0);
    while (<$in>) {
        my @f = split ' ', $_, 9;
        next if /^#/ || @f < 9;
        chomp $f[8];
        next unless $f[0] == 0 && $f[8] eq $user && $f[2] == $rolling
                    && ($rolling || $f[1] == $unit);
        $n[$_] += $f[5 + $_] for 0 .. 2;
    }
    return @n;
}

sub state_total { (state_sums($_[0], 2, $_[1]))[0] }

# the totals are what the upstream served, in Redis and the state file,
# the tokens and the cost the same in both
sub totals_are {
    my $n = served_alice();
    my @d = redis_sums('alice', 'd');
    my @w = redis_sums('alice', 'w');
    return $d[0] == $n
           && redis_total('alice', 'r3600') == $n
           && "@{[ state_sums('alice', 2, 0) ]}" eq "@d"
           && state_total('alice', 1) == $n
           && "@{[ state_sums('alice', 3, 0) ]}" eq "@w"
           && $w[0] == $n && $w[1] == $d[1] && $w[2] == $d[2];
}

# the status page's window of a user: requests, tokens, cost (billionths)
sub status_sums {
    my ($s, $user, $window) = @_;
    my ($u) = grep { $_->{name} eq $user }
              @{ $s->status_json->{zones}[0]{users} // [] };
    my ($q) = grep { $_->{window} eq $window } @{ ($u // {})->{quotas} // [] };
    return $q ? ($q->{requests}, $q->{tokens},
                 sprintf('%.0f', $q->{cost} * 1e9)) : ();
}

sub diag_totals {
    diag(sprintf 'served %d; Redis day %s, week %s, rolling %d; '
                 . 'state day %s, week %s, rolling %d', served_alice(),
         "@{[ redis_sums('alice', 'd') ]}", "@{[ redis_sums('alice', 'w') ]}",
         redis_total('alice', 'r3600'), "@{[ state_sums('alice', 2, 0) ]}",
         "@{[ state_sums('alice', 3, 0) ]}", state_total('alice', 1));
}


$up->clear_log;

subtest 'the counts reach Redis and the state file' => sub {
    my @s = load(30, 3);
    my $served = served_alice();
    is(scalar(grep { $_ == 200 } @s), scalar @s, 'all served');
    is($served, 30, 'the upstream saw 30');

    ok(wait_for(5, sub { totals_are() }),
       'Redis and the state file say what the upstream served, '
       . 'day, week and rolling hour, tokens and cost alike')
        or diag_totals();

    my @d = redis_sums('alice', 'd');
    cmp_ok($d[1], '>', 0, "alice's tokens counted: $d[1]");
    cmp_ok($d[2], '>', 0, "and her cost: $d[2] billionths");
    is("@{[ status_sums($g, 'alice', 'day') ]}", "@d",
       'the status page says the same');

    # a day, a week, a rolling hour: a key each, for alice and bob
    my $z = $g->status_json->{redis}{zones}[0];
    cmp_ok($z->{quota_syncs}, '>', 0, 'the status counts the quota rounds');
    cmp_ok($z->{quota_keys}, '>=', 3, 'and their keys');

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
    like($g->error_log, re('fairgate_quota_state: zone "llm" read from '
                           . '"\S+llm\.quota", buckets: [1-9]'),
         'it read the state');

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

    is((status_sums($_, 'carol', 'day'))[0], 4,
       'each status page counts her 4, its own and the other\'s')
        for $g, $g2;

    is($g2->stop, 0, 'gateway 2 exits cleanly');
};


is($g->stop, 0, 'nginx exits cleanly');
unlike($g->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');



# A binary upgrade needs a master that runs as a daemon (nginx ignores
# USR2 from a master whose parent started it, as the tests' servers are):
# one of its own, Redis left out, the state file alone carrying the
# counts from the old master's zone to the new one's.

my %daemon;

END { kill 'QUIT', grep { $_ } values %daemon; }

subtest 'a binary upgrade: the new master reads the state file' => sub {
    my $p = "$dir/upgrade";
    mkdir $p;
    mkdir "$p/$_" for qw(conf logs state);
    chmod 0777, "$p/state";

    my $port = Fairgate::Test::free_port();

    open my $conf, '>', "$p/conf/nginx.conf" or die "$p: $!\n";
    print {$conf} <<"END";
load_module $Fairgate::Test::MODULE;
daemon on;
worker_processes 2;
error_log $p/logs/error.log info;
pid $p/logs/nginx.pid;
events { worker_connections 256; }
http {
    access_log off;
    fairgate_zone zone=llm:16m;
    fairgate_quota_state $p/state interval=100ms;
    server {
        listen 127.0.0.1:$port;
        location /v1/ {
            fairgate zone=llm;
            fairgate_keys $dir/keys;
            fairgate_quota user requests=1000 per=day;
            proxy_pass http://${\ $up->addr };
        }
        location /status { fairgate_status; }
    }
}
END
    close $conf;

    my @nginx = ($Fairgate::Test::NGINX, '-p', "$p/", '-e',
                 "$p/logs/error.log", '-c', 'conf/nginx.conf');
    my $master = sub {
        open my $fh, '<', "$p/logs/nginx.pid" or return 0;
        my $pid = <$fh> // '';
        return $pid =~ /^(\d+)$/ ? $1 : 0;
    };
    my $chat = sub {
        my $r = request_of('dave');
        return Fairgate::Test::http_request($port,
            "POST $r->{uri}\n$r->{body}", headers => $r->{headers})->{status};
    };
    my $used = sub {
        my $st = Fairgate::Test::http_request($port, 'GET /status')->{body};
        my ($n) = ($st // '') =~ /"window": "day"[^}]*"requests": (\d+)/;
        return $n // -1;
    };
    my $state = sub {
        open my $in, '<', "$p/state/llm.quota" or return -1;
        my $n = 0;
        while (<$in>) {
            my @f = split ' ', $_, 9;
            $n += $f[5] if !/^#/ && @f == 9 && $f[1] == 2;
        }
        return $n;
    };

    my ($rc, $out) = Fairgate::Test::run_cmd(@nginx);
    is($rc, 0, 'a daemon starts') or diag($out);
    my $old = $daemon{old} = wait_for(5, $master);

    is($chat->(), 200, "dave's request $_") for 1 .. 7;
    ok(wait_for(5, sub { $state->() == 7 }), 'the state file says 7');

    kill 'USR2', $old;
    my $new = wait_for(10, sub { my $m = $master->(); $m != $old && $m });
    ok($new, 'a new master');
    $daemon{new} = $new;

    kill 'QUIT', $old;
    ok(wait_for(10, sub { !kill 0, $old }), 'the old one leaves');
    delete $daemon{old};

    is($chat->(), 200, "dave's request $_, new workers") for 8 .. 12;
    is($used->(), 12, 'the new zone counts 12: the 7 came across');
    ok(wait_for(5, sub { $state->() == 12 }), 'and so does the file');

    kill 'QUIT', $new;
    ok(wait_for(10, sub { !kill 0, $new }), 'the new master exits');
    delete $daemon{new};

    open my $log, '<', "$p/logs/error.log" or die;
    my $text = do { local $/; <$log> };
    like($text, qr/zone "llm" read from "\S+", buckets: 1/,
         'the new master read the file');
    unlike($text, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');
};


$redis->kill;
$up->stop;

done_testing();
