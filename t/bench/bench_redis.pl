#!/usr/bin/env perl

# fairgate_redis benchmark: requests per second through a drop-in gateway
# at 10,000 active tenants, without and with Redis sync, in the same run.
#
#   local   fairgate, counters in the zone only
#   redis   the same, and fairgate_redis to a redis-server started here:
#           every interval the zone's 10,000 users are synced (their
#           windows and service out, the other gateways' figures back)
#
# Each request names one of TENANTS keys in turn (wrk, 32 connections), so
# every tenant is active in every round; the user limit is set high enough
# never to refuse.  The upstream is a second nginx answering a fixed chat
# completion.  The ways alternate ROUNDS times; the medians are reported,
# with the gateway worker's CPU time a request (which includes the sync
# rounds: one worker, so it is the one that syncs) and, for redis, the
# time a sync round of all the tenants took and Redis's own CPU time.
# With QUOTAS "on", every user also has a day's and a rolling hour's quota
# (fairgate_quota, never reached) in both ways: the redis way then syncs
# their windows too, a key a day, twelve a rolling hour, each round.
# Usage: bench_redis.pl [SECONDS [ROUNDS [TENANTS [INTERVAL [QUOTAS]]]]]

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Socket::INET;
use JSON::PP ();
use POSIX ();
use Time::HiRes ();

use Fairgate::Bench qw(bench_dir cpu_seconds front_keepalive front_upstream
                       median wrk_chat);
use Fairgate::Test qw(:DEFAULT static_upstream);


my $SECONDS = shift // 3;
my $ROUNDS = shift // 5;
my $TENANTS = shift // 10000;
my $INTERVAL = shift // '1s';
my $QUOTAS = (shift // 'off') eq 'on'
             ? "        fairgate_quota user requests=4000000000 per=day;\n"
               . "        fairgate_quota user requests=4000000000 per=1h "
               . "rolling;\n"
             : '';

for my $tool (qw(wrk redis-server)) {
    system("command -v $tool > /dev/null") == 0
        or die "bench_redis: $tool is not installed\n";
}

my $dir = bench_dir($TENANTS);

my $rport = Fairgate::Test::free_port();
my $redis = fork // die "fork: $!\n";

if (!$redis) {
    open STDOUT, '>', "$dir/redis.log";
    open STDERR, '>&', \*STDOUT;
    exec('redis-server', '--port', $rport, '--bind', '127.0.0.1',
         '--save', '', '--appendonly', 'no', '--daemonize', 'no',
         '--dir', $dir) or POSIX::_exit(127);
}

END { kill 'TERM', $redis if $redis; }

my $deadline = time + 10;
sleep 0.05 until IO::Socket::INET->new("127.0.0.1:$rport") || time > $deadline;

my $upstream = static_upstream(workers => 2);

my $up = '127.0.0.1:' . $upstream->port;


sub front {
    my ($sync) = @_;

    my $s = Fairgate::Test::Server->new(
        http_config => front_upstream($up) . <<"END" . $sync,

    fairgate_zone zone=bench:64m inflight=256 max_tenants=$TENANTS;
END
        config => front_keepalive() . <<"END");

    location /v1/ {
        fairgate zone=bench;
        fairgate_keys $dir/keys;
        fairgate_user_limit rpm=1000000000 tpm=4000000000;
$QUOTAS        proxy_pass http://backend;
    }

    location = /status {
        fairgate_status;
    }
END

    $s->start or die $s->last_error;
    return $s;
}


my %front = (
    local => front(''),
    redis => front("    fairgate_redis 127.0.0.1:$rport interval=$INTERVAL "
                   . "prefix=bench:;\n"),
);

wrk_chat($dir, <<"END");
local n = $TENANTS
local i = math.random(n)
request = function()
    i = i % n + 1
    wrk.headers["Authorization"] = "Bearer sk-bench-" .. i
    return wrk.format()
end
END


sub wrk {
    my ($way) = @_;
    my $s = $front{$way};
    my ($worker) = $s->worker_pids;
    my $url = "http://127.0.0.1:" . $s->port . "/v1/chat/completions";
    my ($cpu, $rcpu) = (cpu_seconds($worker), cpu_seconds($redis));
    my $out = `wrk -t1 -c32 -d${SECONDS}s -s $dir/post.lua $url 2>&1`;
    $cpu = cpu_seconds($worker) - $cpu;
    $rcpu = cpu_seconds($redis) - $rcpu;

    my %r;
    ($r{requests}) = $out =~ /(\d+) requests in/;
    ($r{rps}) = $out =~ /Requests\/sec:\s+([\d.]+)/;
    ($r{errors}) = $out =~ /Non-2xx or 3xx responses: (\d+)/;
    $r{errors} //= 0;
    die "bench_redis: no result from wrk:\n$out" unless $r{rps};

    $r{cpu_us} = 1e6 * $cpu / $r{requests};
    $r{redis_cpu} = $rcpu / $SECONDS;
    return \%r;
}


sub redis_zone {
    my $st = eval { JSON::PP->new->decode($front{redis}->get('/status')
                                          ->{body}) } // {};
    return (($st->{redis} // {})->{zones} // [])->[0] // {};
}


printf "# %s, %d cores, load %s; wrk -t1 -c32, %d s a run, %d rounds, "
       . "%d tenants, sync every %s%s\n",
    scalar(`nginx -v 2>&1`) =~ s/\s+$//r, scalar(`nproc`) + 0,
    (split ' ', `cat /proc/loadavg`)[0], $SECONDS, $ROUNDS, $TENANTS,
    $INTERVAL, $QUOTAS ? ', quotas: a day and a rolling hour' : '';

# every tenant into both zones first
wrk($_) for qw(local redis);

my (%r, @rounds);

for my $round (1 .. $ROUNDS) {
    for my $way (qw(local redis)) {
        push @{ $r{$way} }, wrk($way);
    }

    my $z = redis_zone();
    push @rounds, $z->{round_ms} // 0;
    die "bench_redis: Redis is $z->{state}\n" unless $z->{state} eq 'up';
}

my @ratio = map { $r{redis}[$_]{rps} / $r{local}[$_]{rps} } 0 .. $ROUNDS - 1;

printf "%-6s %9s %7s %8s %10s %7s\n", 'way', 'req/s', 'ratio', 'cpu us',
       'redis cpu', 'errors';

for my $way (qw(local redis)) {
    my $e = 0;
    $e += $_->{errors} for @{ $r{$way} };
    printf "%-6s %9.0f %7.3f %8.1f %9.1f%% %7d\n", $way,
           median(map { $_->{rps} } @{ $r{$way} }),
           $way eq 'local' ? 1 : median(@ratio),
           median(map { $_->{cpu_us} } @{ $r{$way} }),
           100 * median(map { $_->{redis_cpu} } @{ $r{$way} }), $e;
}

# what a round costs the syncing worker, without requests to blur it: its
# CPU time over a few idle seconds, the tenants still in the zone (the
# status page, large at 10,000 tenants, is read outside the measurement)
my ($w, $wl) = (($front{redis}->worker_pids)[0],
                ($front{local}->worker_pids)[0]);
my @c0 = (cpu_seconds($w), cpu_seconds($wl), cpu_seconds($redis), Time::HiRes::time());
Time::HiRes::sleep(5);
my @c1 = (cpu_seconds($w), cpu_seconds($wl), cpu_seconds($redis), Time::HiRes::time());
my $z = redis_zone();
my $secs = $c1[3] - $c0[3];

printf "# idle %.1f s, a round every %s: the syncing worker %.1f ms CPU a "
       . "second (local's %.1f),\n# redis-server %.1f ms CPU a second\n",
       $secs, $INTERVAL, 1000 * ($c1[0] - $c0[0]) / $secs,
       1000 * ($c1[1] - $c0[1]) / $secs, 1000 * ($c1[2] - $c0[2]) / $secs;
printf "# redis: %s, %d rounds, a round of %d tenants took %d ms "
       . "(median of rounds), %d errors\n",
       $z->{state}, $z->{syncs}, $z->{tenants}, median(@rounds),
       $z->{errors};
print "# ratio: redis req/s over local's in the same round; cpu us: the "
      . "gateway worker's\n# CPU time a request; redis cpu: redis-server's "
      . "CPU during the run, share of a core\n";

$_->stop for values %front;
$upstream->stop;
