package Fairgate::Browser;

# A headless chromium for the tests and the dashboard's screenshot, driven
# through the DevTools protocol over a pipe (--remote-debugging-pipe: JSON
# messages ended by a NUL byte, commands on its fd 3, answers and events on
# its fd 4), in core Perl: no WebSocket, no npm.  It sees no network but
# the loopback (every host name resolves to nothing), and keeps what the
# page asked for, logged and threw, for the tests to look at.
#
#     my $b = Fairgate::Browser->new(width => 1400, height => 1000);
#     $b->navigate('http://127.0.0.1:PORT/dashboard'); # until it loaded
#     my $v = $b->value('document.title');           # a value, or dies
#     $b->wait_for('document.body.dataset.polls > 2', 10);
#     my @urls = $b->requests;                       # what it fetched
#     my @errors = $b->errors;                       # exceptions, CSP
#     $b->pause(60);                                 # let it run a minute
#     $b->screenshot('out.png');                     # the whole page
#     $b->stop;

use strict;
use warnings;

use Exporter 'import';
use File::Temp ();
use IO::Handle;
use IO::Select;
use JSON::PP ();
use MIME::Base64 ();
use POSIX ();
use Time::HiRes ();

use Fairgate::Test ();

our @EXPORT_OK = qw(chromium);

my $JSON = JSON::PP->new->utf8->canonical;
my %live;


# the browser to run: $FAIRGATE_CHROMIUM when set (a path), else Debian's
# chromium on the PATH; undef when there is none
sub chromium {
    if (defined $ENV{FAIRGATE_CHROMIUM}) {
        my $c = $ENV{FAIRGATE_CHROMIUM};
        return (-x $c && !-d _) ? $c : undef;
    }

    for my $c (qw(chromium chromium-browser)) {
        for my $dir (split /:/, $ENV{PATH} // '') {
            return "$dir/$c" if -x "$dir/$c" && !-d _;
        }
    }

    return undef;
}


sub new {
    my ($class, %o) = @_;
    my $bin = chromium() or die "Fairgate::Browser: chromium is not "
                                . "installed (apt-get install chromium)\n";
    my $dir = File::Temp::tempdir('fairgate-browser-XXXXXX', TMPDIR => 1,
                                  CLEANUP => 1);
    my ($w, $h) = ($o{width} // 1400, $o{height} // 1000);

    # fd 3: what it reads (our commands), fd 4: what it writes
    pipe(my $cmd_r, my $cmd_w) or die "pipe: $!\n";
    pipe(my $out_r, my $out_w) or die "pipe: $!\n";

    my $pid = fork // die "fork: $!\n";

    if ($pid == 0) {
        close $cmd_w;
        close $out_r;

        # copies first: dup2 of a descriptor onto itself would keep the
        # close-on-exec flag Perl gave it
        my ($r, $w) = (POSIX::dup(fileno $cmd_r), POSIX::dup(fileno $out_w));
        (defined $r && defined $w && defined POSIX::dup2($r, 3)
         && defined POSIX::dup2($w, 4)) or POSIX::_exit(127);
        open STDIN, '<', '/dev/null';
        open STDOUT, '>', "$dir/chromium.log";
        open STDERR, '>&', \*STDOUT;
        exec $bin, '--headless', '--no-sandbox', '--disable-gpu',
             '--disable-background-networking', '--disable-component-update',
             '--disable-sync', '--no-first-run', '--disable-extensions',
             '--disable-dev-shm-usage', '--mute-audio',
             '--disable-default-apps', '--no-default-browser-check',
             '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
             "--user-data-dir=$dir/profile", "--window-size=$w,$h",
             '--hide-scrollbars', '--remote-debugging-pipe', 'about:blank'
            or POSIX::_exit(127);
    }

    close $cmd_r;
    close $out_w;
    $cmd_w->autoflush(1);
    $live{$pid} = 1;

    my $self = bless {
        pid => $pid, dir => $dir, in => $cmd_w, out => $out_r, buf => '',
        id => 0, replies => {}, events => [], width => $w, height => $h,
        timeout => $o{timeout} // 30,
    }, $class;

    my $t = $self->call('Target.createTarget', { url => 'about:blank' });
    my $s = $self->call('Target.attachToTarget',
                        { targetId => $t->{targetId},
                          flatten => JSON::PP::true });
    $self->{session} = $s->{sessionId};

    $self->call($_, {}, 1) for qw(Page.enable Network.enable Runtime.enable
                                  Log.enable);
    $self->call('Emulation.setDeviceMetricsOverride',
                { width => $w, height => $h, deviceScaleFactor => 1,
                  mobile => JSON::PP::false }, 1);

    return $self;
}


sub log_text {
    my ($self) = @_;
    open my $fh, '<', "$self->{dir}/chromium.log" or return '';
    local $/;
    return <$fh> // '';
}


# reads what chromium wrote, for up to $wait seconds; keeps each message
sub _read {
    my ($self, $wait) = @_;
    my $sel = IO::Select->new($self->{out});

    return 0 unless $sel->can_read($wait);

    my $n = sysread $self->{out}, my $chunk, 1 << 20;
    die "Fairgate::Browser: chromium is gone\n" . $self->log_text
        unless $n;

    $self->{buf} .= $chunk;

    while ((my $end = index $self->{buf}, "\0") >= 0) {
        my $msg = $JSON->decode(substr $self->{buf}, 0, $end);
        substr($self->{buf}, 0, $end + 1) = '';

        if (defined $msg->{id}) {
            $self->{replies}{$msg->{id}} = $msg;
        } else {
            push @{ $self->{events} }, $msg;
        }
    }

    return 1;
}


# a command, to the browser or (with $page) to the page; its result
sub call {
    my ($self, $method, $params, $page) = @_;
    my $id = ++$self->{id};
    my %msg = (id => $id, method => $method, params => $params // {});
    $msg{sessionId} = $self->{session} if $page;

    syswrite $self->{in}, $JSON->encode(\%msg) . "\0"
        or die "Fairgate::Browser: write: $!\n";

    my $deadline = Time::HiRes::time() + $self->{timeout};

    until ($self->{replies}{$id}) {
        my $left = $deadline - Time::HiRes::time();
        die "Fairgate::Browser: no answer to $method\n" if $left <= 0;
        $self->_read($left);
    }

    my $r = delete $self->{replies}{$id};
    die "Fairgate::Browser: $method: $r->{error}{message}\n" if $r->{error};
    return $r->{result};
}


# the events of a method seen so far
sub events {
    my ($self, $method) = @_;
    $self->_read(0) while $self->_read(0);
    return grep { $_->{method} eq $method } @{ $self->{events} };
}


# loads the URL and waits for its load event
sub navigate {
    my ($self, $url) = @_;
    my $seen = () = $self->events('Page.loadEventFired');
    my $r = $self->call('Page.navigate', { url => $url }, 1);
    die "Fairgate::Browser: $url: $r->{errorText}\n" if $r->{errorText};

    my $deadline = Time::HiRes::time() + $self->{timeout};
    while (Time::HiRes::time() < $deadline) {
        return 1 if $self->events('Page.loadEventFired') > $seen;
        $self->_read(0.1);
    }
    die "Fairgate::Browser: $url did not load\n";
}


# the value of an expression in the page (a promise is awaited)
sub value {
    my ($self, $expr) = @_;
    my $r = $self->call('Runtime.evaluate',
                        { expression => $expr, returnByValue => JSON::PP::true,
                          awaitPromise => JSON::PP::true }, 1);
    if ($r->{exceptionDetails}) {
        my $e = $r->{exceptionDetails};
        die "Fairgate::Browser: $expr: "
            . ($e->{exception}{description} // $e->{text}) . "\n";
    }
    return $r->{result}{value};
}


# polls an expression until it is true, for up to $seconds; its value
sub wait_for {
    my ($self, $expr, $seconds) = @_;
    my $deadline = Time::HiRes::time() + ($seconds // 10);
    my $v;

    while (Time::HiRes::time() < $deadline) {
        $v = $self->value($expr);
        return $v if $v;
        $self->_read(0.05);
    }

    return $v;
}


# lets the page run for $seconds, reading what it sends meanwhile (for a
# picture after a while, not to wait for something: wait_for does)
sub pause {
    my ($self, $seconds) = @_;
    my $end = Time::HiRes::time() + $seconds;
    my $left;

    $self->_read($left) while ($left = $end - Time::HiRes::time()) > 0;
}


# the URLs the page asked for, in order
sub requests {
    my ($self) = @_;
    return map { $_->{params}{request}{url} }
           $self->events('Network.requestWillBeSent');
}


# what went wrong in the page: uncaught exceptions, and errors it logged
# (a fetch the Content-Security-Policy refused is one)
sub errors {
    my ($self) = @_;
    return (map { my $d = $_->{params}{exceptionDetails};
                  'exception: ' . ($d->{exception}{description}
                                   // $d->{text}) }
            $self->events('Runtime.exceptionThrown')),
           (map { "$_->{params}{entry}{source}: $_->{params}{entry}{text}" }
            grep { $_->{params}{entry}{level} eq 'error' }
            $self->events('Log.entryAdded'));
}


# a PNG of the whole page, its width the window's
sub screenshot {
    my ($self, $file) = @_;
    my $m = $self->call('Page.getLayoutMetrics', {}, 1);
    my $size = $m->{cssContentSize} // $m->{contentSize};
    my $h = POSIX::ceil($size->{height});
    $h = $self->{height} if $h < $self->{height};

    my $r = $self->call('Page.captureScreenshot',
                        { format => 'png', captureBeyondViewport =>
                              JSON::PP::true,
                          clip => { x => 0, y => 0, width => $self->{width},
                                    height => $h, scale => 1 } }, 1);

    open my $fh, '>:raw', $file or die "$file: $!\n";
    print {$fh} MIME::Base64::decode_base64($r->{data});
    close $fh or die "$file: $!\n";
    return $file;
}


sub stop {
    my ($self) = @_;
    my $pid = delete $self->{pid} or return;

    eval { local $self->{timeout} = 5; $self->call('Browser.close') };
    close $self->{in};

    Fairgate::Test::reap($pid);
    delete $live{$pid};
    close $self->{out};
}


sub DESTROY {
    my ($self) = @_;
    local ($@, $!, $?);
    eval { $self->stop };
}


END {
    for my $pid (keys %live) {
        kill 'KILL', $pid;
        waitpid $pid, 0;
    }
}


1;
