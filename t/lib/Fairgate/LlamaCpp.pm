package Fairgate::LlamaCpp;

# fairgate's engine and llama.cpp on the same GGUF file, each behind the
# same line protocol (t/llamacpp/fg_engine_drive.c: build/t/fg_engine_drive
# for fairgate's cpu backend; t/node/llamacpp_drive.mjs for llama.cpp
# through node-llama-cpp): started, asked, and stopped (also when the
# caller dies), every answer waited for within a bound.  For the greedy
# agreement test (t/092-llamacpp-agree.t) and the benchmark
# (t/bench/bench_llamacpp.pl).  Core Perl only.

use strict;
use warnings;

use Exporter 'import';
use File::Temp ();
use IO::Handle ();
use IO::Select ();
use JSON::PP ();
use POSIX ();
use Time::HiRes ();

use Fairgate::Test qw($REPO $BUILD);

our @EXPORT_OK = qw(missing gen_model);

my %live;


# why the comparison cannot run here (a sentence), or undef
sub missing {
    return "$BUILD/t/fg_engine_drive is missing: run make"
        unless -x "$BUILD/t/fg_engine_drive";
    return 'node is not installed (make test installs nodejs and npm)'
        unless grep { -x "$_/node" } split /:/, $ENV{PATH} // '';
    return 't/node/node_modules/node-llama-cpp is missing: run '
           . '"cd t/node && npm ci" (make test does)'
        unless -f "$REPO/t/node/node_modules/node-llama-cpp/package.json"
            && -d "$REPO/t/node/node_modules/\@node-llama-cpp/linux-x64";
    return undef;
}


# gen_model(PATH, ARGS...): fairgate-gguf-gen -q -o PATH ARGS, or dies
sub gen_model {
    my ($path, @args) = @_;
    my $out = `"$BUILD/fairgate-gguf-gen" -q -o "$path" @args 2>&1`;
    die "fairgate-gguf-gen -o $path @args: $out" if $?;
    return $path;
}


# new(side => 'fairgate'|'llamacpp', model => PATH, threads => N,
#     timeout => S, node_dir => DIR, window => 1): the side's driver,
# started on the model (llama.cpp's from DIR, t/node by default: a copy
# may hold fewer CPU builds); dies with its words when it does not answer
# its first mem within the timeout (60); window: fairgate's sliding-window
# layers keep only their windows (fg_engine_drive's window, the engine's
# --kv-window)
sub new {
    my ($class, %o) = @_;
    my $self = bless {
        side => $o{side}, model => $o{model}, threads => $o{threads} // 1,
        kv_type => $o{kv_type} // 'f16',
        window => $o{window} ? 1 : 0,
        timeout => $o{timeout} // 60,
        node_dir => $o{node_dir} // "$REPO/t/node",
        err => File::Temp->new(TEMPLATE => 'fairgate-drive-XXXXXX',
                               TMPDIR => 1),
    }, $class;

    $self->_start;

    return $self;
}

sub _start {
    my ($self) = @_;
    my @cmd = $self->{side} eq 'fairgate'
        ? ("$BUILD/t/fg_engine_drive", $self->{model}, $self->{threads},
           $self->{kv_type}, $self->{window} ? ('window') : ())
        : ('node', "$self->{node_dir}/llamacpp_drive.mjs", $self->{model},
           $self->{threads});

    pipe my $in_r, my $in_w or die "pipe: $!\n";
    pipe my $out_r, my $out_w or die "pipe: $!\n";

    my $pid = fork // die "fork: $!\n";
    if ($pid == 0) {
        open STDIN, '<&', $in_r or POSIX::_exit(127);
        open STDOUT, '>&', $out_w or POSIX::_exit(127);
        open STDERR, '>&', $self->{err} or POSIX::_exit(127);
        exec @cmd or POSIX::_exit(127);
    }

    close $in_r;
    close $out_w;
    $in_w->autoflush(1);

    @$self{qw(pid in out buf)} = ($pid, $in_w, $out_r, '');
    $live{$pid} = 1;

    $self->{mem0} = $self->ask('mem');
}


# load(PATH): the driver on another model: llama.cpp's loads it in the
# same process (node-llama-cpp starts once), fairgate's starts again
sub load {
    my ($self, $path) = @_;

    $self->{model} = $path;

    if ($self->{side} eq 'llamacpp') {
        $self->{mem0} = $self->ask("load $path");
        return;
    }

    $self->stop;
    $self->_start;
}

sub side { $_[0]{side} }
sub pid { $_[0]{pid} }

# what the driver wrote on stderr
sub stderr {
    my ($self) = @_;
    open my $fh, '<', $self->{err}->filename or return '';
    local $/;
    return <$fh> // '';
}


# ask(LINE, TIMEOUT): the answer to one command, a hash; dies when there
# is none within the timeout (the driver's, 60 s) or it is an error
sub ask {
    my ($self, $line, $timeout) = @_;
    my $what = "$self->{side} driver on $self->{model}";

    print { $self->{in} } "$line\n" or die "$what: gone: $!\n" . $self->stderr;

    my $sel = IO::Select->new($self->{out});
    my $deadline = Time::HiRes::time() + ($timeout // $self->{timeout});

    while ($self->{buf} !~ /\n/) {
        my $left = $deadline - Time::HiRes::time();
        die "$what: no answer to \"$line\" within the timeout\n"
            . $self->stderr if $left <= 0;
        next unless $sel->can_read($left);

        my $n = sysread $self->{out}, $self->{buf}, 65536,
                        length $self->{buf};
        die "$what: exited on \"$line\"\n" . $self->stderr unless $n;
    }

    $self->{buf} =~ s/^([^\n]*)\n// or die;
    my $answer = eval { JSON::PP::decode_json($1) }
        // die "$what: not JSON: $1\n";
    die "$what: $line: $answer->{error}\n" if defined $answer->{error};

    return $answer;
}


# quit, and wait for it (10 s: Fairgate::Test::reap) before killing it
sub stop {
    my ($self) = @_;
    my $pid = $self->{pid} or return;

    print { $self->{in} } "quit\n";
    close $self->{in};
    Fairgate::Test::reap($pid);

    delete $live{$pid};
    $self->{pid} = undef;
}

sub DESTROY {
    my ($self) = @_;
    local ($?, $@);
    $self->stop if $self->{pid};
}

END {
    for my $pid (keys %live) {
        kill 'KILL', $pid;
        waitpid $pid, 0;
    }
}

1;
