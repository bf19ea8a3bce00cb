#!/usr/bin/env perl

# fairgate_prefix, the upstream balancer by prompt prefix, through nginx in
# front of two mock peers that report what their prefix cache would have
# held (Fairgate::MockUpstream's prefix_cache): each prefix group sticks to
# one peer and most of its prompt is cached, where round robin spreads the
# groups and loses it; down, failed and backup peers as nginx's balancers
# treat them; imbalance= sends work to the less loaded peer; requests
# without a prompt balance plainly; the index across reloads; $fairgate_
# prefix_match and _blocks; nginx -t's errors.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Digest::SHA qw(sha256_hex);
use File::Temp ();
use JSON::PP ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test qw($REPO agent_prompt shuffled);
use Fairgate::MockUpstream;


my $GROUPS = 6;
my $ROUNDS = 6;
my @TENANTS = qw(alice bob carol);

my $json = JSON::PP->new->canonical;

my $dir = File::Temp::tempdir('fairgate-prefix-XXXXXX', TMPDIR => 1,
                              CLEANUP => 1);
chmod 0755, $dir;

open my $fh, '>', "$dir/keys" or die "$dir/keys: $!\n";
print {$fh} map { sha256_hex("sk-$_") . " $_ chat 1\n" } @TENANTS;
close $fh;


# a group's long system prompt: its own from the first words on, about
# 1,200 bytes (18 blocks of 64)

sub system_prompt { agent_prompt($_[0], 180) }


sub body {
    my ($g, $question, %o) = @_;
    return $json->encode({
        model => 'm', max_tokens => 4,
        messages => [{ role => 'system', content => system_prompt($g) },
                     { role => 'user', content => $question }] });
}


# the blocks of 64 bytes a group's requests share (their questions differ
# from the first byte): the system prompt and the newline after it
sub full {
    my ($g) = @_;
    return int((length(system_prompt($g)) + 1) / 64);
}


# the text the mocks see, whose bytes / 4 a full hit would report
sub prompt_tokens {
    my ($g, $question) = @_;
    return int(length("system: " . system_prompt($g) . "\nuser: $question\n")
               / 4);
}


sub chat {
    my ($s, $tenant, $g, $question, %o) = @_;
    return $s->post($o{uri} // '/v1/chat/completions', body($g, $question),
                    headers => ["Authorization: Bearer sk-$tenant",
                                'Content-Type: application/json',
                                "X-Tag: $g/$tenant/$question",
                                @{ $o{headers} // [] }]);
}


sub mocks {
    return map { Fairgate::MockUpstream->new(prefix_cache => 3) } 1 .. 2;
}


# nginx with upstream "llm" of the peers given (fairgate_prefix or not),
# fairgate in /v1/, none in /plain/

sub http_config {
    my (%o) = @_;
    return <<"END";
    fairgate_zone zone=fg:16m inflight=64;

    log_format pf '\$fairgate_prefix_match \$fairgate_prefix_blocks '
                  '\$upstream_addr \$http_x_tag';

    upstream llm {
        $o{upstream}
        $o{servers}
    }
END
}


sub server {
    my (%o) = @_;
    my $s = Fairgate::Test::Server->new(
        workers => $o{workers} // 1,
        http_config => http_config(%o),
        config => <<"END");
    access_log logs/pf.log pf;

    location /v1/ {
        fairgate zone=fg;
        fairgate_keys $dir/keys;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_pass http://llm;
    }

    location /plain/ {
        proxy_pass http://llm/v1/;
    }
END
    $s->start or die $s->last_error;
    return $s;
}


sub servers {
    my (@peers) = @_;
    return join "\n        ", map { "server $_;" } @peers;
}


# the access log's lines, once nginx wrote n of them, split at spaces
sub log_lines { map { [split / /] } $_[0]->access_lines('pf.log', $_[1]) }


# Rounds of one request a group, groups in a shuffled order, tenants in
# turn, one request at a time: the share of the prompts' tokens the peers
# had cached, and how many groups were served by both peers after their
# first request.

sub trace {
    my ($s, @up) = @_;
    my ($cached, $total, $n, %first, %peers) = (0, 0, 0);

    for my $r (1 .. $ROUNDS) {
        for my $g (shuffled($r, 0 .. $GROUPS - 1)) {
            my $t = $TENANTS[$n++ % @TENANTS];
            my $res = chat($s, $t, $g, "question $r of $t");
            is($res->{status}, 200, "group $g round $r: 200")
                or diag $res->{body};
            my $u = eval { $json->decode($res->{body})->{usage} } // {};
            $cached += $u->{prompt_tokens_details}{cached_tokens} // 0;
            $total += prompt_tokens($g, "question $r of $t");
        }
    }

    for my $i (0 .. $#up) {
        for my $tag ($up[$i]->served) {
            my ($g, $t, $q) = split m{/}, $tag;
            next if !defined $q || $q eq 'question 1 of ' . $t;
            $peers{$g}{$i} = 1;
        }
    }

    my $spread = grep { keys %{ $peers{$_} } > 1 } keys %peers;
    return ($cached / $total, $spread);
}


subtest 'prefix groups stick to a peer, round robin spreads them' => sub {
    # with keepalive, which wraps the balancer
    my @up = mocks();
    my $s = server(upstream => "fairgate_prefix;\n        keepalive 8;",
                   servers => servers(map { $_->addr } @up));
    my ($share, $spread) = trace($s, @up);
    $s->stop;

    my @rr = mocks();
    $s = server(upstream => '', servers => servers(map { $_->addr } @rr));
    my ($rr_share, $rr_spread) = trace($s, @rr);
    $s->stop;

    diag sprintf "cached share: fairgate_prefix %.3f, round robin %.3f",
                 $share, $rr_share;

    is($spread, 0, 'fairgate_prefix: each group on one peer');
    cmp_ok($share, '>', 0.7, 'fairgate_prefix: most of the prompts cached');
    cmp_ok($rr_spread, '>=', $GROUPS / 2,
           'round robin: groups on both peers');
    cmp_ok($rr_share, '<', $share - 0.3, 'round robin: far less cached');

    # the groups' first requests went to the peers in turn
    is_deeply([map { scalar $_->served } @up], [18, 18],
              'fairgate_prefix: the groups shared between the peers');
};


subtest '$fairgate_prefix_match and _blocks' => sub {
    my @up = mocks();
    my $s = server(upstream => 'fairgate_prefix block=64 blocks=10;',
                   servers => servers(map { $_->addr } @up));

    chat($s, 'alice', 1, '1 first');
    chat($s, 'bob', 1, '2 second');
    chat($s, 'alice', 2, '3 third');
    $s->get('/v1/models', headers => ['Authorization: Bearer sk-alice']);

    my @l = log_lines($s, 4);
    is_deeply([map { [@$_[0, 1]] } @l],
              [[0, 10], [10, 10], [0, 10], [0, 0]],
              'matched, of blocks (at most blocks=): a miss, a hit of all '
              . '10, another group, a GET')
        or diag explain \@l;
    is($l[0][2], $l[1][2], 'the hit went to the same peer');
    isnt($l[2][2], $l[0][2], 'the other group to the other, idle, peer');

    $s->stop;
};


subtest 'entries=: a peer keeps its prompts\' first blocks' => sub {
    my @up = mocks();
    my $s = server(upstream => 'fairgate_prefix entries=8;',
                   servers => servers(map { $_->addr } @up));

    chat($s, 'alice', 1, "$_ q") for 1 .. 3;

    my @l = log_lines($s, 3);
    is_deeply([map { $_->[0] } @l], [0, 8, 8], 'the first 8 blocks matched')
        or diag explain \@l;

    $s->stop;
};


subtest 'a full zone gives up the least recent blocks' => sub {
    my @up = mocks();
    my $s = server(upstream => 'fairgate_prefix zone=idx:32k entries=100000;',
                   servers => servers(map { $_->addr } @up));

    # 40 groups of 18 blocks: more than the zone holds
    chat($s, 'alice', $_, "1 q") for 0 .. 39;
    chat($s, 'bob', 39, '2 q');
    chat($s, 'bob', 0, '3 q');

    my @l = log_lines($s, 42);
    is_deeply([map { $_->[0] } @l[40, 41]], [full(39), 0],
              'the last group still matched, the first forgotten')
        or diag explain [@l[40, 41]];

    $s->stop;
};


subtest 'without a prompt: plain balancing' => sub {
    my @up = mocks();
    my $s = server(upstream => 'fairgate_prefix;',
                   servers => servers(map { $_->addr } @up));

    # a location without fairgate: no prompt is read
    for my $i (1 .. 4) {
        my $res = $s->post('/plain/chat/completions', body(3, 'same'),
                           headers => ['Content-Type: application/json',
                                       "X-Tag: plain$i"]);
        is($res->{status}, 200, "no fairgate, request $i: 200");
    }

    for my $i (1 .. 2) {
        my $res = $s->get('/v1/models',
                          headers => ['Authorization: Bearer sk-alice',
                                      "X-Tag: get$i"]);
        is($res->{status}, 200, "GET $i: 200");
    }

    is_deeply([sort map { scalar $_->served } @up], [3, 3],
              'round robin between the idle peers');

    my @l = log_lines($s, 6);
    is_deeply([map { $_->[0] } @l], [(0) x 6], 'nothing matched')
        or diag explain \@l;

    $s->stop;
};


subtest 'a down peer is avoided, a backup used only without primaries' => sub {
    my @up = mocks();
    my $s = server(upstream => 'fairgate_prefix;',
                   servers => servers($up[0]->addr . ' down', $up[1]->addr));

    chat($s, 'alice', $_ % 3, "q$_") for 1 .. 6;
    is(scalar($up[0]->served), 0, 'down: nothing');
    is(scalar($up[1]->served), 6, 'the other: everything');
    $s->stop;

    @up = mocks();
    $s = server(upstream => 'fairgate_prefix;',
                servers => servers($up[0]->addr, $up[1]->addr . ' backup'));
    chat($s, 'alice', $_ % 3, "q$_") for 1 .. 6;
    is(scalar($up[1]->served), 0, 'backup: nothing while the primary is up');
    $s->stop;

    @up = mocks();
    $s = server(upstream => 'fairgate_prefix;',
                servers => servers($up[0]->addr . ' max_fails=1',
                                   $up[1]->addr . ' backup'));
    chat($s, 'alice', 4, "$_ q") for 1 .. 2;
    $up[0]->stop;
    chat($s, 'alice', 4, "$_ q") for 3 .. 5;
    is(scalar($up[1]->served), 3,
       'backup: everything once the primary failed');

    my @l = log_lines($s, 5);
    is_deeply([map { $_->[0] } @l], [0, full(4), 0, full(4), full(4)],
              'the backup has its own index')
        or diag explain \@l;
    $s->stop;
};


subtest 'a failed peer: the request retried elsewhere, then avoided' => sub {
    my @up = mocks();
    my $s = server(upstream => 'fairgate_prefix;',
                   servers => servers(map { "$_ max_fails=1 fail_timeout=60s" }
                                      map { $_->addr } @up));

    # group 0's first request goes to the first peer (round robin, idle)
    chat($s, 'alice', 0, 'warm');
    is(scalar($up[0]->served), 1, 'group 0 is on the first peer');

    my $mark = $s->log_mark;
    $up[0]->stop;

    for my $i (1 .. 4) {
        my $res = chat($s, 'bob', 0, "$i after");
        is($res->{status}, 200, "request $i after the peer died: 200");
    }

    is(scalar($up[1]->served), 4, 'the other peer served them');

    my @refused = $s->error_log($mark) =~ /connect\(\) failed/g;
    is(scalar(@refused), 1, 'the dead peer was tried once, then avoided');

    my @l = log_lines($s, 5);
    is_deeply([map { $_->[0] } @l], [0, 0, (full(0)) x 3],
              'matched: none on the last try, then the new peer knows')
        or diag explain \@l;

    $s->stop;
};


# one request of group 5 first, then several at once that the mocks hold
# for a while: where they went, by peer (the first: the group's)

sub burst {
    my ($s, @up) = @_;
    chat($s, 'alice', 5, 'warm');
    my ($home) = grep { scalar $up[$_]->served } 0 .. 1;

    my @res = $s->concurrent([map { {
        method => 'POST', uri => '/v1/chat/completions',
        body => body(5, "burst $_"),
        headers => ['Authorization: Bearer sk-' . $TENANTS[$_ % 3],
                    'Content-Type: application/json', 'X-Mock-Delay: 2',
                    "X-Tag: 5/$TENANTS[$_ % 3]/burst $_"] } } 1 .. 4]);

    is(scalar(grep { ($_->{status} // 0) == 200 } @res), 4, 'burst: 200s');

    return (scalar($up[$home]->served) - 1, scalar($up[1 - $home]->served));
}


subtest 'imbalance: a busy peer gives its group to the other' => sub {
    for my $case ([1, 2, 2], [8, 4, 0]) {
        my ($imbalance, $home, $other) = @$case;
        my @up = mocks();
        my $s = server(upstream => "zone llm_peers 128k;\n"
                                   . "        fairgate_prefix "
                                   . "imbalance=$imbalance;",
                       servers => servers(map { $_->addr } @up),
                       workers => 2);

        is_deeply([burst($s, @up)], [$home, $other],
                  "imbalance=$imbalance: $home on the group's peer, "
                  . "$other on the other");
        $s->stop;
    }
};


subtest 'reload: the index is kept, by peer name' => sub {
    my @up = mocks();
    my %o = (upstream => 'fairgate_prefix;',
             servers => servers(map { $_->addr } @up));
    my $s = server(%o);

    chat($s, 'alice', 1, '1 one');
    $s->reload(http_config => http_config(%o)) or diag $s->last_error;
    chat($s, 'bob', 1, '2 two');

    my @l = log_lines($s, 2);
    is_deeply([map { $_->[0] } @l], [0, full(1)],
              'its own zone (no zone=): kept over a reload')
        or diag explain \@l;
    is_deeply([map { scalar $_->served } @up], [2, 0], 'on the same peer');
    $s->stop;

    # a zone named: it stays when the peers change
    @up = mocks();
    my $third = Fairgate::MockUpstream->new;
    %o = (upstream => 'fairgate_prefix zone=idx:1m;',
          servers => servers(map { $_->addr } @up));
    $s = server(%o);

    chat($s, 'alice', 1, '1 one');                    # first peer
    chat($s, 'alice', 2, '2 two');                    # second peer
    is_deeply([map { scalar $_->served } @up], [1, 1], 'a group on each');

    # reordered, and a new peer first: each group still finds its peer
    $o{servers} = servers($third->addr, $up[1]->addr, $up[0]->addr);
    $s->reload(http_config => http_config(%o)) or diag $s->last_error;
    chat($s, 'carol', 2, '3 three');
    chat($s, 'carol', 1, '4 four');

    is_deeply([map { scalar $_->served } @up, $third], [2, 2, 0],
              'after the reload each group went to its own peer');

    my $mark = $s->log_mark;
    $o{upstream} = 'fairgate_prefix zone=idx:1m block=32;';
    $s->reload(http_config => http_config(%o)) or diag $s->last_error;
    ok($s->wait_for_log(qr/emptied: block changed from 64 to 32/,
                        mark => $mark), 'a new block size empties the index');
    chat($s, 'alice', 1, '5 five');

    @l = log_lines($s, 5);
    is_deeply([map { $_->[0] } @l], [0, 0, full(2), full(1), 0],
              'matched: kept over the reload, none after block changed')
        or diag explain \@l;

    $s->stop;
    $third->stop;
};


subtest 'nginx -t: bad parameters' => sub {
    my @up = map { '127.0.0.1:' . Fairgate::Test::free_port() } 1 .. 2;

    for my $case (
        ['fairgate_prefix block=0;',
         qr/invalid "block=0" in "fairgate_prefix"/],
        ['fairgate_prefix blocks=x;', qr/invalid "blocks=x"/],
        ['fairgate_prefix imbalance=-1;', qr/invalid "imbalance=-1"/],
        ['fairgate_prefix entries=0;', qr/invalid "entries=0"/],
        ['fairgate_prefix block=64 block=32;', qr/given twice/],
        ['fairgate_prefix weight=2;', qr/invalid parameter "weight=2"/],
        ['fairgate_prefix zone=idx;', qr/expected zone=NAME:SIZE/],
        ['fairgate_prefix zone=idx:1k;', qr/invalid zone size "1k"/],
        ['fairgate_prefix block=65536 blocks=4096;', qr/at most 1m/],
        ['fairgate_prefix; fairgate_prefix;', qr/is duplicate/],
        ['fairgate_prefix zone=idx:64k;', qr/too small for/, 600],
    ) {
        my ($directive, $re, $peers) = @$case;
        my $s = Fairgate::Test::Server->new(http_config => <<"END");
    upstream llm {
        $directive
        ${\ servers(map { "127.0.0.1:" . (20000 + $_) } 1 .. ($peers // 2)) }
    }
END
        my ($rc, $out) = $s->test_config;
        isnt($rc, 0, "$directive: nginx -t fails");
        like($out, $re, "$directive: it says why") or diag $out;
    }

    my $s = Fairgate::Test::Server->new(http_config => <<"END");
    upstream a { fairgate_prefix zone=idx:1m; server $up[0]; }
    upstream b { fairgate_prefix zone=idx:1m; server $up[1]; }
END
    my ($rc, $out) = $s->test_config;
    isnt($rc, 0, 'one zone for two upstreams: nginx -t fails');
    like($out, qr/zone "idx" is already the index of upstream "a"/,
         'it says which') or diag $out;

    $s = Fairgate::Test::Server->new(config => <<"END");
    location / { fairgate_prefix; }
END
    ($rc, $out) = $s->test_config;
    like($out, qr/"fairgate_prefix" directive is not allowed here/,
         'only in an upstream block') or diag $out;
};


done_testing;
