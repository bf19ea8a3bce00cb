#!/usr/bin/env perl

# The soak: fairgate under mixed load for a while, faults injected on a
# schedule, every request's outcome, samples once a second, and the
# invariants checked into a report (report.json and report.txt in --out).
#
#   t/soak/soak.pl [--time S] [--clients N] [--faults a,b,...] [--slot S]
#                  [--out DIR]
#
# The run is cut into one slot a fault (the list cycled, a slot of about
# --slot seconds, so that each fault comes back): load, the fault injected and held
# a while, the system brought back (polled until whole), then load paused
# until the status JSON is idle (the zone and segment released), load on.
# Exit status 0 when every invariant holds.

use strict;
use warnings;

use FindBin;
use Cwd ();
use lib Cwd::abs_path("$FindBin::Bin/../lib"), $FindBin::Bin;

use Getopt::Long;
use List::Util qw(max);
use JSON::PP ();
use Time::HiRes ();

use Fairgate::Test qw(wait_for);
use Soak::Check;
use Soak::Report;
use Soak::Client;
use Soak::Rig;
use Soak::Sample;

my %o = (time => 180, clients => 12, out => 'build/soak', hold => 2,
         slot => 30,
         faults => 'engine_kill,engine_stop,worker_kill,reload,redis_kill,'
                   . 'redis_stop,upstream_reset,upstream_stall,reload');
GetOptions(\%o, 'time=i', 'clients=i', 'faults=s', 'out=s', 'hold=f',
           'slot=i')
    or die "usage: $0 [--time S] [--clients N] [--faults LIST] [--out DIR]\n";

my $J = JSON::PP->new->canonical;
my $out = $o{out};
system('mkdir', '-p', $out) == 0 or die "mkdir $out\n";
unlink glob("$out/*");

my $rig = Soak::Rig->new->start;

# interrupted: the clients told to stop, the system stopped
$SIG{INT} = $SIG{TERM} = sub { die "soak: interrupted\n" };
END { if ($rig && $rig->{started}) { touch("$out/stop"); $rig->stop } }
my %faults = $rig->faults;
# the list cycled: a fault every --slot seconds (30 by default)
my @list = split /,/, $o{faults};
my @plan = map { $list[$_ % @list] } 0 .. max(scalar @list,
                                             int($o{time} / $o{slot})) - 1;
$faults{$_} or die "unknown fault $_\n" for @plan;
wait_for(10, sub { Soak::Sample::idle($rig->status) })
    or die "the system is not up\n";

my ($pause, $stop) = ("$out/pause", "$out/stop");
my @tenants = sort keys %Soak::Rig::TENANTS;
my @clients = map {
    Soak::Client::spawn(port => $rig->server->port, seed => $_,
                        tenant => $tenants[$_ % @tenants],
                        log => "$out/client-$_.log",
                        pause => $pause, stop => $stop)
} 0 .. $o{clients} - 1;

my (@samples, @windows, @pauses, %demand);
$demand{$tenants[$_ % @tenants]}++ for 0 .. $o{clients} - 1;
my $t_start = Time::HiRes::time();
my $slot = $o{time} / (@plan || 1);


# samples once a second until a time
sub run_until {
    my ($t) = @_;
    while ((my $now = Time::HiRes::time()) < $t) {
        push @samples, Soak::Sample::take($rig)
            if !@samples || $now - $samples[-1]{t} >= 1;
        Time::HiRes::sleep(0.05);
    }
}


sub touch { open my $fh, '>', $_[0] or die "$_[0]: $!\n"; close $fh }


for my $i (0 .. $#plan) {
    my $name = $plan[$i];
    my $t0 = $t_start + $i * $slot;
    run_until($t0 + $slot / 3);
    my %w = (fault => $name, start => Time::HiRes::time());
    eval { $faults{$name}[0]->(); 1 } or $w{error} = "inject: $@";
    run_until($w{start} + $o{hold});
    eval { $faults{$name}[1]->(); 1 } or $w{error} //= "recover: $@";
    $w{whole} = wait_for(20, sub {
        Soak::Sample::whole($rig->status) }) ? 1 : 0;
    $w{end} = Time::HiRes::time();
    push @windows, \%w;
    run_until($t0 + $slot * 0.9);

    # load paused: the status JSON must come back to idle
    touch($pause);
    my %p = (after => $name, start => Time::HiRes::time());
    my $idle = wait_for($Soak::Client::DEADLINE + 5, sub {
        Soak::Sample::idle($rig->status) });
    $p{idle} = $idle ? 1 : 0;
    $p{end} = Time::HiRes::time();
    $p{status} = $rig->status unless $idle;
    push @pauses, \%p;
    unlink $pause;
    run_until($t0 + $slot);
}

touch($stop);
for my $pid (@clients) {
    wait_for($Soak::Client::DEADLINE + 5,
                        sub { waitpid($pid, POSIX::WNOHANG()) == $pid })
        or kill 'TERM', $pid;
}
my $t_end = Time::HiRes::time();
my $nginx_rc = $rig->stop;

my @outcomes;
for my $f (glob "$out/client-*.log") {
    open my $fh, '<', $f or die "$f: $!\n";
    while (<$fh>) {
        my @v = split;
        next unless @v == 8;
        push @outcomes, { start => $v[0], end => $v[1], tenant => $v[2],
                          kind => $v[3], stream => $v[4], status => $v[5],
                          class => $v[6], tokens => $v[7] };
    }
}

my $report = Soak::Check::check(
    time => $t_end - $t_start, clients => $o{clients},
    outcomes => \@outcomes, windows => \@windows, pauses => \@pauses,
    samples => \@samples, nginx_rc => $nginx_rc,
    demand => \%demand);

open my $fh, '>', "$out/report.json" or die "$!\n";
print {$fh} JSON::PP->new->canonical->pretty->encode($report);
close $fh;
open $fh, '>', "$out/report.txt" or die "$!\n";
print {$fh} Soak::Report::table($report);
close $fh;
print Soak::Report::table($report);
exit($report->{pass} ? 0 : 1);
