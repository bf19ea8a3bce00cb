#!/usr/bin/env perl

# The official openai npm package completes a chat through the gateway in
# local mode, not streamed and streamed, with logprobs, penalties,
# logit_bias and n = 2 choices too: fairgate-engine on stories260K
# (a generated model without it), nginx with fairgate_engine_pass in front,
# and t/node/chat.mjs as the client.  Skips, saying why, without node, the
# package (t/node/node_modules: make test installs it) or local mode in the
# module.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Cwd ();
use File::Temp ();
use POSIX ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test qw($REPO $MODULE node_bin node_missing);


my $why = node_missing(qw(openai));
plan skip_all => $why if $why;
my $node = node_bin();

plan skip_all => "$MODULE is missing: run make" unless -f $MODULE;

my $so = do { open my $fh, '<:raw', $MODULE or die "$MODULE: $!"; local $/; <$fh> };
plan skip_all => 'the module has no local mode yet '
                 . '(no fairgate_engine_pass directive in it)'
    unless index($so, "fairgate_engine_pass\0") >= 0;
undef $so;

my $tmp = File::Temp::tempdir('fairgate-npm-XXXXXX', TMPDIR => 1,
                              CLEANUP => !$ENV{FAIRGATE_KEEP});
chmod 0755, $tmp;

# the model: stories260K when it is there, else a generated one of its shape
my $model = $ENV{FAIRGATE_MODEL}
            // Cwd::abs_path("$REPO/../shared/models/stories260K.gguf");
if (!defined $model || !-f $model) {
    $model = "$tmp/generated.gguf";
    my ($rc, $out) = Fairgate::Test::run_cmd("$Fairgate::Test::BUILD/fairgate-gguf-gen",
                                             '-o', $model);
    die "fairgate-gguf-gen: $out" if $rc;
    diag('no stories260K.gguf: on a generated model');
}

my $shm = "/fairgate-t-npm-$$";
my @group = ();
if ($> == 0) {
    my $gid = (getpwnam 'nobody')[3];
    @group = ('--shm-group', scalar getgrgid $gid) if defined $gid;
}


# the engine: started first, serving once it says so

my $engine_log = "$tmp/engine.log";
my $engine = fork // die "fork: $!";
if (!$engine) {
    open STDIN, '<', '/dev/null';
    open STDOUT, '>', $engine_log;
    open STDERR, '>&', \*STDOUT;
    my @cmd = ("$Fairgate::Test::BUILD/fairgate-engine", '--model', $model,
               '--shm', $shm, '--kv-blocks', 256, '--threads', 1, @group);
    { no warnings 'exec'; exec { $cmd[0] } @cmd; }
    print "exec $cmd[0]: $!\n";
    POSIX::_exit(127);
}

END { stop_engine() if $engine; }

sub engine_log {
    open my $fh, '<', $engine_log or return '';
    local $/;
    return <$fh> // '';
}

sub stop_engine {
    my $pid = $engine or return undef;
    undef $engine;
    for my $sig (qw(TERM KILL)) {
        kill $sig, $pid;
        my $deadline = Time::HiRes::time() + 10;
        while (Time::HiRes::time() < $deadline) {
            return $? if waitpid($pid, POSIX::WNOHANG()) == $pid;
            Time::HiRes::sleep(0.02);
        }
    }
    return undef;
}

my $deadline = Time::HiRes::time() + 30;
until (engine_log() =~ /serving/) {
    if (waitpid($engine, POSIX::WNOHANG()) == $engine || Time::HiRes::time() > $deadline) {
        undef $engine;
        BAIL_OUT("the engine did not start:\n" . engine_log());
    }
    Time::HiRes::sleep(0.02);
}
pass('the engine serves');


# the gateway in front of it

my $server = Fairgate::Test::Server->new(
    http_config => <<"END",
    fairgate_zone zone=npm:1m max_tenants=100 policy=vtc;
    fairgate_engine local shm=$shm "model=$model" id=stories260K;
END
    config => <<'END',
        location /v1/ {
            fairgate zone=npm queue=8 timeout=60s;
            fairgate_identity user=$http_authorization;
            fairgate_engine_pass local;
        }
END
);

if (!ok($server->start, 'nginx starts')) {
    diag($server->last_error);
    done_testing();
    exit;
}

my ($rc, $out) = Fairgate::Test::run_cmd('timeout', '120', $node,
    "$REPO/t/node/chat.mjs", $server->url('/v1'), 'stories260K');

is($rc, 0, 'node t/node/chat.mjs exits 0')
    or diag("its output:\n$out\n" . $server->log_tail);
like($out, qr/^models: ok .*"stories260K"/m, 'models.list() has the model');
like($out, qr/^chat: ok finish=(stop|length) tokens=\d+ text="/m,
     'chat.completions.create() completes a chat');
like($out, qr/^chat stream: ok chunks=\d+ finish=(stop|length) tokens=\d+/m,
     'and streams it, the same text, with usage');
like($out, qr/^logprobs: ok entries=\d+/m,
     'logprobs and top_logprobs: one entry a token, in its types');
like($out, qr/^logprobs stream: ok/m, '... and the same entries streamed');
like($out, qr/^completion logprobs: ok/m,
     'completions.create() with logprobs: 2');
like($out, qr/^completion echo logprobs: ok/m,
     '... with echo: the prompt\'s first, streamed and not, max_tokens 0');
like($out, qr/^penalties: ok/m, 'frequency and presence penalties');
like($out, qr/^logit_bias: ok/m, 'logit_bias +100: that token alone');
like($out, qr/^n=2: ok tokens=\d+/m,
     'n = 2: two choices in order, usage the prompt once and both');
like($out, qr/^n=2 stream: ok/m, '... streamed under their indices');
like($out, qr/^n=2 completions: ok/m, '... and completions with best_of 2');
like($out, qr/^bad penalty: ok 400 frequency_penalty/m,
     'an out-of-range penalty: BadRequestError naming it');
note($out);

is($server->stop, 0, 'nginx exits cleanly');
my $log = $server->error_log;
unlike($log, qr/\[(?:alert|crit|emerg)\]/, 'no alert, crit or emerg in the log');

is(stop_engine(), 0, 'the engine stops cleanly');
like(engine_log(), qr/stopped; shm \Q$shm\E removed/, 'and removes its segment');

done_testing();
