#!/usr/bin/env perl

# The tree's calls run one way (docs/architecture.md, "Layers"): every
# include and every call of the built tree goes down the layers the page
# writes, no files call each other in a loop, and the pure C parts include
# no nginx header (t/style/layers.pl).  And the check itself must see what
# it is meant to: on a made-up tree it names an include that goes up, a
# call sideways, a loop of calls, an nginx header in pure C, a source that
# was not built, and passes the same tree once they are mended.

use strict;
use warnings;

use FindBin;

use File::Path ();
use File::Temp ();
use Test::More;

my $repo = "$FindBin::Bin/..";
my $layers = "$FindBin::Bin/style/layers.pl";

my $out = `cd $repo && $^X $layers 2>&1`;

is($? >> 8, 0, 'every include and call of the tree runs down its layers')
    or diag($out);
note($out);

# a made-up tree: base/ below mid/ and side/ (beside each other), top/ above

my $dir = File::Temp::tempdir('fairgate-layers-XXXXXX', TMPDIR => 1,
                              CLEANUP => 1);

sub put {
    my ($path, $text) = @_;
    (my $folder = "$dir/$path") =~ s{/[^/]*$}{};

    File::Path::make_path($folder);
    open my $fh, '>', "$dir/$path" or die "$dir/$path: $!\n";
    print {$fh} $text;
    close $fh;
}

put('docs/architecture.md', <<'EOF');
# a tree

## Layers

| layer | parts | what |
|---|---|---|
| 1 | `base/` | |
| 2 | `mid/`, `side/` | |
| 3 | `top/`, `top/face.h` | |

Pure C (no nginx header): `base/`, `mid/`.

## After
| 9 | `ignored/` | not in the table |
EOF

put('base/b.h', "int fg_b(int x);\n");
put('base/b.c', "#include \"b.h\"\nint fg_b(int x) { return x + 1; }\n");
put('mid/m.h', "int fg_m(int x);\nint fg_m2(int x);\n");
put('mid/m.c', "#include \"m.h\"\n#include \"b.h\"\n"
               . "int fg_m(int x) { return fg_b(x); }\n");
put('mid/m2.c', "#include \"m.h\"\nint fg_m2(int x) { return x; }\n");
put('side/s.c', "int fg_s(int x);\nint fg_s(int x) { return x; }\n");
put('top/t.c', "#include \"m.h\"\nint fg_t(int x) { return fg_m(x); }\n");
put('top/face.h', "#define FG_FACE 1\n");

sub build {
    File::Path::remove_tree("$dir/build");

    for my $src (glob("$dir/*/*.c")) {
        (my $rel = $src) =~ s{^\Q$dir\E/}{};
        (my $obj = "$dir/build/obj/$rel") =~ s/\.c$/.o/;
        (my $folder = $obj) =~ s{/[^/]*$}{};

        File::Path::make_path($folder);
        system('cc', '-c', (map { "-I$dir/$_" } qw(base mid top)), $src,
               '-o', $obj) == 0
            or die "cc $src failed\n";
    }
}

sub check {
    my $text = `$^X $layers --objs build/obj $dir 2>&1`;
    return ($? >> 8, $text);
}

build();

my ($rc, $text) = check();

is($rc, 0, 'a tree whose calls run down passes') or diag($text);
like($text, qr/^8 files in 5 parts/m, 'it read every file of every part')
    or diag($text);

# an include that goes up: base/ including mid/'s header

put('base/b.c', "#include \"b.h\"\n#include \"m.h\"\n"
                . "int fg_b(int x) { return x + 1; }\n");
build();
($rc, $text) = check();

is($rc, 1, 'an include up fails');
like($text, qr{^base/b\.c includes mid/m\.h up \(mid/, layer 1 -> 2\)}m,
     'and names the file, the header and the layers') or diag($text);

# a call sideways: mid/ calling side/, beside it

put('base/b.c', "#include \"b.h\"\nint fg_b(int x) { return x + 1; }\n");
put('mid/m2.c', "#include \"m.h\"\nint fg_s(int x);\n"
                . "int fg_m2(int x) { return fg_s(x); }\n");
build();
($rc, $text) = check();

is($rc, 1, 'a call sideways fails');
like($text, qr{^mid/m2\.c calls side/s\.c sideways .*: fg_s$}m,
     'and names the function') or diag($text);

# a loop of calls inside one part

put('mid/m2.c', "#include \"m.h\"\nint fg_m2(int x) { return fg_m(x); }\n");
put('mid/m.c', "#include \"m.h\"\n#include \"b.h\"\n"
               . "int fg_m(int x) { return x ? fg_m2(x - 1) : fg_b(x); }\n");
build();
($rc, $text) = check();

is($rc, 1, 'a loop of calls fails');
like($text, qr{^a loop of calls: mid/m\.c, mid/m2\.c\n  mid/m\.c -> mid/m2\.c: fg_m2\n  mid/m2\.c -> mid/m\.c: fg_m$}m,
     'and names the files and what ties them') or diag($text);

# nginx's header in pure C (read as text: no nginx to compile against
# here); a file that is a part of its own

put('mid/m.c', "#include \"m.h\"\n#include \"b.h\"\n"
               . "int fg_m(int x) { return fg_b(x); }\n");
put('mid/m2.c', "#if 0\n#include <ngx_core.h>\n#endif\n#include \"m.h\"\n"
                . "int fg_m2(int x) { return x; }\n");
put('side/s.c', "#include \"face.h\"\nint fg_s(int x);\n"
                . "int fg_s(int x) { return x; }\n");
build();
($rc, $text) = check();

is($rc, 1, 'an nginx header in pure C fails');
like($text, qr{^mid/m2\.c:2: pure C includes nginx's <ngx_core\.h>$}m,
     'and names the line') or diag($text);
like($text, qr{^side/s\.c includes top/face\.h up \(top/face\.h, layer 2 -> 3\)}m,
     'a file on a layer of its own is held to it') or diag($text);

# a source that was not built: its calls would go unseen

put('mid/m2.c', "#include \"m.h\"\nint fg_m2(int x) { return x; }\n");
put('side/s.c', "int fg_s(int x);\nint fg_s(int x) { return x; }\n");
build();
unlink "$dir/build/obj/side/s.o";
($rc, $text) = check();

is($rc, 1, 'a source without its object fails');
like($text, qr{^side/s\.c: no object of it}m, 'and names it') or diag($text);

done_testing();
