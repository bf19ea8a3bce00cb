package Soak::Sample;

# What the soak samples once a second: RSS and open descriptors of the
# nginx master and workers and of the engine (from /proc), the zones'
# use and counters and the engine's segment use (from the status JSON).

use strict;
use warnings;

# the zone counters that must never go backwards
our @COUNTERS = qw(admitted enqueued finished tokens_in tokens_out
                   cancelled expired timed_out rejected);


sub _proc {
    my ($pids) = @_;
    my ($rss, $fds) = (0, 0);
    for my $pid (grep { defined } @$pids) {
        open my $fh, '<', "/proc/$pid/status" or next;
        while (<$fh>) { $rss += $1 if /^VmRSS:\s+(\d+)/ }
        opendir my $d, "/proc/$pid/fd" or next;
        $fds += grep { /^\d+$/ } readdir $d;
    }
    return ($rss, $fds);
}


# one sample: a hash, flat enough for the report
sub take {
    my ($rig) = @_;
    my $pids = $rig->pids;
    my %s = (t => Time::HiRes::time());
    @s{qw(nginx_rss_kb nginx_fds)} = _proc($pids->{nginx});
    @s{qw(engine_rss_kb engine_fds)} = _proc($pids->{engine});
    my $st = $rig->status or return \%s;
    for my $z (@{ $st->{zones} }) {
        $s{"$z->{name}.$_"} = $z->{$_} for @COUNTERS;
        $s{"$z->{name}.use"} = $z->{inflight}{running}
                               / ($z->{inflight}{limit} || 1);
    }
    my $load = ($st->{engines}[0] // {})->{load};
    $s{segment_used} = $load->{kv_blocks} - $load->{kv_free} if $load;
    return \%s;
}


# the system idle: nothing held in a zone, a stream or the segment
sub idle {
    my ($st) = @_;
    return 0 unless $st;
    for my $z (@{ $st->{zones} }) {
        return 0 if $z->{running} || $z->{waiting}
                    || $z->{inflight}{running} || $z->{inflight}{tokens};
    }
    for my $e (@{ $st->{engines} }) {
        return 0 unless $e->{attached} && $e->{load};
        my $l = $e->{load};
        return 0 if $e->{open} || $l->{running} || $l->{waiting}
                    || $l->{kv_free} != $l->{kv_blocks};
    }
    return 1;
}


# the system whole: engine attached and redis up in every zone
sub whole {
    my ($st) = @_;
    return 0 unless $st;
    return 0 if grep { !$_->{attached} || !$_->{load} } @{ $st->{engines} };
    return 0 if grep { ($_->{state} // '') ne 'up' }
                @{ ($st->{redis} // {})->{zones} // [] };
    return 1;
}

1;
