#!/usr/bin/env perl

# Drop-in: the usage an upstream reports is checked against what the
# gateway saw before the tenant is charged.  A billion completion tokens
# (a broken or lying upstream) is capped at the request's max tokens times
# its choices, or without them at the response's bytes; prompt tokens at
# the request body's bytes plus 32,768 (docs/dropin.md); each cap says so
# in a warning naming the upstream and in $fairgate_usage ("capped").
# Honest usage passes as it is, n choices included; negative or string
# usage is no usage (the estimate).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use JSON::PP ();
use Test::More;

use Fairgate::Test qw(:DEFAULT gateway wait_for);
use Fairgate::Engine qw(parse_sse);
use Fairgate::MockUpstream;

my $J = JSON::PP->new->canonical;
my $up = Fairgate::MockUpstream->new;
my $UP = $up->addr;

my $s = gateway(user => '$http_x_user', v1 => <<'END',
        proxy_buffering off;
        access_log logs/usage.log usage;
END
                http => q{    log_format usage '$http_x_tag $fairgate_user }
                        . q{$fairgate_tokens_in $fairgate_tokens_out }
                        . q{$fairgate_usage';} . "\n",
                pass => "proxy_pass http://$UP");

my $BILLION = 1_000_000_000;

# a request of tenant USER tagged TAG: its response, and its access-log
# line's tokens in, out and usage
sub ask {
    my ($tag, $user, $req, @headers) = @_;
    my $body = $J->encode({ model => 'm',
                            messages => [{ role => 'user',
                                           content => 'one two three' }],
                            %$req });
    my $r = $s->post('/v1/chat/completions', $body,
                     headers => ["X-User: $user", "X-Tag: $tag", @headers]);
    my $line;
    wait_for(5, sub {
        ($line) = grep { /^\Q$tag\E / } $s->access_lines('usage.log', 1);
        defined $line;
    });
    my (undef, undef, $in, $out, $usage) = split ' ', $line // '';
    return ($r, $in // -1, $out // -1, $usage // '', length $body);
}

sub tokens_out {
    my ($user) = @_;
    my $st = $s->status_json;
    my ($t) = grep { $_->{name} eq $user }
              @{ ($st->{zones} // [{}])->[0]{users} // [] };
    return $t ? $t->{tokens_out} : -1;
}

my $lie = '{"completion_tokens":' . $BILLION . '}';

# JSON bodies
my $mark = $s->log_mark;
my ($r, $in, $out, $usage) = ask('max', 'liar', { max_tokens => 10 },
                                  "X-Mock-Report: $lie");
is($r->{status}, 200, 'a billion completion tokens: the answer passes');
is($out, 10, 'a billion completion tokens: capped at max_tokens');
is($usage, 'capped', '$fairgate_usage says capped');
my $warn = $s->wait_for_log(
    qr/\[warn\][^\n]*fairgate: the upstream \Q$UP\E reported usage of \d+ /
    . qr/prompt and $BILLION completion tokens[^\n]*tenant "liar"[^\n]*/
    . qr/capped/, mark => $mark);
ok($warn, 'a warning names the upstream and the values')
    or diag($s->log_tail);
note($warn // '');

($r, $in, $out, $usage) = ask('mct', 'liar',
                              { max_completion_tokens => 7, n => 3 },
                              "X-Mock-Report: $lie");
is($out, 21, 'max_completion_tokens times n');

($r, $in, $out, $usage) = ask('nomax', 'liar', {}, "X-Mock-Report: $lie");
is($r->{status}, 200, 'no max tokens: the answer passes');
is($out, length $r->{body}, 'no max tokens: capped at the body\'s bytes');
is($usage, 'capped', 'no max tokens: capped');

my $len;
($r, $in, $out, $usage, $len) = ask('prompt', 'liar', { max_tokens => 4 },
                                    'X-Mock-Report: {"prompt_tokens":'
                                    . $BILLION . '}');
is($in, $len + 32768, 'a billion prompt tokens: the body\'s bytes + 32768');
is($out, 4, 'the completion tokens as reported');

# streams: the usage in their last chunk
($r, $in, $out, $usage) = ask('smax', 'liar',
                              { max_tokens => 10, stream => JSON::PP::true,
                                stream_options => { include_usage =>
                                                    JSON::PP::true } },
                              "X-Mock-Report: $lie");
my @ev = eval { parse_sse($r->{body}) };
is($ev[-1] // '', '[DONE]', 'a stream: whole');
is($out, 10, 'a stream: capped at max_tokens');

($r, $in, $out, $usage) = ask('snomax', 'liar',
                              { stream => JSON::PP::true,
                                stream_options => { include_usage =>
                                                    JSON::PP::true } },
                              "X-Mock-Report: $lie");
ok($out > 16 && $out <= length $r->{body},
   "a stream without max tokens: capped at its bytes ($out)");
is($usage, 'capped', 'a stream: capped');

ok(tokens_out('liar') < 10_000,
   'the tenant was charged what it could have used, not billions')
    or diag(tokens_out('liar'));

# honest usage passes; nonsense is no usage
($r, $in, $out, $usage) = ask('honest', 'fair', { max_tokens => 10, n => 2 },
                              'X-Mock-Report: {"completion_tokens":20}');
is("$out $usage", '20 reported', 'n=2, 20 of 2 x 10 tokens: as reported');

($r, $in, $out, $usage) = ask('exact', 'fair', { max_tokens => 5 },
                              'X-Mock-Tokens: 5');
is("$out $usage", '5 reported', 'the usage of a plain answer: as reported');

my $i = 0;
for my $bad ('-5', '"12"', '1.5', 'null') {
    $i++;
    ($r, $in, $out, $usage) = ask("bad$i", 'fair', { max_tokens => 8 },
                                  'X-Mock-Report: {"completion_tokens":'
                                  . "$bad}");
    is($usage, 'estimated', "completion_tokens $bad: the estimate");
    ok($out >= 0 && $out <= 8, "completion_tokens $bad: $out out");
}

unlike($s->error_log, qr/reported usage of \d+ prompt and (?:20|5) /,
       'no warning for honest usage');

is($s->stop, 0, 'nginx exits cleanly');
$up->stop;

done_testing();
