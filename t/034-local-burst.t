#!/usr/bin/env perl

# Local mode under bursts: a busy submission ring delays a request, it
# never refuses it.  The engine's ring has 2 slots (--sub-slots 2), so
# that bursts of 32 concurrent completions to two workers find it full
# (and its lock held by the other worker) again and again: every request
# is served while the engine lives, none gets 503.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use IO::Select;
use JSON::PP ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test qw(:DEFAULT gateway);
use Fairgate::Engine;

plan skip_all => "no $Fairgate::Engine::MODEL"
    unless -f $Fairgate::Engine::MODEL;

my $J = JSON::PP->new->canonical;

my $engine = Fairgate::Engine->new(backend => 'sim',
                                   args => ['--sub-slots', '2',
                                            '--speedup', '100']);
$engine->start;

my $s = gateway(engines => [['stories', $engine]], workers => 2,
                user => '$http_x_user');
my $mark = $s->log_mark;

my $BODY = $J->encode({ model => 'stories260K', max_tokens => 8,
                        messages => [{ role => 'user',
                                       content => 'Once upon a time' }] });

my (%got, $n);
for my $burst (1 .. 6) {
    my @r = $s->concurrent([map {
        +{ method => 'POST', uri => '/v1/chat/completions', body => $BODY,
           headers => ['Content-Type: application/json',
                       'X-User: u' . ($_ % 8)] }
    } 1 .. 32], timeout => 30);

    for my $r (@r) {
        my $code = eval { $J->decode($r->{body})->{error}{code} };
        $got{($r->{status} // 'none') . ($code ? " $code" : '')}++;
        $n++;
    }
}

is($got{200} // 0, $n, "$n requests in bursts of 32: every one served")
    or diag($J->encode(\%got) . "\n" . $s->log_tail(10));
is(join(', ', grep { !/^200$/ } sort keys %got), '',
   'none refused (no 503 engine_overloaded or engine_unavailable)');

my $log = $s->error_log($mark);
unlike($log, qr/submission ring stayed/, 'no request waited out its bound');
unlike($log, qr/\[(?:crit|alert|emerg)\]/, 'nothing logged at crit');

ok(kill(0, $engine->pid), 'the engine lived throughout');

$s->stop;
$engine->stop;

# A client that leaves while its submission waits ends the wait.  Local
# mode without a zone (nothing holds requests back), an engine that holds
# one request (--max-batch 1) and a ring of one slot, both taken by two
# requests; a third waits for room, its client leaves, it is over at once
# (not at its bound, dead_after's 20 s), and the worker carries on.
my $slow = Fairgate::Engine->new(backend => 'sim',
    args => ['--sub-slots', '1', '--max-batch', '1', '--max-seqs', '1',
             '--step-model', 'linear:0.0001,0.005']);
$slow->start;
my ($shm, $model) = ($slow->shm, $slow->model);
$s = Fairgate::Test::Server->new(
    workers => 1,
    http_config => "    fairgate_engine stories shm=$shm model=$model "
                   . "dead_after=20s;\n",
    config => <<"END");
    location /v1/ { fairgate_engine_pass; }
    location /status { fairgate_status; }
END
$s->start or die $s->last_error;
my @pids = $s->worker_pids;

sub held {
    my ($user, $max) = @_;
    my $body = $J->encode({ model => 'stories260K', max_tokens => $max,
                            stream => JSON::PP::true,
                            messages => [{ role => 'user',
                                           content => 'Go on' }] });
    return $s->send_later({ method => 'POST',
                            uri => '/v1/chat/completions', body => $body,
                            headers => ['Content-Type: application/json',
                                        "X-User: $user"] });
}

# the engine's requests open in this worker, as the status says
sub engine_open {
    my ($n) = @_;
    return $s->status_until(sub {
        my $e = $_[0]{engines} ? $_[0]{engines}[0] : undef;
        $e && ($e->{open} // -1) == $n });
}

my $a = held('a', 2000);
ok(engine_open(1), 'a long request runs');
my $b = held('b', 4);
ok(engine_open(2), 'a second one takes the ring\'s slot');
my $c = held('c', 4);
ok(!IO::Select->new($c)->can_read(0.5),
   'a third one waits for room in the ring, not refused');

my $t0 = Time::HiRes::time();
close $c;
ok(Fairgate::Test::wait_for(5, sub {
       grep { m{"POST /v1/chat/completions [^"]*" 499 } }
            $s->access_lines('access.log', 0) }),
   'its client leaves: it is over (499)');
cmp_ok(Time::HiRes::time() - $t0, '<', 5, '... at once, not at its bound');
is($s->status_json->{engines}[0]{open}, 2, '... never submitted');

close $a;
my $rb = $s->read_later($b);
is($rb->{status}, 200, 'the second is served once the first is gone');
like($rb->{body} // '', qr/data: \[DONE\]/, '... to its end');
is_deeply([$s->worker_pids], \@pids, 'the worker lived throughout');
unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/,
       'nothing logged at alert or crit');

$s->stop;
$slow->stop;

done_testing();
