#!/usr/bin/env perl

# A zone with more tenants than a status page lists: the page lists the
# most recently used (1,000 by default, ?limit=N), those whose name starts
# with ?tenant=PREFIX, says how many it walked, and refuses a bad limit;
# the JSON, the Prometheus text and the all-zones page alike.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use JSON::PP ();
use Test::More;

use Fairgate::Test;
use Fairgate::MockUpstream;

my $J = JSON::PP->new->utf8;
my $N = 1200;

my $up = Fairgate::MockUpstream->new;
my $UP = $up->addr;

my $s = Fairgate::Test::Server->new(
    workers => 2,
    http_config => <<"END",
    fairgate_zone zone=api:8m max_tenants=4000 inflight=8;
    fairgate_zone zone=other:1m max_tenants=100;
END
    config => <<"END");
    location /v1/ {
        fairgate zone=api queue=100 timeout=30s;
        fairgate_identity user=\$http_x_user app=\$http_x_app;
        proxy_pass http://$UP;
    }
    location /status { fairgate_status api; }
    location /all { fairgate_status; }
    location /metrics { fairgate_status format=prometheus api; }
END
$s->start or die $s->last_error;

my $body = '{"model": "m", "messages": [{"role": "user", "content": "hi"}]}';

# users u0..u(N-1) in order, every tenth with an app of its own
for my $i (0 .. $N - 1) {
    my $res = $s->post('/v1/chat/completions', $body,
                       headers => ['Content-Type: application/json',
                                   "X-User: u$i",
                                   $i % 10 ? () : ("X-App: a$i")]);
    die "u$i: $res->{status}\n" unless ($res->{status} // 0) == 200;
}

sub zone {
    my ($uri) = @_;
    my $res = $s->get($uri);
    my $st = eval { $J->decode($res->{body}) } // {};
    return ($res->{status}, $st->{zones} ? $st->{zones}[0] : {});
}

my ($code, $z) = zone('/status');
is($code, 200, 'the status: 200');
is($z->{tenants}, $N, "the zone counts its $N users");
is($z->{listed}{limit}, 1000, 'the default limit: 1000');
is($z->{listed}{walked}, $N + $N / 10, '... every user and app walked');
is(scalar @{ $z->{users} }, 1000, '... 1000 users listed');
is($z->{listed}{users}, 1000, '... and said so');
is(scalar @{ $z->{apps} }, $N / 10, '... all the apps, fewer than that');

# the most recently used: the last ones sent (ties of a millisecond
# aside), and in that order
my @idx = map { $_->{name} =~ /^u(\d+)$/ ? $1 : -1 } @{ $z->{users} };
ok(!grep({ $_ < $N - 1000 - 50 } @idx),
   '... the most recently used') or diag("@idx[-10 .. -1]");
ok($idx[0] > $idx[-1], '... most recent first');

($code, $z) = zone('/status?limit=10');
is(scalar @{ $z->{users} }, 10, '?limit=10: 10 users');
is(scalar @{ $z->{apps} }, 10, '... and 10 apps');
@idx = map { $_->{name} =~ /^u(\d+)$/ ? $1 : -1 } @{ $z->{users} };
ok(!grep({ $_ < $N - 10 - 50 } @idx), '... the most recent')
    or diag("@idx");

($code, $z) = zone('/status?tenant=u11&limit=5000');
my @names = map { $_->{name} } @{ $z->{users} };
my @want = grep { /^u11/ } map { "u$_" } 0 .. $N - 1;
is(scalar @names, scalar @want, '?tenant=u11: the users named u11...');
ok(!grep({ !/^u11/ } @names), '... and no other');
is(scalar @{ $z->{apps} }, 0, '... no app');

($code, $z) = zone('/status?tenant=a%31%30%30');
is_deeply([sort map { $_->{name} } @{ $z->{apps} }], ['a100', 'a1000'],
          '?tenant=, URL-encoded: the apps a100 and a1000');

for my $bad ('limit=0', 'limit=x', 'limit=10001', 'limit=-1',
             'tenant=' . ('x' x 256))
{
    is($s->get("/status?$bad")->{status}, 400, "?$bad: 400");
}

($code, $z) = zone('/all?limit=3');
is(scalar @{ $z->{users} }, 3, 'the all-zones page: ?limit=3');

# the users the metrics name
sub users {
    my ($m) = @_;
    my %u = map { $_ => 1 }
            ($m // '') =~ /^fairgate_user_\w+\{[^}]*user="([^"]*)"/mg;
    return scalar keys %u;
}

is(users($s->get('/metrics?limit=7')->{body}), 7,
   'the metrics: ?limit=7, 7 users');
is(users($s->get('/metrics')->{body}), 1000, '... 1000 by default');

unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');

is($s->stop, 0, 'nginx exits cleanly');
$up->stop;

done_testing();
