#!/usr/bin/env perl

# Local mode's sampling extensions and log-probabilities through the
# gateway, on stories260K and the cpu backend:
#
# - logprobs: every generated token's log-probability and the best
#   alternatives, against the log-softmax (in double, here) of the logits
#   that the cpu backend gives for the same tokens outside the engine
#   (build/t/fg_engine_drive's "logits"), in OpenAI's shapes for chat and
#   completions, streamed and not;
# - frequency, presence and repetition penalties and logit_bias: greedy
#   continuations equal to the argmax of the reference logits adjusted by
#   OpenAI's and vLLM's formulas here, token by token; the log-probabilities
#   stay the model's own (before the adjustments);
# - top_k 1 and min_p 1 keep the best token alone: greedy text at any
#   temperature;
# - echo: the prompt's text before the completion; with logprobs, the
#   prompt's tokens' log-probabilities first (the first one's null), each
#   against the reference log-softmax at its position, streamed (in the
#   first chunk) and not, and with max_tokens 0 (scoring a text);
# - out-of-range values: OpenAI's 400s, naming the parameter.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use IPC::Open2 qw(open2);
use JSON::PP ();
use List::Util qw(max sum);
use Test::More;

use Fairgate::Test qw(:DEFAULT gateway);
use Fairgate::Engine qw(parse_sse wait_attached);

my $DRIVE = "$FindBin::Bin/../build/t/fg_engine_drive";

plan skip_all => "no $Fairgate::Engine::MODEL"
    unless -f $Fairgate::Engine::MODEL;
plan skip_all => "no $DRIVE (make)" unless -x $DRIVE;

my $J = JSON::PP->new->canonical;
my $T = JSON::PP::true;

# stories260K's ids of "Once upon a time" with BOS
my @PROMPT = (1, 403, 407, 261, 378);


# the reference: the model's next-token logits after a prompt of ids
my ($ref_out, $ref_in);
my $ref_pid = open2($ref_out, $ref_in, $DRIVE, $Fairgate::Engine::MODEL, 1);

# the prompt computed as the engine computed it: in one step (a short
# prompt), token after token (a greedy run's, decoded), or in steps of 64
# with every row's logits kept (a long one's log-probabilities: row K's,
# after K + 1 ids): the rows of a step of many go through sgemm, whose
# bits for a row depend on its place in the step, so that the same steps
# on both sides let a near tie fall the same way, and agree to 1e-6
sub logits { ask_logits('logits 0', @_) }
sub logits_decoded { ask_logits('logits 1', @_) }
sub logits_row { my $k = shift; ask_logits("rowlogits $k 64", @_) }

sub ask_logits {
    my ($cmd, @ids) = @_;
    print {$ref_in} "$cmd @ids\n";
    my $line = <$ref_out>;
    die "fg_engine_drive: no answer\n" unless defined $line;
    my $j = $J->decode($line);
    die "fg_engine_drive: $j->{error}\n" if $j->{error};
    return $j->{logits};
}

sub log_softmax {
    my ($l) = @_;
    my $m = max(@$l);
    my $lse = $m + log(sum(map { exp($_ - $m) } @$l));
    return [map { $_ - $lse } @$l];
}

# the index of the largest, the lowest on ties
sub argmax {
    my ($l) = @_;
    my $b = 0;
    $l->[$_] > $l->[$b] and $b = $_ for 1 .. $#$l;
    return $b;
}

# n greedy ids after the prompt with the logits adjusted as the engine
# does: bias, repetition over prompt and output, then frequency and
# presence over the output
sub reference_greedy {
    my ($n, %o) = @_;
    my @ids = @PROMPT;
    my (@out, @lp);

    for (1 .. $n) {
        my $raw = logits_decoded(@ids);
        my @l = @$raw;
        $l[$_] += $o{bias}{$_} for keys %{ $o{bias} // {} };

        if ($o{repetition}) {
            my %seen = map { $_ => 1 } @ids;
            $l[$_] = $l[$_] > 0 ? $l[$_] / $o{repetition}
                                : $l[$_] * $o{repetition} for keys %seen;
        }

        my %count;
        $count{$_}++ for @out;
        $l[$_] -= $count{$_} * ($o{frequency} // 0) + ($o{presence} // 0)
            for keys %count;

        my $t = argmax(\@l);
        push @out, $t;
        push @lp, log_softmax($raw);
        push @ids, $t;
    }

    return (\@out, \@lp);
}


sub server {
    my ($engine) = @_;
    return gateway(engines => [['stories', $engine, 'dead_after=1s']],
                   workers => 1);
}

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
                { model => 'stories260K', prompt => [@PROMPT],
                  temperature => 0, %o });
}

# the n best of a log-softmax: [id, logprob] pairs, best first
sub best {
    my ($lp, $n) = @_;
    my @ids = sort { $lp->[$b] <=> $lp->[$a] || $a <=> $b } 0 .. $#$lp;
    return map { [$_, $lp->[$_]] } @ids[0 .. $n - 1];
}

sub near { abs($_[0] - $_[1]) <= 2e-4 }


# one thread, as the reference: how threads split a step's products
# changes a row's rounding (1e-4 in a log-probability here)
my $e = Fairgate::Engine->new(backend => 'cpu', args => ['--threads', 1]);
$e->start;
my $s = server($e);
ok(wait_attached($s), 'the worker attached to the engine');


subtest 'completions: logprobs against the reference, not streamed' => sub {
    my ($ids, $lps) = reference_greedy(8);
    my $r = completion($s, max_tokens => 8, logprobs => 5);
    is($r->{status}, 200, 'answered 200');
    my $c = $r->{json}{choices}[0];
    my $lp = $c->{logprobs};
    is(ref $lp, 'HASH', 'choices[0].logprobs is an object');
    is(scalar @{ $lp->{tokens} }, 8, 'one token per generated token');
    is(join('', @{ $lp->{tokens} }), $c->{text},
       'the tokens spell the text');

    my ($bad_lp, $bad_top, $off) = (0, 0, 0);
    for my $i (0 .. 7) {
        my $want = $lps->[$i][$ids->[$i]];
        $bad_lp++ unless near($lp->{token_logprobs}[$i], $want);
        my @best = best($lps->[$i], 5);
        my %map = %{ $lp->{top_logprobs}[$i] };
        my @got = (sort { $b <=> $a } values %map)[0 .. 4];
        $bad_top++ unless keys %map >= 5 && keys %map <= 6
                          && !grep { !near($got[$_], $best[$_][1]) } 0 .. 4;
        $bad_top++ unless near($map{ $lp->{tokens}[$i] }, $want);
        $off++ unless $lp->{text_offset}[$i]
                      == length(join '', @{ $lp->{tokens} }[0 .. $i - 1]);
    }
    is($bad_lp, 0, 'token_logprobs: the log-softmax of the model\'s logits');
    is($bad_top, 0, 'top_logprobs: the 5 best, their values');
    is($off, 0, 'text_offset: where each token starts');
    is($r->{json}{usage}{completion_tokens}, 8, 'usage unchanged');
};


subtest 'chat: logprobs and top_logprobs, streamed and not' => sub {
    my %req = (model => 'stories260K', max_tokens => 10, temperature => 0,
               logprobs => $T, top_logprobs => 3,
               messages => [{ role => 'user', content => 'Once upon' }]);
    my $r = post($s, '/v1/chat/completions', \%req);
    is($r->{status}, 200, 'not streamed: 200');
    my $c = $r->{json}{choices}[0];
    my $content = $c->{logprobs}{content};
    is(ref $content, 'ARRAY', 'logprobs.content is a list');
    ok(exists $c->{logprobs}{refusal}, '... beside refusal');
    is(scalar @$content, $r->{json}{usage}{completion_tokens}
                         - ($c->{finish_reason} eq 'stop' ? 1 : 0),
       'one entry per token of text');
    my @bad;
    for my $t (@$content) {
        push @bad, 'shape' unless defined $t->{token} && !ref $t->{token}
                                  && ref $t->{bytes} eq 'ARRAY'
                                  && ref $t->{top_logprobs} eq 'ARRAY';
        push @bad, 'bytes' unless join('', map { chr } @{ $t->{bytes} })
                                  eq do { my $x = $t->{token};
                                          utf8::encode($x); $x };
        push @bad, 'top' unless @{ $t->{top_logprobs} } == 3;
        push @bad, 'greedy' unless near($t->{logprob},
                                        $t->{top_logprobs}[0]{logprob});
        push @bad, 'order' unless $t->{top_logprobs}[0]{logprob}
                                  >= $t->{top_logprobs}[2]{logprob};
        push @bad, 'negative' unless $t->{logprob} <= 0;
    }
    is("@bad", '', 'each: token, logprob, bytes, 3 top_logprobs, greedy');
    is(join('', map { $_->{token} } @$content), $c->{message}{content},
       'the tokens spell the content');

    $r = post($s, '/v1/chat/completions', { %req, stream => $T });
    is($r->{status}, 200, 'streamed: 200');
    my @ev = eval { parse_sse($r->{body}) };
    ok(@ev, 'the stream parses') or diag($@);
    pop @ev;
    my @lp = map { @{ $_->{choices}[0]{logprobs}{content} } }
             grep { @{ $_->{choices} } && $_->{choices}[0]{logprobs} } @ev;
    is($J->encode(\@lp), $J->encode($content),
       'the same entries as the body, one chunk each');
    my ($role) = grep { @{ $_->{choices} } } @ev;
    ok(!defined $role->{choices}[0]{logprobs}, 'the role chunk has none');
    ok(!defined $ev[-1]{choices}[0]{logprobs}, 'the finish chunk has none');
};


subtest 'completions stream: one token a chunk, offsets running on' => sub {
    my $r = completion($s, max_tokens => 6, logprobs => 2, stream => $T);
    is($r->{status}, 200, 'answered 200');
    my @ev = eval { parse_sse($r->{body}) };
    pop @ev;
    my @c = grep { $_->{choices}[0]{logprobs} } @ev;
    is(scalar @c, 6, 'six chunks with logprobs');
    my ($bad, $text) = (0, '');
    for my $ch (map { $_->{choices}[0] } @c) {
        my $lp = $ch->{logprobs};
        $bad++ unless @{ $lp->{tokens} } == 1
                      && $lp->{text_offset}[0] == length($text)
                      && keys %{ $lp->{top_logprobs}[0] } <= 3
                      && exists $lp->{top_logprobs}[0]{$lp->{tokens}[0]};
        $text .= $lp->{tokens}[0];
    }
    is($bad, 0, 'each: one token, its offset, 2 alternatives and itself');
    my ($ids, $lps) = reference_greedy(6);
    ok(near($c[5]{choices}[0]{logprobs}{token_logprobs}[0],
            $lps->[5][$ids->[5]]), 'the sixth against the reference');
};


subtest 'penalties and logit_bias: the reference\'s greedy choices' => sub {
    for my $case (['frequency_penalty', { frequency => 2 }],
                  ['presence_penalty', { presence => 2 }],
                  ['repetition_penalty', { repetition => 1.8 }],
                  ['frequency and presence', { frequency => 0.7,
                                               presence => -0.4 }])
    {
        my ($name, $o) = @$case;
        my ($ids, $lps) = reference_greedy(48, %$o);
        my ($plain) = reference_greedy(48);
        my %body = (max_tokens => 48, logprobs => 0);
        $body{frequency_penalty} = $o->{frequency} if $o->{frequency};
        $body{presence_penalty} = $o->{presence} if $o->{presence};
        $body{repetition_penalty} = $o->{repetition} if $o->{repetition};
        my $r = completion($s, %body);
        is($r->{status}, 200, "$name: 200");
        my $lp = $r->{json}{choices}[0]{logprobs};
        my @want = map { $lps->[$_][$ids->[$_]] } 0 .. 47;
        my $n = grep { near($lp->{token_logprobs}[$_], $want[$_]) } 0 .. 47;
        is($n, 48, "$name: every token the reference's, raw logprobs");
        isnt("@$ids", "@$plain", "$name: ... which the penalty changed");
    }

    my ($ids, $lps) = reference_greedy(4, bias => { 300 => 100 });
    is("@$ids", '300 300 300 300', 'bias +100: the biased token always');
    my $r = completion($s, max_tokens => 4, logprobs => 1,
                       logit_bias => { 300 => 100 });
    my $lp = $r->{json}{choices}[0]{logprobs};
    my $n = grep { near($lp->{token_logprobs}[$_], $lps->[$_][300]) } 0 .. 3;
    is($n, 4, 'logit_bias: the same tokens, their logprobs the model\'s');

    my ($plain) = reference_greedy(1);
    ($ids) = reference_greedy(3, bias => { $plain->[0] => -100 });
    $r = completion($s, max_tokens => 3, logprobs => 0,
                    logit_bias => { $plain->[0] => -100 });
    my @got = @{ $r->{json}{choices}[0]{logprobs}{token_logprobs} };
    ok($ids->[0] != $plain->[0], 'bias -100 bans the greedy token');
    is(scalar @got, 3, '... and the engine took another');
};


subtest 'top_k 1 and min_p 1: the best token alone, at any temperature' => sub {
    my $greedy = completion($s, max_tokens => 12)->{json}{choices}[0]{text};
    for my $o ({ top_k => 1 }, { min_p => 1 }) {
        my $r = completion($s, max_tokens => 12, temperature => 1.5,
                           seed => 7, %$o);
        is($r->{json}{choices}[0]{text}, $greedy,
           (keys %$o)[0] . ': the greedy text');
    }
    my $a = completion($s, max_tokens => 12, temperature => 1.5, seed => 7,
                       min_p => 0.05, top_k => 40, frequency_penalty => 0.5);
    my $b = completion($s, max_tokens => 12, temperature => 1.5, seed => 7,
                       min_p => 0.05, top_k => 40, frequency_penalty => 0.5);
    is($a->{json}{choices}[0]{text}, $b->{json}{choices}[0]{text},
       'a seed repeats its text with the adjustments');
};


subtest 'echo: the prompt before the completion, streamed and not' => sub {
    my %req = (model => 'stories260K', prompt => 'Once upon a time',
               max_tokens => 6, temperature => 0);
    my $plain = post($s, '/v1/completions', \%req)->{json}{choices}[0];
    my $r = post($s, '/v1/completions', { %req, echo => $T });
    is($r->{status}, 200, 'answered 200');
    is($r->{json}{choices}[0]{text}, "Once upon a time$plain->{text}",
       'the prompt, then the same completion');
    is($r->{json}{usage}{completion_tokens}, 6, 'usage: the same tokens');

    $r = post($s, '/v1/completions', { %req, echo => $T, stream => $T });
    my @ev = eval { parse_sse($r->{body}) };
    pop @ev;
    is($ev[0]{choices}[0]{text}, 'Once upon a time', 'streamed: first');
    is(join('', map { $_->{choices}[0]{text} } @ev),
       "Once upon a time$plain->{text}", '... then the completion');

    $r = completion($s, max_tokens => 4, echo => $T);
    like($r->{json}{choices}[0]{text}, qr/^ ?Once upon a time/,
         'token ids: their text');
};


# the prompt's entries of an echo: null first, then each position's token
# against the reference log-softmax after the tokens before it, its top
# n; 0 when all agree, else what differs
sub prompt_lp_bad {
    my ($lp, $n) = @_;
    my @bad;
    push @bad, 'first' if defined $lp->{token_logprobs}[0]
                          || defined $lp->{top_logprobs}[0];
    for my $i (1 .. $#PROMPT) {
        my $ref = log_softmax(logits(@PROMPT[0 .. $i - 1]));
        push @bad, "lp$i" unless near($lp->{token_logprobs}[$i],
                                      $ref->[$PROMPT[$i]]);
        my @best = best($ref, $n);
        my @got = sort { $b <=> $a } values %{ $lp->{top_logprobs}[$i] };
        push @bad, "top$i" if grep { !near($got[$_], $best[$_][1]) }
                              0 .. $n - 1;
    }
    my $off = 0;
    for my $i (0 .. $#{ $lp->{tokens} }) {
        push @bad, "off$i" unless $lp->{text_offset}[$i] == $off;
        $off += length $lp->{tokens}[$i];
    }
    return "@bad";
}


subtest 'echo with logprobs: the prompt\'s, then the completion\'s' => sub {
    my $plain = completion($s, max_tokens => 4, logprobs => 3);
    my $r = completion($s, max_tokens => 4, logprobs => 3, echo => $T);
    is($r->{status}, 200, 'answered 200');
    my $lp = $r->{json}{choices}[0]{logprobs};
    my $want = $plain->{json}{choices}[0]{logprobs};
    is(scalar @{ $lp->{tokens} }, @PROMPT + 4, 'the prompt\'s, then four');
    is(prompt_lp_bad($lp, 3), '',
       'null first, each position against the reference, offsets from 0');
    is_deeply([@{ $lp->{tokens} }[@PROMPT .. $#{ $lp->{tokens} }]],
              $want->{tokens}, 'then the completion\'s tokens');
    ok(!grep({ !near($lp->{token_logprobs}[@PROMPT + $_],
                     $want->{token_logprobs}[$_]) } 0 .. 3),
       '... and their log-probabilities');
    is($r->{json}{usage}{completion_tokens}, 4, 'usage: the completion');

    $r = completion($s, max_tokens => 4, logprobs => 3, echo => $T,
                    stream => $T);
    my @ev = eval { parse_sse($r->{body}) };
    pop @ev;
    my $first = $ev[0]{choices}[0];
    like($first->{text}, qr/Once upon a time/, 'streamed: the echo first');
    is(scalar @{ $first->{logprobs}{tokens} }, scalar @PROMPT,
       '... with the prompt\'s logprobs');
    my @all = map { @{ $_->{choices}[0]{logprobs}{tokens} } }
              grep { $_->{choices}[0]{logprobs} } @ev;
    is_deeply(\@all, $lp->{tokens}, '... then the same tokens');
    is(prompt_lp_bad($first->{logprobs}, 3), '', '... the same values');

    $r = completion($s, max_tokens => 0, logprobs => 2, echo => $T);
    is($r->{status}, 200, 'max_tokens 0 with echo: answered 200');
    $lp = $r->{json}{choices}[0]{logprobs};
    is(scalar @{ $lp->{tokens} }, scalar @PROMPT, 'the prompt\'s alone');
    is(prompt_lp_bad($lp, 2), '', '... against the reference');
    like($r->{json}{choices}[0]{text}, qr/^ ?Once upon a time$/,
         '... the text the prompt\'s');
    is($r->{json}{usage}{completion_tokens}, 0, '... no completion tokens');

    # OpenAI repeats the prompt's entries in each choice
    for my $o ([n => 2, seed => 7, temperature => 1], [best_of => 2]) {
        $r = completion($s, max_tokens => 3, logprobs => 2, echo => $T, @$o);
        my @c = @{ $r->{json}{choices} // [] };
        my @bad = grep { prompt_lp_bad($_->{logprobs}, 2) ne ''
                         || @{ $_->{logprobs}{tokens} } != @PROMPT + 3 } @c;
        ok(@c && !@bad, "@$o[0, 1]: each choice the prompt's, then its own");
    }
};


# the engine computes a long prompt in chunks of 64 positions' logits; a
# second time its blocks are in the prefix cache, which has no logits
subtest 'echo with logprobs: a long prompt in chunks, twice' => sub {
    my @long = (1, map { $PROMPT[1 + $_ % 4] } 0 .. 98);
    my @r = map { completion($s, prompt => [@long], max_tokens => 1,
                             logprobs => 1, echo => $T) } 1 .. 2;
    my $lp = $r[0]{json}{choices}[0]{logprobs};
    is(scalar @{ $lp->{tokens} }, @long + 1, 'every position, then one');
    my @bad;
    for my $i (1, 63, 64, 65, 99) {
        my $ref = log_softmax(logits_row($i - 1, @long));
        push @bad, $i unless near($lp->{token_logprobs}[$i],
                                  $ref->[$long[$i]]);
    }
    is("@bad", '', 'across the chunks\' edges, against the reference');
    my $again = $r[1]{json}{choices}[0]{logprobs}{token_logprobs};
    is(scalar(grep { !near($lp->{token_logprobs}[$_], $again->[$_]) }
                   1 .. $#long), 0, 'the second time the same, all of them');
};


subtest 'out-of-range values: 400 naming the parameter' => sub {
    my @cases = (
        [{ frequency_penalty => 2.5 }, 'frequency_penalty'],
        [{ presence_penalty => -3 }, 'presence_penalty'],
        [{ repetition_penalty => 0 }, 'repetition_penalty'],
        [{ min_p => 2 }, 'min_p'],
        [{ top_k => -2 }, 'top_k'],
        [{ logprobs => 6 }, 'logprobs'],
        [{ logit_bias => { 1 => 101 } }, 'logit_bias'],
        [{ logit_bias => { 512 => 1 } }, 'logit_bias', qr/512/],
        [{ logit_bias => { x => 1 } }, 'logit_bias'],
        [{ echo => $T, logprobs => 1, n => 2, stream => $T }, 'echo'],
        [{ max_tokens => 0 }, 'max_tokens'],
    );
    for my $c (@cases) {
        my ($o, $param, $msg) = @$c;
        my $r = completion($s, max_tokens => 2, %$o);
        is($r->{status}, 400, "$param: 400 (" . $J->encode($o) . ')');
        is($r->{json}{error}{param}, $param, "... param $param");
        like($r->{json}{error}{message}, $msg, '... naming it') if $msg;
    }
    my $r = post($s, '/v1/chat/completions',
                 { model => 'stories260K', top_logprobs => 21,
                   logprobs => $T, messages => [{ role => 'user',
                                                   content => 'x' }] });
    is($r->{json}{error}{param}, 'top_logprobs', 'top_logprobs 21: 400');
    $r = post($s, '/v1/chat/completions',
              { model => 'stories260K', top_logprobs => 2,
                messages => [{ role => 'user', content => 'x' }] });
    is($r->{json}{error}{param}, 'top_logprobs',
       'top_logprobs without logprobs: 400');
};


is($s->stop, 0, 'nginx exits cleanly');
unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');
$e->stop;

close $ref_in;
waitpid $ref_pid, 0;

done_testing();
