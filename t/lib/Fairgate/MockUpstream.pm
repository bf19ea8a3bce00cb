package Fairgate::MockUpstream;

# An OpenAI-like upstream for the tests, in core Perl: one forked process,
# one event loop (IO::Select), many slow requests at once.  See the POD at
# the end for what it answers and the headers that steer it.

use strict;
use warnings;

use B ();
use IO::Select;
use IO::Socket::INET;
use JSON::PP ();
use MIME::Base64 ();
use POSIX ();
use Socket qw(SOL_SOCKET SO_LINGER SO_REUSEADDR);
use Time::HiRes ();

use File::Temp ();

use Fairgate::Test ();

# the fault file of the server (see FAULTS ON COMMAND)
my $fault_file;


sub new {
    my ($class, %o) = @_;

    my $listen = IO::Socket::INET->new(Listen => 128,
                                       LocalAddr => '127.0.0.1',
                                       LocalPort => 0, Proto => 'tcp',
                                       ReuseAddr => 1)
        or die "Fairgate::MockUpstream: listen: $!\n";

    my $log = $o{log} // File::Temp::tempdir('fairgate-mock-XXXXXX',
                                             TMPDIR => 1, CLEANUP => 1)
                        . '/mock.log';
    open my $fh, '>', $log or die "Fairgate::MockUpstream: $log: $!\n";
    close $fh;

    my $self = bless {
        port  => $listen->sockport,
        log   => $log,
        owner => $$,
    }, $class;

    # prompts remembered, as a prefix cache would (0: none, no report)
    my $cache = $o{prefix_cache} // 0;

    # faults on command: a file whose word the mock reads at each request
    $fault_file = $o{fault_file};

    my $pid = fork // die "Fairgate::MockUpstream: fork: $!\n";

    if (!$pid) {
        $SIG{TERM} = sub { POSIX::_exit(0) };
        # a gateway that hangs up on a stream it holds: EPIPE, not death
        $SIG{PIPE} = 'IGNORE';
        eval { _serve($listen, $log, $cache) };
        print STDERR "Fairgate::MockUpstream: $@" if $@;
        POSIX::_exit(0);
    }

    close $listen;
    $self->{pid} = $pid;

    return $self;
}


sub port { $_[0]{port} }
sub log_file { $_[0]{log} }
sub addr { "127.0.0.1:$_[0]{port}" }


# the log: one line an event, "TIME start|end TAG KEY [CACHED]"
sub events {
    my ($self) = @_;
    open my $fh, '<', $self->{log} or return ();
    my @ev;
    while (my $line = <$fh>) {
        chomp $line;
        my ($t, $what, $tag, $key, $cached) = split /\t/, $line;
        next unless defined $key;
        push @ev, { time => $t, what => $what, tag => $tag, key => $key,
                    (defined $cached ? (cached => $cached) : ()) };
    }
    return @ev;
}


# with prefix_cache: the cached tokens of each request served, by tag
sub cached {
    my ($self) = @_;
    return map { $_->{tag} => $_->{cached} }
           grep { $_->{what} eq 'start' && defined $_->{cached} }
           $self->events;
}


# the order in which requests reached the upstream: their tags
sub served {
    my ($self) = @_;
    return map { $_->{tag} } grep { $_->{what} eq 'start' } $self->events;
}


# the most requests the upstream was serving at once (until a time)
sub max_concurrency {
    my ($self, $until) = @_;
    my ($n, $max) = (0, 0);
    for my $e ($self->events) {
        last if defined $until && $e->{time} > $until;
        $n += $e->{what} eq 'start' ? 1 : -1;
        $max = $n if $n > $max;
    }
    return $max;
}


sub clear_log {
    my ($self) = @_;
    open my $fh, '>', $self->{log} or die "$self->{log}: $!\n";
    close $fh;
}


sub stop {
    my ($self) = @_;
    return unless $self->{pid} && $self->{owner} == $$;
    kill 'TERM', $self->{pid};
    waitpid $self->{pid}, 0;
    delete $self->{pid};
}


sub DESTROY {
    my ($self) = @_;
    local ($@, $!, $?);
    $self->stop;
}


# the server, in the child

my (%conn, @timers, $sel, $logfh, $prefix_cache, @prompts);


sub _now { Time::HiRes::time() }


# the fault the fault file commands now: 'reset', 'close', 'stall' or ''
sub _fault {
    return '' unless defined $fault_file;
    open my $fh, '<', $fault_file or return '';
    my $w = <$fh> // '';
    return $w =~ /^(reset|close|stall)\b/ ? $1 : '';
}


# a reset, not a close: the peer reads ECONNRESET
sub _reset {
    my ($c) = @_;
    return if $c->{closed};
    setsockopt($c->{sock}, SOL_SOCKET, SO_LINGER, pack('ii', 1, 0));
    _close($c);
}


sub _at {
    my ($t, $cb) = @_;
    # inserted in order (after those of the same time): thousands of
    # timers of many streams at once, without sorting them all each time
    my ($lo, $hi) = (0, scalar @timers);
    while ($lo < $hi) {
        my $mid = ($lo + $hi) >> 1;
        if ($timers[$mid][0] <= $t) {
            $lo = $mid + 1;
        } else {
            $hi = $mid;
        }
    }
    splice @timers, $lo, 0, [$t, $cb];
}


sub _log {
    my ($what, $req) = @_;
    printf {$logfh} "%.6f\t%s\t%s\t%s%s\n", _now(), $what,
        $req->{headers}{'x-tag'} // '-', $req->{key} // '-',
        $what eq 'start' && defined $req->{cached} ? "\t$req->{cached}" : '';
}


sub _serve {
    my ($listen, $log, $cache) = @_;

    $prefix_cache = $cache;

    open $logfh, '>>', $log or die "$log: $!\n";
    $logfh->autoflush(1);

    $listen->blocking(0);
    $sel = IO::Select->new($listen);

    while (1) {
        my $timeout = @timers ? $timers[0][0] - _now() : 1;
        $timeout = 0 if $timeout < 0;

        my $wsel = IO::Select->new(map { $_->{sock} }
                                   grep { length $_->{wbuf} } values %conn);

        my ($r, $w) = IO::Select->select($sel, $wsel, undef, $timeout);

        for my $s (@{ $r // [] }) {
            if ($s == $listen) {
                while (my $c = $listen->accept) {
                    $c->blocking(0);
                    $conn{fileno $c} = { sock => $c, rbuf => '', wbuf => '',
                                         busy => 0 };
                    $sel->add($c);
                }
                next;
            }

            my $c = $conn{fileno $s} or next;
            my $n = sysread($s, my $buf, 65536);

            if (!$n) {
                next if !defined $n && $!{EAGAIN};
                _close($c);
                next;
            }

            $c->{rbuf} .= $buf;
            _parse($c);
        }

        for my $s (@{ $w // [] }) {
            my $c = $conn{fileno $s} or next;
            _flush($c);
        }

        while (@timers && $timers[0][0] <= _now()) {
            my $t = shift @timers;
            $t->[1]->();
        }
    }
}


sub _close {
    my ($c) = @_;
    return if $c->{closed};
    $c->{closed} = 1;
    $sel->remove($c->{sock});
    delete $conn{fileno $c->{sock}};
    close $c->{sock};
}


sub _send {
    my ($c, $data, $close) = @_;
    return if $c->{closed};
    $c->{wbuf} .= $data;
    $c->{close_after} = 1 if $close;
    _flush($c);
}


sub _flush {
    my ($c) = @_;
    return if $c->{closed};

    if (length $c->{wbuf}) {
        my $n = syswrite($c->{sock}, $c->{wbuf});
        if (!defined $n) {
            _close($c) unless $!{EAGAIN};
            return;
        }
        substr($c->{wbuf}, 0, $n, '');
    }

    _close($c) if !length $c->{wbuf} && $c->{close_after};
}


sub _parse {
    my ($c) = @_;

    while (!$c->{busy}) {
        my $i = index($c->{rbuf}, "\r\n\r\n");
        return if $i < 0;

        my ($line, @lines) = split /\r\n/, substr($c->{rbuf}, 0, $i);
        my ($method, $uri, $version) = split ' ', $line;
        my %h;
        for (@lines) {
            my ($k, $v) = /^([^:]+):\s*(.*)$/ or next;
            $h{lc $k} = $v;
        }

        my $len = $h{'content-length'} // 0;
        return if length($c->{rbuf}) < $i + 4 + $len;

        my $body = substr($c->{rbuf}, $i + 4, $len);
        substr($c->{rbuf}, 0, $i + 4 + $len, '');

        my $keep = ($version // '') eq 'HTTP/1.1'
                   && lc($h{connection} // '') ne 'close';

        $c->{busy} = 1;
        _request($c, { method => $method, uri => $uri, headers => \%h,
                       body => $body, keep => $keep,
                       http11 => ($version // '') eq 'HTTP/1.1' ? 1 : 0 });
    }
}


sub _request {
    my ($c, $req) = @_;
    my $h = $req->{headers};

    ($req->{key}) = ($h->{authorization} // '') =~ /^Bearer\s+(\S+)/i;
    $req->{key} //= $h->{'x-api-key'} // $h->{'x-user'};

    my $json = eval { JSON::PP->new->decode($req->{body}) } // {};
    $json = {} unless ref $json eq 'HASH';

    # a body of the wrong types: a real server's 400 naming the field
    my $bad = $req->{method} eq 'POST' ? _invalid($json) : undef;
    if (defined $bad) {
        _log('start', $req);
        _log('end', $req);
        _reply($c, $req, 400, 'application/json',
               JSON::PP->new->canonical->encode({ error => {
                   message => "mock: '$bad' is not valid",
                   type => 'invalid_request_error', param => $bad,
                   code => 'invalid_value' } }));
        return;
    }

    $req->{cached} = _prefix_cached($json)
        if $prefix_cache && $req->{method} eq 'POST';

    _log('start', $req);

    my $delay = $h->{'x-mock-delay'} // 0;
    my $tdelay = $h->{'x-mock-token-delay'} // 0;
    my $tokens = $h->{'x-mock-tokens'} // $json->{max_tokens} // 16;
    my $prompt = $h->{'x-mock-prompt-tokens'} // _prompt_tokens($json);
    my $usage = $h->{'x-mock-usage'};
    my $done = sub { _log('end', $req) };

    if ($h->{'x-mock-close'}) {
        _at(_now() + $delay, sub { $done->(); _close($c) });
        return;
    }

    # any bytes as the answer, then the close: an upstream answering
    # nonsense
    if (defined(my $raw = $h->{'x-mock-raw'})) {
        _at(_now() + $delay, sub {
            $done->();
            _send($c, pack('H*', $raw), 1);
        });
        return;
    }

    if (my $status = $h->{'x-mock-status'}) {
        _at(_now() + $delay, sub {
            $done->();
            _reply($c, $req, $status, 'application/json',
                   '{"error":{"message":"mock error","type":"server_error",'
                   . '"param":null,"code":null}}');
        });
        return;
    }

    if ($req->{method} ne 'POST') {
        _reply($c, $req, 200, 'application/json',
               '{"object":"list","data":[{"id":"mock","object":"model"}]}');
        $done->();
        return;
    }

    my $fault = _fault();

    # the other APIs: the Responses API, embeddings, Anthropic's Messages
    my $api = _api_of($req->{uri});
    if ($api ne 'chat') {
        _api_answer($c, $req, $json, $api, delay => $delay, tdelay => $tdelay,
                    done => $done, fault => $fault);
        return;
    }

    my %u = (prompt_tokens => $prompt + 0, completion_tokens => $tokens + 0,
             total_tokens => $prompt + $tokens);

    $u{prompt_tokens_details} = { cached_tokens => $req->{cached} }
        if defined $req->{cached};

    # members of usage as told, whatever they say (a lying upstream)
    if (defined(my $rep = $h->{'x-mock-report'})) {
        my $o = eval { JSON::PP->new->decode($rep) };
        @u{keys %$o} = values %$o if ref $o eq 'HASH';
    }

    if ($json->{stream}) {
        $usage //= ($json->{stream_options} // {})->{include_usage} ? 1 : 0;

        # chunked to HTTP/1.1, as servers stream (a close within it is a
        # broken stream), else delimited by the close (X-Mock-Chunked: 0|1)
        my $chunked = $h->{'x-mock-chunked'} // $req->{http11};
        my $send = sub {
            my ($data, $close) = @_;
            $data = sprintf("%x\r\n%s\r\n", length $data, $data)
                    . ($close ? "0\r\n\r\n" : '') if $chunked;
            _send($c, $data, $close);
        };

        _at(_now() + $delay, sub {
            _send($c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                      . "Cache-Control: no-cache\r\nConnection: close\r\n"
                      . ($chunked ? "Transfer-Encoding: chunked\r\n" : '')
                      . "\r\n");
        });

        # the first delta says the role, as OpenAI's does (clients that
        # build typed messages from the deltas, LangChain's, need it)
        for my $i (1 .. $tokens) {
            my $delta = { content => 'tok ',
                          ($i == 1 ? (role => 'assistant') : ()) };
            _at(_now() + $delay + $i * $tdelay, sub {
                $send->('data: ' . _chunk($delta) . "\n\n");
            });
            # mid-stream: reset or close after two chunks, or stall for ever
            if ($fault && $i == 2) {
                _at(_now() + $delay + $i * $tdelay,
                    sub { $done->(); $fault eq 'reset' ? _reset($c)
                                                       : _close($c) })
                    if $fault ne 'stall';
                return;
            }
        }

        _at(_now() + $delay + ($tokens + 1) * $tdelay, sub {
            $send->('data: ' . _chunk({}, 'stop') . "\n\n");
            $send->('data: ' . JSON::PP->new->canonical->encode({
                      id => 'mock', object => 'chat.completion.chunk',
                      choices => [], usage => \%u }) . "\n\n") if $usage;
            $send->("data: [DONE]\n\n", 1);
            $done->();
        });

        return;
    }

    $usage //= 1;

    my $out = {
        id => 'mock', object => 'chat.completion', model => 'mock',
        choices => [{ index => 0, finish_reason => 'stop',
                      message => { role => 'assistant',
                                   content => 'tok ' x $tokens } }],
        ($usage ? (usage => \%u) : ()),
    };

    # canonical JSON puts usage last, as servers do; or first, on request
    my $text = JSON::PP->new->canonical->encode($out);

    if ($h->{'x-mock-usage-first'} && $usage) {
        delete $out->{usage};
        $text = '{"usage": ' . JSON::PP->new->canonical->encode(\%u) . ', '
                . substr(JSON::PP->new->canonical->encode($out), 1);
    }

    if ($fault) {
        _at(_now() + $delay, sub { $done->(); _reset($c) })
            if $fault eq 'reset';
        return;
    }

    _at(_now() + $delay, sub {
        $done->();
        _reply($c, $req, 200, 'application/json', $text);
    });
}


# which API a path calls: chat (and completions), responses, embeddings,
# messages (Anthropic's)
sub _api_of {
    my ($uri) = @_;
    $uri =~ s/\?.*//s;
    return $uri =~ m{/v1/messages$} ? 'messages'
         : $uri =~ m{/embeddings$}  ? 'embeddings'
         : $uri =~ m{/responses$}   ? 'responses'
         :                            'chat';
}


# the words of a text, or of the text parts of a list of blocks
sub _words {
    my ($t) = @_;
    return 0 unless defined $t;
    return scalar(() = $t =~ /\S+/g) unless ref $t;
    return 0 unless ref $t eq 'ARRAY';
    my $n = 0;
    for my $p (@$t) {
        $n += ref $p eq 'HASH' ? _words($p->{text} // $p->{content})
                               : _words($p);
    }
    return $n;
}


# the input tokens the mock reports: a word a token (a token id a token),
# plus 3 for the framing of a conversation
sub _api_prompt {
    my ($json, $api) = @_;

    if ($api eq 'embeddings') {
        my $in = $json->{input};
        my @in = ref $in eq 'ARRAY' ? @$in : ($in);
        my $n = 0;
        for my $x (@in) {
            $n += ref $x eq 'ARRAY' ? scalar @$x
                : _is_num($x)       ? 1
                :                     _words($x);
        }
        return $n;
    }

    my $n = 3 + _words($json->{instructions}) + _words($json->{system});
    my $items = $api eq 'messages' ? $json->{messages} : $json->{input};
    return $n + _words($items) unless ref $items eq 'ARRAY';
    for my $m (@$items) {
        $n += ref $m eq 'HASH' ? _words($m->{content}) : _words($m);
    }
    return $n;
}


# an answer of the Responses API, embeddings or Anthropic's Messages API,
# with its usage as the real APIs report it (streamed as they stream)
sub _api_answer {
    my ($c, $req, $json, $api, %o) = @_;
    my $h = $req->{headers};
    my $E = JSON::PP->new->canonical;

    my $max = $api eq 'responses' ? $json->{max_output_tokens}
                                  : $json->{max_tokens};
    my $n = ($h->{'x-mock-tokens'} // $max // 16) + 0;
    my $p = ($h->{'x-mock-prompt-tokens'} // _api_prompt($json, $api)) + 0;
    my $read = ($h->{'x-mock-cached'} // 0) + 0;
    my $write = ($h->{'x-mock-cache-write'} // 0) + 0;
    my $report = eval { JSON::PP->new->decode($h->{'x-mock-report'} // '') };
    $report = {} unless ref $report eq 'HASH';

    my ($body, @head, @tail, $delta);

    if ($api eq 'embeddings') {
        my $in = $json->{input};
        my $k = ref $in eq 'ARRAY' && @$in && !_is_num($in->[0])
                ? scalar @$in : 1;
        # base64 of little-endian floats when asked, as OpenAI answers
        my @v = (0.5, -0.25, 0.125);
        push @v, (0.5) x ($h->{'x-mock-dims'} - 3)
            if ($h->{'x-mock-dims'} // 0) > 3;
        my $vec = ($json->{encoding_format} // '') eq 'base64'
                  ? MIME::Base64::encode_base64(pack('f<*', @v), '') : \@v;
        $body = $E->encode({
            object => 'list', model => 'mock',
            data => [map { { object => 'embedding', index => $_,
                             embedding => $vec } } 0 .. $k - 1],
            usage => { prompt_tokens => $p, total_tokens => $p,
                       %$report } });
        _at(_now() + $o{delay}, sub {
            $o{done}->();
            _reply($c, $req, 200, 'application/json', $body);
        });
        return;
    }

    if ($api eq 'responses') {
        my %u = (input_tokens => $p,
                 input_tokens_details => { cached_tokens => $read },
                 output_tokens => $n,
                 output_tokens_details => { reasoning_tokens => 0 },
                 total_tokens => $p + $n, %$report);
        my $item = { type => 'message', id => 'msg_mock', role => 'assistant',
                     status => 'completed',
                     content => [{ type => 'output_text', annotations => [],
                                   text => 'tok ' x $n }] };
        my %r = (id => 'resp_mock', object => 'response', created_at => 0,
                 model => 'mock', status => 'completed', output => [$item],
                 usage => \%u);
        $body = $E->encode(\%r);
        my $seq = 0;
        my $ev = sub {
            my ($type, %e) = @_;
            "event: $type\ndata: "
            . $E->encode({ type => $type, sequence_number => $seq++, %e })
            . "\n\n";
        };
        @head = ($ev->('response.created',
                       response => { %r, status => 'in_progress',
                                     output => [], usage => undef }),
                 $ev->('response.output_item.added', output_index => 0,
                       item => { %$item, content => [],
                                 status => 'in_progress' }));
        $delta = sub {
            $ev->('response.output_text.delta', item_id => 'msg_mock',
                  output_index => 0, content_index => 0, delta => 'tok ',
                  logprobs => []);
        };
        @tail = ($ev->('response.output_text.done', item_id => 'msg_mock',
                       output_index => 0, content_index => 0,
                       text => 'tok ' x $n),
                 $ev->('response.output_item.done', output_index => 0,
                       item => $item),
                 $ev->('response.completed', response => \%r));
    } else {
        # Anthropic counts the prompt cache's reads and writes apart
        my $in = $p - $read - $write;
        $in = 0 if $in < 0;
        my %u = (input_tokens => $in, cache_creation_input_tokens => $write,
                 cache_read_input_tokens => $read, output_tokens => $n,
                 %$report);
        my %m = (id => 'msg_mock', type => 'message', role => 'assistant',
                 model => 'mock', stop_reason => 'end_turn',
                 stop_sequence => undef,
                 content => [{ type => 'text', text => 'tok ' x $n }],
                 usage => \%u);
        $body = $E->encode(\%m);
        my $ev = sub {
            my ($type, %e) = @_;
            "event: $type\ndata: " . $E->encode({ type => $type, %e })
            . "\n\n";
        };
        my %start = map { $_ => $u{$_} } grep { $_ ne 'output_tokens' }
                    keys %u;
        @head = ($ev->('message_start',
                       message => { %m, content => [], stop_reason => undef,
                                    usage => { %start,
                                               output_tokens => 1 } }),
                 $ev->('content_block_start', index => 0,
                       content_block => { type => 'text', text => '' }),
                 $ev->('ping'));
        $delta = sub {
            $ev->('content_block_delta', index => 0,
                  delta => { type => 'text_delta', text => 'tok ' });
        };
        @tail = ($ev->('content_block_stop', index => 0),
                 $ev->('message_delta',
                       delta => { stop_reason => 'end_turn',
                                  stop_sequence => undef },
                       usage => { output_tokens => $u{output_tokens} }),
                 $ev->('message_stop'));
    }

    if (!$json->{stream}) {
        if ($o{fault}) {
            _at(_now() + $o{delay}, sub { $o{done}->(); _reset($c) })
                if $o{fault} eq 'reset';
            return;
        }
        _at(_now() + $o{delay}, sub {
            $o{done}->();
            _reply($c, $req, 200, 'application/json', $body);
        });
        return;
    }

    _events($c, $req, \@head, [map { $delta->() } 1 .. $n], \@tail, %o);
}


# a stream of SSE events: the head at once, a delta each token delay, the
# tail (its usage) at the end; a fault cuts it after the second delta
sub _events {
    my ($c, $req, $head, $deltas, $tail, %o) = @_;
    my $chunked = $req->{headers}{'x-mock-chunked'} // $req->{http11};
    my $send = sub {
        my ($data, $close) = @_;
        $data = sprintf("%x\r\n%s\r\n", length $data, $data)
                . ($close ? "0\r\n\r\n" : '') if $chunked;
        _send($c, $data, $close);
    };
    my $t0 = _now() + $o{delay};

    _at($t0, sub {
        _send($c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                  . "Cache-Control: no-cache\r\nConnection: close\r\n"
                  . ($chunked ? "Transfer-Encoding: chunked\r\n" : '')
                  . "\r\n");
        $send->(join '', @$head);
    });

    for my $i (1 .. @$deltas) {
        my $d = $deltas->[$i - 1];
        _at($t0 + $i * $o{tdelay}, sub { $send->($d) });
        if ($o{fault} && $i == 2) {
            _at($t0 + $i * $o{tdelay},
                sub { $o{done}->(); $o{fault} eq 'reset' ? _reset($c)
                                                         : _close($c) })
                if $o{fault} ne 'stall';
            return;
        }
    }

    _at($t0 + (@$deltas + 1) * $o{tdelay}, sub {
        $send->(join('', @$tail), 1);
        $o{done}->();
    });
}


# the first field of a request body of the wrong type (as OpenAI's
# schema has it), or undef
sub _is_num {
    my ($v) = @_;
    return 0 if !defined $v || ref $v;
    my $f = B::svref_2object(\$v)->FLAGS;
    return ($f & (B::SVp_IOK() | B::SVp_NOK())) && !($f & B::SVp_POK());
}

sub _is_str { defined $_[0] && !ref $_[0] && !_is_num($_[0]) }

sub _is_int { _is_num($_[0]) && $_[0] == int $_[0] }

sub _invalid_message {
    my ($m) = @_;
    return 'messages' unless ref $m eq 'HASH';
    return 'role' unless _is_str($m->{role})
        && $m->{role} =~ /^(?:system|developer|user|assistant|tool)$/;
    return 'name' if exists $m->{name} && !_is_str($m->{name});
    my $c = $m->{content};
    return undef if _is_str($c) || !defined $c;
    return 'content' unless ref $c eq 'ARRAY';
    for my $p (@$c) {
        return 'content' unless ref $p eq 'HASH' && _is_str($p->{type})
            && ($p->{type} ne 'text' || _is_str($p->{text}));
    }
    return undef;
}

sub _invalid {
    my ($j) = @_;
    my %type = (
        (map { $_ => \&_is_str } qw(model user)),
        (map { $_ => \&_is_int } qw(max_tokens max_completion_tokens n
                                    seed)),
        (map { $_ => \&_is_num } qw(temperature top_p presence_penalty
                                    frequency_penalty)),
        (map { $_ => sub { JSON::PP::is_bool($_[0]) } } qw(stream echo)),
        stream_options => sub { ref $_[0] eq 'HASH' },
    );
    for my $k (sort keys %type) {
        return $k if exists $j->{$k} && defined $j->{$k}
                     && !$type{$k}->($j->{$k});
    }
    if (exists $j->{messages}) {
        return 'messages'
            unless ref $j->{messages} eq 'ARRAY' && @{ $j->{messages} };
        for my $m (@{ $j->{messages} }) {
            my $bad = _invalid_message($m);
            return "messages.$bad" if defined $bad;
        }
    }
    return _invalid_prompt($j->{prompt}) if exists $j->{prompt};
    return undef;
}

sub _invalid_prompt {
    my ($p) = @_;
    return undef if _is_str($p);
    return 'prompt' unless ref $p eq 'ARRAY';
    for my $e (@$p) {
        next if _is_str($e) || (_is_int($e) && $e >= 0);
        return 'prompt' unless ref $e eq 'ARRAY';
        return 'prompt' if grep { !_is_int($_) || $_ < 0 } @$e;
    }
    return undef;
}


sub _chunk {
    my ($delta, $finish) = @_;
    return JSON::PP->new->canonical->encode({
        id => 'mock', object => 'chat.completion.chunk',
        choices => [{ index => 0, delta => $delta,
                      finish_reason => $finish }] });
}


# what the mock reports as the prompt's tokens: a word a token, plus 3
sub _prompt_tokens {
    my ($json) = @_;
    my $n = 3;
    for my $m (@{ $json->{messages} // [] }) {
        my $t = ref $m eq 'HASH' ? $m->{content} // '' : '';
        $n += scalar(() = $t =~ /\S+/g) if !ref $t;
    }
    return $n;
}


# the prompt's text: each message's role and content (or its parts'
# text) on a line, or the prompt
sub _prompt_text {
    my ($json) = @_;
    if (defined $json->{prompt} && !ref $json->{prompt}) {
        my $text = $json->{prompt};
        utf8::encode($text);
        return $text;
    }

    my $text = '';
    for my $m (@{ $json->{messages} // [] }) {
        next unless ref $m eq 'HASH';
        my $c = $m->{content} // '';
        $c = join '', map { ref $_ eq 'HASH' ? $_->{text} // '' : '' } @$c
            if ref $c eq 'ARRAY';
        $text .= ($m->{role} // '') . ": $c\n";
    }
    utf8::encode($text);
    return $text;
}


# A prefix cache's report: a quarter of the bytes of the longest prefix
# this prompt shares with one of the prompts remembered.  The prompt is
# then remembered first (the most recent); it takes the place of the one it
# matched when it shares at least half of it (the same conversation, or
# one with the same system prompt: the cache keeps the shared blocks and
# the newest tail), and the least recent goes past prefix_cache prompts.
sub _prefix_cached {
    my ($json) = @_;
    my $text = _prompt_text($json);
    my ($best, $at) = (0, -1);

    for my $i (0 .. $#prompts) {
        my ($same) = ($prompts[$i] ^ $text) =~ /^(\0*)/;
        my $n = length $same;
        $n = length $text if $n > length $text;
        ($best, $at) = ($n, $i) if $n > $best;
    }

    splice @prompts, $at, 1 if $at >= 0 && 2 * $best >= length $prompts[$at];
    unshift @prompts, $text;
    splice @prompts, $prefix_cache if @prompts > $prefix_cache;

    return int($best / 4);
}


sub _reply {
    my ($c, $req, $status, $type, $body) = @_;
    my $keep = $req->{keep};

    _send($c, "HTTP/1.1 $status Mock\r\nContent-Type: $type\r\n"
              . 'Content-Length: ' . length($body) . "\r\n"
              . ($keep ? '' : "Connection: close\r\n") . "\r\n" . $body,
          !$keep);

    if ($keep) {
        $c->{busy} = 0;
        _parse($c);
    }
}


1;

__END__

=head1 NAME

Fairgate::MockUpstream - an OpenAI-like upstream for the tests

=head1 SYNOPSIS

    my $up = Fairgate::MockUpstream->new;
    # proxy_pass http://127.0.0.1:PORT;  with $up->port
    my @tags = $up->served;          # X-Tag of each request, in order
    my $max = $up->max_concurrency;  # most requests served at once
    $up->stop;

=head1 WHAT IT ANSWERS

C<POST> to a path ending in C</responses>, C</embeddings> or
C</v1/messages>: that API's answer, as OpenAI's Responses API, its
embeddings and Anthropic's Messages API give it, streamed as they stream
them (the Responses API's C<event:> and C<data:> lines, C<response.created>
... C<response.output_text.delta> a token ... C<response.completed> with the
usage; Anthropic's C<message_start> with the input's usage,
C<content_block_delta> a token, C<message_delta> with the output's), with
their usage: the input a word a token plus 3 (embeddings: a word or a token
id a token), C<X-Mock-Cached> of it read from a prompt cache
(C<input_tokens_details.cached_tokens>; Anthropic's
C<cache_read_input_tokens>, apart from its C<input_tokens>) and
C<X-Mock-Cache-Write> written to it (Anthropic's
C<cache_creation_input_tokens>); the output C<max_output_tokens>
(C<max_tokens>) or C<X-Mock-Tokens> tokens, 16 by default; embeddings have
none.  C<X-Mock-Report>, C<X-Mock-Delay>, C<X-Mock-Token-Delay> and the
faults apply to them too.

C<POST> anything else: a chat completion whose content is C<"tok "> repeated
(max_tokens, or 16) times, with C<usage> (prompt_tokens: a word of the
messages' contents a token, plus 3; completion_tokens: the tokens sent).
With C<"stream": true>: Server-Sent Events, one C<data:> chunk a token
(the first with the role), a final chunk, a usage chunk when
C<stream_options.include_usage> is true, then C<data: [DONE]>.  Other methods: a model list.  A body whose fields have the
wrong types (OpenAI's schema: model, messages and their role, content and
name, prompt, max_tokens, stream, stream_options, ...) gets a 400 error
naming the field, as a real server answers it.

Request headers steer it:

=over

=item X-Mock-Delay: SECONDS

before the response (a stream's first byte)

=item X-Mock-Token-Delay: SECONDS

between a stream's chunks

=item X-Mock-Tokens: N

completion tokens (instead of max_tokens)

=item X-Mock-Prompt-Tokens: N

the prompt_tokens it reports

=item X-Mock-Usage: 0|1

leave usage out, or put it in a stream without include_usage

=item X-Mock-Report: JSON

members of the usage reported, as given (C<{"completion_tokens":
1000000000}>, negative, strings): what a lying upstream says

=item X-Mock-Usage-First: 1

put usage first in a JSON body (it is last otherwise, as servers put it)

=item X-Mock-Status: CODE

answer CODE with an OpenAI error body

=item X-Mock-Raw: HEX

answer these bytes (hexadecimal), whatever they are, and close

=item X-Mock-Close: 1

close the connection without answering

=item X-Mock-Chunked: 0|1

a stream with chunked framing or delimited by the connection's close
(chunked when the request is HTTP/1.1, by default)

=item X-Mock-Dims: N

an embedding's numbers (3 by default): a large body

=item X-Mock-Cached: N, X-Mock-Cache-Write: N

the Responses and Messages APIs: the input tokens read from (written to)
a prompt cache

=item X-Tag: TEXT

names the request in the log

=back

The log has a line when a request arrives and when its response is done:
C<TIME start|end TAG KEY> (KEY: the bearer key, else x-api-key, else
X-User).

=head1 FAULTS ON COMMAND

    my $up = Fairgate::MockUpstream->new(fault_file => $path);

At each request the mock reads the first word of C<fault_file>:
C<reset> resets the connection (RST) after a stream's second chunk, or
instead of a JSON body; C<close> closes it (FIN) after a stream's second
chunk (within its chunked framing: a broken stream); C<stall> stops a
stream after its second chunk
(and sends no JSON body) and holds the connection open.  Anything else,
or no file: normal answers.

=head1 A PREFIX CACHE

    my $up = Fairgate::MockUpstream->new(prefix_cache => 4);
    my %cached = $up->cached;        # cached tokens of each tag served

With C<prefix_cache =E<gt> N> the mock remembers the text of N prompts
(each message's role and content on a line, or the prompt; UTF-8), and
reports in C<usage> C<prompt_tokens_details.cached_tokens>: a quarter of
the bytes of the longest prefix the prompt shares with one of them, as a
server's prefix cache would.  A prompt is remembered as the most recent;
it replaces the one it matched if it shares at least half of it (a
conversation, or a system prompt, is one entry); past N, the least
recently used goes.  The start line of the log ends with the same number.

=cut
