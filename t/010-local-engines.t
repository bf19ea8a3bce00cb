#!/usr/bin/env perl

# Several engines behind one gateway (one per model, as one per GPU would
# be): /v1/models lists each, a request goes to the engine that serves the
# model it names, and an engine pinned by name takes its own requests only.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use JSON::PP ();
use Test::More;

use Fairgate::Test qw(:DEFAULT gateway);
use Fairgate::Engine qw(wait_attached);

plan skip_all => "no $Fairgate::Engine::MODEL"
    unless -f $Fairgate::Engine::MODEL;

my $J = JSON::PP->new->canonical;

my %e = map {
    $_ => Fairgate::Engine->new(backend => 'sim',
                                args => ['--speedup', '1000'])
} qw(alpha beta);

$_->start for values %e;

my $s = gateway(engines => [['a', $e{alpha}, 'id=alpha'],
                            ['b', $e{beta}, 'id=beta']],
                workers => 2, locations => <<"END");
    location /pinned/v1/ {
        fairgate_engine_pass b;
    }
END


sub submitted {
    my ($model) = @_;
    return $s->engines->{$model}{load}{submitted} // -1;
}


# both engines attached in the worker that answers
wait_attached($s, 2);
is(scalar(grep { $_->{attached} } values %{ $s->engines }), 2,
   'both engines attached');

my $models = $J->decode($s->get('/v1/models')->{body});
is_deeply([sort map { $_->{id} } @{ $models->{data} }], ['alpha', 'beta'],
          '/v1/models lists both models');


sub complete {
    my ($uri, $model, $n) = @_;
    my $r = $s->post($uri,
                     $J->encode({ model => $model, prompt => 'Hello',
                                  max_tokens => $n, ignore_eos => JSON::PP::true }),
                     headers => ['Content-Type: application/json']);
    my $j = eval { $J->decode($r->{body}) } // {};
    return ($r->{status}, $j);
}


# one worker's view is enough: every worker submits to the same segment
for my $model (qw(alpha beta)) {
    my ($other) = grep { $_ ne $model } qw(alpha beta);
    my %before = (alpha => submitted('alpha'), beta => submitted('beta'));

    my $ok = 0;
    for (1 .. 3) {
        my ($status, $j) = complete('/v1/completions', $model, 4);
        $ok++ if $status == 200 && $j->{model} eq $model
                 && $j->{usage}{completion_tokens} == 4;
    }
    is($ok, 3, "$model: three completions, each naming its model");

    is(submitted($model) - $before{$model}, 3,
       "$model: its engine took the three");
    is(submitted($other), $before{$other}, "$model: the other took none");
}

# a location pinned to engine b serves b's model, and refuses another
my $before = submitted('beta');
my ($status, $j) = complete('/pinned/v1/completions', 'beta', 2);
is($status, 200, 'pinned: its own model is served');
is(submitted('beta') - $before, 1, 'pinned: by its engine');

($status, $j) = complete('/pinned/v1/completions', 'alpha', 2);
ok($status == 404 || $status == 400,
   "pinned: another engine's model is refused ($status)");
is(ref $j->{error}, 'HASH', 'pinned: with an OpenAI error body');

is($s->stop, 0, 'nginx exits cleanly');
$_->stop for values %e;

done_testing();
