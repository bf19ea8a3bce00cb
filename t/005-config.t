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
    'empty'     => "# nobody yet\n",
);

for my $f (keys %files) {
    open my $fh, '>', "$dir/$f" or die "$dir/$f: $!\n";
    print {$fh} $files{$f};
    close $fh;
}


run_tests();


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

=== TEST 4: fairgate without zone=
--- http_config
fairgate_zone zone=main:16m;
--- config
location / { fairgate queue=3; fairgate_identity user=x; }
--- must_die
--- error_log
missing "zone=NAME" in "fairgate"

=== TEST 5: fairgate with an unknown zone
--- http_config
fairgate_zone zone=main:16m;
--- config
location / { fairgate zone=nope; fairgate_identity user=x; }
--- must_die
--- error_log eval
qr/unknown fairgate_zone "nope" in "fairgate" in \S+nginx\.conf:\d+/

=== TEST 6: fairgate with a bad queue
--- http_config
fairgate_zone zone=main:16m;
--- config
location / { fairgate zone=main queue=many; fairgate_identity user=x; }
--- must_die
--- error_log
invalid queue "many" in "fairgate"

=== TEST 7: fairgate with a bad timeout
--- http_config
fairgate_zone zone=main:16m;
--- config
location / { fairgate zone=main timeout=0; fairgate_identity user=x; }
--- must_die
--- error_log
invalid timeout "0" in "fairgate"

=== TEST 8: fairgate with an unknown parameter
--- http_config
fairgate_zone zone=main:16m;
--- config
location / { fairgate zone=main burst=5; fairgate_identity user=x; }
--- must_die
--- error_log
invalid parameter "burst=5" in "fairgate"

=== TEST 9: fairgate twice
--- http_config
fairgate_zone zone=main:16m;
--- config
location / { fairgate zone=main; fairgate off; fairgate_identity user=x; }
--- must_die
--- error_log
"fairgate" directive is duplicate

=== TEST 10: fairgate needs an identity
--- http_config
fairgate_zone zone=main:16m;
--- config
location / { fairgate zone=main; }
--- must_die
--- error_log
"fairgate" needs "fairgate_keys" or "fairgate_identity" to tell its tenants apart

=== TEST 11: a keys file that is not there
--- config eval
"location / { fairgate_keys $::dir/none; }"
--- must_die
--- error_log eval
qr/open\(\) "\S+\/none" failed/

=== TEST 12: a key that is not a SHA-256
--- config eval
"location / { fairgate_keys $::dir/bad-hash; }"
--- must_die
--- error_log eval
qr/invalid key hash "abc" in keys file \S+\/bad-hash:2, expected 64 hex digits \(SHA-256 of the key\) in \S+nginx\.conf:\d+/

=== TEST 13: a key with a non-hex digit
--- config eval
"location / { fairgate_keys $::dir/bad-hex; }"
--- must_die
--- error_log eval
qr/invalid key hash "g{64}" in keys file \S+\/bad-hex:1/

=== TEST 14: a weight that is not a number
--- config eval
"location / { fairgate_keys $::dir/weight; }"
--- must_die
--- error_log eval
qr/invalid weight "heavy" in keys file \S+\/weight:1, expected a number above 0/

=== TEST 15: a weight of 0
--- config eval
"location / { fairgate_keys $::dir/weight-0; }"
--- must_die
--- error_log eval
qr/invalid weight "0" in keys file \S+\/weight-0:1/

=== TEST 16: a limit that is not a number
--- config eval
"location / { fairgate_keys $::dir/limit; }"
--- must_die
--- error_log eval
qr/invalid limit "rpm=x" in keys file \S+\/limit:1, expected rpm=N, tpm=N or priority=E, each once/

=== TEST 17: a limit given twice
--- config eval
"location / { fairgate_keys $::dir/limit-2; }"
--- must_die
--- error_log eval
qr/invalid limit "rpm=2" in keys file \S+\/limit-2:1/

=== TEST 18: a key listed twice
--- config eval
"location / { fairgate_keys $::dir/dup; }"
--- must_die
--- error_log eval
qr/duplicate key in keys file \S+\/dup:3, first in line 1/

=== TEST 19: a user whose keys disagree on its weight
--- config eval
"location / { fairgate_keys $::dir/conflict; }"
--- must_die
--- error_log eval
qr/user "alice" has another weight, priority or limits in keys file \S+\/conflict:2 than in line 1/

=== TEST 20: a line with a field missing
--- config eval
"location / { fairgate_keys $::dir/short; }"
--- must_die
--- error_log eval
qr/expected "SHA256 USER APP WEIGHT \[rpm=N\] \[tpm=N\]" in keys file \S+\/short:1/

=== TEST 21: a user with a quote
--- config eval
"location / { fairgate_keys $::dir/quote; }"
--- must_die
--- error_log eval
qr/invalid user "al"ice" in keys file \S+\/quote:1/

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

=== TEST 24: fairgate_identity without user=
--- config
location / { fairgate_identity app=$http_x_app; }
--- must_die
--- error_log
missing "user=VALUE" in "fairgate_identity"

=== TEST 25: fairgate_identity with an unknown parameter
--- config
location / { fairgate_identity user=$remote_user who=$http_x_who; }
--- must_die
--- error_log
invalid parameter "who=$http_x_who" in "fairgate_identity"

=== TEST 26: fairgate_user_limit of 0
--- config
location / { fairgate_user_limit rpm=0; }
--- must_die
--- error_log
invalid rpm "0" in "fairgate_user_limit"

=== TEST 27: fairgate_user_limit with an unknown parameter
--- config
location / { fairgate_user_limit rps=5; }
--- must_die
--- error_log
invalid parameter "rps=5" in "fairgate_user_limit"

=== TEST 28: fairgate_app_limit of one app twice
--- config
location / { fairgate_app_limit chat rpm=5; fairgate_app_limit chat tpm=9; }
--- must_die
--- error_log
duplicate app "chat" in "fairgate_app_limit"

=== TEST 29: fairgate_app_limit with no limit
--- config
location / { fairgate_app_limit chat; }
--- must_die
--- error_log
invalid number of arguments in "fairgate_app_limit" directive

=== TEST 30: fairgate_app_limit with a bad tpm
--- config
location / { fairgate_app_limit chat tpm=lots; }
--- must_die
--- error_log
invalid tpm "lots" in "fairgate_app_limit"

=== TEST 31: fairgate_throttle_status that is no error
--- config
location / { fairgate_throttle_status 200; }
--- must_die
--- error_log
value must be between 400 and 599

=== TEST 32: fairgate_queue_status that is not a number
--- config
location / { fairgate_queue_status busy; }
--- must_die
--- error_log
"fairgate_queue_status" directive invalid number

=== TEST 33: fairgate_max_tokens negative
--- config
location / { fairgate_max_tokens -1; }
--- must_die
--- error_log
"fairgate_max_tokens" directive invalid number

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
