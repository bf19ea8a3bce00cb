#!/usr/bin/env perl

# The life of a queued request and of the capacity it holds: a client that
# goes away while waiting gives its place up, upstream errors and timeouts
# release the capacity, the queue times out and fills up, a stream cut by
# its client releases at once, a reload keeps counters and windows and
# drains the old workers, a killed worker's requests are reclaimed, zones
# are independent, and the token capacity holds requests back.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Digest::SHA qw(sha256_hex);
use File::Temp ();
use IO::Select;
use JSON::PP ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test;
use Fairgate::MockUpstream;


my $up = Fairgate::MockUpstream->new;
my $json = JSON::PP->new->canonical;

my $dir = File::Temp::tempdir('fairgate-keys-XXXXXX', TMPDIR => 1,
                              CLEANUP => 1);
chmod 0755, $dir;

open my $fh, '>', "$dir/keys" or die;
print {$fh} map { sha256_hex("sk-$_") . " $_ - 1\n" } qw(alice bob carol);
print {$fh} sha256_hex('sk-dave') . " dave - 1 rpm=2\n";
close $fh;


sub server {
    my (%o) = (fairgate => '', location => '', @_);
    my $zone = $o{zone} // 'fairgate_zone zone=llm:16m inflight=1;';
    my $s = Fairgate::Test::Server->new(
        workers => $o{workers} // 1,
        http_config => "    $zone\n"
            . q{    log_format fg '$fairgate_user $fairgate_outcome $status';}
            . "\n",
        config => <<"END" . ($o{config} // ''));
    access_log logs/fg.log fg;
    proxy_buffering off;

    location /v1/ {
        fairgate zone=llm $o{fairgate};
        fairgate_keys $dir/keys;
        proxy_pass http://${\ $up->addr };
        $o{location}
    }

    location /status { fairgate_status; }
END
    $s->start or die $s->last_error;
    return $s;
}


# sends a request on its own connection and returns the socket, unread
sub send_chat {
    my ($s, $user, %o) = @_;
    my $body = $json->encode({
        model => 'm', max_tokens => $o{max_tokens} // 4,
        ($o{stream} ? (stream => JSON::PP::true) : ()),
        messages => [{ role => 'user', content => 'hi' }] });
    my $sock = $s->connect;
    $sock->autoflush(1);
    print {$sock} 'POST ' . ($o{uri} // '/v1/chat/completions')
        . " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        . "Authorization: Bearer sk-$user\r\nX-Tag: $o{tag}\r\n"
        . join('', map { "$_\r\n" } @{ $o{headers} // [] })
        . 'Content-Length: ' . length($body) . "\r\n\r\n$body";
    return $sock;
}


# reads a response to its end, within a deadline
sub read_response {
    my ($sock, $timeout) = @_;
    my $sel = IO::Select->new($sock);
    my $raw = '';
    my $deadline = Time::HiRes::time() + ($timeout // 10);

    while ((my $left = $deadline - Time::HiRes::time()) > 0) {
        last unless $sel->can_read($left);
        my $n = sysread($sock, my $buf, 65536);
        last unless $n;
        $raw .= $buf;
    }

    close $sock;
    return Fairgate::Test::parse_response($raw);
}


sub chat {
    my ($s, $user, %o) = @_;
    return read_response(send_chat($s, $user, tag => $o{tag} // 'x', %o));
}


sub zone {
    my ($s, $name) = @_;
    my $res = $s->get('/status');
    my $all = eval { $json->decode($res->{body})->{zones} } // [];
    my ($z) = grep { $_->{name} eq ($name // 'llm') } @$all;
    return $z;
}


# polls the status page until cond holds for the zone, or a deadline
sub wait_zone {
    my ($s, $cond, $name, $timeout) = @_;
    my $deadline = Time::HiRes::time() + ($timeout // 10);
    my $z;

    while (1) {
        $z = zone($s, $name);
        return $z if $z && $cond->($z);
        return undef if Time::HiRes::time() > $deadline;
        Time::HiRes::sleep(0.01);
    }
}


sub user {
    my ($z, $name) = @_;
    my ($u) = grep { $_->{name} eq $name } @{ $z->{users} // [] };
    return $u // {};
}


sub log_has {
    my ($s, $re) = @_;
    my $deadline = Time::HiRes::time() + 5;
    while (1) {
        open my $fh, '<', $s->prefix . '/logs/fg.log' or die;
        local $/;
        my $l = <$fh> // '';
        return 1 if $l =~ $re;
        return 0 if Time::HiRes::time() > $deadline;
        Time::HiRes::sleep(0.01);
    }
}


sub clean_stop {
    my ($s) = @_;
    is($s->stop, 0, 'nginx exits cleanly');
    unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');
}


subtest 'a client that goes away while queued frees its place' => sub {
    my $s = server();
    $up->clear_log;

    my $a = send_chat($s, 'alice', tag => 'a', headers => ['X-Mock-Delay: 1']);
    ok(wait_zone($s, sub { $_[0]{inflight}{running} == 1 }), 'a runs');

    my $b = send_chat($s, 'bob', tag => 'b');
    ok(wait_zone($s, sub { $_[0]{waiting} == 1 }), 'b waits');

    close $b;
    my $z = wait_zone($s, sub { $_[0]{waiting} == 0 });
    ok($z, 'b left the queue when it went away');
    is(user($z, 'bob')->{cancelled}, 1, 'counted as cancelled');
    is($z->{inflight}{running}, 1, 'a still runs');

    my $c = send_chat($s, 'carol', tag => 'c');
    ok(wait_zone($s, sub { $_[0]{waiting} == 1 }), 'c waits');

    is(read_response($a)->{status}, 200, 'a is served');
    is(read_response($c)->{status}, 200, 'then c');
    is_deeply([$up->served], ['a', 'c'], 'b never reached the upstream');
    ok(log_has($s, qr/^bob aborted 499$/m), 'logged as aborted');

    clean_stop($s);
};


subtest 'upstream errors and timeouts release the capacity' => sub {
    my $s = server(location => 'proxy_read_timeout 300ms;');
    $up->clear_log;

    # each holds the capacity a while, with the next one waiting behind it

    for my $case ([['X-Mock-Status: 500', 'X-Mock-Delay: 0.2'], 500,
                   'an error status'],
                  [['X-Mock-Close: 1', 'X-Mock-Delay: 0.2'], 502,
                   'a closed connection'],
                  [['X-Mock-Delay: 5'], 504, 'a timeout'])
    {
        my ($h, $status, $what) = @$case;
        my $a = send_chat($s, 'alice', tag => "a$status", headers => $h);
        ok(wait_zone($s, sub { $_[0]{inflight}{running} == 1 }),
           "$what: a runs");

        my $b = send_chat($s, 'bob', tag => "b$status");
        ok(wait_zone($s, sub { $_[0]{waiting} == 1 }), "$what: b waits");

        is(read_response($a)->{status}, $status, "$what: a gets $status");
        is(read_response($b)->{status}, 200, "$what: then b is served");
    }

    my $z = wait_zone($s, sub { $_[0]{inflight}{running} == 0 });
    ok($z, 'nothing holds the capacity');
    is(user($z, 'alice')->{cancelled}, 3, 'the failed ones are cancelled');
    is(user($z, 'alice')->{finished}, 0, 'not finished');
    is(user($z, 'bob')->{finished}, 3, 'the others finished');
    ok(log_has($s, qr/^alice upstream_error 504$/m), 'outcome logged');

    # the upstream gave up on: the mock is still "serving" the 504
    is($s->stop, 0, 'nginx exits cleanly');
    unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');
};


subtest 'queue timeout: 503, Retry-After, OpenAI error' => sub {
    my $s = server(fairgate => 'timeout=300ms');
    $up->clear_log;

    my $a = send_chat($s, 'alice', tag => 'a', headers => ['X-Mock-Delay: 2']);
    ok(wait_zone($s, sub { $_[0]{inflight}{running} == 1 }), 'a runs');

    my $t0 = Time::HiRes::time();
    my $res = chat($s, 'bob', tag => 'b');
    my $waited = Time::HiRes::time() - $t0;

    is($res->{status}, 503, 'b times out: 503');
    cmp_ok($waited, '>=', 0.25, 'after the timeout');
    cmp_ok($waited, '<', 1.8, 'not after a was served');
    like($res->{headers}{'retry-after'}, qr/^\d+$/, 'Retry-After');
    my $e = eval { $json->decode($res->{body})->{error} } // {};
    is($e->{code}, 'queue_timeout', 'code queue_timeout');
    is($e->{type}, 'server_error', 'type server_error');
    like($e->{message}, qr/waited \d+ ms in the queue/, 'message');

    my $z = zone($s);
    is($z->{timed_out}, 1, 'the zone counts it');
    is(user($z, 'bob')->{timed_out}, 1, 'and bob');
    is($z->{waiting}, 0, 'b left the queue');

    is(read_response($a)->{status}, 200, 'a is served');
    is_deeply([$up->served], ['a'], 'b never reached the upstream');
    ok(log_has($s, qr/^bob timeout 503$/m), 'outcome logged');

    clean_stop($s);
};


subtest 'queue full: a tenant waits with at most queue= requests' => sub {
    my $s = server(fairgate => 'queue=1');

    my $a = send_chat($s, 'alice', tag => 'a', headers => ['X-Mock-Delay: 1']);
    ok(wait_zone($s, sub { $_[0]{inflight}{running} == 1 }), 'a runs');

    my $b1 = send_chat($s, 'bob', tag => 'b1');
    ok(wait_zone($s, sub { $_[0]{waiting} == 1 }), 'b1 waits');

    my $res = chat($s, 'bob', tag => 'b2');
    is($res->{status}, 503, 'b2: 503 at once');
    my $e = eval { $json->decode($res->{body})->{error} } // {};
    is($e->{code}, 'queue_full', 'code queue_full');
    like($res->{headers}{'retry-after'}, qr/^\d+$/, 'Retry-After');

    my $c = send_chat($s, 'carol', tag => 'c');
    ok(wait_zone($s, sub { $_[0]{waiting} == 2 }), 'carol has a queue too');

    is(user(zone($s), 'bob')->{queue_full}, 1, 'counted');

    is(read_response($_)->{status}, 200, 'served') for $a, $b1, $c;

    clean_stop($s);
};


subtest 'a stream cut by its client releases the capacity at once' => sub {
    my $s = server();
    $up->clear_log;

    my $a = send_chat($s, 'alice', tag => 'a', stream => 1, max_tokens => 100,
                      headers => ['X-Mock-Token-Delay: 0.05']);

    # read until a few chunks came, then go
    my $sel = IO::Select->new($a);
    my $raw = '';
    my $deadline = Time::HiRes::time() + 5;
    while ($raw !~ /(?:data: .*\n\n.*){3}/s && $sel->can_read(1)) {
        sysread($a, my $buf, 65536) or last;
        $raw .= $buf;
        last if Time::HiRes::time() > $deadline;
    }
    like($raw, qr/data: \{/, 'the stream started');

    my $b = send_chat($s, 'bob', tag => 'b');
    ok(wait_zone($s, sub { $_[0]{waiting} == 1 }), 'b waits behind it');

    my $t0 = Time::HiRes::time();
    close $a;

    is(read_response($b)->{status}, 200, 'b is served');
    cmp_ok(Time::HiRes::time() - $t0, '<', 2.5,
           'long before the stream would have ended (5 s)');

    my $z = wait_zone($s, sub { user($_[0], 'alice')->{cancelled} == 1 });
    ok($z, 'the stream counts as cancelled');
    my $u = user($z, 'alice');
    cmp_ok($u->{service}, '>', 5 + 2 * 2, 'its tokens were charged');
    cmp_ok($u->{service}, '<', 5 + 2 * 100, 'only those that streamed');

    clean_stop($s);
};


subtest 'reload keeps counters and windows; old workers drain' => sub {
    my $s = server(workers => 2);

    is(chat($s, 'dave', tag => 'd1')->{status}, 200, 'dave 1 of 2');
    is(chat($s, 'dave', tag => 'd2')->{status}, 200, 'dave 2 of 2');
    is(chat($s, 'alice', tag => 'a1')->{status}, 200, 'alice');

    my $before = zone($s);

    # one in flight, one waiting, across the reload
    my $a = send_chat($s, 'alice', tag => 'a2', headers => ['X-Mock-Delay: 1']);
    ok(wait_zone($s, sub { $_[0]{inflight}{running} == 1 }), 'a2 runs');
    my $b = send_chat($s, 'bob', tag => 'b');
    ok(wait_zone($s, sub { $_[0]{waiting} == 1 }), 'b waits');

    ok($s->reload(wait_old => 0), 'reload') or diag($s->last_error);

    my $z = zone($s);
    is($z->{reloads}, 1, 'the zone was kept');
    is(user($z, 'alice')->{admitted}, 2, "alice's counts are kept");
    is(user($z, 'alice')->{service}, user($before, 'alice')->{service}
                                     + 5, "and her service, plus a2's input");
    is($z->{waiting}, 1, 'b still waits');

    my $res = chat($s, 'dave', tag => 'd3');
    is($res->{status}, 429, "dave's window survived: his third is refused");

    is(read_response($a)->{status}, 200, 'a2, in flight across the reload');
    is(read_response($b)->{status}, 200, 'b, queued across the reload');

    ok($s->reload, 'the old workers are gone') or diag($s->last_error);

    $z = wait_zone($s, sub { $_[0]{inflight}{running} == 0 });
    ok($z, 'no capacity left held');
    is($z->{reclaimed}, 0, 'nothing needed reclaiming');
    is(chat($s, 'carol', tag => 'c')->{status}, 200, 'new workers serve');

    clean_stop($s);
};


subtest 'a reload changes the capacity in place' => sub {
    my $s = server();

    is(chat($s, 'alice', tag => 'a')->{status}, 200, 'alice');

    ok($s->reload(http_config => "    fairgate_zone zone=llm:16m "
                                 . "inflight=2;\n"
                                 . q{    log_format fg '$fairgate_user }
                                 . q{$fairgate_outcome $status';} . "\n"),
       'reload with inflight=2') or diag($s->last_error);

    my $z = zone($s);
    is($z->{reloads}, 1, 'the zone is kept');
    is($z->{inflight}{limit}, 2, 'with the new capacity');
    is(user($z, 'alice')->{admitted}, 1, 'and its tenants');

    my $a = send_chat($s, 'alice', tag => 'a', headers => ['X-Mock-Delay: 1']);
    my $b = send_chat($s, 'bob', tag => 'b', headers => ['X-Mock-Delay: 1']);
    ok(wait_zone($s, sub { $_[0]{inflight}{running} == 2 }),
       'two run at once');
    is(read_response($_)->{status}, 200, 'served') for $a, $b;

    clean_stop($s);
};


subtest "a killed worker's requests are reclaimed" => sub {
    my $s = server();

    my $a = send_chat($s, 'alice', tag => 'a', headers => ['X-Mock-Delay: 5']);
    ok(wait_zone($s, sub { $_[0]{inflight}{running} == 1 }), 'a runs');
    my $b = send_chat($s, 'bob', tag => 'b');
    ok(wait_zone($s, sub { $_[0]{waiting} == 1 }), 'b waits');

    my ($worker) = $s->worker_pids;
    kill 'KILL', $worker;

    my $z = wait_zone($s, sub {
        my @w = $s->worker_pids;
        @w && $w[0] != $worker && $_[0]{reclaimed} == 2
    });
    ok($z, 'the new worker reclaimed both');
    is($z->{inflight}{running}, 0, 'the capacity is free');
    is($z->{waiting}, 0, 'the queue is empty');
    is($z->{running}, 0, 'the scheduler has nothing running');

    close $a;
    close $b;

    is(chat($s, 'carol', tag => 'c')->{status}, 200, 'the next is served');

    like($s->error_log, qr/2 requests of exited worker $worker reclaimed/,
         'the reclaim is logged');

    is($s->stop, 0, 'nginx exits cleanly');
};


subtest 'zones are independent' => sub {
    my $s = server(zone => 'fairgate_zone zone=llm:16m inflight=1; '
                          . 'fairgate_zone zone=other:16m inflight=1;',
                   config => <<"END");
    location /other/ {
        fairgate zone=other;
        fairgate_keys $dir/keys;
        proxy_pass http://${\ $up->addr }/v1/;
    }
END

    my $a = send_chat($s, 'alice', tag => 'a', headers => ['X-Mock-Delay: 2']);
    ok(wait_zone($s, sub { $_[0]{inflight}{running} == 1 }), 'a runs');

    my $t0 = Time::HiRes::time();
    my $res = chat($s, 'bob', tag => 'b', uri => '/other/chat/completions');
    is($res->{status}, 200, 'b, in the other zone, is served');
    cmp_ok(Time::HiRes::time() - $t0, '<', 1.8, 'without waiting for a');

    my $c = send_chat($s, 'carol', tag => 'c');
    ok(wait_zone($s, sub { $_[0]{waiting} == 1 }), 'c waits in llm');
    is(zone($s, 'other')->{waiting}, 0, 'not in other');

    is(read_response($_)->{status}, 200, 'served') for $a, $c;

    clean_stop($s);
};


subtest 'token capacity: requests in flight reserve input + max_tokens' => sub {
    my $s = server(zone => 'fairgate_zone zone=llm:16m inflight_tokens=100;');

    # 2 bytes of text: 1 token, and 4 for the message: 5 in
    my $a = send_chat($s, 'alice', tag => 'a', max_tokens => 60,
                      headers => ['X-Mock-Delay: 0.5']);
    my $z = wait_zone($s, sub { $_[0]{inflight}{running} == 1 });
    is($z->{inflight}{tokens}, 65, 'a reserves 65');

    my $b = send_chat($s, 'bob', tag => 'b', max_tokens => 20,
                      headers => ['X-Mock-Delay: 0.5']);
    $z = wait_zone($s, sub { $_[0]{inflight}{running} == 2 });
    is($z->{inflight}{tokens}, 90, 'b fits beside it: 90');

    my $c = send_chat($s, 'carol', tag => 'c', max_tokens => 20);
    ok(wait_zone($s, sub { $_[0]{waiting} == 1 }), 'c does not: it waits');

    is(read_response($a)->{status}, 200, 'a');
    is(read_response($c)->{status}, 200, 'c, once a is done');
    is(read_response($b)->{status}, 200, 'b');

    my $res = chat($s, 'alice', tag => 'big', max_tokens => 500);
    is($res->{status}, 200, 'one larger than the capacity runs alone');

    clean_stop($s);
};


$up->stop;

done_testing();
