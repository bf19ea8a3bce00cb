package Soak::Client;

# One closed-loop client of the soak, in its own process: requests of one
# tenant (local or drop-in, streamed or not, by turns from a seeded
# random choice) one after the other, each with a deadline, each outcome
# a line of its log:
#   start end tenant path stream status class tokens
# class: ok, json_error (the module's error JSON), sse_error (an SSE
# error event then [DONE]), bad (anything else: a broken answer), conn
# (no answer: reset or closed), hang (past the deadline).
# While the pause file exists the client waits between requests.

use strict;
use warnings;

use IO::Select;
use IO::Socket::INET;
use JSON::PP ();
use POSIX ();
use Time::HiRes ();

use Fairgate::Engine qw(parse_sse);

our $DEADLINE = 30;    # seconds; the zones' timeout is 20 s

my $J = JSON::PP->new->canonical;


# fork a client; returns its pid
sub spawn {
    my (%o) = @_;
    my $pid = fork // die "fork: $!\n";
    return $pid if $pid;
    $SIG{TERM} = sub { POSIX::_exit(0) };
    $SIG{PIPE} = 'IGNORE';
    srand($o{seed});
    open my $log, '>>', $o{log} or POSIX::_exit(1);
    $log->autoflush(1);
    until (-e $o{stop}) {
        if (-e $o{pause}) {
            print {$log} "idle\n";
            Time::HiRes::sleep(0.05) while -e $o{pause} && !-e $o{stop};
            next;
        }
        my $line = one(%o);
        print {$log} $line, "\n";
        # as a client that honours Retry-After: no tight loop of errors
        Time::HiRes::sleep(0.2) unless $line =~ / ok \d+$/;
    }
    POSIX::_exit(0);
}


sub one {
    my (%o) = @_;
    my $path = rand() < 0.5 ? '/v1/chat/completions'
                            : '/up/v1/chat/completions';
    my $stream = rand() < 0.5 ? 1 : 0;
    my $body = $J->encode({ model => 'stories260K',
                            max_tokens => 8 + int(rand(32)),
                            ($stream ? (stream => JSON::PP::true) : ()),
                            messages => [{ role => 'user',
                                           content => 'Once upon' }] });
    my $t0 = Time::HiRes::time();
    my $raw = exchange($o{port}, "POST $path HTTP/1.0\r\nHost: soak\r\n"
        . "Authorization: Bearer sk-$o{tenant}\r\n"
        . "Content-Type: application/json\r\n"
        . "Content-Length: " . length($body) . "\r\n\r\n$body", $t0);
    my ($status, $class, $tokens) = classify($raw, $stream);
    _keep($o{log}, $raw) if $class eq 'bad';
    return join ' ', sprintf('%.3f', $t0),
        sprintf('%.3f', Time::HiRes::time()), $o{tenant},
        ($path =~ m{^/up/} ? 'dropin' : 'local'), $stream, $status,
        $class, $tokens;
}


# the whole answer, or undef when none came, or 'HANG' past the deadline
sub exchange {
    my ($port, $req, $t0) = @_;
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                     PeerPort => $port, Proto => 'tcp',
                                     Timeout => 5) or return undef;
    syswrite($sock, $req) or return undef;
    my $sel = IO::Select->new($sock);
    my $raw = '';
    while (1) {
        my $left = $t0 + $DEADLINE - Time::HiRes::time();
        return 'HANG' if $left <= 0 || !$sel->can_read($left);
        my $n = sysread($sock, $raw, 65536, length $raw);
        return length $raw ? $raw : undef if !$n;
    }
}


# a broken answer kept beside the log, to see what broke
sub _keep {
    my ($log, $raw) = @_;
    open my $fh, '>>', "$log.bad" or return;
    print {$fh} "----\n", substr($raw // '', 0, 2000), "\n";
}


sub classify {
    my ($raw, $stream) = @_;
    return (0, 'conn', 0) unless defined $raw;
    return (0, 'hang', 0) if $raw eq 'HANG';
    my ($head, $body) = split /\r\n\r\n/, $raw, 2;
    my ($status) = ($head // '') =~ m{^HTTP/1\.[01] (\d{3})};
    return (0, 'bad', 0) unless $status && defined $body;
    if ($status != 200) {
        my $j = eval { $J->decode($body) };
        return ($status, ref $j eq 'HASH' && ref $j->{error} eq 'HASH'
                && $j->{error}{message} ? 'json_error' : 'bad', 0);
    }
    return ($status, _json_body($body)) unless $stream;
    my @ev = eval { parse_sse($body) };
    return ($status, 'bad', 0) if $@ || !@ev || $ev[-1] ne '[DONE]';
    my @err = grep { ref $_ eq 'HASH' && $_->{error} } @ev;
    return ($status, @err ? 'sse_error' : 'ok', scalar(@ev) - 1);
}


sub _json_body {
    my ($body) = @_;
    my $j = eval { $J->decode($body) };
    return ('bad', 0) unless ref $j eq 'HASH' && ref $j->{choices} eq 'ARRAY';
    return ('ok', ($j->{usage} // {})->{completion_tokens} // 0);
}

1;
