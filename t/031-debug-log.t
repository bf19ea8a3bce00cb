#!/usr/bin/env perl

# Following one request in the debug log: with "error_log ... debug" each
# phase of a request says so in a line that starts "fairgate ", names the
# tenant and gives the figures (docs/operations.md).  A request served by
# the engine logs admission, dispatch, hand-off, submission, first token
# and accounting, in that order; one that waits behind another logs its
# wait and its dispatch; one refused logs why; a drop-in request logs its
# admission, dispatch, the upstream's answer, first token and accounting.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use JSON::PP ();
use Test::More;

use Fairgate::Test;
use Fairgate::Engine;
use Fairgate::MockUpstream;

plan skip_all => "no $Fairgate::Engine::MODEL"
    unless -f $Fairgate::Engine::MODEL;

my $J = JSON::PP->new->canonical;

# one sequence at a time, 10 ms a token: a second request waits
my $engine = Fairgate::Engine->new(
    backend => 'sim',
    args => ['--max-batch', '1', '--step-model', 'linear:0.0001,0.01']);
$engine->start;

my $model = $engine->model;
my $shm = $engine->shm;

my $up = Fairgate::MockUpstream->new;

my $s = Fairgate::Test::Server->new(
    log_level => 'debug',
    http_config => <<"END",
    fairgate_engine stories shm=$shm model=$model;
    fairgate_zone zone=llm:16m;
END
    config => <<"END");
    location /v1/ {
        fairgate zone=llm queue=10 timeout=30s;
        fairgate_identity user=\$http_x_user;
        fairgate_engine_pass;
    }
    location /dropin/ {
        fairgate zone=llm;
        fairgate_identity user=\$http_x_user;
        proxy_pass http://${\ $up->addr }/;
    }
    location /status { fairgate_status; }
END
$s->start or die $s->last_error;

my $deadline = time + 10;
while (time < $deadline) {
    my $e = $s->status_json->{engines}[0];
    last if $e->{attached} && $e->{load};
    select undef, undef, undef, 0.02;
}


sub chat {
    my ($user, %o) = @_;
    return { method => 'POST', uri => '/v1/chat/completions',
             body => $J->encode({ model => $o{model} // 'stories260K',
                                  max_tokens => $o{max_tokens} // 8,
                                  stream => $o{stream} ? JSON::PP::true
                                                       : JSON::PP::false,
                                  messages => [{ role => 'user',
                                                 content => 'Tell me a '
                                                            . 'story' }] }),
             headers => ["X-User: $user",
                         'Content-Type: application/json'] };
}


# the lines of the log from mark on that are about tenant (or its engine's
# submission, which names no tenant), with the phase each names
sub phases {
    my ($mark, $user) = @_;
    my @p;

    for my $l (split /\n/, $s->error_log($mark)) {
        next unless $l =~ /\] \d+#\d+: (?:\*\d+ )?fairgate ([a-z -]+):(.*)/;
        my ($phase, $rest) = ($1, $2);
        next unless $rest =~ /tenant "\Q$user\E"/ || $phase eq 'submit';
        push @p, [$phase, $l];
    }

    return @p;
}


subtest 'a request served: each phase, in order' => sub {
    my $mark = $s->log_mark;

    my $r = $s->request(chat('alice', stream => 1));
    is($r->{status}, 200, 'served');

    ok($s->wait_for_log(qr/fairgate account: tenant "alice"/,
                        mark => $mark),
       'its accounting is logged');

    my @p = phases($mark, 'alice');
    my @want = ('admit', 'dispatch', 'hand-off', 'submit', 'first token',
                'account');

    is_deeply([map { $_->[0] } @p], \@want, 'the phases in order')
        or diag(join "\n", map { $_->[1] } @p);

    my %l = map { $_->[0] => $_->[1] } @p;

    like($l{admit}, qr/app "" weight 1\.00, estimate \d+ tokens in, 8 out, \d+ reserved: admitted/,
         'admit: the estimate and the verdict');
    like($l{dispatch}, qr/to "stories" after \d+ ms, \d+ prompt tokens cached there, 1 running, \d+ tokens in flight, counter [\d.]+/,
         'dispatch: the engine and the counters');
    like($l{'hand-off'}, qr/to engine "stories" \(the zone's dispatch\), \d+ prompt tokens, \d+ blocks hashed, up to 8 out/,
         'hand-off: the engine and the tokens');
    like($l{submit}, qr/engine "stories" took request \d+: \d+ prompt tokens, up to 8 out, streamed/,
         'submit: the tokens submitted');
    like($l{'first token'}, qr/\d+ ms after admission, \d+ ms after the hand-off, \d+ prompt tokens cached/,
         'first token: when, and the prefix cached');
    like($l{account}, qr/settled at \d+ tokens in, 8 out \(usage\), 8 charged as they streamed, \d+ cached, the user's counter [\d.]+, 0 running/,
         'account: the tokens charged and the counter after');
};


subtest 'a request that waits behind another' => sub {
    my $mark = $s->log_mark;

    # 40 tokens of 10 ms hold the engine's one seat for 0.4 s
    my $first = $s->send_later(chat('bob', max_tokens => 40));
    ok($s->wait_for_log(qr/fairgate first token: tenant "bob"/,
                        mark => $mark),
       'the first request runs');

    my $r = $s->request(chat('carol'));
    is($r->{status}, 200, 'the second is served');
    is($s->read_later($first)->{status}, 200, 'the first is served');

    ok($s->wait_for_log(qr/fairgate account: tenant "carol"/, mark => $mark),
       'its accounting is logged');

    my @p = map { $_->[0] } phases($mark, 'carol');
    is_deeply([grep { $_ ne 'submit' } @p],
              ['admit', 'queue', 'dispatch', 'queue', 'hand-off',
               'first token', 'account'],
              'admitted, waits, dispatched, resumed, served')
        or diag($s->error_log($mark));

    my $log = $s->error_log($mark);
    like($log, qr/fairgate admit: tenant "carol" .*: admitted/, 'admit: admitted');
    like($log, qr/fairgate queue: tenant "carol" waits, 1 of its requests waiting \(at most 10\), 1 in the zone, timeout 30000 ms/,
         'queue: its place and its timeout');
    like($log, qr/fairgate queue: tenant "carol" dispatched after \d+ ms/,
         'queue: how long it waited');
};


subtest 'a request refused' => sub {
    my $mark = $s->log_mark;

    my $r = $s->request(chat('dave', model => 'no-such-model'));
    is($r->{status}, 404, 'refused');

    ok($s->wait_for_log(qr/fairgate refuse: tenant "dave" status 404 model_not_found: The model `no-such-model` does not exist/,
                        mark => $mark),
       'refuse: the status, the reason, the tenant');
    unlike($s->error_log($mark), qr/fairgate admit: tenant "dave"/,
           'never admitted');
};


subtest 'a drop-in request' => sub {
    my $mark = $s->log_mark;

    my $req = chat('erin', stream => 1);
    $req->{uri} = '/dropin/v1/chat/completions';

    my $r = $s->request($req);
    is($r->{status}, 200, 'served by the upstream');

    ok($s->wait_for_log(qr/fairgate account: tenant "erin"/, mark => $mark),
       'its accounting is logged');

    my @p = phases($mark, 'erin');
    is_deeply([map { $_->[0] } @p],
              ['admit', 'dispatch', 'upstream', 'first token', 'account'],
              'the phases in order')
        or diag(join "\n", map { $_->[1] } @p);

    my %l = map { $_->[0] => $_->[1] } @p;

    like($l{dispatch}, qr/to "the upstream" after \d+ ms/,
         'dispatch: to the upstream');
    like($l{upstream}, qr/answered 200 after \d+ ms, its events counted as they stream/,
         'upstream: its status, and how its tokens are read');
    like($l{account}, qr/settled at \d+ tokens in, \d+ out \((?:usage|estimate)\), [1-9]\d* charged as they streamed/,
         'account: the tokens counted as they streamed');
};


is($s->stop, 0, 'nginx exits cleanly');
unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');

done_testing;
