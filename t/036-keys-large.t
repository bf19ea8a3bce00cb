#!/usr/bin/env perl

# A large keys file: read in blocks of 1 MB, every check across its lines
# linear.  A file over the old 64 MB bound loads and its first and last
# keys work; errors past the first block name their true line; a line
# that fits no block is refused; a user's keys that disagree and a key
# listed twice are found among 50,000 keys, whichever lines they are on.
# (How long a million keys take is docs/scale.md's, t/bench/bench_scale.pl.)

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Digest::SHA qw(sha256_hex);
use File::Temp ();
use Test::More;

use Fairgate::Test;


our $dir = File::Temp::tempdir('fairgate-keys-XXXXXX', TMPDIR => 1,
                               CLEANUP => 1);
chmod 0755, $dir;

my $h1 = sha256_hex('one');
my $h2 = sha256_hex('two');

# 3,000 comment lines of 1,000 bytes: 3 MB, the next line is 3,002
my $pad = ('#' . ('x' x 998) . "\n") x 3000;

# 50,000 keys of 5,000 users, 10 each, alike
my $many = join '', map { sha256_hex("k$_") . ' user' . ($_ % 5000)
                          . " app 1 rpm=100\n" } 1 .. 50000;

sub write_file {
    my ($name, @parts) = @_;
    open my $fh, '>', "$dir/$name" or die "$dir/$name: $!\n";
    print {$fh} @parts;
    close $fh or die "$dir/$name: $!\n";
}

# 66 MB: a key, 66,000 comment lines of 1,000 bytes, a key with no LF
write_file('big', "$h1 alice chat 1\n", ($pad) x 22, "$h2 bob - 2");

write_file('dup-far', "$h1 alice chat 1\n", $pad, "$h1 carol - 1\n");
write_file('conflict-far', "$h1 alice chat 1\n", $pad, "$h2 alice chat 2\n");
write_file('weight-far', "$h1 alice chat 1\n", $pad, "$h2 bob - heavy\n");
write_file('long-line', "$h1 alice chat 1\n", '#' x (1024 * 1024 + 10),
           "\n$h2 bob - 1\n");
write_file('many-dup', $many, sha256_hex('k17') . " user17 app 1 rpm=100\n");
write_file('many-conflict', $many,
           sha256_hex('new') . " user4321 app 1 rpm=99\n");
write_file('many', $many);


my $Z = "fairgate_zone zone=main:16m;\n";

run_refused(map({ ["TEST $_->[0]", '',
                   "location / { fairgate_keys $dir/$_->[1]; }\n", $_->[2]] }
    ['1: a key listed twice, past the first block', 'dup-far',
     qr/duplicate key in keys file \S+\/dup-far:3002, first in line 1\b/],
    ['2: a user whose keys disagree, past the first block', 'conflict-far',
     qr/user "alice" has another weight, priority or limits in keys file \S+\/conflict-far:3002 than in line 1\b/],
    ['3: a bad weight, past the first block', 'weight-far',
     qr/invalid weight "heavy" in keys file \S+\/weight-far:3002\b/],
    ['4: a line longer than a block', 'long-line',
     qr/too long a line in keys file \S+\/long-line:2\b/],
    ['5: a key listed twice among 50,000', 'many-dup',
     qr/duplicate key in keys file \S+\/many-dup:50001, first in line 17\b/],
    ['6: a user whose 11th key disagrees, among 50,000', 'many-conflict',
     qr/user "user4321" has another weight, priority or limits in keys file \S+\/many-conflict:50001 than in line 4321\b/]));


# the files that load: their keys found, first, last and between

for my $case (['big', [one => 200, two => 200, three => 401]],
              ['many', [k1 => 200, k25000 => 200, k50000 => 200,
                        k50001 => 401]])
{
    my ($file, $keys) = @$case;

    my $s = Fairgate::Test::Server->new(
        http_config => $Z,
        config => "fairgate zone=main;\nfairgate_keys $dir/$file;\n"
                  . "location /status { fairgate_status; }\n");

    ok($s->start, "a server with keys file \"$file\" starts")
        or diag($s->last_error);

    my @k = @$keys;

    while (my ($key, $code) = splice @k, 0, 2) {
        my $res = $s->request('GET /status',
                              headers => ["Authorization: Bearer $key"]);
        is($res->{status}, $code, "$file: key \"$key\" gets $code");
    }

    is($s->stop, 0, "$file: nginx exits cleanly");
}

done_testing();
