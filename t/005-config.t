#!/usr/bin/env perl

# The drop-in directives: nginx -t rejects bad values with messages that
# name the directive (or the keys file and line) and the value.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Digest::SHA qw(sha256_hex);
use File::Temp ();
use Test::More;

use Fairgate::Test;


our $dir = File::Temp::tempdir('fairgate-keys-XXXXXX', TMPDIR => 1,
                               CLEANUP => 1);
chmod 0755, $dir;

my $h1 = sha256_hex('one');
my $h2 = sha256_hex('two');

my %files = (
    'good'      => "# a comment\n\n$h1 alice chat 1 rpm=5\n"
                   . "$h2 bob - 0.5 tpm=1000 # a key\n",
    'bad-hash'  => "$h1 alice chat 1\nabc bob - 1\n",
    'bad-hex'   => ('g' x 64) . " alice chat 1\n",
    'weight'    => "$h1 alice chat heavy\n",
    'weight-0'  => "$h1 alice chat 0\n",
    'limit'     => "$h1 alice chat 1 rpm=x\n",
    'limit-2'   => "$h1 alice chat 1 rpm=1 rpm=2\n",
    'dup'       => "$h1 alice chat 1\n$h2 bob - 1\n$h1 carol - 1\n",
    'conflict'  => "$h1 alice chat 1\n$h2 alice chat 2\n",
    'short'     => "$h1 alice 1\n",
    'quote'     => "$h1 al\"ice chat 1\n",
    'latin1'    => "$h1 alice chat 1\n$h2 ren\xe9 chat 1\n",
    'overlong'  => "$h1 alice \xc0\xafapp 1\n",
    'lone'      => "$h1 \x80bob - 1\n",
    'empty'     => "# nobody yet\n",
);

for my $f (keys %files) {
    open my $fh, '>', "$dir/$f" or die "$dir/$f: $!\n";
    print {$fh} $files{$f};
    close $fh;
}


my $Z = "fairgate_zone zone=main:16m;\n";

run_blocks(blocks());

# nginx -t refuses each fairgate: its location's directives, what it says
run_refused(map({ ["TEST $_->[0]", $Z, "location / { $_->[1] }\n", $_->[2]] }
    ['4: fairgate without zone=', 'fairgate queue=3; fairgate_identity user=x;',
     'missing "zone=NAME" in "fairgate"'],
    ['5: fairgate with an unknown zone',
     'fairgate zone=nope; fairgate_identity user=x;',
     qr/unknown fairgate_zone "nope" in "fairgate" in \S+nginx\.conf:\d+/],
    ['6: fairgate with a bad queue',
     'fairgate zone=main queue=many; fairgate_identity user=x;',
     'invalid queue "many" in "fairgate"'],
    ['7: fairgate with a bad timeout',
     'fairgate zone=main timeout=0; fairgate_identity user=x;',
     'invalid timeout "0" in "fairgate"'],
    ['8: fairgate with an unknown parameter',
     'fairgate zone=main burst=5; fairgate_identity user=x;',
     'invalid parameter "burst=5" in "fairgate"'],
    ['9: fairgate twice',
     'fairgate zone=main; fairgate off; fairgate_identity user=x;',
     '"fairgate" directive is duplicate'],
    ['10: fairgate needs an identity', 'fairgate zone=main;',
     '"fairgate" needs "fairgate_keys" or "fairgate_identity" to tell its '
     . 'tenants apart']));

# each keys file nginx -t refuses, what it says
run_refused(map({ ["TEST $_->[0]", '',
                   "location / { fairgate_keys $dir/$_->[1]; }\n", $_->[2]] }
    ['11: a keys file that is not there', 'none',
     qr/open\(\) "\S+\/none" failed/],
    ['12: a key that is not a SHA-256', 'bad-hash',
     qr/invalid key hash "abc" in keys file \S+\/bad-hash:2, expected 64 hex digits \(SHA-256 of the key\) in \S+nginx\.conf:\d+/],
    ['13: a key with a non-hex digit', 'bad-hex',
     qr/invalid key hash "g{64}" in keys file \S+\/bad-hex:1/],
    ['14: a weight that is not a number', 'weight',
     qr/invalid weight "heavy" in keys file \S+\/weight:1, expected a number above 0/],
    ['15: a weight of 0', 'weight-0',
     qr/invalid weight "0" in keys file \S+\/weight-0:1/],
    ['16: a limit that is not a number', 'limit',
     qr/invalid limit "rpm=x" in keys file \S+\/limit:1, expected rpm=N, tpm=N, priority=E, models=LIST, quota=WINDOW:LIMITS or budget=WINDOW:AMOUNT, each once/],
    ['17: a limit given twice', 'limit-2',
     qr/invalid limit "rpm=2" in keys file \S+\/limit-2:1/],
    ['18: a key listed twice', 'dup',
     qr/duplicate key in keys file \S+\/dup:3, first in line 1/],
    ['19: a user whose keys disagree on its weight', 'conflict',
     qr/user "alice" has another weight, priority or limits in keys file \S+\/conflict:2 than in line 1/],
    ['20: a line with a field missing', 'short',
     qr/expected "SHA256 USER APP WEIGHT \[rpm=N\] \[tpm=N\]" in keys file \S+\/short:1/],
    ['21: a user with a quote', 'quote',
     qr/invalid user "al"ice" in keys file \S+\/quote:1/],
    ['21a: a user in Latin-1, not UTF-8', 'latin1',
     qr/invalid user "ren\\xe9" in keys file \S+\/latin1:2, not valid UTF-8/],
    ['21b: an app in an overlong form', 'overlong',
     qr/invalid app "\\xc0\\xafapp" in keys file \S+\/overlong:1, not valid UTF-8/],
    ['21c: a user with a lone continuation byte', 'lone',
     qr/invalid user "\\x80bob" in keys file \S+\/lone:1, not valid UTF-8/]));

# nginx -t refuses each of the other directives' values, saying so
run_refused(map({ ["TEST $_->[0]", '', "location / { $_->[1] }\n", $_->[2]] }
    ['24: fairgate_identity without user=',
     'fairgate_identity app=$http_x_app;',
     'missing "user=VALUE" in "fairgate_identity"'],
    ['25: fairgate_identity with an unknown parameter',
     'fairgate_identity user=$remote_user who=$http_x_who;',
     'invalid parameter "who=$http_x_who" in "fairgate_identity"'],
    ['26: fairgate_user_limit of 0', 'fairgate_user_limit rpm=0;',
     'invalid rpm "0" in "fairgate_user_limit"'],
    ['27: fairgate_user_limit with an unknown parameter',
     'fairgate_user_limit rps=5;',
     'invalid parameter "rps=5" in "fairgate_user_limit"'],
    ['28: fairgate_app_limit of one app twice',
     'fairgate_app_limit chat rpm=5; fairgate_app_limit chat tpm=9;',
     'duplicate app "chat" in "fairgate_app_limit"'],
    ['29: fairgate_app_limit with no limit', 'fairgate_app_limit chat;',
     'invalid number of arguments in "fairgate_app_limit" directive'],
    ['30: fairgate_app_limit with a bad tpm',
     'fairgate_app_limit chat tpm=lots;',
     'invalid tpm "lots" in "fairgate_app_limit"'],
    ['31: fairgate_throttle_status that is no error',
     'fairgate_throttle_status 200;',
     'value must be between 400 and 599'],
    ['32: fairgate_queue_status that is not a number',
     'fairgate_queue_status busy;',
     '"fairgate_queue_status" directive invalid number'],
    ['33: fairgate_max_tokens negative', 'fairgate_max_tokens -1;',
     '"fairgate_max_tokens" directive invalid number']));

done_testing();


__DATA__

=== TEST 1: a full drop-in configuration passes and serves its status
--- http_config eval
"fairgate_zone zone=main:16m policy=vtc inflight=8 inflight_tokens=32000;
fairgate_user_limit rpm=60 tpm=100000;
fairgate_app_limit chat rpm=600;
fairgate_app_limit batch tpm=1000000;
fairgate_throttle_status 429;
fairgate_queue_status 503;
fairgate_max_tokens 1024;"
--- config eval
"fairgate zone=main queue=10 timeout=30s;
fairgate_keys $::dir/good;
location /v1/ { proxy_pass http://127.0.0.1:1; }
location /status { fairgate off; fairgate_status format=json main; }"
--- request
GET /status
--- response_body_like
"limit": 8,

=== TEST 2: fairgate applies to every method: a GET needs a key too
--- http_config
fairgate_zone zone=main:16m;
--- config eval
"fairgate zone=main;
fairgate_keys $::dir/good;
location /status { fairgate_status; }"
--- request
GET /status
--- error_code: 401
--- response_body_like
"invalid_request_error"

=== TEST 3: identity from variables
--- http_config
fairgate_zone zone=main:16m;
--- config
fairgate zone=main;
fairgate_identity user=$remote_addr app=web weight=2;
location /status { fairgate_status format=prometheus; }
--- request
GET /status
--- response_body_like
fairgate_tenants\{zone="main",kind="user"\} 0

=== TEST 22: an empty keys file is allowed, with a warning
--- http_config
fairgate_zone zone=main:16m;
--- config eval
"location / { fairgate zone=main; fairgate_keys $::dir/empty; }
location /status { fairgate_status; }"
--- request
GET /status
--- error_log eval
qr/\[warn\] .*keys file "\S+\/empty" has no keys: every request will get 401/

=== TEST 23: fairgate_keys and fairgate_identity in one block
--- config eval
"location / { fairgate_keys $::dir/good; fairgate_identity user=x; }"
--- must_die
--- error_log
"fairgate_identity" directive cannot be used with "fairgate_keys" in the same block

=== TEST 34: fairgate_zone with a bad inflight
--- http_config
fairgate_zone zone=main:16m inflight=x;
--- must_die
--- error_log
invalid inflight "x" in "fairgate_zone"

=== TEST 35: fairgate_zone with a bad inflight_tokens
--- http_config
fairgate_zone zone=main:16m inflight_tokens=-1;
--- must_die
--- error_log
invalid inflight_tokens "-1" in "fairgate_zone"

=== TEST 36: fairgate_status with an unknown format
--- http_config
fairgate_zone zone=main:16m;
--- config
location /status { fairgate_status format=xml; }
--- must_die
--- error_log
invalid format "xml" in "fairgate_status", expected "json" or "prometheus"
