#!/usr/bin/env perl

# Hostile clients against drop-in mode (a mock upstream): the cases of
# t/023-hostile-local.t (t/lib/Fairgate/Hostile.pm) where the gateway
# reads the body itself before proxying it: malformed, deep, oversized
# and mistyped bodies, invalid UTF-8 and NUL, lying framing, oversized
# headers, slow and half-closed clients, streams dropped by the dozen;
# each a clean error or a clean close, the workers alive, the zone idle
# afterwards, every tenant served.  And a hostile upstream: answers that
# are no HTTP (HTTP/0.9 to nginx's proxy, or a status no server answers
# finally) become 502 upstream_unavailable in OpenAI's JSON, with an
# error-log line naming the upstream, never the bytes as they came.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use JSON::PP ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test;
use Fairgate::MockUpstream;
use Fairgate::Hostile qw($CHAT $CMPL $MAX_BODY $SERVER_CONF);

my $J = JSON::PP->new->canonical;

my $up = Fairgate::MockUpstream->new;
my $UP = $up->addr;

my $s = Fairgate::Test::Server->new(
    workers => 2,
    http_config => <<"END",
    fairgate_zone zone=api:1m max_tenants=100 inflight=8;
    upstream kept { server $UP; keepalive 8; }
END
    config => $SERVER_CONF . <<"END");
    location /v1/ {
        fairgate zone=api queue=100 timeout=30s;
        fairgate_identity user=\$http_x_user;
        proxy_pass http://$UP;
        proxy_buffering off;
    }
    # the upstream as conf/dropin.conf has it: HTTP/1.1, kept alive
    location /kept/v1/ {
        fairgate zone=api queue=100 timeout=30s;
        fairgate_identity user=\$http_x_user;
        proxy_pass http://kept/v1/;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_buffering off;
    }
    location /status { fairgate_status; }
END
$s->start or die $s->last_error;

sub wait_idle {
    my ($ok, $st) = $s->status_until(sub {
        my $z = $_[0]{zones} ? $_[0]{zones}[0] : undef;
        $z && $z->{running} == 0 && $z->{waiting} == 0
        && $z->{backlogged} == 0 });

    diag('not idle: ' . $J->encode($st->{zones} ? $st->{zones}[0] : {}))
        unless $ok;
    return $ok ? 1 : 0;
}

my $h = Fairgate::Hostile->new(server => $s, model => 'm', transparent => 1,
                               tenants => [qw(alice bob carol)]);

my $t0 = Time::HiRes::time();

subtest 'malformed, deep, oversized bodies, bad UTF-8, NUL, huge numbers'
    => sub { $h->bodies($CHAT, $MAX_BODY) };

# the fields the gateway reads to estimate a request's tokens; the others
# are the upstream's to judge
subtest 'wrong types in the fields the gateway reads: chat' => sub {
    $h->types('chat', $CHAT,
              [model => 'string'], [messages => 'array'],
              [max_tokens => 'integer'],
              [max_completion_tokens => 'integer'], [stream => 'bool'],
              [stream_options => 'object']);
    $h->message_types($CHAT);
};

subtest 'wrong types in the fields the gateway reads: completions' => sub {
    $h->types('completions', $CMPL,
              [model => 'string'], [prompt => 'prompt'],
              [max_tokens => 'integer'],
              [stream => 'bool']);
};

subtest 'lying Content-Length, bad chunks, oversized headers'
    => sub { $h->framing($CHAT) };

subtest 'slow and half-closed clients' => sub { $h->slow($CHAT) };

subtest 'streams dropped mid-stream: the zone released' => sub {
    $h->aborts($CHAT, 24);
    ok(wait_idle(), 'the zone idle: none running, waiting or backlogged');
};

subtest 'clients that leave while queued: the queue released' => sub {
    $h->queued_aborts($CHAT, 8, 12, sub {
        $J->decode($s->get('/status')->{body})->{zones}[0] });
};

# the upstream's answer, byte for byte (X-Mock-Raw), then its close
my @garbage = (
    ['HTTP/9.9 banana', "HTTP/9.9 banana\r\n\r\n"],
    ['binary bytes', "\x00\xff\xfe\x13\x37\x80\r\n\r\n\xc3\x28"],
    ['a bare JSON body', '{"choices":[],"usage":{"prompt_tokens":5}}'],
    ['another protocol', "SSH-2.0-OpenSSH_9.6\r\n"],
    ['status 999', "HTTP/1.1 999 Weird\r\nContent-Length: 2\r\n\r\nhi"],
    ['status 000', "HTTP/1.1 000 Zero\r\nContent-Length: 0\r\n\r\n"],
    ['status 600', "HTTP/1.1 600 Beyond\r\nContent-Length: 0\r\n\r\n"],
    ['a 1xx alone', "HTTP/1.1 100 Continue\r\n\r\n"],
    ['a 103 alone', "HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"],
);

subtest 'an upstream answering nonsense: 502 upstream_unavailable' => sub {
    for my $g (@garbage) {
        my ($name, $bytes) = @$g;
        for my $way ([0, $CHAT, ''], [1, $CHAT, ', a stream'],
                     [0, "/kept$CHAT", ', HTTP/1.1 kept alive'])
        {
            my ($stream, $uri, $how) = @$way;
            my $what = $name . $how;
            my $mark = $s->log_mark;
            my $raw = 'X-Mock-Raw: ' . unpack('H*', $bytes);
            my $r = $s->post($uri, $J->encode($h->chat(
                             $stream ? (stream => JSON::PP::true) : ())),
                             headers => ['X-User: garbage', $raw]);
            is($r->{status}, 502, "$what: 502") or diag($r->{raw});
            like($r->{headers}{'content-type'} // '', qr{^application/json},
                 "$what: JSON");
            my $e = eval { $J->decode($r->{body}) } // {};
            is(($e->{error} // {})->{code} // '', 'upstream_unavailable',
               "$what: upstream_unavailable") or diag($r->{raw});
            unlike($r->{raw}, qr/banana|Weird|SSH-|\x{ff}\x{fe}/,
                   "$what: none of the upstream's bytes");
            ok($s->wait_for_log(qr/fairgate: the upstream \Q$UP\E answered/,
                                mark => $mark),
               "$what: the error log names the upstream");
        }
    }

    # to an HTTP/1.0 client too: the proxy set the request to HTTP/0.9,
    # which would have no status line
    my $r10 = $s->request("POST $CHAT HTTP/1.0\n" . $J->encode($h->chat),
                          headers => ['X-User: garbage', 'X-Mock-Raw: '
                                      . unpack('H*', "HTTP/9.9 banana\r\n")]);
    like($r10->{raw}, qr{^HTTP/1\.1 502 }, 'HTTP/1.0: a status line, 502');
    like($r10->{body}, qr/upstream_unavailable/, 'HTTP/1.0: the JSON');

    # an answer that is HTTP still passes
    my $ok = '{"id":"x","object":"chat.completion","choices":[]}';
    my $r = $s->post($CHAT, $J->encode($h->chat),
                     headers => ['X-User: garbage', 'X-Mock-Raw: ' . unpack(
                         'H*', "HTTP/1.1 200 OK\r\nContent-Type: "
                               . "application/json\r\nContent-Length: "
                               . length($ok) . "\r\n\r\n$ok")]);
    is($r->{status}, 200, 'a valid answer passes');
    is($r->{body}, $ok, 'a valid answer: its body as it came');
    $r = $s->post("/kept$CHAT", $J->encode($h->chat),
                  headers => ['X-User: garbage']);
    is($r->{status}, 200, 'the kept-alive upstream serves after it');
    ok(wait_idle(), 'the zone idle after the nonsense');
};

subtest 'hostile names in X-User' => sub { $h->names($CHAT) };

note(sprintf 'hostile cases: %.1f s', Time::HiRes::time() - $t0);

$h->after($CHAT, $CMPL);

is($s->stop, 0, 'nginx exits cleanly');
$up->stop;

done_testing();
