#!/usr/bin/env perl

# Local mode across a graceful reload: a worker told to quit keeps its
# open streams to their end ([DONE], no error) before it exits.  Its tick
# was the only timer it held for them, and a cancelable one, so nginx saw
# "no timers left" and the worker exited at once, cutting every stream
# (found by the soak, t/soak/).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use IO::Select;
use IO::Socket::INET;
use JSON::PP ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test;
use Fairgate::Engine qw(parse_sse);

plan skip_all => "no $Fairgate::Engine::MODEL"
    unless -f $Fairgate::Engine::MODEL;

my $J = JSON::PP->new->canonical;

# 10 ms a token: a stream of 150 tokens runs for 1.5 s
my $engine = Fairgate::Engine->new(backend => 'sim',
                                   args => ['--step-model',
                                            'linear:0.0001,0.01']);
$engine->start;

my ($shm, $model) = ($engine->shm, $engine->model);

my $s = Fairgate::Test::Server->new(
    workers => 1,
    http_config => <<"END",
    fairgate_engine stories shm=$shm model=$model dead_after=500ms;
    fairgate_zone zone=llm:16m;
END
    config => <<"END");
    location /v1/ {
        fairgate zone=llm queue=100 timeout=30s;
        fairgate_identity user=\$remote_addr;
        fairgate_engine_pass;
    }
    location /status { fairgate_status; }
END
$s->start or die $s->last_error;

# attached (polled with a deadline)
my $attached = 0;
my $until = Time::HiRes::time() + 10;
while (!$attached && Time::HiRes::time() < $until) {
    my $st = eval { $J->decode($s->get('/status')->{body}) };
    $attached = $st && $st->{engines}[0]{attached} && $st->{engines}[0]{load};
    Time::HiRes::sleep(0.02) unless $attached;
}
ok($attached, 'attached');

my $body = $J->encode({ model => 'stories260K', max_tokens => 150,
                        stream => JSON::PP::true,
                        messages => [{ role => 'user', content => 'Go' }] });

my @socks = map {
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                     PeerPort => $s->port, Proto => 'tcp')
        or die "connect: $!\n";
    print {$sock} "POST /v1/chat/completions HTTP/1.0\r\nHost: x\r\n"
                  . "Content-Type: application/json\r\n"
                  . "Content-Length: " . length($body) . "\r\n\r\n$body";
    $sock;
} 1 .. 3;

# every stream under way before the reload
my %raw = map { $_ => '' } 0 .. $#socks;
my $deadline = Time::HiRes::time() + 10;
while (grep { $raw{$_} !~ /"content":"[^"]/ } keys %raw) {
    last if Time::HiRes::time() > $deadline;
    for my $i (keys %raw) {
        next unless IO::Select->new($socks[$i])->can_read(0.05);
        sysread($socks[$i], $raw{$i}, 65536, length $raw{$i});
    }
}
is(scalar(grep { $raw{$_} =~ /"content":"[^"]/ } keys %raw), 3,
   'three streams under way');

ok($s->reload(wait_old => 0), 'reloaded') or diag($s->last_error);

for my $i (0 .. $#socks) {
    my $sel = IO::Select->new($socks[$i]);
    my $end = Time::HiRes::time() + 15;
    while (Time::HiRes::time() < $end && $sel->can_read(1)) {
        sysread($socks[$i], $raw{$i}, 65536, length $raw{$i}) or last;
    }
    my (undef, $b) = split /\r\n\r\n/, $raw{$i}, 2;
    my @ev = eval { parse_sse($b // '') };
    is($ev[-1] // '', '[DONE]', "stream $i ends with [DONE]")
        or diag(substr($raw{$i}, -300));
    ok(!grep({ ref $_ eq 'HASH' && $_->{error} } @ev),
       "stream $i has no error event");
    my $n = grep { ref $_ eq 'HASH' && ($_->{choices}[0]{delta}{content}
                                        // '') ne '' } @ev;
    cmp_ok($n, '>=', 100, "stream $i has its tokens ($n)");
}

is($s->stop, 0, 'nginx exits cleanly');
unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');
$engine->stop;

done_testing();
