#!/usr/bin/env perl

# Drop-in benchmark: requests per second and latency through nginx to the
# same upstream, in the same run, three ways:
#
#   plain      proxy_pass only
#   limit_req  proxy_pass behind limit_req (per key, never limiting)
#   fairgate   proxy_pass behind fairgate: key lookup, JSON parse,
#              estimate, limits (never reached), fair queue (capacity 256,
#              never full), usage read from the response, accounting
#
# The upstream is a second nginx returning a fixed chat completion with
# usage (so the upstream costs the same for all three).  Throughput comes
# from wrk with 32 connections; latency from wrk with 1 connection, where
# nothing queues, so that the difference is the time each request spends
# in the gateway.  Each way runs ROUNDS times, interleaved; the medians are
# reported, with the CPU time the gateway's worker spent a request in the
# throughput runs (from /proc: robust where other work shares the cores).
# Usage: bench_dropin.pl [SECONDS [ROUNDS]]

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use POSIX ();

use Fairgate::Bench qw(bench_dir cpu_seconds front_keepalive front_upstream
                       median wrk_chat);
use Fairgate::Test qw(:DEFAULT static_upstream);


my $SECONDS = shift // 1;
my $ROUNDS = shift // 9;
my $TENANTS = 8;

system('command -v wrk > /dev/null') == 0
    or die "bench_dropin: wrk is not installed (apt-get install wrk)\n";

my $dir = bench_dir($TENANTS);

my $upstream = static_upstream();

my $up = '127.0.0.1:' . $upstream->port;

my $front = Fairgate::Test::Server->new(
    http_config => front_upstream($up) . <<"END",

    limit_req_zone \$http_authorization zone=lr:16m rate=1000000r/s;

    fairgate_zone zone=bench:16m inflight=256;
END
    config => front_keepalive() . <<"END");

    location /plain/ {
        proxy_pass http://backend;
    }

    location /limit_req/ {
        limit_req zone=lr burst=100000 nodelay;
        proxy_pass http://backend;
    }

    location /fairgate/ {
        fairgate zone=bench;
        fairgate_keys $dir/keys;
        fairgate_user_limit rpm=1000000000 tpm=4000000000;
        fairgate_app_limit app0 rpm=1000000000;
        proxy_pass http://backend;
    }

    location = /status {
        fairgate_status;
    }
END

$front->start or die $front->last_error;

wrk_chat($dir, <<"END");
local i = 0
request = function()
    i = i % $TENANTS + 1
    wrk.headers["Authorization"] = "Bearer sk-bench-" .. i
    return wrk.format()
end
END


my ($worker) = $front->worker_pids;


sub wrk {
    my ($path, $conns) = @_;
    my $url = "http://127.0.0.1:" . $front->port . "$path/v1/chat/completions";
    my $cpu = cpu_seconds($worker);
    my $cmd = "wrk -t1 -c$conns -d${SECONDS}s --latency -s $dir/post.lua $url";
    my $out = `$cmd 2>&1`;
    $cpu = cpu_seconds($worker) - $cpu;

    my %r;
    ($r{requests}) = $out =~ /(\d+) requests in/;
    $r{cpu_us} = $r{requests} ? 1e6 * $cpu / $r{requests} : 0;
    ($r{rps}) = $out =~ /Requests\/sec:\s+([\d.]+)/;
    ($r{p50}) = $out =~ /^\s+50%\s+(\S+)/m;
    ($r{p99}) = $out =~ /^\s+99%\s+(\S+)/m;
    ($r{errors}) = $out =~ /Non-2xx or 3xx responses: (\d+)/;
    $r{errors} //= 0;
    $r{errors} += $1 if $out =~ /Socket errors: connect (\d+)/;

    die "bench_dropin: no result from wrk:\n$out" unless $r{rps} && $r{p99};

    $r{$_} = ms($r{$_}) for qw(p50 p99);
    return \%r;
}


# wrk's durations ("812.00us", "1.20ms", "2.01s") in ms
sub ms {
    my ($v) = @_;
    my ($n, $u) = $v =~ /^([\d.]+)(\w+)$/ or return undef;
    return $n / 1000 if $u eq 'us';
    return $n if $u eq 'ms';
    return $n * 1000 if $u eq 's';
    return undef;
}


my @ways = qw(plain limit_req fairgate);
my (%tput, %lat);

printf "# %s, %d cores, load %s; wrk -t1, %d s a run, %d rounds\n",
    scalar(`nginx -v 2>&1`) =~ s/\s+$//r, scalar(`nproc`) + 0,
    (split ' ', `cat /proc/loadavg`)[0], $SECONDS, $ROUNDS;

for my $round (1 .. $ROUNDS) {
    for my $way (@ways) {
        push @{ $tput{$way} }, wrk("/$way", 32);
        push @{ $lat{$way} }, wrk("/$way", 1);
    }
}

# each round ran the three ways back to back, under the same load from
# whatever else shares the machine: ratios and differences are taken
# within a round, then their median over the rounds

my %m;

for my $way (@ways) {
    my (@ratio, @cpu_ratio, @dp50, @dp99);

    for my $i (0 .. $ROUNDS - 1) {
        push @ratio, $tput{$way}[$i]{rps} / $tput{plain}[$i]{rps};
        push @cpu_ratio, $tput{plain}[$i]{cpu_us} / $tput{$way}[$i]{cpu_us};
        push @dp50, $lat{$way}[$i]{p50} - $lat{plain}[$i]{p50};
        push @dp99, $lat{$way}[$i]{p99} - $lat{plain}[$i]{p99};
    }

    $m{$way} = {
        rps => median(map { $_->{rps} } @{ $tput{$way} }),
        ratio => median(@ratio),
        rmin => (sort { $a <=> $b } @ratio)[0],
        rmax => (sort { $a <=> $b } @ratio)[-1],
        cpu => median(map { $_->{cpu_us} } @{ $tput{$way} }),
        cpu_ratio => median(@cpu_ratio),
        p50 => median(map { $_->{p50} } @{ $lat{$way} }),
        p99 => median(map { $_->{p99} } @{ $lat{$way} }),
        dp50 => median(@dp50),
        dp99 => median(@dp99),
        tp99 => median(map { $_->{p99} } @{ $tput{$way} }),
        errors => 0,
    };
    $m{$way}{errors} += $_->{errors} for @{ $tput{$way} }, @{ $lat{$way} };
}

printf "%-10s %8s %6s %13s %7s %6s %8s %8s %8s %8s %6s\n",
       'way', 'req/s', 'ratio', '(min-max)', 'cpu us', 'ratio', 'p50 ms',
       'p99 ms', '+p50 ms', '+p99 ms', 'errors';

for my $way (@ways) {
    my $r = $m{$way};
    printf "%-10s %8.0f %6.3f %13s %7.1f %6.3f %8.3f %8.3f %8.3f %8.3f "
           . "%6d\n",
           $way, $r->{rps}, $r->{ratio},
           sprintf('(%.2f-%.2f)', $r->{rmin}, $r->{rmax}), $r->{cpu},
           $r->{cpu_ratio}, $r->{p50}, $r->{p99}, $r->{dp50}, $r->{dp99},
           $r->{errors};
}

print "# ratio: req/s over plain's in the same round (median of rounds);"
      . " cpu us: the\n# gateway worker's CPU time a request, its ratio:"
      . " plain's over this; p50, p99:\n# one connection, +: over plain's"
      . " in the same round\n";

printf "# throughput runs: 32 connections (p99 plain %.2f / limit_req %.2f"
       . " / fairgate %.2f ms)\n", map { $m{$_}{tp99} } @ways;

# fairgate's own view: every request admitted and settled, none refused
my $st = $front->get('/status')->{body};
my ($admitted) = $st =~ /"admitted": (\d+)/;
my ($finished) = $st =~ /"finished": (\d+)/;
my ($tokens) = $st =~ /"tokens_out": (\d+)/;
printf "# fairgate admitted %s, finished %s, tokens out %s\n",
       $admitted // '?', $finished // '?', $tokens // '?';

$front->stop;
$upstream->stop;

my $bad = grep { $m{$_}{errors} } @ways;
exit($bad ? 1 : 0);
