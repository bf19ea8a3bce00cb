package Soak::Rig;

# The soak's system on loopback: a fairgate-engine (sim backend), a
# redis-server, a mock upstream that faults on command, and nginx with
# the module serving both local mode (/v1/) and drop-in (/up/v1/) with
# keyed tenants of different weights, counters shared through Redis.
# Each fault the soak injects is a method here that returns once the
# fault is in place; recover() returns once the system is whole again.

use strict;
use warnings;

use Digest::SHA qw(sha256_hex);
use File::Temp ();
use JSON::PP ();

use Fairgate::Engine;
use Fairgate::MockUpstream;
use Fairgate::Redis;
use Fairgate::Test;

# tenants: key => weight (keys are sk-NAME)
our %TENANTS = (heavy => 2, light => 1, batch => 1);

# 2 ms a token: a local stream of 40 tokens is about 0.1 s
my @STEP = ('--step-model', 'linear:0.0001,0.002');

my $J = JSON::PP->new->canonical;


sub new {
    my ($class, %o) = @_;
    my $dir = File::Temp::tempdir('fairgate-soak-XXXXXX', TMPDIR => 1,
                                  CLEANUP => !$ENV{FAIRGATE_KEEP});
    chmod 0755, $dir;
    my $self = bless { dir => $dir, workers => $o{workers} // 2,
                       redis => Fairgate::Redis->new(dir => $dir) }, $class;
    open my $fh, '>', "$dir/keys" or die "$dir/keys: $!\n";
    print {$fh} map { sha256_hex("sk-$_") . " $_ - $TENANTS{$_}\n" }
                sort keys %TENANTS;
    close $fh;
    return $self;
}

sub dir { $_[0]{dir} }
sub server { $_[0]{s} }
sub engine { $_[0]{engine} }


# everything up, or whatever started stopped again and a death
sub start {
    my ($self) = @_;
    eval { $self->_start; 1 } and return $self;
    my $err = $@;
    $self->stop;
    die $err;
}


sub _start {
    my ($self) = @_;
    $self->{redis}->start or die "redis-server did not start\n";
    $self->{up} = Fairgate::MockUpstream->new(
        fault_file => "$self->{dir}/upstream-fault");
    $self->{engine} = Fairgate::Engine->new(backend => 'sim',
                                            args => [@STEP]);
    $self->{engine}->start;
    my $s = $self->{s} = Fairgate::Test::Server->new(
        workers => $self->{workers}, $self->_conf);
    $s->start or die $s->last_error;
    $self->{started} = 1;
}


sub _conf {
    my ($self) = @_;
    my ($shm, $model) = ($self->{engine}->shm, $self->{engine}->model);
    my ($dir, $up) = ($self->{dir}, $self->{up}->addr);
    my $rport = $self->{redis}->port;
    return (http_config => <<"END", config => <<"END");
    fairgate_engine stories shm=$shm model=$model dead_after=500ms;
    fairgate_zone zone=llm:16m inflight=14 policy=vtc;
    fairgate_zone zone=up:16m inflight=8 policy=vtc;
    fairgate_redis 127.0.0.1:$rport interval=100ms timeout=1s
                   id=soak prefix=soak:;
END
    location /v1/ {
        fairgate zone=llm queue=200 timeout=20s;
        fairgate_keys $dir/keys;
        fairgate_engine_pass;
    }
    location /up/v1/ {
        fairgate zone=up queue=200 timeout=20s;
        fairgate_keys $dir/keys;
        proxy_buffering off;
        proxy_read_timeout 2s;
        proxy_pass http://$up/v1/;
    }
    location /status { fairgate_status; }
END
}


sub status {
    my ($self) = @_;
    my $r = eval { $self->{s}->get('/status') } or return undef;
    return undef unless ($r->{status} // 0) == 200;
    return eval { $J->decode($r->{body}) };
}


# every fault: name => [inject, recover]
sub faults {
    my ($self) = @_;
    my $e = sub { $self->{engine} };
    my $up = sub { my $w = shift; sub { $self->_upstream($w) } };
    return (
        engine_kill   => [sub { $e->()->stop('KILL') },
                          sub { $self->_engine_restart }],
        engine_stop   => [sub { kill 'STOP', $e->()->pid },
                          sub { kill 'CONT', $e->()->pid }],
        worker_kill   => [sub { kill 'KILL', ($self->{s}->worker_pids)[0] },
                          sub { 1 }],
        reload        => [sub { $self->{s}->reload or die
                                    $self->{s}->last_error }, sub { 1 }],
        redis_kill    => [sub { $self->{redis}->kill },
                          sub { $self->{redis}->start }],
        redis_stop    => [sub { kill 'STOP', $self->{redis}->pid },
                          sub { kill 'CONT', $self->{redis}->pid }],
        upstream_reset => [$up->('reset'), $up->('')],
        upstream_stall => [$up->('stall'), $up->('')],
    );
}


sub _upstream {
    my ($self, $word) = @_;
    open my $fh, '>', "$self->{dir}/upstream-fault" or die "$!\n";
    print {$fh} "$word\n";
    close $fh;
}


# a new engine on the same segment: the workers find it by themselves
sub _engine_restart {
    my ($self) = @_;
    $self->{engine} = Fairgate::Engine->new(
        backend => 'sim', shm => $self->{engine}->shm, args => [@STEP]);
    $self->{engine}->start;
}


# pids to sample: nginx master and workers, the engine
sub pids {
    my ($self) = @_;
    return { nginx => [$self->{s}->pid, $self->{s}->worker_pids],
             engine => [$self->{engine}->pid] };
}


sub stop {
    my ($self) = @_;
    my $rc = $self->{started} ? $self->{s}->stop : 0;
    $self->{engine}->stop if $self->{engine} && $self->{engine}->pid;
    $self->{up}->stop if $self->{up};
    $self->{redis}->kill;
    %$self = (dir => $self->{dir}, redis => $self->{redis});
    return $rc;
}

1;
