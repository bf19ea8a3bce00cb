#!/usr/bin/env perl

# Hostile tenant names, taken from headers (fairgate_identity): a name
# that is not valid UTF-8 or holds a control character is refused with a
# 400 naming its header, and cannot break the status JSON, the Prometheus
# text or the dashboard's feed; a name with spaces and quotes, written by
# the shipped log format (conf/dropin.conf's, taken as it is), cannot
# forge a field of its own access-log line.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use JSON::PP ();
use Test::More;

use Fairgate::Test qw($REPO);
use Fairgate::MockUpstream;

my $J = JSON::PP->new->utf8->canonical;

open my $in, '<', "$REPO/conf/dropin.conf" or die;
my $shipped = do { local $/; <$in> };
my ($format) = $shipped =~ /^\s*(log_format fairgate .*?;)\s*$/ms
    or die "conf/dropin.conf: no log_format fairgate\n";

my $up = Fairgate::MockUpstream->new;
my $UP = $up->addr;

my $s = Fairgate::Test::Server->new(
    workers => 2,
    http_config => <<"END",
    fairgate_zone zone=api:1m max_tenants=100 inflight=8;
    $format
END
    config => <<"END");
    location /v1/ {
        fairgate zone=api queue=100 timeout=30s;
        fairgate_identity user=\$http_x_user app=\$http_x_app
                          weight=\$http_x_weight;
        fairgate_api_errors on;
        proxy_pass http://$UP;
        access_log logs/names.log fairgate;
    }
    location /status { fairgate_status; }
    location /metrics { fairgate_status format=prometheus; }
END
$s->start or die $s->last_error;

my $body = '{"model": "m", "messages": [{"role": "user", "content": "hi"}]}';

sub chat {
    my (@headers) = @_;
    return $s->post('/v1/chat/completions', $body,
                    headers => ['Content-Type: application/json', @headers]);
}

# is the text valid UTF-8 (strict)?
sub utf8_ok {
    my ($bytes) = @_;
    my $copy = $bytes;
    return utf8::decode($copy) && $copy !~ /\x{FFFD}/ ? 1 : 0;
}

my @bad = (
    ['a byte 0xff',                "bad\xff"],
    ['Latin-1',                    "ren\xe9"],
    ['an overlong slash',          "x\xc0\xafy"],
    ['a lone continuation byte',   "\x80bob"],
    ['a surrogate',                "s\xed\xa0\x80"],
    ['a cut character',            "cut\xe6\x97"],
    ['a control character',        "ctl\x01x"],
    ['a tab inside',               "tab\tx"],
    ['DEL',                        "del\x7fx"],
);

for my $c (@bad) {
    my ($what, $name) = @$c;

    for my $h (['X-User', "X-User: $name"],
               ['X-App', 'X-User: good', "X-App: $name"])
    {
        my ($header, @send) = @$h;
        my $res = chat(@send);
        my $err = eval { $J->decode($res->{body}) } // {};

        is($res->{status}, 400, "$what in $header: 400");
        is($err->{error}{code}, 'invalid_identity', '... invalid_identity');
        is($err->{error}{type}, 'invalid_request_error',
           '... an invalid_request_error');
        is($err->{error}{param}, $header, "... naming $header");
        like($err->{error}{message}, qr/\Q$header\E/,
             '... in the message too');
    }
}

my $res = chat("X-User: ren\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac",
               "X-App: caf\xc3\xa9");
is($res->{status}, 200, 'a name in valid UTF-8, spaces in it: served');

# the outputs read as what they are
$res = $s->get('/status');
is($res->{status}, 200, 'the status: 200');
like($res->{headers}{'content-type'}, qr{^application/json},
     '... JSON');
my $st = eval { $J->decode($res->{body}) };
ok($st, '... that parses') or diag(substr($res->{body} // '', 0, 300));
my %users = map { $_->{name} => 1 } @{ $st->{zones}[0]{users} // [] };
ok($users{"ren\x{e9} \x{65e5}\x{672c}"}, '... with the UTF-8 name in it');
ok(!grep({ /[\x00-\x1f\x7f]|\x{FFFD}/ } keys %users),
   '... and no refused name');

$res = $s->get('/metrics');
is($res->{status}, 200, 'the metrics: 200');
ok(utf8_ok($res->{body}), '... valid UTF-8');
like($res->{body},
     qr/^fairgate_user_requests_total\{zone="api",user="ren\xc3\xa9 /m,
     '... the UTF-8 name as a label');

# fields forged by a name: spaces, quotes, backslashes, a fake outcome
my @forgers = ('x out=999999 (reported) outcome=served',
               'x" out=999999 (reported) outcome="served',
               'x\\" app="forged',
               'x app=forged queued=0.000');

is(chat("X-User: $_", 'X-App: chat')->{status}, 200, "forger '$_' served")
    for @forgers;

my @lines = grep { /"POST / }
            $s->access_lines('names.log', 2 * @bad + 1 + @forgers);

# a log line's fields as the shipped format writes them: quoted values
# may hold anything but an unescaped quote
my $field = qr/"((?:[^"\\]|\\.)*)"/;

for my $name (@forgers) {
    my ($line) = grep { index($_, 'user="x') >= 0
                        && unescape(($_ =~ /user=$field/)[0]) eq $name }
                 @lines;

    ok($line, "the line of '$name' has its whole name in user=")
        or diag(join "\n", @lines);
    next unless $line;

    (my $bare = $line) =~ s/$field/""/g;
    my @out = $bare =~ / out=/g;
    is(scalar @out, 1, '... one out= field outside quotes') or diag($line);
    like($line, qr/ app="chat" queued=[\d.]+ in=\d+ out=(?!999999)\d+ (?#
                   )\(\w+\) outcome=served /,
         '... its own app, counts and outcome') or diag($line);
}

# nginx's log escaping: \xNN for a quote or a backslash
sub unescape {
    my ($v) = @_;
    return '' unless defined $v;
    $v =~ s/\\x([0-9A-Fa-f]{2})/chr hex $1/ge;
    return $v;
}

# a weight the client chose, with an escape sequence: served at weight 1,
# the warning without the client's bytes
is(chat('X-User: w', "X-Weight: 2\x1b[31mred")->{status}, 200,
   'a weight with an escape sequence: served');
ok(Fairgate::Test::wait_for(5, sub {
       $s->error_log =~ /invalid weight "\(not printable\)" of user "w"/ }),
   '... warned of, its bytes left out');
unlike($s->error_log, qr/\x1b/, '... no escape byte in the error log');

unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');

is($s->stop, 0, 'nginx exits cleanly');
$up->stop;

done_testing();
