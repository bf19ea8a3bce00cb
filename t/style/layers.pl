#!/usr/bin/perl

# fairgate: the tree's calls run one way.  Holds the sources to the layers
# that docs/architecture.md writes down ("## Layers"): each part (a folder)
# sits on a layer, and a file may include and call only files of its own
# part or of parts on lower layers; parts on one layer are beside each
# other and use neither.  Inside a part, no files call each other in a
# loop.  And the parts the page names pure C include no nginx header.
#
#     t/style/layers.pl [--doc FILE] [--objs DIR...] [--walk] [ROOT]
#
# Includes are read from the sources.  Calls are read from the objects
# (nm: what each object defines and what it takes from others), so a call
# counts exactly where the linker would resolve it; --objs names the
# folders of objects (default: build/obj and the module's objects under
# build/nginx/addon).  Tests (t/) are not held to it, being the one place
# that may reach every part.  Exits 1 naming each include or call that
# goes up or sideways, each loop of calls, and each nginx header in pure
# C; --walk prints every part's arrows as well.

use strict;
use warnings;

use File::Find;
use File::Spec;
use Getopt::Long;

my ($doc, @objs, $walk);

GetOptions('doc=s' => \$doc, 'objs=s' => \@objs, 'walk' => \$walk)
    or die "usage: $0 [--doc FILE] [--objs DIR...] [--walk] [ROOT]\n";

my $root = shift // '.';

chdir $root or die "$root: $!\n";

$doc //= 'docs/architecture.md';
@objs = ('build/obj', 'build/nginx/addon') unless @objs;

my ($parts, $pure) = read_layers($doc);
my @sources = sources([sort keys %$parts]);
my %part_of = map { $_ => part_of($_) } @sources;
my @problems;

check_pure();

my $includes = include_graph();
my $calls = call_graph();

check_edges('includes', $includes);
check_edges('calls', $calls);
check_loops($calls);

if ($walk) {
    print_walk($includes, $calls);
}

if (@problems) {
    print "$_\n" for @problems;
    printf "%d problem%s against %s\n", scalar @problems,
           @problems == 1 ? '' : 's', $doc;
    exit 1;
}

printf "%d files in %d parts: every include and call runs down, "
       . "no loop\n", scalar @sources, scalar keys %$parts;
exit 0;


# The table under "## Layers": | layer | `folder/`, `file` | ... |: a part
# is a folder, or one file that stands on a layer of its own.  A line
# "Pure C (no nginx header): `folder/`, ..." names the pure parts.

sub read_layers {
    my ($file) = @_;
    my (%parts, @pure, $in);

    open my $fh, '<', $file or die "$file: $!\n";

    while (my $line = <$fh>) {
        if ($line =~ /^## /) {
            $in = $line =~ /^## Layers\b/;
            next;
        }

        next unless $in;

        if ($line =~ /^Pure C \(no nginx header\):(.*)/) {
            push @pure, $1 =~ /`([^`]+\/)`/g;
            next;
        }

        next unless $line =~ /^\|\s*(\d+)\s*\|([^|]*)\|/;

        my ($layer, $cell) = ($1, $2);

        for my $part ($cell =~ /`([^`]+)`/g) {
            die "$file: $part is on two layers\n" if exists $parts{$part};
            $parts{$part} = $layer;
        }
    }

    close $fh;

    die "$file: no \"## Layers\" table\n" unless %parts;

    return (\%parts, \@pure);
}


sub sources {
    my ($folders) = @_;
    my %seen;

    for my $part (@$folders) {
        $seen{$part} = 1 if -f $part;
        next unless -d $part;

        find({ no_chdir => 1, wanted => sub {
            $File::Find::prune = 1 if m{(^|/)(node_modules|build)$};
            $seen{$_} = 1 if -f && /\.(c|h|cu|cuh)$/;
        } }, $part =~ s{/$}{}r);
    }

    return sort keys %seen;
}


# a file's part: the file itself where the table names it, else the
# longest folder of the table that holds it

sub part_of {
    my ($file) = @_;
    my $best;

    return $file if exists $parts->{$file};

    for my $folder (grep { m{/$} } keys %$parts) {
        next unless index($file, $folder) == 0;
        $best = $folder if !defined $best || length $folder > length $best;
    }

    return $best;
}


# may a file of part $from use one of part $to?

sub allowed {
    my ($from, $to) = @_;

    return 1 if $from eq $to;
    return $parts->{$from} > $parts->{$to};
}


sub check_pure {
    my @folders = @$pure;

    for my $file (@sources) {
        next unless grep { index($file, $_) == 0 } @folders;

        open my $fh, '<', $file or die "$file: $!\n";

        while (my $line = <$fh>) {
            next unless $line =~ /^\s*#\s*include\s*<(ngx_[^>]+)>/;
            push @problems, "$file:$.: pure C includes nginx's <$1>";
        }

        close $fh;
    }
}


# $graph->{A}{B} = [what A takes from B]: A includes B, or calls into it

sub include_graph {
    my (%by_name, %graph);

    for my $file (@sources) {
        push @{ $by_name{(File::Spec->splitpath($file))[2]} }, $file;
    }

    for my $file (@sources) {
        open my $fh, '<', $file or die "$file: $!\n";

        while (my $line = <$fh>) {
            next unless $line =~ /^\s*#\s*include\s*"([^"]+)"/;

            my $to = resolve($file, $1, \%by_name);

            next unless defined $to && $to ne $file;
            push @{ $graph{$file}{$to} }, "#include \"$1\" (line $.)";
        }

        close $fh;
    }

    return \%graph;
}


# a quoted include: beside the file first, else the one file of that name
# (one in the same part where several bear it); the system's otherwise

sub resolve {
    my ($file, $name, $by_name) = @_;
    my ($vol, $dir) = File::Spec->splitpath($file);
    my $near = File::Spec->canonpath("$dir$name");

    return $near if exists $part_of{$near};

    my @all = @{ $by_name->{(File::Spec->splitpath($name))[2]} // [] };
    my @same = grep { $part_of{$_} eq $part_of{$file} } @all;

    return $same[0] if @same == 1;
    return $all[0] if @all == 1;
    return undef;
}


sub call_graph {
    my (%defines, %takes, %graph, %by_base, %built);

    for my $file (@sources) {
        next unless $file =~ /\.(c|cu)$/;
        push @{ $by_base{(File::Spec->splitpath($file))[2] =~ s/\.\w+$//r} },
             $file;
    }

    for my $obj (objects()) {
        my $src = object_source($obj, \%by_base) // next;

        $built{$src} = 1;

        for (`nm -P '$obj' 2>/dev/null`) {
            my ($sym, $type) = split;

            # an nginx module's descriptor: every part reads its
            # configuration through it (ngx_http_get_module_loc_conf), as
            # nginx's own modules do with ngx_http_core_module
            next unless defined $type && $sym !~ /^ngx_\w+_module$/;

            if ($type eq 'U') {
                $takes{$src}{$sym} = 1;
            } elsif ($type =~ /^[TDBRC]$/) {
                $defines{$sym}{$src} = 1;
            }
        }
    }

    # a source no object was found for: its calls would go unseen
    for my $src (sort keys %by_base) {
        for my $file (@{ $by_base{$src} }) {
            push @problems, "$file: no object of it under @objs (build first)"
                unless $built{$file};
        }
    }

    for my $src (keys %takes) {
        for my $sym (keys %{ $takes{$src} }) {
            my @where = keys %{ $defines{$sym} // {} };

            # a name defined in several programs (main) names no one file
            next unless @where == 1 && $where[0] ne $src;
            push @{ $graph{$src}{$where[0]} }, $sym;
        }
    }

    return \%graph;
}


sub objects {
    my @found;

    for my $dir (@objs) {
        next unless -d $dir;

        find({ no_chdir => 1, wanted => sub {
            push @found, $_ if -f && /\.o$/;
        } }, $dir);
    }

    return @found;
}


# build/obj/PATH.o (or PATH.cu.o) is PATH.c or PATH.cu; nginx's build names
# an object by its source's folder and name alone (addon/FOLDER/NAME.o).  An
# object whose source is gone (a file moved since) is left out.

sub object_source {
    my ($obj, $by_base) = @_;

    for my $dir (@objs) {
        next unless index($obj, "$dir/") == 0;

        my $rel = substr($obj, length($dir) + 1) =~ s/(\.cu)?\.o$//r;

        for my $ext ('.c', '.cu') {
            return "$rel$ext" if exists $part_of{"$rel$ext"};
        }

        return undef unless $dir =~ m{(^|/)addon$};

        my ($folder, $base) = $rel =~ m{^(?:.*/)?([^/]+)/([^/]+)$} or return;
        my @all = grep { m{(^|/)\Q$folder\E/\Q$base\E\.(c|cu)$} }
                  @{ $by_base->{$base} // [] };

        return @all == 1 ? $all[0] : undef;
    }

    return undef;
}


sub check_edges {
    my ($what, $graph) = @_;

    for my $from (sort keys %$graph) {
        for my $to (sort keys %{ $graph->{$from} }) {
            my ($pf, $pt) = ($part_of{$from}, $part_of{$to});

            next if allowed($pf, $pt);

            my $how = $parts->{$pf} == $parts->{$pt} ? 'sideways' : 'up';

            push @problems, sprintf "%s %s %s %s (%s, layer %d -> %d): %s",
                 $from, $what, $to, $how, $pt, $parts->{$pf}, $parts->{$pt},
                 names($graph->{$from}{$to});
        }
    }
}


sub names {
    my ($list) = @_;
    my %seen;
    my @uniq = grep { !$seen{$_}++ } sort @$list;

    return join ', ', @uniq[0 .. ($#uniq < 5 ? $#uniq : 5)],
                      @uniq > 6 ? ('and ' . (@uniq - 6) . ' more') : ();
}


# loops of calls between files: the strongly connected components of more
# than one file (Tarjan's algorithm)

sub check_loops {
    my ($graph) = @_;
    my (%index, %low, %on, @stack, $next);

    $next = 0;

    my $visit;
    $visit = sub {
        my ($v) = @_;

        $index{$v} = $low{$v} = $next++;
        push @stack, $v;
        $on{$v} = 1;

        for my $w (sort keys %{ $graph->{$v} // {} }) {
            if (!exists $index{$w}) {
                $visit->($w);
                $low{$v} = $low{$w} if $low{$w} < $low{$v};
            } elsif ($on{$w} && $index{$w} < $low{$v}) {
                $low{$v} = $index{$w};
            }
        }

        return unless $low{$v} == $index{$v};

        my @scc;
        my $w;

        do {
            $w = pop @stack;
            delete $on{$w};
            push @scc, $w;
        } while ($w ne $v);

        return unless @scc > 1;

        my %in = map { $_ => 1 } @scc;
        my @ties;

        for my $a (sort @scc) {
            for my $b (sort keys %{ $graph->{$a} }) {
                next unless $in{$b};
                push @ties, "  $a -> $b: " . names($graph->{$a}{$b});
            }
        }

        push @problems, join "\n", 'a loop of calls: ' . join(', ', sort @scc),
                                   @ties;
    };

    for my $v (sort keys %$graph) {
        $visit->($v) unless exists $index{$v};
    }
}


sub print_walk {
    my ($inc, $call) = @_;
    my %arrows;

    for my $graph ($inc, $call) {
        for my $from (keys %$graph) {
            for my $to (keys %{ $graph->{$from} }) {
                my ($pf, $pt) = ($part_of{$from}, $part_of{$to});
                $arrows{$pf}{$pt} = 1 unless $pf eq $pt;
            }
        }
    }

    for my $part (sort { $parts->{$b} <=> $parts->{$a} || $a cmp $b }
                  keys %$parts)
    {
        printf "%2d %-28s -> %s\n", $parts->{$part}, $part,
               join(' ', sort keys %{ $arrows{$part} // {} }) || '-';
    }
}
