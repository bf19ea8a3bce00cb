#!/usr/bin/env perl

# Keys managed live in Redis (fairgate_keys redis) through the admin API
# (fairgate_admin), two gateways on one redis-server: a key created on
# one is shown once and works on both; Redis holds only its SHA-256; list
# (paginated), get, patch, revoke; a key revoked on one gateway is refused
# by the other within 1 s, without a reload; malformed admin requests get
# 400 naming the field, a wrong admin key 401; the models a key may use
# come from Redis too; Redis down, the keys known keep working and an
# unknown key gets 503 at once, not a hang (Redis hung: after the
# timeout); a cache smaller than the keys in use keeps the ones used last.

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

my $dir = File::Temp::tempdir('fairgate-admin-XXXXXX', TMPDIR => 1,
                              CLEANUP => 1);
chmod 0755, $dir;

my $redis = Fairgate::Redis->new(dir => $dir);
my $rport = $redis->port;
my $admin = 'admin-secret-1';
my $admin_hash = sha256_hex($admin);

$redis->start or BAIL_OUT("redis-server did not start on port $rport");


sub gateway {
    my ($id) = @_;

    my $s = Fairgate::Test::Server->new(
        workers => 2,
        http_config => <<"END",
    fairgate_zone zone=llm:16m inflight=8;
    fairgate_redis 127.0.0.1:$rport timeout=500ms id=$id prefix=t152:
                   interval=10m;
END
        config => <<"END");
    location /v1/ {
        fairgate zone=llm queue=100 timeout=10s;
        fairgate_keys redis cache=1m;
        add_header X-Key-Id \$fairgate_key_id always;
        add_header X-User \$fairgate_user always;
        proxy_pass http://${\ $up->addr };
    }
    location /admin/ {
        fairgate_admin $admin_hash;
    }
END

    $s->start or die $s->last_error;
    return $s;
}

my $g1 = gateway('gw1');
my $g2 = gateway('gw2');


sub cli { my $out = `redis-cli -p $rport @_ 2>&1`; return $out }

sub api {
    my ($s, $method, $uri, $body, $key) = @_;
    my $r = $s->request({ method => $method, uri => $uri,
                          (defined $body ? (body => ref $body
                                                    ? $json->encode($body)
                                                    : $body) : ()) },
                        headers => [ 'Authorization: Bearer '
                                     . ($key // $admin),
                                     'Content-Type: application/json' ]);
    $r->{json} = eval { $json->decode($r->{body} // '') };
    return $r;
}

sub chat {
    my ($s, $key, $model) = @_;
    my $body = $json->encode({ model => $model // 'gpt-4o', max_tokens => 4,
                               messages => [{ role => 'user',
                                              content => 'hi' }] });
    return $s->post('/v1/chat/completions', $body,
                    headers => ["Authorization: Bearer $key",
                                'Content-Type: application/json']);
}

sub error_of { ($_[0]{json} // {})->{error} // {} }


my ($key, $id);

subtest 'a key created: shown once, stored by its SHA-256 only' => sub {
    my $r = api($g1, 'POST', '/admin/keys',
                { user => 'alice', app => 'chat', weight => 2, rpm => 100,
                  models => ['gpt-4o', 'llama3'],
                  quota => { month => { tokens => 1000000 } },
                  budget => { month => 50 } });
    is($r->{status}, 201, '201 Created') or diag($r->{body});

    $key = $r->{json}{key} // '';
    $id = $r->{json}{id} // '';
    like($key, qr/^sk-fg-[0-9a-f]{48}$/, 'the key, once');
    is($id, substr(sha256_hex($key), 0, 16),
       "its id: its digest's first 16 hex digits");
    is($r->{json}{user}, 'alice', 'user');
    is($r->{json}{app}, 'chat', 'app');
    is($r->{json}{weight}, 2, 'weight');
    is($r->{json}{rpm}, 100, 'rpm');
    is_deeply($r->{json}{models}, ['gpt-4o', 'llama3'], 'models');
    is_deeply($r->{json}{quota}, { month => { tokens => 1000000 } },
              'quota, kept as given');
    is($r->{json}{revoked}, undef, 'not revoked');
    like($g1->error_log, qr/\[notice\].*fairgate_admin: key \Q$id\E created/,
         'the error log says so, with its id');
    unlike($g1->error_log, qr/\Q$key\E/, 'and not the key');

    my $hash = 't152:key:' . sha256_hex($key);
    like(cli('HGET', $hash, 'user'), qr/^alice$/m,
         'Redis holds it under its SHA-256');

    # nothing in Redis holds the secret
    my $all = '';
    for my $k (split /\n/, cli('--scan', '--pattern', "'t152:*'")) {
        my $type = cli('TYPE', $k);
        $all .= $type =~ /hash/ ? cli('HGETALL', $k)
              : $type =~ /zset/ ? cli('ZRANGE', $k, 0, -1)
              : $type =~ /stream/ ? cli('XRANGE', $k, '-', '+') : '';
        $all .= "$k\n";
    }
    unlike($all, qr/\Q$key\E/, 'the key itself is nowhere in Redis');
    unlike($all, qr/\Q${\ substr($key, 6)}\E/, 'nor its random part');

    my $g = api($g2, 'GET', "/admin/keys/$id");
    is($g->{status}, 200, 'got on the other gateway');
    ok(!exists $g->{json}{key}, 'the key is not shown again');
    is($g->{json}{id}, $id, 'same id');
};

subtest 'the key works on both gateways, with its models' => sub {
    # a GET first: its lookup in Redis, then on to the upstream unqueued
    my $m = $g2->get('/v1/models',
                     headers => ["Authorization: Bearer $key"]);
    is($m->{status}, 200, 'GET /v1/models, the key looked up: 200');
    like($m->{body}, qr/"object":"list"/, "the upstream's model list");

    my $c = chat($g1, $key);
    is($c->{status}, 200, 'gateway 1: 200');
    is($c->{headers}{'x-key-id'}, $id, '$fairgate_key_id: its id');
    is($c->{headers}{'x-user'}, 'alice', '$fairgate_user: its user');
    is(chat($g2, $key)->{status}, 200, 'gateway 2: 200');
    $c = chat($g2, $key);
    is($c->{status}, 200, 'again, from the cache');
    is($c->{headers}{'x-key-id'}, $id, 'the same id from the cache');
    my $r = chat($g1, $key, 'gpt-3.5');
    is($r->{status}, 404, 'a model not in its list: 404');
    like($r->{body}, qr/model_not_found/, 'model_not_found');
    is(chat($g1, 'sk-fg-' . ('0' x 48))->{status}, 401, 'an unknown key: 401');
    is(chat($g1, 'sk-fg-' . ('0' x 48))->{status}, 401, 'again: 401');

    # a key's name taken by something else: Redis refuses, the log says
    cli('SET', 't152:key:' . sha256_hex('sk-odd'), 'x');
    is(chat($g1, 'sk-odd')->{status}, 503, 'a lookup Redis refuses: 503');
    like($g1->error_log, qr/fairgate_keys: Redis refused a key's lookup: WRONGTYPE/,
         'the error log says why');
};

subtest 'wrong or missing admin key: 401' => sub {
    my $r = api($g1, 'GET', '/admin/keys', undef, 'not-the-admin');
    is($r->{status}, 401, 'wrong admin key');
    is(error_of($r)->{code}, 'invalid_api_key', "OpenAI's shape");
    is(error_of($r)->{type}, 'invalid_request_error', 'its type');

    $r = api($g1, 'POST', '/admin/keys', { user => 'x' }, $key);
    is($r->{status}, 401, 'a user key is no admin key');

    my $n = $g1->get('/admin/keys');
    is($n->{status}, 401, 'no key at all');
};

subtest 'malformed admin requests: 400 naming the field' => sub {
    my @cases = (
        [{ app => 'x' }, 'user', qr/Missing required parameter: 'user'/],
        [{ user => 'a b' }, 'user', qr/Invalid 'user'/],
        [{ user => 'a', weight => 0 }, 'weight', qr/Invalid 'weight'/],
        [{ user => 'a', weight => 'x' }, 'weight', qr/Invalid 'weight'/],
        [{ user => 'a', rpm => -1 }, 'rpm', qr/Invalid 'rpm'/],
        [{ user => 'a', rpm => 1.5 }, 'rpm', qr/Invalid 'rpm'/],
        [{ user => 'a', models => 'gpt-4o' }, 'models', qr/Invalid 'models'/],
        [{ user => 'a', models => ['a,b'] }, 'models', qr/Invalid 'models'/],
        [{ user => 'a', quota => 5 }, 'quota', qr/Invalid 'quota'/],
        [{ user => 'a', budget => { x => 'y' x 5000 } }, 'budget',
         qr/Invalid 'budget': expected an object of at most 4096 bytes/],
        [{ user => 'a', colour => 'red' }, 'colour',
         qr/Unrecognized request argument supplied: colour/],
    );

    for my $c (@cases) {
        my ($body, $param, $msg) = @$c;
        my $r = api($g1, 'POST', '/admin/keys', $body);
        is($r->{status}, 400, "400 for " . $json->encode($body));
        is(error_of($r)->{param}, $param, "param $param");
        like(error_of($r)->{message} // '', $msg, 'says why');
    }

    my $r = api($g1, 'POST', '/admin/keys', '{"user": ');
    is($r->{status}, 400, 'JSON that does not parse: 400');
    is(error_of($r)->{type}, 'invalid_request_error', "OpenAI's shape");

    $r = api($g1, 'PATCH', "/admin/keys/$id", { weight => -2 });
    is($r->{status}, 400, 'a bad PATCH: 400');
    is(error_of($r)->{param}, 'weight', 'naming weight');

    is(api($g1, 'GET', '/admin/keys?limit=0')->{status}, 400,
       'limit=0: 400');
    is(api($g1, 'GET', '/admin/keys/0123456789abcdef')->{status}, 404,
       'no such id: 404');
    is(api($g1, 'GET', '/admin/nothing')->{status}, 404, 'unknown path: 404');
    is(api($g1, 'PUT', "/admin/keys/$id", {})->{status}, 405,
       'PUT: 405');
};

subtest 'list, paginated by id' => sub {
    my @ids = ($id);
    for my $u (qw(bob carol dave)) {
        my $r = api($g1, 'POST', '/admin/keys', { user => $u });
        is($r->{status}, 201, "$u created");
        push @ids, $r->{json}{id};
    }
    @ids = sort @ids;

    my $p1 = api($g2, 'GET', '/admin/keys?limit=3');
    is($p1->{status}, 200, 'a page');
    is($p1->{json}{object}, 'list', 'a list');
    is_deeply([map { $_->{id} } @{ $p1->{json}{data} }], [@ids[0 .. 2]],
              'the first 3, by id');
    ok($p1->{json}{has_more}, 'has_more');
    ok(!grep({ exists $_->{key} } @{ $p1->{json}{data} }), 'no secrets');

    my $p2 = api($g2, 'GET', "/admin/keys?limit=3&after=$ids[2]");
    is_deeply([map { $_->{id} } @{ $p2->{json}{data} }], [$ids[3]],
              "the rest after the last id") or diag($p2->{body});
    ok(!$p2->{json}{has_more}, 'no more');
};

subtest "a key's limits from Redis hold" => sub {
    my $r = api($g1, 'POST', '/admin/keys', { user => 'lim', rpm => 2 });
    my $k = $r->{json}{key} // '';
    my %st;
    $st{ chat($g1, $k)->{status} }++ for 1 .. 3;
    is_deeply(\%st, { 200 => 2, 429 => 1 }, 'rpm 2: the third gets 429');
};

subtest 'patch: a key changed live on every gateway' => sub {
    my $r = api($g1, 'PATCH', "/admin/keys/$id",
                { models => ['gpt-3.5'], rpm => 5 });
    is($r->{status}, 200, 'patched');
    is($r->{json}{rpm}, 5, 'rpm 5');
    is_deeply($r->{json}{models}, ['gpt-3.5'], 'its models');
    is($r->{json}{user}, 'alice', 'the rest as it was');
    is(chat($g1, $key, 'gpt-3.5')->{status}, 200,
       'the gateway that changed it sees the change at once');

    ok(wait_for(2, sub { chat($g2, $key, 'gpt-3.5')->{status} == 200 }),
       'the other gateway sees the new models');
    is(chat($g2, $key, 'gpt-4o')->{status}, 404, 'and not the old');
};

subtest 'revoked on one gateway, refused by the other within 1 s' => sub {
    is(chat($g2, $key, 'gpt-3.5')->{status}, 200, 'in use on gateway 2');
    is(chat($g1, $key, 'gpt-3.5')->{status}, 200, 'and on gateway 1');

    my $r = api($g1, 'DELETE', "/admin/keys/$id");
    my $t0 = Time::HiRes::time();
    is($r->{status}, 200, 'revoked through gateway 1');
    ok($r->{json}{revoked}, 'revoked says when');
    like($g1->error_log, qr/fairgate_admin: key \Q$id\E revoked/,
         'the error log says so');

    is(chat($g1, $key, 'gpt-3.5')->{status}, 401,
       'gateway 1 refuses it at once');

    my $refused = wait_for(2, sub {
        chat($g2, $key, 'gpt-3.5')->{status} == 401
            ? Time::HiRes::time() : 0 });
    ok($refused, 'gateway 2 refuses it') or return;
    cmp_ok($refused - $t0, '<', 1.0, 'within 1 s of the revocation');
    diag(sprintf 'refused by gateway 2 after %.0f ms',
         1000 * ($refused - $t0));

    my $again = api($g2, 'DELETE', "/admin/keys/$id");
    is($again->{json}{revoked}, $r->{json}{revoked},
       'revoking again keeps the first time');
    is(api($g2, 'GET', "/admin/keys/$id")->{json}{revoked},
       $r->{json}{revoked}, 'get says it is revoked');
};

subtest 'a reload: keys go on working, revocations still arrive' => sub {
    my $r = api($g1, 'POST', '/admin/keys', { user => 'ivy' });
    my ($k, $kid) = ($r->{json}{key} // '', $r->{json}{id} // '');
    is(chat($g2, $k)->{status}, 200, 'ivy works on gateway 2');

    ok($g2->reload, 'gateway 2 reloaded') or diag($g2->last_error);
    is(chat($g2, $k)->{status}, 200, 'ivy still works');

    is(api($g1, 'DELETE', "/admin/keys/$kid")->{status}, 200,
       'ivy revoked through gateway 1');
    ok(wait_for(1, sub { chat($g2, $k)->{status} == 401 }),
       "gateway 2's new workers refuse it within 1 s");
};

subtest 'Redis down: known keys work, unknown ones get 503 at once' => sub {
    my $r = api($g1, 'POST', '/admin/keys', { user => 'erin' });
    my $known = $r->{json}{key};
    my $r2 = api($g1, 'POST', '/admin/keys', { user => 'frank' });
    my $unknown = $r2->{json}{key};

    # known on both gateways: each worker's requests may land anywhere
    for my $g ($g1, $g2) {
        is(chat($g, $known)->{status}, 200, 'erin known') for 1 .. 2;
    }

    $redis->kill;

    is(chat($g1, $known)->{status}, 200, 'a known key still works');
    is(chat($g2, $known)->{status}, 200, 'on both gateways');

    my $t0 = Time::HiRes::time();
    my $u = chat($g1, $unknown);
    my $took = Time::HiRes::time() - $t0;
    is($u->{status}, 503, 'a key not known yet: 503');
    my $e = eval { $json->decode($u->{body}) } // {};
    is($e->{error}{code}, 'service_unavailable', "in OpenAI's shape");
    cmp_ok($took, '<', 2, 'at once, not a hang');

    my $a = api($g1, 'GET', '/admin/keys');
    is($a->{status}, 503, 'the admin API: 503');

    $redis->start or BAIL_OUT('redis-server did not start again');

    # the restarted Redis is empty: frank is unknown there, so 401
    ok(wait_for(10, sub { chat($g1, $unknown)->{status} == 401 }),
       'Redis back (empty): the gateway asks it again');

    my $n = api($g2, 'POST', '/admin/keys', { user => 'gina' });
    is($n->{status}, 201, 'a key created after Redis came back');
    is(chat($g1, $n->{json}{key} // '')->{status}, 200, 'and it works');
};

subtest 'Redis hung: an unknown key gets 503 within the timeout' => sub {
    my $r = api($g1, 'POST', '/admin/keys', { user => 'hal' });
    my $new = $r->{json}{key} // '';

    kill 'STOP', $redis->pid;

    my $t0 = Time::HiRes::time();
    my $u = chat($g2, $new);
    my $took = Time::HiRes::time() - $t0;
    is($u->{status}, 503, 'a key not known yet: 503');
    cmp_ok($took, '<', 2, 'after the timeout (500 ms), not a hang');

    kill 'CONT', $redis->pid;

    ok(wait_for(10, sub { chat($g2, $new)->{status} == 200 }),
       'Redis answering again: the key works');
};

subtest 'a cache smaller than the keys in use: the least used leave' => sub {
    # 64k holds some 150 keys; 400 are used, each looked up again once out
    my $small = Fairgate::Test::Server->new(
        http_config => <<"END",
    fairgate_zone zone=llm:16m inflight=8;
    fairgate_redis 127.0.0.1:$rport timeout=500ms id=gw3 prefix=t152:
                   interval=10m;
END
        config => <<"END");
    location /v1/ {
        fairgate zone=llm queue=100 timeout=10s;
        fairgate_keys redis cache=64k;
        proxy_pass http://${\ $up->addr };
    }
END
    $small->start or die $small->last_error;

    open my $cli, '|-', "redis-cli -p $rport > /dev/null" or die;
    for my $i (1 .. 400) {
        my $h = sha256_hex("sk-many-$i");
        print {$cli} "HSET t152:key:$h user many$i id ", substr($h, 0, 16),
                     " revoked 0\n";
    }
    close $cli;

    # lookups in Redis, counted by Redis (the zones' sync rounds read
    # hashes too, but only at a gateway's start here: interval=10m)
    my $lookups = sub {
        cli('INFO', 'commandstats') =~ /^cmdstat_hgetall:calls=(\d+)/m
            ? $1 : 0;
    };

    my %st;
    $st{ chat($small, "sk-many-$_")->{status} }++ for 1 .. 400;
    is_deeply(\%st, { 200 => 400 }, '400 keys work');

    my $n = $lookups->();
    $st{ chat($small, "sk-many-$_")->{status} }++ for 351 .. 400;
    is($lookups->() - $n, 0, 'the 50 used last are held: no lookup');

    $n = $lookups->();
    $st{ chat($small, "sk-many-$_")->{status} }++ for 1 .. 50;
    is($lookups->() - $n, 50, 'the 50 used first had left: looked up');
    is_deeply(\%st, { 200 => 500 }, 'and every one works');
    $small->stop;
};

$g1->stop;
$g2->stop;

Fairgate::Test::run_refused(
    ['fairgate_keys redis without fairgate_redis', '',
     "location / { fairgate_keys redis; }\n",
     qr/"fairgate_keys" directive needs "fairgate_redis" before it, in http in \S+nginx\.conf:\d+/],
    ['fairgate_admin with a bad hash',
     "fairgate_redis 127.0.0.1:1;\n", "location / { fairgate_admin abc; }\n",
     qr/invalid admin key hash "abc", expected 64 hex digits \(SHA-256 of the admin key\) in \S+nginx\.conf:\d+/],
    ['fairgate_keys redis with a bad cache',
     "fairgate_redis 127.0.0.1:1;\n",
     "location / { fairgate_keys redis cache=1k; }\n",
     qr/invalid cache size "cache=1k", 64k at least/],
);

done_testing;
