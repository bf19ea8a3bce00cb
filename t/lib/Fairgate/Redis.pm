package Fairgate::Redis;

# A redis-server of the tests' own on 127.0.0.1 (t/013-redis.t, the soak's
# rig): started, killed and started again on the same port, nothing saved
# to disk, its output appended to DIR/redis.log.
#
#     my $r = Fairgate::Redis->new(dir => $dir) if Fairgate::Redis::path();
#     $r->start or die;   ... $r->port, $r->pid (to STOP and CONT) ...
#     $r->kill;
#
# args => [...] adds to its command line (e.g. --replicaof HOST PORT);
# sentinel => 'NAME HOST PORT' makes it a sentinel (redis-server
# --sentinel, quorum 1) watching that master, quick to judge it down.

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
    return bless { dir => $o{dir}, port => $o{port} // free_port(),
                   args => $o{args} // [], sentinel => $o{sentinel} },
                 $class;
}

sub port { $_[0]{port} }
sub pid { $_[0]{pid} }

# the command line; a sentinel's is its configuration file, which it rewrites
sub _command {
    my ($self) = @_;
    my @common = ('--port', $self->{port}, '--bind', '127.0.0.1',
                  '--daemonize', 'no', '--dir', $self->{dir});

    return (path(), @common, '--save', '', '--appendonly', 'no',
            @{ $self->{args} })
        unless $self->{sentinel};

    my ($name) = split ' ', $self->{sentinel};
    my $conf = "$self->{dir}/sentinel-$self->{port}.conf";

    if (!-e $conf) {
        open my $fh, '>', $conf or die "$conf: $!\n";
        print {$fh} "sentinel monitor $self->{sentinel} 1\n",
                    "sentinel down-after-milliseconds $name 1000\n",
                    "sentinel failover-timeout $name 10000\n";
        close $fh;
    }

    return (path(), $conf, '--sentinel', @common, @{ $self->{args} });
}

# a command's answer, as redis-cli prints it (raw), or '' if it failed
sub cli {
    my ($self, @cmd) = @_;
    my ($rc, $out) = Fairgate::Test::run_cmd('redis-cli', '-p', $self->{port},
                                             '--raw', @cmd);
    return $rc == 0 ? $out : '';
}

# started; true once it accepts connections (within 5 s)
sub start {
    my ($self) = @_;
    my @cmd = $self->_command;
    my $pid = fork // die "fork: $!\n";

    if (!$pid) {
        open STDOUT, '>>', "$self->{dir}/redis.log";
        open STDERR, '>&', \*STDOUT;
        exec(@cmd) or POSIX::_exit(127);
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
