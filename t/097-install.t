#!/usr/bin/env perl

# make install into a DESTDIR, then a request served from there.  The
# files go where conf/install/install.mk says: the module where Debian's
# nginx looks for modules, with Debian's load file and its link in
# modules-enabled; the engine under PREFIX, linked from bin/; the systemd
# template unit and the examples, with the installed paths (not DESTDIR's)
# in them.  Then the installed engine runs as the unit's ExecStart would,
# on the installed example environment file, and nginx loads the installed
# module through the installed load file, with the installed site example
# adjusted to this test's paths: a chat completion comes back, for a key
# that the installed fairgate-keyhash made.  make uninstall removes it all.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Cwd ();
use File::Compare ();
use File::Find ();
use File::Temp ();
use JSON::PP ();
use POSIX ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test qw($REPO $MODULE);


plan skip_all => "$MODULE is missing: run make" unless -f $MODULE;
plan skip_all => "$Fairgate::Test::NGINX is missing (make test installs it)"
    unless -x $Fairgate::Test::NGINX;

my $tmp = File::Temp::tempdir('fairgate-install-XXXXXX', TMPDIR => 1,
                              CLEANUP => !$ENV{FAIRGATE_KEEP});
chmod 0755, $tmp;

sub slurp { open my $fh, '<', $_[0] or return ''; local $/; <$fh> // '' }

sub spew {
    my ($file, $text) = @_;
    open my $fh, '>', $file or die "$file: $!\n";
    print {$fh} $text;
    close $fh or die "$file: $!\n";
}

# make in the tree, not under the make that runs the tests
sub make {
    delete local @ENV{qw(MAKEFLAGS MFLAGS MAKELEVEL)};
    # the build tested (make test-asan's build/asan, FG_SAN exported)
    my @build = $ENV{FAIRGATE_BUILD} ? ("BUILD=$ENV{FAIRGATE_BUILD}") : ();
    return Fairgate::Test::run_cmd('make', '-C', $REPO, '--no-print-directory',
                                   @build, @_);
}

# the files and links under a tree, relative to it
sub tree {
    my ($top) = @_;
    my @f;
    File::Find::find({ no_chdir => 1, wanted => sub {
        push @f, substr($_, length $top) if -f $_ || -l $_;
    } }, $top);
    return [sort @f];
}


# make install, PREFIX=/usr/local

my $root = "$tmp/root";
my ($rc, $out) = make('install', "DESTDIR=$root");
is($rc, 0, 'make install DESTDIR=...') or diag($out);

my $cuda = -f "$Fairgate::Test::BUILD/fairgate-backend-cuda.so";
my @files = (
    '/etc/nginx/modules-enabled/50-mod-http-fairgate.conf',
    '/usr/lib/nginx/modules/ngx_http_fairgate_module.so',
    '/usr/local/bin/fairgate-engine',
    '/usr/local/bin/fairgate-gguf-gen',
    '/usr/local/bin/fairgate-keyhash',
    ($cuda ? '/usr/local/lib/fairgate/fairgate-backend-cuda.so' : ()),
    '/usr/local/lib/fairgate/fairgate-engine',
    '/usr/local/lib/systemd/system/fairgate-engine@.service',
    '/usr/local/share/fairgate/engine.conf',
    '/usr/local/share/fairgate/nginx-site.conf',
    '/usr/share/nginx/modules-available/mod-http-fairgate.conf',
);
is_deeply(tree($root), [sort @files], 'the files, in their places')
    or diag(explain(tree($root)));
ok(-d "$root/etc/fairgate", 'and /etc/fairgate for the engines\' files');

ok(File::Compare::compare(
       "$root/usr/lib/nginx/modules/ngx_http_fairgate_module.so",
       $MODULE) == 0, 'the module is the one built');
is(slurp("$root/usr/share/nginx/modules-available/mod-http-fairgate.conf"),
   "load_module modules/ngx_http_fairgate_module.so;\n",
   'the load file, as Debian\'s libnginx-mod-* packages have it');
is(readlink("$root/etc/nginx/modules-enabled/50-mod-http-fairgate.conf"),
   '/usr/share/nginx/modules-available/mod-http-fairgate.conf',
   'enabled as they enable it');
is(readlink("$root/usr/local/bin/fairgate-engine"),
   '../lib/fairgate/fairgate-engine',
   'fairgate-engine linked from bin (the cuda backend is found beside it)');
ok(-x "$root/usr/local/lib/fairgate/fairgate-engine", 'the engine runs');

my $unit = slurp("$root/usr/local/lib/systemd/system/"
                 . 'fairgate-engine@.service');
my $engine_conf = slurp("$root/usr/local/share/fairgate/engine.conf");
my $site = slurp("$root/usr/local/share/fairgate/nginx-site.conf");

for my $f (['the unit', $unit], ['engine.conf', $engine_conf],
           ['nginx-site.conf', $site])
{
    unlike($f->[1], qr/@[A-Z]+@/, "$f->[0]: every \@PATH\@ put in");
    unlike($f->[1], qr/\Q$root\E/, "$f->[0]: DESTDIR is not in it");
}

like($unit, qr{^EnvironmentFile=/etc/fairgate/engine-%i\.conf$}m,
     'the unit reads /etc/fairgate/engine-NAME.conf');
like($unit, qr{^Restart=on-failure$}m, 'and restarts the engine on failure');
like($unit, qr{^WantedBy=multi-user\.target$}m, 'and can be enabled');
like($site, qr{fairgate_keys /etc/fairgate/keys;},
     'the site reads keys from /etc/fairgate');


# the engine as systemd starts it: ExecStart with the environment file's
# variables, ${X} one word, $X split on white space

my ($exec) = $unit =~ /^ExecStart=((?:.*\\\n)*.*)$/m;
$exec //= '';
$exec =~ s/\\\n/ /g;
my @exec = split ' ', $exec;
is($exec[0], '/usr/local/bin/fairgate-engine',
   'ExecStart: the installed engine');

my %env = $engine_conf =~ /^([A-Z_]+)=(.*)$/mg;
my @vars = $exec =~ /\$\{?([A-Z_]+)\}?/g;
ok(@vars >= 4, 'ExecStart takes its settings from the file: @vars');
ok(exists $env{$_}, "engine.conf sets $_") for @vars;

my ($site_shm) = $site =~ /\bshm=(\S+)/;
my ($site_model) = $site =~ /\bmodel=(\S+)/;
is($env{SHM}, $site_shm, 'engine.conf\'s SHM is the site\'s shm=');
is($env{MODEL}, $site_model, 'engine.conf\'s MODEL is the site\'s model=');

# this test's engine: its segment, its model, the workers' group
my $model = Cwd::abs_path("$REPO/../shared/models/stories260K.gguf");
$env{BACKEND} = 'cpu';
if (!defined $model || !-f $model) {
    $model = "$tmp/generated.gguf";
    ($rc, $out) = Fairgate::Test::run_cmd(
        "$root/usr/local/bin/fairgate-gguf-gen", '-o', $model);
    is($rc, 0, 'no stories260K: the installed fairgate-gguf-gen makes a model')
        or diag($out);
    $env{BACKEND} = 'sim';
}
$env{MODEL} = $model;
$env{SHM} = "/fairgate-t-install-$$";
$env{SHM_GROUP} = '';
if ($> == 0) {
    my $gid = (getpwnam 'nobody')[3];
    $env{SHM_GROUP} = defined $gid ? scalar getgrgid $gid : '';
}

my @cmd = map {
    /^\$\{(\w+)\}$/ ? $env{$1}
    : /^\$(\w+)$/ ? split(' ', $env{$1})
    : $_
} @exec;
$cmd[0] = "$root$cmd[0]";

my $elog = "$tmp/engine.log";
my $epid;

# the engine does not outlive the test, however it ends
END {
    local ($?, $!);
    if ($epid && kill 0, $epid) {
        kill 'KILL', $epid;
        waitpid $epid, 0;
        unlink "/dev/shm$env{SHM}";
    }
}

$epid = fork // die "fork: $!\n";
if (!$epid) {
    open STDIN, '<', '/dev/null';
    open STDOUT, '>', $elog or POSIX::_exit(127);
    open STDERR, '>&', \*STDOUT;
    exec { $cmd[0] } @cmd or POSIX::_exit(127);
}

my $deadline = Time::HiRes::time() + 30;
until (slurp($elog) =~ /serving/) {
    if (waitpid($epid, POSIX::WNOHANG()) == $epid
        || Time::HiRes::time() > $deadline)
    {
        fail('the installed engine serves');
        diag("@cmd\n" . slurp($elog));
        done_testing();
        exit;
    }
    Time::HiRes::sleep(0.05);
}
pass("the installed engine serves ($env{BACKEND} backend)");


# nginx: the installed load file (its modules/ is Debian's
# /usr/share/nginx/modules, a link to /usr/lib/nginx/modules) and the
# installed site, on this test's port, segment, model, keys and log

($rc, $out) = Fairgate::Test::run_cmd('sh', '-c',
    "echo sk-install-alice | '$root/usr/local/bin/fairgate-keyhash' alice - 1");
like($out, qr/^[0-9a-f]{64} alice - 1$/m,
     'the installed fairgate-keyhash makes a key\'s line');
spew("$tmp/keys", $out);

my $port = Fairgate::Test::free_port();
my %adjust = (
    'listen 8080;' => "listen 127.0.0.1:$port;",
    "shm=$site_shm" => "shm=$env{SHM}",
    "model=$site_model" => "model=$env{MODEL}",
    '/var/log/nginx/fairgate-access.log' => "$tmp/access.log",
    '/etc/fairgate/keys' => "$tmp/keys",
);
for my $from (sort keys %adjust) {
    ok($site =~ s/\Q$from\E/$adjust{$from}/g, "the site: $from adjusted");
}
chmod 0644, "$tmp/keys";
spew("$tmp/site.conf", $site);

my $s = Fairgate::Test::Server->new(
    module => 0,
    main_config => 'include '
        . "$root/usr/share/nginx/modules-available/mod-http-fairgate.conf;",
    http_config => "include $tmp/site.conf;",
);
symlink "$root/usr/lib/nginx/modules", $s->prefix . '/modules'
    or die "symlink: $!\n";

if (!ok($s->start, 'nginx starts with the installed module and site')) {
    diag($s->last_error);
    kill 'TERM', $epid;
    waitpid $epid, 0;
    done_testing();
    exit;
}

my $res = Fairgate::Test::http_request($port, 'GET /v1/models');
is($res->{status}, 401, 'no key: 401');

$res = Fairgate::Test::http_request($port,
    { method => 'POST', uri => '/v1/chat/completions',
      headers => ['Content-Type: application/json',
                  'Authorization: Bearer sk-install-alice'],
      body => '{"model": "stories260K", "messages": [{"role": "user", '
              . '"content": "Tell me a story"}], "max_tokens": 8}' });
is($res->{status}, 200, 'a chat completion, with the key')
    or diag(($res->{body} // '') . "\n" . $s->log_tail);
my $body = eval { JSON::PP::decode_json($res->{body} // '') } // {};
is($body->{choices}[0]{message}{role}, 'assistant', '... an answer');
cmp_ok($body->{usage}{completion_tokens} // 0, '>', 0, '... of some tokens');

# the access log is written once the request is over: after a graceful stop
$s->stop;
like(slurp("$tmp/access.log"), qr/user="alice" /, '... logged for alice');
kill 'TERM', $epid;
waitpid $epid, 0;
is($?, 0, 'the engine stops on TERM, status 0');
$epid = undef;
ok(!-e "/dev/shm$env{SHM}", 'and removes its segment');


# make uninstall takes it all back; /etc/fairgate stays

($rc, $out) = make('uninstall', "DESTDIR=$root");
is($rc, 0, 'make uninstall') or diag($out);
is_deeply(tree($root), [], 'no file is left') or diag(explain(tree($root)));
ok(-d "$root/etc/fairgate", 'but /etc/fairgate, the operator\'s');


# PREFIX=/usr: the engine and the unit under /usr

my $root2 = "$tmp/root-usr";
($rc, $out) = make('install', "DESTDIR=$root2", 'PREFIX=/usr');
is($rc, 0, 'make install PREFIX=/usr') or diag($out);
ok(-x "$root2/usr/bin/fairgate-engine", 'fairgate-engine in /usr/bin');
like(slurp("$root2/usr/lib/systemd/system/fairgate-engine\@.service"),
     qr{^ExecStart=/usr/bin/fairgate-engine }m, 'the unit runs it from there');
ok(-f "$root2/usr/lib/nginx/modules/ngx_http_fairgate_module.so",
   'the module where Debian\'s nginx looks, whatever PREFIX');

done_testing();
