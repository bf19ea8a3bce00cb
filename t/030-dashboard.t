#!/usr/bin/env perl

# fairgate_dashboard: the page the module serves (its bytes, headers and
# policy), the status JSON's figures it reads (each tenant's limits, what
# throttled a request, the time of the read), and the page itself in a
# real browser: headless chromium (Fairgate::Browser) loads it with no
# network but the loopback, fetches nothing but the page and the status
# JSON, runs its one script and nothing injected, and draws figures that
# move under a load run and agree with the JSON.  Without chromium the
# browser's parts are skipped, saying so.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Digest::SHA qw(sha256_base64);
use File::Temp ();
use JSON::PP ();
use POSIX ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test qw($REPO gateway keys_file);
use Fairgate::MockUpstream;
use Fairgate::Engine;
use Fairgate::Load qw(closed_loop);
use Fairgate::Browser qw(chromium);


my $json = JSON::PP->new->canonical;
my $up = Fairgate::MockUpstream->new;
my $NO_CHROMIUM = 'chromium is not installed (the dependency step installs '
                  . 'it: apt-get install chromium)';

my $BODY = '{"model":"m","max_tokens":8,'
           . '"messages":[{"role":"user","content":"hi"}]}';


# a keys file: [name, weight, limits...] each, the key "key-NAME"
# the keys file of these users: [NAME, APP, LIMITS...], each key-NAME
sub keys_of {
    return keys_file(map { my ($name, $app, @limits) = @$_;
                           ["key-$name", $name, $app, 1, @limits] } @_);
}


sub chat {
    my ($s, $uri, $who, @more) = @_;
    return $s->post($uri, $BODY,
                    headers => ['Content-Type: application/json',
                                "Authorization: Bearer key-$who", @more]);
}


sub status {
    my ($s, $uri) = @_;
    return $json->decode($s->get($uri // '/fairgate/status')->{body});
}


# polls the status page until cond holds (a deadline, not a sleep)
sub status_until {
    my ($s, $cond, $what, $uri) = @_;
    my ($ok, $st) = $s->status_until($cond, $uri // '/fairgate/status');

    fail("status never showed $what") unless $ok;
    diag($json->encode($st // {})) unless $ok;
    return $st;
}


sub sum_of { my $h = shift; my $n = 0; $n += $_ for values %$h; $n }


subtest 'the embedded page is what dashboard.html makes' => sub {
    my $dir = "$REPO/ngx_module/status";
    my $made = `$^X $dir/dashboard_embed.pl $dir/dashboard.html`;
    is($?, 0, 'dashboard_embed.pl runs');

    open my $fh, '<:raw', "$dir/ngx_http_fairgate_dashboard_page.c"
        or die "$dir/ngx_http_fairgate_dashboard_page.c: $!\n";
    my $kept = do { local $/; <$fh> };

    ok($made eq $kept, 'ngx_http_fairgate_dashboard_page.c is up to date')
        or diag('dashboard.html changed: run "make dashboard" and commit '
                . 'ngx_module/status/ngx_http_fairgate_dashboard_page.c');

    # and the generator refuses a page it could not hash or split
    my $tmp = File::Temp->new(SUFFIX => '.html');
    print {$tmp} "<style></style><script></script><script></script>"
                 . '@FAIRGATE_STATUS_URI@';
    close $tmp;
    my $out = `$^X $dir/dashboard_embed.pl $tmp 2>&1`;
    isnt($?, 0, 'a page of two scripts is refused');
    like($out, qr/expected one <script> and one <style>/, '... saying why');
};


subtest 'nginx -t names what is wrong' => sub {
    my @cases = (
        ['fairgate_dashboard http://example.com/status;',
         qr{invalid URI "http://example.com/status" in "fairgate_dashboard"}],
        ['fairgate_dashboard //example.com/status;',
         qr/invalid URI "\/\/example.com\/status"/],
        ['fairgate_dashboard "/a b";', qr/invalid URI "\/a b"/],
        ['fairgate_dashboard "/a<b";', qr/invalid URI "\/a<b"/],
        ['fairgate_dashboard ""; ', qr/invalid URI ""/],
        ['fairgate_dashboard; fairgate_dashboard;',
         qr/"fairgate_dashboard" directive is duplicate/],
        ['fairgate_status; fairgate_dashboard;',
         qr/"fairgate_dashboard" directive cannot be in a location of "fairgate_status"/],
        ['fairgate_dashboard; fairgate_status;',
         qr/"fairgate_status" directive cannot be in a location of "fairgate_dashboard"/],
        ['fairgate_dashboard /a /b;',
         qr/invalid number of arguments in "fairgate_dashboard"/],
    );

    for my $c (@cases) {
        my $s = Fairgate::Test::Server->new(
            http_config => 'fairgate_zone zone=z:16m;',
            config => "location /d { $c->[0] }");
        my ($rc, $out) = $s->test_config;
        isnt($rc, 0, "nginx -t fails: $c->[0]");
        like($out, $c->[1], '... and says why');
    }

    my $s = Fairgate::Test::Server->new(
        http_config => 'fairgate_zone zone=z:16m;',
        config => 'fairgate_dashboard;');
    my ($rc, $out) = $s->test_config;
    like($out, qr/"fairgate_dashboard" directive is not allowed here/,
         'only in a location');

    $s = Fairgate::Test::Server->new(
        http_config => 'fairgate_zone zone=z:16m;',
        config => 'location /d { fairgate_dashboard /x/status?zone=z; }');
    ($rc, $out) = $s->test_config;
    is($rc, 0, 'a path with a query is fine') or diag($out);
};


subtest 'the page: headers, the status URI, its policy' => sub {
    my $s = Fairgate::Test::Server->new(
        http_config => 'fairgate_zone zone=z:16m;',
        config => <<'END');
    location = /fairgate/status { fairgate_status; }
    location = /fairgate/dashboard { fairgate_dashboard; }
    location = /ops/board {
        fairgate_dashboard /fairgate/status;
        if ($arg_x) { }
    }
END
    $s->start or die $s->last_error;

    my $res = $s->get('/fairgate/dashboard');
    is($res->{status}, 200, 'GET: 200');
    is($res->{headers}{'content-type'}, 'text/html; charset=utf-8',
       'HTML in UTF-8');
    is($res->{headers}{'cache-control'}, 'no-cache', 'not cached');
    is($res->{headers}{'x-content-type-options'}, 'nosniff', 'nosniff');
    is($res->{headers}{'content-length'}, length $res->{body},
       'its length');
    like($res->{body},
         qr/<meta name="fairgate-status" content="status">/,
         'the default status URI: "status", beside the page');
    unlike($res->{body}, qr/\@FAIRGATE_STATUS_URI\@/, 'no marker left');

    # no source outside the server; the one script and style by hash
    my $csp = $res->{headers}{'content-security-policy'} // '';
    my %d = map { my ($k, @v) = split ' '; ($k => "@v") } split /;\s*/, $csp;
    is($d{'default-src'}, "'none'", 'default-src none');
    is($d{'connect-src'}, "'self'", 'it fetches from its server only');
    unlike($csp, qr/https?:|\*|unsafe/, 'no host, wildcard or unsafe-*');

    my ($script) = $res->{body} =~ m{<script>(.*?)</script>}s;
    my ($style) = $res->{body} =~ m{<style>(.*?)</style>}s;
    my $b64 = sub { my $h = sha256_base64($_[0]);
                    $h . '=' x (-length($h) % 4) };
    is($d{'script-src'}, "'sha256-" . $b64->($script) . "'",
       'script-src: the hash of the page\'s script');
    is($d{'style-src'}, "'sha256-" . $b64->($style) . "'",
       'style-src: the hash of its style');
    unlike($res->{body}, qr/<script\s+src|<link[^>]+stylesheet|\burl\(/i,
           'nothing loaded from elsewhere');

    $res = $s->get('/ops/board?x=1');
    is($res->{status}, 200, 'a URI of the operator\'s, through an "if"');
    like($res->{body}, qr/content="\/fairgate\/status"/, '... put in');

    $res = $s->request('HEAD /fairgate/dashboard');
    is($res->{status}, 200, 'HEAD: 200');
    is($res->{body}, '', '... no body');

    $res = $s->post('/fairgate/dashboard', 'x');
    is($res->{status}, 405, 'POST: 405');

    is($s->stop, 0, 'nginx exits cleanly');
    unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');
};


subtest 'the status JSON: limits that apply, what throttled, the time' => sub {
    my $keys = keys_of(['lim', 'chat', 'rpm=2'], ['tok', '-', 'tpm=5'],
                         ['oit', '-'], ['bg', '-'], ['bg2', '-'],
                         ['pol', '-'], ['app1', 'chat']);

    my $s = Fairgate::Test::Server->new(
        http_config => <<'END',
    fairgate_zone zone=z:16m inflight=1;
    fairgate_zone zone=r:16m policy=rpm rpm=1;
END
        config => <<"END");
    location /v1/ {
        fairgate zone=z;
        fairgate_keys $keys;
        fairgate_user_limit rpm=100 tpm=100000;
        fairgate_app_limit chat rpm=3;
        fairgate_oit on user_rpm=1;
        proxy_pass http://${\ $up->addr };
    }
    location /v2/ {
        fairgate zone=r;
        fairgate_keys $keys;
        proxy_pass http://${\ $up->addr };
    }
    location = /fairgate/status { fairgate_status; }
END
    $s->start or die $s->last_error;

    my $t0 = time;
    my @got = map { chat($s, '/v1/chat/completions', 'lim')->{status} }
              1 .. 4;
    is_deeply(\@got, [200, 200, 429, 429], 'lim: 2 a minute, its key says');

    is(chat($s, '/v1/chat/completions', 'tok')->{status}, 429,
       'tok: its request is over its 5 tokens a minute');

    # app chat: lim's 2 and app1's first fill its 3 a minute
    is(chat($s, '/v1/chat/completions', 'app1')->{status}, 200,
       'app1: the app\'s third');
    is(chat($s, '/v1/chat/completions', 'app1')->{status}, 429,
       'app1: over the app\'s 3 a minute');

    # overloaded (one slow request running, one waiting): OIT lets oit
    # open one, not two
    my $slow = $s->send_later({ method => 'POST', uri => '/v1/chat/completions',
                                body => $BODY },
                              headers => ['Authorization: Bearer key-bg',
                                          'Content-Type: application/json',
                                          'X-Mock-Delay: 1']);
    status_until($s, sub { $_[0]{zones}[0]{running} >= 1 }, 'bg running');
    my $wait = $s->send_later({ method => 'POST', uri => '/v1/chat/completions',
                                body => $BODY },
                              headers => ['Authorization: Bearer key-bg2',
                                          'Content-Type: application/json']);
    status_until($s, sub { $_[0]{zones}[0]{waiting} >= 1 }, 'bg2 waiting');
    my $first = $s->send_later({ method => 'POST',
                                 uri => '/v1/chat/completions',
                                 body => $BODY },
                               headers => ['Authorization: Bearer key-oit',
                                           'Content-Type: application/json']);
    status_until($s, sub { $_[0]{zones}[0]{waiting} >= 2 }, 'oit waiting');
    is(chat($s, '/v1/chat/completions', 'oit')->{status}, 429,
       'oit: its second new interaction while overloaded');
    is($s->read_later($_)->{status}, 200, 'the queued ones are served')
        for $slow, $wait, $first;

    # the rpm policy: 1 a minute
    is(chat($s, '/v2/chat/completions', 'pol')->{status}, 200, 'pol: one');
    is(chat($s, '/v2/chat/completions', 'pol')->{status}, 429,
       'pol: the rpm policy refuses the second');

    my $st = status($s);
    my ($z, $r) = @{ $st->{zones} };
    my %u = map { $_->{name} => $_ } @{ $z->{users} };
    my %a = map { $_->{name} => $_ } @{ $z->{apps} };

    cmp_ok(abs($st->{time_ms} / 1000 - $t0), '<', 30,
           'time_ms: the wall clock, in ms');

    is_deeply($z->{throttled_by},
              { requests => 3, tokens => 1, oit => 1, policy => 0 },
              'the zone: 3 by requests a minute (2 lim, 1 app), 1 by '
              . 'tokens, 1 by OIT');
    is(sum_of($z->{throttled_by}), $z->{throttled}, '... adding up');
    is_deeply($r->{throttled_by},
              { requests => 0, tokens => 0, oit => 0, policy => 1 },
              'the rpm zone: 1 by the policy');
    is($r->{throttled}, $r->{rejected}, '... which it counts as rejected');

    is_deeply($u{lim}{limit}, { rpm => 2, tpm => 100000 },
              'lim: its key\'s rpm, the location\'s tpm');
    is_deeply($u{lim}{throttled_by},
              { requests => 2, tokens => 0, oit => 0, policy => 0 },
              'lim: throttled twice by requests');
    is_deeply($u{tok}{limit}, { rpm => 100, tpm => 5 }, 'tok: its limits');
    is($u{tok}{throttled_by}{tokens}, 1, 'tok: throttled by tokens');
    is($u{oit}{throttled_by}{oit}, 1, 'oit: throttled by OIT');
    is($u{app1}{throttled_by}{requests}, 1,
       'app1: throttled (by its app\'s limit)');
    is($u{bg}{throttled}, 0, 'bg: never');
    is_deeply($a{chat}{limit}, { rpm => 3, tpm => 0 },
              'app chat: fairgate_app_limit\'s');
    is_deeply($a{chat}{throttled_by}, { requests => 1, tokens => 0, oit => 0 },
              'app chat: throttled once, by requests');
    is($a{chat}{throttled}, 1, '... its only one');

    for my $t (@{ $z->{users} }, @{ $r->{users} }) {
        is(sum_of($t->{throttled_by}), $t->{throttled},
           "$t->{name}: throttled_by adds up to throttled");
    }

    is($s->stop, 0, 'nginx exits cleanly');
    unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');
};


# the page in chromium, at fast polls; the browser and the server
sub browse {
    my ($s, $uri) = @_;
    my $b = Fairgate::Browser->new(width => 1400, height => 1000);
    $b->navigate("http://127.0.0.1:${\ $s->port }$uri?interval=200");
    ok($b->wait_for('+document.body.dataset.polls >= 2', 15),
       'the page polls the status JSON');
    return $b;
}


# a load run in a child process, while the test watches the page
sub load_in_child {
    my (%o) = @_;
    my $pid = fork // die "fork: $!\n";

    if ($pid == 0) {
        my $ok = eval { closed_loop(%o); 1 };
        POSIX::_exit($ok ? 0 : 1);
    }

    return $pid;
}


# the figures the page drew, by what the tests look at
my $DRAWN = <<'END';
(() => {
  const q = s => [...document.querySelectorAll(s)];
  const last = p => Object.fromEntries(
    q(`section[data-panel="${p}"] g.series`).map(g =>
      [g.dataset.name, g.dataset.last === '' ? null : +g.dataset.last]));
  const cell = (u, k, a) => {
    const c = document.querySelector(`tr[data-user="${u}"] td[data-k="${k}"]`);
    return c ? +c.dataset[a] : null;
  };
  const users = q('section[data-panel="tenants"] tr[data-user]')
                  .map(r => r.dataset.user);
  return {
    polls: +document.body.dataset.polls,
    errors: +document.body.dataset.errors,
    service: last('service'), counter: last('counter'), rate: last('rate'),
    queue: last('queue'),
    users,
    rpm: Object.fromEntries(users.map(u => [u, cell(u, 'rpm', 'value')])),
    rpm_limit: Object.fromEntries(users.map(u => [u, cell(u, 'rpm', 'limit')])),
    tpm_limit: Object.fromEntries(users.map(u => [u, cell(u, 'tpm', 'limit')])),
    refused: Object.fromEntries(q('[data-reason]').map(e =>
      [e.dataset.reason, +e.dataset.count])),
    dispatched: +(document.querySelector('section[data-panel="wait"]')
                  .dataset.dispatched || 0),
    engines: q('section[data-panel="engine"]').map(e => ({
      name: e.dataset.engine, kv: e.dataset.kv, running: e.dataset.running,
      tps: e.dataset.tps, hit: e.dataset.hit})),
    locality: q('section[data-panel="locality"] tr[data-engine]').map(r => ({
      name: r.dataset.engine,
      hit: +r.querySelector('td[data-k="hit"]').dataset.value})),
    cached: Object.fromEntries(users.map(u => [u, cell(u, 'cached', 'value')])),
    qoe: Object.fromEntries(users.map(u => [u, {
      count: cell(u, 'qoe', 'count'), mean: cell(u, 'qoe', 'value'),
      share: cell(u, 'qoe', 'share')}])),
    zone_qoe: Object.fromEntries(
      q('section[data-panel="qoe"] dd[data-k]').map(e =>
        [e.dataset.k, e.dataset.value === '' ? null : +e.dataset.value]))
  };
})()
END


# what the page drew, once the JavaScript condition on it (d) holds; undef
# when it did not within 20 s
sub drawn_when {
    my ($b, $cond) = @_;
    return $b->wait_for("(() => { const d = $DRAWN; "
                        . "return ($cond) ? d : null; })()", 20);
}


subtest 'in a browser: loads alone, draws what moves' => sub {
    plan skip_all => $NO_CHROMIUM unless chromium();

    my $keys = keys_of(['heavy-a', '-'], ['heavy-b', '-'],
                         ['light', '-', 'rpm=1000', 'tpm=900000'],
                         ['greedy', '-', 'rpm=2']);
    my $s = Fairgate::Test::Server->new(
        workers => 2,
        http_config => 'fairgate_zone zone=llm:16m inflight=1;',
        config => <<"END");
    location /v1/ {
        fairgate zone=llm queue=100 timeout=30s;
        fairgate_keys $keys;
        fairgate_user_limit rpm=5000 tpm=5000000;
        proxy_pass http://${\ $up->addr };
    }
    location = /fairgate/status { fairgate_status; }
    location = /fairgate/dashboard { fairgate_dashboard; }
END
    $s->start or die $s->last_error;

    my $b = browse($s, '/fairgate/dashboard');
    my $port = $s->port;

    my $d = $b->value($DRAWN);
    is_deeply($d->{users}, [], 'no tenant yet: the table is empty');
    is_deeply($d->{service}, {}, 'nor the service chart');
    is($d->{errors}, 0, 'no failed poll');

    # the policy holds in the browser: no outside fetch, no injected script
    my $r = $b->value(q{fetch('http://example.com/x').then(() => 'fetched',
                                                          e => 'refused')});
    is($r, 'refused', 'a fetch elsewhere is refused');
    ok((grep { /Content Security Policy/ } $b->errors),
       '... by the Content-Security-Policy');
    ok(!$b->value(q{(() => { const s = document.createElement('script');
                             s.textContent = 'window.injected = 1';
                             document.body.appendChild(s);
                             return window.injected === 1; })()}),
       'a script not of the page does not run');
    ok((grep { /Executing inline script violates/ } $b->errors),
       '... by the Content-Security-Policy');

    # load: two tenants flooding, one light; greedy over its limit
    my $req = sub {
        my ($who) = @_;
        return { method => 'POST', uri => '/v1/chat/completions',
                 body => $BODY,
                 headers => ["Authorization: Bearer key-$who",
                             'Content-Type: application/json',
                             'X-Mock-Delay: 0.02'] };
    };
    my $pid = load_in_child(
        port => $port, total => 150, timeout => 60,
        tenants => [{ name => 'a', concurrency => 4,
                      request => $req->('heavy-a') },
                    { name => 'b', concurrency => 4,
                      request => $req->('heavy-b') },
                    { name => 'l', concurrency => 1,
                      request => $req->('light') },
                    { name => 'g', concurrency => 1, max => 6,
                      request => $req->('greedy') }]);

    # while it runs, the service drawn grows
    my $before = drawn_when($b, q{d.service['heavy-a'] > 0
                                  && d.service['heavy-b'] > 0});
    ok($before, 'under load, the chart draws both heavy tenants')
        or diag($json->encode($b->value($DRAWN)));
    my $a0 = $before ? $before->{service}{'heavy-a'} : 0;
    ok(drawn_when($b, "d.service['heavy-a'] > $a0"),
       '... and what it draws for heavy-a grows as it is served');

    waitpid $pid, 0;
    is($?, 0, 'the load ran');

    # once the run is over, the page and the JSON agree
    my $st = status_until($s, sub { $_[0]{zones}[0]{running} == 0
                                    && $_[0]{zones}[0]{waiting} == 0 },
                          'the queue empty');
    my $z = $st->{zones}[0];
    my %u = map { $_->{name} => $_ } @{ $z->{users} };

    $d = drawn_when($b, "d.service['heavy-a'] === $u{'heavy-a'}{service}");
    ok($d, 'the service drawn is the JSON\'s')
        or diag($json->encode($b->value($DRAWN)));
    $d //= $b->value($DRAWN);

    is_deeply([sort @{ $d->{users} }],
              [sort grep { $u{$_}{finished} } keys %u],
              'the table has each tenant served');
    is($d->{counter}{light}, $u{light}{counter},
       'the counter drawn is the JSON\'s');
    is($d->{rpm_limit}{light}, 1000, 'light: its key\'s limit drawn');
    is($d->{tpm_limit}{light}, 900000, '... and tokens');
    is($d->{rpm_limit}{'heavy-a'}, 5000, 'heavy-a: the location\'s');
    is($d->{rpm}{'heavy-a'}, $u{'heavy-a'}{rpm},
       'its requests a minute drawn');
    is($d->{refused}{requests}, $z->{throttled_by}{requests},
       'the refusals drawn are the JSON\'s');
    cmp_ok($d->{refused}{requests}, '>=', 4, 'greedy: 4 or more of its 6 '
                                             . 'refused, over 2 a minute');
    cmp_ok($d->{dispatched}, '>=', 100, 'the queue-wait histogram counts '
                                        . 'the run');
    is_deeply($d->{engines}, [], 'drop-in: no engine panel');

    my @bad = grep { !m{^http://127\.0\.0\.1:$port/fairgate/} }
              $b->requests;
    is_deeply(\@bad, [], 'it asked for nothing but the page and the '
                         . 'status (the fetch elsewhere never left)');
    my @status = grep { m{/fairgate/status$} } $b->requests;
    cmp_ok(scalar @status, '>=', 5, 'the status JSON, every 200 ms');

    # but those of the test's own tries above
    my @errors = grep { !/example\.com|Executing inline script/ }
                 $b->errors;
    is_deeply(\@errors, [], 'no error in the page');

    $b->stop;
    is($s->stop, 0, 'nginx exits cleanly');
    unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');
};


subtest 'in a browser: the engine\'s panel (local mode, sim backend)' => sub {
    plan skip_all => $NO_CHROMIUM unless chromium();

    my $dir = File::Temp::tempdir('fairgate-dash-XXXXXX', TMPDIR => 1,
                                  CLEANUP => 1);
    chmod 0755, $dir;
    my $model = "$dir/model.gguf";
    system("$Fairgate::Test::BUILD/fairgate-gguf-gen", '-o', $model, '--name', 'dash')
        == 0 or die "fairgate-gguf-gen failed\n";
    chmod 0644, $model;

    my $engine = Fairgate::Engine->new(
        backend => 'sim', model => $model,
        args => ['--max-batch', '4', '--step-model', 'linear:0.0001,0.002']);
    $engine->start;

    my $s = gateway(engines => [['sim', $engine, 'id=dash']],
                    user => '$http_x_user', status => '= /status',
                    locations => <<'END');
    location = /dash { fairgate_dashboard /status; }
END
    status_until($s, sub { $_[0]{engines}[0]{attached} },
                 'the workers attached to the engine', '/status');

    my $b = browse($s, '/dash');
    my $d = $b->value($DRAWN);
    is(scalar @{ $d->{engines} }, 1, 'one engine panel');
    is($d->{engines}[0]{name}, 'sim', '... named');

    # one long prompt for all: after the first, its start is cached
    my $body = $json->encode({ model => 'dash', max_tokens => 64,
                               messages => [{ role => 'user', content =>
                                   'Tell me a story about a cat. ' x 8 }] });
    my $pid = load_in_child(
        port => $s->port, total => 40, timeout => 60,
        tenants => [map { { name => $_, concurrency => 4,
                            request => {
                                method => 'POST',
                                uri => '/v1/chat/completions',
                                body => $body,
                                headers => ["X-User: $_",
                                            'Content-Type: application/json']
                            } } } qw(a b)]);

    ok(drawn_when($b, 'd.engines[0].tps > 0 && d.engines[0].kv > 0'
                      . ' && d.engines[0].running > 0'),
       'under load it draws tokens/s, KV use and the batch')
        or diag($json->encode($b->value($DRAWN)));

    ok(drawn_when($b, 'd.locality.length === 1 && d.locality[0].hit > 0'
                      . ' && d.engines[0].hit > 0 && d.cached.a > 0'),
       'and the prefix cache\'s hits: the zone\'s, the engine\'s, a user\'s')
        or diag($json->encode($b->value($DRAWN)));

    waitpid $pid, 0;
    is($?, 0, 'the load ran');

    # the requests the load gave up at its end leave the queue and the
    # engine (as in t/008)
    status_until($s, sub { my $z = $_[0]{zones}[0];
                           my $e = $_[0]{engines}[0]{load};
                           $z->{waiting} == 0 && $z->{running} == 0
                           && $e->{running} == 0 },
                 'the queue and the engine empty', '/status');

    my @errors = $b->errors;
    is_deeply(\@errors, [], 'no error in the page');

    $b->stop;
    is($s->stop, 0, 'nginx exits cleanly');
    unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');
    $engine->stop;
};


subtest 'in a browser: the streams\' QoE, per user and the zone\'s' => sub {
    plan skip_all => $NO_CHROMIUM unless chromium();

    my $s = gateway(user => '$http_x_user',
                    v1 => "        fairgate_qoe ttft=2s speed=5;\n",
                    pass => 'proxy_pass http://' . $up->addr,
                    status => '= /fairgate/status', locations => <<'END');
    location = /fairgate/dashboard { fairgate_dashboard; }
END

    my $b = browse($s, '/fairgate/dashboard');
    my $d = $b->value($DRAWN);
    is($d->{zone_qoe}{count}, 0, 'no stream yet: the zone\'s count 0');
    is($d->{zone_qoe}{mean}, undef, '... and no mean');

    # on time (QoE 1), and its first token late (QoE about 0.86)
    my $stream = '{"model":"m","stream":true,"max_tokens":4,'
                 . '"messages":[{"role":"user","content":"hi"}]}';
    for my $h (['X-User: on'],
               ['X-User: late', 'X-Mock-Delay: 0.3', 'X-Fairgate-TTFT: 0.1',
                'X-Fairgate-Reading-Speed: 2'])
    {
        is($s->post('/v1/chat/completions', $stream,
                    headers => ['Content-Type: application/json', @$h])
               ->{status}, 200, "$h->[0]: streamed");
    }
    my $z = status_until($s, sub { $_[0]{zones}[0]{qoe}{count} == 2 },
                         'two streams counted')->{zones}[0];
    my %u = map { $_->{name} => $_->{qoe} } @{ $z->{users} };

    $d = drawn_when($b, 'd.zone_qoe.count === 2 && d.qoe.late'
                        . ' && d.qoe.late.count === 1');
    ok($d, 'the page draws both streams') or return;
    is($d->{qoe}{on}{mean}, 1, 'on: its QoE, 1');
    is($d->{qoe}{on}{share}, 1, '... at 0.95 or above');
    is($d->{qoe}{late}{mean}, $u{late}{mean}, 'late: the JSON\'s mean');
    cmp_ok($d->{qoe}{late}{mean}, '<', 0.95, '... below 0.95');
    is($d->{qoe}{late}{share}, 0, '... none at 0.95 or above');
    is($d->{zone_qoe}{mean}, $z->{qoe}{mean}, 'the zone\'s mean, the JSON\'s');
    is($d->{zone_qoe}{share_095}, 0.5, 'the zone: half at 0.95 or above');
    is($d->{zone_qoe}{p50}, $z->{qoe}{p50}, 'the zone\'s p50, the JSON\'s');

    my @errors = $b->errors;
    is_deeply(\@errors, [], 'no error in the page');

    $b->stop;
    is($s->stop, 0, 'nginx exits cleanly');
};


$up->stop;

done_testing();
