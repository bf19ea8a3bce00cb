#!/usr/bin/env perl

# Local mode when things go wrong: a client that leaves mid-stream has its
# sequence cancelled and its KV blocks freed at once; an engine killed
# mid-stream ends every open stream with an SSE error event and [DONE],
# new requests get 503 with Retry-After while it is away, and the workers
# reattach by themselves when it is back.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use IO::Select;
use IO::Socket::INET;
use JSON::PP ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test qw(:DEFAULT gateway);
use Fairgate::Engine qw(parse_sse);

plan skip_all => "no $Fairgate::Engine::MODEL"
    unless -f $Fairgate::Engine::MODEL;

my $J = JSON::PP->new->canonical;

# 5 ms a token: a stream of 2000 tokens runs for 10 s
my @SLOW = ('--step-model', 'linear:0.0001,0.005');

my $engine = Fairgate::Engine->new(backend => 'sim', args => [@SLOW]);
$engine->start;

my $shm = $engine->shm;
my $s = gateway(engines => [['stories', $engine, 'dead_after=500ms']],
                workers => 2);
diag("prefix " . $s->prefix) if $ENV{FAIRGATE_KEEP};


sub engine_status {
    return $J->decode($s->get('/status')->{body})->{engines}[0];
}

sub wait_until {
    my ($what, $cond) = @_;
    my $deadline = Time::HiRes::time() + 10;
    my $st;
    while (Time::HiRes::time() < $deadline) {
        $st = engine_status();
        return $st if $cond->($st);
        Time::HiRes::sleep(0.02);
    }
    diag("$what: " . $J->encode($st));
    return undef;
}

# a long stream over HTTP/1.0 (no chunked encoding): the socket, once the
# first token is in
sub open_stream {
    my ($max) = @_;
    my $body = $J->encode({ model => 'stories260K',
                            max_tokens => $max // 2000,
                            stream => JSON::PP::true,
                            messages => [{ role => 'user',
                                           content => 'Go on' }] });
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                     PeerPort => $s->port, Proto => 'tcp')
        or die "connect: $!\n";
    print {$sock} "POST /v1/chat/completions HTTP/1.0\r\nHost: x\r\n"
                  . "Content-Type: application/json\r\n"
                  . "Content-Length: " . length($body) . "\r\n\r\n$body";
    my $raw = '';
    my $sel = IO::Select->new($sock);
    my $deadline = Time::HiRes::time() + 10;
    while (Time::HiRes::time() < $deadline && $raw !~ /"content":"[^"]/) {
        last unless $sel->can_read(1);
        sysread($sock, $raw, 65536, length $raw) or last;
    }
    return ($sock, $raw);
}

sub read_rest {
    my ($sock, $raw) = @_;
    my $sel = IO::Select->new($sock);
    my $deadline = Time::HiRes::time() + 15;
    while (Time::HiRes::time() < $deadline) {
        last unless $sel->can_read(1);
        sysread($sock, $raw, 65536, length $raw) or last;
    }
    return $raw;
}


ok(wait_until('attached', sub { $_[0]{attached} && $_[0]{load} }),
   'attached');


subtest 'a client that leaves frees its blocks' => sub {
    my $before = engine_status()->{load};
    my ($sock, $raw) = open_stream();
    like($raw, qr/"content":"[^"]/, 'tokens stream');

    my $st = engine_status();
    is($st->{load}{running}, 1, 'the engine runs it');
    cmp_ok($st->{load}{kv_free}, '<', $st->{load}{kv_blocks},
           'it holds KV blocks');

    close $sock;

    ok(wait_until('freed', sub {
           $_[0]{load}{running} == 0
           && $_[0]{load}{kv_free} == $_[0]{load}{kv_blocks}
           && $_[0]{load}{cancelled} == $before->{cancelled} + 1 }),
       'cancelled: every block free again, well before it would end');
};


subtest 'the engine killed mid-stream, then back' => sub {
    my ($sock, $raw) = open_stream();
    like($raw, qr/"content":"[^"]/, 'tokens stream');

    my $gen = engine_status()->{generation};
    $engine->stop('KILL');

    $raw = read_rest($sock, $raw);
    my ($head, $body) = split /\r\n\r\n/, $raw, 2;
    like($head, qr{^HTTP/1\.1 200}, 'the stream had started: 200');
    my @ev = eval { parse_sse($body) };
    ok(@ev, 'it ends as a strict SSE stream') or diag($@);
    is($ev[-1], '[DONE]', '[DONE] last');
    ok(ref $ev[-2] eq 'HASH' && $ev[-2]{error}
       && $ev[-2]{error}{message}, 'an error event before it')
        or diag($J->encode($ev[-2]));

    ok(wait_until('lost', sub { !$_[0]{attached} }), 'the engine is away');

    my $r = $s->post('/v1/chat/completions',
                     $J->encode({ model => 'stories260K', max_tokens => 4,
                                  messages => [{ role => 'user',
                                                 content => 'x' }] }));
    is($r->{status}, 503, 'a new request while it is away: 503');
    like($r->{headers}{'retry-after'} // '', qr/^\d+$/, 'with Retry-After');
    like($r->{body}, qr/"error"/, 'an OpenAI error body');

    $engine = Fairgate::Engine->new(backend => 'sim', shm => $shm,
                                    args => [@SLOW]);
    $engine->start;

    ok(wait_until('back', sub { $_[0]{attached} && $_[0]{load}
                                && $_[0]{generation} ne $gen }),
       'reattached to the new engine by itself');

    # each worker reattaches on its own tick: until both serve
    my $ok = 0;
    my $deadline = Time::HiRes::time() + 10;
    while ($ok < 8 && Time::HiRes::time() < $deadline) {
        $r = $s->post('/v1/completions',
                      $J->encode({ model => 'stories260K', max_tokens => 3,
                                   prompt => 'Hello' }));
        $ok = $r->{status} == 200 ? $ok + 1 : 0;
        Time::HiRes::sleep(0.02) unless $r->{status} == 200;
    }
    is($ok, 8, 'served again, by every worker');
};

# a worker quitting waits for no cancelable timer: the engine's tick must
# hold it while a stream is in flight, or the stream is cut ("open socket
# left in connection"; found by the soak at reloads, and under ASan's
# slower engine at nginx's stop)
subtest 'a reload lets the old workers\' streams end whole' => sub {
    my @open = map { [open_stream(300)] } 1 .. 3;
    is(scalar(grep { $_->[1] =~ /"content":"[^"]/ } @open), 3,
       'three streams under way');

    ok($s->reload(wait_old => 0), 'reloaded') or diag($s->last_error);

    for my $i (0 .. $#open) {
        my $raw = read_rest(@{ $open[$i] });
        my (undef, $b) = split /\r\n\r\n/, $raw, 2;
        my @ev = eval { parse_sse($b // '') };
        is($ev[-1] // '', '[DONE]', "stream $i ends with [DONE]")
            or diag(substr($raw, -300));
        ok(!grep({ ref $_ eq 'HASH' && $_->{error} } @ev),
           "stream $i has no error event");
        like($raw, qr/"finish_reason":"length"/,
             "stream $i ran to its max_tokens");
    }
};

subtest 'nginx quitting gracefully lets a stream end whole' => sub {
    my ($sock, $raw) = open_stream(200);
    like($raw, qr/"content":"[^"]/, 'tokens stream');

    is($s->stop, 0, 'nginx exits cleanly');
    $raw = read_rest($sock, $raw);
    like($raw, qr/"finish_reason":"length".*data: \[DONE\]/s,
         'the stream ran to its end and [DONE]');
    unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');
};

$engine->stop;

done_testing();
