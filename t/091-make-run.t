#!/usr/bin/env perl

# make run's script (conf/run.sh) as a user runs it: it refuses a taken
# port, saying so; it starts the engine and nginx on conf/fairgate.conf,
# which answer the API; Ctrl-C (SIGINT to its process group, as a terminal
# sends it) stops both and leaves no process and no segment behind.  The
# engine killed (SIGKILL, as a crash looks) is restarted after a backoff
# that grows, nginx serving on with the module's clean errors; Ctrl-C in a
# backoff stops everything too; nginx killed stops everything.  The
# serving part skips while the module has no local mode.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Cwd ();
use File::Temp ();
use IO::Select;
use IO::Socket::INET;
use POSIX ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test qw($REPO $MODULE wait_for);


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


# the script in its own process group, as a terminal runs it; its output
# in a file

sub start_run {
    my $port = Fairgate::Test::free_port();
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

    my $run = { pid => $pid, port => $port, log => $log,
                shm => "fairgate-run-$port" };
    return $run if wait_for(30, sub {
        waitpid($pid, POSIX::WNOHANG()) != $pid
            or die "make run ended:\n" . run_log($run);
        run_log($run) =~ /Ctrl-C stops it/;
    });

    kill 'INT', -$pid;
    die "make run did not start in 30 s:\n" . run_log($run);
}

sub run_log {
    my ($run, $from) = @_;
    open my $fh, '<', $run->{log}->filename or return '';
    local $/;
    return substr(<$fh> // '', $from // 0);
}

# the pids of the script's process group, those named $name if given;
# not zombies (a stray waits for init to reap it)
sub group_pids {
    my ($run, $name) = @_;
    return map { /^\s*(\d+)\s+(\S+)\s+(\S+)/ && $2 !~ /^Z/
                 && (!defined $name || $3 eq $name) ? $1 : () }
           `ps -o pid=,stat=,comm= -g $run->{pid} 2>/dev/null`;
}

my $model_id = $model =~ s{.*/|\.gguf$}{}gr;

# a streamed chat completion; a refused connection is {error => ...}
sub chat {
    my ($run) = @_;
    my $res = eval {
        Fairgate::Test::http_request($run->{port},
            { method => 'POST', uri => '/v1/chat/completions',
              headers => ['Content-Type: application/json'],
              body => qq({"model": "$model_id", )
                      . '"messages": [{"role": "user", "content": "hi"}], '
                      . '"max_tokens": 4, "stream": true}' });
    };
    return $res // { error => $@ };
}

# it ends by itself: with the status, leaving no process and no segment
sub ends {
    my ($run, $what, $want) = @_;
    my $pid = $run->{pid};
    my $status;

    wait_for(20, sub {
        return 0 unless waitpid($pid, POSIX::WNOHANG()) == $pid;
        $status = $?;
        return 1;
    });
    if (!defined $status) {
        kill 'KILL', -$pid;
        waitpid $pid, 0;
    }
    is($status, $want, "$what: it stops, status " . ($want >> 8))
        or diag(run_log($run));

    is(join(' ', group_pids($run)), '', 'no process of its group is left');
    ok(!-e "/dev/shm/$run->{shm}", 'and no segment');
}

# Ctrl-C: SIGINT to the process group, as a terminal sends it
sub ctrl_c {
    my ($run, $when) = @_;
    kill 'INT', -$run->{pid};
    ends($run, "Ctrl-C $when", 0);
}


# serving, then Ctrl-C

my $run = eval { start_run() };
if (!$run) {
    fail('it starts');
    diag($@);
    done_testing();
    exit;
}
pass('it starts');
my $port = $run->{port};
like(run_log($run), qr{at http://127\.0\.0\.1:$port/v1/ \(model "stories260K"}m,
     'and prints the URL and the model')
    if $model =~ /stories260K\.gguf$/;
like(run_log($run), qr/curl -N http:/, 'and a curl example');

my $res = Fairgate::Test::http_request($port, 'GET /v1/models');
is($res->{status}, 200, 'GET /v1/models');
like($res->{body} // '', qr/"object":\s*"list"/, 'a model list');

$res = chat($run);
is($res->{status}, 200, 'a streamed chat completion');
like($res->{body} // '', qr/data: \[DONE\]/, 'to its end');

ok(-e "/dev/shm/$run->{shm}", 'the segment is there');

ctrl_c($run, 'while it serves');


# the engine killed, as a crash looks: nginx serves on, answering with the
# module's clean errors; the script says so and starts another engine
# after a backoff that grows while the engine keeps dying; the next
# request is served; Ctrl-C in a backoff still stops everything

$run = eval { start_run() };
if (!$run) {
    fail('it starts again');
    diag($@);
    done_testing();
    exit;
}

sub engine_pid {
    my @pids = group_pids($run, 'fairgate-engine');
    return @pids == 1 ? $pids[0] : undef;
}

sub nginx_master {
    my ($run) = @_;
    my ($pid) = map { /^\s*(\d+)\s+(\d+)\s+nginx$/ && $2 == $run->{pid}
                      ? $1 : () }
                `ps -o pid=,ppid=,comm= -g $run->{pid} 2>/dev/null`;
    return $pid;
}

my $nginx = nginx_master($run);
ok($nginx, 'nginx runs');

# a long stream (HTTP/1.0: no chunks), once its first token is in: the
# socket and what it read
sub open_stream {
    my $body = qq({"model": "$model_id", "max_tokens": 1900, )
               . '"ignore_eos": true, "stream": true, '
               . '"messages": [{"role": "user", "content": "Go on"}]}';
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                     PeerPort => $run->{port}, Proto => 'tcp')
        or return;
    print {$sock} "POST /v1/chat/completions HTTP/1.0\r\nHost: x\r\n"
                  . "Content-Type: application/json\r\n"
                  . "Content-Length: " . length($body) . "\r\n\r\n$body";
    my $raw = '';
    read_stream($sock, \$raw, qr/"content":"[^"]/);
    return ($sock, $raw);
}

sub read_stream {   # until the pattern, the end, or 10 s
    my ($sock, $raw, $until) = @_;
    my $sel = IO::Select->new($sock);
    my $deadline = Time::HiRes::time() + 10;
    while (Time::HiRes::time() < $deadline && !($until && $$raw =~ $until)) {
        last unless $sel->can_read(1);
        sysread($sock, $$raw, 65536, length $$raw) or last;
    }
}

# kills the engine; requests meanwhile, until one is served by the next
# engine: what they got, and how long after the script said it serves
sub kill_engine {
    my ($which, $sock, $raw) = @_;
    my $from = length run_log($run);
    my $pid = engine_pid();
    my (%got, $back, $after);

    ok($pid, "an engine runs ($which)") or return {};
    kill 'KILL', $pid;
    read_stream($sock, \$raw) if $sock;

    wait_for(30, sub {
        my $res = chat($run);
        my $body = $res->{body} // '';
        my $status = $res->{status} // 'refused';
        my $what = $status;

        $what .= ' engine_unavailable'
            if $body =~ /"code":\s*"engine_unavailable"/
               && $res->{headers}{'retry-after'};
        $what .= " $1" if $body =~ /"code":\s*"(engine_lost|engine_error)"/;
        $what .= ' served' if $status eq '200' && $body =~ /data: \[DONE\]/
                              && $body !~ /^data: \{"error"/m;
        $got{$what}++;

        if ($what eq '200 served' && defined $back) {
            $after = Time::HiRes::time() - $back;
            return 1;
        }
        $back //= Time::HiRes::time()
            if run_log($run, $from) =~ /the engine serves again/;
        return 0;
    });

    return { pid => $pid, got => \%got, after => $after,
             log => run_log($run, $from), stream => $raw };
}

my ($sock, $raw) = open_stream();
like($raw // '', qr/"content":"[^"]/, 'a long stream runs');
my $k = kill_engine('first', $sock, $raw);
like($k->{stream} // '',
     qr/\n\ndata:\ \{"error":\{[^\n]*"code":"engine_lost"[^\n]*\}\n\n
        data:\ \[DONE\]\n\n\z/x,
     'the engine killed under it: it ends with an error event, then [DONE]');
my $log = $k->{log} // '';
like($log, qr/the engine \(pid \d+\) was killed by SIGKILL after serving \d+ s/,
     'the script says the engine was killed, and how');
like($log, qr/restarting the engine in 0\.5 s \(restart 1\)/,
     'and restarts it after 0.5 s');
like($log, qr/the engine serves again \(pid (\d+)\)/, 'which serves again');
ok(defined $k->{after} && $k->{after} < 3,
   'the next request is served within 3 s of it')
    or diag(explain($k->{got}), $log);
is($k->{got}{refused}, undef, 'no request was refused meanwhile');
is(join(', ', grep {
              !/^(?:503 engine_unavailable|502 engine_(?:lost|error)|200\b)/
          } sort keys %{ $k->{got} }),
   '', 'each got 503 engine_unavailable with Retry-After, 502 engine_lost '
       . '(or engine_error), '
       . 'or 200')
    or diag(explain($k->{got}));
ok($k->{got}{'503 engine_unavailable'},
   'while the engine was away: 503 engine_unavailable')
    or diag(explain($k->{got}));
is(nginx_master($run), $nginx, 'nginx is the same all along');

$k = kill_engine('second, at once');
like($k->{log} // '', qr/restarting the engine in 1\.0 s \(restart 2\)/,
     'killed again at once: the backoff doubles');
like($k->{log} // '', qr/the engine serves again/, 'it serves again');
ok(defined $k->{after}, 'and the next request is served')
    or diag(explain($k->{got}), $k->{log});

my $from = length run_log($run);
my $pid = engine_pid();
ok($pid, 'an engine runs (third)') and kill 'KILL', $pid;
ok(wait_for(10, sub {
       run_log($run, $from) =~ /restarting the engine in 2\.0 s \(restart 3\)/
   }), 'a third time: 2 s');
ctrl_c($run, 'in the backoff');
unlike(run_log($run, $from), qr/serves again/, 'which it was');


# nginx killed: the gateway is gone, and everything stops, the workers of
# the killed master too

$run = eval { start_run() };
if (!$run) {
    fail('it starts a third time');
    diag($@);
    done_testing();
    exit;
}

$pid = nginx_master($run);
ok($pid, 'nginx runs') and kill 'KILL', $pid;
ends($run, 'nginx killed', 1 << 8);
like(run_log($run), qr/nginx was killed by SIGKILL; the engine stops too/,
     'saying why');

done_testing();
