#!/usr/bin/env perl

# fairgate_prefix against round robin, through nginx with fairgate in front
# of two peers, in the same run:
#
#   cached share   two mock peers (Fairgate::MockUpstream with a prefix
#                  cache of 5 prompts each) and 8 groups of prompts with a
#                  long shared system prompt, 4 tenants, requests sent 4 at
#                  a time: the share of the prompts' tokens the peers
#                  report cached, for round robin, least_conn and
#                  fairgate_prefix; each way ROUNDS times, a new shuffle of
#                  the groups each round
#   overhead       two nginx peers answering a fixed completion, wrk with
#                  32 connections sending the same groups' requests: req/s
#                  and the gateway worker's CPU time a request of each
#                  balancer, the ways back to back in each round, ratios
#                  to round robin's taken within a round
#
# Medians of the rounds, with their min-max.
# Usage: bench_dropin_prefix.pl [SECONDS [ROUNDS]]

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use JSON::PP ();

use Fairgate::Bench qw(bench_dir cpu_seconds front_keepalive median);
use Fairgate::Test qw(:DEFAULT agent_prompt shuffled static_upstream);
use Fairgate::MockUpstream;


my $SECONDS = shift // 1;
my $ROUNDS = shift // 9;
my $GROUPS = 8;
my $TENANTS = 4;
my $TRACE_ROUNDS = 10;
my $WAVE = 4;

my @WAYS = (['round-robin', ''], ['least_conn', 'least_conn;'],
            ['fairgate_prefix', 'fairgate_prefix;']);

system('command -v wrk > /dev/null') == 0
    or die "bench_dropin_prefix: wrk is not installed (apt-get install wrk)\n";

my $json = JSON::PP->new->canonical;

my $dir = bench_dir($TENANTS, sub { 'app' });


# a group's system prompt, about 2,000 bytes, its own from the first word
sub system_prompt { agent_prompt($_[0], 300) }


sub spread {
    my @v = sort { $a <=> $b } @_;
    return sprintf '(%.3f-%.3f)', $v[0], $v[-1];
}


sub front {
    my ($http, $locations) = @_;
    my $s = Fairgate::Test::Server->new(
        http_config => "    fairgate_zone zone=bench:16m inflight=256;\n"
                       . $http,
        config => front_keepalive() . <<"END");

$locations

    location = /status {
        fairgate_status;
    }
END
    $s->start or die $s->last_error;
    return $s;
}


sub location {
    my ($name) = @_;
    return <<"END";
    location /$name/ {
        fairgate zone=bench;
        fairgate_keys $dir/keys;
        fairgate_user_limit rpm=1000000000 tpm=4000000000;
        proxy_pass http://$name/v1/;
    }
END
}


# one trace through one balancer: the share of prompt tokens cached

sub cached_share {
    my ($balancer, $seed) = @_;
    my @up = map { Fairgate::MockUpstream->new(prefix_cache => 5) } 1 .. 2;
    my $s = front("    upstream llm {\n        $balancer\n"
                  . join('', map { "        server " . $_->addr . ";\n" }
                                 @up)
                  . "    }\n", location('llm'));

    my ($cached, $total, $n, @reqs) = (0, 0, 0);

    for my $r (1 .. $TRACE_ROUNDS) {
        for my $g (shuffled($seed * 100 + $r, 0 .. $GROUPS - 1)) {
            my $t = 1 + $n++ % $TENANTS;
            my $q = "question $r of tenant $t";
            push @reqs, { method => 'POST', uri => '/llm/chat/completions',
                          body => $json->encode({
                              model => 'm', max_tokens => 4,
                              messages => [
                                  { role => 'system',
                                    content => system_prompt($g) },
                                  { role => 'user', content => $q }] }),
                          headers => ["Authorization: Bearer sk-bench-$t",
                                      'Content-Type: application/json'] };
            $total += int(length("system: " . system_prompt($g)
                                 . "\nuser: $q\n") / 4);
        }
    }

    while (my @wave = splice @reqs, 0, $WAVE) {
        for my $res ($s->concurrent(\@wave)) {
            die "bench_dropin_prefix: $res->{status}: $res->{body}\n"
                unless ($res->{status} // 0) == 200;
            my $u = $json->decode($res->{body})->{usage};
            $cached += $u->{prompt_tokens_details}{cached_tokens} // 0;
        }
    }

    $s->stop;
    $_->stop for @up;

    return $cached / $total;
}


printf "# %s, %d cores, load %s; %d rounds\n",
    scalar(`nginx -v 2>&1`) =~ s/\s+$//r, scalar(`nproc`) + 0,
    (split ' ', `cat /proc/loadavg`)[0], $ROUNDS;

my %share;

for my $round (1 .. $ROUNDS) {
    for my $way (@WAYS) {
        push @{ $share{$way->[0]} }, cached_share($way->[1], $round);
    }
}

printf "# cached share: %d groups of a %d-byte system prompt, %d tenants, "
       . "%d requests\n# sent %d at a time, two mock peers remembering 5 "
       . "prompts each\n", $GROUPS, length(system_prompt(0)), $TENANTS,
       $GROUPS * $TRACE_ROUNDS, $WAVE;
printf "%-16s %8s %15s\n", 'way', 'cached', '(min-max)';
printf "%-16s %8.3f %15s\n", $_->[0], median(@{ $share{$_->[0]} }),
       spread(@{ $share{$_->[0]} }) for @WAYS;


# the overhead: two nginx peers, wrk

my @peers = map { static_upstream(prompt_tokens => 514) } 1 .. 2;

my $servers = join '', map { "        server 127.0.0.1:" . $_->port . ";\n" }
                       @peers;
my $names = { 'round-robin' => 'rr', least_conn => 'lc',
              fairgate_prefix => 'prefix' };

my $front = front(join('', map { "    upstream $names->{$_->[0]} {\n"
                                 . "        $_->[1]\n$servers"
                                 . "        keepalive 64;\n    }\n" } @WAYS),
                  join('', map { location($names->{$_->[0]}) } @WAYS));

open my $fh, '>', "$dir/post.lua" or die;
print {$fh} "local groups = {\n",
    (map { '  ' . $json->encode(system_prompt($_)) . ",\n" }
         0 .. $GROUPS - 1), "}\n", <<"END";
local i = 0
request = function()
    i = i + 1
    local g = groups[(i * 5) % $GROUPS + 1]
    local t = i % $TENANTS + 1
    return wrk.format("POST", nil, {
        ["Authorization"] = "Bearer sk-bench-" .. t,
        ["Content-Type"] = "application/json" },
        '{"model":"m","max_tokens":16,"messages":[{"role":"system",'
        .. '"content":"' .. g .. '"},{"role":"user","content":"question '
        .. i .. ' of tenant ' .. t .. '"}]}')
end
END
close $fh;

my ($worker) = $front->worker_pids;


sub wrk {
    my ($name) = @_;
    my $url = "http://127.0.0.1:" . $front->port
              . "/$name/chat/completions";
    my $cpu = cpu_seconds($worker);
    my $out = `wrk -t1 -c32 -d${SECONDS}s -s $dir/post.lua $url 2>&1`;
    $cpu = cpu_seconds($worker) - $cpu;

    my ($requests) = $out =~ /(\d+) requests in/;
    my ($rps) = $out =~ /Requests\/sec:\s+([\d.]+)/;
    die "bench_dropin_prefix: no result from wrk:\n$out" unless $rps;
    die "bench_dropin_prefix: errors from wrk:\n$out"
        if $out =~ /Non-2xx|Socket errors/;

    return { rps => $rps, cpu => 1e6 * $cpu / $requests };
}


my %run;

for my $round (1 .. $ROUNDS) {
    for my $way (@WAYS) {
        push @{ $run{$way->[0]} }, wrk($names->{ $way->[0] });
    }
}

printf "\n# overhead: wrk -t1 -c32, %d s a run, the same groups' requests "
       . "(about 2.1 KB each)\n", $SECONDS;
printf "%-16s %8s %6s %15s %7s %6s %15s\n", 'way', 'req/s', 'ratio',
       '(min-max)', 'cpu us', 'ratio', '(min-max)';

for my $way (@WAYS) {
    my $w = $way->[0];
    my @ratio = map { $run{$w}[$_]{rps} / $run{'round-robin'}[$_]{rps} }
                0 .. $ROUNDS - 1;
    my @cpu = map { $run{$w}[$_]{cpu} / $run{'round-robin'}[$_]{cpu} }
              0 .. $ROUNDS - 1;
    printf "%-16s %8.0f %6.3f %15s %7.1f %6.3f %15s\n", $w,
           median(map { $_->{rps} } @{ $run{$w} }), median(@ratio),
           spread(@ratio), median(map { $_->{cpu} } @{ $run{$w} }),
           median(@cpu), spread(@cpu);
}

print "# ratio: over round robin's in the same round (median of rounds); "
      . "cpu us: the\n# gateway worker's CPU time a request, its ratio: "
      . "this way's over round robin's\n";

$front->stop;
$_->stop for @peers;
