#!/usr/bin/env perl

# Quotas and budgets over long windows (fairgate_quota): a tenant over a
# quota is refused with OpenAI's 429 insufficient_quota before the
# upstream sees the request, with Retry-After at the window's reset (in the
# configured time zone) and the x-ratelimit-* headers of that quota; per
# key, user and app, a named tenant's quota in place of the default; tokens
# counted as they are settled, streamed ones too; the soft threshold's
# header and its one log line; the counts kept across a reload; and every
# bad directive refused by nginx -t with its file and line.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Digest::SHA qw(sha256_hex);
use File::Temp ();
use JSON::PP ();
use Test::More;
use Time::Local ();

use Fairgate::Test qw(run_refused gateway);
use Fairgate::MockUpstream;
use Fairgate::Engine qw(wait_attached);


my $up = Fairgate::MockUpstream->new;
my $dir = File::Temp::tempdir('fairgate-quota-XXXXXX', TMPDIR => 1,
                              CLEANUP => 1);
chmod 0755, $dir;

my $json = JSON::PP->new->canonical;

open my $fh, '>', "$dir/keys" or die "$dir/keys: $!\n";
print {$fh} map { "$_\n" }
    sha256_hex('sk-alice') . ' alice chat 1',
    sha256_hex('sk-alice-2') . ' alice chat 1',
    sha256_hex('sk-bob') . ' bob - 1',
    sha256_hex('sk-carol') . ' carol batch 1',
    sha256_hex('sk-dave') . ' dave - 1',
    sha256_hex('sk-erin') . ' erin - 1',
    sha256_hex('sk-frank') . ' frank batch 1',
    sha256_hex('sk-gina') . ' gina - 1';
close $fh;

my $alice_id = substr(sha256_hex('sk-alice'), 0, 16);

# the quotas of the gateway under test, in Asia/Kolkata (05:30, no DST)
my $QUOTAS = <<"END";
        fairgate_quota user requests=3 per=day;
        fairgate_quota user dave requests=1 per=day;
        fairgate_quota user carol tokens=100 per=hour;
        fairgate_quota user erin requests=10 per=day soft=50;
        fairgate_quota key requests=50 per=week;
        fairgate_quota key $alice_id requests=2 per=week;
        fairgate_quota app batch requests=3 per=2h rolling;
        fairgate_quota user gina budget=1 per=month soft=50;
        fairgate_price m input=10000 output=10000;
END


sub server {
    my $s = Fairgate::Test::Server->new(
        http_config => "    fairgate_zone zone=llm:16m;\n"
                       . "    fairgate_quota_timezone Asia/Kolkata;\n"
                       . "    log_format q '\$fairgate_user \$fairgate_quota"
                       . "|\$status';\n",
        config => <<"END");
    access_log logs/q.log q;

    location /v1/ {
        fairgate zone=llm;
        fairgate_keys $dir/keys;
$QUOTAS
        proxy_pass http://${\ $up->addr };
    }

    location /status { fairgate_status; }
END
    $s->start or die $s->last_error;
    return $s;
}


sub chat {
    my ($s, $key, %o) = @_;
    my $body = $json->encode({
        model => 'm', max_tokens => $o{max_tokens} // 4,
        messages => [{ role => 'user', content => 'hi' }],
        ($o{stream} ? (stream => JSON::PP::true,
                       stream_options => { include_usage => JSON::PP::true })
                    : ()) });
    return $s->post('/v1/chat/completions', $body,
                    headers => ["Authorization: Bearer $key",
                                'Content-Type: application/json',
                                @{ $o{headers} // [] }]);
}


# whether the access log has the line, once it is written (a request's
# line comes at its end, which may be after its client read the answer)
sub logged {
    my ($s, $line) = @_;
    return Fairgate::Test::wait_for(5, sub {
        open my $fh, '<', $s->prefix . '/logs/q.log' or return 0;
        return scalar grep { $_ eq "$line\n" } <$fh>;
    });
}


# once the status page shows that a tenant's window counts at least so
# much: tokens and cost are counted when a request ends, which may be
# after its client read the answer
sub counted {
    my ($s, $name, $window, $what, $min) = @_;
    return Fairgate::Test::wait_for(5, sub {
        my $z = $json->decode($s->get('/status')->{body})->{zones}[0];
        my ($t) = grep { $_->{name} eq $name } @{ $z->{users} };
        my ($w) = grep { $_->{window} eq $window } @{ $t->{quotas} // [] };
        return ($w->{$what} // 0) >= $min - 1e-9;
    });
}


sub error_of {
    my ($res) = @_;
    my $e = eval { $json->decode($res->{body}) } // {};
    return $e->{error} // {};
}


# seconds from now to the next midnight in Kolkata (18:30 UTC)
sub to_kolkata_midnight {
    my $t = time;
    return (86400 - (($t + 19800) % 86400));
}


my $s = server();

subtest 'a day quota of requests: insufficient_quota, Retry-After' => sub {
    $up->clear_log;

    for my $i (1 .. 2) {
        is(chat($s, 'sk-bob')->{status}, 200, "bob's request $i served");
    }
    is(chat($s, 'sk-bob')->{status}, 200, "bob's third served");

    my $res = chat($s, 'sk-bob');
    is($res->{status}, 429, 'the fourth: 429');
    my $e = error_of($res);
    is($e->{type}, 'insufficient_quota', 'type insufficient_quota');
    is($e->{code}, 'insufficient_quota', 'code insufficient_quota');
    like($e->{message}, qr/^You exceeded your current quota, please check your plan and billing details\./,
         "OpenAI's message");
    like($e->{message}, qr/user bob has used 3 of its 3 requests per day/,
         'which tenant, what and which window');

    my $want = to_kolkata_midnight();
    my $retry = $res->{headers}{'retry-after'} // -1;
    ok(abs($retry - $want) <= 5,
       "Retry-After at midnight in Kolkata ($retry s, about $want s)");
    is($res->{headers}{'x-ratelimit-limit-requests'}, 3,
       'x-ratelimit-limit-requests: the quota');
    is($res->{headers}{'x-ratelimit-remaining-requests'}, 0,
       'x-ratelimit-remaining-requests: 0');
    my $reset = $res->{headers}{'x-ratelimit-reset-requests'} // '';
    my ($h, $m, $sec) = $reset =~ /^(?:(\d+)h)?(?:(\d+)m)?(\d+)s$/;
    ok(defined $sec && abs(($h // 0) * 3600 + ($m // 0) * 60 + $sec - $want)
                       <= 5,
       "x-ratelimit-reset-requests at the reset, as OpenAI writes it "
       . "($reset)");
    is($up->served, 3, 'the refused request never reached the upstream');
    ok(logged($s, 'bob user requests day exceeded|429'),
       '$fairgate_quota: the quota that refused it');
};


subtest "a named tenant's quota replaces the default" => sub {
    is(chat($s, 'sk-dave')->{status}, 200, "dave's first served");
    my $res = chat($s, 'sk-dave');
    is($res->{status}, 429, 'his second refused: his quota is 1');
    like(error_of($res)->{message}, qr/used 1 of its 1 requests per day/,
         'his own limit');
};


subtest 'per key and per user' => sub {
    is(chat($s, 'sk-alice')->{status}, 200, "alice's first key: 1");
    is(chat($s, 'sk-alice')->{status}, 200, '... 2');

    my $res = chat($s, 'sk-alice');
    is($res->{status}, 429, '... 3 refused: 2 a week per key');
    like(error_of($res)->{message},
         qr/The key [0-9a-f]{16} has used 2 of its 2 requests per week/,
         'the key named by its id, never its secret');
    unlike($res->{body}, qr/sk-alice/, 'no secret in the answer');

    is(chat($s, 'sk-alice-2')->{status}, 200,
       'her second key, whose quota is the default 50, is served');
    $res = chat($s, 'sk-alice-2');
    is($res->{status}, 429, "then her user's quota of 3 a day refuses");
    like(error_of($res)->{message}, qr/user alice has used 3 of its 3/,
         '... as the message says');
};


subtest 'tokens counted as settled, streamed ones too' => sub {
    my $res = chat($s, 'sk-carol', stream => 1, max_tokens => 60,
                   headers => ['X-Mock-Tokens: 60',
                               'X-Mock-Prompt-Tokens: 50']);
    is($res->{status}, 200, 'a stream of 110 tokens served');
    ok(counted($s, 'carol', 'hour', 'tokens', 110), '... and counted');

    $res = chat($s, 'sk-carol');
    is($res->{status}, 429, 'the next refused: 100 tokens an hour');
    like(error_of($res)->{message},
         qr/user carol has used 110 of its 100 tokens per hour/,
         'the tokens it used, input and output');
    is($res->{headers}{'x-ratelimit-limit-tokens'}, 100,
       'x-ratelimit-limit-tokens');
    is($res->{headers}{'x-ratelimit-remaining-tokens'}, 0,
       'x-ratelimit-remaining-tokens');
    my $retry = $res->{headers}{'retry-after'} // 0;
    ok($retry >= 1 && $retry <= 3600, "Retry-After within the hour ($retry)");
};


subtest 'a rolling window of an app' => sub {
    # carol's batch app counted her first request (her second, refused by
    # her own quota, is not); frank's are in the same app
    my $n = 0;
    my $res;
    for (1 .. 5) {
        $res = chat($s, 'sk-frank');
        last if $res->{status} != 200;
        $n++;
    }
    is($n, 2, 'the app had room for 2 more: 3 in 2 hours rolling');
    is($res->{status}, 429, 'then refused');
    like(error_of($res)->{message},
         qr/app batch has used 3 of its 3 requests per 2h rolling/,
         'the app and its rolling window');
    my $retry = $res->{headers}{'retry-after'} // 0;
    ok($retry > 6000 && $retry <= 7200,
       "it frees when its oldest bucket leaves ($retry s)");
};


subtest 'the soft threshold: a header, one log line' => sub {
    my $mark = $s->log_mark;

    for my $i (1 .. 5) {
        my $res = chat($s, 'sk-erin');
        ok(!defined $res->{headers}{'x-fairgate-quota-warning'},
           "request $i: no warning under 50%");
    }

    my $res = chat($s, 'sk-erin');
    is($res->{status}, 200, 'the sixth served');
    is($res->{headers}{'x-fairgate-quota-warning'}, 'requests day 50%',
       'with x-fairgate-quota-warning');
    $res = chat($s, 'sk-erin');
    is($res->{headers}{'x-fairgate-quota-warning'}, 'requests day 60%',
       'the next one too');

    my @lines = grep { /fairgate_quota:/ } split /\n/, $s->error_log($mark);
    is(scalar @lines, 1, 'one log line for the tenant and window');
    ok(logged($s, 'erin user requests day 60%|200'),
       '$fairgate_quota: the soft threshold passed');
    like($lines[0] // '', qr/\[warn\] .*fairgate_quota: user "erin" has used 50% of its requests day, past its soft threshold of 50%/,
         '... at warn, saying who, what and the threshold');
};


subtest 'a budget: the cost of each request, a warning, a hard stop' => sub {
    # 50 prompt and 4 completion tokens at 0.01 each: 0.54 a request
    my @h = (headers => ['X-Mock-Prompt-Tokens: 50']);

    my $res = chat($s, 'sk-gina', @h);
    is($res->{status}, 200, 'the first served');
    ok(!defined $res->{headers}{'x-fairgate-quota-warning'},
       '... with no warning');
    ok(counted($s, 'gina', 'month', 'cost', 0.54), '... its cost counted');

    $res = chat($s, 'sk-gina', @h);
    is($res->{status}, 200, 'the second served');
    is($res->{headers}{'x-fairgate-quota-warning'}, 'budget month 54%',
       '... past the soft threshold: 0.54 of 1');
    ok(counted($s, 'gina', 'month', 'cost', 1.08), '... its cost counted');

    $res = chat($s, 'sk-gina', @h);
    is($res->{status}, 429, 'the third refused: 1.08 spent');
    is(error_of($res)->{code}, 'insufficient_quota', 'insufficient_quota');
    like(error_of($res)->{message},
         qr/user gina has used 1\.08 of its budget of 1\.00 per month/,
         'the budget and what was spent, in money');
    is($res->{headers}{'x-fairgate-budget-limit'}, '1.00',
       'x-fairgate-budget-limit');
    is($res->{headers}{'x-fairgate-budget-remaining'}, '0.00',
       'x-fairgate-budget-remaining');

    # the month's end in Kolkata, from the 1st of the next month
    my @t = gmtime(time + 19800);
    my ($y, $m) = ($t[5] + 1900, $t[4] + 1);
    ($y, $m) = $m == 12 ? ($y + 1, 1) : ($y, $m + 1);
    my $end = Time::Local::timegm(0, 0, 0, 1, $m - 1, $y) - 19800;
    my $retry = $res->{headers}{'retry-after'} // 0;
    ok(abs($retry - ($end - time)) <= 5,
       "Retry-After at the 1st of next month ($retry s)");
};


subtest 'a reload keeps the counts' => sub {
    ok($s->reload, 'reloaded');
    is(chat($s, 'sk-bob')->{status}, 429, 'bob is still over his quota');
    is(chat($s, 'sk-dave')->{status}, 429, 'so is dave');
    is(chat($s, 'sk-erin')->{status}, 200, 'erin is not');
};

subtest 'the status page shows each tenant\'s windows' => sub {
    my $z = $json->decode($s->get('/status')->{body})->{zones}[0];
    my %t = map { $_->{name} => $_ } @{ $z->{users} }, @{ $z->{apps} };

    my ($day) = grep { $_->{window} eq 'day' } @{ $t{bob}{quotas} // [] };
    is($day->{requests} // -1, 3, "bob's day: 3 requests, none refused");
    is($day->{refused} // -1, 2, '... and 2 refused, one before the reload '
       . 'and one after');
    ok(!$day->{rolling}, '... a calendar window');
    my $want = time + to_kolkata_midnight();
    ok(abs(($day->{end} // 0) - $want) <= 5, '... ending at midnight');
    is(($day->{end} // 0) - ($day->{start} // 0), 86400, '... a day long');

    my ($month) = grep { $_->{window} eq 'month' } @{ $t{gina}{quotas} // [] };
    ok(abs(($month->{cost} // 0) - 1.08) < 1e-9, "gina's month cost 1.08");

    my %k = map { $_->{id} => $_ } @{ $z->{keys} // [] };
    my ($week) = @{ $k{$alice_id}{quotas} // [] };
    is($week->{window} // '', 'week', "alice's first key, by its id: a week");
    is($week->{requests} // -1, 2, '... 2 requests, the refused one not');
    ok(!grep({ /sk-/ } keys %k), 'no key shown, only ids');

    my ($roll) = @{ $t{batch}{quotas} // [] };
    is($roll->{window} // '', '2h', "the app's window: 2h");
    ok($roll->{rolling}, '... rolling');
    is($roll->{requests} // -1, 3, '... 3 requests');
};

subtest 'a reload that raises a quota: the counts go on from where they were'
    => sub {
    (my $conf = $s->{config})
        =~ s/fairgate_quota user requests=3 per=day;/fairgate_quota user requests=5 per=day;/
        or die "no default quota in the configuration\n";
    ok($s->reload(config => $conf), 'reloaded with 5 requests a day');

    is(chat($s, 'sk-bob')->{status}, 200, "bob's fourth served");
    is(chat($s, 'sk-bob')->{status}, 200, '... his fifth');
    my $res = chat($s, 'sk-bob');
    is($res->{status}, 429, '... his sixth refused: the 3 before counted');
    like(error_of($res)->{message}, qr/used 5 of its 5 requests per day/,
         '... as the message says');
};

is($s->stop, 0, 'nginx exits cleanly');


subtest 'a full zone makes room with tenants that count no quota' => sub {
    my $z = Fairgate::Test::Server->new(
        http_config => "    fairgate_zone zone=few:1m max_tenants=4;\n",
        config => <<"END");
    location /v1/ {
        fairgate zone=few;
        fairgate_identity user=\$http_x_user;
        fairgate_quota user q requests=1 per=day;
        proxy_pass http://${\ $up->addr };
    }
END
    $z->start or die $z->last_error;

    my $ask = sub {
        $z->post('/v1/chat/completions',
                 '{"model": "m", "max_tokens": 1, "messages": '
                 . '[{"role": "user", "content": "hi"}]}',
                 headers => ["X-User: $_[0]",
                             'Content-Type: application/json'])->{status};
    };

    is($ask->('q'), 200, "q's one request of the day");

    # q is the least recently used of 4; each new user needs a place
    is($ask->("u$_"), 200, "user u$_ served") for 1 .. 6;

    is($ask->('q'), 429, "q still refused: its count was kept, others went");
    is($z->stop, 0, 'nginx exits cleanly');
};


subtest 'local mode: the engine\'s tokens counted, streamed or not' => sub {
    plan skip_all => "no $Fairgate::Engine::MODEL"
        unless -f $Fairgate::Engine::MODEL;

    my $e = Fairgate::Engine->new(backend => 'cpu');
    $e->start;
    my $g = gateway(engines => [['stories', $e]],
                    v1 => "fairgate_quota user tokens=30 per=day;\n");
    ok(wait_attached($g), 'the worker attached to the engine');

    my $ask = sub {
        $g->post('/v1/completions',
                 $json->encode({ model => 'stories260K',
                                 prompt => 'Once upon a time',
                                 max_tokens => 12, temperature => 0,
                                 ($_[0] ? (stream => JSON::PP::true) : ())
                               }),
                 headers => ['Content-Type: application/json']);
    };

    my $r = $ask->(0);
    is($r->{status}, 200, 'a completion served');
    my $u = eval { $json->decode($r->{body})->{usage} } // {};
    my $one = ($u->{prompt_tokens} // 0) + ($u->{completion_tokens} // 0);
    ok($one > 12 && $one < 30, "its usage: $one tokens");

    my $counted = sub {
        my ($min) = @_;
        Fairgate::Test::wait_for(5, sub {
            my $z = $g->status_json->{zones}[0];
            my ($w) = @{ ($z->{users}[0] // {})->{quotas} // [] };
            return ($w->{tokens} // 0) >= $min ? $w->{tokens} : 0;
        });
    };

    is($counted->($one), $one, 'the day counts its usage');

    $r = $ask->(1);
    is($r->{status}, 200, 'a stream served');
    is($counted->(2 * $one), 2 * $one, 'the day counts the stream\'s');

    $r = $ask->(0);
    is($r->{status}, 429, 'then refused: over 30 tokens a day');
    like($r->{body}, qr/insufficient_quota/, 'insufficient_quota');
    like($r->{body}, qr/used ${\ (2 * $one)} of its 30 tokens per day/,
         'what it used, as the engine counted');

    is($g->stop, 0, 'nginx exits cleanly');
    $e->stop;
};


# nginx -t refuses each bad quota, naming the file and line
my $Z = "fairgate_zone zone=main:16m;\n";
my $L = qr/ in \S+nginx\.conf:\d+/;

run_refused(map({ ["$_->[0]", $Z . ($_->[2] // ''),
                   "location / { fairgate zone=main; "
                   . "fairgate_identity user=x; $_->[1] }\n", $_->[3]] }
    ['an unknown kind of tenant', 'fairgate_quota team requests=1 per=day;',
     undef, qr/invalid tenant "team" in "fairgate_quota": user, app or key$L/],
    ['no window', 'fairgate_quota user requests=1;', undef,
     qr/"fairgate_quota" needs per=WINDOW$L/],
    ['nothing to count', 'fairgate_quota user per=day;', undef,
     qr/"fairgate_quota" needs requests=N, tokens=N or budget=AMOUNT$L/],
    ['a bad window', 'fairgate_quota user requests=1 per=fortnight;', undef,
     qr/invalid window "per=fortnight" in "fairgate_quota": hour, day, week, month or a time$L/],
    ['a window too short', 'fairgate_quota user requests=1 per=10s;', undef,
     qr/invalid window "per=10s" in "fairgate_quota": a time from a minute to 366 days$L/],
    ['a rolling window not in whole minutes',
     'fairgate_quota user requests=1 per=100s rolling;', undef,
     qr/invalid window "per=100s rolling" in "fairgate_quota": a rolling window is a whole number of minutes up to 366 days$L/],
    ['a bad budget', 'fairgate_quota user budget=10.5.0 per=month;', undef,
     qr/invalid value "budget=10.5.0" in "fairgate_quota"$L/],
    ['a budget in too fine a unit',
     'fairgate_quota user budget=0.0000000001 per=month;', undef,
     qr/invalid value "budget=0.0000000001"/],
    ['a bad count', 'fairgate_quota user requests=0 per=day;', undef,
     qr/invalid value "requests=0" in "fairgate_quota"$L/],
    ['a bad soft threshold',
     'fairgate_quota user requests=9 per=day soft=120;', undef,
     qr/invalid value "soft=120" in "fairgate_quota"$L/],
    ['an unknown parameter', 'fairgate_quota user rpd=9 per=day;', undef,
     qr/invalid parameter "rpd=9" in "fairgate_quota"$L/],
    ['a parameter twice',
     'fairgate_quota user requests=9 requests=8 per=day;', undef,
     qr/duplicate parameter "requests=8" in "fairgate_quota"$L/],
    ['a key that is no key id', 'fairgate_quota key sk-alice requests=9 '
     . 'per=day;', undef,
     qr/invalid key "sk-alice" in "fairgate_quota": a key's id is 16 hex digits$L/],
    ['one tenant and window twice',
     'fairgate_quota user requests=9 per=day; '
     . 'fairgate_quota user tokens=9 per=day;', undef,
     qr/duplicate "fairgate_quota" of the same tenant and window: give its limits in one$L/],
    ['an unknown time zone', 'fairgate_quota user requests=9 per=day;',
     "fairgate_quota_timezone Europe/Atlantis;\n",
     qr/unknown time zone "Europe\/Atlantis" in "fairgate_quota_timezone": an IANA name such as "Europe\/Paris", or "UTC"$L/],
    ['a time zone that is a path', 'fairgate_quota user requests=9 per=day;',
     "fairgate_quota_timezone ../../etc/passwd;\n",
     qr/unknown time zone "\.\.\/\.\.\/etc\/passwd" in "fairgate_quota_timezone"/],
    ['a time zone in a location',
     'fairgate_quota_timezone UTC;', undef,
     qr/"fairgate_quota_timezone" directive is not allowed here$L/]));

done_testing();
