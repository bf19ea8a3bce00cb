package Fairgate::Bench;

# What the benchmarks under t/bench share: a folder for their files with
# the tenants' keys in it, the front server's keepalive lines and its
# upstream, wrk's script of a chat completion, the CPU time a process used, the median of a series.  Core
# Perl only.

use strict;
use warnings;

use Digest::SHA qw(sha256_hex);
use Exporter 'import';
use File::Temp ();

our @EXPORT_OK = qw(bench_dir front_keepalive front_upstream wrk_chat
                    cpu_seconds median);


my $tick = `getconf CLK_TCK` + 0 || 100;


# a folder removed at exit, with "keys": tenants 1 .. N, the key of tenant
# i "sk-bench-i", its user "useri", its app app->(i) (by default app0 and
# app1 in turn)
sub bench_dir {
    my ($tenants, $app) = @_;
    $app //= sub { 'app' . ($_[0] % 2) };

    my $dir = File::Temp::tempdir('fairgate-bench-XXXXXX', TMPDIR => 1,
                                  CLEANUP => 1);
    chmod 0755, $dir;

    open my $fh, '>', "$dir/keys" or die;
    print {$fh} map { sha256_hex("sk-bench-$_") . " user$_ " . $app->($_)
                      . " 1\n" } 1 .. $tenants;
    close $fh;

    return $dir;
}


# the front server's first lines: no access log, connections kept open to
# the clients and to the upstream
sub front_keepalive {
    return <<'END';
    access_log off;
    keepalive_requests 1000000;

    proxy_http_version 1.1;
    proxy_set_header Connection "";
END
}


# the upstream "backend" at addr, its connections kept
sub front_upstream {
    my ($addr) = @_;
    return <<"END";
    upstream backend {
        server $addr;
        keepalive 64;
    }
END
}


# dir/post.lua: wrk POSTs a short chat completion, then the lua given (its
# request function)
sub wrk_chat {
    my ($dir, $lua) = @_;
    open my $fh, '>', "$dir/post.lua" or die;
    print {$fh} <<'END', $lua;
wrk.method = "POST"
wrk.body = '{"model":"m","max_tokens":16,"messages":[{"role":"system",'
    .. '"content":"You are a helpful assistant."},{"role":"user",'
    .. '"content":"Say hello to the benchmark, briefly."}]}'
wrk.headers["Content-Type"] = "application/json"
END
    close $fh;
}


# CPU seconds the process used so far (utime + stime)
sub cpu_seconds {
    my ($pid) = @_;
    open my $fh, '<', "/proc/$pid/stat" or die "/proc/$pid/stat: $!\n";
    my $stat = <$fh>;
    my @f = split ' ', substr($stat, rindex($stat, ')') + 2);
    return ($f[11] + $f[12]) / $tick;
}


sub median {
    my @v = sort { $a <=> $b } @_;
    return $v[$#v / 2];
}


1;
