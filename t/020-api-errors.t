#!/usr/bin/env perl

# The errors nginx itself answers come back in OpenAI's shape where the
# API is (fairgate_api_errors): 413, 414, 400, a header too large (431),
# 404, 405, 502 with the upstream down and 504 with it stalling, each
# with its status and application/json; an upstream's own error JSON
# passes untouched; HEAD gets no body; keepalive goes on after such an
# error; an operator's error_page wins; a location without it keeps
# nginx's HTML.  Local mode's 405, and the official openai npm client
# reading one such error, where they can run.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Cwd ();
use File::Temp ();
use IO::Select;
use IO::Socket::INET;
use JSON::PP ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test qw($REPO);
use Fairgate::MockUpstream;


my $J = JSON::PP->new->canonical;

my $up = Fairgate::MockUpstream->new;
my $UP = $up->addr;

# nothing listens there: the upstream is down
my $DEAD = '127.0.0.1:' . Fairgate::Test::free_port();

# files for the static locations and the operator's own error page; the
# workers run as nobody when the tests run as root
my $dir = File::Temp::tempdir('fairgate-errors-XXXXXX', TMPDIR => 1,
                              CLEANUP => 1);
chmod 0755, $dir;
mkdir "$dir/static", 0755 or die;
mkdir "$dir/html", 0755 or die;

sub write_file {
    my ($name, $text) = @_;
    open my $fh, '>', "$dir/$name" or die "$dir/$name: $!\n";
    print {$fh} $text;
    close $fh;
    chmod 0644, "$dir/$name";
}

write_file('static/a.txt', "a static file\n");
write_file('own-502.html', "the operator's own 502 page\n");
write_file('htpasswd', "alice:" . crypt('secret', 'fg') . "\n");

my $PLAIN = Fairgate::Test::free_port();

my $ID = 'fairgate_identity user=$remote_addr;';

my $s = Fairgate::Test::Server->new(
    http_config => <<"END",
    fairgate_zone zone=api:1m max_tenants=100;

    # a server that does not say fairgate_api_errors: only its fairgate
    # locations answer in JSON
    server {
        listen 127.0.0.1:$PLAIN;
        client_max_body_size 128;

        location / { root $dir; }

        location /v1/ {
            fairgate zone=api;
            $ID
            proxy_pass http://$UP;
        }

        location /v1/off/ {
            fairgate zone=api;
            $ID
            fairgate_api_errors off;
            proxy_pass http://$UP;
        }
    }
END
    config => <<"END");
    fairgate_api_errors on;
    client_max_body_size 128;
    large_client_header_buffers 2 1k;

    location /v1/ {
        fairgate zone=api;
        $ID
        proxy_pass http://$UP;
    }

    location /v1/down/ {
        fairgate zone=api;
        $ID
        proxy_pass http://$DEAD;
    }

    location /v1/slow/ {
        fairgate zone=api;
        $ID
        proxy_read_timeout 300ms;
        proxy_pass http://$UP;
    }

    location /v1/own/ {
        fairgate zone=api;
        $ID
        error_page 502 /own-502.html;
        error_page 413 \@too-big;
        proxy_pass http://$DEAD;
    }

    location = /own-502.html { root $dir; }
    location \@too-big { return 413 "the operator's own 413\\n"; }

    location /static/ { root $dir; }
    location /html/ { fairgate_api_errors off; root $dir; }

    location /v1/broken/ { return 500; }
    location /v1/busy/ { add_header Retry-After 7 always; return 503; }
    location /v1/teapot/ { return 418; }

    location /v1/basic/ {
        auth_basic "the API";
        auth_basic_user_file $dir/htpasswd;
        fairgate zone=api;
        $ID
        proxy_pass http://$UP;
    }
END

$s->start or die $s->last_error;


sub chat_body {
    my ($content) = @_;
    return $J->encode({ model => 'm', max_tokens => 2,
                        messages => [{ role => 'user',
                                       content => $content // 'hi' }] });
}

sub post {
    my ($uri, $body, @headers) = @_;
    return $s->post($uri, $body // chat_body(),
                    headers => ['Content-Type: application/json', @headers]);
}

# the response is OpenAI's error: status, content type, length, one JSON
# object with exactly the four fields; returns the error object
sub api_error {
    my ($res, $status, $code, $what) = @_;
    my $e;
    subtest $what => sub {
        is($res->{status}, $status, "status $status")
            or diag($res->{error} // $res->{raw});
        is($res->{headers}{'content-type'}, 'application/json',
           'Content-Type: application/json');
        is($res->{headers}{'content-length'}, length $res->{body},
           'Content-Length is the body\'s');
        like($res->{body}, qr/\A\{"error":\{.*\}\}\n\z/s,
             'one error object, one line');
        my $doc = eval { $J->decode($res->{body}) } // {};
        $e = $doc->{error} // {};
        is_deeply([sort keys %$e], [qw(code message param type)],
                  'message, type, param, code');
        is($e->{code}, $code, "code $code");
        is($e->{param}, undef, 'param null');
        is($e->{type}, $status >= 500 ? 'server_error'
                                      : 'invalid_request_error', 'type');
        unlike($e->{message} // '', qr/<|nginx/i, 'no HTML in the message');
    };
    return $e;
}


subtest '413: the body over client_max_body_size' => sub {
    my $e = api_error(post('/v1/chat/completions', chat_body('x' x 300)),
                      413, 'request_too_large', 'JSON 413');
    is($e->{message}, 'The request body is larger than this server '
                      . 'accepts (client_max_body_size).', 'the message');
};

subtest '414: a URI longer than large_client_header_buffers' => sub {
    my $e = api_error($s->get('/v1/' . ('a' x 3000)), 414, 'uri_too_long',
                      'JSON 414');
    like($e->{message}, qr/URI is longer/, 'the message');
};

subtest '400 before a location: a malformed request line or header' => sub {
    my $raw = $s->raw_request("G\@T /v1/models HTTP/1.1\r\n"
                              . "Host: localhost\r\n\r\n");
    my $e = api_error(Fairgate::Test::parse_response($raw), 400,
                      'bad_request', 'an invalid method');
    like($e->{message}, qr/not valid HTTP/, 'the message');

    $raw = $s->raw_request("GET /v1/models HTTP/1.1\r\nHost: localhost\r\n"
                           . "Content-Length: many\r\n\r\n");
    api_error(Fairgate::Test::parse_response($raw), 400, 'bad_request',
              'an invalid Content-Length');
};

subtest '431: a header over large_client_header_buffers' => sub {
    my $e = api_error($s->get('/v1/models',
                              headers => ['X-Big: ' . ('b' x 2000)]),
                      431, 'request_header_too_large', 'JSON 431');
    like($e->{message}, qr/headers are larger .*large_client_header_buffers/,
         'the message');
};

subtest '404 and 405 of a static location in the API server' => sub {
    my $res = $s->get('/static/a.txt');
    is($res->{status}, 200, 'the file is served') or diag($res->{raw});

    my $e = api_error($s->get('/static/nope.txt'), 404, 'not_found',
                      'JSON 404');
    is($e->{message}, 'The requested URL was not found on this server '
                      . '(GET /static/nope.txt).', 'it names the URL');

    $e = api_error($s->post('/static/a.txt', 'x'), 405,
                   'method_not_allowed', 'JSON 405');
    like($e->{message}, qr{\(POST /static/a\.txt\)\.\z}, 'it names it');
};

subtest '502 with the upstream down, 504 with it stalling' => sub {
    my $e = api_error(post('/v1/down/chat/completions'), 502,
                      'upstream_unavailable', 'JSON 502');
    like($e->{message}, qr/upstream server is unavailable/, 'the message');

    my $t0 = Time::HiRes::time();
    $e = api_error(post('/v1/slow/chat/completions', undef,
                        'X-Mock-Delay: 3'),
                   504, 'upstream_timeout', 'JSON 504');
    cmp_ok(Time::HiRes::time() - $t0, '<', 2.5,
           'after proxy_read_timeout, not the upstream\'s answer');
};

subtest '500, 503, 418 of nginx; their headers stay' => sub {
    api_error($s->get('/v1/broken/x'), 500, 'internal_error', 'JSON 500');

    my $res = $s->get('/v1/busy/x');
    api_error($res, 503, 'service_unavailable', 'JSON 503');
    is($res->{headers}{'retry-after'}, 7, 'with the Retry-After added');

    # a status nginx has no page for: it sends an empty last buffer
    api_error($s->get('/v1/teapot/x'), 418, 'invalid_request',
              'JSON 418, of no page of nginx');

    $res = post('/v1/basic/chat/completions');
    api_error($res, 401, 'unauthorized', 'auth_basic: JSON 401');
    is($res->{headers}{'www-authenticate'}, 'Basic realm="the API"',
       'with auth_basic\'s WWW-Authenticate');
};

subtest 'an upstream\'s own errors pass untouched' => sub {
    my $mock = '{"error":{"message":"mock error","type":"server_error",'
               . '"param":null,"code":null}}';
    for my $status (500, 429, 404) {
        my $res = post('/v1/chat/completions', undef,
                       "X-Mock-Status: $status");
        is($res->{status}, $status, "the upstream's status $status");
        is($res->{body}, $mock, 'its body, byte for byte');
        is($res->{headers}{'content-length'}, length $mock,
           'its length');
    }
};

subtest 'HEAD: the headers of the JSON, no body' => sub {
    my $get = $s->get('/static/nope.txt');
    my $raw = $s->raw_request("HEAD /static/nope.txt HTTP/1.1\r\n"
                              . "Host: localhost\r\n"
                              . "Connection: close\r\n\r\n");
    my $res = Fairgate::Test::parse_response($raw);
    is($res->{status}, 404, 'status 404');
    is($res->{headers}{'content-type'}, 'application/json', 'JSON type');
    (my $json = $get->{body}) =~ s/\(GET /(HEAD /;
    is($res->{headers}{'content-length'}, length $json,
       'the length of the JSON (which names HEAD)');
    like($raw, qr/\r\n\r\n\z/, 'nothing after the header');
};


# one response off a kept-alive connection: its head, then as many bytes
# as Content-Length says (none for HEAD)

sub read_one {
    my ($sock, $head) = @_;
    my $sel = IO::Select->new($sock);
    my $deadline = Time::HiRes::time() + 10;
    my ($buf, $need) = ('', undef);

    while (!defined $need || length $buf < $need) {
        my $left = $deadline - Time::HiRes::time();
        return { error => 'timed out' }
            if $left <= 0 || !$sel->can_read($left);
        return { error => 'closed' } unless sysread $sock, $buf, 65536,
                                                     length $buf;
        my $i = index $buf, "\r\n\r\n";
        next if $i < 0;
        my ($len) = substr($buf, 0, $i) =~ /^Content-Length:\s*(\d+)/mi;
        $need = $i + 4 + ($head ? 0 : $len // 0);
    }

    my $res = Fairgate::Test::parse_response($buf);
    $res->{extra} = length($buf) - $need;
    return $res;
}

subtest 'keepalive: the next request on the connection is served' => sub {
    my $sock = $s->connect;
    $sock->autoflush(1);
    my $host = "Host: localhost\r\n";
    my @steps = (
        ["HEAD /static/nope.txt HTTP/1.1\r\n$host\r\n", 404, 1],
        ["GET /static/nope.txt HTTP/1.1\r\n$host\r\n", 404],
        ["POST /v1/down/chat/completions HTTP/1.1\r\n$host"
         . "Content-Length: 2\r\n\r\n{}", 502],
        ["GET /v1/models HTTP/1.1\r\n${host}Connection: close\r\n\r\n", 200],
    );
    for my $step (@steps) {
        my ($req, $status, $head) = @$step;
        print {$sock} $req;
        my $res = read_one($sock, $head);
        my ($line) = $req =~ /^(\S+ \S+)/;
        is($res->{status}, $status, "$line: $status on the same connection")
            or diag($res->{error} // $res->{raw});
        is($res->{extra}, 0, 'and nothing more') if defined $res->{extra};
    }
    close $sock;
};

subtest 'an operator\'s error_page wins' => sub {
    my $res = post('/v1/own/chat/completions');
    is($res->{status}, 502, 'its status');
    is($res->{body}, "the operator's own 502 page\n", 'its page');
    like($res->{headers}{'content-type'}, qr{^text/html}, 'its type');

    $res = post('/v1/own/chat/completions', chat_body('x' x 300));
    is($res->{status}, 413, 'a named location: its status');
    is($res->{body}, "the operator's own 413\n", 'its body');
};

subtest 'without it: nginx\'s HTML' => sub {
    my $res = $s->get('/html/nope');
    is($res->{status}, 404, 'fairgate_api_errors off: 404');
    like($res->{headers}{'content-type'}, qr{^text/html}, 'HTML');
    like($res->{body}, qr{<title>404 Not Found</title>}, 'nginx\'s page');

    my $plain = sub {
        Fairgate::Test::http_request($PLAIN, @_);
    };

    $res = $plain->('GET /nope');
    is($res->{status}, 404, 'a server without it: 404');
    like($res->{body}, qr{<title>404 Not Found</title>}, 'nginx\'s page');

    my $sock = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$PLAIN")
        or die "connect: $!\n";
    print {$sock} "G\@T / HTTP/1.1\r\nHost: localhost\r\n\r\n";
    $res = read_one($sock);
    close $sock;
    is($res->{status}, 400, 'and its 400 before a location');
    like($res->{body}, qr{<title>400 Bad Request</title>}, 'nginx\'s page');

    my $big = { method => 'POST', uri => '/v1/chat/completions',
                body => chat_body('x' x 300) };
    api_error($plain->($big), 413, 'request_too_large',
              'its fairgate location: JSON, by default');

    $big->{uri} = '/v1/off/chat/completions';
    $res = $plain->($big);
    is($res->{status}, 413, 'a fairgate location with it off: 413');
    like($res->{body}, qr{<title>413 Request Entity Too Large</title>},
         'nginx\'s page');
};

subtest 'nginx -t: on or off' => sub {
    for my $bad (['fairgate_api_errors maybe;', qr/it must be "on" or "off"/],
                 ["fairgate_api_errors on;\nfairgate_api_errors off;",
                  qr/"fairgate_api_errors" directive is duplicate/])
    {
        my $t = Fairgate::Test::Server->new(config => $bad->[0]);
        my ($rc, $out) = $t->test_config;
        isnt($rc, 0, "refused: $bad->[0]");
        like($out, $bad->[1], 'saying why');
    }
};

subtest 'the openai npm package reads them as APIErrors' => sub {
    my $node = (grep { -x "$_/node" } split /:/, $ENV{PATH} // '')[0];
    plan skip_all => 'node is not installed (make test installs it: conf/deps.sh)'
        unless $node;
    plan skip_all => 't/node/node_modules/openai is missing: '
                     . 'run "cd t/node && npm ci" (make test does)'
        unless -f "$REPO/t/node/node_modules/openai/package.json";

    my ($rc, $out) = Fairgate::Test::run_cmd('timeout', '60', "$node/node",
        "$REPO/t/node/errors.mjs",
        '413=' . $s->url('/v1') . ':big',
        '404=' . $s->url('/static') . ':models',
        '502=' . $s->url('/v1/down') . ':chat');
    is($rc, 0, 'node t/node/errors.mjs exits 0') or diag($out);

    my %line = (
        413 => '413: APIError status=413 type=invalid_request_error '
               . 'code=request_too_large message="The request body is '
               . 'larger than this server accepts (client_max_body_size)."',
        404 => '404: NotFoundError status=404 type=invalid_request_error '
               . 'code=not_found message="The requested URL was not found '
               . 'on this server (GET /static/models)."',
        502 => '502: InternalServerError status=502 type=server_error '
               . 'code=upstream_unavailable message="The upstream server is '
               . 'unavailable or sent an invalid response."',
    );
    for my $status (sort keys %line) {
        like($out, qr/^\Q$line{$status}\E$/m,
             "$status: an APIError of its class, status, type, code, message");
    }
    note($out);
};


# local mode: a fairgate_engine_pass location (no engine needs to run for
# what nginx answers before the engine is asked)

subtest 'local mode: nginx\'s 405 and 413 before the engine' => sub {
    my $model = Cwd::abs_path("$REPO/../shared/models/stories260K.gguf");
    if (!defined $model || !-f $model) {
        $model = "$dir/generated.gguf";
        my ($rc, $out) = Fairgate::Test::run_cmd(
            "$Fairgate::Test::BUILD/fairgate-gguf-gen", '-o', $model);
        die "fairgate-gguf-gen: $out" if $rc;
        chmod 0644, $model;
    }

    my $t = Fairgate::Test::Server->new(
        http_config => "    fairgate_engine local shm=/fairgate-t-errors-$$ "
                       . "model=$model;\n",
        config => <<'END');
    client_max_body_size 128;
    location /v1/ { fairgate_engine_pass; }
END
    $t->start or die $t->last_error;

    my $e = api_error($t->get('/v1/chat/completions'), 405,
                      'method_not_allowed', 'GET of a completion: JSON 405');
    like($e->{message}, qr{\(GET /v1/chat/completions\)\.\z}, 'its URL');

    api_error($t->post('/v1/chat/completions', chat_body('x' x 300),
                       headers => ['Content-Type: application/json']),
              413, 'request_too_large', 'a body too large: JSON 413');

    is($t->stop, 0, 'nginx exits cleanly');
};

is($s->stop, 0, 'nginx exits cleanly');
unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/,
       'no alert, crit or emerg in the log');

done_testing();
