#!/usr/bin/env perl

# The zone finds its tenants through an index by hash (open addressing,
# a tenant's removal moving the ones after it back): after 2,000 users
# came and went through a zone of 64, each of the 64 it holds is found
# again, not made twice (nothing more is evicted, each name is listed
# once), and a user evicted long ago comes back as a new tenant.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Test::More;

use Fairgate::Test qw(:DEFAULT static_upstream);

my $up = static_upstream(workers => 1);
my $UP = '127.0.0.1:' . $up->port;

my $s = Fairgate::Test::Server->new(
    http_config => <<"END",
    fairgate_zone zone=idx:1m max_tenants=64 interactions=0;
END
    config => <<"END");
    location /v1/ {
        fairgate zone=idx;
        fairgate_identity user=\$http_x_user;
        proxy_pass http://$UP;
    }
    location /status { fairgate off; fairgate_status; }
END
$s->start or die $s->last_error;

sub chat {
    my ($user) = @_;
    my $res = $s->request("POST /v1/chat/completions\n"
                          . '{"model":"m","messages":[{"role":"user",'
                          . '"content":"hi"}]}',
                          headers => ["X-User: $user",
                                      'Content-Type: application/json']);
    return $res->{status} // 0;
}

sub zone {
    my $st = $s->status_json('/status?limit=1000');
    return $st->{zones}[0] // {};
}

my $bad = grep { chat("u$_") != 200 } 1 .. 2000;
is($bad, 0, '2,000 users, one request each, all served');

my $z = zone();
is($z->{tenants}, 64, 'the zone holds 64 of them');
is($z->{expired}, 2000 - 64, '... the others evicted, least recent first');

$bad = grep { chat("u$_") != 200 } 1937 .. 2000;
is($bad, 0, 'the 64 it holds are served again');

$z = zone();
is($z->{tenants}, 64, '... found: the zone still holds 64');
is($z->{expired}, 2000 - 64, '... and evicted none for them');

my %seen;
$seen{ $_->{name} }++ for @{ $z->{users} // [] };
is(scalar(keys %seen), 64, 'each of the 64 is listed');
is(scalar(grep { $seen{$_} != 1 } keys %seen), 0, '... once');
is(scalar(grep { !/^u(\d+)$/ || $1 < 1937 } keys %seen), 0,
   '... and they are the last 64');

is(chat('u1'), 200, 'a user evicted long ago is served');
$z = zone();
is($z->{expired}, 2000 - 64 + 1, '... as a new tenant, in the place of one');

is($s->stop, 0, 'nginx exits cleanly');
$up->stop;

done_testing();
