#!/usr/bin/env perl

# The status page of a big zone: a drop-in gateway (2 workers, identity
# from X-User) whose zone wrk fills with TENANTS users, then each page
# fetched ROUNDS times while a probe client sends chat completions to the
# same zone one after another.  Reported per page: its time and bytes
# (medians), the probe's longest request while the pages were served
# against its longest before (the stall the page causes), and the
# workers' largest RSS before and after.
# Usage: bench_status.pl [TENANTS [ROUNDS]]

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use POSIX ();
use Time::HiRes ();

use Fairgate::Test qw(:DEFAULT static_upstream);
use Fairgate::Bench qw(bench_dir front_keepalive front_upstream wrk_chat
                       median);

my $TENANTS = shift // 10000;
my $ROUNDS = shift // 5;

die "bench_status: wrk not found\n" if system('wrk --version >/dev/null 2>&1')
                                      && system('command -v wrk >/dev/null');

my $dir = bench_dir(1);
my $upstream = static_upstream(workers => 1);
my $zone_mb = int($TENANTS * 1.2 / 1024) + 16;

my $s = Fairgate::Test::Server->new(
    workers => 2,
    http_config => front_upstream('127.0.0.1:' . $upstream->port) . <<"END",
    fairgate_zone zone=bench:${zone_mb}m inflight=256 max_tenants=$TENANTS;
END
    config => front_keepalive() . <<"END");
    location /v1/ {
        fairgate zone=bench;
        fairgate_identity user=\$http_x_user;
        proxy_pass http://backend;
    }
    location = /status { fairgate_status; }
    location = /metrics { fairgate_status format=prometheus; }
END
$s->start or die $s->last_error;

my $port = $s->port;

# each request a new user until TENANTS are made
wrk_chat($dir, <<"END");
local i = 0
request = function()
    i = i % $TENANTS + 1
    wrk.headers["X-User"] = "user" .. i
    return wrk.format()
end
END

my $secs = int($TENANTS / 2000) + 3;
my $url = "http://127.0.0.1:$port/v1/chat/completions";
`wrk -t1 -c1 -d${secs}s -s $dir/post.lua $url`;

my $tenants = $s->status_json('/status?limit=1')->{zones}[0]{tenants} // 0;

sub rss_mb {
    my $max = 0;
    for my $pid ($s->worker_pids) {
        open my $fh, '<', "/proc/$pid/status" or next;
        my ($kb) = join('', <$fh>) =~ /^VmRSS:\s+(\d+)/m;
        $max = $kb if $kb > $max;
    }
    return $max / 1024;
}

# the probe: requests one after another until told to stop (a file), the
# longest written at the end
sub probe {
    my ($file, $stop) = @_;
    my $pid = fork // die;
    return $pid if $pid;

    my ($max, $n) = (0, 0);
    my $deadline = Time::HiRes::time() + 600;
    while (!-e $stop && Time::HiRes::time() < $deadline) {
        my $t = Time::HiRes::time();
        Fairgate::Test::http_request($port,
            { method => 'POST', uri => '/v1/chat/completions',
              body => '{"model":"m","messages":[{"role":"user",'
                      . '"content":"hi"}]}',
              headers => ['Content-Type: application/json',
                          'X-User: probe'] });
        $t = Time::HiRes::time() - $t;
        $max = $t if $t > $max;
        $n++;
    }
    open my $fh, '>', $file or die;
    print {$fh} "$max $n\n";
    close $fh;
    POSIX::_exit(0);
}

sub probe_max {
    my ($work) = @_;
    my ($file, $stop) = ("$dir/probe", "$dir/stop");
    unlink $file, $stop;
    my $pid = probe($file, $stop);
    Time::HiRes::sleep(0.3);   # the probe's connections before the pages
    my @r = $work->();
    open my $fh, '>', $stop or die;
    close $fh;
    waitpid $pid, 0;
    open $fh, '<', $file or die;
    my ($max) = split ' ', scalar <$fh>;
    return ($max, @r);
}

printf "# %s; %d tenants in the zone (%d asked), %d rounds a page\n",
       scalar(localtime), $tenants, $TENANTS, $ROUNDS;

my ($idle) = probe_max(sub { Time::HiRes::sleep(2) });
printf "# probe alone: longest request %.1f ms; worker RSS %.1f MB\n",
       1e3 * $idle, rss_mb();

printf "%-22s %10s %12s %14s %10s\n", 'page', 'time ms', 'bytes',
       'stall ms', 'RSS MB';

for my $page ('/status', '/status?limit=10000', '/status?limit=100',
              '/metrics', '/status?tenant=user99')
{
    my (@t, $bytes);
    my ($max) = probe_max(sub {
        for (1 .. $ROUNDS) {
            my $t0 = Time::HiRes::time();
            my $res = $s->get($page, timeout => 60);
            push @t, Time::HiRes::time() - $t0;
            $bytes = length($res->{body} // '');
        }
    });
    printf "%-22s %10.1f %12d %14.1f %10.1f\n", $page, 1e3 * median(@t),
           $bytes, 1e3 * $max, rss_mb();
}

$s->stop;
$upstream->stop;
