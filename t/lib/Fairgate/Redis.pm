package Fairgate::Redis;

# A redis-server of the tests' own on 127.0.0.1 (t/013-redis.t, the soak's
# rig): started, killed and started again on the same port, nothing saved
# to disk, its output appended to DIR/redis.log.
#
#     my $r = Fairgate::Redis->new(dir => $dir) if Fairgate::Redis::path();
#     $r->start or die;   ... $r->port, $r->pid (to STOP and CONT) ...
#     $r->kill;

use strict;
use warnings;

use IO::Socket::INET;
use POSIX ();

use Fairgate::Test qw(free_port wait_for);


# the installed redis-server, or '' (a test skips without it)
sub path {
    my $p = `command -v redis-server 2>/dev/null`;
    chomp $p;
    return $p;
}

sub new {
    my ($class, %o) = @_;
    return bless { dir => $o{dir}, port => $o{port} // free_port() },
                 $class;
}

sub port { $_[0]{port} }
sub pid { $_[0]{pid} }

# started; true once it accepts connections (within 5 s)
sub start {
    my ($self) = @_;
    my $path = path();
    my $pid = fork // die "fork: $!\n";

    if (!$pid) {
        open STDOUT, '>>', "$self->{dir}/redis.log";
        open STDERR, '>&', \*STDOUT;
        exec($path, '--port', $self->{port}, '--bind', '127.0.0.1',
             '--save', '', '--appendonly', 'no', '--daemonize', 'no',
             '--dir', $self->{dir})
            or POSIX::_exit(127);
    }

    $self->{pid} = $pid;
    return wait_for(5, sub {
        IO::Socket::INET->new(PeerAddr => "127.0.0.1:$self->{port}",
                              Timeout => 1) });
}

# SIGKILL, reaped: the outage a test or the soak injects, and the stop
sub kill {
    my ($self) = @_;
    return unless $self->{pid};
    CORE::kill('KILL', $self->{pid});
    waitpid $self->{pid}, 0;
    undef $self->{pid};
}

sub DESTROY { $_[0]->kill }

1;
