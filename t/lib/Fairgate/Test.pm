package Fairgate::Test;

# A small Test::Nginx-style harness in core Perl.  See the POD at the end for
# the block format and the plain-Perl API.

use strict;
use warnings;

use Cwd ();
use Digest::SHA ();
use Exporter 'import';
use File::Basename ();
use File::Temp ();
use IO::Select;
use IO::Socket::INET;
use POSIX ();
use Scalar::Util ();
use Test::More ();
use Time::HiRes ();

our @EXPORT = qw(run_tests run_blocks run_refused blocks);
our @EXPORT_OK = qw(parse_blocks run_block free_port run_cmd http_request
                    node_bin node_missing
                    parse_response wait_for gateway keys_file shuffled reap
                    agent_prompt static_upstream $REPO $BUILD $NGINX $MODULE);

our $REPO = Cwd::abs_path(File::Basename::dirname(__FILE__) . '/../../..');
our $NGINX = $ENV{FAIRGATE_NGINX} // '/usr/sbin/nginx';
# the build tested: build/, or FAIRGATE_BUILD's (make test-asan's
# build/asan)
our $BUILD = $ENV{FAIRGATE_BUILD} // "$REPO/build";
our $MODULE = "$BUILD/ngx_http_fairgate_module.so";

# whether servers load the module unless told otherwise
our $LOAD_MODULE = 1;

# seconds: bounds on every wait, never a fixed delay
our $START_TIMEOUT = 10;
our $STOP_TIMEOUT = 10;
our $RELOAD_TIMEOUT = 10;
our $REQUEST_TIMEOUT = 10;

# polling interval of the bounded waits above
our $POLL = 0.01;

# always checked after a block unless the block expects them in error_log
our @DEFAULT_NO_ERROR_LOG = ('[alert]', '[crit]', '[emerg]');


# block parsing

sub blocks {
    no warnings 'once';
    my $fh = \*main::DATA;
    die "Fairgate::Test: the test has no __DATA__ section\n"
        unless defined fileno($fh);
    local $/;
    my $text = <$fh>;
    return parse_blocks($text);
}


sub parse_blocks {
    my ($text) = @_;
    my (@blocks, $block, $section);

    for my $line (split /^/, $text) {
        if ($line =~ /^===\s*(.*?)\s*$/) {
            $block = { name => $1, raw => {}, filters => {}, order => [] };
            push @blocks, $block;
            undef $section;
            next;
        }

        next unless $block;

        if ($line =~ /^---\s+(\w+)(.*)$/) {
            my ($name, $rest) = ($1, $2);
            die "Fairgate::Test: duplicate section '$name' "
                . "in '$block->{name}'\n" if exists $block->{raw}{$name};
            push @{ $block->{order} }, $name;

            if ($rest =~ /^\s*:\s*(.*?)\s*$/) {
                $block->{raw}{$name} = "$1\n";
                $block->{filters}{$name} = [];
                undef $section;
            } else {
                $block->{raw}{$name} = '';
                $block->{filters}{$name} = [split ' ', $rest];
                $section = $name;
            }
            next;
        }

        $block->{raw}{$section} .= $line if defined $section;
    }

    for my $b (@blocks) {
        for my $name (@{ $b->{order} }) {
            $b->{$name} = _section_value($b, $name);
        }
    }

    return @blocks;
}


# the text up to the next section, blank lines at its end dropped, one
# newline kept; "chomp" drops that newline too, "eval" evaluates the text

sub _section_value {
    my ($b, $name) = @_;
    my $v = $b->{raw}{$name};

    $v =~ s/(?:^[ \t]*\n)+\z//m;
    $v =~ s/\n*\z/\n/ if length $v;

    for my $f (@{ $b->{filters}{$name} }) {
        if ($f eq 'chomp') {
            chomp $v;
        } elsif ($f eq 'eval') {
            my $code = $v;
            $v = eval "package main; no strict; $code";
            die "Fairgate::Test: '--- $name eval' in '$b->{name}': $@" if $@;
        } else {
            die "Fairgate::Test: unknown filter '$f' in '$b->{name}'\n";
        }
    }

    return $v;
}


sub _lines {
    my ($v) = @_;
    return () unless defined $v;
    return @$v if ref $v eq 'ARRAY';
    return ($v) if ref $v;
    return grep { /\S/ } map { s/^\s+|\s+$//gr } split /\n/, $v;
}


sub _scalar {
    my ($v) = @_;
    return undef unless defined $v;
    return $v if ref $v;
    return $v =~ s/^\s+|\s+$//gr;
}


# block running

sub run_tests {
    run_blocks(blocks());
    Test::More::done_testing();
}


sub run_blocks {
    run_block($_) for @_;
}


# configurations nginx -t must refuse, a table of [name, http_config,
# config, what error_log says (a line or a qr//)], each run as a
# must_die block
sub run_refused {
    run_blocks(map {
        my ($name, $http, $conf, $log) = @$_;
        { name => $name, http_config => $http, config => $conf // '',
          must_die => '', error_log => $log }
    } @_);
}


sub run_block {
    my ($block) = @_;
    my $name = $block->{name};

    if (defined $block->{SKIP}) {
        Test::More::subtest($name => sub {
            Test::More::plan(skip_all => _scalar($block->{SKIP}) || 'SKIP');
        });
        return;
    }

    my $server;

    Test::More::subtest($name => sub {
        my $ok = eval { $server = _run_block($block); 1 };
        my $err = $@;

        if (!$ok) {
            Test::More::fail('block ran to its end');
            Test::More::diag("died: $err");
            if ($server) {
                Test::More::diag($server->log_tail);
            }
        }

        $server->stop if $server;
    });

    return $server;
}


sub _run_block {
    my ($b) = @_;

    my $server = Fairgate::Test::Server->new(
        main_config => $b->{main_config} // '',
        http_config => $b->{http_config} // '',
        config      => $b->{config} // '',
        log_level   => _scalar($b->{log_level}) // 'info',
        workers     => _scalar($b->{workers}) // 1,
    );

    if (defined $b->{must_die}) {
        my ($rc, $out) = $server->test_config;
        Test::More::ok($rc != 0, 'nginx -t fails')
            or Test::More::diag("nginx -t succeeded:\n$out");
        _check_log($b, $out . $server->error_log, 1);
        return $server;
    }

    if (!$server->start) {
        Test::More::fail('nginx starts');
        Test::More::diag($server->last_error);
        return $server;
    }

    if (defined $b->{request}) {
        my $res = $server->request($b->{request},
                                   headers => [_lines($b->{more_headers})]);
        _check_response($b, $res, $server);
    }

    my $status = $server->stop;
    Test::More::is($status, 0, 'nginx exits cleanly');

    _check_log($b, $server->error_log, 0);

    return $server;
}


sub _check_response {
    my ($b, $res, $server) = @_;

    if (!defined $res->{status}) {
        Test::More::fail('response received');
        Test::More::diag("no valid response: $res->{error}\n"
                         . $server->log_tail);
        return;
    }

    my $code = _scalar($b->{error_code}) // 200;
    Test::More::is($res->{status}, $code, 'status code')
        or Test::More::diag($server->log_tail);

    if (defined $b->{response_body}) {
        Test::More::is($res->{body}, $b->{response_body}, 'response_body');
    }

    if (defined $b->{response_body_like}) {
        my $re = $b->{response_body_like};
        $re = ref $re ? $re : do { chomp(my $s = $re); qr/$s/s };
        Test::More::like($res->{body}, $re, 'response_body_like');
    }

    for my $line (_lines($b->{response_headers})) {
        if ($line =~ /^!\s*([\w-]+)$/) {
            Test::More::ok(!defined $res->{headers}{lc $1},
                           "response header $1 absent")
                or Test::More::diag("$1: $res->{headers}{lc $1}");
            next;
        }

        my ($name, $value) = $line =~ /^([\w-]+)\s*:\s*(.*)$/
            or die "Fairgate::Test: bad response_headers line '$line'\n";
        Test::More::is($res->{headers}{lc $name}, $value,
                       "response header $name");
    }

    for my $line (_lines($b->{response_headers_like})) {
        my ($name, $re) = $line =~ /^([\w-]+)\s*:\s*(.*)$/
            or die "Fairgate::Test: bad response_headers_like line '$line'\n";
        Test::More::like($res->{headers}{lc $name} // '', qr/$re/,
                         "response header $name like");
    }
}


sub _check_log {
    my ($b, $log, $must_die) = @_;
    my @want = _lines($b->{error_log});

    for my $w (@want) {
        if (ref $w eq 'Regexp') {
            Test::More::like($log, $w, "error_log has $w");
        } else {
            Test::More::ok(index($log, $w) >= 0, "error_log has '$w'")
                or Test::More::diag("error log:\n$log");
        }
    }

    my @deny = _lines($b->{no_error_log});

    if (!$must_die) {
        for my $d (@DEFAULT_NO_ERROR_LOG) {
            push @deny, $d unless grep { !ref $_ && index($_, $d) >= 0 } @want;
        }
    }

    for my $d (@deny) {
        if (ref $d eq 'Regexp') {
            Test::More::unlike($log, $d, "error_log lacks $d");
        } else {
            my @hits = grep { index($_, $d) >= 0 } split /\n/, $log;
            Test::More::ok(!@hits, "error_log lacks '$d'")
                or Test::More::diag(join "\n", @hits);
        }
    }
}


# helpers

sub free_port {
    my $s = IO::Socket::INET->new(Listen => 1, LocalAddr => '127.0.0.1',
                                  LocalPort => 0, Proto => 'tcp')
        or die "Fairgate::Test: cannot bind a loopback port: $!\n";
    my $port = $s->sockport;
    close $s;
    return $port;
}


# polls a condition until it is true or the seconds are over: its last
# value (the tests never sleep to synchronise)

sub wait_for {
    my ($seconds, $cond) = @_;
    my $deadline = Time::HiRes::time() + $seconds;

    while (Time::HiRes::time() < $deadline) {
        my $v = $cond->();
        return $v if $v;
        Time::HiRes::sleep(0.02);
    }

    return $cond->();
}


# A gateway with one zone, llm, started (or the test dies): /v1/ queued in
# it and passed on, /status.
#   engines => [[NAME, ENGINE, 'more params'], ...] in local mode (ENGINE:
#              a Fairgate::Engine, or { shm => ..., model => ... })
#   pass => what /v1/ passes to (fairgate_engine_pass; a proxy_pass)
#   zone => more params of the zone; queue => its queue (100);
#   user => the identity ($remote_addr); v1 => more directives of /v1/;
#   server => directives before it; status => the status location's
#   (/status); locations => more locations; http => more directives of
#   http (a log_format); workers => N
sub gateway {
    my (%o) = @_;
    my $engines = join '', map {
        my ($name, $e, $more) = @$_;
        my ($shm, $model) = ref $e eq 'HASH' ? @$e{qw(shm model)}
                                             : ($e->shm, $e->model);
        join(' ', "    fairgate_engine $name shm=$shm model=$model",
             $more // ()) . ";\n";
    } @{ $o{engines} // [] };
    my $zone = join ' ', 'zone=llm:16m', $o{zone} // ();
    my $queue = $o{queue} // 100;
    my $user = $o{user} // '$remote_addr';
    my $pass = $o{pass} // 'fairgate_engine_pass';
    my $status = $o{status} // '/status';
    my ($server, $v1, $more) = map { $_ // '' } @o{qw(server v1 locations)};

    my $s = Fairgate::Test::Server->new(
        ($o{workers} ? (workers => $o{workers}) : ()),
        http_config => "$engines    fairgate_zone $zone;\n"
                       . ($o{http} // ''),
        config => <<"END");
$server    location /v1/ {
        fairgate zone=llm queue=$queue timeout=30s;
        fairgate_identity user=$user;
$v1        $pass;
    }
    location $status { fairgate_status; }
$more
END
    $s->start or die $s->last_error;
    return $s;
}

# A keys file (fairgate_keys) in a directory of its own, the test's for its
# life: a line a [KEY, USER, APP, WEIGHT, LIMITS...], KEY as its SHA-256;
# returns its path
sub keys_file {
    my $dir = File::Temp::tempdir('fairgate-keys-XXXXXX', TMPDIR => 1,
                                  CLEANUP => 1);
    chmod 0755, $dir;
    open my $fh, '>', "$dir/keys" or die "$dir/keys: $!\n";
    for (@_) {
        my ($key, @rest) = @$_;
        print {$fh} join(' ', Digest::SHA::sha256_hex($key), @rest), "\n";
    }
    close $fh;
    return "$dir/keys";
}


# a deterministic shuffle of the list (its own generator: the same order
# everywhere, for the seed)
sub shuffled {
    my ($seed, @a) = @_;
    for (my $i = $#a; $i > 0; $i--) {
        $seed = ($seed * 1103515245 + 12345) % 2**31;
        my $j = $seed % ($i + 1);
        @a[$i, $j] = @a[$j, $i];
    }
    return @a;
}


# waits up to 10 s for the child to exit, then kills it (KILL) and waits
sub reap {
    my ($pid) = @_;
    my $deadline = Time::HiRes::time() + 10;
    while (Time::HiRes::time() < $deadline) {
        return if waitpid($pid, POSIX::WNOHANG()) == $pid;
        Time::HiRes::sleep(0.01);
    }
    if (kill 0, $pid) {
        kill 'KILL', $pid;
        waitpid $pid, 0;
    }
}


# group g's system prompt of so many words, its own from the first words
# on: the prefix-cache tests' and benchmarks' shared prefixes
sub agent_prompt {
    my ($g, $words) = @_;
    my $x = 7919 * ($g + 1);
    my @w;
    for (1 .. $words) {
        $x = ($x * 1103515245 + 12345) % 2**31;
        push @w, qw(plan tool call answer model cache token route peer fair
                    queue tenant reply brief check)[$x % 15];
    }
    return "You are agent $g of the fleet. " . join(' ', @w) . '.';
}


# A plain nginx (no module) answering every request with the same chat
# completion, its usage prompt_tokens (14) and 10 more: the benchmarks'
# upstream; started, or the caller dies
sub static_upstream {
    my (%o) = @_;
    my $in = $o{prompt_tokens} // 14;
    my $completion = '{"id":"bench","object":"chat.completion","model":"m",'
        . '"choices":[{"index":0,"finish_reason":"stop","message":{"role":'
        . '"assistant","content":"Hello, benchmark. This is a short '
        . 'answer."}}],"usage":{"prompt_tokens":' . $in
        . ',"completion_tokens":10,"total_tokens":' . ($in + 10) . '}}';

    my $s = Fairgate::Test::Server->new(
        module => 0,
        ($o{workers} ? (workers => $o{workers}) : ()),
        config => <<"END");
    access_log off;
    keepalive_requests 1000000;

    location / {
        default_type application/json;
        return 200 '$completion';
    }
END
    $s->start or die $s->last_error;
    return $s;
}


# node's path, or undef where it is not installed
sub node_bin {
    my $dir = (grep { -x "$_/node" } split /:/, $ENV{PATH} // '')[0];
    return $dir ? "$dir/node" : undef;
}


# why node or one of t/node's PACKAGES is missing (make test installs
# them: conf/deps.sh), or undef: a test's skip
sub node_missing {
    my (@packages) = @_;

    return 'node is not installed (make test installs nodejs and npm)'
        unless node_bin();

    for my $pkg (@packages) {
        return "t/node/node_modules/$pkg is missing: run \"cd t/node && "
               . 'npm ci" (make test does)'
            unless -f "$REPO/t/node/node_modules/$pkg/package.json";
    }

    return undef;
}


# runs a command, stdout and stderr together: (wait status, output)

sub run_cmd {
    my @cmd = @_;

    my $pid = open(my $fh, '-|') // die "Fairgate::Test: fork: $!\n";

    if (!$pid) {
        open STDIN, '<', '/dev/null';
        open STDERR, '>&', \*STDOUT;
        { no warnings 'exec'; exec { $cmd[0] } @cmd; }
        print "exec $cmd[0]: $!\n";
        POSIX::_exit(127);
    }

    local $/;
    my $out = <$fh> // '';
    close $fh;

    return ($?, $out);
}


sub _build_request {
    my ($req, %o) = @_;

    my ($method, $uri, $version, $body);

    if (ref $req eq 'HASH') {
        ($method, $uri, $body) = @$req{qw(method uri body)};
        $o{headers} = [@{ $o{headers} // [] }, @{ $req->{headers} // [] }];
    } else {
        my ($line, $rest) = split /\n/, $req, 2;
        ($method, $uri, $version) = split ' ', $line;
        $body = $rest if defined $rest && length $rest;
    }

    die "Fairgate::Test: bad request '$req'\n" unless $method && $uri;
    $version //= 'HTTP/1.1';

    my @headers = @{ $o{headers} // [] };
    my %have = map { /^([\w-]+)\s*:/ ? (lc $1 => 1) : () } @headers;

    unshift @headers, 'Host: localhost' unless $have{host};
    push @headers, 'Connection: close' unless $have{connection};
    push @headers, 'Content-Length: ' . length($body // '')
        if !$have{'content-length'} && !$have{'transfer-encoding'}
           && (defined $body || $method =~ /^(?:POST|PUT|PATCH)$/);

    return "$method $uri $version\r\n"
           . join('', map { "$_\r\n" } @headers)
           . "\r\n" . ($body // '');
}


sub parse_response {
    my ($raw) = @_;
    my %res = (raw => $raw, headers => {}, header_list => []);

    my $i = index($raw, "\r\n\r\n");
    if ($i < 0) {
        $res{error} = 'incomplete response head: ' . substr($raw, 0, 200);
        return \%res;
    }

    my ($status_line, @lines) = split /\r\n/, substr($raw, 0, $i);
    my $body = substr($raw, $i + 4);

    if ($status_line !~ m{^HTTP/\d\.\d (\d{3})(?: (.*))?$}) {
        $res{error} = "bad status line '$status_line'";
        return \%res;
    }

    @res{qw(status reason)} = ($1, $2 // '');

    for my $line (@lines) {
        my ($name, $value) = $line =~ /^([^:]+):\s*(.*)$/ or next;
        push @{ $res{header_list} }, [$name, $value];
        my $k = lc $name;
        $res{headers}{$k} = defined $res{headers}{$k}
                            ? "$res{headers}{$k}, $value" : $value;
    }

    if (($res{headers}{'transfer-encoding'} // '') =~ /chunked/i) {
        # read leniently; chunked_end says whether the framing was whole,
        # as curl checks it: each chunk's data and CRLF, then the last
        # chunk and the trailer's end (curl exits 18 without them)
        my ($decoded, $whole) = ('', 1);
        $res{chunked_end} = 0;
        while ($body =~ s/^([0-9a-fA-F]+)[^\r\n]*\r\n//) {
            my $n = hex $1;
            if ($n == 0) {
                $res{chunked_end} = $whole
                    && $body =~ /^(?:[^\r\n]+\r\n)*\r\n\z/ ? 1 : 0;
                last;
            }
            $whole = 0 if length($body) < $n + 2;
            $decoded .= substr($body, 0, $n, '');
            $body =~ s/^\r\n// or $whole = 0;
        }
        $body = $decoded;
    } elsif (defined $res{headers}{'content-length'}) {
        $body = substr($body, 0, $res{headers}{'content-length'});
    }

    $res{body} = $body;
    return \%res;
}


# sends raw requests on their own connections, all before reading any
# response; returns the raw responses (read until the server closes)

sub _exchange {
    my ($port, $reqs, $timeout) = @_;
    my (@socks, %raw, %idx);
    my $sel = IO::Select->new;

    for my $i (0 .. $#$reqs) {
        my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                      PeerPort => $port, Proto => 'tcp',
                                      Timeout => $timeout)
            or die "Fairgate::Test: connect to 127.0.0.1:$port: $!\n";
        $s->autoflush(1);
        print {$s} $reqs->[$i];
        push @socks, $s;
        $raw{$i} = '';
        $idx{Scalar::Util::refaddr($s)} = $i;
        $sel->add($s);
    }

    my $deadline = Time::HiRes::time() + $timeout;

    while ($sel->count) {
        my $left = $deadline - Time::HiRes::time();
        last if $left <= 0;

        for my $s ($sel->can_read($left)) {
            my $i = $idx{Scalar::Util::refaddr($s)};
            my $n = sysread($s, my $buf, 65536);
            if (!$n) {
                $sel->remove($s);
                close $s;
                next;
            }
            $raw{$i} .= $buf;
        }
    }

    my %late = map { $idx{Scalar::Util::refaddr($_)} => 1 } $sel->handles;
    close $_ for $sel->handles;

    return map { [$raw{$_}, $late{$_} ? 1 : 0] } 0 .. $#$reqs;
}


sub http_request {
    my ($port, $req, %o) = @_;
    my ($r) = _exchange($port, [_build_request($req, %o)],
                        $o{timeout} // $REQUEST_TIMEOUT);
    my $res = parse_response($r->[0]);
    $res->{error} = 'timed out' . ($res->{error} ? ": $res->{error}" : '')
        if $r->[1];
    delete $res->{status} if $r->[1];
    return $res;
}


# stop every server still running when the test ends, also after a die

my %RUNNING;

END {
    my $status = $?;
    for my $s (values %RUNNING) {
        $s->stop if $s;
    }
    $? = $status;
}

for my $sig (qw(INT TERM HUP)) {
    $SIG{$sig} //= sub { die "Fairgate::Test: caught SIG$sig\n" };
}


package Fairgate::Test::Server;

use strict;
use warnings;

use JSON::PP ();
use POSIX ();
use Time::HiRes ();


sub new {
    my ($class, %o) = @_;

    my $self = bless {
        main_config => '',
        http_config => '',
        config      => '',
        log_level   => 'info',
        workers     => 1,
        module      => $Fairgate::Test::LOAD_MODULE,
        %o,
        owner       => $$,
    }, $class;

    $self->{prefix} = File::Temp::tempdir('fairgate-t-XXXXXX', TMPDIR => 1,
                                          CLEANUP => !$ENV{FAIRGATE_KEEP});

    # workers run as nobody when the tests run as root
    chmod 0755, $self->{prefix};

    for my $d (qw(conf logs html tmp)) {
        mkdir "$self->{prefix}/$d", 0755
            or die "Fairgate::Test: mkdir $self->{prefix}/$d: $!\n";
    }

    if ($self->{module} && !-f $Fairgate::Test::MODULE) {
        die "Fairgate::Test: $Fairgate::Test::MODULE is missing: run make\n";
    }

    $self->{port} //= Fairgate::Test::free_port();
    $self->write_conf;

    return $self;
}


sub prefix { $_[0]{prefix} }
sub port { $_[0]{port} }
sub pid { $_[0]{pid} }
sub last_error { $_[0]{last_error} // '' }
sub conf_file { "$_[0]{prefix}/conf/nginx.conf" }
sub error_log_file { "$_[0]{prefix}/logs/error.log" }


sub conf_text {
    my ($self) = @_;
    my $p = $self->{prefix};

    my $user = '';
    if ($> == 0) {
        my $gid = (getpwnam 'nobody')[3];
        my $group = defined $gid ? scalar getgrgid $gid : undef;
        $user = "user nobody" . ($group ? " $group" : '') . ";\n";
    }

    my $module = $self->{module}
                 ? "load_module $Fairgate::Test::MODULE;\n" : '';

    return <<"END";
# written by Fairgate::Test
$module
daemon off;
master_process on;
worker_processes $self->{workers};
${user}error_log $p/logs/error.log $self->{log_level};
pid $p/logs/nginx.pid;

$self->{main_config}

events {
    worker_connections 1024;
    accept_mutex off;
}

http {
    access_log $p/logs/access.log;

    client_body_temp_path $p/tmp/client_body;
    proxy_temp_path $p/tmp/proxy;
    fastcgi_temp_path $p/tmp/fastcgi;
    uwsgi_temp_path $p/tmp/uwsgi;
    scgi_temp_path $p/tmp/scgi;

    default_type text/plain;

$self->{http_config}

    server {
        listen 127.0.0.1:$self->{port};
        server_name localhost;

$self->{config}
    }
}
END
}


sub write_conf {
    my ($self) = @_;
    my $file = $self->conf_file;
    open my $fh, '>', $file or die "Fairgate::Test: write $file: $!\n";
    print {$fh} $self->conf_text;
    close $fh or die "Fairgate::Test: write $file: $!\n";
}


sub _nginx {
    my ($self, @args) = @_;
    my $p = $self->{prefix};
    return ($Fairgate::Test::NGINX, '-p', "$p/", '-e', "$p/logs/error.log",
            '-c', $self->conf_file, @args);
}


# nginx -t: (wait status, output)

sub test_config {
    my ($self) = @_;
    return Fairgate::Test::run_cmd($self->_nginx('-t'));
}


sub error_log {
    my ($self, $from) = @_;
    open my $fh, '<', $self->error_log_file or return '';
    seek $fh, $from, 0 if $from;
    local $/;
    return <$fh> // '';
}


# make test-asan: UBSan in nginx's workers writes to stderr, the error
# log (its log_path is ignored there: the module's UBSan runtime starts at
# the first report, once nginx has cleared the workers' environment); the
# lines go into the reports' folder, where t/asan/reports.sh finds them
sub _sanitizer_lines {
    my ($self, $pid) = @_;
    my $dir = $ENV{FAIRGATE_SAN_DIR} or return;
    my @lines = grep { /runtime error:|Sanitizer/ }
                split /\n/, $self->error_log;
    return unless @lines;
    open my $fh, '>', "$dir/nginx-error-log.$pid" or return;
    print {$fh} map { "$_\n" } $self->error_log_file, @lines;
    close $fh;
}


# a position in the error log, for error_log($mark) and wait_for_log
sub log_mark { -s $_[0]->error_log_file // 0 }


sub log_tail {
    my ($self, $n) = @_;
    my @l = split /\n/, $self->error_log;
    $n //= 30;
    @l = @l[-$n .. -1] if @l > $n;
    my $err = '';
    if (open my $fh, '<', "$self->{prefix}/logs/stderr.log") {
        local $/;
        $err = <$fh> // '';
    }
    return "error log of $self->{prefix} (last lines):\n" . join("\n", @l)
           . (length $err ? "\nstderr:\n$err" : '');
}


# waits until the log, from mark on, matches re; returns the match or undef
sub wait_for_log {
    my ($self, $re, %o) = @_;
    my $from = $o{mark} // 0;
    my $deadline = Time::HiRes::time() + ($o{timeout} // 5);

    while (1) {
        my $log = $self->error_log($from);
        return $& if $log =~ $re;
        return undef if Time::HiRes::time() > $deadline;
        Time::HiRes::sleep($Fairgate::Test::POLL);
    }
}


# the last line of logs/FILE (an access log) that starts with URI, once
# written; '' when none came within 5 s
sub access_line {
    my ($self, $file, $uri) = @_;
    my $deadline = Time::HiRes::time() + 5;

    while (Time::HiRes::time() < $deadline) {
        if (open my $fh, '<', "$self->{prefix}/logs/$file") {
            my @l = grep { index($_, "$uri ") == 0 } <$fh>;
            return $l[-1] if @l;
        }
        Time::HiRes::sleep($Fairgate::Test::POLL);
    }
    return '';
}


# the lines of logs/FILE (an access log) once n are written, or those
# there after 5 s: they come at the end of a request, which may be after
# the client read its answer
sub access_lines {
    my ($self, $file, $n) = @_;
    my $deadline = Time::HiRes::time() + 5;
    my @l;

    while (1) {
        @l = ();
        if (open my $fh, '<', "$self->{prefix}/logs/$file") {
            @l = map { chomp; $_ } <$fh>;
        }
        return @l if @l >= $n || Time::HiRes::time() > $deadline;
        Time::HiRes::sleep($Fairgate::Test::POLL);
    }
}


sub start {
    my ($self) = @_;

    die "Fairgate::Test: already running\n" if $self->{pid};

    for my $attempt (1 .. 3) {
        my $r = $self->_start_once;
        return 1 if $r eq 'ok';

        if ($r eq 'in use' && $attempt < 3) {
            $self->{port} = Fairgate::Test::free_port();
            $self->write_conf;
            next;
        }

        $self->{last_error} = "nginx did not start ($r)\n" . $self->log_tail;
        return 0;
    }
}


sub _start_once {
    my ($self) = @_;
    my $mark = $self->log_mark;
    my $pidfile = "$self->{prefix}/logs/nginx.pid";
    unlink $pidfile;

    my $pid = fork // die "Fairgate::Test: fork: $!\n";

    if (!$pid) {
        open STDIN, '<', '/dev/null';
        open STDOUT, '>>', "$self->{prefix}/logs/stderr.log";
        open STDERR, '>&', \*STDOUT;
        my @cmd = $self->_nginx;
        { no warnings 'exec'; exec { $cmd[0] } @cmd; }
        print "exec $cmd[0]: $!\n";
        POSIX::_exit(127);
    }

    $self->{pid} = $pid;
    $RUNNING{Scalar::Util::refaddr($self)} = $self;
    Scalar::Util::weaken($RUNNING{Scalar::Util::refaddr($self)});

    my $deadline = Time::HiRes::time() + $Fairgate::Test::START_TIMEOUT;

    # ready: the master wrote its pid file, which it does once its
    # listening sockets are open, and the port accepts connections

    while (1) {
        if (waitpid($pid, POSIX::WNOHANG()) == $pid) {
            $self->{exit_status} = $?;
            delete $self->{pid};
            return $self->error_log($mark) =~ /Address already in use/
                   ? 'in use' : "exited with status $?";
        }

        if (open my $fh, '<', $pidfile) {
            my $p = <$fh> // '';
            if ($p =~ /^$pid$/
                && IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                         PeerPort => $self->{port},
                                         Proto => 'tcp', Timeout => 1))
            {
                return 'ok';
            }
        }

        if (Time::HiRes::time() > $deadline) {
            $self->stop;
            return "not ready in $Fairgate::Test::START_TIMEOUT s";
        }

        Time::HiRes::sleep($Fairgate::Test::POLL);
    }
}


# the master's children, read from /proc
sub worker_pids {
    my ($self) = @_;
    my $master = $self->{pid} or return ();
    my @pids;

    opendir my $d, '/proc' or return ();
    for my $pid (grep { /^\d+$/ } readdir $d) {
        open my $fh, '<', "/proc/$pid/stat" or next;
        my $stat = <$fh> // next;
        my ($ppid) = substr($stat, rindex($stat, ')') + 2) =~ /^\S+ (\d+)/;
        push @pids, $pid if defined $ppid && $ppid == $master;
    }

    return sort { $a <=> $b } @pids;
}


# graceful stop (QUIT), then TERM, then KILL; returns the master's status
sub stop {
    my ($self) = @_;
    my $pid = $self->{pid};

    return $self->{exit_status} unless $pid && $self->{owner} == $$;

    for my $sig (qw(QUIT TERM KILL)) {
        my @workers = $sig eq 'KILL' ? $self->worker_pids : ();
        kill $sig, $pid;
        kill 'KILL', @workers if @workers;

        my $deadline = Time::HiRes::time() + $Fairgate::Test::STOP_TIMEOUT;

        while (Time::HiRes::time() < $deadline) {
            if (waitpid($pid, POSIX::WNOHANG()) == $pid) {
                $self->{exit_status} = $?;
                $self->_sanitizer_lines($pid);
                delete $self->{pid};
                delete $RUNNING{Scalar::Util::refaddr($self)};
                return $self->{exit_status};
            }
            Time::HiRes::sleep($Fairgate::Test::POLL);
        }
    }

    die "Fairgate::Test: nginx $pid does not die\n";
}


# "nginx -s reload", optionally with new configuration parts; waits until
# the old workers are gone and as many new ones run.  Returns true, or false
# with last_error saying why (a bad configuration, a timeout).

sub reload {
    my ($self, %o) = @_;
    my $wait_old = delete $o{wait_old} // 1;

    die "Fairgate::Test: not running\n" unless $self->{pid};

    for my $k (keys %o) {
        die "Fairgate::Test: reload: unknown option '$k'\n"
            unless $k =~ /^(?:main_config|http_config|config|workers)$/;
        $self->{$k} = $o{$k};
    }
    $self->write_conf;

    my $mark = $self->log_mark;
    my %old = map { $_ => 1 } $self->worker_pids;

    my ($rc, $out) = Fairgate::Test::run_cmd($self->_nginx('-s', 'reload'));
    if ($rc != 0) {
        $self->{last_error} = "nginx -s reload failed:\n$out";
        return 0;
    }

    my $deadline = Time::HiRes::time() + $Fairgate::Test::RELOAD_TIMEOUT;

    while (1) {
        my $log = $self->error_log($mark);

        if ($log =~ /\[emerg\]/) {
            $self->{last_error} = "reload failed:\n$log";
            return 0;
        }

        my @now = $self->worker_pids;
        my @new = grep { !$old{$_} } @now;

        if (@new >= $self->{workers} && (!$wait_old || @new == @now)) {
            return 1;
        }

        if (Time::HiRes::time() > $deadline) {
            $self->{last_error} = "reload not done in "
                . "$Fairgate::Test::RELOAD_TIMEOUT s\n" . $self->log_tail;
            return 0;
        }

        Time::HiRes::sleep($Fairgate::Test::POLL);
    }
}


sub url { "http://127.0.0.1:$_[0]{port}$_[1]" }


sub connect {
    my ($self) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                  PeerPort => $self->{port}, Proto => 'tcp',
                                  Timeout => $Fairgate::Test::REQUEST_TIMEOUT)
        or die "Fairgate::Test: connect to port $self->{port}: $!\n";
    return $s;
}


# request("GET /x") or request("POST /x\nbody", headers => [...]);
# returns { status, reason, headers => { lc name => value }, header_list,
# body, raw }, or { error } when no valid response came
sub request {
    my ($self, $req, %o) = @_;
    return Fairgate::Test::http_request($self->{port}, $req, %o);
}


sub get { $_[0]->request("GET $_[1]", @_[2 .. $#_]) }


# GET URI (/status) as JSON; {} when the answer is not JSON (a server
# that is stopping, a socket error)
sub status_json {
    my ($self, $uri) = @_;
    my $body = $self->get($uri // '/status')->{body} // '';

    return eval { JSON::PP->new->decode($body) } // {};
}


# polls the status (URI, /status) until cond holds of it, 10 s at the
# most: whether it did, and the last status read
sub status_until {
    my ($self, $cond, $uri) = @_;
    my $st;
    my $ok = Fairgate::Test::wait_for(10, sub {
        $st = $self->status_json($uri);
        $cond->($st);
    });

    return ($ok, $st);
}


# the status's engines by model
sub engines {
    my ($self) = @_;

    return { map { $_->{model} => $_ }
             @{ $self->status_json->{engines} // [] } };
}


sub post {
    my ($self, $uri, $body, %o) = @_;
    return $self->request({ method => 'POST', uri => $uri, body => $body },
                          %o);
}


# sends a request now and returns its socket, to read_later() when the
# test is ready: the request may wait in the gateway's queue meanwhile
sub send_later {
    my ($self, $req, %o) = @_;
    my $sock = $self->connect;
    $sock->autoflush(1);
    print {$sock} Fairgate::Test::_build_request($req, %o);
    return $sock;
}


# the response to a send_later() request, read until the server closes
sub read_later {
    my ($self, $sock) = @_;
    local $/;
    my $raw = <$sock>;
    close $sock;
    return Fairgate::Test::parse_response($raw // '');
}


# raw bytes in, raw bytes out (until the server closes or the timeout)
sub raw_request {
    my ($self, $bytes, %o) = @_;
    my ($r) = Fairgate::Test::_exchange($self->{port}, [$bytes],
                  $o{timeout} // $Fairgate::Test::REQUEST_TIMEOUT);
    return $r->[0];
}


# sends every request on its own connection before reading any response;
# returns the parsed responses in the same order
sub concurrent {
    my ($self, $reqs, %o) = @_;
    my @raw = Fairgate::Test::_exchange($self->{port},
                  [map { Fairgate::Test::_build_request($_, %o) } @$reqs],
                  $o{timeout} // $Fairgate::Test::REQUEST_TIMEOUT);

    return map {
        my $res = Fairgate::Test::parse_response($_->[0]);
        if ($_->[1]) {
            $res->{error} = 'timed out';
            delete $res->{status};
        }
        $res;
    } @raw;
}


sub DESTROY {
    my ($self) = @_;
    local ($@, $!, $?);
    eval { $self->stop };
}


1;

__END__

=head1 NAME

Fairgate::Test - Test::Nginx-style harness for fairgate, core Perl only

=head1 SYNOPSIS

    #!/usr/bin/env perl
    use strict;
    use warnings;
    use FindBin;
    use lib "$FindBin::Bin/lib";
    use Fairgate::Test;

    run_tests();

    __DATA__

    === TEST 1: status is JSON
    --- http_config
    fairgate_zone zone=main:8m;
    --- config
    location /status { fairgate_status; }
    --- request
    GET /status
    --- response_headers
    Content-Type: application/json
    --- response_body_like
    "policy": "vtc"

Run with C<prove --exec '' t/NAME.t> from the repository root (the tests are
executable); C<make test> runs them all after building the module.

=head1 BLOCKS

Each C<=== NAME> block runs as one subtest against a fresh nginx
(C</usr/sbin/nginx>, or C<$FAIRGATE_NGINX>) in its own temporary prefix, on a
free loopback port, with C<build/ngx_http_fairgate_module.so> loaded.
Sections (C<--- name>, the text up to the next section; trailing blank lines
dropped, one final newline kept):

=over

=item main_config, http_config, config

Configuration for the main context, the http block and the one server block
(C<listen 127.0.0.1:PORT>).

=item log_level, workers

The error log level (default C<info>) and worker_processes (default 1).

=item request

C<METHOD URI [HTTP/1.x]> then, on the next lines, the body.  Sent with
C<Host> and C<Connection: close> (and C<Content-Length> when there is a
body) unless more_headers sets them.

=item more_headers

Request header lines, C<Name: value>.

=item error_code

The expected status (default 200).

=item response_body, response_body_like

The exact body; a regular expression (C</s>) the body must match.

=item response_headers, response_headers_like

C<Name: value> lines that must match exactly, C<!Name> for a header that
must be absent; C<Name: regex> lines.

=item error_log, no_error_log

Lines that must (must not) occur in the error log, as substrings; with
C<eval>, strings or C<qr//> patterns.  The log is read after nginx stopped.
C<[alert]>, C<[crit]> and C<[emerg]> are always forbidden unless error_log
names them; the block also checks that nginx exits with status 0.

=item must_die

C<nginx -t> must fail; error_log is then checked against its output and the
error log.

=item SKIP

Skips the block.

=back

Filters after a section's name: C<chomp> drops the final newline, C<eval>
evaluates the text as Perl (a string, a C<qr//>, or an array of them).  A
value may also follow the name inline: C<--- error_code: 404>.

=head1 PLAIN PERL API

    my $s = Fairgate::Test::Server->new(http_config => ..., config => ...,
        main_config => ..., log_level => 'debug', workers => 2,
        module => 1);
    my ($status, $output) = $s->test_config;     # nginx -t
    $s->start or die $s->last_error;              # waits for the port
    my $res = $s->get('/status');                 # {status, headers, body}
    $res = $s->post('/v1/chat/completions', $json,
                    headers => ['Content-Type: application/json']);
    $res = $s->request("GET /x", headers => [...]);
    my $raw = $s->raw_request("GET / HTTP/1.0\r\n\r\n");
    my @res = $s->concurrent(["GET /a", "GET /b"]); # all sent, then read
    my $sock = $s->send_later({ method => 'POST', uri => '/v1/x',
                                body => $json });  # may wait in the queue
    my $res = $s->read_later($sock);               # later, when ready
    my $mark = $s->log_mark;
    $s->reload(config => ...) or diag $s->last_error; # nginx -s reload
    $s->wait_for_log(qr/reused/, mark => $mark);
    my $log = $s->error_log($mark);
    my $exit = $s->stop;                          # wait status of master

Servers still running when the test ends are stopped, also after a die or
SIGINT/SIGTERM.  C<FAIRGATE_KEEP=1> keeps the prefixes for a post-mortem.

=cut
