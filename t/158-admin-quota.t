#!/usr/bin/env perl

# A key's own quotas and budgets, set through the admin API (its "quota"
# and "budget" objects), enforced as a fairgate_quota directive naming the
# key would be: a day quota of requests refuses the next one with 429
# insufficient_quota and the quota's headers, in place of the location's
# key quota of the same window; a budget counts the cost of each request
# at the location's prices, warns past its soft threshold and stops; a
# rolling window; a location with no fairgate_quota applies them too; a
# PATCH raising a quota lets the next request through on the other
# gateway within about a second; a quota or budget that would not read
# gets 400 naming its field, and nothing is stored.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Digest::SHA qw(sha256_hex);
use File::Temp ();
use JSON::PP ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test qw(wait_for);
use Fairgate::MockUpstream;
use Fairgate::Redis;


plan skip_all => 'redis-server is not installed (apt-get install '
                 . 'redis-server)' unless Fairgate::Redis::path();

my $json = JSON::PP->new->canonical;
my $up = Fairgate::MockUpstream->new;

my $dir = File::Temp::tempdir('fairgate-admin-quota-XXXXXX', TMPDIR => 1,
                              CLEANUP => 1);
chmod 0755, $dir;

my $redis = Fairgate::Redis->new(dir => $dir);
my $rport = $redis->port;
my $admin = 'admin-secret-158';
my $admin_hash = sha256_hex($admin);

$redis->start or BAIL_OUT("redis-server did not start on port $rport");


sub gateway {
    my ($id) = @_;

    my $s = Fairgate::Test::Server->new(
        workers => 2,
        http_config => <<"END",
    fairgate_zone zone=llm:16m inflight=8;
    fairgate_redis 127.0.0.1:$rport timeout=500ms id=$id prefix=t158:
                   interval=10m;
END
        config => <<"END");
    location /v1/ {
        fairgate zone=llm queue=100 timeout=10s;
        fairgate_keys redis cache=1m;
        fairgate_quota key requests=3 per=day;
        fairgate_price m input=10000 output=10000;
        proxy_pass http://${\ $up->addr };
    }
    location /bare/ {
        fairgate zone=llm queue=100 timeout=10s;
        fairgate_keys redis cache=1m;
        proxy_pass http://${\ $up->addr }/;
    }
    location /admin/ {
        fairgate_admin $admin_hash;
    }
    location /status { fairgate_status; }
    location /metrics { fairgate_status format=prometheus; }
END

    $s->start or die $s->last_error;
    return $s;
}

my $g1 = gateway('gw1');
my $g2 = gateway('gw2');


sub api {
    my ($s, $method, $uri, $body) = @_;
    my $r = $s->request({ method => $method, uri => $uri,
                          (defined $body ? (body => ref $body
                                                    ? $json->encode($body)
                                                    : $body) : ()) },
                        headers => [ "Authorization: Bearer $admin",
                                     'Content-Type: application/json' ]);
    $r->{json} = eval { $json->decode($r->{body} // '') };
    return $r;
}

sub chat {
    my ($s, $key, @h) = @_;
    my $uri = '/v1/chat/completions';
    $uri = '/bare' . $uri if @h && $h[0] eq 'bare' && shift @h;
    my $body = $json->encode({ model => 'm', max_tokens => 4,
                               messages => [{ role => 'user',
                                              content => 'hi' }] });
    my $r = $s->post($uri, $body,
                     headers => ["Authorization: Bearer $key",
                                 'Content-Type: application/json', @h]);
    $r->{json} = eval { $json->decode($r->{body} // '') };
    return $r;
}

sub error_of { ($_[0]{json} // {})->{error} // {} }

sub create {
    my ($body) = @_;
    my $r = api($g1, 'POST', '/admin/keys', $body);
    is($r->{status}, 201, 'key created') or diag($r->{body});
    return ($r->{json}{key} // '', $r->{json}{id} // '');
}

# once the status page shows a key's window counting at least so much:
# cost is counted as a request ends, which may be after its client read it
sub counted {
    my ($s, $id, $window, $what, $min) = @_;
    return wait_for(5, sub {
        my $z = $json->decode($s->get('/status')->{body})->{zones}[0];
        my ($k) = grep { $_->{id} eq $id } @{ $z->{keys} // [] };
        my ($w) = grep { $_->{window} eq $window } @{ $k->{quotas} // [] };
        return ($w->{$what} // 0) >= $min - 1e-9;
    });
}


my ($key, $id);

subtest "a key's day quota of 2 requests: the third refused" => sub {
    ($key, $id) = create({ user => 'qa', quota => { day => { requests => 2 } } });
    $up->clear_log;

    is(chat($g2, $key)->{status}, 200, 'the first served');
    is(chat($g2, $key)->{status}, 200, 'the second served');

    my $r = chat($g2, $key);
    is($r->{status}, 429, 'the third: 429');
    is(error_of($r)->{code}, 'insufficient_quota', 'insufficient_quota');
    is(error_of($r)->{type}, 'insufficient_quota', 'its type');
    like(error_of($r)->{message},
         qr/The key \Q$id\E has used 2 of its 2 requests per day/,
         "the key's own limit, not the location's 3");
    is($r->{headers}{'x-ratelimit-limit-requests'}, 2,
       'x-ratelimit-limit-requests: its quota');
    is($r->{headers}{'x-ratelimit-remaining-requests'}, 0,
       'x-ratelimit-remaining-requests: 0');
    my $retry = $r->{headers}{'retry-after'} // -1;
    my $want = 86400 - time % 86400;
    ok(abs($retry - $want) <= 5,
       "Retry-After at midnight UTC ($retry s, about $want s)");
    is($up->served, 2, 'the refused request never reached the upstream');
};

subtest 'PATCH raising the quota: the other gateway lets the next in' => sub {
    my $r = api($g1, 'PATCH', "/admin/keys/$id",
                { quota => { day => { requests => 4 } } });
    my $t0 = Time::HiRes::time();
    is($r->{status}, 200, 'patched through gateway 1') or diag($r->{body});
    is_deeply($r->{json}{quota}, { day => { requests => 4 } },
              'the new quota');

    ok(wait_for(2, sub { chat($g2, $key)->{status} == 200 }),
       'gateway 2 serves the third within the poll');
    note(sprintf('the raised quota reached gateway 2 in %.0f ms',
                 1000 * (Time::HiRes::time() - $t0)));
    is(chat($g2, $key)->{status}, 200, 'the fourth served');
    $r = chat($g2, $key);
    is($r->{status}, 429, 'the fifth refused');
    like(error_of($r)->{message}, qr/has used 4 of its 4 requests per day/,
         'by the new limit');

    $r = api($g1, 'PATCH', "/admin/keys/$id", { quota => undef });
    is($r->{status}, 200, 'its quota removed');
    ok(wait_for(2, sub { chat($g2, $key)->{status} == 429
                         && error_of(chat($g2, $key))->{message}
                            =~ /of its 3 requests per day/ }),
       "the location's key quota of the window applies again");
};

subtest "a key's own quota in place of the location's of its window" => sub {
    my ($k) = create({ user => 'qb',
                       quota => { day => { requests => 5 } } });
    is(chat($g1, $k)->{status}, 200, "request $_ served") for 1 .. 5;
    my $r = chat($g1, $k);
    is($r->{status}, 429, 'the sixth refused: past 3, up to its own 5');
    like(error_of($r)->{message}, qr/has used 5 of its 5 requests per day/,
         'by its own limit');
};

subtest 'a location with no fairgate_quota: the key\'s own apply' => sub {
    my ($k) = create({ user => 'qe',
                       quota => { hour => { requests => 1 } } });
    is(chat($g1, $k, 'bare')->{status}, 200, 'the first served');
    my $r = chat($g1, $k, 'bare');
    is($r->{status}, 429, 'the second refused');
    like(error_of($r)->{message}, qr/1 of its 1 requests per hour/,
         'by its hour quota');
};

subtest 'a rolling window' => sub {
    my ($k) = create({ user => 'qc',
                       quota => { '90m' => { requests => 1,
                                             rolling => JSON::PP::true } } });
    is(chat($g1, $k)->{status}, 200, 'the first served');
    my $r = chat($g1, $k);
    is($r->{status}, 429, 'the second refused');
    like(error_of($r)->{message}, qr/1 of its 1 requests per 90m rolling/,
         'named as the directive names it');
};

subtest "a key's budget at the location's prices" => sub {
    my ($k, $kid) = create({ user => 'qd',
                             budget => { month => { amount => 1,
                                                    soft => 50 } } });
    # 50 prompt and 4 completion tokens at 0.01 each: 0.54 a request
    my @h = ('X-Mock-Prompt-Tokens: 50');

    my $r = chat($g1, $k, @h);
    is($r->{status}, 200, 'the first served');
    ok(!defined $r->{headers}{'x-fairgate-quota-warning'}, '... no warning');
    ok(counted($g1, $kid, 'month', 'cost', 0.54), '... its cost counted');

    $r = chat($g1, $k, @h);
    is($r->{status}, 200, 'the second served');
    is($r->{headers}{'x-fairgate-quota-warning'}, 'budget month 54%',
       '... past its soft threshold');
    ok(counted($g1, $kid, 'month', 'cost', 1.08), '... its cost counted');

    $r = chat($g1, $k, @h);
    is($r->{status}, 429, 'the third refused');
    is(error_of($r)->{code}, 'insufficient_quota', 'insufficient_quota');
    like(error_of($r)->{message},
         qr/The key \Q$kid\E has used 1\.08 of its budget of 1\.00 per month/,
         'the budget and what was spent');
    is($r->{headers}{'x-fairgate-budget-limit'}, '1.00',
       'x-fairgate-budget-limit');
    is($r->{headers}{'x-fairgate-budget-remaining'}, '0.00',
       'x-fairgate-budget-remaining');
};

subtest 'Prometheus: each window counted and its limits' => sub {
    my $m = '';
    my $l = sub { my ($fam, $kid, $window, $what) = @_;
                  $m =~ /^\Q$fam\E\{zone="llm",key="\Q$kid\E",window="\Q$window\E",what="$what"\} (\S+)$/m
                  ? $1 : undef };
    my ($k, $kid) = create({ user => 'qf',
                             quota => { day => { requests => 9,
                                                 tokens => 1000 } },
                             budget => { day => 3 } });
    is(chat($g1, $k, 'X-Mock-Prompt-Tokens: 50')->{status}, 200, 'served');
    ok(counted($g1, $kid, 'day', 'tokens', 54), 'its tokens counted');
    $m = $g1->get('/metrics')->{body} // '';

    like($m, qr/^# TYPE fairgate_quota_used gauge$/m, 'the used family');
    like($m, qr/^# TYPE fairgate_quota_limit gauge$/m, 'the limit family');
    is($l->('fairgate_quota_used', $kid, 'day', 'requests'), 1,
       'requests used');
    is($l->('fairgate_quota_used', $kid, 'day', 'tokens'), 54,
       'tokens used');
    is($l->('fairgate_quota_used', $kid, 'day', 'cost'), '0.540000',
       'cost used, in the prices\' unit');
    is($l->('fairgate_quota_limit', $kid, 'day', 'requests'), 9,
       'its requests limit');
    is($l->('fairgate_quota_limit', $kid, 'day', 'tokens'), 1000,
       'its tokens limit');
    is($l->('fairgate_quota_limit', $kid, 'day', 'cost'), '3.000000',
       'its budget');
    like($m, qr/^fairgate_quota_used\{zone="llm",key="[0-9a-f]{16}",window="90m rolling",what="requests"\} 1$/m,
         'a rolling window named so');
};

subtest 'a quota or budget that would not read: 400 naming the field' => sub {
    my @cases = (
        [{ user => 'x', quota => { month => { tokens => 'many' } } },
         'quota.month.tokens', qr/an integer of 1 or more/],
        [{ user => 'x', quota => { fortnight => { tokens => 1 } } },
         'quota.fortnight', qr/a window: hour, day, week, month/],
        [{ user => 'x', quota => { day => {} } },
         'quota.day', qr/requests or tokens/],
        [{ user => 'x', quota => { day => { requests => 1, soft => 0 } } },
         'quota.day.soft', qr/from 1 to 100/],
        [{ user => 'x', quota => { '5s' => { requests => 1 } } },
         'quota.5s', qr/a window: hour, day, week, month/],
        [{ user => 'x', budget => { month => 0 } },
         'budget.month', qr/an amount above 0/],
        [{ user => 'x', budget => { month => { amount => 5, x => 1 } } },
         'budget.month.x', qr/amount, soft or rolling/],
    );

    for my $c (@cases) {
        my ($body, $field, $msg) = @$c;
        my $r = api($g1, 'POST', '/admin/keys', $body);
        is($r->{status}, 400, "$field: 400");
        is(error_of($r)->{param}, $field, "... param $field");
        like(error_of($r)->{message}, qr/Invalid '\Q$field\E': expected .*$msg/,
             '... saying what was expected');
    }

    my $r = api($g1, 'PATCH', "/admin/keys/$id",
                { budget => { day => -1 } });
    is($r->{status}, 400, 'a bad PATCH: 400');
    is(error_of($r)->{param}, 'budget.day', '... naming budget.day');
    $r = api($g1, 'GET', "/admin/keys/$id");
    ok(!exists $r->{json}{budget}, '... and nothing stored');
};

done_testing();
