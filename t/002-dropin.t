#!/usr/bin/env perl

# Drop-in mode in front of an OpenAI-like upstream (the mock): API keys and
# 401s, malformed bodies and 400s, rate limits with OpenAI's headers and
# 429s, token accounting from usage or counted from a stream, variables,
# and the status page as JSON and Prometheus text.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Digest::SHA qw(sha256_hex);
use File::Temp ();
use JSON::PP ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test qw($REPO);
use Fairgate::MockUpstream;


my $up = Fairgate::MockUpstream->new;
my $dir = File::Temp::tempdir('fairgate-keys-XXXXXX', TMPDIR => 1,
                              CLEANUP => 1);
chmod 0755, $dir;

my $json = JSON::PP->new->canonical;


sub write_keys {
    my ($name, @lines) = @_;
    open my $fh, '>', "$dir/$name" or die "$dir/$name: $!\n";
    print {$fh} map { "$_\n" } @lines;
    close $fh;
    return "$dir/$name";
}


my $keys = write_keys('keys',
    '# sha256 of the key, user, app, weight, limits',
    sha256_hex('sk-alice') . ' alice chat 1',
    sha256_hex('sk-alice-2') . ' alice chat 1',
    sha256_hex('sk-bob') . '   bob   -    2   rpm=2',
    sha256_hex('sk-carol') . ' carol batch 1 tpm=100',
    sha256_hex('sk-dave') . ' dave chat 1',
    '',
    sha256_hex('sk-erin') . ' erin chat 1 rpm=1000 tpm=1000000 # comment');

my $LOG_FORMAT = q{log_format fg '$fairgate_user|$fairgate_app|}
    . q{$fairgate_weight|$fairgate_queue_time|$fairgate_tokens_in|}
    . q{$fairgate_tokens_out|$fairgate_usage|$fairgate_outcome|$status';};


sub server {
    my (%o) = (location => '', @_);
    my $s = Fairgate::Test::Server->new(
        http_config => "    fairgate_zone zone=llm:16m;\n    $LOG_FORMAT\n"
                       . ($o{http} // ''),
        config => <<"END" . ($o{config} // ''));
    access_log logs/fg.log fg;

    location /v1/ {
        fairgate zone=llm;
        fairgate_keys $keys;
        $o{location}
        proxy_pass http://${\ $up->addr };
    }

    location /status { fairgate_status; }
    location /metrics { fairgate_status format=prometheus; }
END
    $s->start or die $s->last_error;
    return $s;
}


sub chat {
    my ($s, $key, %o) = @_;
    my $body = $o{body} // $json->encode({
        model => 'm', max_tokens => $o{max_tokens} // 4,
        messages => [{ role => 'user', content => $o{content} // 'hi' }],
        ($o{stream} ? (stream => JSON::PP::true,
                       stream_options => { include_usage =>
                           $o{usage} // 1 ? JSON::PP::true
                                          : JSON::PP::false })
                    : ()) });
    return $s->post('/v1/chat/completions', $body,
                    headers => [(defined $key ? "Authorization: Bearer $key"
                                              : ()),
                                'Content-Type: application/json',
                                @{ $o{headers} // [] }]);
}


sub error_of {
    my ($res) = @_;
    my $e = eval { $json->decode($res->{body}) } // {};
    return $e->{error} // {};
}


sub zone {
    my ($s) = @_;
    my $res = $s->get('/status');
    return $json->decode($res->{body})->{zones}[0];
}


sub user {
    my ($z, $name) = @_;
    my ($u) = grep { $_->{name} eq $name } @{ $z->{users} };
    return $u;
}


# the access log's lines, once nginx wrote n of them
sub log_lines { $_[0]->access_lines('fg.log', $_[1]) }


subtest 'API keys: 401 without or with a wrong key, OpenAI error body' => sub {
    my $s = server();
    $up->clear_log;

    my $res = chat($s, undef);
    is($res->{status}, 401, 'no key: 401');
    is($res->{headers}{'www-authenticate'}, 'Bearer', 'WWW-Authenticate');
    is($res->{headers}{'content-type'}, 'application/json', 'JSON');
    my $e = error_of($res);
    is($e->{type}, 'invalid_request_error', 'type');
    like($e->{message}, qr/didn't provide an API key/, 'message');
    ok(exists $e->{param} && !defined $e->{param}, 'param null');
    ok(exists $e->{code} && !defined $e->{code},
       'code null, as OpenAI answers a missing key');

    $res = chat($s, 'sk-mallory');
    is($res->{status}, 401, 'unknown key: 401');
    is(error_of($res)->{code}, 'invalid_api_key', 'code invalid_api_key');
    is($up->served, 0, 'nothing reached the upstream');

    $res = $s->post('/v1/chat/completions', '{}',
                    headers => ['Authorization: Basic c2stYWxpY2U6']);
    is($res->{status}, 401, 'not a bearer token: 401');

    $res = chat($s, 'sk-alice');
    is($res->{status}, 200, 'a known key: 200');
    like($res->{body}, qr/"chat.completion"/, 'the upstream answered');

    $res = chat($s, 'sk-alice-2');
    is($res->{status}, 200, 'a second key of the same user');

    $res = $s->request('GET /v1/models',
                       headers => ['Authorization: Bearer sk-dave']);
    is($res->{status}, 200, 'GET with a key passes, unscheduled');
    is($s->request('GET /v1/models')->{status}, 401, 'GET without: 401');

    my $z = zone($s);
    is(user($z, 'alice')->{admitted}, 2, 'both keys count as alice');
    ok(!user($z, 'dave'), 'a GET makes no tenant');

    # a refused request is logged when its connection closes: find them
    my @l = log_lines($s, 7);
    is(scalar(grep { /^\|\|\|0\.000\|0\|0\|estimated\|unauthorized\|401$/ }
              @l), 4, 'the 401s are logged with their outcome');
    is(scalar(grep { /^alice\|chat\|1\.000\|0\.000\|\d+\|4\|reported\|served\|200$/ }
              @l), 2, 'alice, app chat, weight 1, served');
    is(scalar(grep { /^dave\|chat\|1\.000\|.*\|passed\|200$/ } @l), 1,
       'the GET passed');

    is($s->stop, 0, 'exits cleanly');
};


subtest 'malformed JSON: 400 with an OpenAI error' => sub {
    my $s = server();
    $up->clear_log;

    my $res = chat($s, 'sk-dave', body => '{"model": "m", "messages": [');
    is($res->{status}, 400, 'truncated JSON: 400');
    my $e = error_of($res);
    is($e->{type}, 'invalid_request_error', 'type');
    like($e->{message}, qr/could not parse the JSON body.*line 1/,
         'message says where');

    $res = chat($s, 'sk-dave', body => '[1, 2]');
    is($res->{status}, 400, 'not an object: 400');
    like(error_of($res)->{message}, qr/must be a JSON object/, 'says so');

    $res = chat($s, 'sk-dave', body => '');
    is($res->{status}, 400, 'no body: 400');

    $res = chat($s, 'sk-dave', body => '{"max_tokens": -3}');
    is($res->{status}, 400, 'negative max_tokens: 400');
    is(error_of($res)->{param}, 'max_tokens', 'param names the field');

    $res = chat($s, 'sk-dave', body => '{"max_completion_tokens": "9"}');
    is($res->{status}, 400, 'a string max_completion_tokens: 400');

    is($up->served, 0, 'nothing reached the upstream');

    my $z = zone($s);
    is($z->{enqueued}, 0, 'nothing was queued');

    $res = chat($s, 'sk-dave');
    is($res->{status}, 200, 'then a good one passes');

    is($s->stop, 0, 'exits cleanly');
};


subtest 'request limit per key: 429, Retry-After, x-ratelimit-*' => sub {
    my $s = server();

    my $res = chat($s, 'sk-bob');
    is($res->{status}, 200, 'first');
    is($res->{headers}{'x-ratelimit-limit-requests'}, 2, 'limit 2');
    is($res->{headers}{'x-ratelimit-remaining-requests'}, 1, '1 left');
    like($res->{headers}{'x-ratelimit-reset-requests'}, qr/^(?:\d+s|1m0s)$/,
         'reset as OpenAI writes it');
    ok(!exists $res->{headers}{'x-ratelimit-limit-tokens'},
       'no token limit, no token headers');

    $res = chat($s, 'sk-bob');
    is($res->{headers}{'x-ratelimit-remaining-requests'}, 0, 'second, 0 left');

    $res = chat($s, 'sk-bob');
    is($res->{status}, 429, 'third: 429');
    like($res->{headers}{'retry-after'}, qr/^\d+$/, 'Retry-After');
    cmp_ok($res->{headers}{'retry-after'}, '>=', 50,
           'in about a minute, when the window slides');
    cmp_ok($res->{headers}{'retry-after'}, '<=', 61, 'not more');
    is($res->{headers}{'x-ratelimit-remaining-requests'}, 0, 'none left');

    my $e = error_of($res);
    is($e->{type}, 'requests', 'type: requests');
    is($e->{code}, 'rate_limit_exceeded', 'code');
    like($e->{message}, qr/requests per min \(RPM\) of user bob: Limit 2, (?#
                           )Used 2, Requested 1\. Please try again in (?:\d+m)?\d+s/,
         'the message names it');
    ok(exists $e->{param} && !defined $e->{param}, 'param null');

    my $z = zone($s);
    is($z->{throttled}, 1, 'the zone counts it');
    is(user($z, 'bob')->{throttled}, 1, 'and bob');
    is(user($z, 'bob')->{rpm}, 2, 'two in the window');

    is(chat($s, 'sk-alice')->{status}, 200, 'another user is not limited');

    my @l = log_lines($s, 4);
    is(scalar(grep { /^bob\|\|2\.000\|.*\|throttled\|429$/ } @l), 1,
       'the outcome is logged');

    is($s->stop, 0, 'exits cleanly');
};


subtest 'token limit: the estimate counts max_tokens, usage settles it' => sub {
    my $s = server();

    # carol: tpm=100.  Estimated: 1 token of text + 4 a message + 40 out
    my $res = chat($s, 'sk-carol', max_tokens => 40);
    is($res->{status}, 200, 'first');
    is($res->{headers}{'x-ratelimit-limit-tokens'}, 100, 'limit 100');
    is($res->{headers}{'x-ratelimit-remaining-tokens'}, 55,
       '45 reserved: 1 + 4 in, 40 out');

    # the mock used 4 prompt tokens and 40 out: 44 settled in the window
    $res = chat($s, 'sk-carol', max_tokens => 60);
    is($res->{status}, 429, '44 used + 65 asked > 100: 429');
    my $e = error_of($res);
    is($e->{type}, 'tokens', 'type: tokens');
    like($e->{message}, qr/tokens per min \(TPM\) of user carol: (?#
                           )Limit 100, Used 44, Requested 65/,
         'the message names it');
    like($res->{headers}{'retry-after'}, qr/^\d+$/, 'Retry-After');

    $res = chat($s, 'sk-carol', max_tokens => 10,
                headers => ['X-Mock-Tokens: 2']);
    is($res->{status}, 200, 'a smaller one fits');

    $res = chat($s, 'sk-carol', max_tokens => 200);
    is($res->{status}, 429, 'one above the limit itself');
    like(error_of($res)->{message}, qr/larger than the limit/, 'says so');

    is(user(zone($s), 'carol')->{tpm}, 44 + 4 + 2, 'settled: 44 + 6');

    is($s->stop, 0, 'exits cleanly');
};


subtest 'default user limit, app limits, configurable status' => sub {
    my $s = server(location => <<'END');
        fairgate_user_limit rpm=3;
        fairgate_app_limit chat rpm=4;
        fairgate_throttle_status 503;
END

    is(chat($s, 'sk-alice')->{status}, 200, 'alice 1');
    is(chat($s, 'sk-alice')->{status}, 200, 'alice 2');
    my $res = chat($s, 'sk-dave');
    is($res->{status}, 200, 'dave 1, of the same app');
    is($res->{headers}{'x-ratelimit-remaining-requests'}, 1,
       'the headers tell of the tighter limit: the app has 1 left');

    $res = chat($s, 'sk-alice');
    is($res->{status}, 200, 'alice 3: her last, the app\'s last');

    $res = chat($s, 'sk-dave');
    is($res->{status}, 503, 'the app is out: the configured status');
    like(error_of($res)->{message}, qr/of app chat: Limit 4/, 'app chat');
    like($res->{headers}{'retry-after'}, qr/^\d+$/, 'Retry-After');

    $res = chat($s, 'sk-bob');
    is($res->{status}, 200, "bob's own rpm=2 overrides the default");
    is(chat($s, 'sk-bob')->{status}, 200, 'bob 2');
    is(chat($s, 'sk-bob')->{status}, 503, 'bob 3: his own limit');

    $res = chat($s, 'sk-erin');
    is($res->{status}, 503, 'erin: her app chat is out');

    my $z = zone($s);
    my ($app) = grep { $_->{name} eq 'chat' } @{ $z->{apps} };
    is($app->{requests}, 4, 'app chat: 4 served');
    is($app->{throttled}, 2, 'and 2 throttled');

    is($s->stop, 0, 'exits cleanly');
};


subtest 'the rpm policy refuses as a rate limit does' => sub {
    my $s = Fairgate::Test::Server->new(
        http_config => "    fairgate_zone zone=llm:16m policy=rpm rpm=2;\n",
        config => <<"END");
    location /v1/ {
        fairgate zone=llm;
        fairgate_keys $keys;
        proxy_pass http://${\ $up->addr };
    }
    location /status { fairgate_status; }
END
    $s->start or die $s->last_error;

    is(chat($s, 'sk-dave')->{status}, 200, 'dave 1');
    is(chat($s, 'sk-dave')->{status}, 200, 'dave 2');
    my $res = chat($s, 'sk-dave');
    is($res->{status}, 429, 'dave 3: 429');
    like(error_of($res)->{message},
         qr/requests per min \(RPM\) of user dave: Limit 2, Used 2/,
         "the policy's limit is named");
    is($res->{headers}{'x-ratelimit-limit-requests'}, 2, 'and in the headers');
    like($res->{headers}{'retry-after'}, qr/^\d+$/, 'Retry-After');

    my $z = zone($s);
    is($z->{rejected}, 1, 'the scheduler rejected it');
    is(user($z, 'dave')->{rpm}, 2, 'two in the window, not three');
    is(chat($s, 'sk-alice')->{status}, 200, 'alice is not limited');

    is($s->stop, 0, 'exits cleanly');
};


subtest 'tokens: usage from the body, counted from a stream' => sub {
    my $s = server();

    my $res = chat($s, 'sk-dave', content => 'one two three four five',
                   max_tokens => 7);
    is($res->{status}, 200, 'non-stream');

    $res = chat($s, 'sk-dave', stream => 1, max_tokens => 5);
    is($res->{status}, 200, 'stream with usage');
    like($res->{body}, qr/data: \[DONE\]/, 'the stream went through');

    $res = chat($s, 'sk-dave', stream => 1, usage => 0, max_tokens => 6);
    is($res->{status}, 200, 'stream without usage');

    $res = chat($s, 'sk-dave', max_tokens => 3,
                headers => ['X-Mock-Usage: 0']);
    is($res->{status}, 200, 'non-stream without usage');

    $res = chat($s, 'sk-dave', max_tokens => 9, content => 'a b',
                headers => ['X-Mock-Usage-First: 1']);
    is($res->{status}, 200, 'non-stream with usage first');
    like($res->{body}, qr/^\{"usage": \{/, 'so it is');

    my @l = log_lines($s, 5);
    like($l[0], qr/^dave\|chat\|1\.000\|0\.000\|8\|7\|reported\|served\|200$/,
         'usage: 8 in (5 words + 3), 7 out');
    like($l[1], qr/^dave\|chat\|1\.000\|0\.000\|4\|5\|reported\|served\|200$/,
         'stream: the final usage chunk');
    like($l[2], qr/^dave\|chat\|1\.000\|0\.000\|5\|6\|estimated\|served\|200$/,
         'stream without usage: 6 chunks counted, input estimated');
    like($l[3], qr/^dave\|chat\|1\.000\|0\.000\|5\|3\|estimated\|served\|200$/,
         'body without usage: 12 bytes of text, 3 tokens');
    like($l[4], qr/^dave\|chat\|1\.000\|0\.000\|5\|9\|reported\|served\|200$/,
         'usage found where it is not last: 2 words + 3 in, 9 out');

    my $u = user(zone($s), 'dave');
    is($u->{tokens_in}, 8 + 4 + 5 + 5 + 5, 'tokens in, settled');
    is($u->{tokens_out}, 7 + 5 + 6 + 3 + 9, 'tokens out, settled');
    is($u->{service}, (8 + 4 + 5 + 5 + 5) + 2 * (7 + 5 + 6 + 3 + 9),
       'service: h = in + 2 out');
    is($u->{finished}, 5, 'five finished');

    is($s->stop, 0, 'exits cleanly');
};


subtest "a stream's tokens are charged while it streams" => sub {
    my $s = server(config => "    proxy_buffering off;\n");

    # 30 chunks 50 ms apart: about 1.5 s of streaming
    my $sock = $s->connect;
    my $body = $json->encode({ model => 'm', max_tokens => 30,
                               stream => JSON::PP::true,
                               messages => [{ role => 'user',
                                              content => 'hi' }] });
    print {$sock} "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
        . "Authorization: Bearer sk-erin\r\nConnection: close\r\n"
        . "X-Mock-Token-Delay: 0.05\r\n"
        . 'Content-Length: ' . length($body) . "\r\n\r\n$body";

    # poll until the counter moved, while the stream is still open
    my $deadline = Time::HiRes::time() + 10;
    my ($u, $first);

    while (Time::HiRes::time() < $deadline) {
        $u = user(zone($s), 'erin');
        if ($u && $u->{running} == 1) {
            $first //= $u->{service};
            last if $u->{service} > $first;
        }
        Time::HiRes::sleep(0.02);
    }

    ok($u && $u->{running} == 1, 'the stream is still running');
    cmp_ok($u->{service}, '>', $first // 0,
           'and erin\'s service grew during it');
    cmp_ok($u->{service}, '<', 5 + 2 * 30, 'before its end');

    local $/;
    my $raw = <$sock>;
    close $sock;
    like($raw, qr/data: \[DONE\]/, 'the stream ends');

    $deadline = Time::HiRes::time() + 5;
    while (Time::HiRes::time() < $deadline) {
        $u = user(zone($s), 'erin');
        last if $u->{running} == 0;
        Time::HiRes::sleep(0.01);
    }

    is($u->{service}, 5 + 2 * 30, 'then 5 in (estimated), 30 out');

    is($s->stop, 0, 'exits cleanly');
};


subtest 'a body nginx wrote to a file is read back' => sub {
    my $s = server(location => 'client_body_buffer_size 1k;');

    my $content = 'word ' x 1000;
    my $res = chat($s, 'sk-dave', content => $content, max_tokens => 2);
    is($res->{status}, 200, 'a 5 KB body, over client_body_buffer_size');

    my @l = log_lines($s, 1);
    like($l[0], qr/^dave\|chat\|1\.000\|0\.000\|1003\|2\|reported\|/,
         'the upstream got it whole: 1000 words + 3');
    like($s->error_log, qr/a client request body is buffered to a temporary/,
         'it went through a file');

    $res = chat($s, 'sk-dave', body => '{"messages": [' . ('1,' x 900));
    is($res->{status}, 400, 'a malformed one from a file: 400');

    is($s->stop, 0, 'exits cleanly');
};


subtest 'identity from variables' => sub {
    my $s = Fairgate::Test::Server->new(
        http_config => "    fairgate_zone zone=llm:16m;\n    $LOG_FORMAT\n",
        config => <<"END");
    access_log logs/fg.log fg;

    location /v1/ {
        fairgate zone=llm;
        fairgate_identity user=\$http_x_user app=\$http_x_app
                          weight=\$http_x_weight;
        fairgate_user_limit rpm=1;
        proxy_pass http://${\ $up->addr };
    }

    location /status { fairgate_status; }
END
    $s->start or die $s->last_error;

    my @zed = ('X-User: zed', 'X-App: tools', 'X-Weight: 2.5');
    my $res = chat($s, undef, headers => \@zed);
    is($res->{status}, 200, 'identified by headers');
    is(chat($s, undef, headers => \@zed)->{status}, 429,
       'limited by the default user limit');
    is(chat($s, undef)->{status}, 401, 'no identity: 401');

    my $u = user(zone($s), 'zed');
    is($u->{weight}, 2.5, 'the weight from the variable');

    my @l = log_lines($s, 3);
    is(scalar(grep { /^zed\|tools\|2\.500\|0\.000\|4\|4\|reported\|served\|200$/ }
              @l), 1, 'the variables');

    is($s->stop, 0, 'exits cleanly');
};


subtest 'status: JSON and Prometheus text' => sub {
    my $s = server();

    chat($s, 'sk-alice') for 1 .. 2;
    chat($s, 'sk-bob') for 1 .. 3;

    my $z = zone($s);
    is($z->{admitted}, 4, 'admitted');
    is($z->{throttled}, 1, 'throttled');
    is($z->{tokens_out}, 16, 'tokens out: 4 each');
    is($z->{inflight}{running}, 0, 'nothing in flight');
    is($z->{queue_wait}{count}, 4, 'four waits measured');
    is($z->{queue_wait}{buckets}[-1]{le}, '+Inf', 'the histogram ends at +Inf');
    is($z->{queue_wait}{buckets}[-1]{count}, 4, 'cumulative');
    is(scalar @{ $z->{users} }, 2, 'two users');
    is_deeply([sort map { $_->{name} } @{ $z->{apps} }], ['chat'], 'one app');

    my $res = $s->get('/metrics');
    is($res->{status}, 200, 'metrics');
    like($res->{headers}{'content-type'}, qr{^text/plain; version=0\.0\.4},
         'Prometheus content type');
    my $m = $res->{body};
    like($m, qr/^fairgate_requests_total\{zone="llm",event="admitted"\} 4$/m,
         'zone counters');
    like($m, qr/^fairgate_user_requests_total\{zone="llm",user="bob",(?#
               )event="throttled"\} 1$/m, 'user counters');
    like($m, qr/^fairgate_queue_wait_seconds_bucket\{zone="llm",le="\+Inf"\} 4$/m,
         'the histogram');
    like($m, qr/^fairgate_queue_wait_seconds_count\{zone="llm"\} 4$/m,
         'its count');

    # every line is a comment or "name{labels} number"
    my @bad = grep { !/^# (?:HELP|TYPE) / && !/^[a-z_]+\{[^}]*\} [0-9.e+-]+$/ }
              split /\n/, $m;
    is(scalar @bad, 0, 'well-formed') or diag(join "\n", @bad[0 .. 4]);

    my %type;
    for (split /\n/, $m) {
        $type{$1}++ if /^# TYPE (\S+)/;
    }
    is(scalar(grep { $_ > 1 } values %type), 0, 'each family once');

    is($s->stop, 0, 'exits cleanly');
};


subtest 'build/fairgate-keyhash makes keys the module accepts' => sub {
    my $tool = "$Fairgate::Test::BUILD/fairgate-keyhash";
    ok(-x $tool, 'the tool is built') or return;

    my ($rc, $out) = Fairgate::Test::run_cmd('/bin/sh', '-c',
        "$tool -n frank tools 3 rpm=5 2>$dir/newkey");
    is($rc, 0, 'makes a key');
    open my $fh, '<', "$dir/newkey" or die;
    chomp(my $key = <$fh>);
    like($key, qr/^fg-[0-9a-f]{48}$/, 'the key, on stderr');
    is($out, sha256_hex($key) . " frank tools 3 rpm=5\n",
       'the line, on stdout');

    ($rc, $out) = Fairgate::Test::run_cmd('/bin/sh', '-c',
        "echo sk-gina | $tool gina - 1");
    is($out, sha256_hex('sk-gina') . " gina - 1\n", 'hashes a given key');

    ($rc) = Fairgate::Test::run_cmd($tool, 'x', '-', 'heavy');
    isnt($rc, 0, 'rejects a bad weight');

    my $file = write_keys('tool-keys', $out =~ s/\n//r);
    my $s = Fairgate::Test::Server->new(
        http_config => "    fairgate_zone zone=llm:16m;\n",
        config => <<"END");
    location /v1/ {
        fairgate zone=llm;
        fairgate_keys $file;
        proxy_pass http://${\ $up->addr };
    }
END
    $s->start or die $s->last_error;
    is(chat($s, 'sk-gina')->{status}, 200, 'nginx takes the line');
    is($s->stop, 0, 'exits cleanly');
};


subtest '$fairgate_model: the model a request names, routed by' => sub {
    my $other = Fairgate::MockUpstream->new;
    $up->clear_log;
    $other->clear_log;

    my $s = Fairgate::Test::Server->new(
        http_config => "    fairgate_zone zone=llm:16m;\n"
            . "    log_format fgm\n"
            . "        '\$fairgate_key_id|\$fairgate_model|\$status';\n"
            . "    map \$fairgate_model \$fg_route {\n"
            . "        default ${\ $up->addr };\n"
            . "        big ${\ $other->addr };\n"
            . "    }\n",
        config => <<"END");
    access_log logs/fgm.log fgm;

    location /v1/ {
        fairgate zone=llm;
        fairgate_keys $keys;
        proxy_pass http://\$fg_route;
    }
END
    $s->start or die $s->last_error;

    my %body = (max_tokens => 2,
                messages => [{ role => 'user', content => 'hi' }]);
    for my $m ('big', 'small', 'big') {
        my $res = chat($s, 'sk-alice',
                       body => $json->encode({ %body, model => $m }),
                       headers => ["X-Tag: $m"]);
        is($res->{status}, 200, "model $m served");
    }

    is_deeply([$other->served], ['big', 'big'], 'big went to its upstream');
    is_deeply([$up->served], ['small'], 'the others to the default');

    my $res = chat($s, 'sk-alice', body => '{"model":"b\u0069g",'
                   . '"messages":[{"role":"user","content":"hi"}]}');
    is($res->{status}, 400, 'a model written with escapes: 400');
    is(error_of($res)->{param}, 'model', 'naming model');

    $res = chat($s, 'sk-alice', body => '{"model":"big","model":"small",'
                . '"messages":[{"role":"user","content":"hi"}]}');
    is($res->{status}, 400, 'model twice: 400');

    $res = chat($s, 'sk-alice',
                body => $json->encode({ %body, model => 7 }));
    is($res->{status}, 400, 'a model not a string: 400');

    my @l = $s->access_lines('fgm.log', 7);
    my $id = substr(sha256_hex('sk-alice'), 0, 16);
    is(scalar(grep { /^$id\|big\|200$/ } @l), 2,
       'logged with its key id and model');
    is(scalar(grep { /^$id\|small\|200$/ } @l), 1, 'and the other');

    is($s->stop, 0, 'exits cleanly');
    $other->stop;
};


$up->stop;

done_testing();
