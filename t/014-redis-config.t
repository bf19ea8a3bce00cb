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


run_tests();


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

=== TEST 3: a bad address
--- http_config
fairgate_zone zone=main:16m;
fairgate_redis 127.0.0.1:99999;
--- must_die
--- error_log
invalid address "127.0.0.1:99999" in "fairgate_redis"

=== TEST 4: an unknown parameter
--- http_config
fairgate_zone zone=main:16m;
fairgate_redis 127.0.0.1:6379 pasword=x;
--- must_die
--- error_log
invalid parameter "pasword=x" in "fairgate_redis"

=== TEST 5: a bad interval
--- http_config
fairgate_zone zone=main:16m;
fairgate_redis 127.0.0.1:6379 interval=1ms;
--- must_die
--- error_log
invalid time "interval=1ms" in "fairgate_redis", expected 10ms to 10m

=== TEST 6: a bad db
--- http_config
fairgate_zone zone=main:16m;
fairgate_redis 127.0.0.1:6379 db=x;
--- must_die
--- error_log
invalid parameter "db=x" in "fairgate_redis"

=== TEST 7: an id with a colon
--- http_config
fairgate_zone zone=main:16m;
fairgate_redis 127.0.0.1:6379 id=a:b;
--- must_die
--- error_log
invalid parameter "id=a:b" in "fairgate_redis"

=== TEST 8: twice
--- http_config
fairgate_zone zone=main:16m;
fairgate_redis 127.0.0.1:6379;
fairgate_redis 127.0.0.1:6380;
--- must_die
--- error_log
"fairgate_redis" directive is duplicate

=== TEST 9: not in a server block
--- http_config
fairgate_zone zone=main:16m;
--- config
fairgate_redis 127.0.0.1:6379;
--- must_die
--- error_log
"fairgate_redis" directive is not allowed here
