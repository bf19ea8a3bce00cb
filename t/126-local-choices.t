#!/usr/bin/env perl

# Local mode's n choices through the gateway, on stories260K:
#
# - completions and chat with n = 3, streamed and not: the choices in
#   order, each with its index and finish_reason; a stream's chunks say
#   their choice's index, each choice has its own finish chunk, and the
#   text of each choice streamed is that of the same request not streamed;
# - seeded: n different answers, the same again for the same request, and
#   choice 0 is the answer of n = 1 with the seed;
# - stop strings per choice;
# - usage: the prompt once and every choice's tokens, which is what the
#   zone's token counters are charged and the access log says;
# - the prompt computed once: the engine's prefill counts the prompt once
#   and, for each other choice, its last partial block;
# - a client that leaves cancels all n sequences, their blocks all free;
# - best_of above n: the candidates are those of n = best_of, and the n
#   returned those of the highest cumulative log-probability (each
#   candidate's, read again as a request of one choice with its seed and
#   logprobs), best first; usage counts every candidate's tokens;
# - logprobs per choice: each choice's tokens spell its text, streamed
#   and not alike (completions' text_offset each choice's own);
# - echo: each choice's text begins with the prompt's, streamed and not;
# - n 0, 17 and 18, best_of below n or streamed: 400s.  (Tool calls per
#   choice: t/114.)

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use IO::Select;
use IO::Socket::INET;
use JSON::PP ();
use List::Util qw(sum);
use Math::BigInt;
use Test::More;
use Time::HiRes ();

use Fairgate::Test qw(:DEFAULT gateway);
use Fairgate::Engine qw(parse_sse wait_attached);

plan skip_all => "no $Fairgate::Engine::MODEL"
    unless -f $Fairgate::Engine::MODEL;

my $J = JSON::PP->new->canonical;
my $T = JSON::PP::true;

# stories260K's ids of "Once upon a time" with BOS
my @PROMPT = (1, 403, 407, 261, 378);


sub post {
    my ($s, $uri, $body) = @_;
    my $r = $s->post($uri, $J->encode($body),
                     headers => ['Content-Type: application/json']);
    $r->{json} = eval { $J->decode($r->{body}) } if $r->{body} !~ /^data:/;
    return $r;
}

sub completion {
    my ($s, %o) = @_;
    return post($s, '/v1/completions',
                { model => 'stories260K', prompt => [@PROMPT], %o });
}

sub chat {
    my ($s, %o) = @_;
    return post($s, '/v1/chat/completions',
                { model => 'stories260K',
                  messages => [{ role => 'user', content => 'Once upon' }],
                  %o });
}

sub status { $J->decode($_[0]->get('/status')->{body}) }

sub wait_until {
    my ($s, $what, $cond) = @_;
    my $deadline = Time::HiRes::time() + 10;
    my $st;
    while (Time::HiRes::time() < $deadline) {
        $st = status($s)->{engines}[0];
        return $st if $cond->($st);
        Time::HiRes::sleep(0.02);
    }
    diag("$what: " . $J->encode($st));
    return undef;
}


my $e = Fairgate::Engine->new(backend => 'cpu');
$e->start;
my $s = gateway(engines => [['stories', $e, 'dead_after=1s']], workers => 1,
                http => "    log_format fg '\$fairgate_tokens_in|"
                        . "\$fairgate_tokens_out|\$fairgate_usage';\n",
                server => "    access_log logs/fg.log fg;\n");
ok(wait_attached($s), 'the worker attached to the engine');


subtest 'completions, n = 3, seeded, not streamed' => sub {
    my %req = (n => 3, max_tokens => 12, temperature => 1, seed => 42,
               ignore_eos => $T);
    my $r = completion($s, %req);
    is($r->{status}, 200, 'answered 200');
    my @c = @{ $r->{json}{choices} // [] };
    is(scalar @c, 3, 'three choices');
    is_deeply([map { $_->{index} } @c], [0, 1, 2], 'in order of index');
    is_deeply([map { $_->{finish_reason} } @c], [('length') x 3],
              'each its finish_reason');
    my %texts = map { $_->{text} => 1 } @c;
    cmp_ok(scalar keys %texts, '>=', 2, 'different answers');

    my $u = $r->{json}{usage};
    is($u->{prompt_tokens}, scalar @PROMPT, 'usage: the prompt once');
    is($u->{completion_tokens}, 36, 'usage: every choice\'s tokens');
    is($u->{total_tokens}, 36 + @PROMPT, 'total');

    my $again = completion($s, %req);
    is_deeply([map { $_->{text} } @{ $again->{json}{choices} }],
              [map { $_->{text} } @c], 'the same seed: the same choices');

    my $one = completion($s, %req, n => 1);
    is($one->{json}{choices}[0]{text}, $c[0]{text},
       'choice 0 is the answer of n = 1 with the seed');
};


subtest 'chat, n = 3, streamed and not' => sub {
    my %req = (n => 3, max_tokens => 10, temperature => 1, seed => 7,
               ignore_eos => $T);
    my $body = chat($s, %req);
    is($body->{status}, 200, 'not streamed: 200');
    my @want = map { $_->{message}{content} }
               @{ $body->{json}{choices} // [] };
    is(scalar @want, 3, 'three messages');

    my $r = chat($s, %req, stream => $T,
                 stream_options => { include_usage => $T });
    is($r->{status}, 200, 'streamed: 200');
    my @ev = eval { parse_sse($r->{body}) };
    is($@, '', 'a well-formed stream');
    pop @ev;
    my $usage = pop @ev;
    my (%role, %text, %fin, $bad);
    for my $ev (@ev) {
        my $c = $ev->{choices}[0];
        my $i = $c->{index};
        $bad++ unless defined $i && $i =~ /^[0-2]$/
                      && @{ $ev->{choices} } == 1;
        next unless defined $i;
        $role{$i}++ if defined $c->{delta}{role};
        $text{$i} .= $c->{delta}{content} // '';
        $fin{$i}++ if defined $c->{finish_reason};
    }
    ok(!$bad, 'every chunk has one choice with its index');
    is_deeply(\%role, { 0 => 1, 1 => 1, 2 => 1 }, 'one role chunk each');
    is_deeply(\%fin, { 0 => 1, 1 => 1, 2 => 1 }, 'one finish chunk each');
    is_deeply([map { $text{$_} } 0 .. 2], \@want,
              'each choice streamed is its text not streamed');
    is($usage->{usage}{completion_tokens}, 30, 'usage chunk: 3 x 10');
    is_deeply($usage->{choices}, [], '... with no choice');
};


subtest 'stop strings per choice' => sub {
    my %req = (max_tokens => 30, temperature => 0, stop => [' girl']);
    my $one = completion($s, %req);
    my $r = completion($s, %req, n => 2);
    is($r->{status}, 200, 'answered 200');
    my @c = @{ $r->{json}{choices} };
    is_deeply([map { $_->{text} } @c],
              [($one->{json}{choices}[0]{text}) x 2],
              'greedy: each choice stops where n = 1 does');
    is_deeply([map { $_->{finish_reason} } @c], ['stop', 'stop'],
              'finish_reason stop each');
    is($r->{json}{usage}{completion_tokens},
       2 * $one->{json}{usage}{completion_tokens},
       'usage: the tokens of both, up to their stop');
};


subtest 'the zone charges the prompt once and every choice' => sub {
    my $before = status($s)->{zones}[0];
    my $r = completion($s, n => 4, max_tokens => 6, temperature => 1,
                       seed => 3, ignore_eos => $T);
    is($r->{json}{usage}{completion_tokens}, 24, 'usage: 4 x 6');
    my $after = status($s)->{zones}[0];
    is($after->{tokens_out} - $before->{tokens_out}, 24,
       'tokens_out: every choice\'s tokens');
    is($after->{tokens_in} - $before->{tokens_in}, scalar @PROMPT,
       'tokens_in: the prompt once');

    # the access log's line is written as the request ends, before the
    # one worker serves the next request
    completion($s, max_tokens => 1);
    open my $fh, '<', $s->prefix . '/logs/fg.log' or die "fg.log: $!\n";
    my @lines = grep { /^5\|24\|/ } <$fh>;
    close $fh;
    is(scalar @lines, 1, 'the access log: 5 tokens in, 24 out');
    like($lines[0] // '', qr/^5\|24\|reported$/,
         '... as the engine reported them');
};


subtest 'the prompt is computed once' => sub {
    # a prompt no earlier request began with: 40 tokens, 2 full blocks
    my @p = (1, map { 300 + $_ } 1 .. 39);
    my $before = status($s)->{engines}[0]{load};
    my $r = post($s, '/v1/completions',
                 { model => 'stories260K', prompt => \@p, n => 3,
                   max_tokens => 4, ignore_eos => $T });
    is($r->{status}, 200, 'answered 200');
    my $after = status($s)->{engines}[0]{load};
    is($after->{prefill_tokens} - $before->{prefill_tokens}, 40 + 2 * 8,
       'prefill: the prompt once, and each other choice\'s partial block');
    is($r->{json}{usage}{prompt_tokens_details}{cached_tokens}, 0,
       'no cached tokens: the choices sharing the prompt is no cache hit');
};


# fg_batch_choice_seed(): the seed of choice c, as an int64 (the API's)
sub choice_seed {
    my ($seed, $c) = @_;
    return $seed if $c == 0;
    my $m = Math::BigInt->new(2)->bpow(64);
    my $z = (Math::BigInt->new($seed) + $c
             * Math::BigInt->from_hex('9e3779b97f4a7c15')) % $m;
    $z = (($z ^ ($z >> 30)) * Math::BigInt->from_hex('bf58476d1ce4e5b9')) % $m;
    $z = (($z ^ ($z >> 27)) * Math::BigInt->from_hex('94d049bb133111eb')) % $m;
    $z = $z ^ ($z >> 31);
    $z -= $m if $z >= Math::BigInt->new(2)->bpow(63);
    return "$z";
}

subtest 'best_of: the n best candidates by cumulative log-probability' => sub {
    my %req = (max_tokens => 8, temperature => 1, seed => 5,
               ignore_eos => $T);
    my $all = completion($s, %req, n => 4);
    my @cand = map { $_->{text} } @{ $all->{json}{choices} };
    is(scalar @cand, 4, 'the four candidates, as n = 4');

    my (@score, $same);
    for my $c (0 .. 3) {
        my $body = $J->encode({ model => 'stories260K', prompt => [@PROMPT],
                                %req, logprobs => 1, seed => 0 });
        my $seed = choice_seed(5, $c);
        $body =~ s/"seed":0/"seed":$seed/;
        my $r = $s->post('/v1/completions', $body,
                         headers => ['Content-Type: application/json']);
        my $j = $J->decode($r->{body});
        $same++ if $j->{choices}[0]{text} eq $cand[$c];
        push @score, sum(@{ $j->{choices}[0]{logprobs}{token_logprobs} });
    }
    is($same, 4, 'candidate c is the request of its seed alone');
    my @rank = sort { $score[$b] <=> $score[$a] || $a <=> $b } 0 .. 3;
    note("scores @score, ranked @rank");

    my $r = completion($s, %req, n => 2, best_of => 4);
    is($r->{status}, 200, 'n 2 of best_of 4: answered 200');
    is_deeply([map { $_->{text} } @{ $r->{json}{choices} }],
              [@cand[@rank[0, 1]]],
              'the two of the highest cumulative log-probability, best '
              . 'first');
    is_deeply([map { $_->{index} } @{ $r->{json}{choices} }], [0, 1],
              'indexed 0 and 1');
    is($r->{json}{usage}{completion_tokens}, 32,
       'usage: every candidate\'s tokens');

    my $one = completion($s, %req, best_of => 4);
    is_deeply([map { $_->{text} } @{ $one->{json}{choices} }],
              [$cand[$rank[0]]], 'n 1 of best_of 4: the best one');

    my $lp = completion($s, %req, n => 2, best_of => 4, logprobs => 1);
    my @got = map { sum(@{ $_->{logprobs}{token_logprobs} }) }
              @{ $lp->{json}{choices} };
    ok(@got == 2 && abs($got[0] - $score[$rank[0]]) < 1e-3
       && abs($got[1] - $score[$rank[1]]) < 1e-3,
       'with logprobs: each returned candidate\'s own') or diag("@got");
};


subtest 'logprobs per choice, streamed and not' => sub {
    my %req = (n => 3, max_tokens => 6, temperature => 1, seed => 9,
               ignore_eos => $T, logprobs => 2);
    my $r = completion($s, %req);
    is($r->{status}, 200, 'completions: answered 200');
    my @c = @{ $r->{json}{choices} };
    my ($spell, $off) = (0, 0);
    for my $c (@c) {
        my $lp = $c->{logprobs};
        $spell++ if join('', @{ $lp->{tokens} }) eq $c->{text}
                    && @{ $lp->{token_logprobs} } == 6;
        $off++ if $lp->{text_offset}[0] == 0
                  && $lp->{text_offset}[5]
                     == length(join '', @{ $lp->{tokens} }[0 .. 4]);
    }
    is($spell, 3, 'each choice\'s tokens spell its text');
    is($off, 3, 'each choice\'s text_offset its own');

    my $st = completion($s, %req, stream => $T);
    my @ev = eval { parse_sse($st->{body}) };
    pop @ev;
    my %tok;
    for my $ev (@ev) {
        my $c = $ev->{choices}[0];
        push @{ $tok{ $c->{index} } }, @{ $c->{logprobs}{tokens} // [] };
    }
    is_deeply([map { $tok{$_} } 0 .. 2],
              [map { $_->{logprobs}{tokens} } @c],
              'streamed: the same tokens under each index');

    my $ch = chat($s, n => 2, max_tokens => 5, temperature => 1, seed => 4,
                  ignore_eos => $T, logprobs => $T, top_logprobs => 2);
    is($ch->{status}, 200, 'chat: answered 200');
    my $ok = 0;
    for my $c (@{ $ch->{json}{choices} }) {
        my $content = $c->{logprobs}{content};
        $ok++ if @$content == 5
                 && join('', map { $_->{token} } @$content)
                    eq $c->{message}{content}
                 && !grep { @{ $_->{top_logprobs} } != 2 } @$content;
    }
    is($ok, 2, 'chat: each choice\'s logprobs.content spells its text');
};


subtest 'echo: each choice begins with the prompt' => sub {
    my %req = (prompt => 'Once upon a time', n => 2, max_tokens => 4,
               temperature => 1, seed => 2, ignore_eos => $T);
    my $r = post($s, '/v1/completions', { model => 'stories260K', %req });
    my $e = post($s, '/v1/completions',
                 { model => 'stories260K', %req, echo => $T });
    is($e->{status}, 200, 'answered 200');
    is_deeply([map { $_->{text} } @{ $e->{json}{choices} }],
              [map { "Once upon a time$_->{text}" }
               @{ $r->{json}{choices} }],
              'each: the prompt, then its own text');
    is($e->{json}{usage}{completion_tokens},
       $r->{json}{usage}{completion_tokens}, 'usage: the same tokens');

    my $st = post($s, '/v1/completions',
                  { model => 'stories260K', %req, echo => $T, stream => $T });
    my @ev = eval { parse_sse($st->{body}) };
    pop @ev;
    my %text;
    $text{ $_->{choices}[0]{index} } .= $_->{choices}[0]{text} for @ev;
    is_deeply([@text{0, 1}], [map { $_->{text} } @{ $e->{json}{choices} }],
              'streamed: the same under each index');
};


subtest 'errors' => sub {
    for my $case ([{ n => 0 }, 'n'], [{ n => 17 }, 'n'],
                  [{ n => 3, best_of => 2 }, 'best_of'],
                  [{ n => 2, best_of => 3, stream => $T }, 'best_of'],
                  [{ n => 18 }, 'n'])
    {
        my ($o, $param) = @$case;
        my $r = completion($s, max_tokens => 2, %$o);
        is($r->{status}, 400, $J->encode($o) . ': 400');
        is($r->{json}{error}{param}, $param, '... naming ' . $param);
    }
};

is($s->stop, 0, 'nginx exits cleanly');
unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');
$e->stop;


subtest 'a client that leaves cancels every choice' => sub {
    # 5 ms a token: a stream of 2000 tokens runs for 10 s
    my $slow = Fairgate::Engine->new(backend => 'sim',
                                     args => ['--step-model',
                                              'linear:0.0001,0.005']);
    $slow->start;
    my $g = gateway(engines => [['stories', $slow, 'dead_after=500ms']],
                    workers => 1);
    ok(wait_attached($g), 'attached');
    my $before = status($g)->{engines}[0]{load};

    my $body = $J->encode({ model => 'stories260K', max_tokens => 2000,
                            n => 3, stream => $T,
                            messages => [{ role => 'user',
                                           content => 'Go on' }] });
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                     PeerPort => $g->port, Proto => 'tcp')
        or die "connect: $!\n";
    print {$sock} "POST /v1/chat/completions HTTP/1.0\r\nHost: x\r\n"
                  . "Content-Type: application/json\r\n"
                  . "Content-Length: " . length($body) . "\r\n\r\n$body";
    my $raw = '';
    my $sel = IO::Select->new($sock);
    my $deadline = Time::HiRes::time() + 10;
    while (Time::HiRes::time() < $deadline
           && $raw !~ /"index":2,"delta":\{"content":"[^"]/)
    {
        last unless $sel->can_read(1);
        sysread($sock, $raw, 65536, length $raw) or last;
    }
    like($raw, qr/"index":2,"delta":\{"content":"[^"]/,
         'the third choice streams');
    ok(wait_until($g, 'three running', sub { $_[0]{load}{running} == 3 }),
       'the engine runs three sequences');

    close $sock;

    ok(wait_until($g, 'freed', sub {
           $_[0]{load}{running} == 0
           && $_[0]{load}{kv_free} == $_[0]{load}{kv_blocks}
           && $_[0]{load}{cancelled} == $before->{cancelled} + 3 }),
       'all three cancelled, every block free again');

    is($g->stop, 0, 'nginx exits cleanly');
    $slow->stop;
};

done_testing();
