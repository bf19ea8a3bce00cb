#!/usr/bin/env perl

# Keys kept in Redis (fairgate_keys redis): requests per second and the
# gateway worker's CPU time a request through a drop-in gateway, 10,000
# keys used in turn, against the keys file, in the same run.
#
#   file    fairgate_keys FILE: the keys in the configuration
#   redis   fairgate_keys redis: the keys in a redis-server started here,
#           all of them held in the shared cache once used (cache=32m)
#   miss    the same with cache=64k, which holds some 150 of the 10,000:
#           nearly every request looks its key up in Redis, waiting for the
#           answer without holding the worker
#
# wrk, 32 connections; the upstream is a second nginx answering a fixed
# chat completion.  The ways alternate ROUNDS times; the medians are
# reported, with Redis's CPU time during each way.
# Usage: bench_keys.pl [SECONDS [ROUNDS [KEYS]]]

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Digest::SHA qw(sha256_hex);
use IO::Socket::INET;
use POSIX ();

use Fairgate::Bench qw(bench_dir cpu_seconds front_keepalive front_upstream
                       median wrk_chat);
use Fairgate::Test qw(:DEFAULT static_upstream);


my $SECONDS = shift // 3;
my $ROUNDS = shift // 5;
my $KEYS = shift // 10000;

for my $tool (qw(wrk redis-server redis-cli)) {
    system("command -v $tool > /dev/null") == 0
        or die "bench_keys: $tool is not installed\n";
}

my $dir = bench_dir($KEYS);

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

# the keys, as the admin API writes them (bench_dir's users and apps)
open my $cli, '|-', "redis-cli -p $rport > /dev/null" or die;
for my $i (1 .. $KEYS) {
    my $h = sha256_hex("sk-bench-$i");
    print {$cli} "HSET bench:key:$h user user$i app app", $i % 2,
                 " weight 1.000 id ", substr($h, 0, 16), " revoked 0\n";
}
close $cli;

my $upstream = static_upstream(workers => 2);
my $up = '127.0.0.1:' . $upstream->port;


sub front {
    my ($keys) = @_;

    my $s = Fairgate::Test::Server->new(
        http_config => front_upstream($up) . <<"END",

    fairgate_zone zone=bench:64m inflight=256 max_tenants=$KEYS;
    fairgate_redis 127.0.0.1:$rport prefix=bench: timeout=1s;
END
        config => front_keepalive() . <<"END");

    location /v1/ {
        fairgate zone=bench;
        fairgate_keys $keys;
        fairgate_user_limit rpm=1000000000 tpm=4000000000;
        proxy_pass http://backend;
    }
END

    $s->start or die $s->last_error;
    return $s;
}


# one at a time: the cache is a zone of one name
my %conf = (file => "$dir/keys", redis => 'redis cache=32m',
            miss => 'redis cache=64k');
my @ways = qw(file redis miss);

wrk_chat($dir, <<"END");
local n = $KEYS
local i = math.random(n)
request = function()
    i = i % n + 1
    wrk.headers["Authorization"] = "Bearer sk-bench-" .. i
    return wrk.format()
end
END


sub wrk {
    my ($way) = @_;
    my $s = front($conf{$way});
    my ($worker) = $s->worker_pids;
    my $url = "http://127.0.0.1:" . $s->port . "/v1/chat/completions";

    # every key used once before the measurement (held, where they fit)
    `wrk -t1 -c32 -d1s -s $dir/post.lua $url 2>&1`;

    my ($cpu, $rcpu) = (cpu_seconds($worker), cpu_seconds($redis));
    my $out = `wrk -t1 -c32 -d${SECONDS}s -s $dir/post.lua $url 2>&1`;
    $cpu = cpu_seconds($worker) - $cpu;
    $rcpu = cpu_seconds($redis) - $rcpu;
    $s->stop;

    my %r;
    ($r{requests}) = $out =~ /(\d+) requests in/;
    ($r{rps}) = $out =~ /Requests\/sec:\s+([\d.]+)/;
    ($r{errors}) = $out =~ /Non-2xx or 3xx responses: (\d+)/;
    $r{errors} //= 0;
    die "bench_keys: no result from wrk:\n$out" unless $r{rps};

    $r{cpu_us} = 1e6 * $cpu / $r{requests};
    $r{redis_cpu} = $rcpu / $SECONDS;
    return \%r;
}


printf "# %s, %d cores, load %s; wrk -t1 -c32, %d s a run, %d rounds, "
       . "%d keys used in turn\n",
    scalar(`nginx -v 2>&1`) =~ s/\s+$//r, scalar(`nproc`) + 0,
    (split ' ', `cat /proc/loadavg`)[0], $SECONDS, $ROUNDS, $KEYS;

my %r;

for my $round (1 .. $ROUNDS) {
    push @{ $r{$_} }, wrk($_) for @ways;
}

printf "%-6s %9s %7s %8s %10s %7s\n", 'way', 'req/s', 'ratio', 'cpu us',
       'redis cpu', 'errors';

my $base = median(map { $_->{rps} } @{ $r{file} });

for my $way (@ways) {
    my $e = 0;
    $e += $_->{errors} for @{ $r{$way} };
    my $rps = median(map { $_->{rps} } @{ $r{$way} });
    printf "%-6s %9.0f %7.3f %8.1f %9.1f%% %7d\n", $way, $rps, $rps / $base,
           median(map { $_->{cpu_us} } @{ $r{$way} }),
           100 * median(map { $_->{redis_cpu} } @{ $r{$way} }), $e;
}

print "# ratio: req/s over the keys file's; cpu us: the gateway worker's "
      . "CPU time a request;\n# redis cpu: redis-server's CPU during the "
      . "run, share of a core\n";

$upstream->stop;
