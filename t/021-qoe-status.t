#!/usr/bin/env perl

# The streams' Andes QoE per tenant and per zone (issue 17): what
# $fairgate_qoe gives for each stream with expectations is counted for its
# user, its app and its zone, and read in the status JSON (count, mean,
# share at 0.95 or above, p10/p50/p90 from the histogram) and in
# Prometheus's text (fairgate_qoe, fairgate_user_qoe, fairgate_app_qoe
# histograms).  The mock upstream sends every token at once after a delay
# the test chooses, so each stream's QoE is known: on time, 1; its first
# token 0.2 s late at a reader of 2 tokens a second, about 0.86.  A
# request without expectations, or not streamed, adds nothing; a reload
# keeps the counts.  In local mode (the sim engine) a stream is counted
# the same, and the engine's preemptions (a KV pool too small for the
# requests it holds) show in its status load and in Prometheus.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use JSON::PP ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test;
use Fairgate::MockUpstream;
use Fairgate::Engine;


my $up = Fairgate::MockUpstream->new;
my $J = JSON::PP->new->canonical;
my $N = 6;

my $s = Fairgate::Test::Server->new(
    workers => 1,
    http_config => <<"END",
    fairgate_zone zone=q:16m;
    log_format q '\$request_uri \$http_x_user q=\$fairgate_qoe';
END
    config => <<"END");
    access_log logs/q.log q;
    fairgate_identity user=\$http_x_user app=\$http_x_app;

    location /v1/ {
        fairgate zone=q queue=100 timeout=30s;
        fairgate_qoe ttft=2s speed=5;
        proxy_pass http://${\ $up->addr };
    }
    location /off/v1/ {
        fairgate zone=q queue=100 timeout=30s;
        proxy_pass http://${\ $up->addr }/v1/;
    }
    location /status { fairgate_status; }
    location /metrics { fairgate_status format=prometheus; }
END

$s->start or die $s->last_error;


sub stream {
    my ($uri, $user, @headers) = @_;
    my $body = $J->encode({ model => 'm', stream => JSON::PP::true,
                            max_tokens => $N,
                            messages => [{ role => 'user',
                                           content => 'hi' }] });
    my $r = $s->post($uri, $body,
                     headers => ['Content-Type: application/json',
                                 "X-User: $user", "X-Mock-Tokens: $N",
                                 @headers]);
    is($r->{status}, 200, "$uri for $user: 200")
        or diag($r->{error} // $r->{body});
    return $r;
}


sub zone { $J->decode($s->get('/status')->{body})->{zones}[0] }


# polls the status until the zone counted n streams (a deadline, no sleep
# as synchronisation: the count moves when the request is freed)
sub zone_until {
    my ($n) = @_;
    my $deadline = Time::HiRes::time() + 10;
    my $z;
    while (Time::HiRes::time() < $deadline) {
        $z = zone();
        return $z if $z->{qoe}{count} >= $n;
        Time::HiRes::sleep($Fairgate::Test::POLL);
    }
    return $z;
}


sub tenant {
    my ($z, $kind, $name) = @_;
    my ($t) = grep { $_->{name} eq $name } @{ $z->{$kind} };
    return $t // {};
}


# the sample of a metric's line, or undef
sub metric {
    my ($m, $line) = @_;
    return $m =~ /^\Q$line\E ([0-9.e+-]+)$/m ? $1 : undef;
}


my $z = zone();
is_deeply($z->{qoe}, { count => 0, mean => undef, share_095 => undef,
                       p10 => undef, p50 => undef, p90 => undef },
          'none yet: count 0, the rest null');

subtest 'streams with expectations are counted, others not' => sub {
    # first, so that they are freed before the others are even sent: no
    # expectations, or not a stream
    stream('/off/v1/chat/completions', 'carol');
    my $r = $s->post('/v1/chat/completions?json',
                     '{"model":"m","messages":[{"role":"user",'
                     . '"content":"hi"}]}',
                     headers => ['Content-Type: application/json',
                                 'X-User: carol']);
    is($r->{status}, 200, 'a request not streamed: 200');

    stream('/v1/chat/completions?on', 'alice');
    stream('/v1/chat/completions?late', 'alice', 'X-Mock-Delay: 0.3',
           'X-Fairgate-TTFT: 0.1', 'X-Fairgate-Reading-Speed: 2');
    stream('/v1/chat/completions?app', 'bob', 'X-App: chat');

    $z = zone_until(3);
    is($z->{qoe}{count}, 3, 'the zone: three streams, not carol\'s');

    my $c = tenant($z, 'users', 'carol');
    is($c->{finished}, 2, 'carol was served twice');
    is($c->{qoe}{count}, 0, '... and has no QoE');

    my $a = tenant($z, 'users', 'alice')->{qoe};
    is($a->{count}, 2, 'alice: two');
    is($a->{share_095}, 0.5, 'alice: one at 0.95 or above');

    # the late one: token i due at 0.1 + i / 2 s, all delivered at 0.3 s
    # and a little (the mock's delay, the gateway's turn): read from then
    # at 2 a second, 0.2 s and a little late each, QoE 1 - 1.2 / 8.7
    # (0.862) less a little for each 10 ms more
    my $late = 2 * $a->{mean} - 1;
    cmp_ok($late, '>', 0.75, "alice's late stream: QoE $late above 0.75");
    cmp_ok($late, '<=', 0.8622, '... at most 0.862');
    like(log_line('/v1/chat/completions?late'), qr/ q=0\.(?:7[6-9]|8)/,
         '... what $fairgate_qoe logged');

    # from the buckets (0.75, 0.9] and (0.99, 1], one each: p10 at a fifth
    # of the first, p50 at its top, p90 at 0.8 of the last
    cmp_ok(abs($a->{p10} - 0.78), '<', 1e-6, 'alice: p10 0.78');
    cmp_ok(abs($a->{p50} - 0.9), '<', 1e-6, 'alice: p50 0.9');
    cmp_ok(abs($a->{p90} - 0.998), '<', 1e-6, 'alice: p90 0.998');

    my $b = tenant($z, 'users', 'bob')->{qoe};
    is($b->{count}, 1, 'bob: one');
    is($b->{mean}, 1, 'bob: on time, QoE 1');
    is($b->{share_095}, 1, 'bob: all at 0.95 or above');
    is(tenant($z, 'apps', 'chat')->{qoe}{count}, 1, 'the app chat: one');

    cmp_ok(abs($z->{qoe}{mean} - (2 + $late) / 3), '<', 1e-6,
           'the zone: the mean of the three');
    cmp_ok(abs($z->{qoe}{share_095} - 2 / 3), '<', 1e-6,
           'the zone: two of three at 0.95 or above');
};


sub check_metrics {
    my ($what, $late) = @_;
    my $m = $s->get('/metrics')->{body};
    my $u = 'fairgate_user_qoe_bucket{zone="q",user="alice",le=';

    is(metric($m, $u . '"0.75"}'), 0, "$what: alice below 0.75: none");
    is(metric($m, $u . '"0.9"}'), 1, "$what: alice to 0.9: one");
    is(metric($m, $u . '"0.99"}'), 1, "$what: alice to 0.99: one");
    is(metric($m, $u . '"+Inf"}'), 2, "$what: alice: two in all");
    is(metric($m, 'fairgate_user_qoe_count{zone="q",user="alice"}'), 2,
       "$what: alice's count");
    cmp_ok(abs(metric($m, 'fairgate_user_qoe_sum{zone="q",user="alice"}')
               - (1 + $late)), '<', 1e-5, "$what: alice's sum, 1 + the late");
    is(metric($m, 'fairgate_user_qoe_count{zone="q",user="carol"}'), 0,
       "$what: carol's count, 0");
    is(metric($m, 'fairgate_app_qoe_count{zone="q",app="chat"}'), 1,
       "$what: the app's count");
    is(metric($m, 'fairgate_qoe_bucket{zone="q",le="0.95"}'), 1,
       "$what: the zone to 0.95: one");
    is(metric($m, 'fairgate_qoe_bucket{zone="q",le="+Inf"}'), 3,
       "$what: the zone: three");
    is(metric($m, 'fairgate_qoe_count{zone="q"}'), 3, "$what: its count");
    like($m, qr/^# TYPE fairgate_user_qoe histogram$/m,
         "$what: a histogram");

    # every line a comment or "name{labels} number", each family once
    my @bad = grep { !/^# (?:HELP|TYPE) / && !/^[a-z_]+\{[^}]*\} [0-9.e+-]+$/ }
              split /\n/, $m;
    is(scalar @bad, 0, "$what: well-formed") or diag(join "\n", @bad[0 .. 4]);
    my %type;
    $type{$_}++ for $m =~ /^# TYPE (\S+)/mg;
    is(scalar(grep { $_ > 1 } values %type), 0, "$what: each family once")
        or diag(join " ", grep { $type{$_} > 1 } keys %type);
}


# the access log's line of a URI, once written
sub log_line { $s->access_line('q.log', $_[0]) }


subtest 'Prometheus: the histograms' => sub {
    my $late = 2 * tenant($z, 'users', 'alice')->{qoe}{mean} - 1;
    check_metrics('metrics', $late);
};


subtest 'a reload keeps them' => sub {
    my $before = zone();
    my $late = 2 * tenant($before, 'users', 'alice')->{qoe}{mean} - 1;
    ok($s->reload, 'reloaded') or diag($s->last_error);
    my $after = zone();
    is($after->{reloads}, $before->{reloads} + 1, 'the zone survived');
    is_deeply($after->{qoe}, $before->{qoe}, 'the zone\'s QoE the same');
    is_deeply(tenant($after, 'users', 'alice')->{qoe},
              tenant($before, 'users', 'alice')->{qoe},
              'alice\'s the same');
    check_metrics('after the reload', $late);
};


is($s->stop, 0, 'nginx exits cleanly');
unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');


SKIP: {
    skip "no $Fairgate::Engine::MODEL", 1 unless -f $Fairgate::Engine::MODEL;

    subtest 'local mode: a stream counted; the engine\'s preemptions' => sub {
        # 6 blocks of 16 positions: six answers of 60 tokens at once do
        # not fit, and the engine preempts; at 20 times the step model's
        # speed an answer takes long enough that the six overlap on a
        # loaded machine too (at 100 times, a clean clone's run once saw
        # them served one after another, none preempted)
        my $e = Fairgate::Engine->new(backend => 'sim',
                    args => ['--kv-blocks', '6', '--speedup', '20']);
        $e->start;
        my $ls = Fairgate::Test::Server->new(
            workers => 1,
            http_config => 'fairgate_engine stories shm=' . $e->shm
                           . ' model=' . $e->model . " dead_after=1s;\n"
                           . "    fairgate_zone zone=l:16m;\n",
            config => <<'END');
    location /v1/ {
        fairgate zone=l queue=100 timeout=30s;
        fairgate_identity user=$http_x_user;
        fairgate_qoe ttft=5s speed=1000;
        fairgate_engine_pass stories;
    }
    location /bare/v1/ { fairgate_engine_pass stories; }
    location /status { fairgate_status; }
    location /metrics { fairgate_status format=prometheus; }
END
        $ls->start or die $ls->last_error;

        my $st;
        my $deadline = Time::HiRes::time() + 10;
        while (Time::HiRes::time() < $deadline) {
            $st = $J->decode($ls->get('/status')->{body});
            last if $st->{engines}[0]{load};
            Time::HiRes::sleep($Fairgate::Test::POLL);
        }
        is($st->{engines}[0]{load}{preemptions}, 0, 'none preempted yet');

        my $body = $J->encode({ model => 'stories260K', max_tokens => 60,
                                messages => [{ role => 'user',
                                    content => 'Once upon a time' }] });
        my @r = $ls->concurrent(
            [map { "POST /bare/v1/chat/completions\n$body" } 1 .. 6],
            headers => ['Content-Type: application/json']);
        is(scalar(grep { ($_->{status} // 0) == 200 } @r), 6,
           'six answers at once, served');

        my $sb = $J->encode({ model => 'stories260K', max_tokens => 8,
                              stream => JSON::PP::true,
                              messages => [{ role => 'user',
                                             content => 'Once upon' }] });
        is($ls->post('/v1/chat/completions', $sb,
                     headers => ['Content-Type: application/json',
                                 'X-User: ann'])->{status},
           200, 'a stream through the zone');

        $deadline = Time::HiRes::time() + 10;
        while (Time::HiRes::time() < $deadline) {
            $st = $J->decode($ls->get('/status')->{body});
            last if $st->{zones}[0]{qoe}{count};
            Time::HiRes::sleep($Fairgate::Test::POLL);
        }
        my ($ann) = grep { $_->{name} eq 'ann' } @{ $st->{zones}[0]{users} };
        is($ann->{qoe}{count}, 1, 'ann: her stream counted');
        is($ann->{qoe}{mean}, 1, '... in time: QoE 1');

        my $pre = $st->{engines}[0]{load}{preemptions};
        cmp_ok($pre, '>', 0, "the engine preempted ($pre)");
        is(metric($ls->get('/metrics')->{body},
                  'fairgate_engine_preemptions_total{engine="stories"}'),
           $pre, '... as Prometheus says');

        is($ls->stop, 0, 'nginx exits cleanly');
        $e->stop;
    };
}

done_testing;
