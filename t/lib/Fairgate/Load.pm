package Fairgate::Load;

# Closed-loop load for the tests: each tenant keeps a number of requests
# outstanding, sending a new one as soon as one is answered, until enough
# answers came or a deadline passed.  One connection a request, all in one
# IO::Select loop; core Perl only.

use strict;
use warnings;

use Exporter 'import';
use IO::Select;
use IO::Socket::INET;
use Scalar::Util ();
use Time::HiRes ();

use Fairgate::Test ();

our @EXPORT_OK = qw(closed_loop two_tenants share_between);


# closed_loop(port => P, total => N, timeout => S, tenants => [
#     { name => 'a', concurrency => 6, request => { method, uri, body,
#       headers => [...] }, port => P2 }, ...])
#
# (a tenant's own port, if it has one, sends it to another server)
#
# A tenant may also have max => N (it sends N requests at most; total must
# then not exceed what the tenants send) and more => sub { my ($i) = @_; ...
# } returning extra headers for its i-th request (0 the first).
#
# returns the answers in the order they completed:
#     [{ tenant => 'a', status => 200, time => T, body => ... }, ...]
# and dies when the deadline passes first.  The requests still out at the
# end are given up (their connections closed).

sub closed_loop {
    my (%o) = @_;
    my $sel = IO::Select->new;
    my (%pending, @done);
    my $sent = 0;
    my $deadline = Time::HiRes::time() + ($o{timeout} // 30);
    my $seq = 0;

    my $send = sub {
        my ($t) = @_;
        my %req = %{ $t->{request} };
        my $i = $t->{_sent}++;
        $req{headers} = [@{ $req{headers} // [] },
                         $t->{more} ? $t->{more}->($i) : (),
                         "X-Tag: $t->{name}-" . $seq++];
        my $bytes = Fairgate::Test::_build_request(\%req);

        my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                      PeerPort => $t->{port} // $o{port},
                                      Proto => 'tcp',
                                      Timeout => 5)
            or die "Fairgate::Load: connect: $!\n";
        $s->autoflush(1);
        print {$s} $bytes;
        $s->blocking(0);
        $sel->add($s);
        $pending{Scalar::Util::refaddr($s)} = { tenant => $t, raw => '',
                                                sock => $s };
        $sent++;
    };

    my $more = sub {
        my ($t) = @_;
        return !defined $t->{max} || ($t->{_sent} // 0) < $t->{max};
    };

    for my $t (@{ $o{tenants} }) {
        $t->{_sent} = 0;
        for (1 .. $t->{concurrency}) {
            $send->($t) if $more->($t);
        }
    }

    while (@done < $o{total}) {
        my $left = $deadline - Time::HiRes::time();
        die "Fairgate::Load: " . scalar(@done) . " of $o{total} answers "
            . "before the deadline\n" if $left <= 0;

        for my $s ($sel->can_read($left)) {
            my $p = $pending{Scalar::Util::refaddr($s)};
            my $n = sysread($s, my $buf, 65536);

            next if !defined $n && $!{EAGAIN};

            if ($n) {
                $p->{raw} .= $buf;
                next;
            }

            $sel->remove($s);
            close $s;
            delete $pending{Scalar::Util::refaddr($s)};

            my $res = Fairgate::Test::parse_response($p->{raw});
            push @done, { tenant => $p->{tenant}{name},
                          status => $res->{status} // 0,
                          body => $res->{body},
                          time => Time::HiRes::time() };

            # every tenant stays backlogged to the end
            $send->($p->{tenant})
                if @done < $o{total} && $more->($p->{tenant});
        }
    }

    # what is still in flight is given up
    for my $p (values %pending) {
        close $p->{sock};
    }

    return @done;
}


# The fairness tests' flood: tenants a and b keep 6 and 3 chat requests
# (body, headers => sub { my ($name) = @_; [...] }) outstanding until total
# answers; every answer must be 200 ("what: every answer is 200").  Returns
# the answers of a and b after the first warmup ones, and all answers.
sub two_tenants {
    my ($s, %o) = @_;
    my @tenants = map {
        my ($name, $n) = @$_;
        { name => $name, concurrency => $n,
          request => { method => 'POST', uri => '/v1/chat/completions',
                       body => $o{body}, headers => $o{headers}->($name) } }
    } (['a', 6], ['b', 3]);

    my @done = closed_loop(port => $s->port, total => $o{total},
                           timeout => 60, tenants => \@tenants);

    my @bad = grep { $_->{status} != 200 } @done;
    Test::More::is(scalar @bad, 0, "$o{what}: every answer is 200")
        or Test::More::diag(join "\n",
                            map { "$_->{status} $_->{body}" } @bad[0 .. 2]);

    my %n;
    $n{$_->{tenant}}++ for @done[$o{warmup} .. $#done];
    return ($n{a} // 0, $n{b} // 0, \@done);
}


# who's (a's or b's) share of the na + nb answers, told as "label a:b =
# na:nb", and held above lo and below hi (two tests, both called what)
sub share_between {
    my ($label, $who, $na, $nb, $lo, $hi, $what) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my $share = ($who eq 'a' ? $na : $nb) / ($na + $nb);
    Test::More::diag(sprintf "%s a:b = %d:%d, %s's share %.3f", $label,
                     $na, $nb, $who, $share);
    Test::More::cmp_ok($share, '>', $lo, $what);
    Test::More::cmp_ok($share, '<', $hi, $what);
}


1;
