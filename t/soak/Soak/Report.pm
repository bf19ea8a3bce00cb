package Soak::Report;

# The soak's report as a text table: the run, the faults, the outcomes
# by cause, memory and descriptors, fairness, and the invariants.

use strict;
use warnings;


sub _row { sprintf("%-34s %s\n", @_) }


sub table {
    my ($r) = @_;
    my $t = '';
    $t .= _row('duration (s)', $r->{duration_s});
    $t .= _row('clients (closed loop)', $r->{clients});
    $t .= _row('requests', $r->{requests});
    $t .= _row("zone $_ use (of its inflight)", $r->{zone_use}{$_})
        for sort keys %{ $r->{zone_use} };
    $t .= _row("  $_", $r->{by_kind}{$_}) for sort keys %{ $r->{by_kind} };
    $t .= _row('outcomes', '');
    $t .= _row("  $_", $r->{by_class}{$_}) for sort keys %{ $r->{by_class} };
    $t .= _row('faults injected', '');
    $t .= _row("  $_", $r->{faults}{$_}) for sort keys %{ $r->{faults} };
    $t .= _row('failed, by cause', '');
    $t .= _row("  $_", $r->{failed_by_cause}{$_})
        for sort keys %{ $r->{failed_by_cause} // {} };
    $t .= _row('memory and descriptors', 'first quarter -> last quarter');
    for my $k (sort keys %{ $r->{memory} }) {
        my $m = $r->{memory}{$k};
        $t .= _row("  $k", "$m->{first} -> $m->{last}"
                           . ($m->{ok} ? '' : '  GROWTH'));
    }
    $t .= _row('fairness outside faults', 'served: share (expected +- tol)');
    for my $k (sort keys %{ $r->{fairness} }) {
        my $f = $r->{fairness}{$k};
        $t .= _row("  $k", "$f->{served}: $f->{share} ($f->{expected} +- "
                           . "$f->{tolerance})"
                           . ($f->{ok} ? '' : '  OFF'));
    }
    $t .= _row('invariants', '');
    for my $k (qw(hangs unclean unattributed not_released counters_back
                  growth unfair faults_not_repaired)) {
        $t .= _row("  $k", $r->{$k});
    }
    $t .= _row('nginx exit status', $r->{nginx_exit});
    $t .= _row('result', $r->{pass} ? 'PASS' : 'FAIL');
    return $t;
}

1;
