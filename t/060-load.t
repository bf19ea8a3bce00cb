#!/usr/bin/env perl

# fairgate-load against the mock upstream (Fairgate::MockUpstream, on
# 127.0.0.1 only): replay fidelity (arrivals never early, never a second
# late; docs/load.md records the figure measured), statuses and
# token counts for streamed and whole answers, with usage and without, 429
# as rejected, errors, timeouts, --max-seconds, identity headers, bad
# arguments.  Each run is a couple of seconds at most.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use File::Temp ();
use JSON::PP ();
use Test::More;

use Fairgate::Test qw($REPO);
use Fairgate::MockUpstream;


my $load = "$Fairgate::Test::BUILD/fairgate-load";
plan skip_all => "$load is missing: run make" unless -x $load;

my $dir = File::Temp::tempdir('fairgate-load-XXXXXX', TMPDIR => 1,
                              CLEANUP => 1);
my $json = JSON::PP->new->canonical;
my $up = Fairgate::MockUpstream->new;
my $url = 'http://127.0.0.1:' . $up->port . '/v1/chat/completions';

# the bound asserted: what a broken pacer (one that waits on answers, or
# sends at once) breaks, whatever else runs on the machine; the fidelity
# itself is a figure, measured by engine/tools/load/fidelity.sh (docs/load.md)
my $FIDELITY = 1.0;


sub write_trace {
    my ($name, @lines) = @_;
    open my $fh, '>', "$dir/$name" or die "$dir/$name: $!\n";
    print {$fh} map { $json->encode($_) . "\n" } @lines;
    close $fh;
    return "$dir/$name";
}


# runs fairgate-load: exit status, summary, results, stderr
sub load {
    my (@args) = @_;
    my $out = "$dir/run.res";
    unlink $out;

    my $pid = open my $fh, '-|';
    die "fork: $!\n" unless defined $pid;

    if (!$pid) {
        open STDERR, '>', "$dir/run.err" or die;
        exec $load, @args, '--out', $out, '--quiet' or die "$load: $!\n";
    }

    my $summary = do { local $/; <$fh> };
    close $fh;
    my $status = $? >> 8;

    my @res;
    if (open my $r, '<', $out) {
        @res = map { $json->decode($_) } <$r>;
    }

    my $err = do { local (@ARGV, $/) = "$dir/run.err"; <> } // '';

    return { status => $status, summary => $summary ? eval {
                 $json->decode($summary) } : undef,
             res => \@res, err => $err };
}


# 30 requests over 1.45 s, two clients, streamed and not, one with a
# system prompt
my @lines;
for my $i (0 .. 29) {
    my %l = (t => $i * 0.05, client => $i % 2 ? 'bob' : 'alice',
             input_tokens => 20 + $i, output_tokens => 4 + $i % 5);
    $l{stream} = JSON::PP::false if $i % 3 == 0;
    @l{qw(system_tokens app stage)} = (8, 'chat', 0) if $i == 7;
    push @lines, \%l;
}

my $trace = write_trace('main.trace', @lines);

my %byid;


# fidelity, statuses, tokens from usage, token times
{
    my $r = load('--trace', $trace, '--url', $url, '--token-times',
                 '--key-prefix', 'sk-', '--max-seconds', 30);

    is($r->{status}, 0, 'a replay exits 0');
    is(scalar @{ $r->{res} }, 30, 'a result line a request');

    my @lag = map { abs($_->{arrival} - $_->{scheduled}) } @{ $r->{res} };
    my ($max) = sort { $b <=> $a } @lag;
    my $mean = 0;
    $mean += $_ / @lag for @lag;

    ok($max < $FIDELITY, sprintf('arrivals within %.0f ms of the trace',
                                 $FIDELITY * 1000));
    ok(!grep({ $_->{arrival} < $_->{scheduled} - 0.001 } @{ $r->{res} }),
       'no arrival before its time');
    diag(sprintf('replay fidelity: arrival - scheduled max %.3f ms, '
                 . 'mean %.3f ms over %d requests', $max * 1000,
                 $mean * 1000, scalar @lag));
    ok(abs($r->{summary}{arrival_lag_max} - $max) < 1e-5,
       'the summary says the same');

    %byid = map { $_->{id} => $_ } @{ $r->{res} };
    my ($bad_status, $bad_tokens, $bad_times, $bad_order) = (0, 0, 0, 0);

    for my $i (0 .. 29) {
        my $x = $byid{$i};
        my $l = $lines[$i];

        $bad_status++ unless $x->{status} eq 'ok'
                             && $x->{http_status} == 200
                             && $x->{tokens_from} eq 'usage'
                             && ($x->{stream} ? 1 : 0)
                                == (exists $l->{stream} ? 0 : 1);

        # the mock: a word a token, plus 3 for the template
        $bad_tokens++ unless $x->{input_tokens} == $l->{input_tokens} + 3
                             && $x->{output_tokens} == $l->{output_tokens};

        $bad_order++ unless $x->{arrival} <= $x->{first_token}
                            && $x->{first_token} <= $x->{finish};

        next unless $x->{stream};

        my $t = $x->{token_times} // [];
        $bad_times++ unless @$t == $l->{output_tokens}
                            && $t->[0] == $x->{first_token}
                            && $t->[-1] <= $x->{finish}
                            && !grep { $t->[$_] < $t->[$_ - 1] } 1 .. $#$t;
    }

    is($bad_status, 0, 'all ok, 200, tokens from usage, stream as asked');
    is($bad_tokens, 0, 'input and output tokens from usage, streamed or '
                       . 'not, with a system prompt or not');
    is($bad_order, 0, 'arrival <= first_token <= finish');
    is($bad_times, 0, 'streamed: a token time a token, in order, the first '
                      . 'the first token');
    ok(!exists $byid{0}{token_times}, 'not streamed: no token times');
    is_deeply([ @{ $byid{7} }{qw(system_tokens app stage)} ],
              [8, 'chat', 0], 'the trace\'s optional fields carried');

    my %keys = map { $_->{key} => 1 } grep { $_->{what} eq 'start' }
               $up->events;
    is_deeply(\%keys, { 'sk-alice' => 1, 'sk-bob' => 1 },
              '--key-prefix: Bearer sk-<client> reached the server');
    $up->clear_log;
}


# tokens counted without usage
{
    my $r = load('--trace', $trace, '--url', $url, '--time-scale', 0.5,
                 '--header', 'X-Mock-Usage: 0');

    my $bad = grep {
        my $l = $lines[$_->{id}];
        !($_->{status} eq 'ok' && $_->{tokens_from} eq 'counted'
          && $_->{input_tokens} == $l->{input_tokens}
          && $_->{output_tokens} == $l->{output_tokens})
    } @{ $r->{res} };

    is(scalar @{ $r->{res} }, 30, 'without usage: every request answered');
    is($bad, 0, 'without usage: output counted (chunks, or words of a whole '
                . 'answer), input the words sent');

    my ($off) = grep { abs($_->{scheduled} - $lines[$_->{id}]{t} * 0.5)
                       > 1e-6 } @{ $r->{res} };
    ok(!$off, '--time-scale 0.5: due at half the trace\'s times');

    my ($late) = grep { abs($_->{arrival} - $_->{scheduled}) >= $FIDELITY }
                 @{ $r->{res} };
    ok(!$late, '--time-scale 0.5: arrivals within the bound as well');
}


my $short = write_trace('short.trace',
    map { { t => $_ * 0.01, client => 'c', input_tokens => 5,
            output_tokens => 3, ($_ % 2 ? (stream => JSON::PP::false)
                                        : ()) } } 0 .. 3);


# refusals and failures
{
    my $r = load('--trace', $short, '--url', $url, '--header',
                 'X-Mock-Status: 429');
    my @s = map { "$_->{status} $_->{http_status}" } @{ $r->{res} };
    is_deeply(\@s, [('rejected 429') x 4], '429: rejected, streamed or not');
    ok(!grep({ defined $_->{first_token} || defined $_->{finish} }
             @{ $r->{res} })
       && !grep({ $_->{output_tokens} != 3 } @{ $r->{res} })
       && $r->{res}[0]{error} eq 'HTTP 429: mock error',
       'rejected: no times, the trace\'s lengths, the error message');
    is($r->{summary}{rejected}, 4, 'the summary counts them');

    $r = load('--trace', $short, '--url', $url, '--header',
              'X-Mock-Status: 500');
    @s = map { "$_->{status} $_->{http_status}" } @{ $r->{res} };
    is_deeply(\@s, [('error 500') x 4], '500: error');

    $r = load('--trace', $short, '--url', $url, '--header',
              'X-Mock-Close: 1');
    @s = map { $_->{status} } @{ $r->{res} };
    is_deeply(\@s, [('error') x 4], 'closed without an answer: error');

    $r = load('--trace', $short, '--url', $url, '--header',
              'X-Mock-Delay: 3', '--request-timeout', 0.3);
    @s = map { $_->{status} } @{ $r->{res} };
    is_deeply(\@s, [('timeout') x 4], 'slower than --request-timeout: '
                                      . 'timeout');
    like($r->{res}[0]{error}, qr/no complete answer in 0.3 s/,
         'timeout: saying so');

    # nothing listens there
    my $gone_url = 'http://127.0.0.1:' . Fairgate::Test::free_port()
                   . '/v1/chat/completions';
    $r = load('--trace', $short, '--url', $gone_url);
    @s = map { "$_->{status} $_->{http_status}" } @{ $r->{res} };
    is_deeply(\@s, [('error 0') x 4], 'connection refused: error, no '
                                      . 'status');
}


# --max-seconds bounds the run
{
    my $late = write_trace('late.trace',
        { t => 0, client => 'c', input_tokens => 5, output_tokens => 3 },
        { t => 30, client => 'c', input_tokens => 5, output_tokens => 3 });

    my $t0 = time;
    my $r = load('--trace', $late, '--url', $url, '--header',
                 'X-Mock-Delay: 5', '--max-seconds', 0.5);

    ok(time - $t0 < 5, '--max-seconds 0.5: done long before the trace');
    is(scalar @{ $r->{res} }, 1, 'the request never sent has no line');
    is($r->{res}[0]{status}, 'timeout', 'the one in flight is a timeout');
    like($r->{err}, qr/1 requests in flight given up \(timeout\), 1 not sent/,
         'and stderr says so');
}


# analyze reads what the run wrote
{
    load('--trace', $trace, '--url', $url, '--token-times');
    my $out = `'$load' analyze --results '$dir/run.res' --reading-speed 10`;
    my $a = eval { $json->decode($out) };
    ok($a && $a->{latency}{all}{served} == 30
       && $a->{fairness}{clients}{alice}{served} == 15
       && $a->{latency}{reading_speed} == 10,
       'analyze: fairness and latency of the results');
}


# bad arguments: status 2, a message naming the problem
{
    my @cases = (
        [[], 'usage:', 'no arguments'],
        [['--url', $url, '--out', "$dir/x"], 'option --trace is required',
         'no trace'],
        [['--trace', $trace, '--out', "$dir/x"], 'option --url is required',
         'no URL'],
        [['--trace', $trace, '--url', 'ftp://127.0.0.1/', '--out', "$dir/x"],
         'is not an http:// or https:// URL', 'an ftp URL'],
        [['--trace', $trace, '--url', $url, '--out', "$dir/x",
          '--time-scale', 0], '--time-scale: "0" is not a number',
         'time scale 0'],
        [['--trace', $trace, '--url', $url, '--out', "$dir/x",
          '--header', 'X-A b'], '--header: "X-A b" is not "Name: value"',
         'a header without a colon'],
        [['--trace', $trace, '--url', $url, '--out', "$dir/x",
          '--stream', 'maybe'], '--stream: "maybe" is not on or off',
         'stream maybe'],
        [['--trace', $trace, '--url', $url, '--out', "$dir/x", '--nope'],
         'unknown option "--nope"', 'an unknown option'],
    );

    for my $c (@cases) {
        my ($args, $want, $what) = @$c;
        my $pid = fork // die;
        if (!$pid) {
            open STDERR, '>', "$dir/bad.err";
            open STDOUT, '>', '/dev/null';
            exec $load, @$args;
        }
        waitpid $pid, 0;
        my $status = $? >> 8;
        my $err = do { local (@ARGV, $/) = "$dir/bad.err"; <> } // '';
        ok($status == 2 && index($err, $want) >= 0,
           "$what: exit 2 saying \"$want\"") or diag($err);
    }

    my $r = load('--trace', "$dir/none.trace", '--url', $url);
    ok($r->{status} == 1 && $r->{err} =~ /none\.trace: No such file/,
       'a missing trace: exit 1 naming it');
}

$up->stop;

done_testing();
