package Fairgate::Engine;

# build/fairgate-engine as a helper process of a test: its own segment,
# started and stopped by the test (also when it dies), and a strict reader
# of the SSE streams local mode sends.

use strict;
use warnings;

use Exporter 'import';
use File::Temp ();
use JSON::PP ();
use POSIX ();
use Time::HiRes ();

use Fairgate::Test ();

our @EXPORT_OK = qw(parse_sse check_chunk wait_attached);

my $ROOT = do {
    my $d = __FILE__;
    $d =~ s{/t/lib/Fairgate/Engine\.pm$}{} or $d = '.';
    $d eq '' ? '.' : $d;
};

our $MODEL = "$ROOT/../shared/models/stories260K.gguf";

my $seq = 0;
my %live;


# new(backend => 'sim'|'cpu', model => PATH, args => [...], shm => NAME)
sub new {
    my ($class, %o) = @_;
    my $self = bless {
        backend => $o{backend} // 'sim',
        model => $o{model} // $MODEL,
        args => $o{args} // [],
        shm => $o{shm} // sprintf('/fg-test-%d-%d', $$, ++$seq),
        dir => File::Temp::tempdir('fairgate-engine-XXXXXX', TMPDIR => 1,
                                   CLEANUP => 1),
    }, $class;
    return $self;
}

sub shm { $_[0]{shm} }
sub pid { $_[0]{pid} }
sub model { $_[0]{model} }
sub log_file { "$_[0]{dir}/engine.log" }


# the workers run as nobody when the tests run as root: the segment gets
# their group
sub _group {
    return () if $> != 0;
    my $gid = (getpwnam 'nobody')[3];
    my $name = defined $gid ? getgrgid $gid : undef;
    return $name ? ('--shm-group', $name) : ();
}


sub start {
    my ($self) = @_;
    my @cmd = (($ENV{FAIRGATE_BUILD} // "$ROOT/build") . "/fairgate-engine",
               '--backend', $self->{backend},
               '--model', $self->{model}, '--shm', $self->{shm}, _group(),
               @{ $self->{args} });
    my $log = $self->log_file;
    my $mark = -s $log // 0;

    my $pid = fork // die "fork: $!\n";
    if ($pid == 0) {
        open STDOUT, '>>', $log or POSIX::_exit(127);
        open STDERR, '>&', \*STDOUT or POSIX::_exit(127);
        exec @cmd or POSIX::_exit(127);
    }

    $self->{pid} = $pid;
    $live{$pid} = 1;

    # serving once it says so
    my $deadline = Time::HiRes::time() + 30;
    while (Time::HiRes::time() < $deadline) {
        if (open my $fh, '<', $log) {
            seek $fh, $mark, 0;
            local $/;
            my $text = <$fh> // '';
            return 1 if $text =~ /serving/;
        }
        if (waitpid($pid, POSIX::WNOHANG()) == $pid) {
            delete $live{$pid};
            $self->{pid} = undef;
            die "fairgate-engine exited at start:\n" . $self->log_text;
        }
        Time::HiRes::sleep(0.01);
    }
    die "fairgate-engine did not start:\n" . $self->log_text;
}

sub log_text {
    my ($self) = @_;
    open my $fh, '<', $self->log_file or return '';
    local $/;
    return <$fh> // '';
}


# stop(signal): TERM by default; KILL for a crash
sub stop {
    my ($self, $sig) = @_;
    my $pid = $self->{pid} or return;
    kill $sig // 'TERM', $pid;
    Fairgate::Test::reap($pid);
    delete $live{$pid};
    $self->{pid} = undef;
    # a killed engine leaves its segment
    unlink "/dev/shm$self->{shm}";
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


# whether n engines (1 unless told) are attached in the worker that
# answers, their status read, before the seconds (10) are over
sub wait_attached {
    my ($s, $n, $seconds) = @_;
    return Fairgate::Test::wait_for($seconds // 10, sub {
        (grep { $_->{attached} && $_->{load} }
              @{ $s->status_json->{engines} // [] }) == ($n // 1);
    });
}

# The events of an SSE body, strictly: each event one "data: " line and a
# blank line, nothing else; JSON payloads decoded; the last one [DONE].
# Dies with what is wrong.
sub parse_sse {
    my ($body) = @_;
    die "the stream does not end with a blank line\n"
        unless $body =~ /\n\n\z/;
    my @events = split /\n\n/, $body;
    my @out;
    for my $i (0 .. $#events) {
        my $e = $events[$i];
        die "event $i is not one data line: '$e'\n"
            unless $e =~ /\Adata: ([^\n]*)\z/;
        my $data = $1;
        if ($data eq '[DONE]') {
            die "[DONE] before the end\n" if $i != $#events;
            push @out, '[DONE]';
            next;
        }
        my $j = eval { JSON::PP->new->decode($data) }
            // die "event $i is not JSON: $@";
        push @out, $j;
    }
    die "no [DONE] at the end\n" unless @out && $out[-1] eq '[DONE]';
    return @out;
}


# OpenAI's chunk schema (chat.completion.chunk or text_completion), of a
# response of n choices (1 when not given); the problems found, none when
# it conforms
# a delta's tool calls: an index each; a call's first delta has its id,
# type function and name, every one a string of arguments or none
sub _check_tool_deltas {
    my ($calls) = @_;
    return 'delta.tool_calls' unless ref $calls eq 'ARRAY' && @$calls;
    my @bad;
    for my $c (@$calls) {
        my $fn = $c->{function} // {};
        push @bad, 'tool_calls.index' unless ($c->{index} // '') =~ /^\d+$/;
        push @bad, 'tool_calls.id'
            if defined $c->{id} && ($c->{id} eq '' || ref $c->{id}
                                    || ($c->{type} // '') ne 'function'
                                    || !defined $fn->{name});
        push @bad, 'tool_calls.function.arguments'
            if defined $fn->{arguments} && ref $fn->{arguments};
    }
    return @bad;
}

sub check_chunk {
    my ($c, $kind, $n) = @_;
    my @bad;
    my $chat = $kind eq 'chat';
    push @bad, 'no object' unless ref $c eq 'HASH';
    return @bad if @bad;
    push @bad, "id $c->{id}"
        unless ($c->{id} // '') =~ ($chat ? qr/^chatcmpl-\w+$/
                                          : qr/^cmpl-\w+$/);
    push @bad, "object $c->{object}"
        unless ($c->{object} // '') eq ($chat ? 'chat.completion.chunk'
                                               : 'text_completion');
    push @bad, 'created' unless ($c->{created} // '') =~ /^\d+$/;
    push @bad, 'model' unless defined $c->{model} && !ref $c->{model};
    push @bad, 'choices' unless ref $c->{choices} eq 'ARRAY';
    return @bad if @bad;
    if (!@{ $c->{choices} }) {
        push @bad, 'an empty choices without usage'
            unless ref $c->{usage} eq 'HASH';
        return @bad;
    }
    push @bad, 'more than one choice' if @{ $c->{choices} } != 1;
    my $ch = $c->{choices}[0];
    push @bad, 'index' unless ($ch->{index} // '') =~ /^\d+\z/
                              && $ch->{index} < ($n // 1);
    push @bad, 'finish_reason'
        unless !defined $ch->{finish_reason}
               || $ch->{finish_reason} =~ /^(?:stop|length|tool_calls)$/;
    push @bad, 'logprobs' unless exists $ch->{logprobs}
                                 && !defined $ch->{logprobs};
    if ($chat) {
        push @bad, 'delta' unless ref $ch->{delta} eq 'HASH';
        my %ok = map { $_ => 1 } qw(role content refusal tool_calls);
        push @bad, "delta.$_" for grep { !$ok{$_} } keys %{ $ch->{delta} };
        push @bad, _check_tool_deltas($ch->{delta}{tool_calls})
            if exists $ch->{delta}{tool_calls};
    } else {
        push @bad, 'text' unless defined $ch->{text} && !ref $ch->{text};
    }
    return @bad;
}

1;
