#!/usr/bin/env perl

# A short soak (t/soak/): 30 s of mixed tenants through local mode and
# drop-in with four faults injected under load (engine killed and
# restarted, upstream reset mid-stream, a reload, redis frozen).  Its
# assertions are the soak's invariants, each from its report.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use File::Temp ();
use JSON::PP ();
use Test::More;

use Fairgate::Engine;

plan skip_all => "no $Fairgate::Engine::MODEL"
    unless -f $Fairgate::Engine::MODEL;
plan skip_all => 'redis-server is not installed'
    unless `command -v redis-server 2>/dev/null`;

my $out = File::Temp::tempdir('fairgate-soak-t-XXXXXX', TMPDIR => 1,
                              CLEANUP => !$ENV{FAIRGATE_KEEP});
my $faults = 'engine_kill,upstream_reset,reload,redis_stop';
# its table on stdout would mix with TAP: into a file
system("perl $FindBin::Bin/soak/soak.pl --time 30 --clients 9 "
       . "--faults $faults --out $out > $out/soak.log 2>&1");

open my $fh, '<', "$out/report.json" or BAIL_OUT("no report: $!");
my $r = JSON::PP->new->decode(do { local $/; <$fh> });
diag(do { local $/; open my $t, '<', "$out/report.txt"; <$t> })
    if $ENV{FAIRGATE_KEEP};

cmp_ok($r->{requests}, '>', 200, "requests served ($r->{requests})");
cmp_ok($r->{by_class}{ok} // 0, '>', $r->{requests} / 2,
       'most of them served');
is_deeply([sort keys %{ $r->{faults} }], [sort split /,/, $faults],
          'every fault injected');
is($r->{faults_not_repaired}, 0, 'the system whole after every fault');
is($r->{hangs}, 0, 'no request past its deadline');
is($r->{unclean}, 0, 'every failure clean (error JSON or SSE error)')
    or diag(JSON::PP->new->canonical->encode($r->{unclean_examples}));
is($r->{unattributed}, 0, 'every failure within a fault window');
is($r->{not_released}, 0, 'status idle at every pause: zones released')
    or diag(JSON::PP->new->canonical->encode($r->{pauses}));
is($r->{counters_back}, 0, 'no counter went backwards')
    or diag(join "\n", @{ $r->{counter_examples} });
is($r->{growth}, 0, 'no RSS or descriptor growth')
    or diag(JSON::PP->new->canonical->encode($r->{memory}));
is($r->{unfair}, 0, 'fair shares outside fault windows')
    or diag(JSON::PP->new->canonical->encode($r->{fairness}));
is($r->{nginx_exit}, 0, 'nginx exits cleanly');
ok($r->{pass}, 'the soak passes');

done_testing();
