#!/usr/bin/env perl

# The size of the code's units holds to docs/architecture.md's aims: no
# function over 150 lines but a CUDA kernel, no source file over 1,200
# lines (t/style/sizes.pl measures them).  And the measure itself must see
# what it is meant to: a function over the aim in a file of its own is
# named, a kernel is not held to it.

use strict;
use warnings;

use FindBin;

use File::Temp ();
use Test::More;

my $repo = "$FindBin::Bin/..";
my $sizes = "$FindBin::Bin/style/sizes.pl";

my $out = `cd $repo && $^X $sizes --top 5 2>&1`;
my $rc = $? >> 8;

is($rc, 0, 'every function and file of the tree is within the aims')
    or diag($out);
note($out);

# a made-up tree: one long function, one long kernel, one short function

my $dir = File::Temp::tempdir('fairgate-sizes-XXXXXX', TMPDIR => 1,
                              CLEANUP => 1);

sub body { join '', map { "    x += $_;\n" } 1 .. $_[0] }

open my $fh, '>', "$dir/long.c" or die "$dir/long.c: $!\n";
print {$fh} "static int\nfg_long(int x)\n{\n", body(160), "    return x;\n}\n",
            "\n\nstatic int\nfg_short(int x)\n{\n", body(10),
            "    return x;\n}\n";
close $fh;

open $fh, '>', "$dir/kernel.cu" or die "$dir/kernel.cu: $!\n";
print {$fh} "static __global__ void\n__launch_bounds__(256)\n",
            "fg_kernel(int *p)\n{\n    int x = 0;\n", body(160),
            "    *p = x;\n}\n";
close $fh;

$out = `$^X $sizes $dir 2>&1`;
$rc = $? >> 8;

is($rc, 1, 'a function over the aim fails the measure');
like($out, qr/function fg_long \(\S+long\.c:2\) has 164 lines/,
     '... which names it, its place and its length');
unlike($out, qr/function fg_(kernel|short) /,
       '... and neither the kernel nor the short function');
like($out, qr/\b165\s+\S+kernel\.cu:3 fg_kernel \(CUDA kernel\)/,
     'the kernel is measured all the same, and marked');

done_testing();
