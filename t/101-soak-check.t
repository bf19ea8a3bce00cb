#!/usr/bin/env perl

# The soak's invariants (t/soak/Soak/Check.pm) can fail: a clean record
# passes, and each kind of breakage, made by hand, fails its own check.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib", "$FindBin::Bin/soak";

use Test::More;

use Soak::Check;

sub outcome {
    my ($t, $tenant, $class) = @_;
    return { start => $t, end => $t + 0.1, tenant => $tenant,
             kind => 'local', stream => 0, status => 200,
             class => $class // 'ok', tokens => 10 };
}

sub record {
    my (%break) = @_;
    my @out = map { outcome(100 + $_ / 10, (qw(a b c))[$_ % 3]) } 0 .. 2999;
    my @samples = map { { t => 100 + $_, nginx_rss_kb => 20000,
                          nginx_fds => 50, engine_rss_kb => 5000,
                          engine_fds => 6, 'llm.admitted' => $_ * 10 } }
                  0 .. 299;
    my @windows = ({ fault => 'engine_kill', start => 150, end => 152,
                     whole => 1 },
                   { fault => 'worker_kill', start => 200, end => 201,
                     whole => 1 });
    my @pauses = ({ after => 'engine_kill', idle => 1 });
    $break{$_}->(\@out, \@samples, \@windows, \@pauses) for keys %break;
    return Soak::Check::check(time => 300, clients => 3,
                              outcomes => \@out, windows => \@windows,
                              pauses => \@pauses, samples => \@samples,
                              nginx_rc => 0,
                              demand => { a => 1, b => 1, c => 1 });
}

my $r = record();
ok($r->{pass}, 'a clean record passes');

my %cases = (
    hangs => sub { $_[0][1500]{class} = 'hang' },
    unattributed => sub { $_[0][10]{class} = 'json_error' },
    unclean => sub { $_[0][501]{class} = 'bad' },
    not_released => sub { $_[3][0]{idle} = 0 },
    counters_back => sub { $_[1][200]{'llm.admitted'} = 0 },
    growth => sub { $_->{nginx_fds} = 60 for @{ $_[1] }[250 .. 299] },
    unfair => sub { $_->{class} = 'json_error', $_->{start} = $_->{end} = 151
                        for grep { $_->{tenant} eq 'a' } @{ $_[0] }[0 .. 900]
                  },
    faults_not_repaired => sub { $_[2][0]{whole} = 0 },
);

for my $k (sort keys %cases) {
    my $b = record($k => $cases{$k});
    ok(!$b->{pass} && $b->{$k}, "$k: caught ($b->{$k})");
}

# a dropped connection is clean only where a worker was killed
$r = record(x => sub { $_[0][1005]{class} = 'conn' });
ok($r->{pass}, 'a dropped connection in a worker kill window is clean');
$r = record(x => sub { $_[0][505]{class} = 'conn' });
is($r->{unclean}, 1, 'one elsewhere is not');

done_testing();
