#!/usr/bin/env perl

# Drop-in: a stream the upstream breaks after its header (a reset, a close
# within its chunked framing, or a stall past proxy_read_timeout) ends at
# the client with an SSE error event and [DONE], as local mode's do, not
# cut without a word (found by the soak, t/soak/); its HTTP framing ends
# too (the chunked body's last chunk, which curl demands: it exits 18
# without it); the access log says upstream_error; and its zone capacity
# is released.  The upstream as conf/dropin.conf has it: HTTP/1.1, kept
# alive.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use File::Temp ();
use JSON::PP ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test qw(:DEFAULT gateway wait_for);
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
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        access_log logs/cut.log cut;
END
                http => q{    log_format cut '$request_uri $status }
                        . q{$http_x_tag $fairgate_outcome';} . "\n"
                        . '    upstream llm_backend { server ' . $up->addr
                        . "; keepalive 8; }\n",
                pass => 'proxy_pass http://llm_backend');

sub set_fault {
    open my $fh, '>', $fault or die "$fault: $!\n";
    print {$fh} "$_[0]\n";
    close $fh;
}

# the access log's line of the request tagged TAG, once written
sub logged {
    my ($tag) = @_;
    my $line;
    wait_for(5, sub {
        ($line) = grep { / \Q$tag\E / } $s->access_lines('cut.log', 1);
        defined $line;
    });
    return $line // '';
}

sub running {
    my $st = eval { $J->decode($s->get('/status')->{body}) } // {};
    return ($st->{zones} // [{}])->[0]{inflight}{running} // -1;
}

my $body = $J->encode({ model => 'mock', stream => JSON::PP::true,
                        max_tokens => 10,
                        messages => [{ role => 'user', content => 'x' }] });

for my $f (qw(reset close stall)) {
    set_fault($f);
    my $r = $s->post('/v1/chat/completions', $body,
                     headers => ['X-Mock-Token-Delay: 0.01', "X-Tag: $f"]);
    is($r->{status}, 200, "$f: the stream had started");
    like($r->{headers}{'transfer-encoding'} // '', qr/chunked/,
         "$f: a chunked body");
    ok($r->{chunked_end}, "$f: the chunked body ends with its last chunk")
        or diag($r->{raw});
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

    like(logged($f), qr/ upstream_error$/,
         "$f: the access log says upstream_error");
}

# curl itself, where it is installed: exit 0, not 18
SKIP: {
    my ($cw) = Fairgate::Test::run_cmd('curl', '--version');
    skip 'no curl', 2 if $cw;
    set_fault('reset');
    my ($w, $out) = Fairgate::Test::run_cmd(
        'curl', '-sS', '-N', '--max-time', '10', '-H',
        'Content-Type: application/json', '--data-binary', $body,
        $s->url('/v1/chat/completions'));
    is($w >> 8, 0, 'curl: the broken stream is a complete HTTP response')
        or diag($out);
    like($out, qr/data: \[DONE\]\s*\z/, 'curl: [DONE] last');
}

set_fault('');
my $r = $s->post('/v1/chat/completions', $body,
                 headers => ['X-Tag: whole']);
my @ev = eval { parse_sse($r->{body}) };
is($ev[-1] // '', '[DONE]', 'no fault: the stream whole');
ok(!grep({ ref $_ eq 'HASH' && $_->{error} } @ev), 'no fault: no error');
ok($r->{chunked_end}, 'no fault: the chunked body ends');
like(logged('whole'), qr/ served$/, 'no fault: the access log says served');

my @bad = grep { /\[(?:alert|crit|emerg)\]/ } split /\n/, $s->error_log;
is_deeply(\@bad, [], 'no alert, crit or emerg in the error log');

is($s->stop, 0, 'nginx exits cleanly');
$up->stop;

done_testing();
