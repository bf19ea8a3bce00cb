#!/usr/bin/env perl

# conf/deps.sh, make run's and make test's first step, against a fake
# Debian: dpkg-query, apt-cache, apt-get, sudo, id, node and npm are
# scripts that keep a log of their calls and the packages' state in
# files, on a PATH that holds nothing else (the few real tools the script
# uses are linked into it).  On a ready machine it does nothing but one
# dpkg-query; it installs what is missing with apt-get as root or through
# sudo -n, updating apt's lists first when they lack a package or when an
# install fails on old lists; where it cannot, it says the one command to
# run; and it runs npm ci in t/node when node_modules is missing or stale.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use File::Temp ();
use Test::More;

use Fairgate::Test qw($REPO);


my $tmp = File::Temp::tempdir('fairgate-deps-XXXXXX', TMPDIR => 1,
                              CLEANUP => !$ENV{FAIRGATE_KEEP});

sub slurp { open my $fh, '<', $_[0] or return ''; local $/; <$fh> // '' }

sub spew {
    my ($file, $text, $mode) = @_;
    open my $fh, '>', $file or die "$file: $!\n";
    print {$fh} $text;
    close $fh or die "$file: $!\n";
    chmod $mode, $file if defined $mode;
}

my @run = split /\n/, `bash $REPO/conf/deps.sh --list run`;
my @test = split /\n/, `bash $REPO/conf/deps.sh --list test`;
my %in_run = map { $_ => 1 } @run;
my @test_only = grep { !$in_run{$_} } @test;

ok(@run >= 10, 'the run set: ' . scalar(@run) . ' packages');
for my $p (qw(nginx nginx-dev gcc make libc6-dev dpkg-dev libjansson-dev)) {
    ok($in_run{$p}, "... with $p");
}
my %test_only = map { $_ => 1 } @test_only;
for my $p (qw(redis-server g++ libboost-context-dev chromium nodejs npm)) {
    ok($test_only{$p}, "the test set adds $p");
}


# the fake machine: state in $tmp/state, calls in $tmp/state/log

my $bin = "$tmp/bin";
my $state = "$tmp/state";
mkdir $_ or die "$_: $!\n" for $bin, $state;

for my $tool (qw(bash env awk sort grep dirname cat mkdir touch rm true)) {
    my ($path) = grep { -x "$_/$tool" } qw(/usr/bin /bin);
    die "no $tool\n" unless $path;
    symlink "$path/$tool", "$bin/$tool" or die "$bin/$tool: $!\n";
}

my $head = <<"END";
#!/bin/bash
S=$state
log() { echo "\$*" >> \$S/log; }
has() { grep -qx -- "\$1" "\$S/\$2" 2> /dev/null; }
END

my %fake = (
    # dpkg-query -W -f=FORMAT PKG...: "ii  PKG" for the installed ones
    'dpkg-query' => <<'END',
log "dpkg-query $*"
for p in "$@"; do
    case $p in -*) continue ;; esac
    if has "$p" installed; then echo "ii  $p"; else echo "un  $p"; fi
done
END

    # apt-cache policy PKG...: a candidate for those in the lists
    'apt-cache' => <<'END',
log "apt-cache $*"
shift
for p in "$@"; do
    if has "$p" lists; then
        printf '%s:\n  Installed: (none)\n  Candidate: 1.0\n' "$p"
    fi
done
END

    # update: the lists become the archive's (fails without network);
    # install: fails on a package not in the lists, or on old lists
    'apt-get' => <<'END',
log "apt-get DEBIAN_FRONTEND=$DEBIAN_FRONTEND uid=$FAKE_UID $*"
[ -e $S/no-network ] && exit 100
for a in "$@"; do
    case $a in
        update) cat $S/archive > $S/lists; rm -f $S/old-lists; exit 0 ;;
        install) install=1 ;;
        -*|-o|DPkg::*) ;;
        *) [ -n "${install:-}" ] && pkgs+=("$a") ;;
    esac
done
[ -e $S/old-lists ] && exit 100
for p in "${pkgs[@]}"; do has "$p" lists || exit 100; done
printf '%s\n' "${pkgs[@]}" >> $S/installed
END

    # sudo -n CMD: CMD as root where sudo needs no password
    'sudo' => <<'END',
log "sudo $*"
[ -e $S/sudo-ok ] || { echo "sudo: a password is required" >&2; exit 1; }
[ "$1" = -n ] && shift
FAKE_UID=0 exec "$@"
END

    'id' => <<'END',
echo "$FAKE_UID"
END

    'node' => <<'END',
log "node $*"
END

    'npm' => <<'END',
log "npm $PWD $*"
[ -e $S/npm-fails ] && exit 1
mkdir -p node_modules && touch node_modules/.package-lock.json
END
);

while (my ($name, $body) = each %fake) {
    spew("$bin/$name", $head . $body, 0755);
}

# a tree with the script and t/node's lock file
my $tree = "$tmp/tree";
mkdir $_ or die "$_: $!\n" for $tree, "$tree/conf", "$tree/t", "$tree/t/node";
spew("$tree/conf/deps.sh", slurp("$REPO/conf/deps.sh"), 0755);
spew("$tree/t/node/package-lock.json", "{}\n");


# a machine: installed packages, those in apt's lists and in the archive,
# and switches (sudo-ok, no-network, old-lists, npm-fails, no node, no sudo,
# no dpkg-query); then conf/deps.sh SET as user uid

sub machine {
    my (%m) = @_;
    unlink glob "$state/*";
    spew("$state/installed", join '', map { "$_\n" } @{ $m{installed} // [] });
    spew("$state/lists", join '', map { "$_\n" } @{ $m{lists} // [] });
    spew("$state/archive", join '', map { "$_\n" } @test);
    spew("$state/log", '');
    for my $flag (qw(sudo-ok no-network old-lists npm-fails)) {
        spew("$state/$flag", '') if $m{$flag};
    }
    for my $cmd (qw(node sudo dpkg-query)) {
        my $off = "$bin/.$cmd";
        if ($m{"no-$cmd"}) { rename "$bin/$cmd", $off if -e "$bin/$cmd" }
        else { rename $off, "$bin/$cmd" if -e $off }
    }
    system('rm', '-rf', "$tree/t/node/node_modules");
    if ($m{node_modules}) {
        mkdir "$tree/t/node/node_modules";
        spew("$tree/t/node/node_modules/.package-lock.json", "{}\n");
        my $t = time - ($m{node_modules} eq 'stale' ? 0 : 100);
        utime $t, $t, "$tree/t/node/node_modules/.package-lock.json";
        utime $t - 50, $t - 50, "$tree/t/node/package-lock.json";
        utime $t + 50, $t + 50, "$tree/t/node/package-lock.json"
            if $m{node_modules} eq 'stale';
    }
}

sub deps {
    my ($set, $uid) = @_;
    local $ENV{PATH} = $bin;
    local $ENV{FAKE_UID} = $uid // 0;
    delete local $ENV{DEBIAN_FRONTEND};
    my ($rc, $out) = Fairgate::Test::run_cmd("$bin/bash",
                                             "$tree/conf/deps.sh", $set);
    my @log = split /\n/, slurp("$state/log");
    return ($rc, $out, \@log);
}

sub calls { my ($log, $re) = @_; scalar grep { /$re/ } @$log }

sub installed { [split /\n/, slurp("$state/installed")] }

sub last_line { (split /\n/, $_[0])[-1] // '' }

# the two packages missing in most cases, and their install
my $two = 'redis-server chromium';
my $install_two = "install -y --no-install-recommends $two";

my ($rc, $out, $log);
my @all = @test;
my @no_node = grep { !/^(nodejs|npm)$/ } @test;
my @test_no_node = grep { !/^(nodejs|npm)$/ } @test_only;


# a ready machine: one dpkg-query, nothing else

machine(installed => \@all, lists => \@all, node_modules => 'fresh');
($rc, $out, $log) = deps('test', 1000);
is($rc, 0, 'all there: status 0');
is($out, '', '... nothing printed');
is_deeply([map { s/ .*//r } @$log], ['dpkg-query'],
          '... one dpkg-query and no other call')
    or diag(join "\n", @$log);


# root, two packages missing, apt's lists know them: installed at once

my @have = grep { $_ ne 'chromium' && $_ ne 'redis-server' } @all;
machine(installed => \@have, lists => \@all, node_modules => 'fresh');
($rc, $out, $log) = deps('test', 0);
is($rc, 0, 'root, two missing: status 0');
like($out, qr/^make test: installing the missing Debian packages: $two$/m,
     '... saying what it installs');
is(calls($log, qr/^apt-get .* update/), 0, '... no apt-get update');
my ($install) = grep { /^apt-get .* install/ } @$log;
is($install, 'apt-get DEBIAN_FRONTEND=noninteractive uid=0 -q '
              . "-o DPkg::Lock::Timeout=120 $install_two",
     '... apt-get install, noninteractive, no recommends, those two only');
is(calls($log, qr/^sudo/), 0, '... without sudo');
is_deeply([sort @{ installed() }], [sort @all], '... and they are installed');

($rc, $out, $log) = deps('test', 0);
is("$rc $out", '0 ', 'run again: nothing to do');


# a fresh machine: empty lists, nothing installed but node

machine(installed => [], lists => [], node_modules => '');
($rc, $out, $log) = deps('run', 0);
is($rc, 0, 'fresh, make run: status 0');
like($out, qr/apt-get update: apt's package lists lack/,
     '... updates the lists first');
my @apt = grep { /^apt-get/ } @$log;
is(scalar @apt, 2, '... two apt-get calls');
like($apt[0] // '', qr/ update$/, '... update');
like($apt[1] // '', qr/ install -y --no-install-recommends \Q@run\E$/,
     '... then install, the run set');
is_deeply([sort @{ installed() }], [sort @run],
          '... which is installed, no more');
is(calls($log, qr/^npm/), 0, '... and make run does not run npm');

($rc, $out, $log) = deps('test', 0);
is($rc, 0, 'then make test: status 0');
like($out, qr/installing the missing Debian packages: \Q@test_no_node\E$/m,
     '... installs the test set');
is_deeply([grep { /^npm/ } @$log],
          ["npm $tree/t/node ci --no-audit --no-fund"],
          '... and runs npm ci in t/node');
ok(-f "$tree/t/node/node_modules/.package-lock.json", '... node_modules made');


# without node, nodejs and npm are wanted; with node, not

machine(installed => \@no_node, lists => \@all, 'no-node' => 1,
        node_modules => 'fresh');
($rc, $out, $log) = deps('test', 0);
like($out, qr/installing the missing Debian packages: nodejs npm$/m,
     'no node: nodejs and npm installed');

machine(installed => \@no_node, lists => \@all, node_modules => 'fresh');
($rc, $out, $log) = deps('test', 0);
is("$rc $out", '0 ', 'a node of its own (NodeSource): no Debian nodejs');


# lists that know the packages but are older than the archive: install
# fails, update, install again

machine(installed => \@have, lists => \@all, 'old-lists' => 1,
        node_modules => 'fresh');
($rc, $out, $log) = deps('test', 0);
is($rc, 0, 'old lists: status 0');
like($out, qr/apt-get install failed: apt-get update, then once more/,
     '... saying why it updates');
is_deeply([map { / (update|install)\b/ ? $1 : () } grep { /^apt-get/ } @$log],
          [qw(install update install)], '... install, update, install');


# not root: passwordless sudo, then sudo that asks, then no sudo

machine(installed => \@have, lists => \@all, 'sudo-ok' => 1,
        node_modules => 'fresh');
($rc, $out, $log) = deps('test', 1000);
is($rc, 0, 'not root, passwordless sudo: status 0');
($install) = grep { /^apt-get .* install/ } @$log;
like($install // '', qr/uid=0 .* \Q$install_two\E$/,
     '... apt-get install as root');
ok(calls($log, qr/^sudo -n env DEBIAN_FRONTEND=noninteractive apt-get/),
   '... through sudo -n');

for my $case ('sudo asks for a password', 'no sudo') {
    machine(installed => \@have, lists => \@all, node_modules => 'fresh',
            'no-sudo' => $case eq 'no sudo');
    ($rc, $out, $log) = deps('test', 1000);
    isnt($rc, 0, "not root, $case: it fails");
    is(scalar(() = $out =~ /\n/g), 1, '... with one line')
        or diag($out);
    is($out, "make test: missing Debian packages: $two; installing them "
             . 'needs root, and there is no passwordless sudo; run: sudo '
             . "apt-get update && sudo apt-get $install_two\n",
         '... naming the packages and the command to run');
    is(calls($log, qr/^apt-get/), 0, '... and running no apt-get');
}


# no network: apt-get fails, and it says what to run once there is one

machine(installed => \@have, lists => [], 'no-network' => 1,
        node_modules => 'fresh');
($rc, $out, $log) = deps('test', 0);
isnt($rc, 0, 'no network: it fails');
is(last_line($out), 'make test: apt-get update failed (above); run: '
                   . "apt-get update && apt-get $install_two",
     '... its last line the command to run');

machine(installed => \@have, lists => \@all, 'old-lists' => 1,
        'no-network' => 1, node_modules => 'fresh');
($rc, $out, $log) = deps('test', 0);
isnt($rc, 0, 'no network, old lists: it fails');
is(last_line($out), "make test: could not install $two (above); run: "
                   . "apt-get update && apt-get $install_two",
     '... saying so, and the command');


# t/node: stale node_modules, and npm failing

machine(installed => \@all, lists => \@all, node_modules => 'stale');
($rc, $out, $log) = deps('test', 1000);
is($rc, 0, 'package-lock.json newer than node_modules: status 0');
is(calls($log, qr/^npm \Q$tree\E\/t\/node ci/), 1, '... npm ci in t/node');
is(calls($log, qr/^(apt-get|sudo)/), 0, '... and no apt-get');

machine(installed => \@all, lists => \@all, 'npm-fails' => 1);
($rc, $out, $log) = deps('test', 1000);
isnt($rc, 0, 'npm ci failing: it fails');
is(last_line($out),
   'make test: npm ci failed in t/node (above); run: cd t/node && npm ci',
     '... and says the command');


# not Debian: nothing is checked, and it says so

machine('no-dpkg-query' => 1);
($rc, $out, $log) = deps('test', 0);
is($rc, 0, 'no dpkg-query: status 0');
like($out, qr/not a Debian system \(no dpkg-query\)/, '... saying so');
is(calls($log, qr/^apt/), 0, '... installing nothing');
machine();

($rc, $out) = deps('bogus', 0);
is($rc >> 8, 2, 'an unknown set: usage, status 2');

done_testing();
