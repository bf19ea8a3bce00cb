package Fairgate::Hostile;

# Hostile clients against a running gateway, for t/023-hostile-local.t and
# t/024-hostile-dropin.t: the byte-level cases over raw sockets
# (IO::Socket::INET), each answered by a clean error (its status, OpenAI's
# error JSON) or a clean close; and the checks after them: the workers the
# same processes, nothing crashed in the error log, every tenant served.

use strict;
use warnings;

use Exporter 'import';
use IO::Select;
use IO::Socket::INET;
use JSON::PP ();
use Socket qw(SHUT_WR);
use Test::More;
use Time::HiRes ();

use Fairgate::Test qw(wait_for);

our @EXPORT_OK = qw($CHAT $CMPL $MAX_BODY $SERVER_CONF);

my $J = JSON::PP->new->canonical;

our $CHAT = '/v1/chat/completions';
our $CMPL = '/v1/completions';

# the server the cases expect: OpenAI's errors, bodies of MAX_BODY at the
# most, a second for a body or a header, headers of 8k
our $MAX_BODY = 65536;
our $SERVER_CONF = <<"END";
    fairgate_api_errors on;
    client_max_body_size $MAX_BODY;
    client_body_timeout 1s;
    client_header_timeout 1s;
    large_client_header_buffers 4 8k;
END


# new(server => Fairgate::Test::Server, model => NAME, tenants => [...])
sub new {
    my ($class, %o) = @_;
    my $self = bless { %o }, $class;

    # the workers as the master has forked them all: a start may return
    # before the last one is there
    my $want = $self->{server}{workers} // 1;
    my @pids;
    wait_for(10, sub { (@pids = $self->{server}->worker_pids) >= $want });
    is(scalar @pids, $want, "$want workers at the start");
    $self->{pids} = \@pids;
    return $self;
}

sub server { $_[0]{server} }


sub chat {
    my ($self, %f) = @_;
    return { model => $self->{model}, max_tokens => 2,
             messages => [{ role => 'user', content => 'Hello' }], %f };
}

sub completion {
    my ($self, %f) = @_;
    return { model => $self->{model}, max_tokens => 2, prompt => 'Hello',
             %f };
}


# a request as bytes: its head with Content-Length unless told otherwise
sub bytes {
    my ($self, $uri, $body, @headers) = @_;
    my %have = map { /^([\w-]+)\s*:/ ? (lc $1 => 1) : () } @headers;
    push @headers, 'Content-Length: ' . length $body
        unless $have{'content-length'} || $have{'transfer-encoding'};
    unshift @headers, 'X-User: hostile' unless $have{'x-user'};
    return "POST $uri HTTP/1.1\r\nHost: localhost\r\n"
           . "Content-Type: application/json\r\n"
           . "Connection: close\r\n"
           . join('', map { "$_\r\n" } @headers) . "\r\n" . $body;
}


sub connect_raw {
    my ($self) = @_;
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                     PeerPort => $self->{server}->port,
                                     Proto => 'tcp', Timeout => 10)
        or die "connect: $!\n";
    $sock->autoflush(1);
    return $sock;
}


# everything the server sends until it closes, or until the deadline:
# (raw, closed)
sub read_all {
    my ($sock, $secs) = @_;
    my $sel = IO::Select->new($sock);
    my $deadline = Time::HiRes::time() + ($secs // 10);
    my $raw = '';
    while (1) {
        my $left = $deadline - Time::HiRes::time();
        return ($raw, 0) if $left <= 0 || !$sel->can_read($left);
        my $n = sysread $sock, $raw, 65536, length $raw;
        return ($raw, 1) unless $n;
    }
}


# sends bytes (a string, or a list of pieces written $gap seconds apart)
# and reads the answer until the server closes
sub exchange {
    my ($self, $bytes, %o) = @_;
    my $sock = $self->connect_raw;
    local $SIG{PIPE} = 'IGNORE';
    for my $piece (ref $bytes ? @$bytes : ($bytes)) {
        syswrite $sock, $piece;
        Time::HiRes::sleep($o{gap}) if $o{gap};
    }
    shutdown $sock, SHUT_WR if $o{half_close};
    my ($raw, $closed) = read_all($sock, $o{timeout});
    close $sock;
    my $res = Fairgate::Test::parse_response($raw);
    $res->{closed} = $closed;
    return $res;
}


sub post {
    my ($self, $uri, $body, @headers) = @_;
    $body = $J->encode($body) if ref $body;
    return $self->exchange($self->bytes($uri, $body, @headers));
}


# an OpenAI error: the status, JSON of the four fields, the connection
# closed; $name (a regexp) found in its message or param
sub is_error {
    my ($res, $status, $what, $name) = @_;
    my $ok = 1;
    my $doc = eval { $J->decode($res->{body} // '') } // {};
    my $e = ref $doc->{error} eq 'HASH' ? $doc->{error} : {};
    $ok &&= ($res->{status} // 0) == (ref $status ? 0 : $status)
            || (ref $status && grep { $_ == ($res->{status} // 0) }
                                    @$status);
    $ok &&= ($res->{headers}{'content-type'} // '') =~ m{^application/json};
    $ok &&= defined $e->{message} && length $e->{message}
            && exists $e->{type} && exists $e->{code};
    $ok &&= ($e->{message} . ' ' . ($e->{param} // '')) =~ $name
        if $name && $ok;
    $ok &&= $res->{closed};
    note("$what: " . ($res->{status} // 'closed') . ' '
         . ($e->{code} // '') . ' ' . ($e->{message} // ''));
    ok($ok, $what)
        or diag(($res->{error} // '') . ' closed=' . ($res->{closed} // 0)
                . "\n" . substr($res->{raw} // '', 0, 600));
    return $e;
}


# drop-in: a body of valid JSON the gateway passes to the upstream, whose
# answer comes back untouched (the mock's 200, or its 400 naming a field)
sub passed {
    my ($res, $what) = @_;
    note("$what: the upstream's " . ($res->{status} // 'nothing'));
    ok($res->{closed} && ($res->{reason} // '') eq 'Mock'
       && ($res->{status} // 0) =~ /^(?:200|400)$/, $what)
        or diag(substr($res->{raw} // '', 0, 600));
}


# a 4xx or a clean close without a response: never a 5xx, never hanging
sub is_refused {
    my ($res, $what) = @_;
    my $st = $res->{status};
    note("$what: " . ($st // 'closed, no response'));
    ok($res->{closed} && (!length($res->{raw} // '')
                          || (defined $st && $st >= 400 && $st < 500)),
       $what)
        or diag(($res->{error} // '') . ' closed=' . ($res->{closed} // 0)
                . "\n" . substr($res->{raw} // '', 0, 600));
}


# The bodies: malformed, deep, bad UTF-8, NUL, huge numbers, duplicates.
# The gateway must answer each 400 (413 for the oversized) naming what is
# wrong.  $uri is the chat completions URI.
sub bodies {
    my ($self, $uri, $max_body) = @_;
    my $ok = $J->encode($self->chat);
    my @bad = (
        ['an empty body', '', qr/no body/i],
        ['not JSON', 'hello', qr/JSON/i],
        ['an unterminated object', '{"model": "m", "messages": [',
         qr/JSON/i],
        ['a missing value', '{"model":}', qr/JSON/i],
        ['trailing garbage', "$ok}}", qr/JSON/i],
        ['two documents', "$ok$ok", qr/JSON/i],
        ['a bare array', '[1,2,3]', qr/object/i],
        ['a bare string', '"hi"', qr/object/i],
        ['5000 [ deep', '{"model":"m","x":' . ('[' x 5000)
                                            . (']' x 5000) . '}',
         qr/JSON|deep|nest/i],
        ['5000 [ unclosed', '[' x 5000, qr/JSON|deep|nest/i],
        ['3000 { deep', '{"a":' x 3000 . '1' . '}' x 3000,
         qr/JSON|deep|nest/i],
        ['deep in messages', $J->encode($self->chat(messages => [
             { role => 'user', content => 'x' }])) =~ s/"x"/
             ('[' x 4000) . (']' x 4000)/er, qr/JSON|deep|nest|content/i],
        ['invalid UTF-8 in a string', $ok =~ s/Hello/He\xff\xfello/r,
         qr/UTF-8|JSON/i],
        ['invalid UTF-8 in a key', $ok =~ s/"model"/"mo\xc3\x28del"/r,
         qr/UTF-8|JSON/i],
        ['an overlong UTF-8 sequence', $ok =~ s/Hello/\xc0\xafHello/r,
         qr/UTF-8|JSON/i],
        ['a UTF-16 surrogate as UTF-8', $ok =~ s/Hello/\xed\xa0\x80/r,
         qr/UTF-8|JSON/i],
        ['a lone surrogate escape', $ok =~ s/Hello/\\ud800x/r,
         qr/UTF|surrogate|JSON|content/i],
        ['a raw NUL in a string', $ok =~ s/Hello/He\0llo/r,
         qr/JSON|control|NUL/i],
        ['a raw NUL between tokens', $ok =~ s/,/,\0/r, qr/JSON/i],
        ['an escaped NUL in the model', $ok =~ s/"model":"[^"]*"/
             "model":"m\\u0000x"/r, qr/model|NUL|JSON/i],
        ['an escaped NUL in a key', $ok =~ s/"model"/"mo\\u0000del"/r,
         qr/JSON|NUL|mo/i, undef, 1],
        ['max_tokens 1e400', $ok =~ s/"max_tokens":2/"max_tokens":1e400/r,
         qr/max_tokens|JSON/i],
        ['max_tokens of 30 digits',
         $ok =~ s/"max_tokens":2/"max_tokens":999999999999999999999999999999/r,
         qr/max_tokens|too big/i],
        ['max_tokens negative',
         $ok =~ s/"max_tokens":2/"max_tokens":-99999999999999999999/r,
         qr/max_tokens|too big/i],
        ['max_tokens a fraction', $ok =~ s/"max_tokens":2/"max_tokens":2.5/r,
         qr/max_tokens/i],
        ['temperature 1e308', $J->encode($self->chat(temperature => 1))
             =~ s/"temperature":1/"temperature":1e308/r,
         qr/temperature/i, undef, 1],
        ['a number of 100000 digits', $ok =~ s/"max_tokens":2/
             '"max_tokens":' . ('9' x 100000)/er, qr/max_tokens|large/i],
        ['a duplicate max_tokens',
         $ok =~ s/"max_tokens":2/"max_tokens":2,"max_tokens":100000/r,
         qr/max_tokens/],
        ['a duplicate messages', $ok =~ s/\{/{"messages":[],/r,
         qr/messages/],
        ['a duplicate stream', $ok =~ s/\{/{"stream":true,"stream":false,/r,
         qr/stream/],
        ['a duplicate prompt', $J->encode($self->completion)
             =~ s/\{/{"prompt":"x",/r, qr/prompt/],
        ['a duplicate model, the second wrong',
         $ok =~ s/\{/{"model":"m","model":7,/r, qr/model|duplicate/i],
    );

    push @bad, ['a body over client_max_body_size',
                $J->encode($self->chat(messages => [
                    { role => 'user', content => 'x' x ($max_body + 1) }])),
                qr/large|client_max_body_size/i, 413];

    for my $case (@bad) {
        my ($what, $body, $name, $status, $valid) = @$case;
        # the 100000-digit number passes client_max_body_size by design
        # only when it allows it: else it is a 413, also clean
        $status //= length $body > $max_body ? 413 : 400;
        my $res = $self->exchange($self->bytes($uri, $body));
        if ($valid && $self->{transparent}) {
            passed($res, "$what: valid JSON, the upstream's to judge");
            next;
        }
        is_error($res, $status, "$what: $status", $name);
    }
}


# Wrong types in every field: each 400 naming the field
sub types {
    my ($self, $kind, $uri, @fields) = @_;
    my %wrong = (
        string  => [1, 1.5, JSON::PP::true, [], {}],
        number  => ['"2"', [], {}, JSON::PP::true],
        integer => ['"2"', [], {}, JSON::PP::true, 2.5],
        bool    => ['"yes"', 1, [], {}],
        object  => ['"x"', 1, [], JSON::PP::true],
        array   => ['"x"', 1, {}, JSON::PP::true],
        stop    => [1, {}, JSON::PP::true, [1], [[]]],
        prompt  => [1, {}, JSON::PP::true, [{}], [[{}]], [-1]],
    );
    for my $f (@fields) {
        my ($key, $type) = @$f;
        for my $v (@{ $wrong{$type} }) {
            my $val = ref $v || $v !~ /^"/ ? $v : substr($v, 1, -1);
            my $body = $kind eq 'chat' ? $self->chat($key => $val)
                                       : $self->completion($key => $val);
            my $shown = $J->allow_nonref->encode($val);
            is_error($self->post($uri, $body), 400,
                     "$kind $key = $shown: 400",
                     qr/\Q$key\E|\b(?:type|array|string|object)\b/);
        }
    }
}


# The messages' own fields, of a chat request
sub message_types {
    my ($self, $uri) = @_;
    my @cases = (
        ['a message not an object', ['hi']],
        ['a message null', [undef]],
        ['role a number', [{ role => 1, content => 'x' }]],
        ['role unknown', [{ role => 'wizard', content => 'x' }]],
        ['role missing', [{ content => 'x' }]],
        ['content a number', [{ role => 'user', content => 1 }]],
        ['content an object', [{ role => 'user', content => {} }]],
        ['content a part of no type', [{ role => 'user',
                                         content => [{ text => 'x' }] }]],
        ['content a part of text 5', [{ role => 'user',
                                         content => [{ type => 'text',
                                                       text => 5 }] }]],
        ['name a number', [{ role => 'user', content => 'x', name => 5 }]],
        ['an empty list', []],
    );
    for my $c (@cases) {
        my ($what, $msgs) = @$c;
        is_error($self->post($uri, $self->chat(messages => $msgs)), 400,
                 "$what: 400", qr/messages|role|content|name/i);
    }
}


# Content-Length and chunked framing that lies; oversized headers
sub framing {
    my ($self, $uri) = @_;
    my $ok = $J->encode($self->chat);

    # shorter: the body cut, the rest read as a next request
    my $res = $self->exchange($self->bytes($uri, $ok,
                  'Content-Length: ' . (length($ok) - 10)));
    is_error($res, 400, 'Content-Length shorter than the body: 400',
             qr/JSON/i);

    # longer: the client has no more to send; after client_body_timeout
    # nginx closes (its 408 is a close without a response), or the client
    # gives up and half-closes
    my $t0 = Time::HiRes::time();
    $res = $self->exchange($self->bytes($uri, $ok,
               'Content-Length: ' . (length($ok) + 100)), timeout => 5);
    is_refused($res, 'Content-Length longer, the client waits: closed');
    cmp_ok(Time::HiRes::time() - $t0, '<', 4,
           'after client_body_timeout, not later');
    $res = $self->exchange($self->bytes($uri, $ok,
               'Content-Length: ' . (length($ok) + 100)),
               half_close => 1, timeout => 5);
    is_refused($res, 'Content-Length longer, then half-closed: '
                     . 'a 4xx or a clean close');

    my $chunked = sub {
        my ($what, $body, $status) = @_;
        my $r = $self->exchange($self->bytes($uri, $body,
                    'Transfer-Encoding: chunked'), timeout => 5);
        is_error($r, $status, "chunked, $what: $status");
    };
    my $hex = sprintf '%x', length $ok;
    $chunked->('a size not hex', "zz\r\n$ok\r\n0\r\n\r\n", 400);
    $chunked->('a size of 20 hex digits',
               ('f' x 20) . "\r\n$ok\r\n0\r\n\r\n", 400);
    $chunked->('a size over client_max_body_size',
               "fffffff\r\n$ok\r\n0\r\n\r\n", 413);
    $chunked->('no CRLF after the data', "$hex\r\n${ok}XX0\r\n\r\n", 400);
    # the rest taken as data: nginx waits for it until
    # client_body_timeout, and closes
    for my $case (['a chunk shorter than its size, then the end',
                   sprintf("%x\r\n", length($ok) + 5) . "$ok\r\n0\r\n\r\n"],
                  ['the last chunk missing (the client waits)',
                   "$hex\r\n$ok\r\n"])
    {
        $res = $self->exchange($self->bytes($uri, $case->[1],
                   'Transfer-Encoding: chunked'), timeout => 5);
        is_refused($res, "chunked, $case->[0]: closed");
    }

    # both framings: RFC 9112 says refuse
    $res = $self->exchange($self->bytes($uri, "$hex\r\n$ok\r\n0\r\n\r\n",
               'Transfer-Encoding: chunked', 'Content-Length: 5'));
    is_refused($res, 'Content-Length and chunked both: refused');

    # NUL and raw bytes where HTTP allows none
    $res = $self->exchange("POST /v1/\0chat HTTP/1.1\r\nHost: x\r\n\r\n");
    is_error($res, 400, 'a NUL in the request line: 400', qr/HTTP/);
    $res = $self->exchange($self->bytes($uri, $ok, "X-Bad: a\0b"));
    is_error($res, 400, 'a NUL in a header value: 400', qr/HTTP/);
    $res = $self->exchange($self->bytes($uri, $ok, "X-Bad: a\rb"));
    is_error($res, 400, 'a bare CR in a header value: 400', qr/HTTP/);
    $res = $self->exchange($self->bytes($uri, $ok, 'Content-Length: -5'));
    is_error($res, 400, 'a negative Content-Length: 400', qr/HTTP/);
    $res = $self->exchange($self->bytes($uri, $ok,
               'Content-Length: 99999999999999999999999'));
    is_error($res, 400, 'a Content-Length of 23 digits: 400', qr/HTTP/);

    # a chunked body that is fine is served
    $res = $self->exchange($self->bytes($uri, "$hex\r\n$ok\r\n0\r\n\r\n",
               'Transfer-Encoding: chunked'));
    is($res->{status}, 200, 'a sound chunked body: 200')
        or diag($res->{raw});

    $res = $self->exchange($self->bytes($uri, $ok,
               'X-Huge: ' . ('h' x 20000)));
    is_error($res, [400, 431], 'one header of 20 kB: 431 (or 400)',
             qr/header/i);
    $res = $self->exchange($self->bytes($uri, $ok,
               map { "X-H$_: " . ('h' x 900) } 1 .. 200));
    is_error($res, [400, 431], '200 headers of 900 bytes: 431 (or 400)',
             qr/header/i);
}


# slow and half-closed clients that are otherwise sound: served
sub slow {
    my ($self, $uri) = @_;
    my $bytes = $self->bytes($uri, $J->encode($self->chat));
    my $t0 = Time::HiRes::time();
    my $res = $self->exchange([split //, $bytes], gap => 0.002);
    is($res->{status}, 200, 'a byte at a time (' . length($bytes)
                            . ' writes, 2 ms apart): 200')
        or diag($res->{raw});
    note(sprintf 'slow client: %.2f s', Time::HiRes::time() - $t0);

    $res = $self->exchange($bytes, half_close => 1);
    note('the whole request, then half-closed: '
         . ($res->{status} // 'closed, no response'));
    ok(($res->{status} // 0) == 200 || ($res->{closed}
                                        && !length $res->{raw}),
       'the whole request, then half-closed: served or a clean close')
        or diag($res->{raw});

    # a slow loris: the head never ends; client_header_timeout closes it
    my $t0h = Time::HiRes::time();
    $res = $self->exchange(substr($bytes, 0, 40), timeout => 5);
    is_refused($res, 'a head that never ends: closed');
    cmp_ok(Time::HiRes::time() - $t0h, '<', 4,
           'after client_header_timeout, not later');

    # the head alone, then half-closed: nothing to serve
    my ($head) = $bytes =~ /\A(.*?\r\n\r\n)/s;
    $res = $self->exchange($head, half_close => 1, timeout => 5);
    is_refused($res, 'the head alone, then half-closed: a 4xx or a '
                     . 'clean close');
}


# Streams opened and dropped after their first token; returns when all
# are gone
sub aborts {
    my ($self, $uri, $n) = @_;
    my $body = $J->encode($self->chat(max_tokens => 2000,
                                      stream => JSON::PP::true));
    my @socks = map { $self->connect_raw } 1 .. $n;
    local $SIG{PIPE} = 'IGNORE';
    syswrite $_, $self->bytes($uri, $body, "X-Mock-Token-Delay: 0.01")
        for @socks;

    my $sel = IO::Select->new(@socks);
    my %raw;
    my $streaming = 0;
    my $deadline = Time::HiRes::time() + 10;
    while ($sel->count && Time::HiRes::time() < $deadline) {
        for my $s ($sel->can_read(1)) {
            my $n = sysread $s, $raw{"$s"}, 65536, length($raw{"$s"} // '');
            if (!$n || $raw{"$s"} =~ /data: \{/) {
                $streaming++ if $n;
                $sel->remove($s);
                # some leave with a reset, some with a FIN
                setsockopt($s, Socket::SOL_SOCKET(), Socket::SO_LINGER(),
                           pack('ii', 1, 0)) if $streaming % 2;
                close $s;
            }
        }
    }
    close $_ for $sel->handles;
    is($streaming, $n, "$n streams started, then dropped");

    # and as many that leave while sending their body, or right after it
    for my $i (1 .. $n) {
        my $sock = $self->connect_raw;
        my $req = $self->bytes($uri, $body);
        syswrite $sock, $i % 2 ? substr($req, 0, length($req) - 20) : $req;
        setsockopt($sock, Socket::SOL_SOCKET(), Socket::SO_LINGER(),
                   pack('ii', 1, 0)) if $i % 3 == 0;
        close $sock;
    }
}


# Clients that leave while their request waits in the zone's queue: $hold
# streams fill the zone's inflight, $n more wait and then leave; $zone->()
# reads the zone's status.  The queue must empty as they go, and the zone
# be idle once the held streams go too.
sub queued_aborts {
    my ($self, $uri, $hold, $n, $zone) = @_;
    my $body = $J->encode($self->chat(max_tokens => 2000,
                                      stream => JSON::PP::true));
    local $SIG{PIPE} = 'IGNORE';
    my @held = map {
        my $s = $self->connect_raw;
        syswrite $s, $self->bytes($uri, $body, 'X-Mock-Token-Delay: 0.01',
                                  "X-User: held$_");
        $s;
    } 1 .. $hold;
    ok(poll(sub { $zone->()->{running} == $hold }), "$hold streams run");

    my @queued = map {
        my $s = $self->connect_raw;
        syswrite $s, $self->bytes($uri, $body, "X-User: queued$_");
        $s;
    } 1 .. $n;
    ok(poll(sub { $zone->()->{waiting} == $n }), "$n more wait");

    for my $i (0 .. $#queued) {
        setsockopt($queued[$i], Socket::SOL_SOCKET(), Socket::SO_LINGER(),
                   pack('ii', 1, 0)) if $i % 2;
        close $queued[$i];
    }
    ok(poll(sub { my $z = $zone->(); $z->{waiting} == 0
                  && $z->{running} == $hold }),
       'they leave: the queue empties, the held streams still run');

    close $_ for @held;
    ok(poll(sub { my $z = $zone->(); $z->{waiting} == 0
                  && $z->{running} == 0 && $z->{backlogged} == 0 }),
       'the held streams leave: the zone idle');
}

# Hostile names in X-User: bytes that are not UTF-8 (Latin-1, overlong,
# lone continuation, surrogate, cut short) and control bytes, each refused
# 400 naming the header; then the status page still JSON and valid UTF-8,
# a name with spaces and quotes served and listed as it is
sub names {
    my ($self, $chat_uri) = @_;
    my $body = $J->encode($self->chat);

    for my $name ("bad\xff", "ren\xe9", "x\xc0\xafy", "\x80bob",
                  "s\xed\xa0\x80", "cut\xe6\x97", "ctl\x01x", "del\x7f",
                  "esc\x1b[31m")
    {
        (my $shown = $name) =~ s/([^\x21-\x7e])/sprintf '\\x%02x', ord $1/ge;
        my $e = is_error($self->exchange($self->bytes($chat_uri, $body,
                                                      "X-User: $name")),
                         400, "X-User: $shown: 400", qr/X-User/);
        is($e->{code}, 'invalid_identity', '... invalid_identity');
    }

    my $odd = 'o "d\\d" </script> {x="y"} out=9';
    my $res = $self->exchange($self->bytes($chat_uri, $body,
                                           "X-User: $odd"));
    is($res->{status}, 200, 'a name with spaces, quotes, markup: served')
        or diag($res->{raw});

    my $st = $self->{server}->get('/status');
    my $doc = eval { JSON::PP->new->utf8->decode($st->{body} // '') };
    ok($st->{status} == 200 && $doc, 'the status is still JSON')
        or diag(substr($st->{body} // '', 0, 300));
    ok(grep({ $_->{name} eq $odd } @{ $doc->{zones}[0]{users} // [] }),
       '... listing that name as it is');
}


# a condition that may die while the status is not there yet
sub poll {
    my ($cond) = @_;
    return wait_for(10, sub { eval { $cond->() } }) ? 1 : 0;
}


# after everything: the same workers, no crash in the log, every tenant
# served a normal request of each kind
sub after {
    my ($self, $chat_uri, $cmpl_uri) = @_;
    for my $tenant (@{ $self->{tenants} }) {
        my $res = $self->exchange($self->bytes($chat_uri,
                      $J->encode($self->chat), "X-User: $tenant"));
        is($res->{status}, 200, "$tenant: a chat completion after it all")
            or diag($res->{raw});
        $res = $self->exchange($self->bytes($cmpl_uri,
                   $J->encode($self->completion), "X-User: $tenant"));
        is($res->{status}, 200, "$tenant: a completion after it all")
            or diag($res->{raw});
    }
    is_deeply([$self->{server}->worker_pids], $self->{pids},
              'the same worker processes: none died');
    my $log = $self->{server}->error_log;
    my @bad = grep { /signal \d+|\[(?:alert|crit|emerg)\]|core dumped|segfault/i }
              split /\n/, $log;
    is_deeply(\@bad, [], 'no signal, alert, crit or emerg in the error log');
}

1;
