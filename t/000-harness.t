#!/usr/bin/env perl

# The harness must catch what it is meant to catch: blocks that should fail
# are run under Test2's intercept (and once in a child perl, as prove would
# run them) and this test passes only if they did fail, for the right
# reason.  The module is not loaded: this tests the harness alone.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use File::Temp ();
use Test::More;
use Test2::API qw(intercept);

use Fairgate::Test qw(parse_blocks run_block run_cmd);

$Fairgate::Test::LOAD_MODULE = 0;

my %block = map { $_->{name} => $_ } parse_blocks(<<'END');

=== right body
--- config
location /x { return 200 "hello\n"; }
--- request
GET /x
--- response_body
hello
--- response_headers
Content-Type: text/plain
!X-Nothing

=== wrong body
--- config
location /x { return 200 "hello\n"; }
--- request
GET /x
--- response_body
goodbye

=== wrong status
--- config
location /x { return 404; }
--- request
GET /x

=== wrong header
--- config
location /x { add_header X-Fg one; return 200 "hello\n"; }
--- request
GET /x
--- response_headers
X-Fg: two

=== body like
--- config
location /x { return 200 "hello world\n"; }
--- request
POST /x
some body
--- more_headers
X-A: 1
--- response_body_like
^hello w.rld$

=== missing log line
--- config
location /x { return 200 "hello\n"; }
--- request
GET /x
--- error_log
no such line in any log

=== forbidden log line
--- config
location /x { return 200 "hello\n"; }
--- request
GET /x
--- no_error_log
start worker process

=== must die
--- config
location /x { no_such_directive on; }
--- must_die
--- error_log
unknown directive "no_such_directive"

=== must die but does not
--- config
location /x { return 200; }
--- must_die

=== must die with another message
--- config
location /x { no_such_directive on; }
--- must_die
--- error_log
invalid value "foo"

=== bad request section
--- config
location /x { return 200; }
--- request
GET

END


# every event, subtests' included
sub flatten {
    map {
        ($_, $_->can('subevents') ? flatten(@{ $_->subevents }) : ())
    } @_;
}


sub failed_asserts {
    sort map { $_->facet_data->{assert}{details} // '' }
    grep { my $a = $_->facet_data->{assert}; $a && !$a->{pass} }
    flatten(@_);
}


sub diag_text {
    join "\n", map { $_->{details} }
               map { @{ $_->facet_data->{info} // [] } } flatten(@_);
}


# runs a block under intercept: (top-level subtest passed, events)
sub intercepted {
    my ($name) = @_;
    my $server;
    my $events = intercept { $server = run_block($block{$name}) };
    my ($top) = grep { $_->facet_data->{assert} } @$events;
    return ($top && $top->facet_data->{assert}{pass}, $events, $server);
}


subtest 'a correct block passes' => sub {
    my ($pass, $events, $server) = intercepted('right body');
    ok($pass, 'the block passed') or diag(diag_text(@$events));
    is_deeply([failed_asserts(@$events)], [], 'no failed assertion');
    like($server->error_log, qr/\[notice\] \d+#\d+: exit$/m,
         'nginx was stopped gracefully at the end of the block');
    ok(!defined $server->pid, 'no nginx left running');
};

# and the same block for real, so that the positive case shows in the plan
run_block($block{'right body'});

subtest 'a wrong body fails with a got/expected diagnostic' => sub {
    my ($pass, $events) = intercepted('wrong body');
    ok(!$pass, 'the block failed');
    is_deeply([failed_asserts(@$events)],
              [sort 'response_body', 'wrong body'], 'on the body check only');
    my $diag = diag_text(@$events);
    like($diag, qr/got: 'hello\n'/, 'diagnostic shows what came');
    like($diag, qr/expected: 'goodbye\n'/, 'diagnostic shows what was wanted');
};

subtest 'a wrong status fails' => sub {
    my ($pass, $events) = intercepted('wrong status');
    ok(!$pass, 'the block failed');
    is_deeply([failed_asserts(@$events)],
              [sort 'status code', 'wrong status'], 'on the status check');
    like(diag_text(@$events), qr/got: '404'.*expected: '200'/s,
         'default expected status is 200');
};

subtest 'a wrong header fails' => sub {
    my ($pass, $events) = intercepted('wrong header');
    ok(!$pass, 'the block failed');
    is_deeply([failed_asserts(@$events)],
              [sort 'response header X-Fg', 'wrong header'], 'on the header');
};

subtest 'body_like, a request body and more_headers pass' => sub {
    my ($pass, $events) = intercepted('body like');
    ok($pass, 'the block passed') or diag(diag_text(@$events));
};

subtest 'error_log and no_error_log are checked' => sub {
    my ($pass, $events) = intercepted('missing log line');
    ok(!$pass, 'a missing error_log line fails the block');
    is_deeply([failed_asserts(@$events)],
              [sort "error_log has 'no such line in any log'",
                    'missing log line'], 'on that line');

    ($pass, $events) = intercepted('forbidden log line');
    ok(!$pass, 'a forbidden line present fails the block');
    is_deeply([failed_asserts(@$events)],
              [sort "error_log lacks 'start worker process'",
               'forbidden log line'], 'on that line');
};

subtest 'must_die' => sub {
    my ($pass, $events) = intercepted('must die');
    ok($pass, 'a configuration nginx -t rejects passes')
        or diag(diag_text(@$events));

    ($pass, $events) = intercepted('must die but does not');
    ok(!$pass, 'a configuration nginx -t accepts fails the block');
    is_deeply([failed_asserts(@$events)],
              [sort 'nginx -t fails', 'must die but does not'],
              'on the nginx -t check');

    ($pass, $events) = intercepted('must die with another message');
    ok(!$pass, 'a different error message fails the block');
    is_deeply([failed_asserts(@$events)],
              [sort q{error_log has 'invalid value "foo"'},
               'must die with another message'], 'on the message');
};

subtest 'a block that dies is a failure, not a crash' => sub {
    my ($pass, $events) = intercepted('bad request section');
    ok(!$pass, 'the block failed');
    like(diag_text(@$events), qr/died: Fairgate::Test: bad request/,
         'with the reason');
};

subtest 'a failing block fails the test file under perl' => sub {
    my $dir = File::Temp::tempdir(CLEANUP => 1);
    my $t = "$dir/wrong.t";

    open my $fh, '>', $t or die "$t: $!";
    print {$fh} <<"END";
use strict;
use warnings;
use lib '$FindBin::Bin/lib';
use Fairgate::Test;
\$Fairgate::Test::LOAD_MODULE = 0;
run_tests();
__DATA__
=== TEST 1: wrong body
--- config
location /x { return 200 "hello\\n"; }
--- request
GET /x
--- response_body
goodbye
END
    close $fh;

    my ($status, $out) = run_cmd($^X, $t);
    isnt($status, 0, 'the test file exits non-zero');
    like($out, qr/^not ok 1 - TEST 1: wrong body$/m, 'TAP says not ok');
    like($out, qr/expected: 'goodbye/, 'with the diagnostic');
};

subtest 'plain API: start, requests, reload, stop' => sub {
    my $s = Fairgate::Test::Server->new(
        config => 'location /v { return 200 "one\n"; }');

    ok($s->start, 'starts') or diag($s->last_error);
    is($s->get('/v')->{body}, "one\n", 'serves');

    my @res = $s->concurrent([map { "GET /v?$_" } 1 .. 8]);
    is(scalar(grep { ($_->{status} // 0) == 200 } @res), 8,
       'eight concurrent requests answered');

    like($s->raw_request("GET /v HTTP/1.0\r\n\r\n"),
         qr{^HTTP/1\.1 200 .*one\n\z}s, 'raw request');

    my $mark = $s->log_mark;
    my @before = $s->worker_pids;
    ok($s->reload(config => 'location /v { return 200 "two\n"; }'),
       'reloads') or diag($s->last_error);
    is($s->get('/v')->{body}, "two\n", 'the new configuration serves at once');
    isnt(join(',', $s->worker_pids), join(',', @before), 'new workers');
    like($s->error_log($mark), qr/reconfiguring/, 'the master reconfigured');

    ok(!$s->reload(config => 'location /v { no_such_directive; }'),
       'a bad configuration does not reload');
    like($s->last_error, qr/unknown directive/, 'and says why');
    is($s->get('/v')->{body}, "two\n", 'the running configuration stays');

    is($s->stop, 0, 'stops with status 0');
    ok(!eval { IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                     PeerPort => $s->port, Proto => 'tcp') },
       'the port is closed');
};

done_testing();
