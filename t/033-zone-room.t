#!/usr/bin/env perl

# A zone that fills with tenants frees its idle ones, whatever the mix of
# users and apps: floods of new users with an app each, without apps, and
# with apps whose long names take a larger slab chunk, through a zone
# sized for 300 tenants, every request served; known and new tenants
# served afterwards.  A zone whose every tenant holds requests refuses
# with 503 gateway_full, and says so once an interval in the error log:
# no "ngx_slab_alloc() failed" line, nothing at crit.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use JSON::PP ();
use Test::More;

use Fairgate::Test;
use Fairgate::Load;
use Fairgate::MockUpstream;

my $up = Fairgate::MockUpstream->new;
my $UP = $up->addr;

my $s = Fairgate::Test::Server->new(
    workers => 2,
    http_config => <<"END",
    fairgate_zone zone=room:360k max_tenants=300 interactions=0;
    fairgate_zone zone=tight:64k max_tenants=16 inflight=1 interactions=0;
END
    config => <<"END");
    fairgate_api_errors on;
    location /v1/ {
        fairgate zone=room queue=100 timeout=30s;
        fairgate_identity user=\$http_x_user app=\$http_x_app;
        proxy_pass http://$UP;
    }
    location /tight/ {
        fairgate zone=tight queue=100 timeout=30s;
        fairgate_identity user=\$http_x_user;
        proxy_pass http://$UP/v1/;
    }
    location /status { fairgate_status; }
END
$s->start or die $s->last_error;

my $BODY = '{"model":"m","messages":[{"role":"user","content":"hi"}],'
           . '"max_tokens":2}';
my %REQ = (method => 'POST', uri => '/v1/chat/completions', body => $BODY,
           headers => ['Content-Type: application/json']);

my $LONG = 'a' x 250;

# total requests from new tenants, 20 at a time: user (and app) names of
# the i-th request from name->(i); every answer 200
sub flood {
    my ($what, $total, $name) = @_;
    my @done = eval {
        Fairgate::Load::closed_loop(
            port => $s->port, total => $total, timeout => 60,
            tenants => [{ name => 'f', concurrency => 20, max => $total,
                          request => \%REQ, more => $name }]);
    };
    my %st;
    $st{$_->{status}}++ for @done;
    my $ok = @done == $total && ($st{200} // 0) == $total;
    ok($ok, "$what: $total of $total served")
        or diag($@ || JSON::PP->new->canonical->encode(\%st) . "\n"
                . $s->log_tail(5));
}

sub zone_room {
    my ($st) = $s->status_json;
    my ($z) = grep { $_->{name} eq 'room' } @{ $st->{zones} // [] };
    return $z // {};
}

my $mark = $s->log_mark;

flood('users with an app each', 1200,
      sub { ("X-User: u$_[0]", "X-App: a$_[0]") });
flood('users without apps', 600, sub { ("X-User: v$_[0]") });
flood('apps of long names', 600,
      sub { ("X-User: w$_[0]", "X-App: $LONG$_[0]") });
flood('many users of a few apps', 600,
      sub { ("X-User: x$_[0]", 'X-App: a' . ($_[0] % 7)) });

my $z = zone_room();
cmp_ok(scalar @{ $z->{users} // [] }, '>', 0, 'the zone lists its users');
cmp_ok(@{ $z->{users} // [] } + @{ $z->{apps} // [] }, '<=', 300,
       'users and apps together stay within max_tenants');
cmp_ok($z->{expired} // 0, '>', 0, 'idle tenants were freed early');

for my $who (['u1', 'a1', 'a known user and app'],
             ['x599', 'a4', 'a recent user and app'],
             ['new1', 'newapp', 'a new user and app'],
             ['new2', '', 'a new user']) {
    my ($u, $a, $what) = @$who;
    my $r = $s->request({ %REQ, headers => [@{ $REQ{headers} },
                                            "X-User: $u",
                                            $a ? "X-App: $a" : ()] });
    is($r->{status}, 200, "after the floods: $what is served");
}

my $log = $s->error_log($mark);
unlike($log, qr/ngx_slab_alloc\(\) failed/, 'no slab allocation failure '
       . 'logged');
unlike($log, qr/\[crit\]/, 'nothing logged at crit');
unlike($log, qr/fairgate_zone "room" is full/, 'the room zone was never '
       . 'full: idle tenants made room');

# tight: 16 tenants at the most, one request through at a time.  One slow
# request holds the upstream, then 24 users queue behind it: 15 find room
# (their tenants held by their requests), the others are refused; twice.
my $T = { %REQ, uri => '/tight/chat/completions' };

sub tight_running {
    return $s->status_until(sub {
        my ($z) = grep { $_->{name} eq 'tight' } @{ $_[0]{zones} // [] };
        $z && $z->{running} == 1 });
}

my $refused = 0;
for my $burst (1, 2) {
    my $slow = $s->send_later({ %$T, headers => [@{ $T->{headers} },
                                                  'X-User: slow',
                                                  'X-Mock-Delay: 2'] });
    ok(tight_running(), "tight, burst $burst: the slow request runs");

    my @r = $s->concurrent([map {
        +{ %$T, headers => [@{ $T->{headers} }, "X-User: t$burst-$_"] }
    } 1 .. 24], timeout => 30);
    my @full = grep { ($_->{status} // 0) == 503
                      && ($_->{body} // '') =~ /gateway_full/ } @r;
    my @ok = grep { ($_->{status} // 0) == 200 } @r;
    $refused += @full;
    is(@ok + @full, 24, "tight, burst $burst: each served or refused as "
       . 'gateway_full');
    cmp_ok(scalar @ok, '>=', 1, "tight, burst $burst: some served");
    is($s->read_later($slow)->{status}, 200,
       "tight, burst $burst: the slow request is served");
}
cmp_ok($refused, '>=', 2, 'the full zone refused some');

$log = $s->error_log($mark);
my @lines = $log =~ /^.*fairgate_zone "tight" is full.*$/mg;
is(scalar @lines, 1, "the full zone said so once for $refused refusals")
    or diag(join "\n", @lines);
unlike($log, qr/ngx_slab_alloc\(\) failed|\[crit\]/,
       'no slab failure or crit line for the full zone either');

my $r = $s->request({ %$T, headers => [@{ $T->{headers} },
                                        'X-User: after'] });
is($r->{status}, 200, 'tight: a new user is served once the zone idles');

$s->stop;
$up->stop;

done_testing();
