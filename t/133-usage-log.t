#!/usr/bin/env perl

# Prices, costs and the usage log (docs/billing.md).  Prices come from
# fairgate_price and from a prices file (fairgate_prices), a level's table
# replacing its parent's; a price that does not parse fails nginx -t with
# the file and line (the prices file's own).  Each request's cost is exact
# to the billionth: its input (less the cached tokens, at the cached
# price) and output at its model's price, streamed or not, sent in an
# x-fairgate-cost trailer; a stream without usage is priced at the tokens
# counted.  The usage log ($fairgate_usage_json) is one JSON object a
# line, whatever the names hold, and a user's sums over it are the zone's
# counters.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use File::Temp ();
use JSON::PP ();
use Test::More;

use Fairgate::Test qw(:DEFAULT free_port gateway node_bin node_missing
                      run_cmd wait_for);
use Fairgate::Engine qw(wait_attached);
use Fairgate::MockUpstream;

my $J = JSON::PP->new->canonical;
my $JU = JSON::PP->new->utf8;

my $dir = File::Temp::tempdir('fairgate-prices-XXXXXX', TMPDIR => 1,
                              CLEANUP => 1);
chmod 0755, $dir;

sub write_file {
    my ($name, $text) = @_;
    open my $fh, '>', "$dir/$name" or die "$dir/$name: $!\n";
    print {$fh} $text;
    close $fh;
    return "$dir/$name";
}

my $prices = write_file('prices', <<'END');
# model        per million tokens
gpt-file       input=2.50 cached=1.25 output=10   # a comment
Mixed-Case     input=0.5 output=1000000
*              input=1 output=2

frac           input=0.0000004 output=0.0000003
END


# nginx -t: what it refuses, and where it says it is

subtest 'nginx -t names the file and line of a bad price' => sub {
    my @bad = (
        ['fairgate_price m input=x output=1;', 'invalid price'],
        ['fairgate_price m input=1 cached=1;', 'no "output=" price'],
        ['fairgate_price m output=1 cached=1;', 'no "input=" price'],
        ['fairgate_price m input=1;', 'invalid number of arguments'],
        ['fairgate_price m input=1 output=1 speed=3;', 'invalid parameter'],
        ['fairgate_price m input=1 input=2 output=1;', 'duplicate parameter'],
        ['fairgate_price m input=1.0000000001 output=1;', 'invalid price'],
        ['fairgate_price m input=-1 output=1;', 'invalid price'],
        ['fairgate_price m input=1 output=1; fairgate_price M input=2 '
         . 'output=2;', 'a second price for "m"'],
        ['fairgate_price * input=1 output=1; fairgate_price * input=1 '
         . 'output=1;', 'a second price for "*"'],
    );

    for my $b (@bad) {
        my ($conf, $want) = @$b;
        my $s = Fairgate::Test::Server->new(
            config => "        location / {\n            $conf\n"
                      . "        }\n");
        my ($rc, $out) = $s->test_config;
        isnt($rc, 0, "refused: $conf");
        like($out, qr/\Q$want\E[^\n]* in \S+nginx\.conf:\d+/,
             "... saying '$want' and where") or diag($out);
    }

    my $bad = write_file('bad', "# ok\nm1 input=1 output=2\n\n"
                                . "m2 input=1 output=two\n");
    my $s = Fairgate::Test::Server->new(
        http_config => "    fairgate_prices $bad;\n");
    my ($rc, $out) = $s->test_config;
    isnt($rc, 0, 'a prices file with a bad line: refused');
    my $where = qr/ in prices file \Q$bad\E:4 in \S+nginx\.conf:\d+/;
    like($out, qr/invalid price[^\n]*"output=two"$where/,
         "... naming the file's line 4 and the directive's") or diag($out);

    $bad = write_file('short', "m1 input=1\n");
    $s = Fairgate::Test::Server->new(
        http_config => "    fairgate_prices $bad;\n");
    ($rc, $out) = $s->test_config;
    like($out, qr/a model and 2 or 3 prices[^\n]* \Q$bad\E:1 /,
         'a line without its prices: its line') or diag($out);

    $s = Fairgate::Test::Server->new(
        http_config => "    fairgate_prices $dir/none;\n");
    ($rc, $out) = $s->test_config;
    like($out, qr/open\(\) "\Q$dir\E\/none" failed/, 'a missing file')
        or diag($out);

    $s = Fairgate::Test::Server->new(
        http_config => "    fairgate_prices $prices;\n"
                       . "    fairgate_price extra input=1 output=1;\n");
    ($rc, $out) = $s->test_config;
    is($rc, 0, 'the good file and a directive together pass') or diag($out);
};


my $up = Fairgate::MockUpstream->new;
my $UP = $up->addr;
my $H2 = free_port();

my $s = Fairgate::Test::Server->new(
    http_config => <<"END",
    fairgate_zone zone=llm:16m;
    log_format billing escape=none '\$fairgate_usage_json';
    log_format cost '\$http_x_tag \$fairgate_cost \$fairgate_ttft '
                    '\$fairgate_latency \$fairgate_gateway';
    fairgate_prices $prices;

    server {
        listen 127.0.0.1:$H2 http2;
        location /v1/ {
            fairgate zone=llm queue=100 timeout=30s;
            fairgate_identity user=\$http_x_user;
            proxy_pass http://$UP;
            proxy_buffering off;
            access_log logs/billing.log billing;
        }
    }
END
    config => <<"END");
        location /v1/ {
            fairgate zone=llm queue=100 timeout=30s;
            fairgate_identity user=\$http_x_user app=\$http_x_app;
            proxy_pass http://$UP;
            proxy_buffering off;
            access_log logs/billing.log billing;
            access_log logs/cost.log cost;
        }
        location /own/ {
            fairgate zone=llm queue=100 timeout=30s;
            fairgate_identity user=\$http_x_user;
            fairgate_price gpt-file input=7 output=9;
            proxy_pass http://$UP/v1/;
            access_log logs/billing.log billing;
        }
        location /status { fairgate_status; }
END
$s->start or die $s->last_error;


# the usage log's lines, decoded (each must be one JSON object)
sub usage_lines {
    my @lines = $s->access_lines('billing.log', 1);
    return map { my $l = $_; eval { $JU->decode($l) } // { bad => $l } }
           @lines;
}

# the next usage line, once it is written
sub next_line {
    my ($before) = @_;
    my @lines;
    wait_for(5, sub { @lines = usage_lines(); @lines > $before });
    return $lines[$before] // {};
}

my $n = 0;

# a chat request: (response, its usage line, the cost trailer's value)
sub ask {
    my ($uri, $user, $model, $req, @headers) = @_;
    my $body = $J->encode({ model => $model,
                            messages => [{ role => 'user',
                                           content => 'one two three' }],
                            %$req });
    my $before = () = usage_lines();
    $n++;
    my $r = $s->post($uri, $body,
                     headers => ["X-User: $user", "X-Tag: t$n", @headers]);
    my ($trailer) = ($r->{raw} // '') =~ /\r\n0\r\n(?:[^\r\n]+\r\n)*?
                                           x-fairgate-cost:\s*(\S+)\r\n/xi;
    return ($r, next_line($before), $trailer);
}

my %STREAM = (stream => JSON::PP::true,
              stream_options => { include_usage => JSON::PP::true });

# $2.50 in, $1.25 cached, $10 out: 1000 in, 500 out = 0.0075
my ($r, $l, $t) = ask('/v1/chat/completions', 'alice', 'gpt-file',
                      { max_tokens => 500 }, 'X-Mock-Prompt-Tokens: 1000');
is($r->{status}, 200, 'a priced request passes');
is($t, '0.0075', 'its cost in a trailer: 1000 x 2.50 + 500 x 10, a million');
is(($r->{headers}{'transfer-encoding'} // ''), 'chunked',
   'chunked, for the trailer');
is($l->{cost}, 0.0075, 'the usage log: the same cost');
is($l->{cost_nano}, 7_500_000, '... in billionths');
is("$l->{input_tokens} $l->{output_tokens} $l->{cached_tokens}",
   '1000 500 0', '... its tokens');
is($l->{model}, 'gpt-file', '... its model');
is($l->{user}, 'alice', '... its user');
is($l->{status}, 200, '... its status');
is($l->{outcome}, 'served', '... its outcome');
ok($l->{billed}, '... billed');
is($l->{usage}, 'reported', '... usage as reported');
like($l->{time} // '', qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/,
     '... its time, ISO 8601');
like($l->{request_id} // '', qr/^[0-9a-f]{32}$/, '... its request id');
ok(length($l->{gateway} // ''), "... the gateway ($l->{gateway})");
ok(defined $l->{ttft_ms} && $l->{ttft_ms} <= $l->{latency_ms},
   "... a ttft ($l->{ttft_ms}) within its latency ($l->{latency_ms})");
is($l->{stream}, JSON::PP::false, '... not a stream');

# streamed: the usage of its last chunk settles it
($r, $l, $t) = ask('/v1/chat/completions', 'alice', 'gpt-file',
                   { max_tokens => 300, %STREAM },
                   'X-Mock-Prompt-Tokens: 2000');
is($t, '0.008', 'a stream: 2000 x 2.50 + 300 x 10, in its trailer');
is($l->{cost_nano}, 8_000_000, '... and in the log');
is($l->{stream}, JSON::PP::true, '... a stream');
like($r->{body}, qr/data: \[DONE\]/, '... whole');

# cached tokens, at the cached price
($r, $l, $t) = ask('/v1/chat/completions', 'bob', 'gpt-file',
                   { max_tokens => 10 }, 'X-Mock-Prompt-Tokens: 1000',
                   'X-Mock-Report: {"prompt_tokens_details":'
                   . '{"cached_tokens":400}}');
SKIP: {
    skip 'the upstream\'s cached tokens are not read in drop-in mode', 2
        unless $l->{cached_tokens};
    is($l->{cached_tokens}, 400, 'cached tokens read from the usage');
    is($t, '0.0021', '600 x 2.50 + 400 x 1.25 + 10 x 10, a million');
}

# a price without a cached one: cached tokens at the input price; and a
# model's case does not matter
($r, $l, $t) = ask('/v1/chat/completions', 'bob', 'mixed-case',
                   { max_tokens => 3 }, 'X-Mock-Prompt-Tokens: 7');
is($t, '3.0000035', 'mixed-case: 7 x 0.5 + 3 x 1000000, a million');

# fractions of a billionth a token, rounded once
($r, $l, $t) = ask('/v1/chat/completions', 'bob', 'frac',
                   { max_tokens => 1000 }, 'X-Mock-Prompt-Tokens: 1000');
is($l->{cost_nano}, 1,
   'frac: 1000 x 0.4 + 1000 x 0.3 thousandths of a billionth, rounded once')
    or diag(explain($l));

# a model no line names: "*"
($r, $l, $t) = ask('/v1/chat/completions', 'carol', 'unknown',
                   { max_tokens => 4 }, 'X-Mock-Prompt-Tokens: 10');
is($t, '0.000018', 'the default "*": 10 x 1 + 4 x 2');

# a level's own prices replace its parent's
($r, $l, $t) = ask('/own/chat/completions', 'carol', 'gpt-file',
                   { max_tokens => 4 }, 'X-Mock-Prompt-Tokens: 10');
is($t, '0.000106', 'the location\'s own price: 10 x 7 + 4 x 9');
($r, $l, $t) = ask('/own/chat/completions', 'carol', 'unknown',
                   { max_tokens => 4 }, 'X-Mock-Prompt-Tokens: 10');
ok(!defined $t, 'a model the location does not price: no trailer');
ok(!defined $l->{cost} && !defined $l->{cost_nano},
   '... and a null cost in the log');
ok(defined $r->{headers}{'content-length'},
   '... and the body as it came, with its length');

# a stream without usage: priced at its estimate and the tokens counted
($r, $l, $t) = ask('/v1/chat/completions', 'dave', 'gpt-file',
                   { max_tokens => 20, stream => JSON::PP::true },
                   'X-Mock-Usage: 0');
is($l->{usage}, 'estimated', 'a stream without usage: estimated');
is($l->{output_tokens}, 20, '... its 20 tokens counted');
is($l->{cost_nano}, $l->{input_tokens} * 2500 + 20 * 10000,
   "... at its tokens ($l->{input_tokens} in, 20 out)");
is($t, $l->{cost}, '... the trailer the same');

# what curl sees: the trailer after the last chunk, or HTTP/2's
SKIP: {
    skip 'no curl', 2 unless grep { -x "$_/curl" } split /:/, $ENV{PATH};

    my $body = $J->encode({ model => 'gpt-file', max_tokens => 500,
                            messages => [{ role => 'user',
                                           content => 'hi' }] });
    my @curl = ('curl', '-sS', '--max-time', '10', '-H', 'X-User: curl',
                '-H', 'X-Mock-Prompt-Tokens: 1000', '-H',
                'Content-Type: application/json', '-d', $body);

    my ($rc, $out) = run_cmd(@curl, '--raw',
                             $s->url('/v1/chat/completions'));
    is($rc, 0, 'curl --raw: the response');
    like($out, qr/\r\n0\r\nx-fairgate-cost: 0\.0075\r\n\r\n\z/,
         '... ends with the last chunk and the cost\'s trailer')
        or diag(substr($out, -200));

}

# HTTP/2's trailers, as node's client reads them (curl does not show them)
SKIP: {
    my $why = node_missing();
    skip $why, 2 if $why;

    my $body = $J->encode({ model => 'gpt-file', max_tokens => 500,
                            %STREAM,
                            messages => [{ role => 'user',
                                           content => 'hi' }] });
    my $js = <<'END';
const http2 = require('http2');
const [url, body] = process.argv.slice(1);
const c = http2.connect(url);
const req = c.request({ ':method': 'POST', ':path': '/v1/chat/completions',
                        'x-user': 'node', 'x-mock-prompt-tokens': '1000',
                        'content-type': 'application/json' });
let status = 0;
req.on('response', (h) => { status = h[':status']; });
req.on('trailers', (t) => { console.log('trailer ' + t['x-fairgate-cost']); });
req.on('data', () => {});
req.on('end', () => { console.log('status ' + status); c.close(); });
req.end(body);
END
    my ($rc, $out) = run_cmd(node_bin(), '-e', $js, "http://127.0.0.1:$H2",
                             $body);
    like($out, qr/^status 200$/m, 'HTTP/2: a stream') or diag($out);
    like($out, qr/^trailer 0\.0075$/m, '... with the cost\'s trailer')
        or diag($out);
}

# refused and failed requests
($r, $l, $t) = ask('/v1/chat/completions', 'dave', 'gpt-file',
                   { max_tokens => 4 }, 'X-Mock-Status: 500');
is($l->{status}, 500, 'an upstream error: logged');
is($l->{output_tokens}, 0, '... no output');

my $before = () = usage_lines();
$r = $s->post('/v1/chat/completions', '{"model": "gpt-file", "messages": [',
              headers => ['X-User: dave']);
$l = next_line($before);
is($l->{billed}, JSON::PP::false, 'a bad request: not billed');
is("$l->{input_tokens} $l->{output_tokens} $l->{cost_nano}", '0 0 0',
   '... no tokens, no cost');


# a client gone mid-stream: its line has what it was charged
$before = () = usage_lines();
my $sock = $s->send_later(
    { method => 'POST', uri => '/v1/chat/completions',
      body => $J->encode({ model => 'gpt-file', max_tokens => 200,
                           stream => JSON::PP::true,
                           messages => [{ role => 'user',
                                          content => 'x' }] }) },
    headers => ['X-User: frank', 'X-Mock-Token-Delay: 0.02']);
my $got = '';
for (1 .. 100) {
    last if (() = $got =~ /tok /g) >= 5;
    my $rin = '';
    vec($rin, fileno($sock), 1) = 1;
    last unless select(my $rout = $rin, undef, undef, 5);
    last unless sysread($sock, $got, 4096, length $got);
}
close $sock;
$l = next_line($before);
is($l->{outcome}, 'aborted', 'a client gone mid-stream: aborted');
ok($l->{output_tokens} >= 5 && $l->{output_tokens} < 200,
   "... charged the $l->{output_tokens} tokens it streamed");
is($l->{cost_nano}, $l->{input_tokens} * 2500 + $l->{output_tokens} * 10000,
   '... at their price');

# hostile names: quotes, backslashes, UTF-8, a model of raw bytes
my @hostile = ("quo\"te", "back\\slash", "caf\xc3\xa9 \xe2\x98\x83",
               "</script><b>", "tab\there");

for my $name (@hostile) {
    ($r, $l, $t) = ask('/v1/chat/completions', $name, 'gpt-file',
                       { max_tokens => 2 }, "X-App: $name");
    my $want = $name;
    utf8::decode($want);
    is($l->{user}, $want, "a user named '$name' comes back whole")
        or diag(explain($l));
    is($l->{app}, $want, '... and the app');
}

$before = () = usage_lines();
$r = $s->post('/v1/chat/completions',
              qq({"model": "bad\xff\xfe\x01model", "max_tokens": 2,)
              . q( "messages": [{"role": "user", "content": "x"}]}),
              headers => ['X-User: erin']);
$l = next_line($before);
ok(!$l->{bad}, 'a model of invalid UTF-8 and a control byte: valid JSON')
    or diag($l->{bad});

($r, $l, $t) = ask('/v1/chat/completions', 'erin', "mod\xc3\xa8le \xe2\x98\x83",
                   { max_tokens => 2 }, 'X-Mock-Prompt-Tokens: 3');
is($l->{model}, "mod\x{e8}le \x{2603}", 'a model in UTF-8 comes back whole');
is($t, '0.000007', '... priced by "*": 3 + 2 x 2')
    or diag(explain($l));

my @bad = grep { $_->{bad} } usage_lines();
is(scalar @bad, 0, 'every line of the usage log is one JSON object')
    or diag(explain(\@bad));


# the totals can be recomputed: a user's sums over the log are its
# counters in the zone
my %sum;
for my $x (usage_lines()) {
    next unless $x->{billed};
    my $u = $sum{$x->{user}} //= { requests => 0, tokens_in => 0,
                                   tokens_out => 0 };
    $u->{requests}++;
    $u->{tokens_in} += $x->{input_tokens};
    $u->{tokens_out} += $x->{output_tokens};
}

my $st = eval { $JU->decode($s->get('/status')->{body}) } // {};
my %zone = map { $_->{name} => $_ } @{ $st->{zones}[0]{users} // [] };

for my $user (sort keys %sum) {
    my $z = $zone{$user} // {};
    my $name = $user;
    utf8::encode($name);
    is_deeply({ map { $_ => $z->{$_} } qw(requests tokens_in tokens_out) },
              $sum{$user}, "user '$name': the log's sums are the counters");
}

ok(keys %sum >= 5, scalar(keys %sum) . ' users summed');

my %app;
for my $x (usage_lines()) {
    next unless $x->{billed} && defined $x->{app};
    my $a = $app{$x->{app}} //= { requests => 0, tokens_in => 0,
                                  tokens_out => 0 };
    $a->{requests}++;
    $a->{tokens_in} += $x->{input_tokens};
    $a->{tokens_out} += $x->{output_tokens};
}

%zone = map { $_->{name} => $_ } @{ $st->{zones}[0]{apps} // [] };

for my $name (sort keys %app) {
    my $z = $zone{$name} // {};
    my $n = $name;
    utf8::encode($n);
    is_deeply({ map { $_ => $z->{$_} } qw(requests tokens_in tokens_out) },
              $app{$name}, "app '$n': the log's sums are the counters");
}

is($s->stop, 0, 'nginx exits cleanly');
$up->stop;


# billionths as the gateway writes them
sub decimal {
    my ($n) = @_;
    my $d = sprintf '%d.%09d', int($n / 1e9), $n % 1e9;
    $d =~ s/\.?0+$//;
    return $d;
}

subtest 'local mode: the engine\'s usage and cached tokens, priced' => sub {
    plan skip_all => "no $Fairgate::Engine::MODEL"
        unless -f $Fairgate::Engine::MODEL;

    my $e = Fairgate::Engine->new(backend => 'cpu');
    $e->start;
    $s = gateway(engines => [['stories', $e, 'dead_after=1s']],
                 http => "    log_format billing escape=none "
                         . "'\$fairgate_usage_json';\n"
                         . "    fairgate_price stories260K input=1 "
                         . "cached=0.25 output=2;\n",
                 v1 => "        access_log logs/billing.log billing;\n");
    ok(wait_attached($s), 'the worker attached to the engine');

    # some 200 tokens of stories260K's vocabulary: its blocks are cached
    my $prompt = join ' ', ('Once upon a time, there was a little girl '
                            . 'named Lily.') x 10;
    my @seen;

    for my $i (1 .. 3) {
        my $stream = $i == 3;
        my $before = () = usage_lines();
        my $r = $s->post('/v1/completions', $J->encode({
                    model => 'stories260K', prompt => $prompt,
                    max_tokens => 16, temperature => 0,
                    $stream ? %STREAM : () }),
                    headers => ['Content-Type: application/json',
                                "X-Tag: local$i"]);
        is($r->{status}, 200, "request $i: 200");
        my $l = next_line($before);
        my $want = ($l->{input_tokens} - $l->{cached_tokens}) * 1000
                   + $l->{cached_tokens} * 250 + 16 * 2000;
        is($l->{output_tokens}, 16, "request $i: its 16 tokens");
        is($l->{cost_nano}, $want,
           "request $i: $l->{input_tokens} in, $l->{cached_tokens} of them "
           . 'cached, at their prices');
        is($l->{engine}, 'stories', '... served by its engine');

        if ($stream) {
            my ($t) = $r->{raw} =~ /\r\n0\r\nx-fairgate-cost: (\S+)\r\n/;
            is($t, decimal($want), '... streamed: the cost in a trailer');
        } else {
            is($r->{headers}{'x-fairgate-cost'}, decimal($want),
               '... not streamed: the cost in a header');
        }

        push @seen, $l->{cached_tokens};
    }

    is($seen[0], 0, 'the first request: nothing cached');
    cmp_ok($seen[1], '>', 0, "the second: $seen[1] tokens cached");

    is($s->stop, 0, 'nginx exits cleanly');
    $e->stop;
};

done_testing();
