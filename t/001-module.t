#!/usr/bin/env perl

# The module: it loads, fairgate_zone and fairgate_status parse and reject
# bad values with exact messages, the status page reads the schedulers in
# the shared zones, and a zone's state survives "nginx -s reload" unless its
# settings changed.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use JSON::PP ();
use Test::More;

use Fairgate::Test;


run_blocks(blocks());


my @COUNTERS = qw(tenants backlogged waiting running enqueued rejected
                  admitted finished cancelled);


sub status {
    my ($s, $uri) = @_;
    my $res = $s->get($uri // '/status');
    is($res->{status}, 200, "GET " . ($uri // '/status'))
        or return diag($res->{error} // $res->{body});
    is($res->{headers}{'content-type'}, 'application/json', 'JSON');
    my $json = eval { JSON::PP->new->decode($res->{body}) };
    ok($json, 'the body parses') or return diag("$@\n$res->{body}");
    return $json;
}


# the master's shared anonymous mappings: nginx's zones and its own
sub shared_maps {
    my ($s) = @_;
    open my $fh, '<', '/proc/' . $s->pid . '/maps' or return -1;
    return scalar grep { m{ /dev/zero \(deleted\)$} } <$fh>;
}


sub zone {
    my ($json, $name) = @_;
    my ($z) = grep { $_->{name} eq $name } @{ $json->{zones} // [] };
    return $z;
}


subtest 'the status page reports every zone and its scheduler' => sub {
    my $s = Fairgate::Test::Server->new(
        http_config => <<'END',
    fairgate_zone zone=main:16m;
    fairgate_zone zone=small:1m policy=rpm rpm=120 max_tenants=100
                  cost=linear:1,3;
    fairgate_zone zone=prof:16m policy=lcf cost=profiled;
END
        config => <<'END');
    location /status { fairgate_status; }
    location /status/small { fairgate_status small; }
    location /status/two { fairgate_status prof main; }
    location /status/late { fairgate_status late; }
    location /status/if {
        if ($arg_x) { set $y 1; }
        fairgate_status main;
    }
END

    $s->{http_config} .= "    fairgate_zone zone=late:16m policy=fcfs;\n";
    $s->write_conf;

    ok($s->start, 'starts') or return diag($s->last_error);

    my $json = status($s);
    is_deeply([map { $_->{name} } @{ $json->{zones} }],
              [qw(main small prof late)], 'all zones, in order');

    # the scheduler's part of the zone; test 002 checks the rest
    my $main = zone($json, 'main');
    $main = { map { $_ => $main->{$_} } grep { exists $main->{$_} }
              qw(name policy cost max_tenants rpm reloads), @COUNTERS };
    is_deeply($main, {
        name => 'main', policy => 'vtc',
        cost => { name => 'linear', in => 1, out => 2, in_out => 0,
                  out2 => 0, base => 0 },
        max_tenants => 10000, rpm => 0, reloads => 0,
        map { $_ => 0 } @COUNTERS,
    }, 'defaults: vtc, linear 1,2, 10000 tenants, all counters 0');

    my $small = zone($json, 'small');
    is($small->{policy}, 'rpm', 'policy=rpm');
    is($small->{rpm}, 120, 'rpm=120');
    is($small->{max_tenants}, 100, 'max_tenants=100');
    is_deeply([@{ $small->{cost} }{qw(name in out)}], ['linear:1,3', 1, 3],
              'cost=linear:1,3');

    my $prof = zone($json, 'prof');
    is($prof->{policy}, 'lcf', 'policy=lcf');
    is($prof->{cost}{name}, 'profiled', 'cost=profiled');
    ok(grep({ $prof->{cost}{$_} != 0 } qw(in_out out2 base)),
       'the profiled cost is not linear');

    is(zone($json, 'late')->{policy}, 'fcfs',
       'a zone declared after the server block');

    is_deeply([map { $_->{name} } @{ status($s, '/status/small')->{zones} }],
              ['small'], 'one named zone');
    is_deeply([map { $_->{name} } @{ status($s, '/status/two')->{zones} }],
              ['prof', 'main'], 'named zones, in the order named');
    is_deeply([map { $_->{name} } @{ status($s, '/status/late')->{zones} }],
              ['late'], 'a zone named before its fairgate_zone');
    is_deeply([map { $_->{name} } @{ status($s, '/status/if?x=1')->{zones} }],
              ['main'], 'inside an "if" block of the location');

    my $res = $s->request("HEAD /status");
    is($res->{status}, 200, 'HEAD');
    is($res->{body}, '', 'HEAD has no body');

    is($s->post('/status', 'x')->{status}, 405, 'POST is not allowed');

    is($s->stop, 0, 'stops cleanly');
    unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');
};


subtest 'zone state survives reload; new settings start afresh' => sub {
    my $conf = <<'END';
    fairgate_zone zone=main:16m;
    fairgate_zone zone=b:1m max_tenants=100;
END
    my $s = Fairgate::Test::Server->new(
        http_config => $conf,
        config => '    location /status { fairgate_status; }');

    ok($s->start, 'starts') or return diag($s->last_error);

    my $json = status($s);
    is(zone($json, $_)->{reloads}, 0, "$_: no reload yet") for qw(main b);

    my $maps = shared_maps($s);
    cmp_ok($maps, '>=', 2, 'the master maps the zones');

    my $mark = $s->log_mark;
    ok($s->reload, 'reload, same configuration') or diag($s->last_error);

    $json = status($s);
    is(zone($json, $_)->{reloads}, 1, "$_: the shared state counted it")
        for qw(main b);
    like($s->error_log($mark),
         qr/\[notice\] .*fairgate_zone "main" reused on reload: 0 tenants/,
         'the reuse is logged');

    $mark = $s->log_mark;
    ok($s->reload(http_config => <<'END'), 'reload, b changes policy')
    fairgate_zone zone=main:16m;
    fairgate_zone zone=b:1m max_tenants=100 policy=fcfs;
END
        or diag($s->last_error);

    $json = status($s);
    is(zone($json, 'main')->{reloads}, 2, 'main kept its state');
    is(zone($json, 'b')->{reloads}, 0, 'b starts afresh');
    is(zone($json, 'b')->{policy}, 'fcfs', 'with the new policy');
    like($s->error_log($mark),
         qr/fairgate_zone "b" starts afresh on reload: policy vtc -> fcfs/,
         'the reset is logged with its reason');
    is(shared_maps($s), $maps, 'the master let go of the old b');

    $mark = $s->log_mark;
    ok($s->reload(http_config => <<'END'), 'reload, main grows')
    fairgate_zone zone=main:32m cost=linear:1,4;
    fairgate_zone zone=b:1m max_tenants=100 policy=fcfs;
END
        or diag($s->last_error);

    $json = status($s);
    is(zone($json, 'main')->{reloads}, 0, 'main starts afresh');
    is(zone($json, 'main')->{cost}{out}, 4, 'with the new cost');
    is(zone($json, 'b')->{reloads}, 1, 'b kept its state');
    my $changes = 'fairgate_zone "main" starts afresh on reload: '
                  . 'size 16777216 -> 33554432, cost linear -> linear:1,4';
    like($s->error_log($mark), qr/\Q$changes\E/, 'both changes are logged');
    is(shared_maps($s), $maps, 'and of the old main');

    # b is replaced (policy), then c fails the reload: the cycle rolls back
    # with b's old zone marked for release, which the next reload that
    # reuses b must undo, or the master would unmap b under its new workers

    $mark = $s->log_mark;
    ok(!$s->reload(http_config => <<'END'), 'a reload that fails half-way');
    fairgate_zone zone=main:32m cost=linear:1,4;
    fairgate_zone zone=b:1m max_tenants=100 policy=lcf;
    fairgate_zone zone=c:1m;
END
    like($s->last_error,
         qr/fairgate_zone "c" is too small for max_tenants=10000/,
         'fails on c');

    $json = status($s);
    is(zone($json, 'b')->{policy}, 'fcfs', 'the running b is untouched');
    is(zone($json, 'b')->{reloads}, 1, 'b still has its state');
    ok(!zone($json, 'c'), 'no c');

    ok($s->reload(http_config => <<'END'), 'reload, b as it runs')
    fairgate_zone zone=main:32m cost=linear:1,4;
    fairgate_zone zone=b:1m max_tenants=100 policy=fcfs;
END
        or diag($s->last_error);

    $json = status($s);
    is(zone($json, 'b')->{reloads}, 2, 'b reused after the failed reload');
    is(zone($json, 'main')->{reloads}, 1, 'main too');
    is(shared_maps($s), $maps, 'no zone leaked in the master');

    my @res = $s->concurrent([("GET /status") x 4]);
    is(scalar(grep { ($_->{status} // 0) == 200 } @res), 4,
       'the new workers read the zones');

    is($s->stop, 0, 'stops cleanly');
    unlike($s->error_log, qr/\[(?:alert|crit)\]|signal 11/,
           'no worker crashed');
};


subtest 'a zone sized as the "too small" message says fits' => sub {
    my $s = Fairgate::Test::Server->new(
        http_config => '    fairgate_zone zone=main:1m max_tenants=20000;');
    my ($rc, $out) = $s->test_config;
    isnt($rc, 0, 'nginx -t fails on 1m');
    my ($need) = $out =~ /is too small for max_tenants=20000: .* (\d+)k$/m
        or return fail("no size in: $out");
    cmp_ok($need, '>', 1024, "it asks for more: ${need}k");

    $s = Fairgate::Test::Server->new(http_config =>
        "    fairgate_zone zone=main:${need}k max_tenants=20000;");
    ($rc, $out) = $s->test_config;
    is($rc, 0, "nginx -t passes with ${need}k") or diag($out);
};


subtest 'two workers share the zone' => sub {
    my $s = Fairgate::Test::Server->new(
        workers => 2,
        http_config => '    fairgate_zone zone=main:16m;',
        config => '    location /status { fairgate_status; }');

    ok($s->start, 'starts') or return diag($s->last_error);
    ok($s->reload, 'reloads') or diag($s->last_error);

    my @res = $s->concurrent([("GET /status") x 8]);
    my @reloads = map { eval { JSON::PP->new->decode($_->{body})
                                  ->{zones}[0]{reloads} } // 'none' } @res;
    is_deeply(\@reloads, [(1) x 8], 'every answer shows the one zone');

    is($s->stop, 0, 'stops cleanly');
};


done_testing();


__DATA__

=== TEST 1: the module loads and a configuration using it passes nginx -t
--- http_config
fairgate_zone zone=main:16m policy=vtc cost=linear:1,2 max_tenants=10000;
--- config
location /status { fairgate_status main; }
--- request
GET /status
--- response_headers
Content-Type: application/json
--- response_body_like
"name": "main"
--- error_log
fairgate_zone "main" created: policy vtc, max_tenants=10000

=== TEST 2: every policy parses
--- http_config
fairgate_zone zone=a:1m max_tenants=10 policy=fcfs;
fairgate_zone zone=b:1m max_tenants=10 policy=rpm rpm=1;
fairgate_zone zone=c:1m max_tenants=10 policy=lcf;
fairgate_zone zone=d:1m max_tenants=10 policy=vtc;
fairgate_zone zone=e:1m max_tenants=10 policy=vtc-predict;
fairgate_zone zone=f:1m max_tenants=10 policy=vtc-oracle cost=profiled;
--- config
location /status { fairgate_status; }
--- request
GET /status
--- response_body_like eval
qr/"fcfs".*"rpm".*"lcf".*"vtc".*"vtc-predict".*"vtc-oracle"/s

=== TEST 3: invalid policy
--- http_config
fairgate_zone zone=main:16m policy=foo;
--- must_die
--- error_log eval
qr/\[emerg\] invalid policy "foo" in "fairgate_zone" in \S+nginx\.conf:\d+/

=== TEST 4: invalid cost
--- http_config
fairgate_zone zone=main:16m cost=cubic;
--- must_die
--- error_log
invalid cost "cubic" in "fairgate_zone"

=== TEST 5: invalid linear cost weights
--- http_config
fairgate_zone zone=main:16m cost=linear:x,y;
--- must_die
--- error_log
invalid cost "linear:x,y" in "fairgate_zone"

=== TEST 6: invalid max_tenants
--- http_config
fairgate_zone zone=main:16m max_tenants=0;
--- must_die
--- error_log
invalid max_tenants "0" in "fairgate_zone"

=== TEST 7: max_tenants not a number
--- http_config
fairgate_zone zone=main:16m max_tenants=many;
--- must_die
--- error_log
invalid max_tenants "many" in "fairgate_zone"

=== TEST 8: invalid rpm
--- http_config
fairgate_zone zone=main:16m policy=rpm rpm=-5;
--- must_die
--- error_log
invalid rpm "-5" in "fairgate_zone"

=== TEST 9: rpm policy without rpm=
--- http_config
fairgate_zone zone=main:16m policy=rpm;
--- must_die
--- error_log
policy "rpm" needs "rpm=N" in "fairgate_zone"

=== TEST 10: rpm= with another policy
--- http_config
fairgate_zone zone=main:16m rpm=60;
--- must_die
--- error_log
"rpm=" needs policy "rpm", not "vtc", in "fairgate_zone"

=== TEST 11: missing zone=
--- http_config
fairgate_zone policy=vtc;
--- must_die
--- error_log
missing "zone=NAME:SIZE" in "fairgate_zone"

=== TEST 12: zone without a size
--- http_config
fairgate_zone zone=main;
--- must_die
--- error_log
invalid zone "zone=main" in "fairgate_zone"

=== TEST 13: invalid zone size
--- http_config
fairgate_zone zone=main:12q;
--- must_die
--- error_log
invalid zone size "12q" in "fairgate_zone"

=== TEST 14: zone below nginx's minimum
--- http_config
fairgate_zone zone=main:16k max_tenants=1;
--- must_die
--- error_log
zone "main" is too small in "fairgate_zone"

=== TEST 15: zone too small for its tenants
--- http_config
fairgate_zone zone=main:1m;
--- must_die
--- error_log eval
my $head = '[emerg] fairgate_zone "main" is too small for max_tenants=10000';
qr/\Q$head\E: it needs at least \d+k/

=== TEST 16: the same zone with fewer tenants fits
--- http_config
fairgate_zone zone=main:1m max_tenants=500;
--- config
location /status { fairgate_status; }
--- request
GET /status
--- response_body_like
"max_tenants": 500,

=== TEST 17: duplicate zone
--- http_config
fairgate_zone zone=main:16m;
fairgate_zone zone=main:16m policy=fcfs;
--- must_die
--- error_log
duplicate zone "main" in "fairgate_zone"

=== TEST 18: duplicate parameter
--- http_config
fairgate_zone zone=main:16m policy=vtc policy=fcfs;
--- must_die
--- error_log
duplicate parameter "policy=fcfs" in "fairgate_zone"

=== TEST 19: unknown parameter
--- http_config
fairgate_zone zone=main:16m foo=bar;
--- must_die
--- error_log
invalid parameter "foo=bar" in "fairgate_zone"

=== TEST 20: a zone name another module uses
--- http_config
limit_req_zone $binary_remote_addr zone=main:1m rate=1r/s;
fairgate_zone zone=main:16m;
--- must_die
--- error_log
the shared memory zone "main" is already declared for a different use

=== TEST 21: fairgate_zone outside the http block
--- config
fairgate_zone zone=main:16m;
--- must_die
--- error_log
"fairgate_zone" directive is not allowed here

=== TEST 22: fairgate_status of an unknown zone
--- http_config
fairgate_zone zone=main:16m;
--- config
location /status { fairgate_status main nope; }
--- must_die
--- error_log eval
qr/unknown fairgate_zone "nope" in "fairgate_status" in \S+nginx\.conf:\d+/

=== TEST 23: fairgate_status twice in a location
--- http_config
fairgate_zone zone=main:16m;
--- config
location /status { fairgate_status; fairgate_status main; }
--- must_die
--- error_log
"fairgate_status" directive is duplicate

=== TEST 24: no zones at all
--- config
location /status { fairgate_status; }
--- request
GET /status
--- response_body_like
\A\{\n  "zones": \[\],\n  "time_ms": \d{13}\n\}\n\z
