#!/usr/bin/env perl

# make run's script (conf/run.sh) as a user runs it: it refuses a taken
# port, saying so; it starts the engine and nginx on conf/fairgate.conf,
# which answer the API; Ctrl-C (SIGINT to its process group, as a terminal
# sends it) stops both and leaves no process and no segment behind.  The
# serving part skips while the module has no local mode.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Cwd ();
use File::Temp ();
use IO::Socket::INET;
use POSIX ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test qw($REPO $MODULE);


plan skip_all => "$MODULE is missing: run make" unless -f $MODULE;

my $model = $ENV{FAIRGATE_MODEL}
            // Cwd::abs_path("$REPO/../shared/models/stories260K.gguf");
plan skip_all => 'no stories260K.gguf in ../shared/models (or FAIRGATE_MODEL)'
    unless defined $model && -f $model;

local $ENV{FAIRGATE_MODEL} = $model;


# a taken port: a clear refusal before anything starts

my $taken = IO::Socket::INET->new(Listen => 1, LocalAddr => '127.0.0.1',
                                  LocalPort => 0, Proto => 'tcp') or die;
{
    local $ENV{FAIRGATE_PORT} = $taken->sockport;
    my ($rc, $out) = Fairgate::Test::run_cmd('bash', "$REPO/conf/run.sh");
    isnt($rc, 0, 'a taken port: it fails');
    like($out, qr/port \d+ on 127\.0\.0\.1 is taken by another process/,
         'saying the port is taken') or diag($out);
    unlike($out, qr/engine:/, 'before starting the engine');
}
close $taken;

{
    local $ENV{FAIRGATE_PORT} = 'http';
    my ($rc, $out) = Fairgate::Test::run_cmd('bash', "$REPO/conf/run.sh");
    like($out, qr/PORT="http": expected a port number/, 'a bad port is named');
}

my $so = do { open my $fh, '<:raw', $MODULE or die "$MODULE: $!"; local $/; <$fh> };
if (index($so, "fairgate_engine_pass\0") < 0) {
    done_testing();
    exit;
}
undef $so;


# serving, then Ctrl-C

my $port = Fairgate::Test::free_port();
my $shm = "fairgate-run-$port";
my $log = File::Temp->new(TMPDIR => 1);

my $pid = fork // die "fork: $!";
if (!$pid) {
    POSIX::setsid();
    open STDIN, '<', '/dev/null';
    open STDOUT, '>', $log->filename;
    open STDERR, '>&', \*STDOUT;
    $ENV{FAIRGATE_PORT} = $port;
    { no warnings 'exec'; exec 'bash', "$REPO/conf/run.sh"; }
    POSIX::_exit(127);
}

sub run_log { open my $fh, '<', $log->filename or return ''; local $/; <$fh> // '' }

my $deadline = Time::HiRes::time() + 30;
until (run_log() =~ /Ctrl-C stops it/) {
    if (waitpid($pid, POSIX::WNOHANG()) == $pid
        || Time::HiRes::time() > $deadline)
    {
        kill 'INT', -$pid;
        fail('it starts');
        diag(run_log());
        done_testing();
        exit;
    }
    Time::HiRes::sleep(0.05);
}
pass('it starts');
like(run_log(), qr{at http://127\.0\.0\.1:$port/v1/ \(model "stories260K"}m,
     'and prints the URL and the model')
    if $model =~ /stories260K\.gguf$/;
like(run_log(), qr/curl -N http:/, 'and a curl example');

my $res = Fairgate::Test::http_request($port, 'GET /v1/models');
is($res->{status}, 200, 'GET /v1/models');
like($res->{body} // '', qr/"object":\s*"list"/, 'a model list');

$res = Fairgate::Test::http_request($port,
    { method => 'POST', uri => '/v1/chat/completions',
      headers => ['Content-Type: application/json'],
      body => '{"model": "' . ($model =~ s{.*/|\.gguf$}{}gr) . '", '
              . '"messages": [{"role": "user", "content": "hi"}], '
              . '"max_tokens": 4, "stream": true}' });
is($res->{status}, 200, 'a streamed chat completion');
like($res->{body} // '', qr/data: \[DONE\]/, 'to its end');

ok(-e "/dev/shm/$shm", 'the segment is there');

kill 'INT', -$pid;
$deadline = Time::HiRes::time() + 20;
my $status;
while (Time::HiRes::time() < $deadline) {
    if (waitpid($pid, POSIX::WNOHANG()) == $pid) {
        $status = $?;
        last;
    }
    Time::HiRes::sleep(0.05);
}
if (!defined $status) {
    kill 'KILL', -$pid;
    waitpid $pid, 0;
}
is($status, 0, 'Ctrl-C: it stops, status 0');

my @left = grep { kill 0, $_ } map { /^\s*(\d+)/ ? $1 : () }
           `ps -o pid= -g $pid 2>/dev/null`;
is("@left", '', 'no process of its group is left');
ok(!-e "/dev/shm/$shm", 'and no segment');

done_testing();
