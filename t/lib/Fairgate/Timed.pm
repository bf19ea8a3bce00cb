package Fairgate::Timed;

# A streamed answer read as it comes: each SSE event's arrival time at the
# client, over HTTP/1.0 (no chunked coding), for the pacer's tests
# (t/017-qoe-pace.t) and its benchmark (engine/tools/load/pace-bench.pl).

use strict;
use warnings;

use Exporter 'import';
use IO::Select;
use Time::HiRes ();

our @EXPORT_OK = qw(timed_stream token_times);


# POSTs body to uri on server's port; returns { head, sse, times }, times
# the arrival of each event (a blank line ended it)
sub timed_stream {
    my ($server, $uri, $body, @headers) = @_;
    my $sock = $server->connect;
    $sock->autoflush(1);
    print {$sock} "POST $uri HTTP/1.0\r\nHost: localhost\r\n"
                  . "Content-Type: application/json\r\n"
                  . join('', map { "$_\r\n" } @headers)
                  . 'Content-Length: ' . length($body) . "\r\n\r\n$body";

    my ($raw, @times, $seen) = ('');
    my $sel = IO::Select->new($sock);
    my $deadline = Time::HiRes::time() + 20;
    $seen = 0;

    while ($sel->can_read($deadline - Time::HiRes::time())) {
        my $n = sysread($sock, my $buf, 65536);
        last unless $n;
        $raw .= $buf;
        my $t = Time::HiRes::time();
        my $events = () = $raw =~ /\n\n/g;
        push @times, ($t) x ($events - $seen);
        $seen = $events;
    }
    close $sock;

    my ($head, $sse) = split /\r\n\r\n/, $raw, 2;
    return { head => $head // '', sse => $sse // '', times => \@times };
}


# the content events' times (the header's blank line is not an event)
sub token_times {
    my ($st) = @_;
    my @ev = split /\n\n/, $st->{sse};
    my @t = @{ $st->{times} };
    shift @t if @t > @ev;
    return map { $t[$_] } grep { $ev[$_] =~ /"content":"[^"]/ } 0 .. $#ev;
}


1;
