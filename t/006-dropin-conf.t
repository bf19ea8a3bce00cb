#!/usr/bin/env perl

# conf/dropin.conf, the example to copy, runs: nginx -t passes, and with
# its upstream and port pointed at the mock it serves its example keys,
# refuses others, and shows its status and metrics.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use File::Copy ();
use File::Path ();
use File::Temp ();
use POSIX ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test qw($REPO $NGINX $MODULE);
use Fairgate::MockUpstream;


my $up = Fairgate::MockUpstream->new;
my $port = Fairgate::Test::free_port();

my $prefix = File::Temp::tempdir('fairgate-conf-XXXXXX', TMPDIR => 1,
                                 CLEANUP => !$ENV{FAIRGATE_KEEP});
chmod 0755, $prefix;
File::Path::make_path("$prefix/conf", "$prefix/build");
symlink $MODULE, "$prefix/build/ngx_http_fairgate_module.so" or die;
File::Copy::copy("$REPO/conf/dropin.keys", "$prefix/conf/dropin.keys")
    or die;

open my $in, '<', "$REPO/conf/dropin.conf" or die;
my $conf = do { local $/; <$in> };

is(scalar(() = $conf =~ /server 127\.0\.0\.1:8000;/g), 1,
   'the example points at 127.0.0.1:8000');
$conf =~ s/server 127\.0\.0\.1:8000;/server ${\ $up->addr };/;
$conf =~ s/listen 127\.0\.0\.1:8080;/listen 127.0.0.1:$port;/;
$conf =~ s/^user .*$//m;

# the tests may run as root: the workers run as nobody then
open my $out, '>', "$prefix/conf/dropin.conf" or die;
print {$out} $conf;
close $out;

my @nginx = ($NGINX, '-p', "$prefix/", '-e', "$prefix/error.log",
             '-c', "$prefix/conf/dropin.conf");

my ($rc, $output) = Fairgate::Test::run_cmd(@nginx, '-t');
is($rc, 0, 'nginx -t passes') or diag($output);

my $pid = fork // die;
if (!$pid) {
    open STDIN, '<', '/dev/null';
    open STDOUT, '>>', "$prefix/stdout.log";
    open STDERR, '>&', \*STDOUT;
    { no warnings 'exec'; exec { $nginx[0] } @nginx; }
    POSIX::_exit(127);
}

my $deadline = Time::HiRes::time() + 10;
my $up_now;
while (Time::HiRes::time() < $deadline) {
    $up_now = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                    PeerPort => $port, Proto => 'tcp');
    last if $up_now;
    last if waitpid($pid, POSIX::WNOHANG()) == $pid;
    Time::HiRes::sleep(0.02);
}
if (!ok($up_now, 'it starts')) {
    diag(`cat $prefix/error.log $prefix/stdout.log`);
    kill 'KILL', $pid;
    waitpid $pid, 0;
    done_testing();
    exit;
}
close $up_now;

my $body = '{"model": "m", "messages": [{"role": "user", "content": "hi"}]}';

sub post {
    my ($key) = @_;
    return Fairgate::Test::http_request($port,
        { method => 'POST', uri => '/v1/chat/completions', body => $body,
          headers => ['Content-Type: application/json',
                      $key ? ("Authorization: Bearer $key") : ()] });
}

my $res = post('sk-example-alice');
is($res->{status}, 200, 'an example key is served');
like($res->{body}, qr/"chat\.completion"/, 'by the upstream');
is($res->{headers}{'x-ratelimit-limit-requests'}, 120,
   'with the user limit in the headers');
is(post('sk-example-batch')->{status}, 200, 'the batch key too');
is(post('sk-nobody')->{status}, 401, 'another key: 401');

my ($auth) = map { $_->{key} } grep { $_->{what} eq 'start' } $up->events;
is($auth, '-', 'the client key is not passed to the upstream');

$res = Fairgate::Test::http_request($port, 'GET /fairgate/status');
is($res->{status}, 200, 'status');
like($res->{body}, qr/"name": "alice"/, 'it knows alice');
$res = Fairgate::Test::http_request($port, 'GET /fairgate/metrics');
like($res->{body}, qr/^fairgate_requests_total\{zone="llm",event="admitted"\} 2$/m,
     'metrics');

open my $log, '<', "$prefix/build/dropin-access.log" or die;
my @lines = <$log>;
like($lines[0], qr/user="alice" app="chat" queued=0\.000 in=4 out=16 (?#
                   )\(reported\) outcome=served/, 'the access log format');

kill 'QUIT', $pid;
$deadline = Time::HiRes::time() + 10;
my $status;
while (Time::HiRes::time() < $deadline) {
    if (waitpid($pid, POSIX::WNOHANG()) == $pid) {
        $status = $?;
        last;
    }
    Time::HiRes::sleep(0.02);
}
if (!defined $status) {
    kill 'KILL', $pid;
    waitpid $pid, 0;
}
is($status, 0, 'nginx exits cleanly');

open my $err, '<', "$prefix/error.log" or die;
my $errors = do { local $/; <$err> };
unlike($errors, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');

$up->stop;

done_testing();
