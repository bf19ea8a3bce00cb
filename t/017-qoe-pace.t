#!/usr/bin/env perl

# Andes at the edge: a request's QoE expectations (fairgate_qoe, the
# X-Fairgate-TTFT and X-Fairgate-Reading-Speed headers, their variables,
# 400s and nginx -t errors), and the token pacer (fairgate_pace) in
# drop-in mode (a mock upstream sending every token at once) and local
# mode (the sim engine, faster than any reader here).  Paced streams are
# judged by their whole duration at the client against (n-1)/speed, and
# unpaced ones by being well under it: behaviour, not performance.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use IO::Select;
use IO::Socket::INET;
use POSIX ();
use JSON::PP ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test;
use Fairgate::MockUpstream;
use Fairgate::Engine qw(parse_sse);
use Fairgate::Timed qw(token_times);


my $up = Fairgate::MockUpstream->new;
my $split = split_upstream();
my $J = JSON::PP->new->canonical;
my $HAVE_MODEL = -f $Fairgate::Engine::MODEL;
my $engine;

if ($HAVE_MODEL) {
    $engine = Fairgate::Engine->new(backend => 'sim');
    $engine->start;
}

my $ENGINE_CONF = $HAVE_MODEL
    ? 'fairgate_engine stories shm=' . $engine->shm . ' model='
      . $engine->model . ' dead_after=1s;'
    : '';

my $LOCAL = $HAVE_MODEL ? <<'END' : '';
    location /local/v1/ {
        fairgate zone=q queue=100 timeout=30s;
        fairgate_identity user=$remote_addr;
        fairgate_qoe speed=20;
        fairgate_pace on;
        fairgate_engine_pass stories;
    }
    location /bare/v1/ {
        fairgate_qoe speed=20;
        fairgate_pace on;
        fairgate_engine_pass stories;
    }
END

my $s = Fairgate::Test::Server->new(
    workers => 1,
    http_config => <<"END",
    $ENGINE_CONF
    fairgate_zone zone=q:16m;
    fairgate_qoe ttft=1500ms speed=5;
    log_format q '\$request_uri "\$fairgate_qoe_ttft" "\$fairgate_qoe_speed" '
                 '\$status q=\$fairgate_qoe';
END
    config => <<"END");
    access_log logs/q.log q;
    fairgate_identity user=\$remote_addr;

    location /v1/ {
        fairgate zone=q queue=100 timeout=30s;
        proxy_pass http://${\ $up->addr };
    }
    location /off/v1/ {
        fairgate zone=q queue=100 timeout=30s;
        fairgate_qoe off;
        proxy_pass http://${\ $up->addr }/v1/;
    }
    location /paced/v1/ {
        fairgate zone=q queue=100 timeout=30s;
        fairgate_qoe speed=20;
        fairgate_pace on;
        proxy_pass http://${\ $up->addr }/v1/;
        proxy_buffering off;
    }
    location /split/v1/ {
        fairgate zone=q queue=100 timeout=30s;
        fairgate_qoe speed=20;
        fairgate_pace on;
        proxy_pass http://127.0.0.1:${\ $split->{port} }/;
        proxy_buffering off;
    }
    location /buffered/v1/ {
        fairgate zone=q queue=100 timeout=30s;
        fairgate_qoe speed=20;
        fairgate_pace on;
        proxy_pass http://${\ $up->addr }/v1/;
    }
$LOCAL
END

$s->start or die $s->last_error;


# an upstream that writes each event in two halves, 20 ms apart, so that
# nginx reads events split across its buffers (the gap only shapes the
# bytes; nothing waits on it)
sub split_upstream {
    my $l = IO::Socket::INET->new(Listen => 16, LocalAddr => '127.0.0.1',
                                  LocalPort => 0, ReuseAddr => 1)
        or die "listen: $!\n";
    my $pid = fork // die "fork: $!\n";
    if (!$pid) {
        $SIG{PIPE} = 'IGNORE';
        while (my $c = $l->accept) {
            my $req = '';
            while ($req !~ /\r\n\r\n/) {
                sysread($c, my $buf, 4096) or last;
                $req .= $buf;
            }
            my $len = $req =~ /Content-Length: (\d+)/i ? $1 : 0;
            my ($body) = $req =~ /\r\n\r\n(.*)\z/s;
            while (length($body // '') < $len) {
                sysread($c, my $buf, 4096) or last;
                $body .= $buf;
            }
            $c->autoflush(1);
            print {$c} "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream"
                       . "\r\nConnection: close\r\n\r\n";
            for my $e ((map { '{"choices":[{"index":0,"delta":'
                              . '{"content":"w' . $_ . ' "}}]}' } 1 .. 6),
                       '[DONE]')
            {
                my $ev = "data: $e\n\n";
                my $h = int(length($ev) / 2);
                print {$c} substr($ev, 0, $h);
                Time::HiRes::sleep(0.02);
                print {$c} substr($ev, $h);
            }
            close $c;
        }
        POSIX::_exit(0);
    }
    my $port = $l->sockport;
    close $l;
    return { pid => $pid, port => $port };
}


sub body {
    my (%o) = @_;
    return $J->encode({ model => 'stories260K', max_tokens => $o{tokens} // 4,
                        ($o{stream} ? (stream => JSON::PP::true) : ()),
                        messages => [{ role => 'user',
                                       content => 'Once upon a time' }] });
}


# the access log's line of a URI, once written
sub log_line { $s->access_line('q.log', $_[0]) }


# a POST's events' arrival times at the client (Fairgate::Timed)
sub timed_stream { Fairgate::Timed::timed_stream($s, @_) }


subtest 'expectations: directive, headers, variables' => sub {
    my %h = (headers => ['Content-Type: application/json']);

    my $r = $s->post('/v1/chat/completions', body(), %h);
    is($r->{status}, 200, 'served');
    like(log_line('/v1/chat/completions'), qr/"1\.500" "5\.000" 200/,
         'the location\'s defaults');

    $r = $s->post('/v1/chat/completions?h', body(), headers => [
             @{ $h{headers} }, 'X-Fairgate-TTFT: 0.25',
             'X-Fairgate-Reading-Speed: 8.5']);
    is($r->{status}, 200, 'served with headers');
    like(log_line('/v1/chat/completions?h'), qr/"0\.250" "8\.500" 200/,
         'the headers override both');

    $r = $s->post('/v1/chat/completions?one', body(), headers => [
             @{ $h{headers} }, 'X-Fairgate-Reading-Speed: 3']);
    like(log_line('/v1/chat/completions?one'), qr/"1\.500" "3\.000" 200/,
         'one header overrides one');

    $r = $s->post('/off/v1/chat/completions', body(), %h);
    is($r->{status}, 200, 'served where off');
    like(log_line('/off/v1/chat/completions'), qr/"" "" 200/,
         'fairgate_qoe off: none');
};


subtest 'bad headers: 400 naming the header' => sub {
    my @bad = (['X-Fairgate-TTFT: soon', 'X-Fairgate-TTFT'],
               ['X-Fairgate-TTFT: 0', 'X-Fairgate-TTFT'],
               ['X-Fairgate-TTFT: 3601', 'X-Fairgate-TTFT'],
               ['X-Fairgate-Reading-Speed: -1', 'X-Fairgate-Reading-Speed'],
               ['X-Fairgate-Reading-Speed: 1e3', 'X-Fairgate-Reading-Speed'],
               ['X-Fairgate-Reading-Speed: 10001',
                'X-Fairgate-Reading-Speed']);
    my $served = $up->served;

    for my $b (@bad) {
        my $r = $s->post('/v1/chat/completions', body(),
                         headers => ['Content-Type: application/json',
                                     $b->[0]]);
        is($r->{status}, 400, "$b->[0]: 400");
        my $e = eval { $J->decode($r->{body})->{error} } // {};
        is($e->{param}, $b->[1], "$b->[0]: the error names $b->[1]");
        is($e->{code}, 'invalid_qoe', "$b->[0]: code invalid_qoe");
        like($e->{message}, qr/\Q$b->[1]\E must be/, "$b->[0]: says why");
    }

    my $r = $s->post('/v1/chat/completions', body(),
                     headers => ['Content-Type: application/json',
                                 'X-Fairgate-TTFT: 1',
                                 'X-Fairgate-TTFT: 2']);
    is($r->{status}, 400, 'a header twice: 400');
    is($J->decode($r->{body})->{error}{param}, 'X-Fairgate-TTFT',
       'a header twice: the error names it');

    $r = $s->post('/v1/chat/completions', body(),
                  headers => ['Content-Type: application/json',
                              'X-Fairgate-TTFT: 1',
                              'X-Fairgate-Reading-Speed: 5',
                              'X-Fairgate-Reading-Speed: 6']);
    is($r->{status}, 400, 'the speed twice beside one TTFT: 400');
    is($J->decode($r->{body})->{error}{param}, 'X-Fairgate-Reading-Speed',
       'the speed twice: the error names the speed, not the TTFT');
    is($up->served, $served, 'the upstream saw none of them');
};


subtest 'nginx -t: bad fairgate_qoe' => sub {
    for my $c (['fairgate_qoe ttft=0;', qr/invalid parameter "ttft=0"/],
               ['fairgate_qoe ttft=2h;', qr/invalid parameter "ttft=2h"/],
               ['fairgate_qoe speed=fast;',
                qr/invalid parameter "speed=fast"/],
               ['fairgate_qoe speed=0;', qr/invalid parameter "speed=0"/],
               ['fairgate_qoe pace=1;', qr/invalid parameter "pace=1"/],
               ['fairgate_qoe off speed=1;', qr/no parameters after "off"/],
               ['fairgate_qoe speed=1; fairgate_qoe speed=2;',
                qr/"fairgate_qoe" directive is duplicate/],
               ['fairgate_pace maybe;', qr/invalid value "maybe"/])
    {
        my $t = Fairgate::Test::Server->new(config => <<"END");
    location / { $c->[0] }
END
        my ($rc, $out) = $t->test_config;
        isnt($rc, 0, "$c->[0] fails");
        like($out, $c->[1], "$c->[0]: says why");
    }
};


# n tokens at once from the upstream; paced at 20 a second they take
# (n-1)/20 s at least; unpaced, far less
subtest 'drop-in: paced at the reading speed' => sub {
    my $n = 10;
    my $body = body(tokens => $n, stream => 1);
    my @mock = ("X-Mock-Tokens: $n");

    my $st = timed_stream('/paced/v1/chat/completions', $body, @mock);
    like($st->{head}, qr{^HTTP/1\.1 200}, 'paced: 200');
    my @ev = eval { parse_sse($st->{sse}) };
    ok(@ev && $ev[-1] eq '[DONE]', 'paced: a whole stream, [DONE] last')
        or diag($@ // $st->{sse});
    my @t = token_times($st);
    is(scalar @t, $n, "paced: $n tokens");
    my $took = $t[-1] - $t[0];
    cmp_ok($took, '>=', ($n - 1) / 20 - 0.05,
           'paced: the tokens take (n-1)/speed at least');
    cmp_ok($st->{times}[-1] - $t[-1], '<', 0.5 / 20 + 0.2,
           '[DONE] follows the last token without a turn of its own');

    $st = timed_stream('/paced/v1/chat/completions', $body, @mock,
                       'X-Fairgate-Reading-Speed: 1000');
    @t = token_times($st);
    cmp_ok($t[-1] - $t[0], '<', ($n - 1) / 20 / 2,
           'a faster reader (header) is paced faster');

    $st = timed_stream('/v1/chat/completions', $body, @mock);
    @t = token_times($st);
    is(scalar @t, $n, "unpaced: $n tokens");
    cmp_ok($t[-1] - $t[0], '<', ($n - 1) / 20 / 2, 'fairgate_pace off: '
           . 'the tokens come as the upstream sends them');

    $st = timed_stream('/buffered/v1/chat/completions', $body, @mock);
    @t = token_times($st);
    ok(eval { parse_sse($st->{sse}) }, 'proxy_buffering on: whole stream');
    cmp_ok($t[-1] - $t[0], '>=', ($n - 1) / 20 - 0.05,
           'proxy_buffering on: paced too');
};


subtest 'drop-in: events split across reads' => sub {
    my $st = timed_stream('/split/v1/chat/completions',
                          body(tokens => 6, stream => 1));
    my @ev = eval { parse_sse($st->{sse}) };
    is(scalar @ev, 7, 'six events and [DONE], whole') or diag($st->{sse});
    is(join('', map { ref $_ ? $_->{choices}[0]{delta}{content} : '' } @ev),
       'w1 w2 w3 w4 w5 w6 ', 'the text in order');
    my @t = token_times($st);
    cmp_ok($t[-1] - $t[0], '>=', 5 / 20 - 0.05, 'paced');
};


subtest 'drop-in: a reader slower than the upstream is not delayed' => sub {
    my $n = 5;
    my $st = timed_stream('/paced/v1/chat/completions',
                          body(tokens => $n, stream => 1),
                          "X-Mock-Tokens: $n", 'X-Mock-Token-Delay: 0.1',
                          'X-Fairgate-Reading-Speed: 1000');
    my @t = token_times($st);
    is(scalar @t, $n, "$n tokens");
    cmp_ok($t[-1] - $t[0], '<', ($n - 1) * 0.1 + 0.3,
           'as the upstream sends them, no later');
};


# $fairgate_qoe: Andes's QoE of the tokens as they went to the client
subtest 'QoE measured at the edge' => sub {
    my $n = 6;
    my $body = body(tokens => $n, stream => 1);
    my $q = sub {
        my ($uri) = @_;
        return log_line($uri) =~ / q=([\d.]+)$/ ? $1 : 'none';
    };

    timed_stream('/paced/v1/chat/completions?met', $body, "X-Mock-Tokens: $n",
                 'X-Fairgate-TTFT: 2');
    cmp_ok($q->('/paced/v1/chat/completions?met'), '>=', 0.99,
           'paced, the first token in time: QoE 1');

    timed_stream('/v1/chat/completions?late', $body, "X-Mock-Tokens: $n",
                 'X-Mock-Delay: 0.5', 'X-Fairgate-TTFT: 0.1',
                 'X-Fairgate-Reading-Speed: 1000');
    cmp_ok($q->('/v1/chat/completions?late'), '<', 0.5,
           'not paced, every token 0.4 s late: QoE low');

    timed_stream('/off/v1/chat/completions', $body, "X-Mock-Tokens: $n");
    is($q->('/off/v1/chat/completions'), 'none',
       'no expectations: not measured');

    my $r = $s->post('/v1/chat/completions?json', body(),
                     headers => ['Content-Type: application/json']);
    is($q->('/v1/chat/completions?json'), 'none', 'not a stream: none');
};


subtest 'a client that hangs up while tokens are held' => sub {
    my $n = 40;
    my $sock = $s->connect;
    my $body = body(tokens => $n, stream => 1);
    print {$sock} "POST /paced/v1/chat/completions HTTP/1.0\r\n"
                  . "Host: localhost\r\nContent-Type: application/json\r\n"
                  . "X-Mock-Tokens: $n\r\n"
                  . 'Content-Length: ' . length($body) . "\r\n\r\n$body";

    # the first token read, the rest (2 s of them) still held: hang up
    my ($raw, $sel) = ('', IO::Select->new($sock));
    while ($raw !~ /"content":"tok/ && $sel->can_read(5)) {
        sysread($sock, my $buf, 4096) or last;
        $raw .= $buf;
    }
    like($raw, qr/"content":"tok/, 'a token came');
    close $sock;

    like(log_line('/paced/v1/chat/completions'), qr/ (?:499|200) q=/,
         'the request ended');

    my $r = $s->post('/v1/chat/completions', body(),
                     headers => ['Content-Type: application/json']);
    is($r->{status}, 200, 'the next request is served')
        or diag($r->{error} // $r->{body});

    my $pid = $s->pid;
    is($s->stop, 0, 'nginx quits gracefully, no timer left behind');
    unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]|exited on signal/,
           'no alert, no crash');
    $s->start or die $s->last_error;
};


SKIP: {
    skip "no $Fairgate::Engine::MODEL", 1 unless $HAVE_MODEL;

    subtest 'local mode: the engine\'s tokens paced' => sub {
        my $n = 12;
        for my $uri ('/local/v1/chat/completions',
                     '/bare/v1/chat/completions')
        {
            my $st = timed_stream($uri, body(tokens => $n, stream => 1),
                                  'Authorization: Bearer x');
            like($st->{head}, qr{^HTTP/1\.1 200}, "$uri: 200")
                or diag($st->{head} . $st->{sse});
            ok(eval { parse_sse($st->{sse}) }, "$uri: a whole stream")
                or diag($@ // $st->{sse});
            my @t = token_times($st);
            cmp_ok(scalar @t, '>=', 4, "$uri: tokens") or next;
            cmp_ok($t[-1] - $t[0], '>=', (@t - 1) / 20 - 0.05,
                   "$uri: (n-1)/speed at least");
        }

        my $st = timed_stream('/local/v1/chat/completions',
                              body(tokens => $n, stream => 1),
                              'X-Fairgate-Reading-Speed: 10000');
        my @t = token_times($st);
        cmp_ok(scalar @t, '>=', 4, 'fast reader: tokens');
        cmp_ok(@t ? $t[-1] - $t[0] : 9, '<', (@t - 1) / 20 / 2,
               'a reader of 10000 tokens a second: as the engine goes');
    };
}

$s->stop;
$engine->stop if $engine;

END {
    local $?;
    if ($split && $split->{pid}) {
        kill 'TERM', $split->{pid};
        waitpid $split->{pid}, 0;
    }
}

done_testing;
