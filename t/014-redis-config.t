#!/usr/bin/env perl

# fairgate_redis: nginx -t rejects bad arguments with messages naming the
# directive and the value; a good one passes, and without a Redis to reach
# the gateway serves anyway, saying "down" (no redis-server needed).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Test::More;

use Fairgate::Test;


my $Z = "fairgate_zone zone=main:16m;\n";

run_blocks(blocks());

# nginx -t refuses each: the directive's arguments, what it says
run_refused(
    map({ ["TEST $_->[0]", "${Z}fairgate_redis $_->[1];\n", '', $_->[2]] }
        ['3: a bad address', '127.0.0.1:99999',
         'invalid address "127.0.0.1:99999" in "fairgate_redis"'],
        ['4: an unknown parameter', '127.0.0.1:6379 pasword=x',
         'invalid parameter "pasword=x" in "fairgate_redis"'],
        ['5: a bad interval', '127.0.0.1:6379 interval=1ms',
         'invalid time "interval=1ms" in "fairgate_redis", expected 10ms '
         . 'to 10m'],
        ['6: a bad db', '127.0.0.1:6379 db=x',
         'invalid parameter "db=x" in "fairgate_redis"'],
        ['7: an id with a colon', '127.0.0.1:6379 id=a:b',
         'invalid parameter "id=a:b" in "fairgate_redis"'],
        ['8: twice', "127.0.0.1:6379;\nfairgate_redis 127.0.0.1:6380",
         '"fairgate_redis" directive is duplicate']),
    ['TEST 9: not in a server block', $Z, "fairgate_redis 127.0.0.1:6379;\n",
     '"fairgate_redis" directive is not allowed here']);

done_testing();


__DATA__

=== TEST 1: a full fairgate_redis passes; no Redis there: status says so
--- http_config
fairgate_zone zone=main:16m;
fairgate_redis 127.0.0.1:1 password=secret db=2 prefix=gw: interval=50ms
               timeout=100ms id=edge-1;
--- config
location /status { fairgate_status; }
location /metrics { fairgate_status format=prometheus; }
--- request
GET /status
--- response_body_like
"address": "127.0.0.1:1",[\s\S]*"state": "(?:connecting|down)"
--- error_code: 200

=== TEST 2: a unix socket
--- http_config
fairgate_zone zone=main:16m;
fairgate_redis unix:/nonexistent/redis.sock;
--- config
location /status { fairgate_status; }
--- request
GET /status
--- response_body_like
"interval_ms": 1000,
