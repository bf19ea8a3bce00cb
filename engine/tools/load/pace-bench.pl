#!/usr/bin/env perl

# The token pacer in drop-in mode, measured at the client: a mock
# OpenAI upstream sends every token of a streamed answer at once; nginx
# with fairgate_pace passes it on at the reader's speed.  For each speed
# and for pacing off, ROUNDS streams of TOKENS tokens; prints the rate
# the client saw ((n - 1) / (last token - first token)), its ratio to the
# reading speed, and the gap from the last token to [DONE], medians and
# ranges over the rounds (docs/qoe.md records it):
#
#     engine/tools/load/pace-bench.pl [TOKENS [ROUNDS]]  (default 40 tokens, 3)
#
# Loopback only; nginx and the mock stop on exit.  About a minute.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../../../t/lib";

use JSON::PP ();

use Fairgate::Test;
use Fairgate::MockUpstream;
use Fairgate::Timed qw(timed_stream token_times);


my $TOKENS = $ARGV[0] // 40;
my $ROUNDS = $ARGV[1] // 3;
my @SPEEDS = (5, 10, 20);

my $up = Fairgate::MockUpstream->new;
my $s = Fairgate::Test::Server->new(
    http_config => "    fairgate_zone zone=p:16m;",
    config => <<"END");
    fairgate_identity user=\$remote_addr;

    location /v1/ {
        fairgate zone=p queue=100 timeout=60s;
        proxy_pass http://${\ $up->addr };
        proxy_buffering off;
    }
    location /paced/v1/ {
        fairgate zone=p queue=100 timeout=60s;
        fairgate_qoe ttft=1s speed=5;
        fairgate_pace on;
        proxy_pass http://${\ $up->addr }/v1/;
        proxy_buffering off;
    }
END
$s->start or die $s->last_error;

my $body = JSON::PP->new->canonical->encode({
    model => 'm', max_tokens => $TOKENS, stream => JSON::PP::true,
    messages => [{ role => 'user', content => 'Once upon a time' }] });


sub median_range {
    my @v = sort { $a <=> $b } @_;
    return (@v ? $v[$#v / 2] : 0, @v ? $v[0] : 0, @v ? $v[-1] : 0);
}


# one configuration's rounds: rates and [DONE] gaps
sub measure {
    my ($uri, @headers) = @_;
    my (@rate, @done);

    for (1 .. $ROUNDS) {
        my $st = timed_stream($s, $uri, $body, "X-Mock-Tokens: $TOKENS",
                              @headers);
        my @t = token_times($st);
        die "got " . scalar(@t) . " tokens of $TOKENS\n" if @t != $TOKENS;
        push @rate, ($TOKENS - 1) / ($t[-1] - $t[0] || 1e-9);
        push @done, $st->{times}[-1] - $t[-1];
    }

    return ([median_range(@rate)], [median_range(@done)]);
}


print "| reading speed (tokens/s) | rate at the client: median (range) | "
      . "rate / speed | last token to [DONE] (ms) |\n|---|---|---|---|\n";

for my $v (@SPEEDS) {
    my ($r, $d) = measure('/paced/v1/chat/completions',
                          "X-Fairgate-Reading-Speed: $v");
    printf "| %d, paced | %.2f (%.2f-%.2f) | %.3f | %.1f |\n", $v, @$r,
        $r->[0] / $v, 1000 * $d->[0];
}

my ($r, $d) = measure('/v1/chat/completions');
printf "| pacing off | %.0f (%.0f-%.0f) | - | %.1f |\n", @$r, 1000 * $d->[0];

$s->stop;
$up->stop;
