#!/usr/bin/env perl

# fairgate: the dashboard's page (dashboard.html) as C, for the module to
# serve whatever way nginx was built (./configure --add-dynamic-module reads
# no file of ours at run time, and compiles only C):
#
#     ngx_module/status/dashboard_embed.pl ngx_module/status/dashboard.html \
#         > ngx_module/status/ngx_http_fairgate_dashboard_page.c
#
# (`make dashboard` runs it).  The output is committed; t/030-dashboard.t
# fails when it is not what this makes of dashboard.html.  It holds the page
# before and after the marker @FAIRGATE_STATUS_URI@ (where the handler puts
# the URI of fairgate_dashboard), and the Content-Security-Policy: the
# hashes of the page's one inline <script> and one <style>, so that these
# run and nothing else does, and no source outside the page's own server.

use strict;
use warnings;

use Digest::SHA qw(sha256_base64);

my $MARK = '@FAIRGATE_STATUS_URI@';

@ARGV == 1
    or die "usage: $0 dashboard.html > ngx_http_fairgate_dashboard_page.c\n";
my $path = $ARGV[0];

open my $fh, '<:raw', $path or die "$path: $!\n";
my $html = do { local $/; <$fh> };
close $fh;

my @parts = split /\Q$MARK\E/, $html, -1;
@parts == 2 or die "$path: expected the marker $MARK once, found it "
                   . (@parts - 1) . " times\n";

my @scripts = $html =~ m{<script>(.*?)</script>}gs;
my @styles = $html =~ m{<style>(.*?)</style>}gs;
my $tags = () = $html =~ m{<(?:script|style)\b}g;

@scripts == 1 && @styles == 1 && $tags == 2
    or die "$path: expected one <script> and one <style>, without "
           . "attributes\n";

# base64 with its padding, as CSP wants it
sub hash { my $h = sha256_base64($_[0]); $h .= '=' x (-length($h) % 4); $h }

my $csp = join '; ',
    "default-src 'none'",
    "script-src 'sha256-" . hash($scripts[0]) . "'",
    "style-src 'sha256-" . hash($styles[0]) . "'",
    "connect-src 'self'",
    "img-src data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'self'";


# a C string literal of the bytes, one line of the page a line of C (a
# longer one wrapped after a space where it has one), within 80 columns
sub literal {
    my ($bytes) = @_;
    my (@lines, @line);
    my $len = 0;

    for my $c (split //, $bytes) {
        my $o = ord $c;
        my $e = $c eq '\\' ? '\\\\'
              : $c eq '"' ? '\\"'
              : $c eq '?' ? '\\?'          # no trigraphs
              : $c eq "\n" ? '\\n'
              : $c eq "\t" ? '\\t'
              : ($o >= 0x20 && $o < 0x7f) ? $c
              : sprintf('\\%03o', $o);

        if ($len + length($e) > 74) {
            my ($cut) = grep { $line[$_] eq ' ' } reverse 1 .. $#line;
            $cut = @line - 1 unless defined $cut && $cut > @line - 40;
            push @lines, join '', @line[0 .. $cut];
            @line = @line[$cut + 1 .. $#line];
            $len = length join '', @line;
        }

        push @line, $e;
        $len += length $e;

        if ($c eq "\n") {
            push @lines, join '', @line;
            @line = ();
            $len = 0;
        }
    }

    push @lines, join '', @line if @line;

    return join "\n", map { "    \"$_\"" } @lines;
}


(my $name = $path) =~ s{.*/}{};

print <<"END";

/*
 * fairgate: the dashboard's page, generated from $name by
 * dashboard_embed.pl (`make dashboard`): do not edit, edit the page.
 * t/030-dashboard.t fails when this is not what the page makes.
 */

#include <ngx_config.h>
#include <ngx_core.h>


ngx_str_t  ngx_http_fairgate_dashboard_csp = ngx_string(
${\ literal($csp) });


ngx_str_t  ngx_http_fairgate_dashboard_head = ngx_string(
${\ literal($parts[0]) });


ngx_str_t  ngx_http_fairgate_dashboard_tail = ngx_string(
${\ literal($parts[1]) });
END
