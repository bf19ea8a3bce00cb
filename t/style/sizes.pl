#!/usr/bin/perl

# fairgate: the size of the code's units, against the aims of
# docs/architecture.md: no function over 150 lines but a CUDA kernel, no
# source file over 1,200 lines.
#
#     t/style/sizes.pl [--top N] [--max-function L] [--max-file L] [PATH...]
#
# Reads the C, C++ and CUDA sources under PATH (default: the parts of the
# tree), prints the N longest functions and files, and exits 1 when one is
# over its aim, naming it.  The code is in nginx's style, which this reads
# exactly: a function's body opens with "{" alone at the start of a line
# and closes with "}" at the start of a line; its length runs from the
# line that names it to that closing brace.

use strict;
use warnings;

use File::Find;
use Getopt::Long;

my $top = 10;
my $max_function = 150;
my $max_file = 1200;

GetOptions('top=i' => \$top, 'max-function=i' => \$max_function,
           'max-file=i' => \$max_file)
    or die "usage: $0 [--top N] [--max-function L] [--max-file L] [PATH...]\n";

my @roots = @ARGV ? @ARGV : qw(ngx_module engine kernels t);
my (@functions, @files);

for my $root (@roots) {
    find({ no_chdir => 1, wanted => sub {
        $File::Find::prune = 1 if m{(^|/)(node_modules|build)$};
        push @files, $_ if -f && /\.(c|h|cc|cu)$/;
    } }, $root);
}

@files = sort @files;

my @sizes;

for my $file (@files) {
    open my $fh, '<', $file or die "$file: $!\n";
    my @lines = <$fh>;
    close $fh;

    push @sizes, [scalar @lines, $file];
    push @functions, functions($file, \@lines);
}

sub functions {
    my ($file, $lines) = @_;
    my @found;

    for (my $i = 0; $i < @$lines; $i++) {
        next unless $lines->[$i] =~ /^\{\s*$/;

        # the declarator: the nearest line above that starts with a name
        # and an opening parenthesis (a kernel's __launch_bounds__ is not)
        my ($start, $name, $kernel) = ($i, '?', 0);

        for (my $j = $i - 1; $j >= 0 && $j >= $i - 20; $j--) {
            my $l = $lines->[$j];

            $kernel = 1 if $l =~ /\b__global__\b/;

            if ($l =~ /^([A-Za-z_]\w*)\s*\(/ && $1 ne '__launch_bounds__') {
                ($start, $name) = ($j, $1);

                # the type is on the line above, where a kernel says so
                $kernel = 1 if $j > 0 && $lines->[$j - 1] =~ /\b__global__\b/
                               || $j > 1 && $lines->[$j - 2] =~ /\b__global__\b/;
                last;
            }
        }

        my $end = $i + 1;
        $end++ while $end < @$lines && $lines->[$end] !~ /^\}/;

        push @found, { file => $file, name => $name, line => $start + 1,
                       len => $end - $start + 1, kernel => $kernel };
        $i = $end;
    }

    return @found;
}

my @by_len = sort { $b->{len} <=> $a->{len} } @functions;
my $n = @by_len < $top ? @by_len : $top;

print "longest functions (of ", scalar @functions, "):\n";
printf "  %5d  %s:%d %s%s\n", $_->{len}, $_->{file}, $_->{line}, $_->{name},
       $_->{kernel} ? ' (CUDA kernel)' : '' for @by_len[0 .. $n - 1];

@sizes = sort { $b->[0] <=> $a->[0] } @sizes;
$n = @sizes < $top ? @sizes : $top;

print "longest files (of ", scalar @sizes, "):\n";
printf "  %5d  %s\n", @$_ for @sizes[0 .. $n - 1];

my @over = ((map { sprintf "function %s (%s:%d) has %d lines",
                           $_->{name}, $_->{file}, $_->{line}, $_->{len} }
             grep { $_->{len} > $max_function && !$_->{kernel} } @by_len),
            (map { sprintf "file %s has %d lines", $_->[1], $_->[0] }
             grep { $_->[0] > $max_file } @sizes));

print "over the aims ($max_function lines a function, $max_file a file):\n",
      map { "  $_\n" } @over if @over;

exit(@over ? 1 : 0);
