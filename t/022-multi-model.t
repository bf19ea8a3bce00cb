#!/usr/bin/env perl

# Several models in one engine process (fairgate-engine --model A --shm
# /a --model B --shm /b --mux muxserve, cpu backend): stories260K and a
# generated model of another shape, one fairgate_engine line a segment,
# one zone.  /v1/models lists both, a chat request to each is answered
# with its model's name, an unknown model gets the OpenAI 404, the status
# shows both engines' loads with their quotas (kv_blocks) within the
# pool, and two tenants on the two models are both served through the
# zone.  Under spatial, a request over its model's fixed slice is
# refused at once.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use File::Temp ();
use JSON::PP ();
use Test::More;

use Fairgate::Test qw(gateway);
use Fairgate::Engine qw(wait_attached);
use Fairgate::Load qw(closed_loop);

plan skip_all => "no $Fairgate::Engine::MODEL"
    unless -f $Fairgate::Engine::MODEL;

my $J = JSON::PP->new->canonical;
my $ROOT = "$FindBin::Bin/..";
my $POOL = 3000;

# the second model: 3 layers, 2 KV heads (12 head blocks a token block,
# stories260K's 40), stories260K's tokenizer
my $dir = File::Temp::tempdir('fairgate-mux-XXXXXX', TMPDIR => 1,
                              CLEANUP => 1);
my $small = "$dir/small.gguf";
system("$Fairgate::Test::BUILD/fairgate-gguf-gen", '-o', $small, '--layers', '3',
       '--heads', '4', '--kv-heads', '2', '--embd', '48', '--ff', '128',
       '--tokenizer', $Fairgate::Engine::MODEL, '--seed', '7') == 0
    or die "fairgate-gguf-gen failed\n";
chmod 0644, $small;
chmod 0755, $dir;

my $shm_b = "/fg-test-$$-mux-b";
my $e = Fairgate::Engine->new(
    backend => 'cpu',
    args => ['--model', $small, '--shm', $shm_b, '--mux', 'muxserve',
             '--kv-head-blocks', $POOL, '--model-rate', '2',
             '--model-rate', '1', '--threads', '1']);
$e->start;

my $s = gateway(engines => [['a', $e, 'id=stories'],
                            ['b', { shm => $shm_b, model => $small },
                             'id=small']],
                workers => 2, zone => 'policy=vtc', user => '$http_x_user');


# both segments attached, their engine's status read
sub attached { wait_attached($s, 2) }

attached();
is(scalar(grep { $_->{attached} } values %{ $s->engines }), 2,
   'both segments of the one engine attached');

my $models = $J->decode($s->get('/v1/models', headers => ['X-User: u'])
                         ->{body});
is_deeply([sort map { $_->{id} } @{ $models->{data} }], ['small', 'stories'],
          '/v1/models lists both models');


sub chat {
    my ($model, $user) = @_;
    my $r = $s->post('/v1/chat/completions',
                     $J->encode({ model => $model, max_tokens => 6,
                                  messages => [{ role => 'user',
                                                 content => 'Hello' }] }),
                     headers => ['Content-Type: application/json',
                                 "X-User: $user"]);
    return ($r->{status}, eval { $J->decode($r->{body}) } // {});
}

for my $model (qw(stories small)) {
    my ($status, $j) = chat($model, 'u');
    ok($status == 200 && $j->{model} eq $model
       && $j->{usage}{completion_tokens} > 0,
       "$model: a chat request answered by its model") or diag($status);
}

my ($status, $j) = chat('nonesuch', 'u');
is($status, 404, 'an unknown model: 404');
is($j->{error}{code}, 'model_not_found', 'with the OpenAI error');

# the quotas: each model's in its token blocks, together within the pool
my $en = $s->engines;
my ($qa, $qb) = ($en->{stories}{load}{kv_blocks}, $en->{small}{load}{kv_blocks});
ok($qa > 0 && $qb > 0 && 40 * $qa + 12 * $qb <= $POOL,
   "quotas $qa x 40 + $qb x 12 head blocks within the pool of $POOL");
ok($qa < $POOL / 40 && $qb < $POOL / 12,
   'each a share of the pool, not the whole');
like($e->log_text,
     qr/2 models on the cpu backend, mux muxserve.*, one arena of \d+ MiB/,
     'the engine says it serves two models from one arena of head blocks');

# two tenants, one on each model, through the one zone
my @tenants = map {
    my ($name, $model, $n) = @$_;
    { name => $name, concurrency => $n,
      request => { method => 'POST', uri => '/v1/chat/completions',
                   body => $J->encode({ model => $model, max_tokens => 8,
                                        messages => [{ role => 'user',
                                                       content => 'Hi' }] }),
                   headers => ["X-User: $name",
                               'Content-Type: application/json'] } }
} (['x', 'stories', 4], ['y', 'small', 4]);

my @done = closed_loop(port => $s->port, total => 40, timeout => 60,
                       tenants => \@tenants);
my @bad = grep { $_->{status} != 200 } @done;
is(scalar @bad, 0, 'every answer is 200')
    or diag(join "\n", map { "$_->{status} $_->{body}" } @bad[0 .. 2]);

my %n;
$n{$_->{tenant}}++ for @done;
ok(($n{x} // 0) >= 8 && ($n{y} // 0) >= 8,
   "both tenants served (x on stories $n{x}, y on small $n{y})");

$en = $s->engines;
ok($en->{stories}{load}{generated} > 0 && $en->{small}{load}{generated} > 0,
   'both models generated');

is($s->stop, 0, 'nginx exits cleanly');
unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');
$e->stop;
ok(!-e "/dev/shm$shm_b", "the engine removed the second segment");

# spatial: a model's slice is fixed, so a request over it is refused at
# once (a 400, as a request over one engine's cache), not kept waiting
# for a slot in the pool: 520 head blocks by size give stories 400 (10
# token blocks: 160 tokens) of the 13 the pool holds of it (208), and the
# request asks for about 180
$e = Fairgate::Engine->new(
    backend => 'cpu', shm => $e->shm,
    args => ['--model', $small, '--shm', $shm_b, '--mux', 'spatial',
             '--kv-head-blocks', 520, '--threads', '1']);
$e->start;
$s->start or die $s->last_error;
ok(attached(), 'spatial: both segments attached');

my $r = $s->post('/v1/chat/completions',
                 $J->encode({ model => 'stories', max_tokens => 170,
                              messages => [{ role => 'user',
                                             content => 'Hello' }] }),
                 headers => ['Content-Type: application/json',
                             'X-User: u']);
is($r->{status}, 400, 'spatial: a request over its model\'s slice: 400');
is((eval { $J->decode($r->{body}) } // {})->{error}{code},
   'context_length_exceeded', 'with the OpenAI error');

($status, $j) = chat('stories', 'u');
is($status, 200, 'a request within the slice is served');
like($e->log_text, qr/mux spatial on 2 lanes.*\n.*quota 10 token blocks/,
     'the engine says its slices');

is($s->stop, 0, 'nginx exits cleanly');
$e->stop;

done_testing();
