#!/usr/bin/env perl

# Locality with fairness through the gateway: two engines of one model
# behind one zone.  route=prefix sends a request to the engine whose prefix
# cache holds its prompt's start (the engine then reuses it: cached tokens
# in $fairgate_cached_tokens, in the status page, in the charge); an engine
# that is down is passed over; route=round-robin alternates; the status
# page and the metrics show each engine's share and each tenant's cached
# tokens and deficit; nginx -t refuses what does not fit together.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use File::Copy ();
use File::Temp ();
use JSON::PP ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test;
use Fairgate::Engine;

plan skip_all => "no $Fairgate::Engine::MODEL"
    unless -f $Fairgate::Engine::MODEL;

my $J = JSON::PP->new->canonical;

my @engines = map {
    Fairgate::Engine->new(backend => 'sim', args => ['--speedup', '1000'])
} 1 .. 2;

$_->start for @engines;

my $model = $engines[0]->model;

my $s = Fairgate::Test::Server->new(
    workers => 2,
    http_config => <<"END",
    fairgate_engine e1 shm=@{[ $engines[0]->shm ]} model=$model id=stories;
    fairgate_engine e2 shm=@{[ $engines[1]->shm ]} model=$model id=stories;
    fairgate_zone zone=near:16m policy=dlpm quantum=4096 route=prefix;
    fairgate_zone zone=rr:16m policy=vtc route=round-robin;
END
    config => <<"END");
    location /v1/ {
        fairgate zone=near queue=100 timeout=30s;
        fairgate_identity user=\$http_x_user;
        add_header x-fairgate-engine \$fairgate_engine always;
        add_header x-cached \$fairgate_cached_tokens always;
        fairgate_engine_pass;
    }
    location /rr/v1/ {
        fairgate zone=rr queue=100 timeout=30s;
        fairgate_identity user=\$http_x_user;
        add_header x-fairgate-engine \$fairgate_engine always;
        fairgate_engine_pass;
    }
    location /status { fairgate_status; }
    location /metrics { fairgate_status format=prometheus; }
END
$s->start or die $s->last_error;


sub status {
    return $J->decode($s->get('/status')->{body});
}

sub zone {
    my ($name) = @_;
    my ($z) = grep { $_->{name} eq $name } @{ status()->{zones} };
    return $z;
}

# both engines attached, as every worker sees them: poll with a deadline
my $deadline = Time::HiRes::time() + 10;
until ((grep { $_->{attached} } @{ status()->{engines} }) == 2) {
    last if Time::HiRes::time() > $deadline;
    Time::HiRes::sleep(0.02);
}
is(scalar(grep { $_->{attached} } @{ status()->{engines} }), 2,
   'both engines attached');

my $models = $J->decode($s->get('/v1/models',
                                headers => ['X-User: alice'])->{body});
is_deeply([map { $_->{id} } @{ $models->{data} }], ['stories'],
          '/v1/models lists the group once');


# a long shared start per group, then a question of each request's own
my %PREFIX = (
    a => 'Once upon a time, there was a little girl named Lily. She loved '
         . 'to play outside in the park with her big red ball. ' x 4,
    b => 'Tom was a big dog who liked to run. One day he saw a cat in the '
         . 'garden and wanted to be friends with it. ' x 4,
);

sub complete {
    my ($uri, $user, $group, $n) = @_;
    my $r = $s->post($uri,
        $J->encode({ model => 'stories', max_tokens => 4,
                     prompt => "$PREFIX{$group} Question $n: what next?" }),
        headers => ['Content-Type: application/json', "X-User: $user"]);
    my $j = eval { $J->decode($r->{body}) } // {};
    return { status => $r->{status}, json => $j,
             engine => $r->{headers}{'x-fairgate-engine'} // '',
             cached => $r->{headers}{'x-cached'} // '' };
}


subtest 'route=prefix: a group sticks to the engine that holds it' => sub {
    my $first = complete('/v1/completions', 'alice', 'a', 0);
    is($first->{status}, 200, 'served');
    like($first->{engine}, qr/^e[12]$/, "by an engine ($first->{engine})");
    is($first->{cached}, '0', 'nothing cached at first');

    my (%by, $cached, $ok);
    for my $n (1 .. 6) {
        my $r = complete('/v1/completions', $n % 2 ? 'alice' : 'bob', 'a',
                         $n);
        $ok++ if $r->{status} == 200;
        $by{ $r->{engine} }++;
        $cached++ if $r->{cached} =~ /^\d+$/ && $r->{cached} >= 64;
    }

    is($ok, 6, 'all served');
    is_deeply(\%by, { $first->{engine} => 6 },
              'every later request of the group went to the same engine');
    is($cached, 6, 'each found its prefix cached there (64 tokens or more)');

    my $z = zone('near');
    is($z->{policy}, 'dlpm', 'status: the policy');
    is($z->{route}, 'prefix', 'status: the route');
    is($z->{quantum}, 4096, 'status: the quantum');

    my %ze = map { $_->{name} => $_ } @{ $z->{engines} };
    is_deeply([sort keys %ze], ['e1', 'e2'], 'status: both engines');
    is($ze{ $first->{engine} }{dispatched}, 7, 'status: its dispatches');
    cmp_ok($ze{ $first->{engine} }{cached_tokens}, '>=', 6 * 64,
           'status: the tokens it reused');
    cmp_ok($ze{ $first->{engine} }{matched_tokens}, '>=', 6 * 64,
           'status: the zone saw them cached when it routed');
    is($z->{cached_tokens}, $ze{ $first->{engine} }{cached_tokens},
       'status: the zone total');

    my %users = map { $_->{name} => $_ } @{ $z->{users} };
    cmp_ok($users{alice}{cached_tokens}, '>', 0, 'status: a user\'s cached');
    ok(defined $users{alice}{deficit}, 'status: a user\'s deficit');
    cmp_ok($users{alice}{service}, '<',
           $users{alice}{tokens_in} + 2 * $users{alice}{tokens_out},
           'dlpm charged less than the whole prompt');

    my $m = $s->get('/metrics')->{body};
    like($m, qr/^fairgate_engine_prompt_tokens_total\{zone="near",engine="$first->{engine}",kind="cached"\} [1-9]\d*$/m,
         'metrics: an engine\'s cached tokens');
    like($m, qr/^fairgate_user_cached_tokens_total\{zone="near",user="alice"\} [1-9]\d*$/m,
         'metrics: a user\'s cached tokens');
    like($m, qr/^fairgate_user_deficit\{zone="near",user="alice"\} -?\d/m,
         'metrics: a user\'s deficit');

    # the engine's own cache: what it says, whichever zone fed it
    my ($hit) = $m =~ /^fairgate_engine_prefix_cache_tokens_total\{engine="$first->{engine}",kind="hit"\} (\d+)$/m;
    my ($query) = $m =~ /^fairgate_engine_prefix_cache_tokens_total\{engine="$first->{engine}",kind="query"\} (\d+)$/m;
    cmp_ok($hit // 0, '>=', $ze{ $first->{engine} }{cached_tokens},
           'metrics: the engine\'s cache hits, at least the zone\'s');
    cmp_ok($query // 0, '>', $hit // 0, 'metrics: its lookups, more');
    like($m, qr/^fairgate_engine_prefix_cache_blocks\{engine="$first->{engine}"\} [1-9]\d*$/m,
         'metrics: the blocks it holds');
    like($m, qr/^# TYPE fairgate_engine_prefix_cache_evictions_total counter\nfairgate_engine_prefix_cache_evictions_total\{engine="e1"\} \d+\nfairgate_engine_prefix_cache_evictions_total\{engine="e2"\} \d+$/m,
         'metrics: both engines\' evictions, one family');
};


subtest 'route=round-robin alternates' => sub {
    my @seen = map {
        complete('/rr/v1/completions', 'carol', 'b', $_)->{engine}
    } 1 .. 4;

    like("@seen", qr/^e[12] e[12] e[12] e[12]$/, "served by both (@seen)");
    isnt($seen[0], $seen[1], 'one, then the other');
    is($seen[0], $seen[2], '... and back');
};


subtest 'an engine down is passed over' => sub {
    my $r = complete('/v1/completions', 'dave', 'b', 100);
    is($r->{status}, 200, 'served');

    my ($up) = grep { $_ ne $r->{engine} } qw(e1 e2);
    my ($down) = $r->{engine} eq 'e1' ? $engines[0] : $engines[1];
    $down->stop;

    # until the workers notice (dead_after), a request may still fail
    my $deadline = Time::HiRes::time() + 10;
    until ((grep { !$_->{attached} } @{ status()->{engines} }) >= 1) {
        last if Time::HiRes::time() > $deadline;
        Time::HiRes::sleep(0.05);
    }

    my %by;
    for my $n (101 .. 104) {
        my $x = complete('/v1/completions', 'dave', 'b', $n);
        $by{ $x->{status} == 200 ? $x->{engine} : "status $x->{status}" }++;
    }

    is_deeply(\%by, { $up => 4 },
              "the group's requests go to the engine still up ($up)");
    $down->start;
};


# nginx -t: what does not fit together
my $dir = File::Temp::tempdir('fairgate-locality-XXXXXX', TMPDIR => 1,
                              CLEANUP => 1);
File::Copy::copy($model, "$dir/copy.gguf") or die "copy: $!";

my @bad = (
    [ 'fairgate_zone zone=z:1m policy=vtc quantum=10;',
      qr/"quantum=" needs policy "dlpm"/ ],
    [ 'fairgate_zone zone=z:1m policy=dlpm quantum=0;',
      qr/invalid quantum "0"/ ],
    [ 'fairgate_zone zone=z:1m policy=vtc window=8;',
      qr/"window=" needs policy "lpm" or "dlpm"/ ],
    [ 'fairgate_zone zone=z:1m route=nearest;',
      qr/invalid route "nearest"/ ],
    [ "fairgate_engine x1 shm=/x1 model=$model id=same;\n"
      . "    fairgate_engine x2 shm=/x2 model=$dir/copy.gguf id=same;",
      qr/model id "same" is served by "x1" from another file already/ ],
);

for my $case (@bad) {
    my ($conf, $re) = @$case;
    my $t = Fairgate::Test::Server->new(http_config => "    $conf\n",
                                        config => '');
    $t->write_conf;
    my ($rc, $out) = $t->test_config;
    isnt($rc, 0, "nginx -t fails: $conf");
    like($out, $re, '... saying why');
}

is($s->stop, 0, 'nginx exits cleanly');
$_->stop for @engines;

done_testing();
