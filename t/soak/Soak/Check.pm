package Soak::Check;

# The soak's invariants over what it recorded, and its report:
#   hangs:        no request past its deadline
#   unclean:      every failure the module's error JSON or an SSE error
#                 event; a dropped connection only where a worker was
#                 killed (its connections die with it)
#   unattributed: every failure within a fault's window (+ GRACE)
#   released:     the status JSON idle at every pause after a fault
#   counters:     no zone counter ever goes backwards (reloads, kills)
#   growth:       RSS and descriptors of the last quarter's median within
#                 tolerance of the first quarter's
#   fairness:     outside fault windows each tenant's share of requests
#                 served within tolerance of its share of demand

use strict;
use warnings;

use List::Util qw(any sum0);

our $GRACE = 3;          # s after a fault is repaired: a queue timeout,
                         # a 2 s upstream read timeout under way
# fairness: three binomial standard deviations of the share over the N
# requests served, at least 0.02 (a closed loop's requests differ in
# length, so shares wander a little even with equal demand)
sub _fair_tol {
    my ($p, $n) = @_;
    my $sd = $n ? sqrt($p * (1 - $p) / $n) : 1;
    return 3 * $sd > 0.02 ? 3 * $sd : 0.02;
}
# RSS: +10% and 4 MiB (allocator and page-cache noise of a run whose
# workers are replaced by reloads and kills); descriptors: +2 (a
# connection accepted at sampling time)
our ($RSS_PCT, $RSS_KB, $FD_SLACK) = (0.10, 4096, 2);

# under AddressSanitizer (make test-asan) RSS is recorded, not judged: its
# quarantine keeps freed memory resident by design (up to 256 MiB), and
# its leak checker judges the engine's memory instead
our $RSS_JUDGED = !$ENV{FAIRGATE_SAN_DIR};

my %CLEAN = (json_error => 1, sse_error => 1);
# a killed worker sends nothing more: its connections end where they are
my %KILLED = (conn => 1, bad => 1);


# the windows a request overlaps (graces may overlap the next fault)
sub _windows_of {
    my ($o, $windows) = @_;
    return grep { $o->{end} >= $_->{start}
                  && $o->{start} <= $_->{end} + $GRACE } @$windows;
}


sub _failures {
    my ($r, $outcomes, $windows) = @_;
    for my $o (@$outcomes) {
        $r->{by_class}{$o->{class}}++;
        $r->{by_kind}{"$o->{kind}/" . ($o->{stream} ? 'stream' : 'json')}++;
        next if $o->{class} eq 'ok';
        my @w = map { $_->{fault} } _windows_of($o, $windows);
        $r->{failed_by_cause}{ @w ? $w[-1] : 'unattributed' }++;
        $r->{unattributed}++ unless @w;
        $r->{hangs}++ if $o->{class} eq 'hang';
        my $clean = $CLEAN{$o->{class}}
                    || ($KILLED{$o->{class}}
                        && grep { $_ eq 'worker_kill' } @w);
        next if $clean;
        $r->{unclean}++;
        push @{ $r->{unclean_examples} }, $o
            if @{ $r->{unclean_examples} } < 10;
    }
}


sub _median {
    my @v = sort { $a <=> $b } grep { defined } @_;
    return @v ? $v[$#v / 2] : 0;
}


sub _growth {
    my ($r, $samples) = @_;
    my $q = int(@$samples / 4) || 1;
    my @first = @$samples[0 .. $q - 1];
    my @last = @$samples[-$q .. -1];
    for my $k (qw(nginx_rss_kb nginx_fds engine_rss_kb engine_fds)) {
        my ($a, $b) = (_median(map { $_->{$k} } @first),
                       _median(map { $_->{$k} } @last));
        my $ok = $k !~ /rss/ ? $b <= $a + $FD_SLACK
               : !$RSS_JUDGED || $b <= $a * (1 + $RSS_PCT) + $RSS_KB;
        $r->{memory}{$k} = { first => $a, last => $b, ok => $ok ? 1 : 0 };
        $r->{growth}++ unless $ok;
    }
}


sub _counters {
    my ($r, $samples) = @_;
    my %last;
    for my $s (@$samples) {
        for my $k (grep { /^\w+\.\w+$/ && !/\.use$/ } keys %$s) {
            if (defined $last{$k} && $s->{$k} < $last{$k}) {
                $r->{counters_back}++;
                push @{ $r->{counter_examples} }, "$k $last{$k} -> $s->{$k}";
            }
            $last{$k} = $s->{$k};
        }
    }
}


sub _fairness {
    my ($r, $outcomes, $windows, $demand) = @_;
    my %demand = %$demand;
    my %served;
    my @tenants = sort keys %demand;
    for my $o (@$outcomes) {
        next if $o->{class} ne 'ok' || _windows_of($o, $windows);
        $served{$o->{tenant}}++;
    }
    my ($ts, $td) = (sum0(values %served), sum0(values %demand));
    for my $t (@tenants) {
        my $share = $ts ? ($served{$t} // 0) / $ts : 0;
        my $want = $td ? $demand{$t} / $td : 0;
        my $tol = _fair_tol($want, $ts);
        my $ok = abs($share - $want) <= $tol;
        $r->{fairness}{$t} = { share => sprintf('%.3f', $share),
                               expected => sprintf('%.3f', $want),
                               tolerance => sprintf('%.3f', $tol),
                               served => $served{$t} // 0,
                               ok => $ok ? 1 : 0 };
        $r->{unfair}++ unless $ok;
    }
}


sub check {
    my (%a) = @_;
    my $r = { duration_s => sprintf('%.0f', $a{time}),
              requests => scalar @{ $a{outcomes} }, clients => $a{clients},
              unattributed => 0, unclean => 0, hangs => 0, growth => 0,
              counters_back => 0, unfair => 0, unclean_examples => [],
              counter_examples => [], windows => $a{windows},
              nginx_exit => $a{nginx_rc} };
    $r->{faults}{$_->{fault}}++ for @{ $a{windows} };
    $r->{faults_not_repaired} = grep { !$_->{whole} || $_->{error} }
                                @{ $a{windows} };
    $r->{not_released} = grep { !$_->{idle} } @{ $a{pauses} };
    $r->{pauses} = $a{pauses};
    _failures($r, $a{outcomes}, $a{windows});
    _growth($r, $a{samples});
    _counters($r, $a{samples});
    _fairness($r, $a{outcomes}, $a{windows}, $a{demand});
    for my $z (qw(llm up)) {
        my @u = map { $_->{"$z.use"} // () } @{ $a{samples} };
        $r->{zone_use}{$z} = sprintf('%.2f', sum0(@u) / (@u || 1));
    }
    $r->{pass} = !(any { $r->{$_} } qw(unattributed unclean hangs growth
                   counters_back unfair not_released faults_not_repaired))
                 && $r->{requests} > 0 && !$a{nginx_rc} ? 1 : 0;
    return $r;
}

1;
