#!/usr/bin/env perl

# A gateway at a million keys and 100,000 active tenants (docs/scale.md).
#
#   keys     keys files of 1,000 and of KEYS keys (51-byte keys, 10 a user,
#            10 apps), each: nginx -t, start and reload times (medians of
#            ROUNDS), the master's memory (VmRSS, and its peak over a
#            reload) and a worker's private memory after its first
#            requests; the configuration's bytes a key are the difference
#            between the two files over the difference in keys.
#   zone     the size nginx -t asks of a zone for max_tenants=10,000 and
#            for TENANTS: the bytes a tenant takes are the difference.
#   load     a drop-in gateway (2 workers) with the KEYS file, its zone
#            sized for TENANTS users and their 10 apps: wrk (1 thread,
#            CONNS connections) sends requests to each user's first key
#            in turn until every user has sent one (5-second runs), so
#            that every user is a tenant of the zone; then, SECONDS each,
#            the same spread over all the users, and a single key:
#            requests per second, and the workers' CPU time a request.
#   evict    the same spread against a zone of max_tenants=EVICT: its
#            tenants, those evicted, and the requests refused (none: an
#            idle tenant makes room for a new one).
#
# Files are made in a temporary folder, removed at exit; every server is
# stopped by its pid.
# Usage: bench_scale.pl [KEYS [TENANTS [SECONDS [ROUNDS [CONNS [EVICT]]]]]]

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Digest::SHA qw(sha256_hex);
use File::Temp ();
use Time::HiRes ();

use Fairgate::Test qw(:DEFAULT static_upstream);
use Fairgate::Bench qw(cpu_seconds front_keepalive front_upstream median);

my $KEYS = shift // 1000000;
my $TENANTS = shift // 100000;
my $SECONDS = shift // 5;
my $ROUNDS = shift // 3;
my $CONNS = shift // 4;
my $EVICT = shift // 20000;

system('command -v wrk > /dev/null') == 0
    or die "bench_scale: wrk is not installed\n";

my $dir = File::Temp::tempdir('fairgate-scale-XXXXXX', TMPDIR => 1,
                              CLEANUP => 1);
chmod 0755, $dir;


# key i: 51 bytes; its user i % TENANTS (10 keys a user at a million),
# its app i % 10
sub key { sprintf 'sk-scale-%042d', $_[0] }

sub keys_file {
    my ($n) = @_;
    my $file = "$dir/keys-$n";
    my $t = Time::HiRes::time();

    open my $fh, '>', $file or die "$file: $!\n";
    for (my $i = 0; $i < $n; $i += 10000) {
        my $last = $i + 10000 < $n ? $i + 10000 : $n;
        print {$fh} map { sha256_hex(key($_)) . ' user' . ($_ % $TENANTS)
                          . ' app' . ($_ % 10) . " 1\n" } $i .. $last - 1;
    }
    close $fh or die "$file: $!\n";

    printf "# %s: %d keys, %.1f MB, written in %.1f s\n", $file, $n,
           (-s $file) / 1e6, Time::HiRes::time() - $t;
    return $file;
}

sub status_kb {
    my ($pid, $field) = @_;
    open my $fh, '<', "/proc/$pid/status" or return 0;
    my ($kb) = join('', <$fh>) =~ /^$field:\s+(\d+)/m;
    return $kb // 0;
}

# a process's own memory: its private pages but those of shared memory
# (nginx's zones, "/dev/zero (deleted)"), which count as private while no
# other process has touched them
sub private_kb {
    my ($pid) = @_;
    open my $fh, '<', "/proc/$pid/smaps" or return 0;
    my ($kb, $shm) = (0, 0);
    while (my $line = <$fh>) {
        if ($line =~ /^[0-9a-f]+-[0-9a-f]+ /) {
            $shm = $line =~ m{/dev/zero|SYSV};
        } elsif (!$shm && $line =~ /^Private_(?:Clean|Dirty):\s+(\d+)/) {
            $kb += $1;
        }
    }
    return $kb;
}

my $up = static_upstream(workers => 1);
my $upstream = front_upstream('127.0.0.1:' . $up->port);

sub gateway {
    my ($file, $zone) = @_;
    return Fairgate::Test::Server->new(
        workers => 2,
        http_config => $upstream . $zone,
        config => front_keepalive() . <<"END");
    location /v1/ {
        fairgate zone=scale;
        fairgate_keys $file;
        proxy_pass http://backend;
    }
    location = /status { fairgate off; fairgate_status; }
END
}

sub chat {
    my ($s, $key) = @_;
    return $s->request("POST /v1/chat/completions\n"
                       . '{"model":"m","messages":[{"role":"user",'
                       . '"content":"hi"}]}',
                       headers => ["Authorization: Bearer $key",
                                   'Content-Type: application/json']);
}


# keys: the configuration's time and memory, 1,000 keys and KEYS

my $ZONE = "fairgate_zone zone=scale:16m inflight=256;\n";
my %mem;

printf "# %s; %d keys, %d tenants, %d s a load, %d rounds, %d connections\n",
       scalar(localtime), $KEYS, $TENANTS, $SECONDS, $ROUNDS, $CONNS;
printf "%-9s %8s %8s %9s %10s %10s %12s\n", 'keys', 'test s', 'start s',
       'reload s', 'master MB', 'peak MB', 'worker +MB';

my $big;

for my $n (1000, $KEYS) {
    my $file = keys_file($n);
    $big = $file if $n == $KEYS;
    my (@test, @start, @reload, $rss, $hwm, $priv);

    for (1 .. $ROUNDS) {
        my $s = gateway($file, $ZONE);
        my $t = Time::HiRes::time();
        my ($rc, $out) = $s->test_config;
        push @test, Time::HiRes::time() - $t;
        die "bench_scale: nginx -t failed: $out\n" if $rc != 0;

        $t = Time::HiRes::time();
        $s->start or die $s->last_error;
        push @start, Time::HiRes::time() - $t;

        my $code = chat($s, key($n - 1))->{status} // 0;
        die "bench_scale: the last key got $code\n" if $code != 200;

        $rss = status_kb($s->pid, 'VmRSS');
        $priv = private_kb(($s->worker_pids)[0]);

        $t = Time::HiRes::time();
        $s->reload or die $s->last_error;
        push @reload, Time::HiRes::time() - $t;
        $hwm = status_kb($s->pid, 'VmHWM');

        $s->stop;
    }

    $mem{$n} = $rss;
    printf "%-9d %8.2f %8.2f %9.2f %10.1f %10.1f %12.1f\n", $n,
           median(@test), median(@start), median(@reload), $rss / 1024,
           $hwm / 1024, $priv / 1024;
}

printf "# configuration memory: %.0f bytes a key (master RSS)\n",
       ($mem{$KEYS} - $mem{1000}) * 1024 / ($KEYS - 1000);


# zone: the size nginx -t asks for

my %need;

for my $n (10000, $TENANTS) {
    my $s = gateway("$dir/keys-1000",
                    "fairgate_zone zone=scale:8m max_tenants=$n;\n");
    my (undef, $out) = $s->test_config;
    ($need{$n}) = $out =~ /needs at least (\d+)k/
        or die "bench_scale: no size asked for max_tenants=$n: $out\n";
}

printf "# zone: max_tenants=10000 needs %d KB, max_tenants=%d %d KB: "
       . "%.0f bytes a tenant\n", $need{10000}, $TENANTS, $need{$TENANTS},
       ($need{$TENANTS} - $need{10000}) * 1024 / ($TENANTS - 10000);


# load: wrk over the first keys of n users from the one given after "--"
# (the fill goes on from where its last run stopped), or one key

sub lua {
    my ($name, $n) = @_;
    open my $fh, '>', "$dir/$name.lua" or die;
    print {$fh} <<"END";
wrk.method = "POST"
wrk.body = '{"model":"m","max_tokens":16,"messages":[{"role":"user",'
    .. '"content":"Say hello to the benchmark, briefly."}]}'
wrk.headers["Content-Type"] = "application/json"
local i = 0
init = function(args)
    i = tonumber(args[1] or "0") % $n
end
request = function()
    wrk.headers["Authorization"] = "Bearer "
        .. string.format("sk-scale-%042d", i)
    i = (i + 1) % $n
    return wrk.format()
end
END
    close $fh;
    return "$dir/$name.lua";
}

sub run_wrk {
    my ($s, $script, $secs, $from) = @_;
    my @w = $s->worker_pids;
    my $cpu = 0;
    $cpu += cpu_seconds($_) for @w;

    my $url = $s->url('/v1/chat/completions');
    $from //= 0;
    my $out = `wrk -t1 -c$CONNS -d${secs}s -s $script $url -- $from 2>&1`;

    my $used = -$cpu;
    $used += cpu_seconds($_) for @w;
    my ($n) = $out =~ /(\d+) requests in/;
    warn "bench_scale: wrk: $out\n" unless $n;
    my ($rps) = $out =~ /Requests\/sec:\s+([\d.]+)/;
    my ($bad) = $out =~ /Non-2xx or 3xx responses:\s+(\d+)/;
    return { requests => $n // 0, rps => $rps // 0, bad => $bad // 0,
             us => $n ? 1e6 * $used / $n : 0 };
}

sub zone_line {
    my ($s) = @_;
    my $z = $s->status_json('/status?limit=1')->{zones}[0] // {};
    return sprintf 'tenants %d, expired %d, throttled %d, queue_full %d',
           $z->{tenants} // 0, $z->{expired} // 0, $z->{throttled} // 0,
           $z->{queue_full} // 0;
}

sub load {
    my ($what, $max) = @_;
    my $mb = int(($need{$TENANTS} * $max / $TENANTS) / 1024) + 16;
    my $s = gateway($big, "fairgate_zone zone=scale:${mb}m inflight=256 "
                          . "max_tenants=$max;\n");
    $s->start or die $s->last_error;

    # every user once: 5-second runs, each from where the last ended,
    # for 10 minutes at the most
    my $spread = lua('spread', $TENANTS);
    my ($sent, $rate, $bad, $t) = (0, 0, 0, Time::HiRes::time());

    while ($sent < $TENANTS && Time::HiRes::time() - $t < 600) {
        my $r = run_wrk($s, $spread, 5, $sent);
        $sent += $r->{requests};
        $bad += $r->{bad};
        $rate = $r->{rps};
        last if $r->{requests} == 0;
    }

    printf "# %s: zone %d MB, max_tenants=%d; filled with %d requests "
           . "(%.0f/s, %d not 2xx): %s\n", $what, $mb, $max, $sent, $rate,
           $bad, zone_line($s);

    for my $case (['spread', $spread], ['one key', lua('one', 1)]) {
        my (@rps, @us, $bad);
        for (1 .. $ROUNDS) {
            my $r = run_wrk($s, $case->[1], $SECONDS);
            push @rps, $r->{rps};
            push @us, $r->{us};
            $bad += $r->{bad};
        }
        printf "%-8s %-8s %10.0f req/s %8.1f us CPU a request, %d not 2xx\n",
               $what, $case->[0], median(@rps), median(@us), $bad;
    }

    printf "# %s after: %s; workers' private memory %s MB\n", $what,
           zone_line($s),
           join(', ', map { sprintf '%.1f', private_kb($_) / 1024 }
                          $s->worker_pids);
    $s->stop;
}

# the users and the 10 apps: apps are tenants too
load('load', $TENANTS + 10);
load('evict', $EVICT);

$up->stop;
