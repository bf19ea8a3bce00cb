#!/usr/bin/env perl

# FairServe in the gateway (drop-in mode, a mock upstream): interactions
# named by headers, OIT (fairgate_oit) and wsc (policy=wsc with
# fairgate_app_profile).  The gateway is overloaded when requests wait in
# its queue; an upstream of one request at a time (inflight=1) and a slow
# request make it so, on demand.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use JSON::PP ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test qw(:DEFAULT keys_file);
use Fairgate::MockUpstream;
use Fairgate::Load qw(closed_loop);


my $up = Fairgate::MockUpstream->new;
my $json = JSON::PP->new->canonical;

my $BODY = '{"model":"m","max_tokens":8,"messages":['
           . '{"role":"system","content":"You are a careful planner."},'
           . '{"role":"user","content":"plan the next step"}]}';


sub server {
    my (%o) = @_;

    my $s = Fairgate::Test::Server->new(
        workers => $o{workers} // 2,
        http_config => <<"END",
    fairgate_zone zone=fs:16m policy=$o{policy} inflight=$o{inflight}
                  interaction_idle=30s;
    log_format fs '\$fairgate_user \$fairgate_interaction '
                  '\$fairgate_stage \$fairgate_oit \$status';
END
        config => <<"END");
    access_log logs/fs.log fs;

    location /v1/ {
        fairgate zone=fs queue=200 timeout=60s;
        $o{identity}
        $o{oit}
        $o{profiles}
        proxy_pass http://${\ $up->addr };
    }
    location /status { fairgate_status; }
END

    $s->start or die $s->last_error;
    return $s;
}


sub identity { 'fairgate_identity user=$http_x_user app=$http_x_app;' }


sub headers {
    my ($user, $app, $interaction, $stage, $stages, @more) = @_;
    return ['Content-Type: application/json', "X-User: $user",
            ($app ? "X-App: $app" : ()),
            (defined $interaction
                 ? ("X-Fairgate-Interaction: $interaction",
                    "X-Fairgate-Stage: $stage",
                    ($stages ? "X-Fairgate-Stages: $stages" : ()))
                 : ()),
            @more];
}


my $CHAT = { method => 'POST', uri => '/v1/chat/completions',
             body => $BODY };


sub chat {
    my ($s, @h) = @_;
    return $s->request($CHAT, headers => headers(@h));
}


# a request that may wait in the queue while the test goes on
sub send_later {
    my ($s, @h) = @_;
    return $s->send_later($CHAT, headers => headers(@h));
}


sub zone_status {
    my ($s) = @_;
    return $json->decode($s->get('/status')->{body})->{zones}[0];
}


# polls the status page until cond holds (a deadline, not a sleep)
sub status_until {
    my ($s, $cond, $what) = @_;
    my $deadline = Time::HiRes::time() + 10;
    my $st;

    while (Time::HiRes::time() < $deadline) {
        $st = zone_status($s);
        return $st if $cond->($st);
        select undef, undef, undef, 0.01;
    }

    fail("status never showed $what");
    diag($json->encode($st // {}));
    return $st;
}


sub error_of {
    my ($res) = @_;
    my $e = eval { $json->decode($res->{body})->{error} };
    return $e // {};
}


subtest 'nginx -t names what is wrong' => sub {
    my @cases = (
        ['fairgate_oit maybe;', qr/invalid value "maybe" in "fairgate_oit"/],
        ['fairgate_oit on overload=1.5;',
         qr/invalid overload "1.5" in "fairgate_oit"/],
        ['fairgate_oit on user_rpm=0;',
         qr/invalid parameter "user_rpm=0" in "fairgate_oit"/],
        ['fairgate_oit off user_rpm=3;', qr/takes no parameters after "off"/],
        ['fairgate_app_profile chat 10/2;',
         qr/invalid parameter "10\/2" in "fairgate_app_profile"/],
        ['fairgate_app_profile chat 10/2/1 learn=maybe;',
         qr/invalid parameter "learn=maybe" in "fairgate_app_profile"/],
        ['fairgate_app_profile chat learn=off;',
         qr/"fairgate_app_profile" of app "chat" has no stages and does not learn/],
        ["fairgate_app_profile chat 1/1/1;\n"
         . "fairgate_app_profile chat 2/2/2;",
         qr/duplicate "fairgate_app_profile" of app "chat"/],
        ['fairgate_app_profile chat ' . join(' ', ('1/1/1') x 17) . ';',
         qr/more than 16 stages in "fairgate_app_profile" of app "chat"/],
    );

    for my $c (@cases) {
        my $s = Fairgate::Test::Server->new(
            http_config => '    fairgate_zone zone=fs:1m policy=wsc;',
            config => "location / { $c->[0] }");
        my ($rc, $out) = $s->test_config;
        isnt($rc, 0, "refused: $c->[0]");
        like($out, $c->[1], 'and says why');
    }

    for my $z (['policy=vtc wsc=1:2:1', qr/"wsc=" needs policy "wsc"/],
               ['policy=wsc wsc=1:2:0', qr/invalid wsc "1:2:0"/],
               ['policy=wsc wsc=1:x:1', qr/invalid wsc "1:x:1"/],
               ['policy=wsc interactions=-3',
                qr/invalid interactions "-3"/],
               ['policy=wsc interaction_idle=0',
                qr/invalid interaction_idle "0"/])
    {
        my $s = Fairgate::Test::Server->new(
            http_config => "    fairgate_zone zone=fs:1m $z->[0];");
        my ($rc, $out) = $s->test_config;
        isnt($rc, 0, "refused: $z->[0]");
        like($out, $z->[1], 'and says why');
    }

    my $s = Fairgate::Test::Server->new(
        http_config => '    fairgate_zone zone=fs:16m policy=wsc wsc=1:2:1 '
                       . 'interactions=64 interaction_idle=5s;',
        config => 'location / { fairgate_oit on overload=0.5 user_rpm=3 '
                  . 'app_rpm=9 max_requests=0; '
                  . 'fairgate_app_profile chat 100/20/10 50/20/5 learn=on '
                  . 'oit_rpm=4; }');
    my ($rc, $out) = $s->test_config;
    is($rc, 0, 'a whole FairServe configuration is accepted') or diag($out);
};


subtest 'bad interaction headers get 400 and nothing else' => sub {
    my $s = server(policy => 'wsc', inflight => 0, identity => identity(),
                   oit => 'fairgate_oit on user_rpm=2;', profiles => '');
    $up->clear_log;

    my @bad = (
        [['u', 'a', 'has space', 0, 0],
         qr/X-Fairgate-Interaction must be 1 to 128 printable/],
        [['u', 'a', 'x' x 129, 0, 0],
         qr/X-Fairgate-Interaction must be 1 to 128 printable/],
        [['u', 'a', 'i1', 'two', 0], qr/X-Fairgate-Stage must be an integer/],
        [['u', 'a', 'i1', 3, 3], qr/X-Fairgate-Stage must be below/],
        [['u', 'a', 'i1', 0, 'many'], qr/X-Fairgate-Stages must be an integer/],
        [['u', 'a', undef, 0, 0, 'X-Fairgate-Stage: 1'],
         qr/need X-Fairgate-Interaction/],
        [['u', 'a', 'i1', 0, 0, 'X-Fairgate-Interaction: i2'],
         qr/may be sent once/],
    );

    for my $b (@bad) {
        my $res = chat($s, @{ $b->[0] });
        is($res->{status}, 400, "400 for $b->[1]");
        my $e = error_of($res);
        is($e->{code}, 'invalid_interaction', 'code invalid_interaction');
        is($e->{type}, 'invalid_request_error', 'an OpenAI error type');
        like($e->{message} // '', $b->[1], 'the message names the problem');
    }

    is(scalar $up->served, 0, 'none reached the upstream');

    my $res = chat($s, 'u', 'a', 'fine-1', 0, 1);
    is($res->{status}, 200, 'a good one is served after them');
    is($s->stop, 0, 'nginx exits cleanly');
};


subtest 'without overload nobody is throttled' => sub {
    my $s = server(policy => 'wsc', inflight => 0, identity => identity(),
                   oit => 'fairgate_oit on user_rpm=2 app_rpm=2;',
                   profiles => '');

    my @st = map { chat($s, 'eager', 'chat', "new-$_", 0, 1)->{status} }
             1 .. 12;
    is_deeply(\@st, [(200) x 12],
              '12 new interactions a minute against a limit of 2: all 200');

    my $z = zone_status($s);
    is($z->{interactions}{opened}, 12, 'each opened an interaction');
    is($z->{interactions}{completed}, 12, 'and its declared last stage '
                                          . 'completed it');
    is($z->{interactions}{open}, 0, 'none left open');
    is($z->{interactions}{throttled}, 0, 'OIT throttled none');
    ok(!$z->{overloaded}, 'the zone was never overloaded');
    is($z->{users_served}, 1, 'one user served');

    is($s->stop, 0, 'nginx exits cleanly');
    my $log = do { local (@ARGV, $/) = $s->prefix . '/logs/fs.log'; <> };
    like($log, qr/^eager new-1 0 open 200$/m, 'the access log has the '
                                              . 'interaction and verdict');
};


subtest 'overloaded: a new interaction over the limit is throttled, '
        . 'the open one goes on over every limit' => sub {
    # OIT does not need wsc: any policy of the zone
    my $s = server(policy => 'vtc', inflight => 1, identity => identity(),
                   oit => 'fairgate_oit on user_rpm=2;
        fairgate_user_limit rpm=4;', profiles => '');

    # not overloaded: agent opens "plan" and two more, reaching its limits
    is(chat($s, 'agent', 'ops', 'plan', 0, 8)->{status}, 200,
       'agent opens interaction "plan"');
    is(chat($s, 'agent', 'ops', "side-$_", 0, 1)->{status}, 200,
       "agent opens side-$_ while not overloaded") for 1 .. 2;

    # overload: one slow request holds the upstream, another waits
    my $slow = send_later($s, 'bg', 'ops', undef, 0, 0, 'X-Mock-Delay: 2');
    status_until($s, sub { $_[0]{running} >= 1 }, 'the slow one running');
    my $waiter = send_later($s, 'bg2', 'ops', undef, 0, 0);
    status_until($s, sub { $_[0]{waiting} >= 1 }, 'a request waiting');

    my $res = chat($s, 'agent', 'ops', 'fresh', 0, 1);
    is($res->{status}, 429, 'a new interaction over the user limit: 429');
    like(error_of($res)->{message} // '',
         qr/overloaded, and user agent has reached its limit on requests that open new interactions: Limit 2 per min, Used 3/,
         'the message says why');
    is(error_of($res)->{code}, 'rate_limit_exceeded', 'OpenAI\'s code');
    ok($res->{headers}{'retry-after'}, 'with Retry-After');

    $res = chat($s, 'agent', 'ops');
    is($res->{status}, 429, 'so is a request that names no interaction');

    # stages 1..6 of "plan": over OIT's 2 and fairgate_user_limit's 4
    my @stages = map { send_later($s, 'agent', 'ops', 'plan', $_, 8) }
                 1 .. 6;
    status_until($s, sub { $_[0]{waiting} >= 7 },
                 'the six stages waiting, not refused');

    my $z = zone_status($s);
    ok($z->{overloaded}, 'the zone says it is overloaded');
    is($z->{interactions}{continued}, 6, 'six continued');

    is($s->read_later($slow)->{status}, 200, 'the slow one is served');
    is($s->read_later($waiter)->{status}, 200, 'the waiting one too');
    my @got = map { $s->read_later($_)->{status} } @stages;
    is_deeply(\@got, [(200) x 6], 'every stage of "plan" is served');

    is(chat($s, 'agent', 'ops', 'plan', 7, 8)->{status}, 200,
       'its last stage too');

    # a request of an open interaction that fails cuts it: tokens wasted
    is(chat($s, 'agent2', 'ops', 'doomed', 0, 3)->{status}, 200,
       'agent2 opens "doomed"');
    is(chat($s, 'agent2', 'ops', 'doomed', 1, 3, 'X-Mock-Status: 500')
           ->{status}, 500, 'its second stage fails upstream');

    $z = zone_status($s);
    is($z->{interactions}{completed}, 3, 'plan and the sides completed')
        or diag($json->encode($z->{interactions}));
    is($z->{interactions}{aborted}, 1, '"doomed" was aborted');
    cmp_ok($z->{interactions}{tokens_wasted}, '>', 0,
           'the tokens spent on it count as wasted');
    is($z->{interactions}{open}, 0, 'nothing left open');
    is($z->{interactions}{throttled}, 2, 'OIT throttled two requests');

    is($s->stop, 0, 'nginx exits cleanly');
    unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');
};


subtest 'under overload an abusive user is throttled, benign ones '
        . 'are served' => sub {
    my $s = server(policy => 'wsc', inflight => 1, identity => identity(),
                   oit => 'fairgate_oit on user_rpm=12;', profiles => '');

    my $req = { method => 'POST', uri => '/v1/chat/completions',
                body => $BODY };

    # four benign users: two interactions of five stages each, 10
    # requests under the limit of 12 a minute; the abuser opens a new
    # interaction with each of its 100 requests
    my @tenants = map {
        my $u = $_;
        { name => $u, concurrency => 1, max => 10,
          request => { %$req, headers => ['Content-Type: application/json',
                                           "X-User: $u", 'X-App: chat',
                                           'X-Mock-Delay: 0.01'] },
          more => sub {
              my ($i) = @_;
              return ('X-Fairgate-Interaction: ' . $u . '-' . int($i / 5),
                      'X-Fairgate-Stage: ' . $i % 5,
                      'X-Fairgate-Stages: 5');
          } }
    } qw(b1 b2 b3 b4);

    push @tenants,
        { name => 'evil', concurrency => 6, max => 100,
          request => { %$req, headers => ['Content-Type: application/json',
                                           'X-User: evil', 'X-App: chat',
                                           'X-Mock-Delay: 0.01'] },
          more => sub { ('X-Fairgate-Interaction: evil-' . $_[0],
                         'X-Fairgate-Stage: 0', 'X-Fairgate-Stages: 1') } };

    my @done = closed_loop(port => $s->port, total => 140, timeout => 60,
                           tenants => \@tenants);

    my (%ok, %thr, %other);
    for my $d (@done) {
        if ($d->{status} == 200) { $ok{$d->{tenant}}++ }
        elsif ($d->{status} == 429) { $thr{$d->{tenant}}++ }
        else { $other{"$d->{tenant} $d->{status}"}++ }
    }

    is_deeply(\%other, {}, 'nothing but 200 and 429');
    is($thr{$_} // 0, 0, "benign $_ is never throttled") for qw(b1 b2 b3 b4);
    is($ok{$_} // 0, 10, "and all of ${_}'s requests are served")
        for qw(b1 b2 b3 b4);
    cmp_ok($thr{evil} // 0, '>=', 75, 'the abuser is throttled: '
                                      . ($thr{evil} // 0) . ' of 100');

    my $z = zone_status($s);
    is($z->{interactions}{completed}, 8 + ($ok{evil} // 0),
       'every benign interaction completed')
        or diag($json->encode($z->{interactions}));
    is($z->{interactions}{aborted}, 0, 'none was cut');
    is($z->{users_served}, 5, 'every user was served some');

    is($s->stop, 0, 'nginx exits cleanly');
};


subtest 'open interactions survive a reload that changes a profile' => sub {
    my $s = server(policy => 'wsc', inflight => 0, identity => identity(),
                   oit => 'fairgate_oit on user_rpm=2;',
                   profiles => 'fairgate_app_profile ops 100/0/10;');

    is(chat($s, 'agent', 'ops', 'long', 0, 3)->{status}, 200,
       'agent opens "long"');
    is(zone_status($s)->{interactions}{open}, 1, 'one open');

    ok($s->reload(config => $s->{config} =~ s{100/0/10}{300/0/10}r),
       'nginx reloads with another profile') or diag($s->last_error);

    my $z = zone_status($s);
    is($z->{interactions}{open}, 1, 'still open after the reload');
    like($s->error_log, qr/fairgate_zone "fs" reused on reload/,
         'the zone was reused');

    is(chat($s, 'agent', 'ops', 'long', $_, 3)->{status}, 200,
       "stage $_ goes on") for 1 .. 2;

    $z = zone_status($s);
    is($z->{interactions}{continued}, 2, 'as a continuation');
    is($z->{interactions}{completed}, 1, 'and completes');
    is($s->stop, 0, 'nginx exits cleanly');
};


# service shares while two tenants flood an upstream of one request at a
# time; the first answers, before both queues fill, are left out
sub shares {
    my ($s, @tenants) = @_;
    my @done = closed_loop(port => $s->port, total => 100, timeout => 60,
                           tenants => \@tenants);
    my @bad = grep { $_->{status} != 200 } @done;
    is(scalar @bad, 0, 'every answer is 200')
        or diag(join "\n", map { "$_->{status} $_->{body}" } @bad[0 .. 2]);

    my %n;
    $n{$_->{tenant}}++ for @done[20 .. $#done];
    return \%n;
}


subtest 'wsc: shares follow the app weights' => sub {
    # alpha:beta:gamma 1:2:1: w = in + 2 sys + out
    my $s = server(policy => 'wsc', inflight => 1, identity => identity(),
                   oit => '', profiles => 'fairgate_app_profile light '
                   . '100/0/0 learn=off; fairgate_app_profile heavy '
                   . '100/50/100 learn=off;');

    my @tenants = map {
        my ($u, $app) = @$_;
        { name => $u, concurrency => 4,
          request => { method => 'POST', uri => '/v1/chat/completions',
                       body => $BODY,
                       headers => ['Content-Type: application/json',
                                   "X-User: $u", "X-App: $app",
                                   'X-Mock-Delay: 0.01'] } }
    } (['ul', 'light'], ['uh', 'heavy']);

    my $n = shares($s, @tenants);
    my $share = $n->{uh} / ($n->{uh} + $n->{ul});
    diag(sprintf 'wsc light:heavy = %d:%d, heavy share %.3f',
         $n->{ul}, $n->{uh}, $share);
    cmp_ok($share, '>', 0.72, 'heavy (w 300) gets about 3/4 against '
                              . 'light (w 100)');
    cmp_ok($share, '<', 0.78 + 0.06, 'and not much more');

    my $z = zone_status($s);
    my %apps = map { $_->{name} => $_ } @{ $z->{apps} };
    ok($apps{light} && $apps{heavy}, 'both apps are in the status');
    is($s->stop, 0, 'nginx exits cleanly');
};


subtest 'wsc: the keys file\'s priority factor E' => sub {
    my $keys = keys_file(['key-p', qw(plain chat 1)],
                         ['key-q', qw(costly chat 1 priority=3)]);

    my $s = server(policy => 'wsc', inflight => 1,
                   identity => "fairgate_keys $keys;", oit => '',
                   profiles => 'fairgate_app_profile chat 50/10/10;');

    my @tenants = map {
        my ($u, $key) = @$_;
        { name => $u, concurrency => 4,
          request => { method => 'POST', uri => '/v1/chat/completions',
                       body => $BODY,
                       headers => ['Content-Type: application/json',
                                   "Authorization: Bearer $key",
                                   'X-Mock-Delay: 0.01'] } }
    } (['plain', 'key-p'], ['costly', 'key-q']);

    my $n = shares($s, @tenants);
    my $share = $n->{plain} / ($n->{plain} + $n->{costly});
    diag(sprintf 'plain:costly = %d:%d, plain share %.3f',
         $n->{plain}, $n->{costly}, $share);
    cmp_ok($share, '>', 0.68, 'E=3 is charged thrice: plain gets ~3/4');
    cmp_ok($share, '<', 0.84, 'and not much more');
    is($s->stop, 0, 'nginx exits cleanly');
};


done_testing();
