#!/usr/bin/env perl

# Drop-in: a stream the upstream breaks after its header (a reset, or a
# stall past proxy_read_timeout) ends at the client with an SSE error
# event and [DONE], as local mode's do, not cut without a word; and its
# zone capacity is released (found by the soak, t/soak/).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use File::Temp ();
use JSON::PP ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test qw(:DEFAULT gateway);
use Fairgate::Engine qw(parse_sse);
use Fairgate::MockUpstream;

my $J = JSON::PP->new->canonical;
my $dir = File::Temp::tempdir('fairgate-cut-XXXXXX', TMPDIR => 1,
                              CLEANUP => 1);
my $fault = "$dir/fault";
my $up = Fairgate::MockUpstream->new(fault_file => $fault);

my $s = gateway(zone => 'inflight=4', v1 => <<'END',
        proxy_buffering off;
        proxy_read_timeout 1s;
END
                pass => 'proxy_pass http://' . $up->addr);

sub set_fault {
    open my $fh, '>', $fault or die "$fault: $!\n";
    print {$fh} "$_[0]\n";
    close $fh;
}

sub running {
    my $st = eval { $J->decode($s->get('/status')->{body}) } // {};
    return ($st->{zones} // [{}])->[0]{inflight}{running} // -1;
}

my $body = $J->encode({ model => 'mock', stream => JSON::PP::true,
                        max_tokens => 10,
                        messages => [{ role => 'user', content => 'x' }] });

for my $f (qw(reset stall)) {
    set_fault($f);
    my $r = $s->post('/v1/chat/completions', $body,
                     'X-Mock-Token-Delay' => '0.01');
    is($r->{status}, 200, "$f: the stream had started");
    my @ev = eval { parse_sse($r->{body}) };
    ok(@ev, "$f: a strict SSE stream") or diag($@, $r->{body});
    is($ev[-1] // '', '[DONE]', "$f: [DONE] last");
    ok(ref $ev[-2] eq 'HASH' && ($ev[-2]{error} // {})->{message},
       "$f: an error event before it") or diag($r->{body});
    is(scalar(grep { ref $_ eq 'HASH' && $_->{choices} } @ev), 2,
       "$f: the upstream's two chunks passed") or diag($r->{body});

    my $deadline = Time::HiRes::time() + 5;
    Time::HiRes::sleep(0.02)
        while running() != 0 && Time::HiRes::time() < $deadline;
    is(running(), 0, "$f: the zone released");
}

set_fault('');
my $r = $s->post('/v1/chat/completions', $body);
my @ev = eval { parse_sse($r->{body}) };
is($ev[-1] // '', '[DONE]', 'no fault: the stream whole');
ok(!grep({ ref $_ eq 'HASH' && $_->{error} } @ev), 'no fault: no error');

is($s->stop, 0, 'nginx exits cleanly');
$up->stop;

done_testing();
