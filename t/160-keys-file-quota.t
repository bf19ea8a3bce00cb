#!/usr/bin/env perl

# A keys file's key's own quotas and budgets (quota= and budget= on its
# line): enforced as a Redis key's, 429 insufficient_quota on the key's
# own limit while the file's other keys go on; a budget priced by
# fairgate_price; a bad column refused by nginx -t naming the keys file,
# its line and what is wrong.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Digest::SHA qw(sha256_hex);
use File::Temp ();
use JSON::PP ();
use Test::More;

use Fairgate::Test qw(run_refused);
use Fairgate::MockUpstream;


my $up = Fairgate::MockUpstream->new;
my $dir = File::Temp::tempdir('fairgate-kfquota-XXXXXX', TMPDIR => 1,
                              CLEANUP => 1);
chmod 0755, $dir;

my $json = JSON::PP->new->canonical;


sub keys_file {
    my ($name, @lines) = @_;
    open my $fh, '>', "$dir/$name" or die "$dir/$name: $!\n";
    print {$fh} map { "$_\n" } @lines;
    close $fh;
    return "$dir/$name";
}


my $file = keys_file('keys',
    '# quotas of their own',
    sha256_hex('sk-ann') . ' ann - 1 quota=day:requests=2',
    sha256_hex('sk-ben') . ' ben - 1',
    sha256_hex('sk-cid') . ' cid - 1 rpm=600 budget=month:1,soft=50',
    sha256_hex('sk-dot') . ' dot - 1 quota=day:requests=5;hour:tokens=999 '
    . 'budget=day:5;12h:9,rolling');

my $ann = substr(sha256_hex('sk-ann'), 0, 16);
my $cid = substr(sha256_hex('sk-cid'), 0, 16);
my $dot = substr(sha256_hex('sk-dot'), 0, 16);

my $s = Fairgate::Test::Server->new(
    http_config => "    fairgate_zone zone=llm:16m;\n",
    config => <<"END");
    location /v1/ {
        fairgate zone=llm;
        fairgate_keys $file;
        fairgate_quota key requests=3 per=day;
        fairgate_price m input=10000 output=10000;
        proxy_pass http://${\ $up->addr };
    }

    location /status { fairgate_status; }
END
$s->start or die $s->last_error;


sub chat {
    my ($key, @h) = @_;
    my $body = $json->encode({
        model => 'm', max_tokens => 4,
        messages => [{ role => 'user', content => 'hi' }] });
    return $s->post('/v1/chat/completions', $body,
                    headers => ["Authorization: Bearer $key",
                                'Content-Type: application/json', @h]);
}

sub error_of {
    my ($r) = @_;
    my $j = eval { $json->decode($r->{body}) } // {};
    return $j->{error} // {};
}

# once the status page shows that a key's window counts at least so much:
# a request's cost is counted at its end, maybe after its client read it
sub counted {
    my ($id, $window, $what, $min) = @_;
    return Fairgate::Test::wait_for(5, sub {
        my $z = $json->decode($s->get('/status')->{body})->{zones}[0];
        my ($k) = grep { $_->{id} eq $id } @{ $z->{keys} // [] };
        my ($w) = grep { $_->{window} eq $window } @{ $k->{quotas} // [] };
        return ($w->{$what} // 0) >= $min - 1e-9;
    });
}


subtest "a key's quota=day:requests=2: the third refused" => sub {
    $up->clear_log;

    is(chat('sk-ann')->{status}, 200, 'the first served');
    is(chat('sk-ann')->{status}, 200, 'the second served');

    my $r = chat('sk-ann');
    is($r->{status}, 429, 'the third: 429');
    is(error_of($r)->{code}, 'insufficient_quota', 'insufficient_quota');
    like(error_of($r)->{message},
         qr/The key \Q$ann\E has used 2 of its 2 requests per day/,
         "the key's own limit, not the location's 3");
    is($r->{headers}{'x-ratelimit-limit-requests'}, 2,
       'x-ratelimit-limit-requests: its quota');
    is($up->served, 2, 'the refused request never reached the upstream');

    is(chat('sk-ben')->{status}, 200, "another key of the file: served")
        for 1 .. 3;
    $r = chat('sk-ben');
    is($r->{status}, 429, "... and held to the location's 3");
    like(error_of($r)->{message}, qr/has used 3 of its 3 requests per day/,
         "... the location's quota");
};


subtest 'a budget column, priced: a warning, a hard stop' => sub {
    # 50 prompt and 4 completion tokens at 0.01 each: 0.54 a request
    my @h = ('X-Mock-Prompt-Tokens: 50');

    my $r = chat('sk-cid', @h);
    is($r->{status}, 200, 'the first served');
    ok(counted($cid, 'month', 'cost', 0.54), '... its cost counted');

    $r = chat('sk-cid', @h);
    is($r->{status}, 200, 'the second served');
    is($r->{headers}{'x-fairgate-quota-warning'}, 'budget month 54%',
       '... past its soft threshold');
    ok(counted($cid, 'month', 'cost', 1.08), '... its cost counted');

    $r = chat('sk-cid', @h);
    is($r->{status}, 429, 'the third refused');
    is(error_of($r)->{code}, 'insufficient_quota', 'insufficient_quota');
    like(error_of($r)->{message},
         qr/The key \Q$cid\E has used 1\.08 of its budget of 1\.00 per month/,
         'the budget and what was spent');
    is($r->{headers}{'x-fairgate-budget-limit'}, '1.00',
       'x-fairgate-budget-limit');
};


subtest 'several windows of quota and budget on one line' => sub {
    is(chat('sk-dot')->{status}, 200, "request $_ served") for 1 .. 4;
    ok(counted($dot, 'hour', 'tokens', 4 * 4), 'its hour counts tokens');
    ok(counted($dot, '12h', 'cost', 0.01), 'its 12h rolling budget');
    ok(counted($dot, 'day', 'cost', 0.01), "its day's budget");
    is(chat('sk-dot')->{status}, 200, "the fifth: its own 5 a day, past "
       . "the location's 3");
    is(chat('sk-dot')->{status}, 429, 'the sixth refused');
};

$s->stop;


subtest 'build/fairgate-keyhash writes the columns' => sub {
    my $tool = "$Fairgate::Test::BUILD/fairgate-keyhash";
    my ($rc, $out) = Fairgate::Test::run_cmd('/bin/sh', '-c',
        "echo sk-eve | $tool eve - 1 quota=day:requests=1 budget=month:5");
    is($out, sha256_hex('sk-eve') . " eve - 1 quota=day:requests=1 "
       . "budget=month:5\n", 'the line, columns after the weight');
    ($rc) = Fairgate::Test::run_cmd($tool, 'x', '-', '1', 'quota=');
    isnt($rc, 0, 'an empty quota refused');

    my $f = keys_file('tool', $out =~ s/\n//r);
    my $t = Fairgate::Test::Server->new(
        http_config => "    fairgate_zone zone=llm:16m;\n",
        config => "    location /v1/ { fairgate zone=llm; "
                  . "fairgate_keys $f; proxy_pass http://${\ $up->addr }; }\n");
    $t->start or die $t->last_error;
    my $body = $json->encode({ model => 'm', max_tokens => 4,
        messages => [{ role => 'user', content => 'hi' }] });
    my @h = (headers => ['Authorization: Bearer sk-eve',
                         'Content-Type: application/json']);
    is($t->post('/v1/chat/completions', $body, @h)->{status}, 200,
       'nginx takes the line: the first served');
    is($t->post('/v1/chat/completions', $body, @h)->{status}, 429,
       '... the second refused by its quota');
    is($t->stop, 0, 'exits cleanly');
};


# nginx -t refuses a bad column, naming the keys file and line
my $k = sha256_hex('sk-x');
my @bad = (
    ['a bad count', 'quota=day:requests=0',
     qr/invalid quota in keys file \S+:2, quota\.day\.requests: expected an integer of 1 or more/],
    ['an unknown window', 'quota=fortnight:requests=1',
     qr/invalid quota in keys file \S+:2, quota\.fortnight: expected WINDOW:LIMITS/],
    ['an unknown field', 'quota=day:rpd=1',
     qr/invalid quota in keys file \S+:2, quota\.day\.rpd: expected requests=N, tokens=N, soft=P or rolling, each once/],
    ['a window twice', 'quota=1d:requests=1;24h:tokens=1',
     qr/invalid quota in keys file \S+:2, quota\.24h: expected one entry a window/],
    ['a rolling window too long', 'quota=400d:requests=1,rolling',
     qr/invalid quota in keys file \S+:2, quota\.400d: expected a rolling window of whole minutes/],
    ['a bad amount', 'budget=month:1.2.3',
     qr/invalid budget in keys file \S+:2, budget\.month\.amount: expected an amount above 0/],
    ['a bad soft threshold', 'budget=month:5,soft=101',
     qr/invalid budget in keys file \S+:2, budget\.month\.soft: expected an integer from 1 to 100/],
    ['quota= twice', 'quota=day:requests=1 quota=hour:requests=1',
     qr/invalid limit "quota=hour:requests=1" in keys file \S+:2, expected/],
    ['an empty quota', 'quota=',
     qr/invalid limit "quota=" in keys file \S+:2/]);

my $i = 0;
run_refused(map {
    my $f = keys_file('bad' . $i++, '# line 1', "$k x - 1 $_->[1]");
    ["keys file: $_->[0]", "fairgate_zone zone=main:16m;\n",
     "location / { fairgate zone=main; fairgate_keys $f; }\n", $_->[2]]
} @bad);

done_testing();
